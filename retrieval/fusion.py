"""Weighted reciprocal rank fusion of several rankings."""

from __future__ import annotations

from collections.abc import Sequence

#: Defaults of the relative-positioning study: sparse 0.2, dense 0.8, k = 60.
SPARSE_WEIGHT = 0.2
DENSE_WEIGHT = 0.8
RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], weights: Sequence[float], k: int = RRF_K
) -> list[tuple[str, float]]:
    """Fuse ranked id lists: score(d) = sum_i w_i / (k + rank_i(d)), ranks from 1; best first,
    ties in order of first appearance across the rankings."""
    if len(rankings) != len(weights):
        raise ValueError("one weight per ranking")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
    order = {doc: i for i, doc in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))
