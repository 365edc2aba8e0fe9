"""Benchmark of `pkg serve` over HTTP: start-up to first answer, warm latency with concurrent clients, RSS.

Builds a standard-library slice with `pkg build`, starts `pkg serve --http` on a free loopback port
(with a bearer token), and measures with the MCP SDK's own client: seconds from launch to the first
`search` answer; per-call latency p50/p95 of `search` (mode func, k 3, pruned) for one client and
for --clients concurrent clients; the server's resident memory (now and peak); and, for contrast,
one cold `pkg query` process. Every query text is new (a task plus a case number), so no answer
comes from the embedding cache. Writes JSON to bench/results/.

    python bench/bench_serve.py [--modules 40] [--clients 8] [--queries 25] [--db DIR] [--out bench/results]
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import httpx2
from harness import ROOT, bench_parser, machine, percentile, utc_now, write_result
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TOKEN = "bench-token"
QUERIES = [
    "parse a JSON document from a string",
    "serialize a Python object to JSON text",
    "wrap a paragraph of text to a given width",
    "remove common leading whitespace from lines",
    "find the insertion point in a sorted list",
    "push an item onto a heap and pop the smallest",
    "merge several sorted inputs into one sorted output",
    "return the n largest elements of a collection",
    "split a path into directory and file name",
    "compare two sequences and report their differences",
    "encode bytes as base64 text",
    "read a configuration file with sections",
    "format a number with thousands separators",
    "copy a file and its permissions",
    "match a file name against a shell pattern",
    "compute the greatest common divisor of two integers",
]


def query_text(client_no: int, call_no: int) -> str:
    """A task no other call asks, so that its embedding is computed, never read from the cache."""
    return f"{QUERIES[(client_no * 5 + call_no) % len(QUERIES)]} (case {client_no}.{call_no}.{time.time_ns()})"


def stdlib_modules(count: int) -> list[Path]:
    """The first `count` top-level standard-library modules, by name."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.glob("*.py") if not p.name.startswith("_"))[:count]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mib(pid: int) -> dict[str, float]:
    """Resident memory of a process now and at its peak, in MiB (Linux /proc)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {key: int(fields[name].split()[0]) / 1024 for key, name in (("rss", "VmRSS"), ("peak", "VmHWM"))}


def client(url: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(60, read=300))
    return Client(streamable_http_client(url, http_client=http))


async def first_answer(url: str, deadline: float) -> None:
    """Retry until the server answers a search."""
    while True:
        try:
            async with client(url) as mcp:
                result = await mcp.call_tool("search", {"text": query_text(-1, 0), "k": 3})
                if result.is_error:
                    raise RuntimeError(f"search failed: {result.content}")
                return
        except (OSError, httpx2.HTTPError, BaseExceptionGroup):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def run_client(url: str, queries: list[str]) -> list[float]:
    """Per-call seconds of one client issuing the queries in turn on one session."""
    seconds = []
    async with client(url) as mcp:
        for text in queries:
            started = time.perf_counter()
            result = await mcp.call_tool("search", {"text": text, "k": 3})
            seconds.append(time.perf_counter() - started)
            if result.is_error:
                raise RuntimeError(f"search failed: {result.content}")
    return seconds


async def load(url: str, clients: int, per_client: int) -> tuple[list[float], float]:
    """Latencies of every call of `clients` concurrent clients, and the wall time of them all."""
    plans = [[query_text(c, i) for i in range(per_client)] for c in range(clients)]
    started = time.perf_counter()
    runs = await asyncio.gather(*(run_client(url, plan) for plan in plans))
    return [s for run in runs for s in run], time.perf_counter() - started


def summary(seconds: list[float], wall: float) -> dict[str, float]:
    return {
        "calls": len(seconds),
        "p50_ms": percentile(seconds, 50) * 1000,
        "p95_ms": percentile(seconds, 95) * 1000,
        "mean_ms": sum(seconds) / len(seconds) * 1000,
        "calls_per_s": len(seconds) / wall,
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--modules", type=int, default=40)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--queries", type=int, default=25, help="Calls per client.")
    parser.add_argument("--db", type=Path, default=None, help="Keep the database here (rebuilt incrementally).")
    args = parser.parse_args()

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(prefix="pkg-bench-serve-") as tmp:
        db = args.db or Path(tmp) / "db"
        pkg = [sys.executable, "-m", "pkg"]
        started = time.perf_counter()
        subprocess.run(
            [*pkg, "build", *map(str, stdlib_modules(args.modules)), "--db", str(db)],
            check=True,
            env=env,
            capture_output=True,
        )
        build_s = time.perf_counter() - started
        stats = subprocess.run(
            [*pkg, "stats", "--db", str(db), "--format", "json"], check=True, env=env, capture_output=True, text=True
        ).stdout

        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        launched = time.perf_counter()
        server = subprocess.Popen(
            [*pkg, "serve", "--db", str(db), "--http", f"127.0.0.1:{port}", "--token", TOKEN],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            asyncio.run(first_answer(url, time.monotonic() + 300))
            startup_s = time.perf_counter() - launched
            memory_started = rss_mib(server.pid)
            single = asyncio.run(load(url, 1, args.queries))
            concurrent = asyncio.run(load(url, args.clients, args.queries))
            memory_loaded = rss_mib(server.pid)
        finally:
            server.terminate()
            server.wait(timeout=60)

        started = time.perf_counter()
        subprocess.run(
            [*pkg, "query", query_text(-2, 0), "--db", str(db), "-k", "3"], check=True, env=env, capture_output=True
        )
        cold_query_s = time.perf_counter() - started

    result = {
        "benchmark": "serve",
        "when": utc_now(),
        "machine": machine(),
        "corpus": {"stdlib_modules": args.modules, "build_s": build_s, "stats": stats.strip()},
        "transport": "streamable-http, loopback, bearer token",
        "tool": "search (mode func, k 3, pruned)",
        "startup_to_first_answer_s": startup_s,
        "one_client": summary(*single),
        "concurrent_clients": args.clients,
        "concurrent": summary(*concurrent),
        "server_rss_mib": {"after_start": memory_started, "after_load": memory_loaded},
        "cold_pkg_query_s": cold_query_s,
    }
    path = write_result(args.out, "serve", result)
    print(
        f"start-up to first answer {startup_s:.1f} s; one client p50 {result['one_client']['p50_ms']:.0f} ms; "
        f"{args.clients} clients p50 {result['concurrent']['p50_ms']:.0f} ms "
        f"p95 {result['concurrent']['p95_ms']:.0f} ms "
        f"({result['concurrent']['calls_per_s']:.1f} calls/s); RSS {memory_loaded['rss']:.0f} MiB; "
        f"cold pkg query {cold_query_s:.1f} s -> {path}"
    )


if __name__ == "__main__":
    main()
