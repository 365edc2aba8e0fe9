"""Fusion of several rankings into one: a weighted sum of their normalised scores, or weighted
reciprocal rank fusion (RRF)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum


class Fusion(StrEnum):
    """How hybrid retrieval fuses its BM25 and vector rankings."""

    SCORES = "scores"  # weighted sum of min-max normalised scores, and the name bonus (the default)
    RRF = "rrf"  # weighted reciprocal rank fusion


#: Weights of score fusion, chosen on bench_search's dev queries (packages outside the held-out third,
#: MiniLM): BM25 weighed as much as the vectors led MRR and recall@10 over 0.2-0.4 and 0.6-0.7.
SPARSE_WEIGHT = 0.5
DENSE_WEIGHT = 0.5
#: Defaults of RRF, from the relative-positioning study: sparse 0.2, dense 0.8, k = 60.
RRF_SPARSE_WEIGHT = 0.2
RRF_DENSE_WEIGHT = 0.8
RRF_K = 60
#: The default (sparse, dense) weights of each fusion.
FUSION_WEIGHTS = {Fusion.SCORES: (SPARSE_WEIGHT, DENSE_WEIGHT), Fusion.RRF: (RRF_SPARSE_WEIGHT, RRF_DENSE_WEIGHT)}
#: How many candidates each ranking brings to a fusion, at least (10 per result asked for above that).
#: Score fusion scales each ranking so that its last candidate scores 0, so up to k = 20 a hit's fused
#: score does not move with k; 200 was chosen on bench_search's dev queries among 100-1000 (MiniLM hybrid
#: recall@10 0.860 against 0.856 at 100 and 0.850 at 1000; the static table 0.798 against 0.794). RRF
#: keeps 100, the depth `pkg compare`'s committed `hybrid` runs were made with.
FUSION_DEPTHS = {Fusion.SCORES: 200, Fusion.RRF: 100}


def score_fusion(rankings: Sequence[Sequence[tuple[str, float]]], weights: Sequence[float]) -> list[tuple[str, float]]:
    """Fuse scored rankings: score(d) = sum_i w_i * norm_i(d), where norm_i maps ranking i's scores
    linearly onto [0, 1] (its best hit 1, its last 0; every hit 1 when they are all equal) and is 0 for
    a document ranking i does not hold. Best first, ties in order of first appearance."""
    if len(rankings) != len(weights):
        raise ValueError("one weight per ranking")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights):
        if not ranking:
            continue
        values = [score for _, score in ranking]
        low, span = min(values), max(values) - min(values)
        for doc, score in ranking:
            normalised = (score - low) / span if span > 0 else 1.0
            scores[doc] = scores.get(doc, 0.0) + weight * normalised
    order = {doc: i for i, doc in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


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
