"""`pkg compare` end to end with a real model (SmolLM2 through llama.cpp), a real PKG, the real
sandbox; and the derived arms' rules: the rerankers never see the tests, `reranked` takes the default
policy's choice from the sandbox, the oracle is only reported."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pkg.benchmarks import load_benchmark
from pkg.errors import ConfigError
from pkg.evaluation.arms import DERIVED, parse_arms, sampled_of
from pkg.evaluation.run import Record, derive, policy_choices
from rerank.policies import DEFAULT_POLICY, POLICIES
from rerank.sandbox import Sandbox
from rerank.sandbox.bwrap import BwrapSandbox
from tests.conftest import MBPP_DIR as MBPP
from tests.conftest import run_cli
from tests.helpers import judged

DOCS_PAGE = Path("/usr/share/doc/python3.11/html/_sources/tutorial/datastructures.rst.txt")
ARMS = ["norag", "bm25", "func-pkg", "block-pkg", "json-pkg", *DERIVED, "norag@2"]
SAMPLES = ["norag@2#1", "norag@2#2"]
#: The deciding rules of the default policy (cascade+codet): the cascade's, and the written tests'.
POLICY_STAGES = ("baseline", "fallback", "agreement over baseline", "fallback dual agreement")


def runs_compare(test: Callable[..., None]) -> Callable[..., None]:
    """Marks a test of a real `pkg compare`: the CLI, SmolLM2 through llama.cpp, MiniLM, the sandbox."""
    for marker in (pytest.mark.cli, pytest.mark.llm, pytest.mark.model, pytest.mark.sandbox):
        test = marker(test)
    return test


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A small corpus: 40 MBPP training rows (never HumanEval's solutions) and one docs page."""
    folder = tmp_path_factory.mktemp("corpus")
    rows = [json.loads(line) for line in (MBPP / "mbpp.jsonl").read_text().splitlines()][600:640]
    (folder / "mbpp-train.jsonl").write_text(
        "".join(json.dumps({"instruction": r["text"], "output": f"```python\n{r['code']}\n```"}) + "\n" for r in rows)
    )
    return [folder / "mbpp-train.jsonl", DOCS_PAGE]


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory, corpus: list[Path]) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("compare")
    env = {"PKG_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}
    options = "--benchmark humaneval --limit 2 --generator llama:smollm2-135m --max-new-tokens 96".split()
    sources = [arg for path in corpus for arg in ("--corpus", str(path))]
    args = ["compare", *options, "--arms", ",".join(ARMS), "--out", str(out / "run"), "--db", str(out / "db"), *sources]
    first = run_cli(*args, env_extra=env)
    assert first.returncode == 0, first.stderr
    again = run_cli(*args, env_extra=env)
    assert again.returncode == 0, again.stderr
    return out / "run", again.stdout


@runs_compare
def test_compare_writes_every_output(compared: tuple[Path, str]) -> None:
    out, _ = compared
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    written = [*ARMS[:5], *SAMPLES, *DERIVED, "norag@2"]  # generated, sampled, derived, chosen among samples
    assert [(r["arm"], r["task_id"]) for r in records] == [(a, f"HumanEval/{i}") for a in written for i in (0, 1)]
    table = (out / "table.md").read_text()
    assert "sandbox isolation: bwrap" in table
    for arm in ARMS:
        assert f"| {arm} |" in table
    csv_lines = (out / "table.csv").read_text().splitlines()
    assert csv_lines[0].startswith("arm,pass@1 %,passed,context tokens") and len(csv_lines) == 1 + len(ARMS)
    assert (out / "pass_at_1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = {a["arm"]: a for a in json.loads((out / "summary.json").read_text())["arms"]}
    assert set(summary) == set(ARMS)
    for arm in ARMS:  # cached replies keep the time they took; derived arms generate nothing
        seconds = summary[arm]["generation_seconds"]
        assert seconds is None if arm in DERIVED else seconds > 0
    samples_seconds = sum(r["generation_seconds"] for r in records if r["arm"] in SAMPLES) / 2
    assert summary["norag@2"]["generation_seconds"] == pytest.approx(samples_seconds)
    assert "h of generation when they were made" in table
    assert "| reused context | passed if reused (norag) |" in table


@runs_compare
def test_retrieval_arms_carry_context_and_norag_none(compared: tuple[Path, str]) -> None:
    out, _ = compared
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for record in records:
        if record["arm"] == "norag":
            assert record["context"] == "" and record["context_tokens"] == 0 and record["reuses_context"] is None
        elif record["arm"] in ("bm25", "func-pkg", "block-pkg", "json-pkg"):
            assert "<context>" in record["context"] and record["context_tokens"] > 0
            assert isinstance(record["reuses_context"], bool)
            assert record["prompt_tokens"] > record["context_tokens"]
        if record["status"] != "passed" and record["chosen_arm"] is None:
            assert record["error_type"]


@runs_compare
def test_derived_arms_choose_among_the_generated_candidates(compared: tuple[Path, str]) -> None:
    out, _ = compared
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    generated = {(r["task_id"], r["arm"]): r for r in records if r["chosen_arm"] is None}
    for record in records:
        if record["arm"] in DERIVED:
            source = generated[(record["task_id"], record["chosen_arm"])]
            assert record["code"] == source["code"] and record["passed"] == source["passed"]
            assert record["reuses_context"] == source["reuses_context"]
        if record["arm"] == "reranked":  # the default policy's rules, not the paper's
            assert record["stage"] in POLICY_STAGES
    for task in ("HumanEval/0", "HumanEval/1"):
        oracle = next(r for r in records if r["arm"] == "oracle" and r["task_id"] == task)
        assert oracle["passed"] == any(r["passed"] for (t, _), r in generated.items() if t == task)


@runs_compare
def test_a_sampled_arm_chooses_among_its_own_samples_alone(compared: tuple[Path, str]) -> None:
    out, _ = compared
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    by_key = {(r["task_id"], r["arm"]): r for r in records}
    for task in ("HumanEval/0", "HumanEval/1"):
        chosen = by_key[task, "norag@2"]
        assert chosen["chosen_arm"] in SAMPLES and chosen["stage"] in POLICY_STAGES[1:]  # no sample is NoRAG
        assert chosen["code"] == by_key[task, chosen["chosen_arm"]]["code"]
        assert by_key[task, "reranked"]["chosen_arm"] in ARMS[:5] and by_key[task, "oracle"]["chosen_arm"] in ARMS[:5]
    greedy = {r["reply"] for r in records if r["arm"] == "norag"}
    sampled = {r["reply"] for r in records if r["arm"] in SAMPLES}
    assert sampled - greedy, "replies at temperature 0.8 came out as the greedy ones"
    assert "- norag@2: norag sampled 2 times (seeds 1-2)" in (out / "table.md").read_text()


@runs_compare
def test_a_second_run_comes_from_the_generation_cache(compared: tuple[Path, str]) -> None:
    _, stdout = compared
    assert "(0 new generations, 14 from the cache; tests written: 0 new, 2 from codet-tests.jsonl;" in stdout


@runs_compare
def test_the_default_policy_chooses_by_tests_the_model_wrote_once_per_problem(compared: tuple[Path, str]) -> None:
    out, _ = compared
    written = [json.loads(line) for line in (out / "codet-tests.jsonl").read_text().splitlines()]
    assert len(written) == 2 and all(line["completion"]["text"] for line in written)
    assert "policy's tests: " in (out / "table.md").read_text()


def _record(arm: str, passed: bool, similarity: float) -> Record:
    return judged("T/1", arm, passed, code=f"# {arm}", parses=True, runs=True, similarity=similarity)


def test_the_rerankers_never_use_the_verdict_and_the_oracle_does() -> None:
    candidates = [_record("norag", False, 0.9), _record("func-pkg", True, 0.5)]
    paper = derive("reranked-paper", "T/1", candidates)
    oracle = derive("oracle", "T/1", candidates)
    assert (paper.chosen_arm, paper.passed) == ("norag", False)
    assert (oracle.chosen_arm, oracle.passed) == ("func-pkg", True)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with BwrapSandbox(workers=2, uid_base=63900) as box:
        yield box


@pytest.mark.sandbox
def test_reranked_takes_the_policys_choice_where_the_paper_takes_the_most_similar(sandbox: Sandbox) -> None:
    problem = load_benchmark("humaneval")[0]  # has_close_elements, whose docstring shows two examples
    wrong = problem.prompt + "    return False\n"  # parses and runs alone, fails one example
    correct = problem.prompt + problem.canonical_solution
    seen = {"parses": True, "runs": True}
    candidates = [
        judged(problem.task_id, "norag", False, code=wrong, similarity=0.9, **seen),
        judged(problem.task_id, "func-pkg", True, code=correct, similarity=0.1, **seen),
    ]
    selections = policy_choices(candidates, {problem.task_id: problem}, sandbox, POLICIES[DEFAULT_POLICY])
    reranked = derive("reranked", problem.task_id, candidates, selections[problem.task_id])
    paper = derive("reranked-paper", problem.task_id, candidates)
    assert (reranked.chosen_arm, reranked.stage, reranked.passed) == ("func-pkg", "fallback", True)
    assert (paper.chosen_arm, paper.passed) == ("norag", False)


def test_arm_lists() -> None:
    paper = "norag bm25 dense func-bm25 func-pkg block-pkg json-pkg reranked-paper oracle"
    assert parse_arms("paper") == paper.split()
    assert parse_arms("norag,norag,oracle") == ["norag", "oracle"]
    assert parse_arms("norag@4") == ["norag@4"] and parse_arms("norag@4,oracle,norag") == ["oracle", "norag", "norag@4"]
    found = sampled_of("norag@4#2")
    assert found is not None and found.name == "norag@4" and found.samples[1] == "norag@4#2"
    assert sampled_of("norag@4#5") is None and sampled_of("norag") is None and sampled_of("magic@4#1") is None
    with pytest.raises(ConfigError, match="at least 2 samples"):
        parse_arms("norag,norag@1")
    with pytest.raises(ConfigError, match="unknown arm.*ARM@N"):
        parse_arms("norag,magic@4")
    with pytest.raises(ConfigError, match="unknown arm"):
        parse_arms("norag,magic")
    with pytest.raises(ConfigError, match="at least one"):
        parse_arms("oracle")


@pytest.mark.cli
@pytest.mark.llm
@pytest.mark.sandbox
def test_mbpp_needs_no_path(tmp_path: Path) -> None:
    """`pkg compare --benchmark mbpp` reads the MBPP shipped with PKG ("" unsets PKG_MBPP_PATH)."""
    args = "compare --benchmark mbpp --limit 1 --arms norag --generator llama:smollm2-135m --max-new-tokens 32"
    env = {"PKG_MBPP_PATH": "", "PKG_CACHE_DIR": str(tmp_path / "cache")}
    done = run_cli(*args.split(), "--out", str(tmp_path), env_extra=env)
    assert done.returncode == 0, done.stderr
    (record,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert (record["arm"], record["task_id"]) == ("norag", "MBPP/11")


@pytest.mark.cli
def test_bad_input_is_one_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    nowhere = {"PKG_MBPP_PATH": str(tmp_path / "nowhere")}
    done = run_cli(*"compare --benchmark mbpp --arms norag --out".split(), str(tmp_path), env_extra=nowhere)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "mbpp" in done.stderr.lower()
    done = run_cli("compare", "--benchmark", "humaneval", "--arms", "magic", "--out", str(tmp_path))
    assert done.returncode != 0 and done.stderr.count("\n") == 1 and "unknown arm" in done.stderr
