"""The lexical branch: BM25 from SQLite FTS5 over code-aware tokens (``kenning.tokens``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kenning.retrieval.query import Query, phrase_match

if TYPE_CHECKING:
    from kenning.store import ChunkFilter, Snapshot

# bm25() column weights of chunks_fts(body, symbol, path): a term in the chunk's own name or
# its file's path says more about the chunk than one occurrence in its body.
COLUMN_WEIGHTS = (1.0, 4.0, 2.0)
# FTS5 scores every row the expression matches (bm25() costs 1.5-3 us a row, and counting a
# term's rows about 0.3 us each), so on a large index a few common words cost tens of
# milliseconds. The rows scored are those of the query's rarest terms, taken while their rows
# together stay within SCORED_ROWS; rows that have only terms commoner than that are left out,
# and such terms do not take part in the scores (their low IDF ranks rows low anyway). A query
# of common terms only matches the rows that have them all, and a common single word the chunks
# whose name or path has it, else whose name has it; where even those rows are over the budget
# (a single word on a 1M-chunk index matched 45k paths, and scoring them took 180 ms) or there
# are none, the words say little that the other branches would not, and the branch stays out.
# (Narrowing a query of several words further by counting rows again was measured: on a
# 1M-chunk index the counts over such words' postings cost more than the smaller scoring saves.)
# On indexes of a few thousand chunks the budget rarely binds.
SCORED_ROWS = 2000


# Inflections stripped from a query word so that "handled" also finds "handle" and "handler";
# the stem is matched as an FTS prefix only when enough of it is left to stay specific.
_SUFFIXES = ("ing", "ies", "ed", "es", "s")
STEM_MIN = 6


def _prefix_stem(term: str) -> str | None:
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= STEM_MIN and term.isalpha():
            return term[: -len(suffix)]
    return None


def _quoted(terms: list[str] | tuple[str, ...], stems: bool = True) -> list[str]:
    out: list[str] = []
    for t in terms:
        stem = _prefix_stem(t) if stems else None
        out.append(f'("{t}" OR "{stem}" *)' if stem else f'"{t}"')
    return out


def _rows_up_to(snap: Snapshot, match: str, cap: int, whole: str) -> int:
    """How many rows ``match`` finds, counting no further than ``cap``. ``whole`` is ``match``
    with its words whole, no stem prefixes: it finds some of the same rows, and FTS5 streams
    them, where a prefix must first collect every row of every term it starts (16 ms for
    `"cookie" *` on a 1M-chunk index). When ``whole`` alone reaches the cap, so does ``match``,
    which is then never counted."""
    if whole != match:
        rows = snap.fts_count(whole, cap)
        if rows >= cap:
            return rows
    return snap.fts_count(match, cap)


def _within_budget(snap: Snapshot, match: str, whole: str) -> bool:
    """Whether ``match`` finds some rows, but no more than the scoring budget."""
    return 0 < _rows_up_to(snap, match, SCORED_ROWS + 1, whole) <= SCORED_ROWS


def expression(snap: Snapshot, query: Query) -> str | None:
    """The FTS5 MATCH expression: the rows of the rarest terms, scored by all but common ones."""
    if not query.terms:
        return None
    quoted, whole = _quoted(query.terms), _quoted(query.terms, stems=False)
    if len(quoted) == 1:
        rows = _rows_up_to(snap, quoted[0], SCORED_ROWS + 1, whole[0])
        if rows <= SCORED_ROWS:
            return quoted[0] if rows else None
        # a common single word: the chunks it names (symbol) or files (path) outrank the rest
        narrower = ("{symbol path} : ", "symbol : ")
        return next((c + quoted[0] for c in narrower
                     if _within_budget(snap, c + quoted[0], c + whole[0])), None)
    counted = sorted((_rows_up_to(snap, term, SCORED_ROWS + 1, whole[i]), i, term)
                     for i, term in enumerate(quoted))
    if counted[0][0] > SCORED_ROWS:
        # common words only: the rows that have them all; if none has (or too many have), the
        # words say little that the other branches would not
        every = " AND ".join(quoted)
        return every if _within_budget(snap, every, " AND ".join(whole)) else None
    kept: list[tuple[int, str]] = []
    rows = 0
    for count, i, term in counted:
        if kept and rows + count > SCORED_ROWS:
            break
        kept.append((i, term))
        rows += count
    rare = " OR ".join(term for _, term in sorted(kept))
    scoring = [term for count, _, term in sorted(counted, key=lambda c: c[1])
               if count <= SCORED_ROWS]
    if len(scoring) == len(kept):
        return rare
    # the rarer terms' rows, scored by the other uncommon terms too (FTS5 counts the repeated
    # rarer phrases twice, which weighs them up a little more)
    return f"({rare}) AND ({' OR '.join(scoring)})"


def search(snap: Snapshot, query: Query, *, limit: int,
           keep: ChunkFilter | None = None) -> list[tuple[int, float]]:
    """``(chunk id, bm25 score)`` best first (higher is better), at most ``limit``, among the
    chunks ``keep`` keeps."""
    match = expression(snap, query)
    phrases = phrase_match(query)
    if phrases is not None:  # the quoted phrases, scored with the other words
        match = phrases if match is None else f"({phrases}) AND ({match})"
    if match is None:
        return []
    # FTS5's bm25() is lower-is-better; negate so every branch ranks higher-is-better
    return [(chunk_id, -score)
            for chunk_id, score in snap.fts_top(match, COLUMN_WEIGHTS, limit, keep)]


def message_search(snap: Snapshot, query: Query, *, limit: int,
                   keep: ChunkFilter | None = None) -> list[tuple[int, float]]:
    """The message branch: ``(chunk id, bm25 score)`` of the chunks that say a phrase of the
    error messages of a traceback in the query (the code that raised it), best first."""
    if not query.message_phrases:
        return []
    said = " OR ".join('"' + " ".join(tokens) + '"' for tokens in query.message_phrases)
    return [(chunk_id, -score)
            for chunk_id, score in snap.fts_top(said, COLUMN_WEIGHTS, limit, keep)]
