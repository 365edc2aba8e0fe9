"""`pkg generate` end to end: a tiny PKG from the fixture corpus (the real `pkg build`), candidates from
the real SmolLM2 or from a local OpenAI-compatible stub whose reply depends on the arm, the real
sandbox and the selection policies; and the one-line refusals of bad input."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pkg.evaluation.generate import DEFAULT_ARMS, parse_examples, parse_task
from rerank.policies import DEFAULT_POLICY
from tests.chat_server import ChatServer, completion
from tests.conftest import run_cli

ADD = "def add(a: int, b: int) -> int: '''Return the sum. >>> add(2, 3) 5'''"
PRIME = '''def is_prime(n: int) -> bool:
    """Whether n is a prime number.

    >>> is_prime(7)
    True
    >>> is_prime(9)
    False
    """
'''
RIGHT = "def is_prime(n: int) -> bool:\n    return n > 1 and all(n % d for d in range(2, n))\n"
WRONG = "def is_prime(n: int) -> bool:\n    return n % 2 == 1\n"
KEYS = {
    "answer",
    "chosen",
    "policy",
    "stage",
    "clusters",
    "candidates",
    "entry_point",
    "policy_checks",
    "examples",
    "tests",
    "probes",
    "generator",
    "isolation",
    "written_tests",
    "cached_replies",
    "new_replies",
}
VERDICT_KEYS = {
    "arm",
    "code",
    "context_tokens",
    "similarity",
    "parses",
    "runs",
    "calls_return",
    "examples",
    "tests",
    "checks",
    "agrees_with",
    "written_tests",
}


def end_to_end(test: Callable[..., None]) -> Callable[..., None]:
    """Marks a test of a real `pkg generate`: the CLI, MiniLM, the sandbox."""
    for marker in (pytest.mark.cli, pytest.mark.model, pytest.mark.sandbox):
        test = marker(test)
    return test


def _generate(*args: str, env: dict[str, str]) -> Any:
    done = run_cli("generate", *args, "--format", "json", env_extra=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@end_to_end
@pytest.mark.llm
def test_smollm2_candidates_are_checked_and_the_best_checked_is_chosen(
    corpus_db: Path, env: dict[str, str], tmp_path: Path
) -> None:
    options = ["--db", str(corpus_db), "--generator", "llama:smollm2-135m", "--max-new-tokens", "128"]
    text = run_cli("generate", ADD, *options, env_extra=env)
    assert text.returncode == 0, text.stderr
    ast.parse(text.stdout)  # the code, then the evidence as comments
    code, evidence = text.stdout.split("\n\n# policy ", 1)
    assert evidence.startswith(f"{DEFAULT_POLICY} chose the ") and "sandbox isolation bwrap" in evidence
    assert "# model-written tests passed, of " in evidence  # the default policy had the model write tests
    (tmp_path / "tests.txt").write_text("assert add(-1, 1) == 0\nadd(2, 2) == 5\n")
    result = _generate(ADD, *options, "--tests", str(tmp_path / "tests.txt"), env=env)
    assert set(result) == KEYS and all(set(v) == VERDICT_KEYS for v in result["candidates"])
    # the text run's replies: one per arm and the tests' (never shown the user's tests)
    assert (result["cached_replies"], result["new_replies"]) == (len(DEFAULT_ARMS) + 1, 0)
    assert result["answer"].rstrip() == code.rstrip()
    assert [v["arm"] for v in result["candidates"]] == list(DEFAULT_ARMS)
    assert result["entry_point"] == "add" and result["examples"] == ["assert add(2, 3) == 5"]
    assert result["tests"] == ["assert add(-1, 1) == 0", "assert add(2, 2) == 5"]
    assert result["policy_checks"] == result["examples"] + result["tests"]
    checks = [v["checks"] for v in result["candidates"]]
    chosen = result["candidates"][result["chosen"]]
    assert chosen["checks"] == max(checks) and chosen["examples"] is True
    assert all(v["tests"] is False for v in result["candidates"])  # nothing passes add(2, 2) == 5
    assert all(v["context_tokens"] > 0 for v in result["candidates"] if v["arm"] != "norag")


@end_to_end
@pytest.mark.llm
def test_a_prose_task_with_an_examples_file(corpus_db: Path, env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "examples.txt").write_text("# the function to write\n>>> reverse_words('a b c')\n'c b a'\n")
    result = _generate(
        "Write a function that reverses the order of the words in a sentence.",
        "--examples",
        str(tmp_path / "examples.txt"),
        "--arms",
        "norag,func-bm25",
        "--db",
        str(corpus_db),
        "--generator",
        "llama:smollm2-135m",
        "--max-new-tokens",
        "128",
        env=env,
    )
    assert result["entry_point"] == "reverse_words"
    assert result["examples"] == ["assert reverse_words('a b c') == 'c b a'"] and result["probes"] > 1
    assert [v["arm"] for v in result["candidates"]] == ["norag", "func-bm25"]
    chosen = result["candidates"][result["chosen"]]
    assert chosen["checks"] == max(v["checks"] for v in result["candidates"])


def _by_arm(right_arm: str) -> Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]:
    """The stub's answer: the right code for `right_arm` (told apart by the context the prompt carries),
    the wrong code for the other."""

    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        has_context = "<context>" in body["messages"][-1]["content"]
        right = has_context == (right_arm != "norag")
        return completion(f"Here it is:\n```python\n{RIGHT if right else WRONG}```\n")

    return answer


@end_to_end
@pytest.mark.parametrize(
    ("right_arm", "policy", "stage"),
    [
        ("func-bm25", "cascade", "fallback"),
        ("norag", "cascade", "baseline"),
        ("func-bm25", "weighted-consensus", "consensus"),
    ],
)
def test_the_candidate_that_passes_the_examples_is_chosen(
    right_arm: str, policy: str, stage: str, corpus_db: Path, tmp_path: Path
) -> None:
    stub = ChatServer(_by_arm(right_arm), delay=0.3).start()
    try:
        result = _generate(
            PRIME,
            "--arms",
            "norag,func-bm25",
            "--policy",
            policy,
            "--generator",
            "openai:stub",
            "--db",
            str(corpus_db),
            "--concurrency",
            "2",
            env={"PKG_OPENAI_BASE_URL": stub.url, "PKG_OPENAI_API_KEY": "k", "PKG_CACHE_DIR": str(tmp_path)},
        )
    finally:
        stub.stop()
    assert stub.most_in_flight == 2 and len(stub.requests) == 2
    contexts = [r["messages"][-1]["content"].split("<context>")[1:] for r in stub.requests]
    assert sorted(map(len, contexts)) == [0, 1] and "def is_prime(n)" in max(contexts)[0]  # BM25 found it
    assert result["candidates"][result["chosen"]]["arm"] == right_arm
    assert (result["answer"], result["stage"], result["policy"]) == (RIGHT, stage, policy)
    examples = {v["arm"]: v["examples"] for v in result["candidates"]}
    assert examples == {"norag": right_arm == "norag", "func-bm25": right_arm == "func-bm25"}
    assert result["examples"] == ["assert is_prime(7) == True", "assert is_prime(9) == False"]
    if policy == "weighted-consensus":
        assert result["clusters"] == [1]  # only the candidate passing the most checks is clustered


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["  "], "the task is empty"),
        ([ADD, "--arms", "norag,nope"], "unknown arm(s) nope; choose from norag, bm25"),
        ([ADD, "--arms", "reranked"], "unknown arm(s) reranked"),
        ([ADD, "--policy", "best"], "Invalid value for '--policy'"),
        ([ADD, "--examples", "/nonexistent/examples.txt"], "does not exist"),
        (
            ["reverse a string", "--policy", "weighted-consensus"],
            "policy weighted-consensus compares candidates on calls",
        ),
        ([ADD, "--concurrency", "0"], "Invalid value for '--concurrency'"),
    ],
)
@pytest.mark.cli
def test_bad_input_is_one_line_and_a_non_zero_exit(args: list[str], message: str) -> None:
    done = run_cli("generate", *args)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pkg: ") and message in lines[0], done.stderr


@pytest.mark.cli
@pytest.mark.sandbox
def test_an_unreadable_examples_line_and_a_missing_database_are_named(tmp_path: Path) -> None:
    (tmp_path / "examples.txt").write_text("add(1, 1) == 2\nprint(add(1, 2))\n")
    done = run_cli("generate", ADD, "--examples", str(tmp_path / "examples.txt"))
    assert done.returncode != 0 and done.stderr.strip().splitlines() == [
        f"pkg: {tmp_path / 'examples.txt'}:2: not an assert, a comparison (f(x) == y) or a >>> example: "
        "print(add(1, 2))"
    ]
    done = run_cli("generate", ADD, "--db", str(tmp_path / "none"), "--generator", "openai:stub", "--arms", "func-pkg")
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_examples_are_read_from_doctests_inline_values_asserts_and_comparisons() -> None:
    docstring = "Sum.\n\n>>> add(2, 3)\n5\n>>> x = 4\n>>> add(x, 1) 5\n>>> add(0, 0) == 0\n>>> show(1)\nprinted text"
    assert parse_examples(docstring) == (
        "assert add(2, 3) == 5",
        "x = 4",
        "assert add(x, 1) == 5",
        "assert add(0, 0) == 0",
    )
    assert parse_examples("assert f(1) == 2\nf(2) == 3\n>>> f(3)\n4\n", strict=True) == (
        "assert f(1) == 2",
        "assert f(2) == 3",
        "assert f(3) == 4",
    )
    task = parse_task(ADD)
    assert task.problem.prompt == 'def add(a: int, b: int) -> int:\n    """Return the sum. >>> add(2, 3) 5"""\n'
    assert task.answer("    return a + b\n") == task.problem.prompt + "    return a + b\n"
    assert task.answer("def add(a, b):\n    return a + b\n") == "def add(a, b):\n    return a + b\n"
    prose = parse_task("Sort a list in descending order.", "sort_desc([1, 3, 2]) == [3, 2, 1]")
    assert prose.entry_point == "sort_desc" and "assert sort_desc([1, 3, 2]) == [3, 2, 1]" in prose.problem.prompt
    assert prose.policy_task.calls == ("sort_desc([1, 3, 2])",)
    assert parse_task("Reverse a string.").entry_point is None
