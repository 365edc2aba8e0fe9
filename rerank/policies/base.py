"""What a selection policy sees of a problem and its candidates, what it learns of each candidate in
the sandbox, and what it returns."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

#: The arm whose candidate is written without retrieved context.
BASELINE_ARM = "norag"


@dataclass(frozen=True)
class Task:
    """One problem as a policy may see it: its examples with their outputs (HumanEval's `>>>` lines as
    asserts; none for MBPP, whose shown asserts are its hidden tests) and the entry point's calls the
    statement shows (inputs only: MBPP's asserts without their expected values); `tests` are asserts a
    model wrote from the statement alone (`codet`), never from a candidate or the hidden tests."""

    task_id: str
    entry_point: str
    examples: tuple[str, ...] = ()
    calls: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()


@dataclass(frozen=True)
class Candidate:
    """One arm's answer: its code, the program that defines it without calling it (the code after
    whatever the harness runs first), and its similarity to the query."""

    arm: str
    code: str
    program: str
    similarity: float


@dataclass(frozen=True)
class Assessment:
    """What the sandbox tells of one candidate, never from the hidden tests. `examples` is None when
    the task has none; `outputs` holds one canonical output per probe call ("!Name" for an exception,
    "!Timeout" for a call over its CPU limit), or None when the probe program died; `tests` whether it
    passes each of the task's model-written tests."""

    parses: bool
    runs: bool
    examples: bool | None
    outputs: tuple[str, ...] | None
    tests: tuple[bool, ...] = ()

    def checks(self, shown: int) -> int:
        """How many self-checks pass, in order: parses, runs, the shown calls return, the examples."""
        passed = [
            self.parses,
            self.runs,
            self.outputs is not None and not any(out.startswith("!") for out in self.outputs[:shown]),
            self.examples is not False,
        ]
        count = 0
        for ok in passed:
            if not ok:
                break
            count += 1
        return count


@dataclass(frozen=True)
class Selection:
    """The chosen candidate, the rule that decided (`stage`), and the evidence: each candidate's
    self-checks passed (0-4: parses, runs, shown calls return, examples), and the agreement clusters'
    sizes (largest first) where the policy clustered."""

    index: int
    stage: str
    checks: tuple[int, ...] = ()
    clusters: tuple[int, ...] = field(default=())


class Policy(ABC):
    """Chooses one candidate per problem from the candidates' code and their sandbox assessments."""

    name: str
    description: str
    #: Which statement inputs the policy runs (for reports).
    inputs: str
    #: Whether the policy compares candidates' outputs on the function's calls (and so needs a task with calls).
    compares_calls: bool = False
    #: Whether the policy needs tests a model writes for the task (`Task.tests`).
    writes_tests: bool = False
    #: Whether the policy still chooses well without them (a task naming no function to test).
    tests_optional: bool = False

    @abstractmethod
    def choose(self, task: Task, candidates: Sequence[Candidate], assessments: Sequence[Assessment]) -> Selection:
        """The chosen candidate; `assessments[i]` is what the sandbox told of `candidates[i]`."""
