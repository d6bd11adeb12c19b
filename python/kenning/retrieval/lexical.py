"""The lexical branch: BM25 from SQLite FTS5 over code-aware tokens (``kenning.tokens``); the
store turns the query's terms into FTS5 expressions (``kenning.store.fts``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kenning.retrieval.query import Query

if TYPE_CHECKING:
    from kenning.store import ChunkFilter, Snapshot

# bm25() column weights: a term in the chunk's own name or its file's path says more about the
# chunk than one occurrence in its body.
COLUMN_WEIGHTS = {"body": 1.0, "symbol": 4.0, "path": 2.0}


def search(snap: Snapshot, query: Query, *, limit: int,
           keep: ChunkFilter | None = None) -> list[tuple[int, float]]:
    """``(chunk id, bm25 score)`` best first (higher is better), at most ``limit``, among the
    chunks ``keep`` keeps; with quoted phrases, only chunks that say them."""
    return snap.lexical_top(query.terms, COLUMN_WEIGHTS, limit, keep, phrases=query.phrases)


def message_search(snap: Snapshot, query: Query, *, limit: int,
                   keep: ChunkFilter | None = None) -> list[tuple[int, float]]:
    """The message branch: ``(chunk id, bm25 score)`` of the chunks that say a phrase of the
    error messages of a traceback in the query (the code that raised it), best first."""
    if not query.message_phrases:
        return []
    return snap.phrase_top(query.message_phrases, COLUMN_WEIGHTS, limit, keep)
