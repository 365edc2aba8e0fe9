"""The reranker's choice: parse, run, then similarity; it never looks at the tests."""

from __future__ import annotations

import numpy as np
import pytest

from rerank.reranker import Evidence, choose, cosine_similarities, parses


def test_filters_narrow_in_order_and_similarity_decides() -> None:
    evidence = [
        Evidence(parses=False, runs=False, similarity=0.99),
        Evidence(parses=True, runs=False, similarity=0.95),
        Evidence(parses=True, runs=True, similarity=0.40),
        Evidence(parses=True, runs=True, similarity=0.60),
    ]
    assert choose(evidence).index == 3 and choose(evidence).stage == "runs"


def test_a_filter_nobody_passes_leaves_the_pool_as_it_was() -> None:
    nothing_runs = [Evidence(True, False, 0.2), Evidence(False, False, 0.9), Evidence(True, False, 0.5)]
    assert choose(nothing_runs) == choose(nothing_runs, use_examples=True)
    assert (choose(nothing_runs).index, choose(nothing_runs).stage) == (2, "parses")
    nothing_parses = [Evidence(False, False, 0.1), Evidence(False, False, 0.3)]
    assert (choose(nothing_parses).index, choose(nothing_parses).stage) == (1, "none")


def test_examples_variant_prefers_candidates_that_pass_the_statement_examples() -> None:
    evidence = [Evidence(True, True, 0.9, examples=False), Evidence(True, True, 0.5, examples=True)]
    assert choose(evidence).index == 0
    assert (choose(evidence, use_examples=True).index, choose(evidence, use_examples=True).stage) == (1, "examples")


def test_ties_go_to_the_earliest_candidate() -> None:
    assert choose([Evidence(True, True, 0.5), Evidence(True, True, 0.5)]).index == 0


def test_parses_and_cosine() -> None:
    assert parses("def f():\n    return 1\n") and not parses("def f(:\n") and not parses("x = '\0'\x00")
    sims = cosine_similarities(np.array([1.0, 0.0]), np.array([[2.0, 0.0], [0.0, 3.0], [1.0, 1.0]]))
    assert np.allclose(sims, [1.0, 0.0, np.sqrt(0.5)])


@pytest.mark.parametrize("rows", range(3, 20))  # at least two equal rows
def test_equal_candidates_get_equal_cosines_wherever_they_stand(rows: int) -> None:
    generator = np.random.default_rng(rows)
    query, row = generator.standard_normal((2, 384), dtype=np.float32)
    others = generator.standard_normal((rows, 384), dtype=np.float32)
    others[::2] = row  # every other row equal, the last one among them when rows is odd
    sims = cosine_similarities(query, others)
    assert len(set(sims[::2].tolist())) == 1
