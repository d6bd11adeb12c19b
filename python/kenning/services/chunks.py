"""``get_chunk``: the code a search result's id names, from the index of a project here or from
the shared index."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kenning.config import Settings
from kenning.embedding import Embedder, borrowed
from kenning.errors import IndexMissing, StaleContent, UsageError
from kenning.retrieval.projects import ProjectRef, resolve_projects
from kenning.retrieval.ranking import Candidate
from kenning.retrieval.snapshot_source import candidate_of
from kenning.retrieval.snippets import CONTENT_HASH, HASH_HEX, SnippetReader, left_out
from kenning.retrieval.units import units
from kenning.store.ids import ChunkId

SCOPES = ("declaration", "chunk")  # what get_chunk returns for a chunk id
# A region get_chunk returns (a declaration, a widened chunk) over this many lines comes as its
# first HEAD_LINES lines (a declaration's signature and doc comment) and the chunk the id
# names, with markers and a note for the lines left out: a 2,000-line method is no answer.
CHUNK_MAX_LINES = 400
HEAD_LINES = 40


def get_chunk(chunk_id: str, projects: Sequence[ProjectRef] | None = None, *,
              settings: Settings, embedder: Embedder | None = None, scope: str = "declaration",
              context_lines: int = 0, expect_hash: str | None = None) -> dict[str, Any]:
    """The code a search result's id names; StaleChunkId if the index moved past it.

    ``scope`` "declaration" (the default) gives the whole declaration the chunk is part of (a
    function cut into several chunks comes whole), "chunk" the chunk alone. ``context_lines``
    adds that many lines of the file above and below: the region around it. A local index is
    found from ``settings`` alone; ``embedder`` names the collection of a project only in the
    shared index. ``expect_hash``, the ``content_hash`` of the search result that gave the id,
    has the lines it showed checked first: StaleContent when they changed since."""
    from kenning.store import Index

    if scope not in SCOPES:
        raise UsageError(f"Unknown scope {scope!r}.", hint=f"Use one of: {', '.join(SCOPES)}.")
    if context_lines < 0:
        raise UsageError(f"context_lines must be 0 or more, got {context_lines}.")
    if expect_hash is not None and not CONTENT_HASH.fullmatch(expect_hash.strip()):
        raise UsageError(f"expect_hash must be a result's content_hash, {HASH_HEX} hex digits; "
                         "what was given cannot be one.",
                         hint="Pass the content_hash of the search result, or leave it out.")
    wanted = ChunkId.parse(chunk_id)
    project_id = wanted.project
    refs = list(projects) if projects else resolve_projects(settings)
    for ref in refs:
        try:
            index = Index.open(ref.root, settings)
        except IndexMissing:
            continue
        if index.project_id != project_id:
            continue
        with index.snapshot() as snap:
            row = snap.chunk_row(wanted.ordinal)
            chunk, made_in = (None, None) if row is None else row
            wanted.check_current(snap.token, snap.generation, made_in)
            assert chunk is not None  # refused above
            found = candidate_of(chunk)
            own = (found.start_byte, found.end_byte, found.start_line, found.end_line)
            whole = units(snap, [found]).get(found.id)
            reader = SnippetReader(index.root, snap.file_states({found.path}),
                                   int(settings["index.max_file_size"]))
            if expect_hash is not None:  # the hash of a result: the lines of its declaration
                _check_hash(reader, found.path, whole.span if whole else own, expect_hash,
                            str(wanted))
            unit = whole if scope != "chunk" else None
            if unit is not None:
                found.start_byte, found.end_byte, found.start_line, found.end_line = unit.span
                found.kind, found.symbol = unit.kind, unit.symbol
            if context_lines:
                reader.widen(found, context_lines)
            content, stale = reader.read(found.path, found.start_byte, found.end_byte)
            note = None
            if found.end_line - found.start_line + 1 > CHUNK_MAX_LINES:
                content, note = _within_budget(reader, found, own, str(wanted))
            return {"type": "chunk", "id": str(wanted), "project": project_id, "path": found.path,
                    "start_line": found.start_line, "end_line": found.end_line,
                    "start_byte": found.start_byte, "end_byte": found.end_byte,
                    "language": found.language, "kind": found.kind, "symbol": found.symbol,
                    "scope": scope, "content": content, "stale": stale,
                    "revision": snap.revision, "note": note}
    if settings["search.backend"] != "local" and settings["shared.uri"]:
        if expect_hash is not None:
            raise UsageError("expect_hash checks the lines of a project checked out here; "
                             f"{project_id} is read from the shared index.",
                             hint="Leave expect_hash out for a published project's chunks.")
        return _get_shared_chunk(wanted, settings, embedder, scope, context_lines)
    raise UsageError(f"No project {project_id!r} among the searched projects.",
                     hint="Pass the project's root or configure it.")


def _check_hash(reader: SnippetReader, path: str, span: tuple[int, int, int, int],
                expected: str, chunk_id: str) -> None:
    """StaleContent unless the lines ``span`` (start and end byte, start and end line) of
    ``path`` hash to ``expected`` now."""
    if reader.digest(path, span[0], span[1]) != expected.strip().lower():
        raise StaleContent(f"The lines of chunk {chunk_id} ({path}:{span[2]}-{span[3]}) "
                           "changed since the search that gave their hash.",
                           hint="Search again for current lines and ids.")


def _within_budget(reader: SnippetReader, found: Candidate,
                   own: tuple[int, int, int, int], chunk_id: str) -> tuple[str, str]:
    """The content of a region over CHUNK_MAX_LINES lines and the note that says what it
    leaves out: its first HEAD_LINES lines (the signature and doc comment of a declaration),
    then the chunk the id names, each part with markers for the lines between."""
    path, first, last = found.path, found.start_line, found.end_line
    head_end = first + HEAD_LINES - 1
    start, end = max(own[2], head_end + 1), own[3]  # a chunk is small: its token budget
    if end < start:  # the chunk is within the head: show the head alone
        start = end = 0
    whole, _ = reader.read(path, found.start_byte, found.end_byte)
    lines = whole.splitlines()
    parts = ["\n".join(lines[:HEAD_LINES])]
    shown = [f"{first}-{head_end}"]
    if start:
        parts += [left_out(head_end + 1, start - 1),
                  "\n".join(lines[start - first: end - first + 1])]
        shown.append(f"{start}-{end}")
    gaps = [(head_end + 1, start - 1), (end + 1, last)] if start else [(head_end + 1, last)]
    missing = [f"{a}-{b}" for a, b in gaps if a <= b]
    parts.append(left_out(*gaps[-1]))
    note = (f"The region spans {last - first + 1} lines, more than {CHUNK_MAX_LINES}: shown are "
            f"lines {' and '.join(shown)} (its head and chunk {chunk_id}); lines "
            f"{' and '.join(missing)} are left out. Read them from {path} by line number, or "
            "get one chunk of them by the id a search gives (scope \"chunk\").")
    return "\n".join(part for part in parts if part), note


def _get_shared_chunk(wanted: ChunkId, settings: Settings, embedder: Embedder | None,
                      scope: str, context_lines: int) -> dict[str, Any]:
    """A chunk of a project published to the shared index and not checked out here."""
    from kenning.shared import Engine, reading
    from kenning.store import make_descriptor

    with borrowed(settings, embedder) as emb, Engine(settings, make_descriptor(emb)) as engine:
        return reading.get_chunk(engine, wanted, scope=scope, context_lines=context_lines)
