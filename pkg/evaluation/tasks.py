"""A benchmark problem as the selection policies see it: the checks and calls its statement shows,
what a test-writing model is shown of it, and its candidates."""

from __future__ import annotations

from collections.abc import Sequence

from pkg.benchmarks import Problem
from rerank.policies import Candidate, Task, prose_examples, statement_calls
from rerank.policies.written_tests import ShownTask


def policy_task(problem: Problem) -> Task:
    """HumanEval: the >>> examples and those written in prose ("f(2) ➞ 4"), and their calls; MBPP: the
    calls of its shown asserts (which are its hidden tests), never what they compare them with."""
    if problem.benchmark == "humaneval":
        examples = tuple(dict.fromkeys(problem.examples + prose_examples(problem.prompt, problem.entry_point)))
        calls = statement_calls("\n".join(examples), problem.entry_point)
        return Task(problem.task_id, problem.entry_point, examples, calls)
    return Task(problem.task_id, problem.entry_point, (), statement_calls(problem.test, problem.entry_point))


def shown_task(problem: Problem, calls: Sequence[str]) -> ShownTask:
    """What a test writer sees (`codet`): a signature with its docstring; or a task's text and the first
    of the statement's `calls` (inputs only), never asserts, which may be the hidden tests."""
    if problem.benchmark == "humaneval":
        return ShownTask(problem.task_id, problem.entry_point, problem.prompt, code=True)
    return ShownTask(problem.task_id, problem.entry_point, problem.text, False, calls[0] if calls else "")


def candidate(problem: Problem, arm: str, code: str, similarity: float | None) -> Candidate:
    """An arm's answer to the problem as a policy sees it: the program defining it without calling it."""
    program = problem.solution_program(problem.completion_from_code(code))
    return Candidate(arm, code, program, similarity if similarity is not None else 0.0)
