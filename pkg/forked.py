"""Work done in a child process forked from this one while this one goes on with other work: the second
core of a build (the linking pass beside the BM25 indexes). The child inherits the work's inputs as
they are in memory, so nothing is copied on the way in; its result comes back pickled through a pipe.

Only for work that computes from memory: the child shares the parent's connections, files and locks,
and uses none of them. It writes its result and leaves with `os._exit`, running no exit handler and
flushing no stream another thread may have held at the fork."""

from __future__ import annotations

import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Generic, NoReturn, TypeVar

R = TypeVar("R")

#: Where a child is forked. Elsewhere the work runs in this process. macOS has fork, but a child of a
#: process with threads may crash there as soon as a system framework is touched.
CAN_FORK = sys.platform.startswith("linux")


def cores() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def started(work: Callable[[], R], fork: bool = True) -> Forked[R] | Deferred[R]:
    """work() started in a forked child, where `fork` and the platform allow; else put off until its
    result is asked for."""
    return Forked(work) if fork and CAN_FORK else Deferred(work)


class Deferred(Generic[R]):
    """work(), run in this process when its result is asked for."""

    def __init__(self, work: Callable[[], R]) -> None:
        self._work: Callable[[], R] | None = work

    def result(self) -> R:
        """What work() returns (it runs now)."""
        if self._work is None:
            raise RuntimeError("cancelled")
        return self._work()

    def cancel(self) -> None:
        """Let the work go without running it."""
        self._work = None


class Forked(Generic[R]):
    """work() running in a forked child. `result()` waits for it; `cancel()` kills it."""

    def __init__(self, work: Callable[[], R]) -> None:
        readable, writable = os.pipe()
        try:
            self._pid = os.fork()
        except OSError:
            os.close(readable)
            os.close(writable)
            raise
        if self._pid == 0:
            os.close(readable)
            _run_child(work, writable)
        os.close(writable)
        self._pipe = os.fdopen(readable, "rb")

    def result(self) -> R:
        """What work() returned, or what it raised, raised here (with the child's traceback as a note).
        ChildProcessError when the child ended without an answer (killed, out of memory)."""
        with self._pipe:
            payload = self._pipe.read()
        _, status = os.waitpid(self._pid, 0)
        if not payload or os.waitstatus_to_exitcode(status) != 0:  # it leaves with 0 once all is written
            raise ChildProcessError(f"the forked process {self._pid} ended without a result ({_ending(status)})")
        returned, value = pickle.loads(payload)
        if returned:
            return value
        raise value

    def cancel(self) -> None:
        """Kill the child and wait for it."""
        os.kill(self._pid, signal.SIGKILL)
        self._pipe.close()
        os.waitpid(self._pid, 0)


def _run_child(work: Callable[[], R], writable: int) -> NoReturn:
    status = 1
    try:
        try:
            payload = pickle.dumps((True, work()), pickle.HIGHEST_PROTOCOL)
        except BaseException as error:  # noqa: B036  # an interrupt too is the parent's to see
            error.add_note(f"raised in the forked process {os.getpid()}:\n{traceback.format_exc()}")
            payload = _pickled_error(error)
        _write(writable, payload)
        status = 0
    finally:
        os._exit(status)


def _write(writable: int, payload: bytes) -> None:
    with os.fdopen(writable, "wb") as pipe:
        pipe.write(payload)


def _pickled_error(error: BaseException) -> bytes:
    try:
        return pickle.dumps((False, error), pickle.HIGHEST_PROTOCOL)
    except Exception:  # an exception holding what pickle refuses: its text survives
        described = RuntimeError(f"{type(error).__name__}: {error}")
        described.__notes__ = getattr(error, "__notes__", [])
        return pickle.dumps((False, described), pickle.HIGHEST_PROTOCOL)


def _ending(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
