"""Runs candidates in the sandbox for the policies: alone, with the statement's examples, on the
probe calls, and with the model-written tests; never with the hidden tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pkg.code.syntax_check import parses
from rerank.policies.base import Assessment, Candidate, Task
from rerank.policies.probes import CALL_SECONDS, probe_calls, probe_program, read_outputs
from rerank.policies.written_tests import run_tests
from rerank.sandbox import Limits, Sandbox

#: Limits of a candidate run alone or with its examples (those of `pkg compare`).
RUN_LIMITS = Limits(timeout_s=10.0)


def probe_limits(count: int) -> Limits:
    """Room for every probe call to use its CPU limit, and a start-up margin."""
    return Limits(timeout_s=5.0 + 2 * CALL_SECONDS * count)


def programs_to_assess(items: Sequence[tuple[Task, Sequence[Candidate]]]) -> int:
    """How many sandbox runs `assess` makes for the items (more when a written test takes a run down)."""
    return sum(
        (1 + bool(task.examples) + bool(task.calls) + bool(task.tests)) * len(candidates) for task, candidates in items
    )


def assess(
    sandbox: Sandbox,
    items: Sequence[tuple[Task, Sequence[Candidate]]],
    progress: Callable[[int], None] | None = None,
) -> list[list[Assessment]]:
    """Each candidate's assessment, per task, in the order given. Runs alone and with examples in one
    batch; the probe programs in another (their limits depend on how many calls a task probes); the
    written tests, where a task has some, in a third."""
    flat = [(task, candidate) for task, candidates in items for candidate in candidates]
    solo = [candidate.program for _, candidate in flat]
    with_examples = [
        candidate.program + "\n" + "".join(example + "\n" for example in task.examples)
        for task, candidate in flat
        if task.examples
    ]
    outcomes = sandbox.run_many(solo + with_examples, RUN_LIMITS, progress)
    runs, example_outcomes = outcomes[: len(solo)], iter(outcomes[len(solo) :])
    examples = [next(example_outcomes).passed if task.examples else None for task, _ in flat]
    probes = [probe_calls(task.calls) for task, _ in flat]
    outputs: list[tuple[str, ...] | None] = [None] * len(flat)
    by_count: dict[int, list[int]] = {}
    for index, calls in enumerate(probes):
        if calls:
            by_count.setdefault(len(calls), []).append(index)
    for count, indices in by_count.items():
        programs = [probe_program(flat[i][1].program, probes[i]) for i in indices]
        for index, outcome in zip(indices, sandbox.run_many(programs, probe_limits(count), progress), strict=True):
            outputs[index] = read_outputs(outcome.output, count)
    written = run_tests(sandbox, solo, [task.tests for task, _ in flat], progress)
    assessed = iter(
        Assessment(parses(candidate.code), outcome.passed, example, output, tests)
        for (_, candidate), outcome, example, output, tests in zip(flat, runs, examples, outputs, written, strict=True)
    )
    return [[next(assessed) for _ in candidates] for _, candidates in items]
