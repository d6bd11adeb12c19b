"""The FTS5 query language of the lexical table ``chunks_fts(body, symbol, path)``: the MATCH
expressions and bm25() weights that the reads of ``reads.py`` run, built from terms, tokens and
phrases; no other part writes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

COLUMNS = ("body", "symbol", "path")  # of chunks_fts, in its order

# FTS5 scores every row the expression matches (bm25() costs several times what counting a
# term's rows does), so on a large index a few common words are costly. The rows
# scored are those of the query's rarest terms, taken while their rows together stay within
# SCORED_ROWS; rows that have only terms commoner than that are left out, and such terms do
# not take part in the scores (their low IDF ranks rows low anyway). A query of common terms
# only matches the rows that have them all, and a common single word the chunks whose name or
# path has it, else whose name has it; where even those rows are over the budget or there are
# none, the words say little that the other branches would not, and the branch stays out.
# (Narrowing a query of several words further by counting rows again costs more than the
# smaller scoring saves.) On indexes of a few thousand chunks the budget rarely binds.
SCORED_ROWS = 2000

# Inflections stripped from a query word so that "handled" also finds "handle" and "handler";
# the stem is matched as an FTS prefix only when enough of it is left to stay specific.
_SUFFIXES = ("ing", "ies", "ed", "es", "s")
STEM_MIN = 6

# (expression, cap) -> how many rows the expression finds, counting no further than cap
Count = Callable[[str, int], int]


def quote(text: str) -> str:
    """``text`` as one FTS5 string: a phrase of its tokens, any ``"`` doubled."""
    return '"' + text.replace('"', '""') + '"'


def weights(by_column: Mapping[str, float]) -> str:
    """The bm25() arguments for weights given by column name (a column not named weighs 1)."""
    unknown = set(by_column) - set(COLUMNS)
    if unknown:
        raise ValueError(f"chunks_fts has no column {sorted(unknown)[0]!r}")
    return ", ".join(repr(float(by_column.get(column, 1.0))) for column in COLUMNS)


def phrases(said: Sequence[Sequence[str]]) -> str | None:
    """The expression that finds the chunks saying every phrase (a sequence of tokens)."""
    return " AND ".join(quote(" ".join(tokens)) for tokens in said) or None


def any_phrase(said: Sequence[Sequence[str]]) -> str | None:
    """The expression that finds the chunks saying one of the phrases or more."""
    return " OR ".join(quote(" ".join(tokens)) for tokens in said) or None


def symbol_tokens(tokens: Sequence[str], *, prefix: bool) -> str:
    """The chunks whose symbol has one of ``tokens`` whole, or with ``prefix`` one starting
    with one of them."""
    star = "*" if prefix else ""
    return " OR ".join(f"symbol : {quote(t)}{star}" for t in tokens)


def _prefix_stem(term: str) -> str | None:
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= STEM_MIN and term.isalpha():
            return term[: -len(suffix)]
    return None


def _quoted(terms: Sequence[str], stems: bool = True) -> list[str]:
    out: list[str] = []
    for t in terms:
        stem = _prefix_stem(t) if stems else None
        out.append(f"({quote(t)} OR {quote(stem)} *)" if stem else quote(t))
    return out


def _rows_up_to(count: Count, match: str, cap: int, whole: str) -> int:
    """How many rows ``match`` finds, counting no further than ``cap``. ``whole`` is ``match``
    with its words whole, no stem prefixes: it finds some of the same rows, and FTS5 streams
    them, where a prefix must first collect every row of every term it starts. When ``whole``
    alone reaches the cap, so does ``match``, which is then never counted."""
    if whole != match:
        rows = count(whole, cap)
        if rows >= cap:
            return rows
    return count(match, cap)


def _within_budget(count: Count, match: str, whole: str) -> bool:
    """Whether ``match`` finds some rows, but no more than the scoring budget."""
    return 0 < _rows_up_to(count, match, SCORED_ROWS + 1, whole) <= SCORED_ROWS


def lexical(count: Count, terms: Sequence[str]) -> str | None:
    """The MATCH expression of ``terms``: the rows of the rarest terms, scored by all but
    common ones (``count`` counts an expression's rows)."""
    if not terms:
        return None
    quoted, whole = _quoted(terms), _quoted(terms, stems=False)
    if len(quoted) == 1:
        rows = _rows_up_to(count, quoted[0], SCORED_ROWS + 1, whole[0])
        if rows <= SCORED_ROWS:
            return quoted[0] if rows else None
        # a common single word: the chunks it names (symbol) or files (path) outrank the rest
        narrower = ("{symbol path} : ", "symbol : ")
        return next((c + quoted[0] for c in narrower
                     if _within_budget(count, c + quoted[0], c + whole[0])), None)
    counted = sorted((_rows_up_to(count, term, SCORED_ROWS + 1, whole[i]), i, term)
                     for i, term in enumerate(quoted))
    if counted[0][0] > SCORED_ROWS:
        # common words only: the rows that have them all; if none has (or too many have), the
        # words say little that the other branches would not
        every = " AND ".join(quoted)
        return every if _within_budget(count, every, " AND ".join(whole)) else None
    kept: list[tuple[int, str]] = []
    rows = 0
    for found, i, term in counted:
        if kept and rows + found > SCORED_ROWS:
            break
        kept.append((i, term))
        rows += found
    rare = " OR ".join(term for _, term in sorted(kept))
    scoring = [term for found, _, term in sorted(counted, key=lambda c: c[1])
               if found <= SCORED_ROWS]
    if len(scoring) == len(kept):
        return rare
    # the rarer terms' rows, scored by the other uncommon terms too (FTS5 counts the repeated
    # rarer phrases twice, which weighs them up a little more)
    return f"({rare}) AND ({' OR '.join(scoring)})"


def lexical_with_phrases(count: Count, terms: Sequence[str],
                         said: Sequence[Sequence[str]]) -> str | None:
    """``lexical``, kept to the chunks that say every quoted phrase."""
    match, quoted = lexical(count, terms), phrases(said)
    if quoted is None:
        return match
    return quoted if match is None else f"({quoted}) AND ({match})"
