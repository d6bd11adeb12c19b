"""Each result's ``confidence``: the probability that it answers the query, one meaning for every
model and every mix of branches.

Fused scores (RRF sums, then the ranking signals) rank well but read as nothing: a right answer
may score 0.110 and a wrong one 0.107. The confidence is the product of two small logistic
models over evidence that means the same whatever the model and the branches: the probability
that the project answers the question at all, times the probability that this result is the
answer when it does.

Of the search (``QUERY_FEATURES``):

- ``known``: the share of the query's terms that some chunk of the index says: a question
  whose words the project never uses is seldom answered there, as a grep user concludes; 1
  where the index is not at hand (a result of the shared index).
- ``best_said``: the largest share of the query's terms (stemmed) that one result's text says.

Of the result (``FEATURES``, the first five):

- ``cos_z``: its rescored cosine in standard deviations above the cosines of the query against
  the index's own background (a fixed, evenly spaced sample of its vectors), so a model whose
  cosines sit high (e5) or low (OpenAI) reads the same; 0, the background's mean, when it has
  no cosine (dense off, the embedder down, a result of the shared index).
- ``said``: the share of the query's terms that its text says.
- ``in_name``: the share of them that its declared name or its path says.
- ``named``: the query names an identifier this result declares.
- ``log_rank``: the natural log of its rank in the results.

A result under ``WEAK_BELOW`` is weak, as are those the older rules flag (a name the query asks
for that no chunk contains, a quoted phrase none says, a cosine under the model's floor); a
search none of whose results is strong has ``no_strong_match``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kenning import kernels
from kenning.retrieval.query import Query
from kenning.retrieval.ranking import path_words, stem
from kenning.store import Snapshot
from kenning.tokens import code_tokens, split_identifier

FEATURES = ("cos_z", "said", "in_name", "named", "log_rank", "known")
QUERY_FEATURES = ("known", "best_said")
# Fitted by benchmarks/fit_confidence.py (which refits them and says how) on the dev kits only,
# with the embedded all-MiniLM-L6-v2: semble-bench dev (chi, express, model2vec, rack, sinatra),
# the docstring dev set (40 queries per package) and benchmarks/absent_questions.jsonl. The
# query's model is fitted on whether a question is answerable, the result's on whether each of
# the first 10 results of an answerable question answers it (overlaps a target).
QUERY_INTERCEPT = -6.8417
QUERY_COEFFICIENTS = (6.4923, 9.6134)
RESULT_INTERCEPT = -1.8620
RESULT_COEFFICIENTS = (0.2032, -0.3765, 3.3027, 0.3847, -0.7968)
# A result under this confidence is weak: on that data, the threshold that flags the most
# absent-answer questions (95% of them get no_strong_match) while the first result of at most
# 10% of the answerable ones is weak (5.4%), the lowest such.
WEAK_BELOW = 0.21
BACKGROUND_ROWS = 512  # vectors of the index the query's cosines are measured against
# Where every result of a list that answers no query (``related``) is weak.
WEAK_LINE = ("Nothing relevant found: no result contains the names the query asks for, or all "
             "are below the relevance floor; these are the nearest matches.")


def no_strong_match_line(quoted: str) -> str:
    """The one line that comes first where no result is strong (``quoted``: the query)."""
    return (f"No strong match for {quoted}. Nothing relevant found: no result reaches "
            f"confidence {WEAK_BELOW:g}, or a name or phrase the query asks for is said "
            "nowhere; these are the nearest matches.")


def background(snap: Snapshot, query_vector: np.ndarray) -> tuple[float, float] | None:
    """Mean and standard deviation of the query's cosines against an evenly spaced sample of
    the index's vectors (None when it has too few to say)."""
    rows = snap.vector_rows
    if rows < 2:
        return None
    sample = np.unique(np.linspace(0, rows - 1, min(rows, BACKGROUND_ROWS)).astype(np.int64))
    cos = kernels.rescore(query_vector, np.ascontiguousarray(snap.int8[sample]),
                          np.ascontiguousarray(snap.scales[sample]))
    spread = float(np.std(cos))
    return (float(np.mean(cos)), spread) if spread > 0 else None


def cos_z(cosine: float | None, spread: tuple[float, float] | None) -> float | None:
    """``cosine`` in standard deviations above the background, or None without both."""
    if cosine is None or spread is None:
        return None
    return (cosine - spread[0]) / spread[1]


def features(result: dict[str, Any], query: Query, rank: int,
             evidence: Mapping[str, Any]) -> list[float]:
    """The evidence of one result (in the order of ``FEATURES``), with what the search left on
    it (``evidence``: its ``cos_z``, ``named``, ``known``; each may be missing)."""
    terms = {stem(t) for t in query.terms}
    said = {stem(t) for t in code_tokens(str(result.get("content") or ""))}
    names = {stem(w) for w in split_identifier(str(result.get("symbol") or ""))}
    names |= {stem(w) for w in path_words(str(result["path"]))}
    share = len(terms & said) / len(terms) if terms else 0.0
    in_name = len(terms & names) / len(terms) if terms else 0.0
    return [float(evidence.get("cos_z") or 0.0), share, in_name,
            float(bool(evidence.get("named"))), math.log(rank),
            float(evidence.get("known", 1.0))]


def of_search(found: Sequence[Sequence[float]]) -> list[float]:
    """The evidence of the search (``QUERY_FEATURES``) from its results' (``FEATURES``)."""
    return [found[0][5], max(values[1] for values in found)] if found else [1.0, 0.0]


def _logistic(intercept: float, coefficients: Sequence[float], values: Sequence[float]) -> float:
    logit = intercept + sum(c * v for c, v in zip(coefficients, values, strict=True))
    return 1 / (1 + math.exp(-max(-50.0, min(50.0, logit))))


def probability(values: Sequence[float], search: Sequence[float]) -> float:
    """The fitted probability that a result answers, from its evidence and the search's."""
    return (_logistic(QUERY_INTERCEPT, QUERY_COEFFICIENTS, search)
            * _logistic(RESULT_INTERCEPT, RESULT_COEFFICIENTS, values[:5]))


def assess(results: list[dict[str, Any]], query: Query) -> bool:
    """Give each result its ``confidence`` and mark those under ``WEAK_BELOW`` weak, save the
    ``sure`` ones (the frames of a stack trace in the query: where it happened; the results
    that say a phrase it quotes: what was asked); the private evidence the search left on them
    is removed. True when no result is strong."""
    evidence = [result.pop("_evidence", None) or {} for result in results]
    found = [features(result, query, rank, left)
             for rank, (result, left) in enumerate(zip(results, evidence, strict=True), 1)]
    search = of_search(found)
    for result, values, left in zip(results, found, evidence, strict=True):
        value = probability(values, search)
        result["confidence"] = round(value, 3)
        if value < WEAK_BELOW and not left.get("sure"):
            result["weak"] = True
    return not any(not r.get("weak") for r in results)
