"""``related``: the code most like the declaration at a location (``PATH:LINE``).

The declaration whose chunk holds the line (the chunk below a blank line between two, the
last one past the last) is the subject. Four branches rank the rest of the project:

- ``similar``: the vector neighbours of the subject's chunks, each scanned with its own vector
  (the best cosine of any part counts);
- ``same_name``: declarations of the same name elsewhere (overrides, implementations of one
  interface, a binding and its target), nearest first;
- ``callers`` and ``callees``: by name, as ``retrieval.calls`` links them.

They are fused by reciprocal rank as a search fuses its branches, the subject left out, and
ranked by the search's signals with the subject's name as the query (units, saturation, the
penalties for tests and docs unless the subject is one). A location is refused with one
sentence when it is malformed, outside the project, in a file that is not indexed, or past the
end of its file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kenning import safe_read
from kenning.config import Settings
from kenning.display import visible
from kenning.errors import UsageError
from kenning.indexing.classes import categories
from kenning.indexing.sources import storable
from kenning.retrieval import calls, dense
from kenning.retrieval.fusion import fuse
from kenning.retrieval.hits import hit_records
from kenning.retrieval.pipeline import DENSE_DEPTH, RANK_DEPTH
from kenning.retrieval.projects import ProjectRef
from kenning.retrieval.query import Query
from kenning.retrieval.ranking import Candidate, rank
from kenning.retrieval.snapshot_source import candidate_of, dense_ranking
from kenning.retrieval.tracebacks import MAX_LINE_DIGITS, line_number
from kenning.retrieval.units import SHORT_LINES, Unit, units
from kenning.store.writer import declared_name

if TYPE_CHECKING:
    from kenning.store import ChunkFilter, Index, Snapshot

BRANCHES = ("similar", "same_name", "callers", "callees")
# Vector neighbours lead, as the dense branch leads a search; a caller or callee is one
# declaration among many a name may reach, a same-name declaration is surely related.
WEIGHTS = {"similar": 1.5, "same_name": 1.0, "callers": 1.0, "callees": 1.0}
MAX_PARTS = 4  # chunks of a long subject whose vectors are scanned
LINK_DEPTH = 30  # callers, callees and same-name declarations each branch hands to fusion
# PATH:LINE or PATH:LINE:COLUMN (the column is not needed), the path possibly holding colons
# itself (a Windows drive letter)
_LOCATION = re.compile(r"(?P<path>.+?):(?P<line>[0-9]+)(?::[0-9]+)?")


@dataclass(frozen=True)
class Location:
    ref: ProjectRef
    paths: tuple[str, ...]  # what the path may name, relative to the root: the first indexed
    line: int
    given: str  # as the caller wrote it, for messages


def parse(location: str, line: int | None = None) -> tuple[str, int]:
    """``(path, line)`` of ``PATH:LINE``, or of a path and ``line``; UsageError else."""
    text = location.strip()
    if line is None:
        found = _LOCATION.fullmatch(text)
        if found is None:
            raise UsageError(f"{location!r} is not a location.",
                             hint="Give PATH:LINE, such as src/server.py:42.")
        text, line = found.group("path"), line_number(found.group("line"))
    if not text or "\0" in text:
        raise UsageError(f"{location!r} names no file.",
                         hint="Give PATH:LINE, such as src/server.py:42.")
    if not storable(text):
        raise UsageError(f"{visible(text)} is not indexed: its name is not UTF-8, and no file "
                         "under such a name is.",
                         hint="Rename the file to a UTF-8 name to have it indexed.")
    if line is None or abs(line) >= 10 ** MAX_LINE_DIGITS:  # not written out: it may be huge
        raise UsageError(f"The line number given for {text} is no line of any file (files "
                         f"have fewer than {10 ** MAX_LINE_DIGITS:,} lines).",
                         hint="Give PATH:LINE, such as src/server.py:42.")
    if line < 1:
        raise UsageError(f"Line {line} of {text} does not exist: lines start at 1.")
    return text, line


def locate(location: str, line: int | None, refs: Sequence[ProjectRef],
           cwd: Path | None = None) -> Location:
    """The project of a location and the relative paths its path may name: relative to
    ``cwd`` (the working directory), relative to the project's root, or absolute inside it."""
    path, number = parse(location, line)
    try:
        given = Path(path).expanduser()
    except RuntimeError:  # ~user of no user here
        raise UsageError(f"{visible(path)} names the home folder of an unknown user.",
                         hint="Give PATH:LINE, such as src/server.py:42.") from None
    here = cwd or Path.cwd()
    for ref in refs:
        bases = [None] if given.is_absolute() else [here, ref.root]
        full = [Path(os.path.normpath(given if base is None else base / given))
                for base in bases]
        # the same through its folders' real paths (/tmp is /private/tmp on macOS): only the
        # index is looked up by the relative path found, and the file read from the root
        full += [Path(os.path.realpath(path.parent)) / path.name for path in full]
        inside = [p.relative_to(ref.root).as_posix() for p in full
                  if p.is_relative_to(ref.root) and p != ref.root]
        if inside:
            return Location(ref, tuple(dict.fromkeys(inside)), number, f"{path}:{number}")
    roots = " or ".join(str(ref.root) for ref in refs)
    raise UsageError(f"{path} is outside the project root {roots}.",
                     hint="Give a path inside the project, relative to it or to the working "
                          "directory.")


def related_in(index: Index, where: Location, keep: ChunkFilter | None, settings: Settings,
               limit: int, *, with_calls: bool) -> tuple[dict[str, Any], list[dict[str, Any]],
                                                          str | None]:
    """The declaration at ``where`` (``subject``), the results most like it in ``index``'s
    snapshot, and the snapshot's revision."""
    with index.snapshot() as snap:
        subject, own = _subject(index, snap, where, settings)
        cands = _ranked(index, snap, subject, keep, settings, limit)
        return own, hit_records(index, snap, cands, settings, calls=with_calls), snap.revision


def _subject(index: Index, snap: Snapshot, where: Location,
             settings: Settings) -> tuple[calls.Subject, dict[str, Any]]:
    """The declaration at ``where`` and the record that says where it is; UsageError for a
    file not indexed or a line past its end."""
    indexed = snap.file_states(where.paths)
    path = next((p for p in where.paths if p in indexed), None)
    if path is None:
        raise UsageError(f"{where.paths[0]} is not indexed in {index.root} (ignored, binary, "
                         "too large or missing).",
                         hint="`kenning status` shows what the index holds; give a source "
                              "file of the project.")
    rows = snap.file_chunks([path]).get(path, [])
    data: bytes | None = None
    try:
        data, _ = safe_read.read(index.root, path, int(settings["index.max_file_size"]))
        lines = data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
    except (OSError, safe_read.Refused):  # gone since the refresh: judged by its chunks
        lines = max((row.end_line for row in rows), default=0)
    if where.line > lines or not rows:
        raise UsageError(f"Line {where.line} is past the end of {path}, which has "
                         f"{lines} line{'' if lines == 1 else 's'}" +
                         ("." if rows else " and no code to relate."))
    chunk = next((row for row in rows if row.end_line >= where.line), rows[-1])
    subject = calls.subjects(snap, [chunk.id])[chunk.id]
    own = _described(index, snap, subject)
    members = snap.members_of([chunk.id]).get(chunk.id, [])
    line = where.line
    if data is not None:  # a blank line between two members means the one below
        text = data.split(b"\n")
        while line < min(chunk.end_line, len(text)) and not text[line - 1].strip():
            line += 1
    member = calls.member_at(members, line) if len(subject.parts) == 1 else None
    if member is None:
        return subject, own
    # a method of a class small enough to be one chunk: what the line points at
    own.update(start_line=member.start_line, end_line=member.end_line, kind=member.kind,
               symbol=member.symbol)
    return replace(subject, symbol=member.symbol,
                   lines=(member.start_line, member.end_line)), own


def _described(index: Index, snap: Snapshot, subject: calls.Subject) -> dict[str, Any]:
    """Where the subject is: its id, its whole declaration's lines, its kind and symbol."""
    rows = {row.id: row for row in snap.chunk_rows(list(subject.parts))}
    first, last = rows[subject.parts[0]], rows[subject.parts[-1]]
    return {"id": snap.chunk_id(index.project_id, first.id), "project": index.project_id,
            "path": first.path, "start_line": first.start_line, "end_line": last.end_line,
            "kind": first.kind, "symbol": first.symbol}


def _ranked(index: Index, snap: Snapshot, subject: calls.Subject, keep: ChunkFilter | None,
            settings: Settings, limit: int) -> list[Candidate]:
    own = set(subject.parts)
    links = {"same_name": calls.namesakes(snap, subject, LINK_DEPTH, keep),
             "callers": calls.callers(snap, subject, LINK_DEPTH, keep),
             "callees": calls.callees(snap, subject, LINK_DEPTH, keep)}
    rankings = {"similar": _similar(index, snap, subject, keep, settings),
                **{branch: [(link.id, link.score) for link in found]
                   for branch, found in links.items()}}
    rankings = {branch: [(cid, s) for cid, s in ranked if cid not in own]
                for branch, ranked in rankings.items()}
    fused = fuse(rankings, weights=WEIGHTS)
    head = sorted(fused, key=lambda cid: (-fused[cid], cid))[:max(RANK_DEPTH, 2 * limit)]
    cands = [candidate_of(row) for row in snap.chunk_rows(head)]
    for cand in cands:
        cand.score = fused[cand.id]
    rows = snap.chunk_rows(list(subject.parts))
    start, end = min(row.start_byte for row in rows), max(row.end_byte for row in rows)

    def apart(found: list[Candidate]) -> dict[int, Unit]:
        """The units of ``found``, but none that takes in the subject (a short sibling's, the
        code around it): such a candidate stays its chunk alone."""
        return {cid: unit for cid, unit in units(snap, found, (snap.token, snap.generation))
                .items() if unit.span[0] >= end or unit.span[1] <= start
                or next(c.path for c in found if c.id == cid) != subject.path}

    ranked = rank(cands, _as_query(subject), units_of=apart, depth=limit)
    # a short piece that declares nothing (an import line) is no result of its own
    kept = [c for c in ranked if c.symbol is not None
            or c.end_line - c.start_line + 1 > SHORT_LINES][:limit]
    return _members_shown(snap, kept, [link for found in links.values() for link in found])


def _members_shown(snap: Snapshot, cands: list[Candidate],
                   links: list[calls.Link]) -> list[Candidate]:
    """Each candidate that a link reached through a declaration inside it (a method of a
    class that is one chunk) narrowed to that declaration: the method is what is related."""
    reached: dict[int, str] = {}
    for link in links:
        if link.member and link.symbol is not None:
            reached.setdefault(link.id, link.symbol)
    members = snap.members_of([c.id for c in cands if c.id in reached])
    for cand in cands:
        found = next((m for m in members.get(cand.id, ()) if m.symbol == reached[cand.id]),
                     None)
        if found is not None:
            cand.symbol, cand.kind = found.symbol, found.kind
            cand.start_line, cand.end_line = found.start_line, found.end_line
            cand.start_byte, cand.end_byte = found.start_byte, found.end_byte
            cand.window = None
    return cands


def _as_query(subject: calls.Subject) -> Query:
    """What the ranking signals take for the query: the subject's name (its declarations
    elsewhere get the definition boost), and its own categories asked for (a test's
    neighbours are tests too)."""
    name = declared_name(subject.symbol)
    return Query(text=subject.symbol or subject.path, embedded="",
                 terms=(), identifiers=(name,) if name else (), identifier_like=bool(name),
                 asks_for=frozenset(categories(subject.path, subject.language,
                                               subject.symbol)),
                 question=False)


def _similar(index: Index, snap: Snapshot, subject: calls.Subject, keep: ChunkFilter | None,
             settings: Settings) -> list[tuple[int, float]]:
    """The chunks nearest the subject's vectors, best cosine first."""
    from kenning.store import graph

    vector_ids = [v for _, v in snap.vectors_of_chunks(subject.parts)][:MAX_PARTS]
    if not vector_ids:
        return []
    allowed = snap.allowed_vectors(keep) if keep is not None else None
    ann_dir = index.dir if graph.wanted(settings, snap.vector_rows) else None
    best: dict[int, float] = {}
    for vector_id in vector_ids:
        vector = snap.int8[vector_id].astype(np.float32) * snap.scales[vector_id]
        for found, cosine in dense.search(snap, vector, allowed=allowed, ann_dir=ann_dir):
            if cosine > best.get(found, -2.0):
                best[found] = cosine
    hits = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    return dense_ranking(snap, hits, DENSE_DEPTH + len(subject.parts), keep)
