"""Tests a model writes for a task (the `codet` policy): the prompt, which shows the statement and never a
candidate (for MBPP: the task text and one shown call's inputs, never the expected values of its asserts,
which are its hidden tests); the asserts kept from the reply; one cached reply per problem; and each
candidate's run of them in the sandbox, each test under a CPU limit."""

from __future__ import annotations

import ast
import builtins
import json
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pkg.errors import ConfigError
from pkg.generators.base import GenerationParams, Generator, Message, generate_many
from pkg.generators.cache import GenerationCache, cache_key
from rerank.policies.probes import harnessed, reported
from rerank.sandbox import Limits, Sandbox

#: Tests asked of the model, and most kept per problem (the order of the reply).
TESTS_ASKED = 10
#: Greedy, one reply per problem; room for ten asserts with long literal arguments.
TEST_PARAMS = GenerationParams(max_new_tokens=512)
#: CPU seconds one test may take in a candidate's run before it counts as failed: twice a probe call's, as a
#: model's tests may pass larger inputs than the statement's examples.
TEST_SECONDS = 1.0
#: Printed before the line of verdicts, so that the candidate's own output cannot be taken for it.
MARKER = "@@written-tests@@"
_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class ShownTask:
    """What the test writer is shown of one problem: a signature with its docstring (`code`), or a
    task's text with one call of the function (inputs only) when there is one."""

    task_id: str
    entry_point: str
    statement: str
    code: bool
    call: str = ""


def writing_messages(request: ShownTask) -> list[Message]:
    """One user turn asking for `TESTS_ASKED` asserts about the function, never for its code."""
    name = request.entry_point
    if request.code:
        shown = f"Here is a Python function's signature and docstring:\n```python\n{request.statement.rstrip()}\n```\n"
    else:
        shown = f"Here is a programming task:\n{request.statement.strip()}\n\nA Python function `{name}` solves it"
        shown += f"; it is called like `{request.call}` (its result is not shown).\n" if request.call else ".\n"
    ask = (
        f"\nWrite {TESTS_ASKED} tests of what `{name}` must return, on typical inputs and edge cases, with literal "
        f"arguments and results. Do not implement it. Reply with only a ```python code block of {TESTS_ASKED} lines, "
        f"each line like:\nassert {name}(...) == ..."
    )
    return [{"role": "user", "content": shown + ask}]


def _sources(reply: str) -> list[str]:
    """The reply's code blocks (the last may be cut short by the token limit), or the whole reply."""
    return [match.group(1) for match in _FENCE.finditer(reply)] or [reply]


def _asserts(source: str) -> list[ast.Assert]:
    """Every assert of `source`, read whole or, when it does not parse, one line at a time."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Assert)]
        except SyntaxError:
            pass
        found = []
        for line in source.splitlines():
            try:
                found += [node for node in ast.parse(line.strip()).body if isinstance(node, ast.Assert)]
            except SyntaxError:
                continue
        return found


def _well_formed(node: ast.Assert, entry_point: str) -> bool:
    """`assert entry_point(...) == expected`, calling the function once, naming nothing but it and builtins."""
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    call = test.left
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == entry_point):
        return False
    names = [n.id for n in ast.walk(test) if isinstance(n, ast.Name)]
    return names.count(entry_point) == 1 and all(name in _BUILTINS for name in names if name != entry_point)


def parse_tests(reply: str, entry_point: str) -> tuple[str, ...]:
    """The well-formed asserts of a reply, without their messages, in order, without repeats, at most
    `TESTS_ASKED`."""
    kept = [
        ast.unparse(ast.Assert(test=node.test))
        for source in _sources(reply)
        for node in _asserts(source)
        if _well_formed(node, entry_point)
    ]
    return tuple(dict.fromkeys(kept))[:TESTS_ASKED]


def write_tests(
    generator: Generator,
    requests: Sequence[ShownTask],
    params: GenerationParams = TEST_PARAMS,
    concurrency: int = 1,
    done: Callable[[int], None] | None = None,
) -> list[tuple[str, ...]]:
    """Each request's tests from one reply of `generator` (cached when it is a CachedGenerator)."""
    replies = generate_many(generator, [writing_messages(r) for r in requests], params, concurrency, done)
    return [parse_tests(reply.text, r.entry_point) for r, reply in zip(requests, replies, strict=True)]


def cached_tests(
    requests: Sequence[ShownTask],
    cache: GenerationCache,
    model: str,
    writer: Callable[[], Generator] | None = None,
    params: GenerationParams = TEST_PARAMS,
    done: Callable[[int], None] | None = None,
) -> list[tuple[str, ...]]:
    """Each request's tests from the replies `cache` holds under `model` (the writer's spec). Missing
    replies are written one at a time by the generator `writer` makes (made only then), each cached as
    it comes, so an interrupted run resumes; without a writer they are a ConfigError."""
    keys = [cache_key(model, writing_messages(r), params) for r in requests]
    lacking = [(r, key) for r, key in zip(requests, keys, strict=True) if cache.get(key) is None]
    if lacking and writer is None:
        raise ConfigError(f"{len(lacking)} of {len(requests)} problems have no tests by {model} in {cache.path}")
    if lacking and writer is not None:
        generator = writer()
        try:
            for count, (request, key) in enumerate(lacking, 1):
                cache.put(key, generator.generate(writing_messages(request), params))
                if done:
                    done(count)
        finally:
            generator.close()
    replies = [cache.get(key) for key in keys]
    return [parse_tests(reply.text, r.entry_point) if reply else () for r, reply in zip(requests, replies, strict=True)]


HARNESS = """
def __tests_main(tests, marker, seconds):
    def passes(test):
        exec(test, globals())
        return True

    __timed_each(tests, passes, lambda exc: False, marker, seconds)
"""


def program_with_tests(program: str, tests: Sequence[str]) -> str:
    """`program` (a candidate with what runs before it) followed by every test, each under
    `TEST_SECONDS` of CPU, its own printing silenced."""
    arguments = f"{json.dumps(list(tests))}, {MARKER!r}, {TEST_SECONDS}"
    return harnessed(program, HARNESS, f"__tests_main({arguments})")


def read_verdicts(output: str, count: int) -> tuple[bool, ...] | None:
    """The verdicts a tests program printed, or None when it printed none (it died first)."""
    found = reported(output, MARKER, count)
    return None if found is None else tuple(map(bool, found))


def limits_for_tests(count: int) -> Limits:
    """Room for every test to use its CPU limit, and a start-up margin."""
    return Limits(timeout_s=5.0 + 2 * TEST_SECONDS * count)


def run_tests(
    sandbox: Sandbox,
    programs: Sequence[str],
    tests: Sequence[tuple[str, ...]],
    progress: Callable[[int], None] | None = None,
) -> list[tuple[bool, ...]]:
    """Whether each program passes each of its tests: all of a program's tests in one sandbox run;
    a run that dies before reporting (a test took the process down, or its wall time ran out) is
    redone one test per run."""
    verdicts: list[tuple[bool, ...] | None] = [() if not own else None for own in tests]
    by_count: dict[int, list[int]] = {}
    for index, own in enumerate(tests):
        if own:
            by_count.setdefault(len(own), []).append(index)
    for count, indices in by_count.items():
        batch = [program_with_tests(programs[i], tests[i]) for i in indices]
        for index, outcome in zip(indices, sandbox.run_many(batch, limits_for_tests(count), progress), strict=True):
            verdicts[index] = read_verdicts(outcome.output, count)
    redo = [(i, test) for i, found in enumerate(verdicts) if found is None for test in tests[i]]
    if redo:
        programs_alone = [programs[i] + "\n" + test + "\n" for i, test in redo]
        passed = iter(o.passed for o in sandbox.run_many(programs_alone, limits_for_tests(1), progress))
        for index, found in enumerate(verdicts):
            if found is None:
                verdicts[index] = tuple(next(passed) for _ in tests[index])
    return [found or () for found in verdicts]
