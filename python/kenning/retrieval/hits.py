"""The result records of ranked candidates: snippets read from the work tree, the state they
come from, and with ``calls`` the callers and callees of each declaration."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from kenning import project
from kenning.config import Settings
from kenning.indexing.classes import chunk_class
from kenning.retrieval import budget
from kenning.retrieval.calls import linked as call_links
from kenning.retrieval.ranking import Candidate
from kenning.retrieval.snippets import SnippetReader
from kenning.retrieval.units import units

if TYPE_CHECKING:
    from kenning.store import Index, Snapshot


def hit_records(index: Index, snap: Snapshot, cands: list[Candidate], settings: Settings,
                weak: Collection[int] = frozenset(), *, calls: bool = False,
                offers: bool = False,
                rewritten: set[str] | None = None) -> list[dict[str, Any]]:
    """The results of ranked candidates, their snippets read from the work tree, with the
    state they come from (the work tree's commit, whether the file changed since it was
    indexed, the hash of the lines ``get_chunk`` checks); with ``calls`` each carries the
    callers and callees of its declaration, with ``offers`` what it offers a token budget.
    ``rewritten`` gets the files whose bytes changed while their size and mtime did not."""
    reader = SnippetReader(index.root, snap.file_states({c.path for c in cands}),
                           int(settings["index.max_file_size"]))
    revision = project.head_commit(index.root)
    hashed = _hashed_spans(snap, cands)
    results = []
    for c in cands:
        content, stale = (reader.read(c.path, c.start_byte, c.end_byte) if c.window is None
                          else reader.read_window(c.path, (c.start_byte, c.end_byte,
                                                           c.start_line, c.end_line),
                                                  c.window, c.symbol))
        results.append({
            "id": snap.chunk_id(index.project_id, c.id), "project": index.project_id,
            "path": c.path, "start_line": c.start_line, "end_line": c.end_line,
            "start_byte": c.start_byte, "end_byte": c.end_byte, "kind": c.kind,
            "chunk_class": chunk_class(c.path, c.language, c.symbol, c.generated, c.file_kind),
            "symbol": c.symbol, "score": round(c.score, 6), "content": content,
            "stale": stale, "weak": c.id in weak, "revision": revision,
            "changed_since_index": reader.changed(c.path),
            "content_hash": reader.digest(c.path, *hashed[c.id]), "lines": None,
            "_read_bytes": reader.read_cost(c.path)})
        if offers:
            results[-1]["_offer"] = _offer(reader, c)
    if rewritten is not None:
        rewritten |= reader.rewritten
    if calls:
        links = call_links(snap, index.project_id, [(c.id, c.symbol) for c in cands])
        for c, result in zip(cands, results, strict=True):
            result.update(links[c.id])
    return results


def _offer(reader: SnippetReader, cand: Candidate) -> budget.Lines | None:
    """What a result offers a token budget: its head and its window (None when its file
    cannot be read)."""
    text, _ = reader.read(cand.path, cand.start_byte, cand.end_byte)
    if not text and cand.end_byte > cand.start_byte:
        return None
    window = ((cand.window[2], cand.window[3]) if cand.window is not None
              else (cand.start_line, cand.end_line))
    return budget.offer(text, cand.start_line, cand.end_line, window, cand.symbol)


def _hashed_spans(snap: Snapshot, cands: list[Candidate]) -> dict[int, tuple[int, int]]:
    """Chunk id -> the bytes a result's ``content_hash`` covers: the declaration its id names,
    which ``get_chunk`` checks the hash against (the result's own lines, save where a result
    joins overlapping chunks or short neighbours)."""
    whole = units(snap, cands, (snap.token, snap.generation))
    own = {row.id: (row.start_byte, row.end_byte)
           for row in snap.chunk_rows([c.id for c in cands])}
    return {c.id: whole[c.id].span[:2] if c.id in whole else own[c.id] for c in cands}
