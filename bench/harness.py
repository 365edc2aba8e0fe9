"""What every benchmark script shares: the results folder, timestamps, percentiles, a Neo4j to run on."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def utc_now() -> str:
    """The current UTC time, to the second, in ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def machine() -> dict:
    """What the figures were measured on: cores, Python, the load when measured and the generation
    runs sharing the CPU."""
    return {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "load": os.getloadavg()[0],
        "beside": generation_runs(),
    }


def generation_runs() -> list[dict]:
    """The `pkg generate` and `pkg compare` processes running now (each one's pid, command and whether
    it is paused): CPU-bound work that slows a bench beside it."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            words = [w.decode(errors="replace") for w in (proc / "cmdline").read_bytes().split(b"\0") if w]
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if len(words) > 2 and Path(words[1]).name == "pkg" and words[2] in ("generate", "compare"):
            found.append({"pid": int(proc.name), "command": " ".join(words[1:]), "paused": state == "T"})
    return found


def provenance() -> dict:
    """What produced a result: the command line, and the commit of the checkout (dirty when it has
    uncommitted changes; None outside a git checkout)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)
        except OSError:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "command": [Path(sys.argv[0]).name, *sys.argv[1:]],
        "commit": git("rev-parse", "HEAD"),
        "dirty": None if status is None else bool(status),
    }


def write_result(out_dir: Path, name: str, result: dict) -> Path:
    """Write `result`, with its provenance, as indented JSON to `out_dir/<name>-<UTC timestamp>.json`;
    return the path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps({**result, "provenance": provenance()}, indent=2) + "\n", encoding="utf-8")
    return path


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of `values`, linearly interpolated."""
    return float(np.percentile(np.asarray(values, dtype=float), q))


@contextmanager
def neo4j_database() -> Iterator[tuple[str, int | None, Path | None]]:
    """(Bolt URI, server pid, server home): NEO4J_URI if set (the caller wipes it; no pid, no home),
    else a fresh local Neo4j started with docker/neo4j-start.sh for the run and stopped after it."""
    from tests.neo4j_server import start_local

    if os.environ.get("NEO4J_URI"):
        yield os.environ["NEO4J_URI"], None, None
        return
    with tempfile.TemporaryDirectory(prefix="pkg-neo4j-bench-") as home:
        server = start_local(Path(home))
        try:
            yield server.uri, server.pid, Path(home)
        finally:
            server.stop()


def bench_parser(doc: str | None, functions: int | None = None) -> argparse.ArgumentParser:
    """An argument parser described by the script's first docstring line, with --out (default RESULTS)
    and, given a default size, --functions: how many standard-library functions the corpus holds."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    if functions is not None:
        parser.add_argument(
            "--functions", type=int, default=functions, help=f"standard-library functions (default {functions})"
        )
    return parser
