"""Benchmark of `pkg serve` over HTTP: start-up to first answer, warm latency with concurrent clients, RSS,
and how soon an edit is found with --watch.

Builds a standard-library corpus with `pkg build` (`--embedder`, default MiniLM) — by default the
20k-function one bench_stores.py measures (`--functions`), or the first `--modules` top-level
modules — into a database kept under /tmp (`--db`; a second run finds every file unchanged), starts
`pkg serve --http` on a free loopback port (with a bearer token), and measures with the MCP SDK's
own client: seconds from launch to the first `search` answer; per-call latency p50/p95 of `search`
(k 3, pruned) in modes func and block, for one client and for --clients concurrent clients, each
issuing its calls back to back, with the CPU each call cost the server and the clients (on two
cores, what bounds calls per second); the same queries answered in-process by a KnowledgeBase, for
the share of MCP and HTTP; the server's resident memory (now and peak). Every query text is new (a
task plus a case number), so no answer comes from the embedding cache. Then, on a copy of the
Makefile's DEMO_CORPUS served with `--watch`: seconds from saving a new function into one file until
`search` finds it among its first three hits. And one cold `pkg query` process, for contrast. Writes
JSON to bench/results/.

    python bench/bench_serve.py [--functions 20000 | --modules 40] [--clients 8] [--queries 25]
        [--db DIR] [--edits 5] [--embedder SPEC] [--out bench/results]
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).parent), str(ROOT)]
from corpora import stdlib_corpus  # noqa: E402
from harness import bench_parser, cpu_seconds, machine, percentile, utc_now, write_result  # noqa: E402

from pkg.embedders import DEFAULT_SPEC, SPEC_HELP  # noqa: E402
from pkg.knowledge_base import KnowledgeBase  # noqa: E402
from pkg.server import MODEL_THREADS  # noqa: E402
from retrieval.search import Options  # noqa: E402

TOKEN = "bench-token"
MODES = ("func", "block")
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
#: Functions saved into the watched corpus, one per edit, each with the query that should find it.
EDITS = [
    (
        "celsius_to_fahrenheit",
        "def {name}(celsius):\n    return celsius * 9 / 5 + 32\n",
        "convert celsius to fahrenheit",
    ),
    ("kilometres_to_miles", "def {name}(km):\n    return km * 0.621371\n", "convert kilometres to miles"),
    (
        "count_vowels",
        "def {name}(text):\n    return sum(c in 'aeiou' for c in text.lower())\n",
        "count the vowels in text",
    ),
    ("is_palindrome", "def {name}(word):\n    return word == word[::-1]\n", "check whether a word is a palindrome"),
    (
        "seconds_to_hms",
        "def {name}(s):\n    return s // 3600, s % 3600 // 60, s % 60\n",
        "split seconds into hours minutes",
    ),
]
# An edit counts as found once the new function is among the first three hits: with the fast profile
# "split seconds into hours minutes" never ranks seconds_to_hms first on the demo corpus.
FOUND_WITHIN = 3
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
PKG = [sys.executable, "-m", "pkg"]


def query_text(client_no: int, call_no: int) -> str:
    """A task no other call asks, so that its embedding is computed, never read from the cache."""
    return f"{QUERIES[(client_no * 5 + call_no) % len(QUERIES)]} (case {client_no}.{call_no}.{time.time_ns()})"


def stdlib_modules(count: int) -> list[Path]:
    """The first `count` top-level standard-library modules, by name."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.glob("*.py") if not p.name.startswith("_"))[:count]


def demo_corpus() -> list[Path]:
    """The Makefile's DEMO_CORPUS: standard-library files and folders, and the README."""
    found = re.search(
        r"^DEMO_CORPUS := \$\(addprefix \$\(STDLIB\)/,([^)]*)\)(.*)$", (ROOT / "Makefile").read_text(), re.M
    )
    if found is None:
        raise SystemExit("no DEMO_CORPUS line in the Makefile")
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return [stdlib / name for name in found[1].split()] + [ROOT / name for name in found[2].split()]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mib(pid: int) -> dict[str, float]:
    """Resident memory of a process now and at its peak, in MiB (Linux /proc)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {key: int(fields[name].split()[0]) / 1024 for key, name in (("rss", "VmRSS"), ("peak", "VmHWM"))}


def load_now() -> float:
    return os.getloadavg()[0]


def client(url: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(60, read=300))
    return Client(streamable_http_client(url, http_client=http))


def pkg_build(paths: Sequence[Path], db: Path, embedder: str = DEFAULT_SPEC) -> float:
    started = time.perf_counter()
    command = [*PKG, "build", *map(str, paths), "--db", str(db), "--embedder", embedder]
    subprocess.run(command, check=True, env=ENV, capture_output=True)
    return time.perf_counter() - started


@contextmanager
def serving(db: Path, *extra: str) -> Iterator[tuple[str, subprocess.Popen[bytes], float]]:
    """`pkg serve --http` on a free port: its URL, its process and the seconds to its first answer."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    launched = time.perf_counter()
    server = subprocess.Popen(
        [*PKG, "serve", "--db", str(db), "--http", f"127.0.0.1:{port}", "--token", TOKEN, *extra],
        env=ENV,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        asyncio.run(first_answer(url, time.monotonic() + 300))
        yield url, server, time.perf_counter() - launched
    finally:
        server.terminate()
        server.wait(timeout=60)


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


async def run_client(url: str, mode: str, queries: list[str]) -> list[float]:
    """Per-call seconds of one client issuing the queries in turn on one session."""
    seconds = []
    async with client(url) as mcp:
        for text in queries:
            started = time.perf_counter()
            result = await mcp.call_tool("search", {"text": text, "mode": mode, "k": 3})
            seconds.append(time.perf_counter() - started)
            if result.is_error:
                raise RuntimeError(f"search failed: {result.content}")
    return seconds


async def load(url: str, mode: str, clients: int, per_client: int) -> tuple[list[float], float]:
    """Latencies of every call of `clients` concurrent clients, and the wall time of them all."""
    plans = [[query_text(c, i) for i in range(per_client)] for c in range(clients)]
    started = time.perf_counter()
    runs = await asyncio.gather(*(run_client(url, mode, plan) for plan in plans))
    return [s for run in runs for s in run], time.perf_counter() - started


def measured(url: str, mode: str, clients: int, per_client: int, server_pid: int) -> dict[str, float]:
    """summary() of one load, with the CPU each call cost the server and the clients (this process):
    on two cores, calls per second can never pass 2 / (server + client CPU per call)."""
    server_before, client_before = cpu_seconds(server_pid), time.process_time()
    seconds, wall = asyncio.run(load(url, mode, clients, per_client))
    calls = len(seconds)
    return summary(seconds, wall) | {
        "server_cpu_ms_per_call": (cpu_seconds(server_pid) - server_before) / calls * 1000,
        "client_cpu_ms_per_call": (time.process_time() - client_before) / calls * 1000,
    }


def summary(seconds: list[float], wall: float) -> dict[str, float]:
    return {
        "calls": len(seconds),
        "p50_ms": percentile(seconds, 50) * 1000,
        "p95_ms": percentile(seconds, 95) * 1000,
        "mean_ms": sum(seconds) / len(seconds) * 1000,
        "calls_per_s": len(seconds) / wall,
        "load": load_now(),
    }


def in_process(db: Path, queries: int) -> dict[str, dict[str, float]]:
    """The same searches answered by a KnowledgeBase in this process, one at a time (no MCP, no HTTP)."""
    import torch

    figures = {}
    with KnowledgeBase(db) as kb:
        kb.embedder.embed_query("warm up the model")
        torch.set_num_threads(MODEL_THREADS)  # as the server runs its model
        for mode in MODES:
            for i in range(3):
                kb.query(query_text(-3, i), mode, 3, Options(with_pruning=True))
            seconds = []
            for i in range(queries):
                started = time.perf_counter()
                kb.query(query_text(-4, i), mode, 3, Options(with_pruning=True))
                seconds.append(time.perf_counter() - started)
            figures[mode] = summary(seconds, sum(seconds))
    return figures


def edit_to_found(db_dir: Path, edits: int, embedder: str) -> dict[str, object]:
    """Seconds from saving a new function into a file of a copy of the demo corpus until the watching
    server's `search` has it among its first hits, for each of `edits` edits; and the edits `search`
    did not rank there within a minute, each with whether `get_function` finds it by name (then the
    index has it and the embedder's ranking missed it)."""
    corpus = db_dir / "corpus"
    for path in demo_corpus():
        copy = shutil.copytree if path.is_dir() else shutil.copy2
        copy(path, corpus / path.name)
    build_s = pkg_build([corpus], db_dir / "db", embedder)
    edited = corpus / "heapq.py"
    seconds: list[float] = []
    not_found: dict[str, bool] = {}
    with serving(db_dir / "db", "--watch", str(corpus), "--root", str(corpus)) as (url, _, _):
        time.sleep(3)  # the watcher's first (no-op) build
        for name, template, query in EDITS[:edits]:
            found_s = asyncio.run(save_and_find(url, edited, name, template.format(name=name), query))
            if found_s is None:
                not_found[name] = asyncio.run(indexed(url, name))
            else:
                seconds.append(found_s)
    return {
        "corpus": [p.name for p in demo_corpus()],
        "build_s": build_s,
        "edited_file": edited.name,
        "seconds": seconds,
        "p50_s": percentile(seconds, 50) if seconds else None,
        "max_s": max(seconds, default=None),
        "not_found_by_search_but_indexed": not_found,
    }


async def indexed(url: str, name: str) -> bool:
    """Whether `get_function` finds a function of this name."""
    async with client(url) as mcp:
        result = await mcp.call_tool("get_function", {"name": name})
    return not result.is_error and bool((result.structured_content or {}).get("functions"))


async def save_and_find(url: str, path: Path, name: str, code: str, query: str, timeout: float = 60) -> float | None:
    async with client(url) as mcp:
        saved = time.perf_counter()
        path.write_text(path.read_text() + "\n\n" + code)
        while time.perf_counter() - saved < timeout:
            result = await mcp.call_tool("search", {"text": query, "k": FOUND_WITHIN})
            found = [] if result.is_error else (result.structured_content or {})["results"]
            if name in [row["name"] for row in found]:
                return time.perf_counter() - saved
            await asyncio.sleep(0.02)
    return None


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--functions", type=int, default=20000, help="bench_stores.py's corpus of this many.")
    parser.add_argument("--modules", type=int, default=None, help="Instead: the first N top-level modules.")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--queries", type=int, default=25, help="Calls per client and mode.")
    parser.add_argument("--edits", type=int, default=len(EDITS), help="Edits timed on the watched demo corpus.")
    parser.add_argument("--db", type=Path, default=None, help="Where the database is kept (rebuilt incrementally).")
    parser.add_argument("--note", default="", help="Recorded as is (e.g. what else ran on the machine).")
    parser.add_argument("--embedder", default=DEFAULT_SPEC, help=f"Embedder the graphs are built with: {SPEC_HELP}")
    args = parser.parse_args()

    suffix = "" if args.embedder == DEFAULT_SPEC else f"-{args.embedder}"
    if args.modules:
        files, corpus = stdlib_modules(args.modules), {"stdlib_modules": args.modules}
        db = args.db or Path(tempfile.gettempdir()) / "pkg-bench-serve" / f"modules-{args.modules}{suffix}"
    else:
        files, found = stdlib_corpus(args.functions)
        corpus = {"stdlib_functions_asked": args.functions, "ast_functions": found, "files": len(files)}
        db = args.db or Path(tempfile.gettempdir()) / "pkg-bench-serve" / f"stdlib-{args.functions}{suffix}"
    build_s = pkg_build(files, db, args.embedder)
    stats = subprocess.run(
        [*PKG, "stats", "--db", str(db), "--format", "json"], check=True, env=ENV, capture_output=True, text=True
    ).stdout
    load_before = load_now()
    with serving(db) as (url, server, startup_s):
        memory_started = rss_mib(server.pid)
        latency = {
            mode: {
                "one_client": measured(url, mode, 1, args.queries, server.pid),
                "concurrent": measured(url, mode, args.clients, args.queries, server.pid),
            }
            for mode in MODES
        }
        memory_loaded = rss_mib(server.pid)
    local = in_process(db, args.queries)
    edits: dict[str, object] = {}
    if args.edits:
        with tempfile.TemporaryDirectory(prefix="pkg-bench-watch-") as tmp:
            edits = edit_to_found(Path(tmp), args.edits, args.embedder)
    started = time.perf_counter()
    subprocess.run(
        [*PKG, "query", query_text(-2, 0), "--db", str(db), "-k", "3"], check=True, env=ENV, capture_output=True
    )
    cold_query_s = time.perf_counter() - started

    result = {
        "benchmark": "serve",
        "when": utc_now(),
        "machine": machine() | {"load_before": load_before},
        "note": args.note,
        "corpus": corpus | {"db": str(db), "build_s": build_s, "stats": stats.strip()},
        "transport": "streamable-http, loopback, bearer token",
        "embedder": args.embedder,
        "tool": "search (k 3, pruned), every query text new",
        "startup_to_first_answer_s": startup_s,
        "concurrent_clients": args.clients,
        "latency": latency,
        "in_process": local,
        "server_rss_mib": {"after_start": memory_started, "after_load": memory_loaded},
        "edit_to_found": edits,
        "cold_pkg_query_s": cold_query_s,
    }
    path = write_result(args.out, "serve", result)
    for mode in MODES:
        one, many = latency[mode]["one_client"], latency[mode]["concurrent"]
        print(
            f"{mode}: one client p50 {one['p50_ms']:.0f} ms p95 {one['p95_ms']:.0f} ms; {args.clients} clients "
            f"p50 {many['p50_ms']:.0f} ms p95 {many['p95_ms']:.0f} ms ({many['calls_per_s']:.1f} calls/s, "
            f"CPU per call {many['server_cpu_ms_per_call']:.0f} ms server "
            f"+ {many['client_cpu_ms_per_call']:.0f} ms clients); "
            f"in-process p50 {local[mode]['p50_ms']:.0f} ms"
        )
    edit_line = ""
    if edits and edits["seconds"]:
        edit_line = f"; edit found after {edits['p50_s']:.2f} s (p50, max {edits['max_s']:.2f} s)"
    if edits and edits["not_found_by_search_but_indexed"]:
        edit_line += f", not ranked: {edits['not_found_by_search_but_indexed']}"
    print(
        f"start-up to first answer {startup_s:.1f} s; RSS {memory_loaded['rss']:.0f} MiB{edit_line}; "
        f"cold pkg query {cold_query_s:.1f} s -> {path}"
    )


if __name__ == "__main__":
    main()
