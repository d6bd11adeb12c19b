"""The lexical branch: BM25 from SQLite FTS5 over code-aware tokens (``kenning.tokens``)."""

from __future__ import annotations

import sqlite3

from kenning.search.query import Query

# bm25() column weights of chunks_fts(body, symbol, path): a term in the chunk's own name or
# its file's path says more about the chunk than one occurrence in its body.
COLUMN_WEIGHTS = (1.0, 4.0, 2.0)


def fts_expression(query: Query) -> str | None:
    """An FTS5 MATCH expression: any of the terms (BM25 rewards chunks that have more)."""
    return " OR ".join(f'"{t}"' for t in query.terms) or None


def search(conn: sqlite3.Connection, query: Query, *, limit: int, where: str = "",
           params: list[object] | None = None) -> list[tuple[int, float]]:
    """``(chunk id, bm25 score)`` best first (higher is better), at most ``limit``."""
    expression = fts_expression(query)
    if expression is None:
        return []
    weights = ", ".join(str(w) for w in COLUMN_WEIGHTS)
    if where:
        sql = (f"SELECT f.rowid, bm25(chunks_fts, {weights}) AS s FROM chunks_fts f "
               f"JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH ? AND {where} "
               "ORDER BY s LIMIT ?")
        args: list[object] = [expression, *(params or []), limit]
    else:
        sql = (f"SELECT rowid, bm25(chunks_fts, {weights}) AS s FROM chunks_fts "
               "WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?")
        args = [expression, limit]
    # FTS5's bm25() is lower-is-better; negate so every branch ranks higher-is-better
    return [(row[0], -row[1]) for row in conn.execute(sql, args)]
