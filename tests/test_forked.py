"""pkg.forked: work in a forked child, its result or its error back in this process."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from pkg import forked
from pkg.forked import CAN_FORK, Deferred, Forked, cores, started

pytestmark = pytest.mark.skipif(not CAN_FORK, reason="forks on Linux only")


def test_the_child_computes_from_inherited_memory_and_sends_the_result_back() -> None:
    inherited = list(range(200_000))
    linking = Forked(lambda: (os.getpid(), sum(inherited), [str(i) for i in inherited[:3]]))
    pid, total, head = linking.result()
    assert pid != os.getpid()
    assert total == sum(range(200_000)) and head == ["0", "1", "2"]


def test_what_the_child_raises_is_raised_here_with_its_traceback() -> None:
    def fails() -> None:
        raise KeyError("no such table")

    with pytest.raises(KeyError, match="no such table") as raised:
        Forked(fails).result()
    notes = "\n".join(raised.value.__notes__)
    assert "raised in the forked process" in notes and "in fails" in notes


def test_an_error_pickle_refuses_arrives_as_its_text() -> None:
    class Unpicklable(Exception):
        def __reduce__(self) -> object:
            raise TypeError("not today")

    def fails() -> None:
        raise Unpicklable("held a lock")

    with pytest.raises(RuntimeError, match="Unpicklable: held a lock"):
        Forked(fails).result()


def test_a_child_that_dies_without_an_answer_is_a_child_process_error() -> None:
    with pytest.raises(ChildProcessError, match="ended without a result .killed by SIGKILL"):
        Forked(lambda: os.kill(os.getpid(), signal.SIGKILL)).result()


def test_a_child_killed_while_writing_its_answer_gives_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """Half an answer in the pipe is no answer: the child leaves with 0 only once all is written."""

    def writes_half_then_dies(writable: int, payload: bytes) -> None:
        os.write(writable, payload[: len(payload) // 2])
        os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(forked, "_write", writes_half_then_dies)
    with pytest.raises(ChildProcessError, match="killed by SIGKILL"):
        Forked(lambda: list(range(1000))).result()


def test_cancel_kills_the_child(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    def waits() -> None:
        pid_file.write_text(str(os.getpid()))
        time.sleep(600)

    linking = Forked(waits)
    while not pid_file.exists() or not pid_file.read_text():
        time.sleep(0.01)
    linking.cancel()  # reaps it too
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_deferred_work_runs_here_when_asked_and_not_after_a_cancel() -> None:
    ran: list[int] = []
    work = Deferred(lambda: ran.append(os.getpid()) or len(ran))
    assert ran == []
    assert work.result() == 1 and ran == [os.getpid()]
    cancelled = Deferred(lambda: ran.append(0))
    cancelled.cancel()
    with pytest.raises(RuntimeError, match="cancelled"):
        cancelled.result()
    assert ran == [os.getpid()]


def test_started_forks_only_when_asked() -> None:
    assert isinstance(started(os.getpid, fork=False), Deferred)
    forked = started(os.getpid)
    assert isinstance(forked, Forked) and forked.result() != os.getpid()


def test_cores_counts_the_cpus_this_process_may_use() -> None:
    assert 1 <= cores() <= (os.cpu_count() or 1)
