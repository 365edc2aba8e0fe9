"""What a sandbox promises: run complete Python programs under limits and classify how each ended.

Known limitation: a candidate runs in the very process that reports its result, so a deliberately
hostile program can forge a pass (for instance by writing the success report to the result pipe
itself and exiting). The sandbox protects the host and the other candidates, not the verdict
against deliberate cheating by the candidate, like the reference harnesses (HumanEval's, MBPP's).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType

#: Called with 1 after each finished program (it fits tqdm's `update`).
Tick = Callable[[int], None]


class SandboxWarning(UserWarning):
    """Candidates run with weaker isolation than asked for."""


@dataclass(frozen=True)
class Limits:
    """Resources one candidate may use."""

    timeout_s: float = 5.0  # wall clock per candidate
    memory_mb: int = 1024  # RLIMIT_AS
    file_size_mb: int = 16  # RLIMIT_FSIZE
    processes: int = 32  # RLIMIT_NPROC
    output_bytes: int = 64 * 1024  # stdout+stderr kept; the rest is drained and dropped


@dataclass(frozen=True)
class Outcome:
    """How one candidate ended.

    `error_type` is the exception's class name ("AssertionError", "SyntaxError", "SystemExit", ...),
    "Timeout", "Exited" (it ended without a result, e.g. `os._exit`), "Signal:SIGKILL" style for a
    death by signal, or "SandboxDied" when the candidate took its worker down; None when it passed.
    A candidate that crashed or timed out after the out-of-memory killer struck at its worker's
    memory cap is a "crashed" "MemoryError" (a "failed" one hit `Limits.memory_mb`).
    """

    status: str  # "passed" | "failed" | "timeout" | "crashed"
    error_type: str | None
    message: str  # one line, at most about 300 characters
    output: str  # stdout and stderr together, at most Limits.output_bytes
    truncated: bool  # output was cut
    seconds: float  # wall time of the whole request

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class Sandbox(ABC):
    """Runs untrusted programs; a program passes iff it runs to its end without raising."""

    isolation: str  # "bwrap" or "weak": put it into every report
    workers: int  # candidates run in parallel

    @abstractmethod
    def run(self, program: str, limits: Limits | None = None) -> Outcome:
        """Run one complete Python program."""

    @abstractmethod
    def run_many(
        self, programs: Sequence[str], limits: Limits | None = None, progress: Tick | None = None
    ) -> list[Outcome]:
        """Run programs in parallel on all workers; outcomes in the programs' order; `progress(1)`
        after each program."""

    @abstractmethod
    def close(self) -> None:
        """Stop every worker."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
