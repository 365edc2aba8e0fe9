"""Selection policies: their inputs (statement calls, prose examples, mutations), the sandbox's
assessment of hand-made candidates, each policy's choice among them, and the committed `pkg compare`
columns: `reranked-paper` is the `paper` policy's choice, `reranked` the default policy's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from pkg.benchmarks import load_benchmark
from pkg.evaluation.arms import DERIVED, GENERATING
from pkg.evaluation.compare import TESTS_CACHE
from pkg.evaluation.tasks import candidate as candidate_of
from pkg.evaluation.tasks import policy_task, shown_task
from pkg.generators import DEFAULT_GENERATOR
from pkg.generators.cache import GenerationCache
from rerank.policies import (
    DEFAULT_POLICY,
    POLICIES,
    Assessment,
    Candidate,
    Task,
    assess,
    probe_calls,
    prose_examples,
    statement_calls,
)
from rerank.policies.consensus import Cascade, Consensus
from rerank.policies.paper import Paper
from rerank.policies.written_tests import cached_tests
from rerank.sandbox import Sandbox
from rerank.sandbox.bwrap import BwrapSandbox

COMMITTED = Path(__file__).resolve().parents[1] / "bench" / "results" / "compare-humaneval" / "results.jsonl"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """Two bwrap workers on uids of their own."""
    with BwrapSandbox(workers=2, uid_base=63600) as box:
        yield box


def candidate(arm: str, code: str, similarity: float = 0.5) -> Candidate:
    return Candidate(arm, code, code, similarity)


SQUARE = Task("square", "square", examples=("assert square(3) == 9",), calls=("square(3)",))
GOOD = "def square(x):\n    return x * x\n"
ALSO_GOOD = "def square(x):\n    return x ** 2\n"
WRONG = "def square(x):\n    return x + x\n"
RAISES = "def square(x):\n    return x / 0\n"
BROKEN = "def square(x):\n    return x *\n"
DIES = "raise RuntimeError('at import')\ndef square(x):\n    return x * x\n"


def test_statement_calls_keep_the_inputs_and_drop_the_outputs() -> None:
    asserts = "assert f([1, 2], 'ab') == 3\nassert g(f(1))\nassert set(f((1,), k={'a': 1})) == {1}\nassert f(1) == 9"
    assert statement_calls(asserts, "f") == ("f([1, 2], 'ab')", "f(1)", "f((1,), k={'a': 1})")
    assert statement_calls("assert f(1) ==", "f") == ()


def test_probe_calls_mutate_each_literal_argument_by_its_type() -> None:
    probes = probe_calls(("f([3, 1], 'ab')", "f(7)", "f({'a': 1}, x=2.5)"), limit=100)
    assert probes[:3] == ("f([3, 1], 'ab')", "f(7)", "f({'a': 1}, x=2.5)")
    for expected in (
        "f([], 'ab')",
        "f([1, 3], 'ab')",
        "f([3, 1], '')",
        "f([3, 1], 'ba')",
        "f([3, 1], 'AB')",
        "f(8)",
        "f(6)",
        "f(0)",
        "f({}, x=2.5)",
        "f({'a': 1}, x=3.0)",
        "f({'a': 1}, x=-2.5)",
    ):
        assert expected in probes
    assert len(set(probes)) == len(probes)
    assert len(probe_calls(("f([3, 1], 'ab')", "f(7)"), limit=5)) == 5
    assert probe_calls(("f(x)",)) == ("f(x)",)  # no literal to mutate


def test_prose_examples_become_asserts_and_prose_definitions_do_not() -> None:
    prompt = '''def f(a, b):
    """Examples:
    f(1, 2) ➞ 3
    f("x", "y") should return "xy".
    f([1], [2]) == [1, 2]
    f(2, 2) => 4 # two and two
    f(5, 5) -> 5 + 5 = 10
    f(a, 1) ➞ 2
    f(0, 0) = 0
    >>> f(3, 3)
    6
    """
'''
    assert prose_examples(prompt, "f") == (
        "assert f(1, 2) == 3",
        "assert f('x', 'y') == 'xy'",
        "assert f([1], [2]) == [1, 2]",
        "assert f(2, 2) == 4",
        "assert f(5, 5) == 10",
    )


def test_checks_count_the_self_checks_passed_in_order() -> None:
    assert Assessment(True, True, True, ("1",)).checks(1) == 4
    assert Assessment(True, True, None, ("1",)).checks(1) == 4  # no examples to fail
    assert Assessment(True, True, False, ("1",)).checks(1) == 3
    assert Assessment(True, True, True, ("!ValueError", "1")).checks(1) == 2
    assert Assessment(True, True, True, ("1", "!ValueError")).checks(1) == 4  # a mutation may raise
    assert Assessment(True, False, False, None).checks(1) == 1
    assert Assessment(False, False, False, None).checks(1) == 0


def test_assess_runs_alone_with_examples_and_on_probes(sandbox: Sandbox) -> None:
    task = Task("t", "f", ("assert f([2, 1]) == [1, 2]",), ("f([2, 1])",))
    codes = [
        "def f(xs):\n    return sorted(xs)\n",
        "def f(xs):\n    return set(str(x) for x in xs) if len(xs) > 1 else 1 / len(xs)\n",
        "def f(xs):\n    while len(xs) < 3:\n        pass\n    return xs\n",
        "print('noise ' * 99999)\ndef f(xs):\n    print('more noise')\n    return xs[::-1]\n",
        DIES,
    ]
    [sorts, sets, loops, noisy, dies] = assess(sandbox, [(task, [candidate(str(i), c) for i, c in enumerate(codes)])])[
        0
    ]
    probes = probe_calls(task.calls)
    assert sorts == Assessment(True, True, True, sorts.outputs) and sorts.outputs is not None
    assert sorts.outputs[0] == "[1, 2]" and len(sorts.outputs) == len(probes) and "[]" in sorts.outputs
    assert sets.examples is False and sets.outputs is not None
    assert sets.outputs[0] == "{'1', '2'}"  # sets compare by sorted members, whatever the hash seed
    assert "!ZeroDivisionError" in sets.outputs  # f([]) raises: an output like any other
    assert loops.runs and loops.examples is False and loops.outputs is not None
    assert loops.outputs[0] == "!TimeoutError" and "[2, 1, 2]" in loops.outputs
    assert noisy.outputs is not None and noisy.outputs[0] == "[1, 2]"
    assert (dies.parses, dies.runs, dies.examples, dies.outputs) == (True, False, False, None)


def choose_in(sandbox: Sandbox, policy_name: str, task: Task, candidates: list[Candidate]) -> int:
    assessed = assess(sandbox, [(task, candidates)])[0]
    return POLICIES[policy_name].choose(task, candidates, assessed).index


def test_paper_filters_then_takes_the_most_similar(sandbox: Sandbox) -> None:
    candidates = [
        candidate("norag", BROKEN, 0.9),
        candidate("a", DIES, 0.8),
        candidate("b", WRONG, 0.7),
        candidate("c", GOOD, 0.6),
    ]
    assert choose_in(sandbox, "paper", SQUARE, candidates) == 2
    assert choose_in(sandbox, "paper+examples", SQUARE, candidates) == 3


def test_cascade_keeps_norag_unless_it_fails_a_check(sandbox: Sandbox) -> None:
    others = [candidate("a", WRONG, 0.9), candidate("b", GOOD, 0.3), candidate("c", ALSO_GOOD, 0.4)]
    assert choose_in(sandbox, "cascade", SQUARE, [candidate("norag", GOOD, 0.1), *others]) == 0
    assert choose_in(sandbox, "cascade", SQUARE, [candidate("norag", WRONG, 0.1), *others]) == 3  # most similar passing
    assert choose_in(sandbox, "cascade", SQUARE, [candidate("norag", RAISES, 0.1), *others]) == 3
    selection = Cascade("c").choose(
        SQUARE, [candidate("norag", RAISES)], assess(sandbox, [(SQUARE, [candidate("norag", RAISES)])])[0]
    )
    assert (selection.index, selection.stage, selection.checks) == (0, "baseline", (2,))


def test_cascade_then_consensus_lets_the_agreeing_survivors_decide(sandbox: Sandbox) -> None:
    zero_is_one = "def square(x):\n    return x * x if x else 1\n"  # passes the example, differs at 0
    candidates = [candidate("norag", WRONG, 0.1), candidate("a", zero_is_one, 0.9), candidate("b", GOOD, 0.2),
                  candidate("c", ALSO_GOOD, 0.3), candidate("d", WRONG, 0.95)]  # fmt: skip
    assessed = assess(sandbox, [(SQUARE, candidates)])[0]
    assert POLICIES["cascade"].choose(SQUARE, candidates, assessed).index == 1  # the most similar survivor
    selection = POLICIES["cascade+consensus"].choose(SQUARE, candidates, assessed)
    assert (selection.index, selection.stage, selection.clusters) == (3, "fallback consensus", (2, 1))
    assert selection.checks == (3, 4, 4, 4, 3)


def test_consensus_takes_the_largest_cluster_of_agreeing_outputs(sandbox: Sandbox) -> None:
    task = Task("sq", "square", (), ("square(3)",))  # no examples: agreement alone decides
    squares = "def square(x):\n    return x * x if x else 1\n"  # differs on a mutation only (0)
    candidates = [
        candidate("norag", WRONG, 0.9),
        candidate("a", GOOD, 0.1),
        candidate("b", ALSO_GOOD, 0.2),
        candidate("c", squares, 0.8),
        candidate("d", RAISES, 0.95),
    ]
    assessed = assess(sandbox, [(task, candidates)])[0]
    selection = POLICIES["consensus"].choose(task, candidates, assessed)
    assert (selection.index, selection.clusters) == (2, (2, 1, 1, 1))  # the pair's most similar
    assert POLICIES["checked-consensus"].choose(task, candidates, assessed).index == 2  # d fails its shown call
    shown_only = Consensus("s", mutations=False).choose(task, candidates, assessed)
    assert shown_only.clusters == (3, 1) and shown_only.index == 3  # 3 * 3 == 9 for a, b and c alike; d is out


def test_norag_weighs_double_in_weighted_consensus(sandbox: Sandbox) -> None:
    task = Task("sq", "square", (), ("square(3)",))
    candidates = [candidate("norag", WRONG, 0.1), candidate("a", GOOD, 0.9), candidate("b", ALSO_GOOD, 0.8)]
    assessed = assess(sandbox, [(task, candidates)])[0]
    assert POLICIES["checked-consensus"].choose(task, candidates, assessed).index == 1
    assert POLICIES["weighted-consensus"].choose(task, candidates, assessed).index == 0  # 2 votes tie, NoRAG's wins
    three = [*candidates, candidate("c", GOOD, 0.2)]
    assert POLICIES["weighted-consensus"].choose(task, three, assess(sandbox, [(task, three)])[0]).index == 1


def test_the_committed_reranking_columns_are_the_policies_choices(sandbox: Sandbox) -> None:
    """On fifteen HumanEval problems: those (up to five) where the most similar candidate does not run
    alone, then those where the paper's reranker chose a retrieval arm, then five where `reranked` did;
    `reranked-paper` is the paper's choice (the statement's >>> examples only) and `reranked` the default
    policy's (prose examples too, and the committed model-written tests)."""
    problems = {p.task_id: p for p in load_benchmark("humaneval")}
    records = [json.loads(line) for line in COMMITTED.read_text(encoding="utf-8").splitlines()]
    chose = {(r["arm"], r["task_id"]): r["chosen_arm"] for r in records if r["arm"] in DERIVED}
    by_task: dict[str, list[dict]] = {}
    for record in records:
        if record["arm"] in GENERATING:
            by_task.setdefault(record["task_id"], []).append(record)
    most_similar_fails = [t for t, g in by_task.items() if not max(g, key=lambda r: r["similarity"])["runs"]]
    retrieval_chosen = [t for t in by_task if chose["reranked-paper", t] != "norag" and t not in most_similar_fails]
    chosen = most_similar_fails[:5] + retrieval_chosen[: 10 - len(most_similar_fails[:5])]
    moved = [t for t in by_task if chose["reranked", t] != "norag" and t not in chosen]
    chosen += moved[:5]
    assert len(chosen) == 15 and most_similar_fails
    rows = {t: [candidate_of(problems[t], r["arm"], r["code"], r["similarity"]) for r in by_task[t]] for t in chosen}
    shown = [(Task(t, problems[t].entry_point, problems[t].examples), rows[t]) for t in chosen]
    for (task, candidates), assessed in zip(shown, assess(sandbox, shown), strict=True):
        assert candidates[Paper().choose(task, candidates, assessed).index].arm == chose["reranked-paper", task.task_id]
    tasks = [policy_task(problems[t]) for t in chosen]
    cache = GenerationCache(COMMITTED.parent / TESTS_CACHE)
    written = cached_tests([shown_task(problems[t.task_id], t.calls) for t in tasks], cache, DEFAULT_GENERATOR)
    items = [(replace(task, tests=tests), rows[task.task_id]) for task, tests in zip(tasks, written, strict=True)]
    for (task, candidates), assessed in zip(items, assess(sandbox, items), strict=True):
        choice = POLICIES[DEFAULT_POLICY].choose(task, candidates, assessed)
        assert candidates[choice.index].arm == chose["reranked", task.task_id]
