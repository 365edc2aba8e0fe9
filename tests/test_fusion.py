"""Score fusion and weighted reciprocal rank fusion."""

from __future__ import annotations

import pytest

from retrieval.fusion import reciprocal_rank_fusion, score_fusion


def test_score_fusion_scales_each_ranking_onto_0_to_1_and_weighs_them() -> None:
    sparse = [("a", 12.0), ("b", 7.0), ("c", 2.0)]  # BM25: a -> 1, b -> 0.5, c -> 0
    dense = [("b", 0.9), ("d", 0.5)]  # cosine: b -> 1, d -> 0
    fused = dict(score_fusion([sparse, dense], [0.5, 0.5]))
    assert fused == pytest.approx({"a": 0.5, "b": 0.75, "c": 0.0, "d": 0.0})
    assert [doc for doc, _ in score_fusion([sparse, dense], [0.5, 0.5])] == ["b", "a", "c", "d"]
    sparse_heavy = [doc for doc, _ in score_fusion([sparse, dense], [0.9, 0.1])]
    assert sparse_heavy[:2] == ["a", "b"]


def test_score_fusion_of_equal_or_missing_scores() -> None:
    """A ranking whose hits score alike gives each of them its full weight; an empty one adds nothing."""
    fused = score_fusion([[("x", 3.0), ("y", 3.0)], []], [0.4, 0.6])
    assert fused == [("x", pytest.approx(0.4)), ("y", pytest.approx(0.4))]
    with pytest.raises(ValueError):
        score_fusion([[("x", 1.0)]], [0.5, 0.5])


def test_scores_follow_the_formula() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b", "c"]], [0.2, 0.8], k=60))
    assert fused["a"] == pytest.approx(0.2 / 61)
    assert fused["b"] == pytest.approx(0.2 / 62 + 0.8 / 61)
    assert fused["c"] == pytest.approx(0.8 / 62)


def test_agreement_wins_and_dense_outweighs_sparse() -> None:
    sparse = ["s1", "both", "s2"]
    dense = ["d1", "d2", "both"]
    ranked = [doc for doc, _ in reciprocal_rank_fusion([sparse, dense], [0.2, 0.8])]
    # both: .2/62 + .8/63 = .0159 > d1: .8/61 = .0131 > d2: .8/62 > s1: .2/61 > s2: .2/63
    assert ranked == ["both", "d1", "d2", "s1", "s2"]
    sparse_heavy = [doc for doc, _ in reciprocal_rank_fusion([sparse, dense], [0.9, 0.1])]
    assert sparse_heavy[:2] == ["both", "s1"] and sparse_heavy.index("s2") < sparse_heavy.index("d1")


def test_ties_keep_first_appearance_and_weights_must_match() -> None:
    assert [d for d, _ in reciprocal_rank_fusion([["x"], ["y"]], [1.0, 1.0])] == ["x", "y"]
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["x"]], [0.2, 0.8])
