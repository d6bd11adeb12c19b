"""Ranking signals applied to fused candidates.

- a boost for chunks that define a symbol the query names;
- penalties for tests, examples, vendored, generated and compatibility code, unless the query
  asks for that kind of code;
- per-file saturation, so one file cannot fill the page;
- overlapping chunks of one file merged into one result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kenning.search import symbols
from kenning.search.filters import DOCS_LANGUAGES
from kenning.search.query import Query
from kenning.tokens import split_identifier

DEFINITION_BOOST = 1.5  # the chunk defines a symbol the query names
NAME_MATCH_BOOST = 1.2  # the words of the chunk's own name are in the query (in part: pro rata)
SATURATION = 0.8  # each further chunk of a file keeps this share of its score

# category -> a path pattern; the multiplier a chunk of that category gets unless asked for
_CATEGORY_PATTERNS = {
    "test": re.compile(
        r"(^|/)(tests?|testing|__tests__|spec|specs|test_?utils|testdata|fixtures?)(/|$)"
        r"|(^|/)(test_[^/]*|[^/]*_test\.[^/]+|[^/]*_tests\.[^/]+|[^/]*\.(test|spec)\.[^/]+"
        r"|[^/]*Tests?\.[^/]+|conftest\.py)$"),
    "example": re.compile(r"(^|/)(examples?|samples?|demos?|docs_src|tutorials?|benchmarks?)(/|$)"),
    "vendored": re.compile(r"(^|/)(vendor|vendored|third_party|thirdparty|node_modules|external"
                           r"|extern|deps)(/|$)"),
    "generated": re.compile(r"(^|/)(generated|gen|__generated__)(/|$)|_pb2(_grpc)?\.py$"
                            r"|\.pb\.(go|cc|h)$|\.min\.(js|css)$|\.generated\.[^/]+$|_generated\.[^/]+$"),
    "changelog": re.compile(r"(^|/)(changes|changelog|history|news|releases?|release-notes)"
                            r"(\.[a-z]+)?$", re.IGNORECASE),
    "compat": re.compile(r"(^|/)(compat|legacy|polyfills?|shims?|deprecated)(/|$)"
                         r"|(^|/)[^/]*(_compat|compat)\.[^/]+$"),
}
_QUALIFIER = re.compile(r"\.|::|#|->|/")
PENALTY = {"test": 0.45, "example": 0.6, "vendored": 0.5, "generated": 0.5, "compat": 0.6,
           "changelog": 0.4, "docs": 0.6}


@dataclass(slots=True)
class Candidate:
    id: int
    path: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    language: str | None
    kind: str
    symbol: str | None
    score: float


def categories(path: str, language: str | None = None) -> list[str]:
    """The penalised categories of a chunk: by path, and prose (docs) by language."""
    found = [name for name, pattern in _CATEGORY_PATTERNS.items() if pattern.search(path)]
    if language in DOCS_LANGUAGES:
        found.append("docs")
    return found


def adjust(candidate: Candidate, query: Query, names: tuple[str, ...],
           terms: frozenset[str]) -> float:
    """The candidate's score after the definition boost and the category penalties."""
    score = candidate.score
    if candidate.symbol:
        if names and max(symbols.grade(candidate.symbol, name) for name in names) \
                >= symbols.CASELESS:
            score *= DEFINITION_BOOST
        else:
            own = set(split_identifier(_QUALIFIER.split(candidate.symbol)[-1]))
            if own:
                score *= 1 + (NAME_MATCH_BOOST - 1) * len(own & terms) / len(own)
    for category in categories(candidate.path, candidate.language):
        if category not in query.asks_for:
            score *= PENALTY[category]
    return score


def merge_overlaps(ranked: list[Candidate]) -> list[Candidate]:
    """Drop a chunk nested with a better one of the same file; join partly overlapping ones."""
    kept: list[Candidate] = []
    by_path: dict[str, list[Candidate]] = {}
    for cand in ranked:
        same_file = by_path.setdefault(cand.path, [])
        for other in same_file:
            if cand.start_byte >= other.end_byte or cand.end_byte <= other.start_byte:
                continue
            nested = (other.start_byte <= cand.start_byte and cand.end_byte <= other.end_byte) \
                or (cand.start_byte <= other.start_byte and other.end_byte <= cand.end_byte)
            if not nested:  # partly overlapping: the better one grows to cover both
                other.start_byte = min(other.start_byte, cand.start_byte)
                other.end_byte = max(other.end_byte, cand.end_byte)
                other.start_line = min(other.start_line, cand.start_line)
                other.end_line = max(other.end_line, cand.end_line)
            break
        else:
            same_file.append(cand)
            kept.append(cand)
    return kept


def saturate(ranked: list[Candidate]) -> list[Candidate]:
    """Each further chunk of an already listed file keeps SATURATION of its score; re-sorted."""
    seen: dict[str, int] = {}
    for cand in ranked:
        n = seen.get(cand.path, 0)
        seen[cand.path] = n + 1
        cand.score *= SATURATION**n
    ranked.sort(key=lambda c: (-c.score, c.path, c.start_line))
    return ranked


def rank(candidates: list[Candidate], query: Query) -> list[Candidate]:
    """Candidates (fused scores) re-scored by the signals, best first; changes them in place."""
    names, terms = query.symbol_names, frozenset(query.terms)
    for cand in candidates:
        cand.score = adjust(cand, query, names, terms)
    candidates.sort(key=lambda c: (-c.score, c.path, c.start_line))
    return saturate(merge_overlaps(candidates))
