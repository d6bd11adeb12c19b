"""The rank pipeline, written once for every ``Source`` (a local snapshot, a project of the shared
index): the branches, their fusion, the relevance floor, the stable head, the ranking signals,
the weak rule and the evidence the confidence is computed from.

Each ranking signal lives in ``retrieval.ranking`` (``rank`` applies them in order); the
pipeline decides only which candidates reach it and what is weak."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from kenning.retrieval import confidence, dense
from kenning.retrieval.fusion import fuse
from kenning.retrieval.query import Query, named_tokens
from kenning.retrieval.ranking import Candidate, named_candidates, rank
from kenning.retrieval.reexports import lead_with_reexports
from kenning.retrieval.source import Ranking, Source

BRANCHES = ("dense", "lexical", "symbol")
# Results one search returns at most. A larger limit gets this many and a warning. Each branch
# and the ranking look at least twice the limit deep, as results merge (the windows of one
# declaration, overlapping chunks) and the relevance floor drops some.
MAX_LIMIT = 200
LEXICAL_DEPTH = 100  # ranked chunks each branch hands to fusion
DENSE_DEPTH = 100
SYMBOL_DEPTH = 50
RANK_DEPTH = 60  # fused candidates the ranking signals consider
FRAMES_WIDENED = 3  # a traceback's innermost frames whose callers and callees join the fusion
# The first results of a search come from the same candidates whatever its limit, ranked as
# this many results need; a larger limit appends the rest.
STABLE_RESULTS = 20
# branches whose chunks the relevance floor keeps whatever their cosine: they name what is asked
NAMED_BRANCHES = ("symbol", "traceback", "frame_calls", "message")


@dataclass
class Ranked:
    """One source's results: its ranked candidates, those that match poorly (``weak``), and
    for each candidate what ``confidence.assess`` reads of it (``evidence``)."""

    cands: list[Candidate]
    weak: set[int]
    evidence: list[dict[str, Any]]


class _Search:
    """One query over one source: the branches' rankings at a depth, the cosines read so far."""

    def __init__(self, source: Source, query: Query, branches: Collection[str],
                 floor: float | None) -> None:
        self.source, self.query, self.branches, self.floor = source, query, branches, floor
        self.vector = source.has_vector  # the floor and the weak rule hold without the branch
        self.cosine: dict[int, float] = {}
        self.frames = source.frames(query) if query.trace is not None else []
        widened = [cid for cid, _ in self.frames[:FRAMES_WIDENED]]
        self.frame_calls = source.frame_calls(widened) if widened else []

    def retrieved(self, depth: int) -> dict[str, Ranking]:
        """Each branch's ranking, at least ``depth`` deep (and its default depth)."""
        source, query = self.source, self.query
        rankings: dict[str, Ranking] = {}
        if "lexical" in self.branches:
            rankings["lexical"] = source.lexical(query, max(LEXICAL_DEPTH, depth))
        if "symbol" in self.branches:
            rankings["symbol"] = source.symbols(query, max(SYMBOL_DEPTH, depth))
        lead_with_reexports(query, rankings, source.symbol_less, source.texts)
        if self.frames:
            rankings["traceback"] = self.frames
        if self.frame_calls:
            rankings["frame_calls"] = self.frame_calls
        if query.message_phrases and "lexical" in self.branches:
            rankings["message"] = source.message(query, max(LEXICAL_DEPTH, depth))
        if self.vector and "dense" in self.branches:
            rankings["dense"] = source.dense(max(DENSE_DEPTH, depth))
            self.cosine.update(rankings["dense"])
        return rankings

    def floored(self) -> bool:
        return (self.floor is not None and self.vector
                and len(self.query.terms) >= dense.FLOOR_MIN_TERMS)

    def read_cosines(self, ids: Collection[int]) -> None:
        missing = [cid for cid in ids if cid not in self.cosine]
        if missing:
            self.cosine.update(self.source.cosines(missing))

    def ranked(self, rankings: dict[str, Ranking], pool: int, depth: int) -> list[Candidate]:
        """The branches' rankings fused, held to the relevance floor and re-ranked by the
        signals: ``pool`` fused candidates, ranked as the first ``depth`` results need."""
        fused = fuse(rankings, self.query)
        if self.floored():
            floor = self.floor
            assert floor is not None
            self.read_cosines(list(fused))
            named = {cid for branch in NAMED_BRANCHES for cid, _ in rankings.get(branch, ())}
            # chunks with no vector yet (a partial index) are judged by the other branches
            fused = {cid: s for cid, s in fused.items()
                     if cid in named or self.cosine.get(cid, floor) >= floor}
        if self.query.phrases:  # a quoted phrase is said by every result, where any chunk says it
            saying = self.source.saying(self.query.phrases, list(fused))
            if saying:
                fused = {cid: s for cid, s in fused.items() if cid in saying}
        # signals re-order the head of the fused list; deeper candidates cannot reach the page
        head = sorted(fused, key=lambda cid: -fused[cid])[:pool]
        cands = self.source.candidates(head)
        for cand in cands:
            cand.score = fused[cand.id]
        return rank(cands, self.query, self.source.later_parts(cands, self.query),
                    self.source.units, depth=depth, declared_of=self.source.declared)

    def weak(self, cands: list[Candidate]) -> set[int]:
        """The candidates that match the query poorly: all of them when it names an identifier
        no chunk contains (a function deleted since, a name misspelt) or quotes a phrase none
        says; else those under the relevance floor of the model, except where a name the query
        asks for is declared."""
        if not cands:
            return set()
        source, query = self.source, self.query
        if any(not source.says([[token]]) for token in named_tokens(query)) or not source.says(
                query.phrases):
            return {c.id for c in cands}
        if self.floor is None or not self.vector:
            return set()
        floor = self.floor
        self.read_cosines([c.id for c in cands])
        declared = {c.id for c in named_candidates(cands, query)}
        return {c.id for c in cands
                if c.id not in declared and self.cosine.get(c.id, floor) < floor}

    def evidence(self, cands: list[Candidate], framed: set[int]) -> list[dict[str, Any]]:
        """What ``confidence.assess`` needs of each result that only this source knows: its
        cosine against the source's background, whether it declares a name the query asks for,
        the share of the query's terms the source says, whether it is ``sure`` (it holds a
        frame of the query's stack trace, or says the phrases the query quotes)."""
        source, query = self.source, self.query
        spread = None
        if self.vector:
            spread = source.background()
            self.read_cosines([c.id for c in cands])
        named = {c.id for c in named_candidates(cands, query)}
        terms = query.terms
        known = sum(source.says([[t]]) for t in terms) / len(terms) if terms else 1.0
        # a quoted phrase that is said keeps only the results that say it: each is what was asked
        quoted = bool(query.phrases) and source.says(query.phrases)
        return [{"cos_z": confidence.cos_z(self.cosine.get(c.id), spread),
                 "named": c.id in named, "known": known, "sure": quoted or c.id in framed}
                for c in cands]


def search(source: Source, query: Query, *, limit: int, branches: Collection[str],
           floor: float | None, prefer: str | None = None) -> Ranked:
    """The best ``limit`` results of ``source`` for ``query`` from ``branches``, held to the
    model's relevance ``floor``; those under the folder ``prefer`` (a path prefix ending in
    "/") first."""
    one = _Search(source, query, branches, floor)
    # The head comes from the same candidates whatever the limit: an agent that asks for 50
    # results sees the best answer one that asks for 10 sees. A larger limit only adds results
    # after it, from deeper candidates.
    cands = _folder_first(one.ranked(one.retrieved(0), RANK_DEPTH, STABLE_RESULTS),
                          prefer)[: min(limit, STABLE_RESULTS)]
    if limit > STABLE_RESULTS:
        wide = 2 * limit
        deeper = one.ranked(one.retrieved(wide), max(RANK_DEPTH, wide), limit)
        cands += _after(cands, _folder_first(deeper, prefer), limit)
    framed = {cid for cid, _ in one.frames}
    weak = one.weak(cands) - framed
    return Ranked(cands, weak, one.evidence(cands, framed))


def _folder_first(cands: list[Candidate], prefix: str | None) -> list[Candidate]:
    """``cands`` with those under ``prefix`` (a folder's path, ending in "/") first, each part
    in its order: searched from a subfolder, its own code is what is meant first."""
    if prefix is None:
        return cands
    inside = [c for c in cands if c.path.startswith(prefix)]
    return inside + [c for c in cands if not c.path.startswith(prefix)]


def _after(head: list[Candidate], deeper: list[Candidate], limit: int) -> list[Candidate]:
    """The results of ``deeper`` that overlap none of ``head``, as many as fill ``limit``."""
    taken: dict[str, list[Candidate]] = {}
    for cand in head:
        taken.setdefault(cand.path, []).append(cand)
    more: list[Candidate] = []
    for cand in deeper:
        if len(head) + len(more) >= limit:
            break
        if not any(cand.start_byte < other.end_byte and other.start_byte < cand.end_byte
                   for other in taken.get(cand.path, ())):
            more.append(cand)
    return more
