"""What one result spans: a unit of meaning, made of one or more chunks of its file.

- The chunks of one declaration cut into several (a function too long for the model's context)
  are one unit: the whole declaration. They are consecutive chunks of the file with the same
  kind, symbol and signature; an overload or a member in between has others.
- A short piece that declares nothing of its own (imports, a lone comment, the ``module Foo``
  or ``class Foo`` line that opens a container whose members are chunks of their own) joins
  the unit that follows it, or the one before it at the end of a file.
- A short declaration (a one-line accessor or alias) comes with the short declarations of the
  same parent around it: alone, three lines say little of where they sit.

A unit keeps as its window, the snippet shown, the chunk that matched, together with what that
chunk joined (up to the first chunk of the unit after it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kenning.retrieval.file_cache import FileCache
from kenning.store.reads import FileChunk
from kenning.tokens import QUALIFIER, split_identifier

SHORT_LINES = 3  # a piece this short that declares nothing is no result of its own
SIBLING_LINES = 12  # a short declaration shows short siblings around it up to this many lines

Row = FileChunk
# (start byte, end byte, start line, end line)
Span = tuple[int, int, int, int]


class Located(Protocol):
    id: int
    path: str


class FileChunks(Protocol):
    """Where each file's chunk rows come from: a local snapshot, or the shared index."""

    def file_chunks(self, paths: Sequence[str]) -> dict[str, list[Row]]: ...


@dataclass(frozen=True, slots=True)
class Unit:
    span: Span  # the whole unit
    window: Span  # what the snippet shows
    kind: str
    symbol: str | None


def units(snap: FileChunks, chunks: Iterable[Located],
          snapshot: tuple[str, int] | None = None) -> dict[int, Unit]:
    """Chunk id -> the unit it belongs to, for chunks that are not a unit on their own.
    ``snapshot`` (the index's token and generation) lets each file's runs be read once for
    all the searches of one snapshot."""
    chunks = list(chunks)
    wanted = {c.id for c in chunks}
    found: dict[int, Unit] = {}
    for runs in _runs(snap, sorted({c.path for c in chunks}), snapshot).values():
        for i, run in enumerate(runs):
            for row in run:
                if row.id in wanted and (unit := _unit(runs, i, row)) is not None:
                    found[row.id] = unit
    return found


def declared_words(snap: FileChunks, paths: Iterable[str],
                   snapshot: tuple[str, int] | None = None) -> dict[str, frozenset[str]]:
    """Path -> the words of the names its declarations have (``Router.merge_nested``: router,
    merge, nested)."""
    return _declared_of_files.get(snapshot, sorted(set(paths)), lambda missing: {
        path: name_words(run[0].symbol for run in runs if run[0].symbol)
        for path, runs in _runs(snap, missing, snapshot).items()})


def name_words(names: Iterable[str]) -> frozenset[str]:
    """The words of declared names (``Router.merge_nested``: router, merge, nested)."""
    return frozenset(word for name in set(names) for part in QUALIFIER.split(name)
                     for word in split_identifier(part) if len(word) > 1)


def unit_of(rows: Sequence[Row], chunk: int) -> Unit | None:
    """The unit of the chunk with id ``chunk`` among ``rows``, every chunk of its file in byte
    order (as ``units``, for rows that are not in SQLite: the shared index's)."""
    runs = _declarations(rows)
    for i, run in enumerate(runs):
        for row in run:
            if row.id == chunk:
                return _unit(runs, i, row)
    return None


_runs_of_files: FileCache[list[list[Row]]] = FileCache(2048)
_declared_of_files: FileCache[frozenset[str]] = FileCache(4096)


def _runs(snap: FileChunks, paths: list[str],
          snapshot: tuple[str, int] | None) -> dict[str, list[list[Row]]]:
    """Each file's chunks in runs (``_declarations``), from the cache where it has them."""
    return _runs_of_files.get(snapshot, paths, lambda missing: {
        path: _declarations(rows) for path, rows in snap.file_chunks(missing).items()})


def _declarations(rows: Sequence[Row]) -> list[list[Row]]:
    """The file's chunks in runs: the parts of one declaration together, anything else alone."""
    runs: list[list[Row]] = []
    for row in rows:
        if runs and row.symbol is not None and row.declaration == runs[-1][0].declaration:
            runs[-1].append(row)
        else:
            runs.append([row])
    return runs


def _unit(runs: list[list[Row]], i: int, row: Row) -> Unit | None:
    lo = hi = i
    while _short_filler(runs, lo, hi):
        if hi + 1 < len(runs):
            hi += 1
        elif lo > 0:
            lo -= 1
        else:
            break
    if lo == hi == i and len(runs[i]) == 1:
        lo, hi = _small_siblings(runs, i)
        if lo == hi:
            return None
        first, last = runs[lo][0], runs[hi][-1]
        whole = _span(first, last)
        return Unit(whole, whole, row.kind, row.symbol)
    first, last = runs[lo][0], runs[hi][-1]
    start = runs[lo][-1] if lo < i else row  # the window reaches into the joined unit
    end = runs[hi][0] if hi > i else row
    kind, symbol = row.kind, row.symbol
    if symbol is None and (lo, hi) != (i, i):  # code between declarations: named by its unit
        joined = runs[hi][0] if hi > i else runs[lo][0]
        kind, symbol = joined.kind, joined.symbol
    return Unit(_span(first, last), _span(start, end), kind, symbol)


def _span(first: Row, last: Row) -> Span:
    """From the start of ``first`` to the end of ``last``."""
    return first.start_byte, last.end_byte, first.start_line, last.end_line


def _small_siblings(runs: list[list[Row]], i: int) -> tuple[int, int]:
    """The runs around a short declaration that are short declarations of the same parent
    (one-line accessors, aliases), up to SIBLING_LINES in all; (i, i) when there are none."""
    lo = hi = i
    if not _small(runs[i]):
        return lo, hi
    parent = _parent(runs[i][0].symbol)
    while True:
        grown = False
        for j in (hi + 1, lo - 1):
            if 0 <= j < len(runs) and _small(runs[j]) and _parent(runs[j][0].symbol) == parent:
                a, b = min(lo, j), max(hi, j)
                if runs[b][-1].end_line - runs[a][0].start_line + 1 <= SIBLING_LINES:
                    lo, hi, grown = a, b, True
        if not grown:
            return lo, hi


def _small(run: list[Row]) -> bool:
    chunk = run[0]
    return (len(run) == 1 and chunk.symbol is not None
            and chunk.end_line - chunk.start_line + 1 <= SHORT_LINES)


def _parent(symbol: str | None) -> str:
    return (symbol or "").rpartition(".")[0]


def _short_filler(runs: list[list[Row]], lo: int, hi: int) -> bool:
    """Whether runs ``lo``-``hi`` are short and declare nothing whole of their own."""
    if runs[hi][-1].end_line - runs[lo][0].start_line + 1 > SHORT_LINES:
        return False
    if lo != hi:
        return True
    symbol = runs[lo][0].symbol
    if symbol is None:
        return True
    following = runs[lo + 1][0].symbol if lo + 1 < len(runs) else None
    return following is not None and following.startswith(symbol + ".")  # a member follows
