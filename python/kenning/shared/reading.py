"""``get_chunk`` for a project that is only in the shared index (no checkout here): the id of a
shared result names a published row, read back from the engine's stored text.

Ids keep their meaning (``ChunkId.check_current``): an id from another index of the
project, from a newer generation than the published one, or of a row a later publish replaced
is StaleChunkId. The whole declaration is put together from the published rows of its file
(``search.units``, as locally) where they cover it byte for byte; the bytes between chunks are
only known when they are line breaks, so otherwise, and for context lines, which the engine
does not hold, the result is the chunk and its ``note`` says so.
"""

from __future__ import annotations

from typing import Any

from kenning.errors import StaleChunkId, UsageError
from kenning.retrieval.units import Row, unit_of
from kenning.shared.reads import chunk_at, chunks_of_paths, published
from kenning.store.ids import ChunkId
from kenning.store.shared_engine import Engine

_FIELDS = ["ordinal", "generation", "start_byte", "end_byte", "start_line", "end_line",
           "language", "kind", "symbol", "signature", "text"]


def get_chunk(engine: Engine, wanted: ChunkId, *, scope: str,
              context_lines: int) -> dict[str, Any]:
    """The published chunk (or declaration) ``wanted`` names, as ``search.get_chunk`` returns
    a local one; UsageError if its project is not published, StaleChunkId if it moved on."""
    again = "Search again to get current ids."
    head = published(engine, [wanted.project]).get(wanted.project)
    if head is None:
        raise UsageError(f"No project {wanted.project!r} among the searched projects or in "
                         f"{engine.where}.", hint="Pass the project's root or configure it.")
    if head.resending:
        raise StaleChunkId(f"{wanted.project} is being published again from another local "
                           "index, so its ids name no chunk until that is done.", hint=again)
    row = chunk_at(engine, wanted.project, wanted.ordinal, ["path", *_FIELDS])
    wanted.check_current(head.index_token, head.snapshot_generation,
                         None if row is None else row["generation"], published=True)
    assert row is not None  # refused above
    notes: list[str] = []
    span = (row["start_byte"], row["end_byte"], row["start_line"], row["end_line"])
    kind, symbol, text = row["kind"], row["symbol"] or None, row["text"]
    if scope != "chunk":
        rows = chunks_of_paths(engine, wanted.project, [row["path"]], _FIELDS,
                               "reading a declaration's parts")
        rows.sort(key=lambda r: r["start_byte"])
        unit = unit_of([_row(r) for r in rows], wanted.ordinal)
        if unit is not None:
            whole = _stitched(rows, unit.span)
            if whole is None:
                notes.append("Only the chunk is shown: the shared index does not hold the text "
                             "between the parts of its declaration.")
            else:
                span, kind, symbol, text = unit.span, unit.kind, unit.symbol, whole
    if len(text.encode()) < span[1] - span[0]:
        notes.append("The text is cut: the shared index keeps at most 64 KB of a chunk.")
    if context_lines:
        notes.append("No context lines: the shared index holds chunks, not whole files.")
    return {"type": "chunk", "id": str(wanted), "project": wanted.project, "path": row["path"],
            "start_line": span[2], "end_line": span[3], "start_byte": span[0],
            "end_byte": span[1], "language": row["language"] or None, "kind": kind,
            "symbol": symbol, "scope": scope, "content": text, "stale": False,
            "revision": head.revision, "note": " ".join(notes) or None}


def _row(r: dict[str, Any]) -> Row:
    return Row(r["ordinal"], r["start_byte"], r["end_byte"], r["start_line"], r["end_line"],
               r["kind"], r["symbol"] or None, r["signature"] or None)


def _stitched(rows: list[dict[str, Any]], span: tuple[int, int, int, int]) -> str | None:
    """The text of ``span`` from the rows inside it, or None where a gap between two rows is
    not all line breaks (the only bytes their line numbers and lengths pin down)."""
    start, end = span[0], span[1]
    parts: list[bytes] = []
    at, line = start, span[2]  # the byte and line reached so far
    for r in rows:
        if r["start_byte"] < start or r["end_byte"] > end or r["end_byte"] <= at:
            continue
        data = r["text"].encode()
        if len(data) != r["end_byte"] - r["start_byte"]:
            return None  # cut by the engine's text limit
        if r["start_byte"] < at:  # overlapping rows: the part not yet taken
            data = data[at - r["start_byte"]:]
        else:
            gap = r["start_byte"] - at
            if gap != r["start_line"] - line:
                return None
            parts.append(b"\n" * gap)
        parts.append(data)
        at = r["end_byte"]
        line = r["start_line"] + r["text"].count("\n")
    if at != end:
        return None
    return b"".join(parts).decode("utf-8", "replace")
