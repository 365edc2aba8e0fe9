"""Workers inside bubblewrap: no network, no view of the host's files or processes, one uid each."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import IO

from pkg.errors import SandboxError
from rerank.sandbox.cgroups import Cgroup, remove_stale
from rerank.sandbox.pool import WORKER_SOURCE, WorkerPool

TMP_BYTES = 256 << 20  # the sandbox's /tmp; RLIMIT_FSIZE bounds each file, this bounds them all
SHM_BYTES = 64 << 20  # its /dev/shm (multiprocessing's semaphores live there)


def _system_dirs() -> list[str]:
    """bwrap arguments recreating /bin, /lib, /lib64 and /sbin: symlinks into /usr, or read-only binds."""
    args: list[str] = []
    for name in ("bin", "lib", "lib64", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    return args


class BwrapSandbox(WorkerPool):
    """One worker per core, each in its own bubblewrap sandbox.

    As root, worker i runs as uid `uid_base + i` (RLIMIT_NPROC is not enforced for root);
    otherwise every worker runs as the calling user. Inside: /usr read-only, fresh /proc, /dev,
    /tmp and /dev/shm, an empty environment, every namespace unshared (no network), no further
    user namespaces, the rest of the root read-only. The worker is pid 1 of its namespace
    (`--as-pid-1`): candidates can neither signal it nor reach a bwrap process holding the host's
    pipes. `interpreter` must be a system Python the sandbox's uid can run without the host's files.

    As root with writable cgroups (`cgroup_caps`), each worker with everything it starts lives in a
    control group of its own (`cgroups[i]`), capped at `memory_cap_mb` of memory (swap included)
    and `max_tasks` processes and threads, however many processes a candidate spreads over; a
    candidate that reaches the memory cap is killed and reported as a "MemoryError" crash. The cap
    binds before `Limits.memory_mb` when that is larger. Without cgroups only the rlimits hold.
    """

    isolation = "bwrap"

    def __init__(
        self,
        workers: int | None = None,
        interpreter: str = "/usr/bin/python3",
        uid_base: int = 61000,
        memory_cap_mb: int = 2048,
        max_tasks: int = 64,
    ) -> None:
        count = workers or os.cpu_count() or 1
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SandboxError("bwrap (bubblewrap) is not installed")
        self._bwrap: str = bwrap
        root = os.geteuid() == 0
        self._setpriv = shutil.which("setpriv") if root else None
        if root and self._setpriv is None:
            raise SandboxError("setpriv is not installed: it is needed to run the workers as non-root uids")
        self._interpreter = interpreter
        self.uids = tuple(uid_base + index if root else os.getuid() for index in range(count))
        self.cgroups = self._make_cgroups(count, memory_cap_mb << 20, max_tasks)
        self.cgroup_caps = bool(self.cgroups)
        super().__init__(count)

    @staticmethod
    def _make_cgroups(count: int, memory_bytes: int, max_tasks: int) -> tuple[Cgroup, ...]:
        """A group per worker, or none at all where some cannot be made."""
        remove_stale()
        groups: list[Cgroup] = []
        for index in range(count):
            group = Cgroup.create(index, memory_bytes, max_tasks)
            if group is None:
                for made in groups:
                    made.remove()
                return ()
            groups.append(group)
        return tuple(groups)

    def _spawn(self, index: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
        uid = self.uids[index]
        drop: list[str] = [self._setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] if self._setpriv else []
        command = [
            *drop, self._bwrap,
            "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--as-pid-1",
            "--ro-bind", "/usr", "/usr", *_system_dirs(),
            "--proc", "/proc", "--dev", "/dev",
            "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
            "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
            "--remount-ro", "/dev", "--remount-ro", "/",
            "--clearenv", "--setenv", "PATH", "/usr/bin", "--chdir", "/tmp",
            self._interpreter, "-I", "-c", WORKER_SOURCE, "namespace",
        ]  # fmt: skip
        if self.cgroups:
            command = self.cgroups[index].wrap(command)
        return subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env={}, start_new_session=True
        )

    def _cleanup(self, index: int) -> None:
        """Kill whatever is left in the stopped worker's group."""
        if self.cgroups:
            self.cgroups[index].kill()

    def _oom_kills(self, index: int) -> int:
        return self.cgroups[index].oom_kills() if self.cgroups else 0

    def close(self) -> None:
        """Stop every worker and remove the control groups."""
        super().close()
        groups, self.cgroups = self.cgroups, ()
        for group in groups:
            group.remove()
