"""Reciprocal Rank Fusion: each branch votes ``weight / (K + rank)`` for its ranked chunks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kenning.retrieval.query import Query

K = 15  # lower than the usual 60: the head of each branch carries most of the evidence (dev set)

# The declarations a query's stack trace passes through (innermost first) lead: the first frame
# outvotes a chunk ranked first by every other branch, so each frame's declaration comes before
# the chunks the words of the report find.
TRACEBACK_WEIGHT = 6.0
# The chunks that say a phrase of the trace's error message (where it was raised) come next:
# ranked first by this branch, a chunk outvotes one ranked first by the vector branch alone.
MESSAGE_WEIGHT = 3.0
# The callers and callees of the innermost frames weigh as an identifier's symbol matches do:
# code one call away from where it failed outranks what the report's words alone find.
FRAME_CALLS_WEIGHT = 2.0


def branch_weights(query: Query) -> dict[str, float]:
    """Identifier-like queries weigh the symbol branch up. Dense leads lexical by 1.5 to 1,
    the best of the ratios tried (benchmarks/README.md)."""
    return {"dense": 1.5, "lexical": 1.0, "symbol": 2.0 if query.identifier_like else 0.75,
            "traceback": TRACEBACK_WEIGHT, "message": MESSAGE_WEIGHT,
            "frame_calls": FRAME_CALLS_WEIGHT}


def fuse(rankings: Mapping[str, Sequence[tuple[int, float]]], query: Query | None = None, *,
         weights: Mapping[str, float] | None = None) -> dict[int, float]:
    """chunk id -> fused score, from each branch's best-first ``(chunk id, score)`` list;
    the branches weigh as ``weights`` say, else as ``branch_weights(query)`` does.

    Only the ranks count: fusing the branches' min-max-normalised scores instead, alone or on
    top of the ranks, scored lower (benchmarks/README.md)."""
    if weights is None:
        assert query is not None, "fuse needs a query or the weights of its branches"
        weights = branch_weights(query)
    fused: dict[int, float] = {}
    for branch, ranked in rankings.items():
        weight = weights.get(branch, 1.0)
        for rank, (chunk_id, _) in enumerate(ranked, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (K + rank)
    return fused
