"""Definitions context's cost: `context_at` per call, warm and cold, on the ~20k-function standard-library
graph, and what reading the class and constant stubs adds to a build.

Positions are functions of the corpus drawn with a fixed seed, each asked at its last line (the code at
hand read from the file, as `pkg context PATH:LINE` does). The first call of a process builds the
tables (the Linker over the store's FILE, CLASS and NAME nodes): that is the cold figure; the rest are
warm. A second pass over the same positions times the signature cache warm too. The build's added cost is
the parse stage run with and without the stubs, against the whole build's time with the chosen embedder
(the default MiniLM, or `--embedder static` for a quick run). Writes JSON to bench/results/.

    python bench/bench_context.py [--functions 20000] [--calls 300] [--embedder minilm] [--db DIR]
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).parent), str(ROOT)]
from corpora import stdlib_corpus  # noqa: E402
from harness import bench_parser, machine, percentile, utc_now, write_result  # noqa: E402

import ingest.structure  # noqa: E402
from ingest.parse import parse_corpus  # noqa: E402
from pkg.graph import Label  # noqa: E402
from pkg.knowledge_base import KnowledgeBase  # noqa: E402
from pkg.schema import NameNode  # noqa: E402

SEED = 20261127


def parse_seconds(files: list[Path], with_stubs: bool) -> float:
    """The parse stage over the files, with or without reading the class and constant stubs."""
    empty = {"classes": {}, "constants": {}}
    patches = (
        []
        if with_stubs
        else [
            mock.patch.object(ingest.structure, "python_stubs", lambda text: empty),
            mock.patch.object(ingest.structure, "first_lines", lambda text, classes: empty),
        ]
    )
    for patch in patches:
        patch.start()
    try:
        started = time.perf_counter()
        parse_corpus(files)
        return time.perf_counter() - started
    finally:
        for patch in patches:
            patch.stop()


def timed_calls(kb: KnowledgeBase, positions: list[tuple[str, int]]) -> tuple[list[float], list[dict]]:
    seconds, answers = [], []
    for path, line in positions:
        started = time.perf_counter()
        found = kb.context_at(path, line)
        seconds.append(time.perf_counter() - started)
        answers.append({"definitions": len(found.definitions), "tokens": found.tokens, "gated": found.gated})
    return seconds, answers


def summary(seconds: list[float]) -> dict:
    ms = [s * 1000 for s in seconds]
    return {
        "calls": len(ms),
        "mean_ms": round(statistics.fmean(ms), 2),
        "p50_ms": round(percentile(ms, 50), 2),
        "p95_ms": round(percentile(ms, 95), 2),
        "max_ms": round(max(ms), 2),
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--functions", type=int, default=20000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--db", type=Path, default=None, help="Build into (or reuse) this database.")
    args = parser.parse_args()
    files, functions = stdlib_corpus(args.functions)
    db = args.db or Path(tempfile.mkdtemp(prefix="pkg-bench-context-")) / "db"
    result: dict = {"started": utc_now(), "machine": machine(), "corpus": {"files": len(files), "functions": functions}}

    parse_with, parse_without = parse_seconds(files, True), parse_seconds(files, False)
    with KnowledgeBase(db, embedder=args.embedder) as kb:
        fresh = not kb.exists
        started = time.perf_counter()
        kb.build(files)
        build_s = time.perf_counter() - started
        result["build"] = {
            "embedder": args.embedder,
            "seconds": round(build_s, 1),
            "fresh": fresh,
            "parse_s_with_stubs": round(parse_with, 2),
            "parse_s_without_stubs": round(parse_without, 2),
            "stubs_share_of_build": round((parse_with - parse_without) / build_s, 4) if fresh else None,
        }
        names = [n for n in kb.store.label_records(Label.NAME) if isinstance(n, NameNode) and n.row is None]
        picks = random.Random(SEED).sample(names, min(args.calls, len(names)))
        positions = [(n.source, n.end_line) for n in picks]
        cold, first = timed_calls(kb, positions[:1])
        warm, answers = timed_calls(kb, positions[1:])
        again, _ = timed_calls(kb, positions[1:])
    given = [a for a in answers if not a["gated"]]
    result |= {
        "cold_first_call_ms": round(cold[0] * 1000, 1),
        "warm": summary(warm),
        "warm_again": summary(again),
        "answers": {
            "with_context": len(given),
            "gated": len(answers) - len(given),
            "mean_definitions": round(statistics.fmean(a["definitions"] for a in given), 2) if given else 0,
            "mean_tokens": round(statistics.fmean(a["tokens"] for a in given), 1) if given else 0,
        },
        "finished": utc_now(),
        "load_after": machine()["load"],
    }
    print(write_result(args.out, "context", result))


if __name__ == "__main__":
    main()
