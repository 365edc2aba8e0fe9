"""Probe inputs for execution agreement: the entry point's calls a problem statement shows, and
type-aware mutations of their literal arguments; and the program that runs them after a candidate
and prints what each call gave (a value's canonical repr, or the exception's name)."""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

#: Printed before the line of outputs, so that the candidate's own output cannot be taken for it.
MARKER = "@@probe-outputs@@"
#: Most characters of one output that are compared.
OUTPUT_CHARS = 300
#: CPU seconds one probe call may take before it counts as a timeout.
CALL_SECONDS = 0.5
#: Most probe calls per problem, the statement's own first.
MAX_PROBES = 24


def _tree(source: str) -> ast.Module | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(source)
        except SyntaxError:
            return None


def statement_calls(source: str, entry_point: str) -> tuple[str, ...]:
    """The outermost calls of `entry_point` in `source` (examples or asserts), as source text,
    without what they are compared with: the inputs of the examples, never their outputs."""
    tree = _tree(source)
    if tree is None:
        return ()
    calls: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == entry_point:
            calls.append(ast.unparse(node))
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return tuple(dict.fromkeys(calls))


def _int_variants(value: int) -> list[Any]:
    return [value + 1, value - 1, 0]


def _float_variants(value: float) -> list[Any]:
    return [value + 0.5, -value, 0.0]


def _str_variants(value: str) -> list[Any]:
    return ["", value[::-1], value.upper(), value[:-1], value + value[:1]]


def _sequence_variants(value: list[Any] | tuple[Any, ...]) -> list[Any]:
    kind = type(value)
    items = list(value)
    variants: list[list[Any]] = [[], items[::-1], items[:-1], items + items[:1]]
    variants += [[first, *items[1:]] for first in _variants(items[0])[:1]] if items else []
    return [kind(variant) for variant in variants]


def _dict_variants(value: dict[Any, Any]) -> list[Any]:
    items = list(value.items())
    return [{}, dict(items[:-1]), dict(items[::-1])]


#: Variants of one literal value by its type (bool before int: a bool is an int).
VARIANTS: tuple[tuple[type | tuple[type, ...], Callable[[Any], list[Any]]], ...] = (
    (bool, lambda value: [not value]),
    (int, _int_variants),
    (float, _float_variants),
    (str, _str_variants),
    ((list, tuple), _sequence_variants),
    (dict, _dict_variants),
)


def _variants(value: Any) -> list[Any]:
    for kind, make in VARIANTS:
        if isinstance(value, kind):
            return [variant for variant in make(value) if variant != value or type(variant) is not type(value)]
    return []


def _mutations(call: str) -> Iterator[str]:
    """Calls like `call` with one literal argument (positional or keyword) changed at a time."""
    tree = _tree(call)
    if tree is None or not isinstance(tree.body[0], ast.Expr) or not isinstance(tree.body[0].value, ast.Call):
        return
    node = tree.body[0].value
    slots: list[ast.expr] = [*node.args, *(keyword.value for keyword in node.keywords)]
    for position, slot in enumerate(slots):
        try:
            value = ast.literal_eval(slot)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        for variant in _variants(value):
            replacement = ast.parse(repr(variant), mode="eval").body
            changed = [replacement if index == position else other for index, other in enumerate(slots)]
            args, keyword_values = changed[: len(node.args)], changed[len(node.args) :]
            keywords = [ast.keyword(k.arg, v) for k, v in zip(node.keywords, keyword_values, strict=True)]
            yield ast.unparse(ast.Call(func=node.func, args=args, keywords=keywords))


def probe_calls(calls: tuple[str, ...], limit: int = MAX_PROBES) -> tuple[str, ...]:
    """The statement's calls, then their mutations taken in turn from each call, without repeats,
    at most `limit` in all."""
    probes = list(dict.fromkeys(calls))
    pending = [list(_mutations(call)) for call in calls]
    while len(probes) < limit and any(pending):
        for queue in pending:
            while queue:
                candidate = queue.pop(0)
                if candidate not in probes:
                    probes.append(candidate)
                    break
    return tuple(probes[:limit])


#: What both harnesses (the probe calls here, the written tests) do: run each item under `seconds` of CPU,
#: its printing silenced, `failed(exc)` standing for an item that raised; then print the marker and the list.
TIMED_EACH = """
def __timed_each(items, run, failed, marker, seconds):
    import contextlib, io, json, signal, sys

    def expired(signum, frame):
        raise TimeoutError("out of CPU time")

    signal.signal(signal.SIGPROF, expired)
    results = []
    for item in items:
        signal.setitimer(signal.ITIMER_PROF, seconds)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                result = run(item)
        except BaseException as exc:
            result = failed(exc)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        results.append(result)
    print(marker + json.dumps(results), file=sys.__stdout__, flush=True)
"""
HARNESS = """
def __probe_main(calls, marker, chars, seconds):
    import re

    def canon(value, depth=0):
        if depth > 20:
            return "..."
        if isinstance(value, float):
            return format(value, ".9g")
        if isinstance(value, (list, tuple)):
            inner = ", ".join(canon(item, depth + 1) for item in value)
            return ("[%s]" if isinstance(value, list) else "(%s)") % inner
        if isinstance(value, (set, frozenset)):
            return "{%s}" % ", ".join(sorted(canon(item, depth + 1) for item in value))
        if isinstance(value, dict):
            pairs = sorted(canon(k, depth + 1) + ": " + canon(v, depth + 1) for k, v in value.items())
            return "{%s}" % ", ".join(pairs)
        return re.sub(r" at 0x[0-9a-f]+", "", repr(value))

    def output(call):
        return canon(eval(call, globals()))[:chars]

    __timed_each(calls, output, lambda exc: "!" + type(exc).__name__, marker, seconds)
"""
#: Put before a candidate: its own printing goes nowhere, so that it cannot push the outputs past the
#: sandbox's output cap (left out when the program has `__future__` imports, which must come first).
SILENCE = """import sys as __probe_sys


class __ProbeSink:
    def write(self, text):
        return len(text)

    def flush(self):
        pass


__probe_sys.stdout = __ProbeSink()
"""


def harnessed(program: str, harness: str, call: str) -> str:
    """`program` (a candidate with what runs before it) followed by a harness (with TIMED_EACH) and the call
    that runs it, the candidate's own printing silenced (but for a `__future__` import, which must come first)."""
    silence = "" if "__future__" in program else SILENCE
    return f"{silence}{program}\n{TIMED_EACH}\n{harness}\n{call}\n"


def reported(output: str, marker: str, count: int) -> list | None:
    """The JSON list of `count` items a harness printed after `marker` (on the last line that starts with
    it), or None when it printed none (the program died first) or something else."""
    for line in reversed(output.splitlines()):
        if line.startswith(marker):
            try:
                found = json.loads(line[len(marker) :])
            except json.JSONDecodeError:
                return None
            return found if isinstance(found, list) and len(found) == count else None
    return None


def probe_program(program: str, calls: tuple[str, ...]) -> str:
    """`program` followed by the calls, each under a CPU limit, its own printing silenced."""
    arguments = f"{json.dumps(list(calls))}, {MARKER!r}, {OUTPUT_CHARS}, {CALL_SECONDS}"
    return harnessed(program, HARNESS, f"__probe_main({arguments})")


def read_outputs(output: str, count: int) -> tuple[str, ...] | None:
    """The outputs a probe program printed, or None when it printed none (it died first)."""
    found = reported(output, MARKER, count)
    return None if found is None else tuple(map(str, found))


#: What stands between a call and its shown result in prose examples ("f(1) ➞ 2", "f(1) should return 2");
#: not a lone "=", which prose uses for definitions ("tri(1) = 3").
RESULT_SEPARATOR = re.compile(r"\s*(?:==>|=>|==|➞|->|#?\s*returns|should return|should be|is)\s*(.*)", re.IGNORECASE)


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _call_at(text: str, start: int) -> tuple[str, int] | None:
    """The shortest call with literal arguments that starts at `start` and parses (on one line), and
    where it ends in `text`."""
    end = text.find(")", start)
    while end != -1:
        tree = _tree("(" + text[start : end + 1] + ")")
        if tree is not None and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Call):
            call = tree.body[0].value
            if not all(map(_literal, [*call.args, *(k.value for k in call.keywords)])):
                return None
            return ast.unparse(call), end + 1
        end = text.find(")", end + 1)
    return None


def _shown_value(rest: str) -> str | None:
    """The literal a prose example shows as the result: what follows the last " = " when that is one
    ("19 - 5 - 6 = 8"), else the longest leading run of words that is one."""
    rest = rest.split("#", 1)[0]
    words = rest.strip().rstrip(".,;").split()
    tails = [rest.rsplit(" = ", 1)[1].strip().rstrip(".,;")] if " = " in rest else []
    for source in tails + [" ".join(words[:n]).rstrip(".,;") for n in range(len(words), 0, -1)]:
        tree = _tree("(" + source + ")")
        if tree is not None and isinstance(tree.body[0], ast.Expr) and _literal(tree.body[0].value):
            return ast.unparse(tree.body[0].value)
    return None


def prose_examples(prompt: str, entry_point: str) -> tuple[str, ...]:
    """Examples a statement writes in prose rather than as `>>>` lines ("f(3, 4) == 7", "f(x) ➞ True",
    "f(2) should return 4", "f(1) => '0b1'"), as asserts: calls of `entry_point` followed on their
    line by a separator and a literal. Calls on `>>>` lines are left to the doctest examples."""
    found: list[str] = []
    for match in re.finditer(rf"(?<![\w.>] )(?<![\w.]){re.escape(entry_point)}\(", prompt):
        line_start = prompt.rfind("\n", 0, match.start()) + 1
        if prompt[line_start : match.start()].strip().startswith(">>>"):
            continue
        call = _call_at(prompt, match.start())
        if call is None:
            continue
        source, end = call
        line_end = prompt.find("\n", end)
        separated = RESULT_SEPARATOR.match(prompt[end : line_end if line_end != -1 else len(prompt)])
        value = _shown_value(separated.group(1)) if separated else None
        if value is not None:
            found.append(f"assert {source} == {value}")
    return tuple(dict.fromkeys(found))
