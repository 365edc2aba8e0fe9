"""Parent side of the sandbox: long-lived worker processes, each running one candidate at a time."""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import struct
import subprocess
import tempfile
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path
from typing import IO

from pkg.errors import SandboxError
from rerank.sandbox.base import Limits, Outcome, Sandbox, Tick

#: The worker's source, given to the sandboxed interpreter with `-c`.
WORKER_SOURCE = Path(__file__).with_name("worker.py").read_text()
HEADER = struct.Struct("!I")
STARTUP_S = 60.0  # the worker imports its preloaded modules first; generous for busy machines
MARGIN_S = 5.0  # how long past a candidate's own timeout a worker may take to answer
OOM_MESSAGE = "killed by the out-of-memory killer: the worker's memory cap was reached"


class _WorkerDied(Exception):
    """The worker's pipes closed."""


class _WorkerHung(Exception):
    """The worker did not answer in time."""


class _Worker:
    """One worker process, replaced whenever it dies or stops answering."""

    def __init__(
        self,
        spawn: Callable[[IO[bytes]], subprocess.Popen[bytes]],
        cleanup: Callable[[], None],
        oom_kills: Callable[[], int],
    ) -> None:
        self._spawn = spawn
        self._cleanup = cleanup
        self._oom_kills = oom_kills
        self._start()

    def _start(self) -> None:
        self._log = tempfile.TemporaryFile()
        try:
            self._process = self._spawn(self._log)
        except OSError as exc:
            self._log.close()
            raise SandboxError(f"cannot start a sandbox worker: {exc}") from exc
        self._stopped = False
        for pipe in (self._process.stdin, self._process.stdout):
            os.set_blocking(pipe.fileno(), False)  # type: ignore[union-attr]
        try:
            ready = self._receive(time.monotonic() + STARTUP_S)
        except (_WorkerDied, _WorkerHung):
            ready = None
        if ready != {"ready": True}:
            self._log.seek(0)
            detail = " ".join(self._log.read().decode(errors="replace").split())[-500:]
            self.stop()
            raise SandboxError(f"sandbox worker did not start: {detail or 'no message'}")

    def run(self, program: str, limits: Limits) -> Outcome:
        """Run one candidate; one that died or hung while the out-of-memory killer struck ran out of memory."""
        if self._process.poll() is not None:  # it died while idle, or an earlier restart failed
            self.stop()
            self._start()
        kills = self._oom_kills()
        outcome = self._attempt(program, limits)
        if outcome.status in ("crashed", "timeout") and self._oom_kills() > kills:
            return replace(outcome, status="crashed", error_type="MemoryError", message=OOM_MESSAGE)
        return outcome

    def _attempt(self, program: str, limits: Limits) -> Outcome:
        started = time.monotonic()
        deadline = started + limits.timeout_s + MARGIN_S
        try:
            self._send({"program": program, "limits": asdict(limits)}, deadline)
            reply = self._receive(deadline)
            return Outcome(**reply, seconds=time.monotonic() - started)
        except (_WorkerDied, TypeError):
            status, error_type, message = "crashed", "SandboxDied", "the sandbox worker died"
        except _WorkerHung:
            status, error_type, message = "timeout", "Timeout", "the sandbox worker stopped answering"
        self.stop()
        self._start()
        return Outcome(status, error_type, message, "", False, time.monotonic() - started)

    def stop(self) -> None:
        """Kill the worker's process group and release what it held; once is enough. A worker
        already reaped is not signalled: its pid may name another process group by now (under bwrap
        it was its pid namespace's init, so what ran inside died with it)."""
        if self._stopped:
            return
        self._stopped = True
        if self._process.returncode is None:
            try:
                os.killpg(self._process.pid, signal.SIGKILL)
            except OSError:
                pass
        self._process.wait()
        for pipe in (self._process.stdin, self._process.stdout):
            pipe.close()  # type: ignore[union-attr]
        self._log.close()
        self._cleanup()

    def _send(self, message: dict, deadline: float) -> None:
        body = json.dumps(message).encode()
        view = memoryview(HEADER.pack(len(body)) + body)
        fd = self._process.stdin.fileno()  # type: ignore[union-attr]
        while view:
            _wait(fd, deadline, write=True)
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
            except OSError as exc:
                raise _WorkerDied from exc

    def _receive(self, deadline: float) -> dict:
        size = HEADER.unpack(self._read(HEADER.size, deadline))[0]
        try:
            return json.loads(self._read(size, deadline))
        except ValueError as exc:
            raise _WorkerDied from exc

    def _read(self, size: int, deadline: float) -> bytes:
        fd = self._process.stdout.fileno()  # type: ignore[union-attr]
        data = bytearray()
        while len(data) < size:
            _wait(fd, deadline, write=False)
            try:
                chunk = os.read(fd, size - len(data))
            except BlockingIOError:
                continue
            if not chunk:
                raise _WorkerDied
            data += chunk
        return bytes(data)


def _wait(fd: int, deadline: float, write: bool) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _WorkerHung
    ready = select.select([], [fd], [], remaining) if write else select.select([fd], [], [], remaining)
    if not any(ready):
        raise _WorkerHung


class WorkerPool(Sandbox):
    """A sandbox of `workers` fork-server workers; subclasses say how one is started."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise SandboxError(f"a sandbox needs at least one worker, not {workers}")
        self.workers = workers
        self._closed = False
        self._workers: list[_Worker] = []
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._lock = threading.Lock()
        # bwrap --die-with-parent (PR_SET_PDEATHSIG) kills a worker when the *thread* that started it
        # ends, so every worker, restarts included, is started from this one long-lived thread
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-spawner")
        try:
            for index in range(workers):
                worker = _Worker(
                    partial(self._spawn_on_spawner, index),
                    partial(self._cleanup, index),
                    partial(self._oom_kills, index),
                )
                self._workers.append(worker)
                self._idle.put(worker)
        except SandboxError:
            self.close()
            raise

    def _spawn_on_spawner(self, index: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
        return self._spawner.submit(self._spawn, index, log).result()

    @abstractmethod
    def _spawn(self, index: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
        """Start worker `index` with pipes on stdin and stdout and its stderr into `log`."""

    def _cleanup(self, index: int) -> None:
        """After worker `index` stopped: kill what it may have left behind."""

    def _oom_kills(self, index: int) -> int:
        """How many processes of worker `index` the out-of-memory killer has killed so far."""
        return 0

    def run(self, program: str, limits: Limits | None = None) -> Outcome:
        if self._closed:
            raise SandboxError("the sandbox is closed")
        worker = self._idle.get()
        try:
            return worker.run(program, limits or Limits())
        finally:
            self._idle.put(worker)

    def run_many(
        self, programs: Sequence[str], limits: Limits | None = None, progress: Tick | None = None
    ) -> list[Outcome]:
        def one(program: str) -> Outcome:
            outcome = self.run(program, limits)
            if progress:
                with self._lock:
                    progress(1)
            return outcome

        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(one, programs))

    def close(self) -> None:
        self._closed = True
        while self._workers:
            self._workers.pop().stop()
        self._spawner.shutdown()
