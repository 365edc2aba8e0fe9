"""The real bubblewrap sandbox against hostile candidates: no mocks, and without bwrap these fail."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from rerank.sandbox import Limits, Outcome, Sandbox, SandboxWarning, open_sandbox
from rerank.sandbox.bwrap import BwrapSandbox

pytestmark = pytest.mark.sandbox

FAST = Limits(timeout_s=1.0)
MEMORY_CAP_MB = 2048  # per worker, the default
MAX_TASKS = 64  # per worker, the default
SECRET = ("PKG_SANDBOX_TEST_SECRET", "hunter2")
PROJECT = Path(__file__).resolve().parents[1]

GRANDCHILD = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            with open("/tmp/ghost", "a") as ghost:
                ghost.write("boo")
            time.sleep(0.01)
    os._exit(0)
os.wait()
time.sleep(0.2)
assert os.path.exists("/tmp/ghost")
"""

SPREAD_MEMORY_BOMB = """
import os, signal, time
for _ in range(8):
    if os.fork() == 0:
        hoard = bytearray(b"x") * (600 << 20)  # written, so really taken
        time.sleep(60)
        os._exit(0)
for _ in range(8):
    if os.WIFSIGNALED(os.wait()[1]):  # a child was killed: end now, not at the time limit
        os.kill(os.getpid(), signal.SIGKILL)
"""

COUNTING_FORK_BOMB = """
import os, time
forked = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        forked += 1
finally:
    print(forked)
"""

# lowers its out-of-memory score to the worker's, then fills /tmp through small processes: the worker,
# the biggest process left, is what the out-of-memory killer takes
WORKER_KILLER = """
import ctypes, os
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE, so that it may write its own /proc files
with open("/proc/self/oom_score_adj", "w") as adjust:
    adjust.write("0")
script = "i=0; while dd if=/dev/zero of=/tmp/f$i bs=1M count=15 2>/dev/null; do i=$((i+1)); done; sleep 60"
os.execv("/bin/sh", ["sh", "-c", script])
"""


@pytest.fixture(scope="module")
def sandbox() -> Iterator[BwrapSandbox]:
    """Two bwrap workers on uids of their own (other sandboxes may be running on the default ones),
    started while a secret is in the environment."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(*SECRET)
        box = BwrapSandbox(workers=2, uid_base=63000, memory_cap_mb=MEMORY_CAP_MB, max_tasks=MAX_TASKS)
    try:
        yield box
    finally:
        box.close()


def live_processes(uid: int) -> dict[int, str]:
    """The host's processes running as `uid` by pid, with their names; zombies (already dead) left out."""
    found = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = dict(line.split(":", 1) for line in Path(f"/proc/{entry}/status").read_text().splitlines())
        except (OSError, ValueError):
            continue
        if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
            found[int(entry)] = fields["Name"].strip()
    return found


def assert_nothing_left(box: BwrapSandbox) -> None:
    """Each worker's uid runs its bwrap and its worker on the host, and nothing else."""
    assert {uid: sorted(live_processes(uid).values()) for uid in box.uids} == {
        uid: ["bwrap", "python3"] for uid in box.uids
    }


def assert_in_own_cgroups(box: BwrapSandbox) -> None:
    """Each worker's processes, and nothing else, are in each of its control group directories."""
    assert box.cgroup_caps, "this host lets root write cgroups: the sandbox should have used them"
    for uid, group in zip(box.uids, box.cgroups, strict=True):
        for path in group.dirs:
            assert {int(pid) for pid in (path / "cgroup.procs").read_text().split()} == set(live_processes(uid))


@contextmanager
def memory_peaks(box: BwrapSandbox) -> Iterator[list[int]]:
    """Each worker cgroup's highest memory use while the block runs, in bytes, as the kernel records it
    (v2: memory.peak, v1: memory.max_usage_in_bytes); writing to the file on entry resets the record."""
    names = ("memory.peak", "memory.max_usage_in_bytes")
    paths = [next(group.memory / name for name in names if (group.memory / name).exists()) for group in box.cgroups]
    peaks: list[int] = []
    with ExitStack() as stack:
        files = [stack.enter_context(path.open("r+b", buffering=0)) for path in paths]
        for file in files:
            file.write(b"0")  # v2 resets the peak that this open file reads; v1 the group's
        yield peaks
        for file in files:
            file.seek(0)
            peaks.append(int(file.read()))


def assert_workers_fine(box: Sandbox) -> None:
    """Every worker still runs candidates (the idle queue is first in, first out)."""
    outcomes = [box.run("print('fine')") for _ in range(box.workers)]
    assert [(o.status, o.output) for o in outcomes] == [("passed", "fine\n")] * box.workers


def verdict(outcome: Outcome) -> tuple[str, str | None]:
    return outcome.status, outcome.error_type


def test_a_program_that_runs_to_its_end_passes(sandbox: BwrapSandbox) -> None:
    outcome = sandbox.run("def add(a, b):\n    return a + b\n\nassert add(2, 3) == 5\nprint(add(2, 3))")
    assert outcome.passed and verdict(outcome) == ("passed", None)
    assert (outcome.output, outcome.truncated, outcome.message) == ("5\n", False, "")
    assert sandbox.isolation == "bwrap"


@pytest.mark.parametrize(
    ("program", "error_type", "message"),
    [
        ("assert 1 + 1 == 3, 'arithmetic'", "AssertionError", "arithmetic"),
        ("print(undefined_name)", "NameError", "name 'undefined_name' is not defined"),
        ("len(5)", "TypeError", "object of type 'int' has no len()"),
        ("def f(:\n    pass", "SyntaxError", "invalid syntax (<candidate>, line 1)"),
        ("def f():\nreturn 1", "IndentationError",
         "expected an indented block after function definition on line 1 (<candidate>, line 2)"),
    ],
)  # fmt: skip
def test_failures_are_classified_by_exception_class(
    sandbox: BwrapSandbox, program: str, error_type: str, message: str
) -> None:
    outcome = sandbox.run(program)
    assert verdict(outcome) == ("failed", error_type) and outcome.message == message
    assert not outcome.passed and f"{error_type}: " in outcome.output


def test_messages_are_one_short_line(sandbox: BwrapSandbox) -> None:
    outcome = sandbox.run("raise ValueError('first line\\nsecond line ' + 'x' * 1000)")
    assert outcome.error_type == "ValueError" and "\n" not in outcome.message
    assert outcome.message.startswith("first line second line") and len(outcome.message) <= 300


@pytest.mark.parametrize("program", ["while True:\n    pass", "import time\ntime.sleep(60)"])
def test_endless_programs_time_out_on_the_wall_clock(sandbox: BwrapSandbox, program: str) -> None:
    outcome = sandbox.run(f"print('started', flush=False)\n{program}", FAST)
    assert verdict(outcome) == ("timeout", "Timeout")
    # the in-sandbox deadline fired (the pool's fallback would say the worker stopped answering)
    assert outcome.message == f"no result within {FAST.timeout_s} s" and outcome.seconds >= FAST.timeout_s
    assert outcome.output == "started\n"  # printed before the deadline, line by line


def test_ignoring_signals_does_not_escape_the_timeout(sandbox: BwrapSandbox) -> None:
    program = (
        "import signal\n"
        "for number in (signal.SIGTERM, signal.SIGALRM, signal.SIGINT, signal.SIGXCPU, signal.SIGHUP):\n"
        "    signal.signal(number, signal.SIG_IGN)\n"
        "signal.alarm(0)\n"
        "while True:\n"
        "    pass\n"
    )
    outcome = sandbox.run(program, FAST)
    assert verdict(outcome) == ("timeout", "Timeout") and outcome.message == f"no result within {FAST.timeout_s} s"
    assert_nothing_left(sandbox)


@pytest.mark.parametrize("processes", [Limits().processes, 10_000], ids=["rlimit", "cgroup"])
@pytest.mark.parametrize(
    "program",
    [
        "import os\nwhile True:\n    os.fork()",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
    ],
)
def test_fork_bombs_are_contained_and_swept(sandbox: BwrapSandbox, program: str, processes: int) -> None:
    """With RLIMIT_NPROC raised out of the way, the worker's cgroup still caps its tasks."""
    outcome = sandbox.run(program, Limits(timeout_s=1.0, processes=processes))
    assert verdict(outcome) in {("failed", "BlockingIOError"), ("timeout", "Timeout")}
    assert_nothing_left(sandbox)
    assert_workers_fine(sandbox)


@pytest.mark.parametrize(
    ("program", "limits"),
    [
        ("blob = bytearray(8 * 1024 ** 3)", Limits()),
        ("hoard = []\nwhile True:\n    hoard.append(bytearray(10 ** 7))", Limits(memory_mb=256)),
    ],
)
def test_memory_bombs_hit_the_address_space_limit(sandbox: BwrapSandbox, program: str, limits: Limits) -> None:
    assert verdict(sandbox.run(program, limits)) == ("failed", "MemoryError")
    assert_workers_fine(sandbox)


def test_the_task_cap_holds_where_rlimit_nproc_is_raised(sandbox: BwrapSandbox) -> None:
    outcome = sandbox.run(COUNTING_FORK_BOMB, Limits(processes=10_000))
    assert verdict(outcome) == ("failed", "BlockingIOError")
    # bwrap, the worker and the candidate itself are three of the worker's tasks
    assert int(outcome.output.split()[0]) == MAX_TASKS - 3
    assert_nothing_left(sandbox)
    assert_workers_fine(sandbox)


def test_a_memory_bomb_spread_over_processes_hits_the_workers_memory_cap(sandbox: BwrapSandbox) -> None:
    """8 processes of 600 MB each, every one within RLIMIT_AS: the worker's cgroup caps their sum. Judged
    by the kernel's record of the cgroup's own peak, so other processes on the host cannot count."""
    with memory_peaks(sandbox) as peaks:
        outcome = sandbox.run(SPREAD_MEMORY_BOMB, Limits(timeout_s=60.0))  # room for a busy host
    assert verdict(outcome) == ("crashed", "MemoryError") and "out-of-memory" in outcome.message
    cap = MEMORY_CAP_MB << 20
    assert 0.9 * cap < max(peaks) <= cap, f"peaks {[peak >> 20 for peak in peaks]} MB, cap {MEMORY_CAP_MB} MB"
    assert_nothing_left(sandbox)
    assert_workers_fine(sandbox)
    assert_in_own_cgroups(sandbox)


def test_a_worker_killed_at_its_memory_cap_is_replaced_in_its_cgroup() -> None:
    with BwrapSandbox(workers=1, uid_base=63200, memory_cap_mb=160) as box:
        assert_in_own_cgroups(box)
        worker = set(live_processes(box.uids[0]))
        outcome = box.run(WORKER_KILLER, Limits(timeout_s=10.0))
        assert verdict(outcome) == ("crashed", "MemoryError")
        assert not worker & set(live_processes(box.uids[0]))  # a new worker
        assert_in_own_cgroups(box)
        assert_workers_fine(box)


def test_each_worker_has_a_cgroup_of_its_own_until_close(sandbox: BwrapSandbox) -> None:
    with BwrapSandbox(workers=2, uid_base=63300, memory_cap_mb=1024, max_tasks=40) as box:
        assert_in_own_cgroups(box)
        dirs = [path for group in box.cgroups for path in group.dirs]
        assert len(set(dirs)) == len(dirs) and not {group.memory for group in sandbox.cgroups} & set(dirs)
        for group in box.cgroups:
            assert (group.pids / "pids.max").read_text() == "40\n"
            caps = [group.memory / name for name in ("memory.max", "memory.limit_in_bytes")]
            assert [path.read_text() for path in caps if path.exists()] == [f"{1024 << 20}\n"]
    assert not any(path.exists() for path in dirs)


def test_huge_output_is_capped_and_drained(sandbox: BwrapSandbox) -> None:
    cap = Limits().output_bytes
    once = sandbox.run("print('x' * 10 ** 8)\nprint('done')")
    assert once.passed and once.truncated and once.output == "x" * cap
    endless = sandbox.run("while True:\n    print('spam' * 100)", FAST)
    assert verdict(endless) == ("timeout", "Timeout") and endless.truncated and len(endless.output) == cap
    small = sandbox.run("print('x' * 100)", Limits(output_bytes=10))
    assert small.passed and small.truncated and small.output == "x" * 10


def test_no_network_not_even_the_hosts_loopback(sandbox: BwrapSandbox) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        outcome = sandbox.run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)")
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody ever connected
    assert verdict(outcome) == ("failed", "ConnectionRefusedError")
    outside = sandbox.run("import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)")
    assert outside.status == "failed" and "unreachable" in outside.message


def test_host_files_are_out_of_reach(sandbox: BwrapSandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host data\n")
    sibling = tmp_path / "planted.txt"
    program = f"""
import os, shutil
attempts = {{
    "read": lambda: open({str(secret)!r}).read(),
    "overwrite": lambda: open({str(secret)!r}, "w").write("owned"),
    "delete": lambda: os.remove({str(secret)!r}),
    "create sibling": lambda: open({str(sibling)!r}, "w").write("planted"),
    "delete tree": lambda: shutil.rmtree({str(tmp_path)!r}),
    "read project": lambda: open({str(PROJECT / "README.md")!r}).read(),
    "list /root": lambda: os.listdir("/root"),
    "read /etc/passwd": lambda: open("/etc/passwd").read(),
    "write /usr": lambda: open("/usr/planted", "w"),
    "write /": lambda: open("/planted", "w"),
}}
reached = []
for name, attempt in attempts.items():
    try:
        attempt()
        reached.append(name)
    except OSError:
        pass
assert not reached, reached
"""
    outcome = sandbox.run(program)
    assert outcome.passed, outcome.message
    assert secret.read_text() == "host data\n" and sorted(tmp_path.iterdir()) == [secret]
    assert not Path("/usr/planted").exists()


def test_the_environment_is_empty(sandbox: BwrapSandbox) -> None:
    program = (
        "import os\n"
        f"assert {SECRET[0]!r} not in os.environ and {SECRET[1]!r} not in repr(os.environ)\n"
        "assert set(os.environ) <= {'PATH', 'PWD', 'LC_CTYPE'}, sorted(os.environ)\n"
    )
    assert sandbox.run(program).passed


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ("import os\nos.kill(os.getppid(), 9)", ("passed", None)),
        ("import os\nos.kill(1, 9)", ("passed", None)),
        ("import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)", ("passed", None)),
        ("import os, signal\nos.kill(-1, signal.SIGKILL)", ("failed", "ProcessLookupError")),  # nobody else to kill
    ],
)
def test_candidates_cannot_take_down_their_worker(
    sandbox: BwrapSandbox, program: str, expected: tuple[str, str | None]
) -> None:
    """The worker is pid 1 of its namespace: signals from inside do not reach it."""
    assert verdict(sandbox.run(program, FAST)) == expected
    assert_workers_fine(sandbox)
    assert_nothing_left(sandbox)


def test_a_worker_that_dies_or_hangs_is_replaced() -> None:
    """What a candidate cannot do to its worker, the host can: the pool notices and restarts it."""
    with BwrapSandbox(workers=1, uid_base=63100) as box:
        for sent, expected in ((signal.SIGKILL, ("crashed", "SandboxDied")), (signal.SIGSTOP, ("timeout", "Timeout"))):
            outcomes: list[Outcome] = []
            # the candidate's limit leaves a busy host room to start it before the signal; the signal waits for it
            running = threading.Thread(
                target=lambda out=outcomes: out.append(box.run("import time\ntime.sleep(30)", Limits(timeout_s=5.0))),
                daemon=True,
            )
            running.start()
            while len(live_processes(63100)) < 3 and running.is_alive():  # bwrap, its worker, the candidate
                time.sleep(0.01)
            worker = next(pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if _is_worker(pid, 63100))
            os.kill(worker, sent)
            running.join(timeout=30)
            assert verdict(outcomes[0]) == expected
            assert_workers_fine(box)
            assert_in_own_cgroups(box)  # the new worker went back into the old worker's group


def _is_worker(pid: int, uid: int) -> bool:
    """Whether `pid` is a live worker of `uid` (a python3 whose parent is bwrap, not a candidate)."""
    try:
        status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        parent = Path(f"/proc/{status['PPid']}/comm").read_text().strip()
    except (OSError, ValueError, KeyError):
        return False
    live = not status["State"].startswith("Z")
    return live and status["Name"] == "python3" and parent == "bwrap" and status["Uid"].split()[0] == str(uid)


def test_setsid_grandchildren_are_killed_after_the_candidate(sandbox: BwrapSandbox) -> None:
    assert sandbox.run(GRANDCHILD).passed
    assert_nothing_left(sandbox)
    clean = "import os\nassert os.listdir('/tmp') == [os.path.basename(os.getcwd())], os.listdir('/tmp')"
    assert [o.passed for o in sandbox.run_many([clean] * sandbox.workers)] == [True] * sandbox.workers


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ("import sys\nsys.exit(0)", ("failed", "SystemExit")),
        ("exit()", ("failed", "SystemExit")),
        ("raise SystemExit('bye')", ("failed", "SystemExit")),
        ("import os\nos._exit(0)", ("crashed", "Exited")),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", ("crashed", "Signal:SIGKILL")),
    ],
)
def test_leaving_early_is_never_a_pass(sandbox: BwrapSandbox, program: str, expected: tuple[str, str]) -> None:
    outcome = sandbox.run(program)
    assert verdict(outcome) == expected and not outcome.passed


def test_forked_children_do_not_report(sandbox: BwrapSandbox) -> None:
    program = "import os\nif os.fork() == 0:\n    raise RuntimeError('child')\nos.wait()\nprint('parent done')"
    outcome = sandbox.run(program)
    assert outcome.passed and outcome.output.endswith("parent done\n")


def test_run_many_keeps_the_order(sandbox: BwrapSandbox) -> None:
    programs = [f"print({i})\nassert {i} % 3, 'a multiple of three'" for i in range(200)]
    ticks: list[int] = []
    outcomes = sandbox.run_many(programs, progress=ticks.append)
    assert [o.output.split("\n")[0] for o in outcomes] == [str(i) for i in range(200)]
    assert [o.passed for o in outcomes] == [bool(i % 3) for i in range(200)]
    assert ticks == [1] * 200


def test_weak_fallback_runs_and_classifies() -> None:
    with open_sandbox(workers=1, mode="weak") as weak:
        assert weak.isolation == "weak"
        assert weak.run("print('ok')").output == "ok\n"
        assert verdict(weak.run("print(missing)")) == ("failed", "NameError")
        assert verdict(weak.run("import sys\nsys.exit(0)")) == ("failed", "SystemExit")
        assert verdict(weak.run("while True:\n    pass", FAST)) == ("timeout", "Timeout")
        assert weak.run(GRANDCHILD.replace("/tmp/ghost", "ghost")).passed
        assert sorted(live_processes(weak.uids[0]).values()) == ["python3"]  # the grandchild is gone


def test_auto_mode_chooses_bwrap_here() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", SandboxWarning)
        with open_sandbox(workers=1) as box:
            assert box.isolation == "bwrap" and box.run("assert True").passed
