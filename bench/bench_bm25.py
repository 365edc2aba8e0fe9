"""BM25 index build time and query latency per 1M characters of corpus, for rows and functions.

The JetBrains study of retrieval for code completion reports BM25 with word splitting at about
0.2 s per 1M symbols; this measures ours (bm25s + code_tokens) on real code.

    python bench/bench_bm25.py [--functions 20000] [--queries 300]
"""

from __future__ import annotations

import ast
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from corpora import stdlib_corpus  # noqa: E402
from harness import bench_parser, machine, percentile, utc_now, write_result  # noqa: E402

from ingest.parse import parse_corpus  # noqa: E402
from pkg.graph import Label  # noqa: E402
from retrieval.bm25 import BM25Index  # noqa: E402
from retrieval.tokenize import code_tokens  # noqa: E402


def measure(ids: list[str], texts: list[str], queries: list[str], repeats: int = 3) -> dict:
    chars = sum(len(t) for t in texts)
    tokenize_s = min(_timed(lambda: [code_tokens(t) for t in texts]) for _ in range(repeats))
    build_s = min(_timed(lambda: BM25Index.build(ids, texts)) for _ in range(repeats))
    index = BM25Index.build(ids, texts)
    latencies = []
    for query in queries:
        started = time.perf_counter()
        index.search(query, 10)
        latencies.append((time.perf_counter() - started) * 1000)
    per_m = 1_000_000 / chars
    return {
        "documents": len(texts),
        "characters": chars,
        "tokenize_s_per_1m_chars": tokenize_s * per_m,
        "build_s_per_1m_chars": build_s * per_m,
        "build_s": build_s,
        "query_ms": {"queries": len(latencies), "p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
    }


def _timed(work: object) -> float:
    started = time.perf_counter()
    work()  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    parser = bench_parser(__doc__, functions=20000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    files, _ = stdlib_corpus(args.functions)
    corpus = parse_corpus(files, parts=("functions", "rows"))
    units = {
        "rows": [(n.id, n.props["text"]) for n in corpus.nodes if n.label is Label.ROW],
        "func": [(n.id, n.props["text"]) for n in corpus.nodes if n.label is Label.IMPL],
    }
    docs = [ast.get_docstring(ast.parse(text).body[0]) for _, text in units["func"]]
    queries = list(dict.fromkeys(d.split("\n")[0] for d in docs if d))[: args.queries]
    result = {
        "benchmark": "BM25 (bm25s + code_tokens)",
        "date": utc_now(),
        "machine": machine(),
        "reference": "JetBrains study: BM25 with word splitting, about 0.2 s per 1M symbols",
        "units": {},
    }
    for unit, documents in units.items():
        ids, texts = (list(x) for x in zip(*documents))
        result["units"][unit] = measure(ids, texts, queries)
        print(unit, json.dumps(result["units"][unit]), flush=True)
    out = write_result(args.out, "bm25", result)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
