"""The `codet` policy: the test-writing prompt (MBPP's expected values never shown), the asserts kept
from a reply, their cache, their runs per candidate in the real sandbox, and dual agreement among
hand-made candidates; and the whole path with the real SmolLM2 on committed HumanEval candidates."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pkg.benchmarks import load_benchmark
from pkg.errors import ConfigError
from pkg.evaluation.tasks import policy_task, shown_task
from pkg.generators.base import Completion
from pkg.generators.cache import GenerationCache, cache_key
from rerank.policies import POLICIES, Assessment, Candidate, Task, assess
from rerank.policies.codet import Codet
from rerank.policies.written_tests import (
    TEST_PARAMS,
    TESTS_ASKED,
    ShownTask,
    cached_tests,
    parse_tests,
    run_tests,
    writing_messages,
)
from rerank.sandbox import Sandbox
from rerank.sandbox.bwrap import BwrapSandbox
from tests.chat_server import ChatServer, completion
from tests.test_generate import PRIME, RIGHT, WRONG, _generate, end_to_end

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """Two bwrap workers on uids of their own."""
    with BwrapSandbox(workers=2, uid_base=63800) as box:
        yield box


def test_only_well_formed_asserts_calling_the_entry_point_are_kept() -> None:
    reply = """Here are the tests:
```python
assert f([1, 2]) == 3, "sum"
assert f([]) == 0
assert f([]) == 0
assert f(xs) == 1
assert f(f([1])) == 1
assert f([1]) == f([1])
assert f([1]) != 2
assert g([1]) == 1
assert f([1]) == len([1])
assert f([5]) == 5 == 5
assert f([5])
def test():
    assert f([2]) == 2
assert f([9, 9
```
and more: ```python
assert f((1,)) == 1
```"""
    assert parse_tests(reply, "f") == (
        "assert f([1, 2]) == 3",
        "assert f([]) == 0",
        "assert f([1]) == len([1])",
        "assert f([2]) == 2",
        "assert f((1,)) == 1",
    )
    many = "\n".join(f"assert f({n}) == {n}" for n in range(TESTS_ASKED + 5))
    assert len(parse_tests(many, "f")) == TESTS_ASKED  # no fence: the whole reply
    assert parse_tests("```python\nassert f(1) == 1\nassert f(2) ==\n", "f") == ("assert f(1) == 1",)  # cut short


def test_the_prompt_shows_the_statement_and_never_mbpp_expected_values() -> None:
    human = ShownTask("t", "add", "def add(a, b):\n    '''Sum. >>> add(1, 2)\n    3'''\n", code=True)
    [message] = writing_messages(human)
    assert "def add(a, b)" in message["content"] and "assert add(...) == ..." in message["content"]
    for problem in load_benchmark("mbpp"):
        shown = shown_task(problem, policy_task(problem).calls)
        content = writing_messages(shown)[0]["content"]
        assert problem.text in content and shown.call and f"`{shown.call}`" in content
        assert not shown.code and "==" not in shown.call
        for line in problem.test.splitlines():
            compare = ast.parse(line.strip()).body[0]
            assert isinstance(compare, ast.Assert) and line.strip() not in content
            if isinstance(compare.test, ast.Compare):
                expected = ast.get_source_segment(line.strip(), compare.test.comparators[-1]) or ""
                coincides = expected in problem.text or expected in shown.call or len(expected) < 4
                assert coincides or expected not in content, (problem.task_id, expected)


def test_cached_tests_are_read_back_and_missing_ones_are_refused_without_a_writer(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path / "tests.jsonl")
    shown = [ShownTask("a", "f", "def f(x): ...", True), ShownTask("b", "g", "Add one.", False, "g(1)")]
    reply = Completion("```python\nassert f(1) == 2\nassert f(x) == 2\n```", 10, 10, 0.1)
    cache.put(cache_key("llama:m", writing_messages(shown[0]), TEST_PARAMS), reply)
    with pytest.raises(ConfigError, match=r"1 of 2 problems have no tests by llama:m"):
        cached_tests(shown, cache, "llama:m")
    assert cached_tests(shown[:1], GenerationCache(cache.path), "llama:m") == [("assert f(1) == 2",)]


def candidate(arm: str, similarity: float) -> Candidate:
    return Candidate(arm, "", "", similarity)


def assessment(tests: tuple[bool, ...], outputs: tuple[str, ...] | None = ("1",), runs: bool = True) -> Assessment:
    return Assessment(True, runs, None, outputs, tests)


TASK = Task("t", "f", calls=("f(1)",), tests=("assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3"))


def test_the_cluster_with_most_tests_passed_times_size_wins() -> None:
    candidates = [candidate("a", 0.1), candidate("b", 0.2), candidate("c", 0.9), candidate("d", 0.8)]
    assessed = [
        assessment((True, True, False)),
        assessment((True, True, False)),
        assessment((True, True, True)),
        assessment((False, False, False)),
    ]
    selection = POLICIES["codet"].choose(TASK, candidates, assessed)
    assert (selection.index, selection.stage, selection.clusters) == (1, "dual agreement", (2, 1, 1))  # 2×2 > 3×1
    assessed[0] = assessment((True, True, False), outputs=("2",))  # disagrees on the probe call: a cluster alone
    assert POLICIES["codet"].choose(TASK, candidates, assessed).index == 2  # 3×1 > 2×1


def test_ties_go_to_the_cluster_with_the_most_similar_candidate() -> None:
    candidates = [candidate("a", 0.3), candidate("b", 0.4), candidate("c", 0.7)]
    assessed = [assessment((True, False, False)), assessment((True, False, False)), assessment((True, True, False))]
    assert POLICIES["codet"].choose(TASK, candidates, assessed).index == 2  # 1×2 == 2×1
    candidates[2] = candidate("c", 0.35)
    assert POLICIES["codet"].choose(TASK, candidates, assessed).index == 1


def test_without_tests_the_most_similar_and_checked_codet_filters_first() -> None:
    candidates = [candidate("a", 0.9), candidate("b", 0.5), candidate("c", 0.1)]
    assessed = [assessment((True,) * 3, runs=False), assessment((False,) * 3), assessment((False,) * 3)]
    untested = Task("t", "f", calls=("f(1)",))
    assert POLICIES["codet"].choose(untested, candidates, assessed).stage == "no tests"
    assert POLICIES["codet"].choose(untested, candidates, assessed).index == 0
    assert POLICIES["codet"].choose(TASK, candidates, assessed).index == 0  # 3×1 > 0×2
    checked = Codet("checked", checked=True).choose(TASK, candidates, assessed)
    assert (checked.index, checked.clusters) == (1, (2,))  # a does not run: out of the pool
    assert POLICIES["codet"].writes_tests and not POLICIES["cascade"].writes_tests


def test_cascade_codet_keeps_norag_unless_an_agreeing_pair_passes_more_written_tests() -> None:
    policy = POLICIES["cascade+codet"]
    candidates = [candidate("norag", 0.1), candidate("a", 0.9), candidate("b", 0.5), candidate("c", 0.7)]
    lone = [assessment((True, False, False)), assessment((True,) * 3, ("2",)), *[assessment((False,) * 3)] * 2]
    assert (policy.choose(TASK, candidates, lone).index, policy.choose(TASK, candidates, lone).stage) == (0, "baseline")
    pair = [assessment((True, False, False)), assessment((True,) * 3, ("2",)), assessment((True,) * 3, ("2",))]
    pair.append(assessment((False,) * 3))
    chosen = policy.choose(TASK, candidates, pair)
    assert (chosen.index, chosen.stage, chosen.clusters) == (
        1,
        "agreement over baseline",
        (2,),
    )  # the pair's most similar
    tied = [assessment((True,) * 3), assessment((True,) * 3, ("2",)), assessment((True,) * 3, ("2",))]
    assert policy.choose(TASK, candidates, [*tied, assessment((False,) * 3)]).index == 0  # more, not as many
    fails = [assessment((True,) * 3, runs=False), assessment((True,) * 3), *[assessment((False,) * 3, ("3",))] * 2]
    fallback = policy.choose(TASK, candidates, fails)
    assert (fallback.index, fallback.stage) == (1, "fallback dual agreement")  # 3 tests × 1 beat 0 × 2
    untested = Task("t", "f", calls=("f(1)",))
    assert (
        policy.choose(untested, candidates, fails).stage
        == POLICIES["cascade"].choose(untested, candidates, fails).stage
    )
    assert policy.writes_tests and policy.tests_optional and not POLICIES["codet"].tests_optional


DOUBLE = "def f(x):\n    return x * 2\n"
PLUS_TWO = "def f(x):\n    return x + 2\n"
TESTS = ("assert f(1) == 2", "assert f(2) == 4", "assert f(-3) == -6")


def test_each_test_runs_per_candidate_under_its_limit(sandbox: Sandbox) -> None:
    slow = "def f(x):\n    while x == -3:\n        pass\n    print('noise' * 9999)\n    return x * 2\n"
    exits = "import os\ndef f(x):\n    if x == 2:\n        os._exit(0)\n    return x * 2\n"
    broken = "def f(x):\n    return x *\n"
    programs = [DOUBLE, PLUS_TWO, slow, exits, broken, DOUBLE]
    verdicts = run_tests(sandbox, programs, [TESTS] * 5 + [()])
    assert verdicts == [
        (True, True, True),
        (False, True, False),
        (True, True, False),  # the endless test fails by its CPU limit, the others still run
        (True, False, True),  # the process died in a test: each test ran alone
        (False, False, False),
        (),
    ]


def test_assess_runs_the_written_tests_and_codet_picks_the_agreeing_candidates(sandbox: Sandbox) -> None:
    task = Task("t", "f", calls=("f(5)",), tests=TESTS)
    codes = [PLUS_TWO, DOUBLE, "def f(x):\n    return 2 * x\n", "def f(x):\n    return x + x if x > 0 else x\n"]
    candidates = [Candidate(f"arm{i}", code, code, 0.9 - 0.1 * i) for i, code in enumerate(codes)]
    assessed = assess(sandbox, [(task, candidates)])[0]
    assert [a.tests for a in assessed] == [
        (False, True, False),
        (True, True, True),
        (True, True, True),
        (True, True, False),
    ]
    selection = POLICIES["codet"].choose(task, candidates, assessed)
    assert (selection.index, selection.clusters) == (1, (2, 1, 1))


@pytest.mark.llm
@pytest.mark.sandbox
def test_smollm2_writes_cached_tests_and_codet_chooses_among_committed_candidates(tmp_path: Path) -> None:
    """bench_policies --with-codet --write-tests on 2 HumanEval problems, then again from the cache alone."""
    cache = tmp_path / "{benchmark}-tests.jsonl"
    command = [sys.executable, str(ROOT / "bench" / "bench_policies.py"), "--benchmarks", "humaneval", "--limit", "2"]
    command += ["--with-codet", "--codet-cache", str(cache), "--test-generator", "llama:smollm2-135m"]
    refused = subprocess.run([*command, "--out", str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert refused.returncode == 2 and "2 of 2 problems have no tests by llama:smollm2-135m" in refused.stderr
    written = subprocess.run([*command, "--write-tests", "--out", str(tmp_path / "a")], capture_output=True, text=True)
    assert written.returncode == 0, written.stderr
    lines = Path(str(cache).format(benchmark="humaneval")).read_text().splitlines()
    assert len(lines) == 2
    again = subprocess.run([*command, "--out", str(tmp_path / "b")], capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr
    first, second = (json.loads(next((tmp_path / d).glob("policies-*.json")).read_text()) for d in "ab")
    result = second["benchmarks"]["humaneval"]
    assert first["benchmarks"]["humaneval"]["codet"] == result["codet"]
    assert result["codet"]["generator"] == "llama:smollm2-135m" and result["problems"] == 2
    for policy in ("codet", "checked-codet"):
        assert result["policies"][policy]["description"] == POLICIES[policy].description
        for task_id, choice in result["choices"][policy].items():
            tests = result["codet"]["written_tests"][task_id]
            assert choice["stage"] == ("dual agreement" if tests else "no tests")
            verdicts = [a["tests"] for a in result["assessments"][task_id]]
            assert all(len(v) == len(tests) for v in verdicts)
    assert "| codet |" in (tmp_path / "b" / "policies.md").read_text()


PRIME_TESTS = "```python\nassert is_prime(7) == True\nassert is_prime(2) == True\nassert is_prime(1) == False\n```"


@end_to_end
def test_pkg_generate_has_the_model_write_tests_and_chooses_by_them(corpus_db: Path, tmp_path: Path) -> None:
    """NoRAG's candidate passes the examples only by luck (n % 2 == 1); the tests the model writes tell."""

    def answer(body: dict) -> tuple[int, dict]:
        content = body["messages"][-1]["content"]
        if "Do not implement it" in content:
            return completion(PRIME_TESTS)
        return completion(f"```python\n{RIGHT if '<context>' in content else WRONG}```\n")

    stub = ChatServer(answer).start()
    try:
        options = ["--arms", "norag,func-bm25", "--policy", "codet", "--generator", "openai:stub"]
        options += ["--db", str(corpus_db), "--max-new-tokens", "64"]  # 64: the code's budget; the tests have their own
        result = _generate(
            PRIME,
            *options,
            env={"PKG_OPENAI_BASE_URL": stub.url, "PKG_OPENAI_API_KEY": "k", "PKG_CACHE_DIR": str(tmp_path)},
        )
    finally:
        stub.stop()
    [writing] = [r for r in stub.requests if "Do not implement it" in r["messages"][-1]["content"]]
    assert PRIME.strip() in writing["messages"][-1]["content"] and "return n" not in json.dumps(writing)
    assert writing["max_tokens"] == TEST_PARAMS.max_new_tokens
    assert {r["max_tokens"] for r in stub.requests if r is not writing} == {64}
    assert result["written_tests"] == list(parse_tests(PRIME_TESTS, "is_prime")) and len(result["written_tests"]) == 3
    assert {v["arm"]: v["written_tests"] for v in result["candidates"]} == {"norag": 1, "func-bm25": 3}
    assert (result["answer"], result["stage"], result["clusters"]) == (RIGHT, "dual agreement", [1, 1])
