"""Reciprocal Rank Fusion: each branch votes ``weight / (K + rank)`` for its ranked chunks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

K = 15  # lower than the usual 60: the head of each branch carries most of the evidence (dev set)


def rrf(rankings: Mapping[str, Sequence[int]], weights: Mapping[str, float]) -> dict[int, float]:
    """chunk id -> fused score, from each branch's best-first list of chunk ids."""
    fused: dict[int, float] = {}
    for branch, ranked in rankings.items():
        weight = weights.get(branch, 1.0)
        for rank, chunk_id in enumerate(ranked, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (K + rank)
    return fused
