"""Fork-server worker of the sandbox: runs candidate programs one at a time, each in a fresh child.

Self-contained standard-library code: the sandbox passes this file's source to `python3 -I -c`
(the sandbox's user cannot read the project). Messages on stdin and stdout are a 4-byte big-endian
length and a UTF-8 JSON body; a request is {"program", "limits"}, a reply holds the fields of an
Outcome but `seconds`. argv[1] says what the sweep after every candidate kills: "namespace" (the
worker is alone in its pid namespace: every process but pid 1 and itself; /tmp and /dev/shm are
emptied too) or "descendants" (every process below the worker, which adopts orphans as a subreaper).
"""

import ctypes
import json
import math
import os
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable

#: Imported before forking, so that candidates start fast.
PRELOAD = (
    "math",
    "json",
    "collections",
    "itertools",
    "functools",
    "heapq",
    "bisect",
    "string",
    "typing",
    "hashlib",
    "statistics",
    "fractions",
    "decimal",
    "datetime",
    "random",
    "operator",
    "copy",
    "re",
)
for _name in PRELOAD:
    __import__(_name)

HEADER = struct.Struct("!I")
PR_SET_DUMPABLE = 4  # 0: other processes of our uid can neither ptrace us nor open /proc/<us>/fd
PR_SET_CHILD_SUBREAPER = 36  # orphans below us become our children
RESULT_FD = 3  # where the child reports; candidates' own output goes to fds 1 and 2
RESULT_BYTES = 64 * 1024
MESSAGE_CHARS = 300
SWEEP_S = 10.0  # a sweep that has not killed everything by then ends the worker
SCRATCH = ("/tmp", "/dev/shm")


def main() -> None:
    scope = sys.argv.pop(1)
    prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    requests, replies = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    send(replies, {"ready": True})
    while (request := receive(requests)) is not None:
        send(replies, run(request["program"], request["limits"], scope))


def prctl(option: int, value: int) -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}, {value})")


def receive(fd: int) -> dict | None:
    header = read_exact(fd, HEADER.size)
    if header is None:
        return None
    body = read_exact(fd, HEADER.unpack(header)[0])
    return None if body is None else json.loads(body)


def read_exact(fd: int, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def send(fd: int, message: dict) -> None:
    body = json.dumps(message).encode()
    view = memoryview(HEADER.pack(len(body)) + body)
    while view:
        view = view[os.write(fd, view) :]


def run(program: str, limits: dict, scope: str) -> dict:
    """Run one candidate in a child and clean up after it, whatever it did."""
    workdir = tempfile.mkdtemp(prefix="candidate-", dir="/tmp")
    out_r, out_w = os.pipe()
    res_r, res_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            child(program, limits, workdir, out_w, res_w)
        finally:
            os._exit(70)
    os.close(out_w)
    os.close(res_w)
    try:
        return supervise(pid, out_r, res_r, limits, scope)
    finally:
        os.close(out_r)
        os.close(res_r)
        for path in scratch(scope, workdir):
            remove(path)


def child(program: str, limits: dict, workdir: str, out_w: int, res_w: int) -> None:
    """In the forked child: limit, isolate the descriptors, run the program, report."""
    os.setsid()
    prctl(PR_SET_DUMPABLE, 1)  # a process that is not dumpable cannot write its own /proc files
    with open("/proc/self/oom_score_adj", "w") as adjust:
        adjust.write("1000")  # the out-of-memory killer takes the candidate's processes before the worker
    prctl(PR_SET_DUMPABLE, 0)
    mb = 1 << 20
    for kind, value in (
        (resource.RLIMIT_AS, limits["memory_mb"] * mb),
        (resource.RLIMIT_CPU, math.ceil(limits["timeout_s"]) + 1),
        (resource.RLIMIT_FSIZE, limits["file_size_mb"] * mb),
        (resource.RLIMIT_NPROC, limits["processes"]),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(kind, (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write raises instead of killing
    os.chdir(workdir)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    os.dup2(res_w, RESULT_FD, inheritable=False)
    os.closerange(RESULT_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    # also the __std*__ originals: a program that restores them must still write to our pipes
    sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)  # type: ignore[misc]
    # the program may rebind anything it can reach: keep what reporting needs
    me, getpid, write, exit_now, dumps = os.getpid(), os.getpid, os.write, os._exit, json.dumps
    report: dict = {"ok": True}
    try:
        exec(compile(program, "<candidate>", "exec"), {"__name__": "__main__"})
    except BaseException as exc:  # every way out of the program is a verdict
        if getpid() != me:
            exit_now(0)  # a process the program forked: only the original reports
        report = describe(exc)
        if not isinstance(exc, SystemExit):
            try:
                traceback.print_exception(
                    type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None
                )  # not our frame
            except BaseException:
                pass
    if getpid() != me:
        exit_now(0)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    write(RESULT_FD, dumps(report).encode())
    exit_now(0)


def describe(exc: BaseException) -> dict:
    try:
        text = str(exc)
    except BaseException:
        text = "<unprintable message>"
    text = " ".join(text.splitlines()).strip()
    if len(text) > MESSAGE_CHARS:
        text = text[: MESSAGE_CHARS - 3] + "..."
    return {"ok": False, "error_type": type(exc).__name__, "message": text}


def supervise(pid: int, out_r: int, res_r: int, limits: dict, scope: str) -> dict:
    """Collect output and result until the child exits or the deadline passes, then sweep."""
    deadline = time.monotonic() + limits["timeout_s"]
    output = Sink(limits["output_bytes"])
    result = Sink(RESULT_BYTES)
    sinks = {out_r: output, res_r: result}
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    for fd in (out_r, res_r, pidfd):
        os.set_blocking(fd, False)
        poller.register(fd, select.POLLIN)
    exited = False
    try:
        while not exited:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            for fd, _ in poller.poll(math.ceil(remaining * 1000)):
                if fd == pidfd:
                    exited = True
                elif not sinks[fd].pump(fd):
                    poller.unregister(fd)
    finally:
        os.close(pidfd)
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass
    status = os.waitpid(pid, 0)[1]
    sweep(scope)
    for fd, sink in sinks.items():
        while sink.pump(fd):
            pass
    reply = {"output": output.text(), "truncated": output.truncated}
    if not exited:
        return reply | verdict("timeout", "Timeout", f"no result within {limits['timeout_s']} s")
    try:
        report = json.loads(bytes(result.data))
    except ValueError:
        report = None
    if isinstance(report, dict) and report.get("ok") is True:
        return reply | verdict("passed", None, "")
    if isinstance(report, dict) and report.get("ok") is False:
        return reply | verdict("failed", str(report.get("error_type")), str(report.get("message")))
    if os.WIFSIGNALED(status):
        name = signal_name(os.WTERMSIG(status))
        return reply | verdict("crashed", f"Signal:{name}", f"killed by signal {name}")
    code = os.waitstatus_to_exitcode(status)
    return reply | verdict("crashed", "Exited", f"exited with status {code} without a result")


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def verdict(status: str, error_type: str | None, message: str) -> dict:
    return {"status": status, "error_type": error_type, "message": message}


class Sink:
    """Bytes read from a pipe: the first `cap` kept, the rest drained and dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def pump(self, fd: int) -> bool:
        """Read what is there; False at end of file or when nothing is left to read."""
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return False
        room = self.cap - len(self.data)
        self.data += chunk[:room]
        self.truncated = self.truncated or len(chunk) > room
        return bool(chunk)

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def sweep(scope: str) -> None:
    """SIGKILL every process the candidate may have left, until none remains."""
    me = os.getpid()
    give_up = time.monotonic() + SWEEP_S
    while True:
        reap()
        victims = namespace_pids(me) if scope == "namespace" else descendants(me)
        if not victims:
            return
        if time.monotonic() > give_up:
            raise SystemExit(f"processes survive SIGKILL: {victims}")
        kill_each(victims)
        time.sleep(0.001)


def kill_each(pids: Iterable[int]) -> None:
    """SIGKILL every process of `pids`; one already gone is no error. (The host's killing uses it too.)"""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def namespace_pids(me: int) -> list[int]:
    return [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if pid not in (1, me)]


def descendants(me: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, stack = [], [me]
    while stack:
        below = children.get(stack.pop(), [])
        found += below
        stack += below
    return found


def scratch(scope: str, workdir: str) -> list[str]:
    """What to delete after a candidate: everything writable in a namespace, else its directory."""
    if scope != "namespace":
        return [workdir]
    return [os.path.join(root, name) for root in SCRATCH if os.path.isdir(root) for name in os.listdir(root)]


def remove(path: str) -> None:
    """Delete a file or a tree, whatever permissions the candidate left on it."""
    if os.path.islink(path) or not os.path.isdir(path):
        try:
            os.unlink(path)
        except OSError:
            pass
        return
    stack = [path]
    while stack:
        current = stack.pop()
        try:
            os.chmod(current, 0o700)
            with os.scandir(current) as entries:
                stack += [entry.path for entry in entries if entry.is_dir(follow_symlinks=False)]
        except OSError:
            pass
    shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
