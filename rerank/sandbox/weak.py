"""Workers as plain subprocesses: rlimits, a new session, an empty environment, and no namespaces.

The fallback where bubblewrap cannot start. Candidates see the host's files and network with the
worker's uid: as root, worker i runs as uid `uid_base + i`, otherwise as the calling user. Without
a pid namespace, the only way to find what a dead worker left behind is its uid, so by default each
sandbox draws a block of uids of its own at random (two sandboxes sharing uids would kill each
other's processes).
"""

from __future__ import annotations

import os
import secrets
import subprocess
from typing import IO

from rerank.sandbox.killing import kill_until_gone
from rerank.sandbox.pool import WORKER_SOURCE, WorkerPool

SWEEP_S = 5.0
UID_BLOCKS = (100_000, 1 << 20, 1024)  # first uid, number of blocks, uids per block


def _kill_user(uid: int) -> None:
    """SIGKILL every process whose real uid is `uid`, until none is left (or SWEEP_S passed)."""
    kill_until_gone(lambda: [pid for pid in _pids() if _real_uid(pid) == uid], SWEEP_S)


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _real_uid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class WeakSandbox(WorkerPool):
    """Weak isolation: limits and cleanup, but candidates share the host's view of the world."""

    isolation = "weak"

    def __init__(
        self, workers: int | None = None, interpreter: str = "/usr/bin/python3", uid_base: int | None = None
    ) -> None:
        count = workers or os.cpu_count() or 1
        if uid_base is None:
            first, blocks, size = UID_BLOCKS
            uid_base = first + secrets.randbelow(blocks) * size
        self._root = os.geteuid() == 0
        self._interpreter = interpreter
        self.uids = tuple(uid_base + index if self._root else os.getuid() for index in range(count))
        super().__init__(count)

    def _spawn(self, index: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
        uid = self.uids[index]
        identity = {"user": uid, "group": uid, "extra_groups": []} if self._root else {}
        return subprocess.Popen(  # type: ignore[call-overload]  # identity: user/group/extra_groups when root
            [self._interpreter, "-I", "-c", WORKER_SOURCE, "descendants"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env={},
            cwd="/",
            start_new_session=True,
            **identity,
        )

    def _cleanup(self, index: int) -> None:
        """A dead worker's descendants have no sweeper left: as root, kill its whole uid."""
        if self._root:
            _kill_user(self.uids[index])
