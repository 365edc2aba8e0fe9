"""The reuse diagnostic: which answers took their retrieved context over, and the table's counts."""

from __future__ import annotations

from pkg.evaluation.report import markdown_table, summarise
from pkg.evaluation.reuse import reuses_context
from tests.helpers import judged

RETRIEVED = """def sort_tuple(tup):
    n = len(tup)
    for i in range(n):
        for j in range(n - i - 1):
            if tup[j][0] > tup[j + 1][0]:
                tup[j], tup[j + 1] = tup[j + 1], tup[j]
    return tup
"""


def test_an_answer_named_after_the_retrieved_function_reuses_it() -> None:
    answer = "def sort_tuple(marks):\n    return sorted(marks, key=lambda m: m[1])\n"
    assert reuses_context(answer, [RETRIEVED])


def test_an_answer_made_of_the_retrieved_lines_reuses_it() -> None:
    answer = RETRIEVED.replace("def sort_tuple(tup):", "def subject_marks(tup):")
    assert reuses_context(answer, ["# a docs page first", RETRIEVED])


def test_an_answer_of_its_own_does_not() -> None:
    answer = "def subject_marks(marks):\n    return sorted(marks, key=lambda pair: pair[1])\n"
    assert not reuses_context(answer, [RETRIEVED])
    assert not reuses_context(RETRIEVED, [])


def test_short_lines_comments_and_nested_names_do_not_count() -> None:
    context = "def outer():\n    def helper():\n        pass\n    # keep the order stable\n    return out\n"
    common = "def solve(xs):\n    # keep the order stable\n    return out\n"
    assert not reuses_context(common, [context])  # only lines too short or comments are shared
    nested = "def solve(xs):\n    def helper():\n        return xs\n    return helper()\n"
    assert not reuses_context(nested, [context])  # an inner helper's name is not the answer's function
    assert reuses_context("def helper():\n    return 1\n", [context])


def test_the_table_counts_reuse_against_norag_on_the_same_problems() -> None:
    records = [
        judged("T/1", "norag", True),
        judged("T/2", "norag", True),
        judged("T/3", "norag", False),
        judged("T/1", "func-pkg", False, reuses_context=True),
        judged("T/2", "func-pkg", True, reuses_context=True),
        judged("T/3", "func-pkg", True, reuses_context=False),
    ]
    norag, func = summarise(records, ["norag", "func-pkg"])
    assert (norag.reused, norag.reused_passed, norag.reused_baseline) == (None, None, None)
    assert (func.reused, func.reused_passed, func.reused_baseline) == (2, 1, 2)
    table = markdown_table([norag, func])
    assert "| reused context | passed if reused (norag) |" in table
    assert "| func-pkg | 66.7 | 2/3 | 0 | 0 | 0.0 | 1 | 1 | 2 | 1 (2) |" in table
