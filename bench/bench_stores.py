"""Graph-write throughput and query latency on both stores, on a real corpus of ≥ 20k functions.

Starts its own Neo4j (docker/neo4j-start.sh) unless NEO4J_URI is set (then that database is
WIPED first). Embeddings come through the persistent cache, so a second run embeds nothing.
Writes JSON to bench/results/.

    python bench/bench_stores.py [--functions 20000] [--queries 200]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).parent), str(ROOT)]
from corpora import stdlib_corpus  # noqa: E402
from harness import RESULTS, machine, neo4j_database, percentile, utc_now, write_result  # noqa: E402

from ingest.build import embed_texts, parse_corpus, pruning_variants  # noqa: E402
from pkg.config import default_cache_dir  # noqa: E402
from pkg.embedders import make_embedder  # noqa: E402
from pkg.graph import EMBEDDED_LABELS, Node  # noqa: E402
from pkg.stores.base import EmbedderInfo, GraphStore  # noqa: E402
from pkg.stores.embedded import EmbeddedStore  # noqa: E402
from pkg.stores.neo4j_store import Neo4jStore  # noqa: E402
from retrieval.search import retrieve  # noqa: E402
from tests.neo4j_server import wipe  # noqa: E402

BATCH = 2000


def write_throughput(store: GraphStore, nodes: list[Node], edges: list, info: EmbedderInfo) -> dict:
    """Nodes (with vectors) then relationships, in batches, timed separately."""
    store.check_embedder(info, record=True)
    started = time.perf_counter()
    for start in range(0, len(nodes), BATCH):
        store.write(nodes[start : start + BATCH], [])
    node_s = time.perf_counter() - started
    started = time.perf_counter()
    for start in range(0, len(edges), BATCH):
        store.write([], edges[start : start + BATCH])
    edge_s = time.perf_counter() - started
    return {"nodes": len(nodes), "nodes_per_s": len(nodes) / node_s, "relationships": len(edges),
            "relationships_per_s": len(edges) / edge_s, "seconds": node_s + edge_s}


def latency(run: Callable[[str], object], queries: list[str]) -> dict:
    for query in queries[:5]:
        run(query)  # warm-up: caches, JIT, page cache
    times = []
    for query in queries:
        started = time.perf_counter()
        run(query)
        times.append((time.perf_counter() - started) * 1000)
    return {"queries": len(times), "p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    files, expected = stdlib_corpus(args.functions)
    started = time.perf_counter()
    corpus = parse_corpus(files)
    parse_s = time.perf_counter() - started
    embedder = make_embedder("minilm", default_cache_dir())
    started = time.perf_counter()
    texts = [n.embed_text for n in corpus.nodes if n.label in EMBEDDED_LABELS] + pruning_variants(corpus.units)
    vectors = embed_texts(texts, embedder, lambda *_: None)
    embed_s = time.perf_counter() - started
    nodes = [replace(n, vector=vectors[n.embed_text]) if n.label in EMBEDDED_LABELS else n for n in corpus.nodes]
    edges = [e for unit in corpus.units for e in unit.edges]
    info = EmbedderInfo(embedder.name, embedder.dim)

    functions = [ast.parse(n.props["text"]).body[0] for n in corpus.nodes if n.label == "IMPL"]
    docs = (ast.get_docstring(f) for f in functions if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef))
    queries = list(dict.fromkeys(d.strip().split("\n")[0] for d in docs if d and len(d.strip()) > 20))
    queries = queries[:: max(1, len(queries) // args.queries)][: args.queries]

    result: dict = {
        "benchmark": "store write throughput and query latency",
        "date": utc_now(),
        "machine": machine(),
        "corpus": {"files": len(files), "functions": corpus.report.functions, "ast_functions": expected,
                   "blocks": corpus.report.blocks, "nodes": len(nodes), "relationships": len(edges),
                   "texts_embedded_or_cached": len(vectors), "parse_s": parse_s, "embed_s": embed_s},
        "stores": {},
    }
    with tempfile.TemporaryDirectory() as tmp, neo4j_database() as (uri, _):
        stores: dict[str, Callable[[], GraphStore]] = {
            "embedded": lambda: EmbeddedStore(Path(tmp) / "db", create=True),
            "neo4j": lambda: Neo4jStore(uri),
        }
        for kind, opener in stores.items():
            store = opener()
            if kind == "neo4j":
                wipe(uri)
            figures = {"write": write_throughput(store, nodes, edges, info)}
            for mode in ("func", "block"):
                figures[f"query_{mode}"] = latency(lambda q, m=mode: retrieve(store, embedder, q, m, k=1), queries)
            store.close()
            result["stores"][kind] = figures
            print(kind, json.dumps(figures), flush=True)
    out = write_result(args.out, "stores", result)
    print(json.dumps(result, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
