"""Cold `pkg query`: wall and CPU time of a whole `pkg query` process per mode, and the imports of one,
this checkout against an earlier commit.

The database is `make demo`'s (its corpus: a slice of the standard library and the README), built
once with this checkout into --work unless it is there. Each checkout (this one, and --before's
files, taken with `git archive`) gets its own copy of the build's cache folder (embedding cache and
exported models), so that no checkout finds a query another one embedded; within a checkout every
run asks a different question (the first lines of the corpus's docstrings), so none is answered
from the cache. Modes func and hybrid embed the query; bm25-func does not (the floor: starting
Python and the CLI, opening the store and the index). One more func query per checkout runs under
`python -X importtime`: how many modules it imports and how long they took, by top-level package.

    python bench/bench_cold_query.py [--before 0774e63] [--runs 5] [--work DIR]
"""

from __future__ import annotations

import ast
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpora import STDLIB  # noqa: E402
from bench.harness import bench_parser, machine, utc_now, write_result  # noqa: E402

DEMO_CORPUS = [
    *(STDLIB / name for name in ("json", "textwrap.py", "heapq.py", "bisect.py", "statistics.py")),
    *(STDLIB / name for name in ("difflib.py", "shlex.py", "fractions.py")),
    ROOT / "README.md",
]
MODES = ("func", "hybrid", "bm25-func")


def questions(count: int) -> list[str]:
    """`count` distinct first docstring lines (over 20 characters) of the demo corpus's functions."""
    found: list[str] = []
    for path in sorted(p for root in DEMO_CORPUS if root.suffix != ".md" for p in [root, *root.rglob("*.py")]):
        if path.is_dir():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            doc = ast.get_docstring(node) if isinstance(node, ast.FunctionDef) else None
            line = doc.strip().split("\n")[0] if doc else ""
            if len(line) > 20 and line not in found:
                found.append(line)
    if len(found) < count:
        raise SystemExit(f"the demo corpus has only {len(found)} questions")
    return found[:count]


def pkg(pythonpath: Path, cache: Path, *args: str, python: tuple[str, ...] = ()) -> tuple[float, float, str]:
    """Run `python [PYTHON] -m pkg ARGS` with that checkout first on the path: its wall time and CPU time
    (user + system; on a shared machine the wall time also counts the waits for a core), in seconds, and
    its standard error."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "PKG_CACHE_DIR": str(cache)}
    cpu_before = _children_cpu()
    started = time.perf_counter()
    # in the checkout's folder: `python -m` puts the working directory first on the path
    command = [sys.executable, *python, "-m", "pkg", *args]
    done = subprocess.run(command, cwd=pythonpath, capture_output=True, text=True, env=env, timeout=900)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"pkg {' '.join(args)} failed: {done.stderr}")
    return seconds, _children_cpu() - cpu_before, done.stderr


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def import_profile(pythonpath: Path, cache: Path, db: Path, question: str) -> dict:
    """`python -X importtime` of one func query: the modules imported, their summed self times, and the
    ten top-level packages that took longest (seconds)."""
    args = ("query", question, "--db", str(db), "--mode", "func", "-k", "3")
    stderr = pkg(pythonpath, cache, *args, python=("-X", "importtime"))[2]
    by_package: Counter[str] = Counter()
    for line in stderr.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if line.startswith("import time:") and fields[0].strip().isdigit():
            by_package[fields[2].strip().split(".")[0]] += int(fields[0]) / 1e6
    top = {name: round(s, 3) for name, s in by_package.most_common(10)}
    return {
        "modules": sum(1 for line in stderr.splitlines() if line.startswith("import time:")) - 1,
        "self_s": round(sum(by_package.values()), 3),
        "top_packages_s": top,
    }


def checkout(ref: str, into: Path) -> Path:
    """The files of commit `ref`, extracted into `into`."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def measure(checkouts: dict[str, Path], db: Path, build_cache: Path, asked: list[str], runs: int) -> dict:
    """Wall seconds of each run per checkout and mode, and their median; the checkouts take turns
    query by query, so that both see the same load of the shared machine."""
    wall: dict[str, dict[str, list[float]]] = {name: {mode: [] for mode in MODES} for name in checkouts}
    cpu: dict[str, dict[str, list[float]]] = {name: {mode: [] for mode in MODES} for name in checkouts}
    with tempfile.TemporaryDirectory(prefix="pkg-cold-") as scratch:
        caches = {name: shutil.copytree(build_cache, Path(scratch) / name) for name in checkouts}
        for index, mode in enumerate(MODES):
            for q in asked[index * runs : (index + 1) * runs]:
                for name, pythonpath in checkouts.items():
                    args = ("query", q, "--db", str(db), "--mode", mode, "-k", "3")
                    seconds, cpu_seconds, _ = pkg(pythonpath, caches[name], *args)
                    wall[name][mode].append(round(seconds, 2))
                    cpu[name][mode].append(round(cpu_seconds, 2))
            print(mode, {name: (wall[name][mode], cpu[name][mode]) for name in checkouts}, file=sys.stderr, flush=True)
        profiles = {name: import_profile(path, caches[name], db, asked[-1]) for name, path in checkouts.items()}
    return {
        name: {
            "imports": profiles[name],
            **{
                mode: {
                    "median_s": statistics.median(wall[name][mode]),
                    "median_cpu_s": statistics.median(cpu[name][mode]),
                    "runs_s": wall[name][mode],
                    "runs_cpu_s": cpu[name][mode],
                }
                for mode in MODES
            },
        }
        for name in checkouts
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--before", default="0774e63", help="the commit to compare with")
    parser.add_argument("--runs", type=int, default=5, help="queries per mode and checkout")
    parser.add_argument("--work", type=Path, default=Path("/tmp/pkg-bench-cold"))
    args = parser.parse_args()
    db, build_cache = args.work / "db", args.work / "cache"
    if not db.exists():
        build_seconds = pkg(ROOT, build_cache, "build", *map(str, DEMO_CORPUS), "--db", str(db))[0]
        print(f"built in {build_seconds:.0f} s", file=sys.stderr, flush=True)
    asked = questions(len(MODES) * args.runs + 1)  # the last one for the import profile
    with tempfile.TemporaryDirectory(prefix="pkg-before-") as scratch:
        checkouts = {"before": checkout(args.before, Path(scratch) / "before"), "after": ROOT}
        started = machine()
        seconds = measure(checkouts, db, build_cache, asked, args.runs)
    result = {"when": utc_now(), "machine": started, "machine_at_end": machine(), "before": args.before}
    result |= {"modes": MODES, "seconds": seconds}
    print(write_result(args.out, "cold-query", result))


if __name__ == "__main__":
    main()
