"""The lexical branch: BM25 from SQLite FTS5 over code-aware tokens (``kenning.tokens``)."""

from __future__ import annotations

import sqlite3

from kenning.search.query import Query

# bm25() column weights of chunks_fts(body, symbol, path): a term in the chunk's own name or
# its file's path says more about the chunk than one occurrence in its body.
COLUMN_WEIGHTS = (1.0, 4.0, 2.0)
# FTS5 reads a term's whole posting list and scores every matching row, so on a large index one
# common word costs tens of milliseconds. A term in more rows than this is left out when the
# query has rarer terms: its low IDF would add little to their ranking. A query of common terms
# only matches rows that have all of them.
COMMON_ROWS = 5000


# Inflections stripped from a query word so that "handled" also finds "handle" and "handler";
# the stem is matched as a prefix only when enough of it is left to stay specific.
_SUFFIXES = ("ing", "ies", "ed", "es", "s")
STEM_MIN = 6


def _stem(term: str) -> str | None:
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= STEM_MIN and term.isalpha():
            return term[: -len(suffix)]
    return None


def _quoted(terms: list[str] | tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for t in terms:
        stem = _stem(t)
        out.append(f'("{t}" OR "{stem}" *)' if stem else f'"{t}"')
    return out


def _rows_up_to_match(conn: sqlite3.Connection, match: str, cap: int) -> int:
    """How many rows ``match`` finds, counting no further than ``cap``."""
    return int(conn.execute("SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts "
                            "MATCH ? LIMIT ?)", (match, cap)).fetchone()[0])


def _rows_up_to(conn: sqlite3.Connection, term: str, cap: int) -> int:
    """How many rows contain ``term``, counting no further than ``cap``."""
    return _rows_up_to_match(conn, f'"{term}"', cap)


def expression(conn: sqlite3.Connection, query: Query) -> str | None:
    """The FTS5 MATCH expression: any of the query's terms, common ones left out if possible."""
    terms = list(query.terms)
    if not terms:
        return None
    if len(terms) == 1:
        term = _quoted(terms)[0]
        if _rows_up_to(conn, terms[0], COMMON_ROWS + 1) <= COMMON_ROWS:
            return term
        # a common single word: the chunks it names (symbol) or files (path) outrank the rest
        named = f"{{symbol path}} : {term}"
        return named if _rows_up_to_match(conn, named, 1) else term
    rare = [t for t in terms if _rows_up_to(conn, t, COMMON_ROWS + 1) <= COMMON_ROWS]
    if rare:
        return " OR ".join(_quoted(rare))
    return " AND ".join(_quoted(terms))


def search(conn: sqlite3.Connection, query: Query, *, limit: int, where: str = "",
           params: list[object] | None = None) -> list[tuple[int, float]]:
    """``(chunk id, bm25 score)`` best first (higher is better), at most ``limit``."""
    match = expression(conn, query)
    if match is None:
        return []
    weights = ", ".join(str(w) for w in COLUMN_WEIGHTS)
    if where:
        sql = (f"SELECT f.rowid, bm25(chunks_fts, {weights}) AS s FROM chunks_fts f "
               f"JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH ? AND {where} "
               "ORDER BY s LIMIT ?")
        args: list[object] = [match, *(params or []), limit]
    else:
        sql = (f"SELECT rowid, bm25(chunks_fts, {weights}) AS s FROM chunks_fts "
               "WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?")
        args = [match, limit]
    # FTS5's bm25() is lower-is-better; negate so every branch ranks higher-is-better
    return [(row[0], -row[1]) for row in conn.execute(sql, args)]
