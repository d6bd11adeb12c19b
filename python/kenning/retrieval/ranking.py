"""Ranking signals applied to fused candidates.

- a boost for chunks that define a symbol the query names (less for a case-insensitive match),
  not for the later parts of a declaration split over several chunks;
- a fusion vote for chunks of files whose name the query says (``UpsertStatement.kt`` for
  "upsert statement builders"): a file's name is the one-line summary its authors chose;
- penalties for tests, docs, examples, vendored, generated and compatibility code, shell
  completions, and copies in a version folder whose current counterpart also matched, unless
  the query asks for that kind of code (``indexing.classes``);
- for a question ("how are retries handled"), a lift for the best chunk of each file in
  proportion to the file's share of the evidence: a mechanism lives where its chunks gather;
  and one by the query's words that its path and the names it declares say, a word rare among
  the candidates' files weighing more than one many of their names say;
- no module head (the imports and banner a file starts with) where the file's best other
  candidate is a declaration: the declaration is what the file answers with;
- one result per unit of meaning (``units``): the chunks of one declaration cut into windows
  make one result, which spans the declaration and keeps its best window for the snippet;
- per-file saturation, so one file cannot fill the page;
- overlapping chunks of one file merged into one result.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

import snowballstemmer

from kenning.indexing.classes import PENALTY, categories, superseded
from kenning.retrieval import symbols
from kenning.retrieval.fusion import K
from kenning.retrieval.query import Query
from kenning.retrieval.units import Unit
from kenning.tokens import QUALIFIER, split_identifier

if TYPE_CHECKING:
    from kenning.store import Snapshot

DEFINITION_BOOST = 1.5  # the chunk defines a symbol the query names
# A name that more candidates than this declare (`__init__`, `new`, `run`, `get`) says less of
# each: their scores shrink in proportion, so one class's `__init__` after another does not fill
# the page. (A qualified name asked exactly, `Router::new`, names one of them and keeps its own.)
COMMON_NAME = 3
# A special method (`__init__`, `__eq__`) that many declare is often generated or assembled in
# one place (`_make_init`, `add_eq`): a candidate whose own name says its word, unless it is
# that method itself, gets the definition boost too.
_SPECIAL = re.compile(r"__([a-z][a-z0-9]*(?:_[a-z0-9]+)*)__")
NAME_MATCH_BOOST = 1.2  # the words of the chunk's own name are in the query (in part: pro rata)
SATURATION = 0.5  # each further chunk of a file keeps this share of its score
# For a question, the best chunk of each file gains up to this share of the top score, in
# proportion to the sum of its file's candidate scores (the file with the most evidence gains
# it all). Only for questions: on the docstring dev set, whose queries describe one function,
# it lifts files with many middling chunks over the one that answers.
FILE_EVIDENCE_LIFT = 0.5
# For a question, the best chunk of each file gains up to this share of the top score, in
# proportion to the share of the query's words (each weighed by its rarity among the
# candidates' files) that the file's path and the names of its declarations say: "how are
# nested routers merged" is answered where `Router.nest` and `merge` are declared. Only for
# questions: a description of one function names words of its neighbours (benchmarks/README.md).
FILE_DECLARATION_LIFT = 0.6
# A file whose name the query says gets a fusion vote of this weight (as if a branch ranked it
# first), pro rata of its name's words found in the query; more for an identifier query, whose
# home file is often named after it. A vote, not a multiplicative boost, which misleads where
# the words of a neighbouring file's name are in the query.
FILE_NAME_VOTE = 0.5
FILE_NAME_VOTE_IDENTIFIER = 1.5
# File names that say nothing of their content: their folder's name says it instead.
_GENERIC_STEMS = frozenset({"mod", "index", "init", "__init__", "main", "lib"})
# Words are compared by their Snowball (Porter 2) stems: `routes` in a query and a file
# `route.ts`, `serialized` and `MessagePackSerializer`.
_STEMMER = snowballstemmer.stemmer("english")
_STEMMER_LOCK = threading.Lock()  # a stemmer keeps the word it works on in itself

# Files that declare what another file defines: type stubs, TypeScript declaration files, C and
# C++ headers. Where a definition of the same name is among the candidates, the stub scores
# at most this share of it.
STUB = re.compile(r"\.pyi$|\.d\.[mc]?ts$|\.(h|hh|hpp|hxx)$")
STUB_SHARE = 0.9



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
    # What the snippet shows (start byte, end byte, start line, end line) once the candidate
    # spans its whole unit; None while it is its chunk alone.
    window: tuple[int, int, int, int] | None = None
    generated: bool = False  # its file's first lines say a tool wrote it
    file_kind: str | None = None  # the kind stored for its file (indexing.kinds)


@dataclass(frozen=True, slots=True)
class _Asked:
    """What the ranking signals need of the query, computed once per search."""

    query: Query
    names: tuple[str, ...]
    terms: frozenset[str]  # the stems of its words
    file_vote: float
    # how many declarations among the candidates declare each name the query asks for by its
    # last component alone
    declarers: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, query: Query, candidates: list[Candidate] | None = None) -> _Asked:
        terms = frozenset(stem(t) for t in query.terms)
        vote = FILE_NAME_VOTE_IDENTIFIER if query.identifier_like else FILE_NAME_VOTE
        asked = cls(query, query.symbol_names, terms, vote)
        # a declaration counts once, whatever its chunks (the clauses of one Elixir macro, the
        # parts of a long function)
        seen = {(c.path, c.symbol) for c in candidates or ()
                if c.symbol and symbols.CASELESS <= _grade(c, asked) < symbols.EXACT}
        for _, symbol in seen:
            name = _last(symbol)
            asked.declarers[name] = asked.declarers.get(name, 0) + 1
        return asked

    def shared(self, candidate: Candidate) -> int:
        """How many candidates declare the name the query asks for that ``candidate`` declares
        by its last component alone (0: it declares none so)."""
        if not candidate.symbol or not (
                symbols.CASELESS <= _grade(candidate, self) < symbols.EXACT):
            return 0
        return self.declarers.get(_last(candidate.symbol), 0)

    def builds(self, symbol: str) -> bool:
        """Whether ``symbol`` names, without being it, a special method the query asks for that
        many candidates declare: where that method is generated (``_make_init``)."""
        own = _last(symbol)
        for name in self.names:
            found = _SPECIAL.fullmatch(name)
            if (found and own != name and self.declarers.get(name, 0) > COMMON_NAME
                    and found.group(1) in split_identifier(own)):
                return True
        return False


def _last(symbol: str) -> str:
    return QUALIFIER.split(symbol)[-1]


def _grade(candidate: Candidate, asked: _Asked) -> float:
    return symbols.best_grade(candidate.symbol, asked.names) if candidate.symbol else 0.0


def later_parts(snap: Snapshot, candidates: list[Candidate], query: Query) -> set[int]:
    """Candidates named as a queried symbol that are not where it is declared: the later parts
    of a declaration too big for one chunk (a class's fields and banner comments between its
    methods carry the class's name, but its first chunk holds the declaration): they get no
    definition boost (benchmarks/README.md)."""
    named = named_candidates(candidates, query)
    # the parts of one declaration share its signature too; overloads differ in theirs
    first = snap.declaration_starts([cand.id for cand in named])
    return {cand.id for cand in named
            if cand.id in first and cand.start_byte > first[cand.id]}


def heads_of_parts(candidates: list[Candidate], parts: AbstractSet[int]) -> list[Candidate]:
    """``candidates`` without the later ``parts`` of a declaration whose first part is among
    them, which takes a part's score when it is higher: a class asked for by name is found
    where it is declared, not at a banner comment between its methods that says its name."""
    heads: dict[tuple[str, str], list[Candidate]] = {}
    for cand in candidates:
        if cand.symbol and cand.id not in parts:
            heads.setdefault((cand.path, cand.symbol), []).append(cand)
    kept = []
    for cand in candidates:
        above = [h for h in heads.get((cand.path, cand.symbol or ""), ())
                 if h.start_byte < cand.start_byte] if cand.id in parts else []
        if above:
            head = max(above, key=lambda h: h.start_byte)  # of an overload, the nearest
            head.score = max(head.score, cand.score)
        else:
            kept.append(cand)
    return kept


def named_candidates(candidates: list[Candidate], query: Query) -> list[Candidate]:
    """The candidates whose symbol is a name the query asks for (in any case)."""
    asked = _Asked.of(query)
    return [cand for cand in candidates if _grade(cand, asked) >= symbols.CASELESS]


def adjust(candidate: Candidate, asked: _Asked, parts: AbstractSet[int],
           old: AbstractSet[str] = frozenset()) -> float:
    """The candidate's score after the symbol and file-name signals and the penalties; ``old``
    are the paths superseded by a current counterpart."""
    score = candidate.score
    if candidate.symbol and candidate.id not in parts:
        grade = _grade(candidate, asked)
        if grade >= symbols.LAST_PART or asked.builds(candidate.symbol):
            score *= DEFINITION_BOOST
        elif grade >= symbols.CASELESS:  # `monad` for the query `Monad`: likely, not surely it
            score *= 1 + (DEFINITION_BOOST - 1) / 2
        else:
            own = {stem(w) for w in split_identifier(QUALIFIER.split(candidate.symbol)[-1])}
            if own:
                score *= 1 + (NAME_MATCH_BOOST - 1) * len(own & asked.terms) / len(own)
    words = file_words(candidate.path)
    if words:
        said = sum(1 for w in words if stem(w) in asked.terms)
        score += asked.file_vote * said / len(words) / (K + 1)
    for category in categories(candidate.path, candidate.language, candidate.symbol,
                               candidate.generated, candidate.file_kind):
        if category not in asked.query.asks_for:
            score *= PENALTY[category]
    if candidate.path in old:
        score *= PENALTY["compat"]
    return score


def without_module_heads(candidates: list[Candidate]) -> list[Candidate]:
    """``candidates`` without the head of a file (its imports, banner, module comment: the
    declaration-less block it starts with) where the file's best other candidate is a
    declaration: that is what the file answers with. A file in whose code the parser finds no
    declarations (``app.init = function ...``) keeps its head, which may be its best part."""
    best: dict[str, Candidate] = {}
    for cand in candidates:
        if not _module_head(cand) and (cand.path not in best
                                       or cand.score > best[cand.path].score):
            best[cand.path] = cand
    return [c for c in candidates
            if not (_module_head(c) and c.path in best and best[c.path].symbol)]


def _module_head(candidate: Candidate) -> bool:
    return candidate.start_byte == 0 and candidate.symbol is None


def below_definitions(candidates: list[Candidate]) -> None:
    """Each stub (a ``.pyi`` or ``.d.ts`` file, a C or C++ header) scores below the best
    candidate of another file that declares the same name: the definition is what a search is
    after, and a name only a stub declares keeps its stub's score."""
    defined: dict[tuple[str, str | None], float] = {}
    for cand in candidates:
        if cand.symbol and not STUB.search(cand.path):
            for key in ((_last(cand.symbol), None), (_last(cand.symbol), cand.kind)):
                defined[key] = max(defined.get(key, 0.0), cand.score)
    for cand in candidates:
        found = STUB.search(cand.path) if cand.symbol else None
        if found is not None and cand.symbol:
            # a header also declares what it defines: a class `Foo` is not the constructor
            # `Foo::Foo` of its source file
            kind = cand.kind if found.group(1) else None
            best = defined.get((_last(cand.symbol), kind))
            if best is not None:
                cand.score = min(cand.score, best * STUB_SHARE)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """``word``'s stem, compared whole (not as a prefix) with the stems of the query's words."""
    with _STEMMER_LOCK:
        return str(_STEMMER.stemWord(word))


@lru_cache(maxsize=8192)
def file_words(path: str) -> tuple[str, ...]:
    """The words of a file's name (``UpsertStatement.kt``: upsert, statement); for a generic
    name (``mod.rs``, ``index.ts``) the words of its folder's name."""
    parts = path.split("/")
    stem = parts[-1].split(".")[0]
    if stem.lower() in _GENERIC_STEMS and len(parts) > 1:
        stem = parts[-2]
    return tuple(w for w in split_identifier(stem.replace("-", "_")) if len(w) > 1 and w.isalpha())


def lift_files_with_evidence(candidates: list[Candidate]) -> None:
    """Add to each file's best chunk a share of the top score, by its file's total score."""
    totals: dict[str, float] = {}
    best: dict[str, Candidate] = {}
    for cand in candidates:
        totals[cand.path] = totals.get(cand.path, 0.0) + cand.score
        if cand.path not in best or cand.score > best[cand.path].score:
            best[cand.path] = cand
    most = max(totals.values(), default=0.0)
    if most <= 0:
        return
    unit = FILE_EVIDENCE_LIFT * max(c.score for c in candidates) / most
    for path, cand in best.items():
        cand.score += unit * totals[path]


@lru_cache(maxsize=8192)
def path_words(path: str) -> frozenset[str]:
    """The words of a path's folders and file name."""
    return frozenset(w for part in path.split("/") for w in split_identifier(
        part.split(".")[0].replace("-", "_")) if len(w) > 1 and w.isalpha())


def lift_files_declaring(candidates: list[Candidate], asked: _Asked,
                         declared: dict[str, frozenset[str]]) -> None:
    """Add to each file's best chunk a share of the top score, by the share of the query's
    terms that the names of the file's declarations and its path say, each term weighed by
    its rarity among the candidates' files (an inverse document frequency)."""
    terms = asked.terms
    if not terms or not candidates:
        return
    best: dict[str, Candidate] = {}
    for cand in candidates:
        if cand.path not in best or cand.score > best[cand.path].score:
            best[cand.path] = cand
    top = max(c.score for c in candidates)
    says = {path: {stem(w) for w in declared.get(path, frozenset()) | path_words(path)} & terms
            for path in best}
    # a word weighs as it is rare among the candidates' files (a word none says weighs most),
    # so "file" or "type" in many names lifts little and "wrap" in one lifts its file
    weight = {t: math.log(1 + len(best) / max(1, sum(t in said for said in says.values())))
              for t in terms}
    total = sum(weight.values())
    for path, cand in best.items():
        cand.score += FILE_DECLARATION_LIFT * top * sum(weight[t] for t in says[path]) / total


def merge_units(ranked: list[Candidate], found: dict[int, Unit]) -> list[Candidate]:
    """One result per unit: its best chunk, spread over the unit, with its window kept for the
    snippet; the unit's other chunks are dropped."""
    kept: list[Candidate] = []
    seen: set[tuple[str, int]] = set()
    for cand in ranked:
        unit = found.get(cand.id)
        if unit is None:
            kept.append(cand)
            continue
        key = (cand.path, unit.span[0])
        if key in seen:
            continue
        seen.add(key)
        cand.start_byte, cand.end_byte, cand.start_line, cand.end_line = unit.span
        cand.window, cand.kind, cand.symbol = unit.window, unit.kind, unit.symbol
        kept.append(cand)
    return kept


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


def rank(candidates: list[Candidate], query: Query, parts: AbstractSet[int] = frozenset(),
         units_of: Callable[[list[Candidate]], dict[int, Unit]] | None = None,
         depth: int = 30,
         declared_of: Callable[[list[str]], dict[str, frozenset[str]]] | None = None,
         ) -> list[Candidate]:
    """Candidates (fused scores) re-scored by the signals, best first; changes them in place.
    ``parts`` are the ids ``later_parts`` found among them; ``units_of`` gives the units of the
    best, as many as the first ``depth`` results can come from (reading them costs a scan of
    their files)."""
    asked = _Asked.of(query, candidates)
    for cand in candidates:
        shared = asked.shared(cand)
        if shared > COMMON_NAME:
            cand.score *= COMMON_NAME / shared
    if query.question:
        if declared_of is not None:
            lift_files_declaring(candidates, asked,
                                 declared_of(sorted({c.path for c in candidates})))
        lift_files_with_evidence(candidates)
    old = (superseded((c.path for c in candidates), query.text)
           if "compat" not in query.asks_for else set())
    for cand in candidates:
        cand.score = adjust(cand, asked, parts, old)
    candidates[:] = heads_of_parts(candidates, parts)
    candidates[:] = without_module_heads(candidates)
    below_definitions(candidates)
    candidates.sort(key=lambda c: (-c.score, c.path, c.start_line))
    found = _units_of_head(candidates, units_of, depth) if units_of is not None else {}
    return saturate(merge_overlaps(merge_units(candidates, found)))


def _units_of_head(candidates: list[Candidate],
                   units_of: Callable[[list[Candidate]], dict[int, Unit]],
                   depth: int) -> dict[int, Unit]:
    """The units of the best candidates (sorted), read until no candidate left unread can reach
    the first ``depth`` results: the windows of one declaration merge and further results of
    one file yield (``saturate``), so a candidate far down the list can reach the page, and it
    must come there whole too."""
    found: dict[int, Unit] = {}
    looked = 0
    while looked < len(candidates):
        batch = candidates[looked: looked + depth]
        found.update(units_of(batch))
        looked += len(batch)
        if looked < len(candidates) and _settled(candidates[:looked], found, depth,
                                                 candidates[looked].score):
            break
    return found


def _settled(head: list[Candidate], found: dict[int, Unit], depth: int, rest: float) -> bool:
    """Whether ``head``, merged by units and saturated, makes ``depth`` results that each score
    at least ``rest``, the best score of the candidates after it."""
    merged: set[tuple[str, int]] = set()
    per_file: dict[str, int] = {}
    scores: list[float] = []
    for cand in head:
        unit = found.get(cand.id)
        key = (cand.path, unit.span[0] if unit is not None else -1 - cand.id)
        if key in merged:
            continue
        merged.add(key)
        n = per_file.get(cand.path, 0)
        per_file[cand.path] = n + 1
        scores.append(cand.score * SATURATION**n)
    return len(scores) >= depth and sorted(scores, reverse=True)[depth - 1] >= rest
