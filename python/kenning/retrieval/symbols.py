"""The symbol branch: exact, case-insensitive and prefix matches of qualified symbol names.

Candidates come from the FTS5 ``symbol`` column (indexed, so no table scan), then each is graded
against the names the query typed: ``HttpClient.send`` matches the symbol ``HttpClient.send``
exactly, ``send`` matches it as its last component, ``parse`` matches ``parse_header`` as a
prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from kenning.retrieval.query import Query
from kenning.tokens import QUALIFIER, code_tokens

if TYPE_CHECKING:
    from kenning.store import ChunkFilter, Snapshot

EXACT, LAST_PART, CASELESS, CONTAINER, PREFIX = 4.0, 3.0, 2.0, 1.5, 1.0


@lru_cache(maxsize=65536)  # the same symbols meet the same names search after search
def grade(symbol: str, name: str) -> float:
    """How well ``symbol`` (qualified, e.g. ``pkg.Client.send``) matches one queried ``name``.
    Qualifiers compare part by part, so ``Rack::Builder`` names the symbol ``Rack.Builder``."""
    parts = [p for p in QUALIFIER.split(symbol) if p] or [symbol]
    wanted = [p for p in QUALIFIER.split(name) if p] or [name]
    if parts == wanted:
        return EXACT
    if parts[-len(wanted):] == wanted:
        return LAST_PART  # the query names the symbol's tail: `Client.send`, or just `send`
    lowered = [p.lower() for p in parts]
    if lowered[-len(wanted):] == [p.lower() for p in wanted]:
        return CASELESS
    if len(wanted) > 1 and lowered[-1] == wanted[-2].lower():
        return CONTAINER  # `HttpClient.send` asked, the chunk is the class HttpClient itself
    if len(wanted[-1]) >= 3 and lowered[-1].startswith(wanted[-1].lower()):
        return PREFIX
    return 0.0


def best_grade(symbol: str, names: Sequence[str]) -> float:
    """The best grade of ``symbol`` against any of the queried ``names`` (0.0 for none)."""
    return max((grade(symbol, name) for name in names), default=0.0)


WINDOW = 500  # rows of the FTS match graded per search


def _graded(snap: Snapshot, tokens: Sequence[str], names: Sequence[str],
            keep: ChunkFilter | None, *, prefix: bool) -> tuple[list[tuple[int, float]], int]:
    """``(chunk id, grade)`` of the matching chunks among the first WINDOW rows whose symbol
    has one of ``tokens`` (or, with ``prefix``, a token starting with one), and how many rows
    were found (up to WINDOW)."""
    graded: list[tuple[int, float]] = []
    best_of: dict[str, float] = {}  # many chunks share a symbol (overloads, copies, tests)
    rows = 0
    for chunk_id, symbol in snap.symbol_matches(tokens, WINDOW, keep, prefix=prefix):
        rows += 1
        best = best_of.get(symbol)
        if best is None:
            best = best_of[symbol] = best_grade(symbol, names)
        if best > 0:
            graded.append((chunk_id, best))
    return graded, rows


def search(snap: Snapshot, query: Query, *, limit: int,
           keep: ChunkFilter | None = None) -> list[tuple[int, float]]:
    """``(chunk id, grade)`` best first; empty when the query names no identifier."""
    names = query.symbol_names
    if not names:
        return []
    # each whole component, lower-cased, is one token of the FTS symbol column
    tokens = dict.fromkeys(whole[0] for name in names for part in QUALIFIER.split(name)
                           if (whole := code_tokens(part)))
    if not tokens:
        return []
    # Every grade above PREFIX needs a whole component as a token, which FTS5 streams in rowid
    # order. A prefix query (`parse` also finds `parser`) must first collect every row of every
    # term with that prefix, many times the cost (benchmarks/README.md). Its extra
    # matches all grade PREFIX, the lowest, so it runs only when the whole tokens leave room on
    # the list; and not when they fill the window, whose strong matches a wider match would
    # only crowd out.
    scored, rows = _graded(snap, list(tokens), names, keep, prefix=False)
    if rows < WINDOW and sum(1 for _, strength in scored if strength > PREFIX) < limit:
        scored, _ = _graded(snap, list(tokens), names, keep, prefix=True)
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored[:limit]
