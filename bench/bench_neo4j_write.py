"""Neo4j write throughput: nodes with their vectors, then relationships, through Neo4jStore.write.

A real corpus (standard-library modules parsed by the project's pipeline into NAME/IMPL/BLOCK/ROW/
CHUNK nodes, embedded by the default model behind the persistent cache; --random-vectors swaps in
random unit vectors) is written in build-sized calls of 2,000 nodes, then its relationships,
with as many calls in flight as a build keeps (pkg.indexing.in_flight). Each variant changes one
thing of the shipped write path and runs on an emptied database of one server: a local Neo4j
started for the benchmark (docker/neo4j-start.sh), or NEO4J_URI, WIPED before every run. The first
runs (--warmup), left out of the summary, warm the server's JIT up (a fresh
JVM writes 2-3x slower, and keeps speeding up for about four runs of 78k nodes); their figures are
kept as "warmup_runs". Nodes get vectors as a build gives them (EMBEDDED_LABELS); vectors/s counts those.

nodes/s counts until every vector index is online; afterwards the indexes are checked: each
label's nodes are found by their own vectors with score 1, top-10 agrees with exact numpy search
(recall, and exact scores where both found a node), and search latency is timed. Server CPU
seconds come from /proc when the server is local. Writes JSON to bench/results/.

    python bench/bench_neo4j_write.py [--functions 6000] [--repeat 3] [--warmup 2]
                                      [--variants store,index-after] [--random-vectors] [--no-rust]
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from itertools import pairwise
from pathlib import Path
from statistics import median

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).parent), str(ROOT)]
if "--no-rust" in sys.argv:  # the driver falls back to its pure-Python PackStream
    sys.modules["neo4j._rust"] = None  # type: ignore[assignment]

from importlib.metadata import PackageNotFoundError, version  # noqa: E402

from corpora import stdlib_corpus  # noqa: E402
from harness import bench_parser, cpu_seconds, neo4j_database, percentile, utc_now, write_result  # noqa: E402

from ingest.parse import parse_corpus  # noqa: E402
from pkg.config import default_cache_dir  # noqa: E402
from pkg.embedders import make_embedder  # noqa: E402
from pkg.graph import EMBEDDED_LABELS, Edge, Label, Node  # noqa: E402
from pkg.indexing import WRITE_BATCH, embed_texts, embedded_texts, in_flight, with_vectors  # noqa: E402
from pkg.stores import neo4j_store  # noqa: E402
from pkg.stores.base import EmbedderInfo  # noqa: E402
from pkg.stores.neo4j_store import Neo4jStore  # noqa: E402
from tests.neo4j_server import wipe  # noqa: E402

K = 10
QUERIES_PER_LABEL = 50


@dataclass(frozen=True)
class Variant:
    """One change to the shipped write path."""

    name: str
    description: str
    write_size: int = WRITE_BATCH  # nodes, or relationships, per Neo4jStore.write call
    batch: int = neo4j_store.BATCH
    ef_construction: int = neo4j_store.HNSW_EF_CONSTRUCTION
    m: int = neo4j_store.HNSW_M
    quantization: bool = neo4j_store.HNSW_QUANTIZATION
    writers: int = neo4j_store.WRITERS  # write calls in flight at once, each from its own thread
    vectors: bool = True
    index: str = "during"  # "during": created first, kept up by every write; "after": created once loaded
    plain_params: bool = False


VARIANTS = {
    v.name: v
    for v in (
        Variant(
            "store",
            "the shipped path: vector indexes (int8-quantized, ef_construction 50) created first and "
            "maintained by every write, two write calls in flight",
        ),
        Variant("one-writer", "one write call at a time", writers=1),
        Variant("writers-3", "three write calls in flight", writers=3),
        Variant("writers-4", "four write calls in flight", writers=4),
        Variant(
            "ef-construction-100",
            "HNSW graphs built with ef_construction 100 (Neo4j's default) instead of 50",
            ef_construction=100,
        ),
        Variant("m-8", "HNSW graphs with M 8 (neighbours per node) instead of 16", m=8),
        Variant("not-quantized", "float32 vector indexes, no quantization", quantization=False),
        Variant(
            "plain-params",
            "rows as plain lists: the driver repr()s them for its debug log, as before this change",
            plain_params=True,
        ),
        Variant(
            "index-after",
            "no vector index while writing; indexes created after the load, timed until online "
            "(their population is the HNSW insertion cost, measured separately)",
            index="after",
        ),
        Variant("write-10000", "write calls (transactions) of 10,000 nodes or relationships", write_size=10000),
        Variant(
            "write-10000-batch-500", "write calls of 10,000, 500 rows per UNWIND statement", write_size=10000, batch=500
        ),
        Variant(
            "write-10000-batch-5000",
            "write calls of 10,000, 5,000 rows per UNWIND statement",
            write_size=10000,
            batch=5000,
        ),
        Variant("no-vectors", "nodes without vectors (empty vector indexes): the cost of all but them", vectors=False),
    )
}


class _PlainRows(list):  # type: ignore[type-arg]
    """Rows shown in full by repr(), as a plain list is."""


@contextmanager
def patched(variant: Variant) -> Iterator[None]:
    """The store module with the variant's batch size, HNSW parameters and row type."""
    names = ("BATCH", "HNSW_EF_CONSTRUCTION", "HNSW_M", "HNSW_QUANTIZATION", "_Rows")
    saved = [getattr(neo4j_store, name) for name in names]
    rows = _PlainRows if variant.plain_params else neo4j_store._Rows
    for name, value in zip(names, (variant.batch, variant.ef_construction, variant.m, variant.quantization, rows)):
        setattr(neo4j_store, name, value)
    try:
        yield
    finally:
        for name, value in zip(names, saved):
            setattr(neo4j_store, name, value)


class Clock:
    """Wall seconds, this process's CPU seconds and the server's CPU seconds since the last lap."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid
        self.last = self._now()

    def _now(self) -> tuple[float, float, float]:
        server = 0.0 if self.server_pid is None else cpu_seconds(self.server_pid)
        return time.perf_counter(), time.process_time(), server

    def lap(self) -> dict[str, float]:
        now = self._now()
        wall, client, server = (b - a for a, b in zip(self.last, now))
        self.last = now
        figures = {"wall_s": round(wall, 3), "client_cpu_s": round(client, 3)}
        if self.server_pid is not None:
            figures["server_cpu_s"] = round(server, 3)
        return figures


def check_indexes(store: Neo4jStore, nodes: list[Node], seed: int) -> dict[str, object]:
    """Self-hits, recall@10 and score agreement against exact search, and search latency."""
    rng = np.random.default_rng(seed)
    found = asked = self_hits = self_asked = 0
    worst_score_error = 0.0
    times = []
    for label in EMBEDDED_LABELS:
        own = [n for n in nodes if n.label is label and n.vector is not None]
        others = [n for n in nodes if n.label is not label and n.vector is not None]
        if len(own) < K or not others:
            continue
        matrix = np.stack([n.vector for n in own]).astype(np.float32)
        for i in rng.choice(len(own), min(10, len(own)), replace=False):  # score 1: the same vector
            self_hits += store.search(label, own[i].vector, 1)[0].score > 1 - 1e-5
            self_asked += 1
        for i in rng.choice(len(others), min(QUERIES_PER_LABEL, len(others)), replace=False):
            query = np.asarray(others[i].vector, dtype=np.float32)
            scores = matrix @ query
            top = np.argsort(-scores, kind="stable")[:K]
            exact = {own[j].id: float(scores[j]) for j in top}
            started = time.perf_counter()
            hits = store.search(label, query, K)
            times.append((time.perf_counter() - started) * 1000)
            assert all(a.score >= b.score for a, b in pairwise(hits))
            found += sum(1 for h in hits if h.id in exact or h.score >= scores[top[-1]] - 1e-6)
            asked += K
            errors = [abs(h.score - exact[h.id]) for h in hits if h.id in exact]
            worst_score_error = max([worst_score_error, *errors])
    return {
        "self_hits": f"{self_hits}/{self_asked}",
        "recall_at_10": round(found / asked, 4) if asked else None,
        "max_score_error_vs_exact": worst_score_error,
        "search_p50_ms": round(percentile(times, 50), 2) if times else None,
        "search_p95_ms": round(percentile(times, 95), 2) if times else None,
    }


def run(
    variant: Variant,
    nodes: list[Node],
    edges: list[Edge],
    info: EmbedderInfo,
    server: tuple[str, int | None, Path | None],
    seed: int,
) -> dict:
    """Write the corpus with one variant on the emptied database and check the result."""
    if not variant.vectors:
        nodes = [replace(n, vector=None) for n in nodes]
    uri, pid, _ = server
    wipe(uri)
    with patched(variant):
        store = Neo4jStore(uri)
        try:
            if variant.index == "during":
                store.check_embedder(info, record=True)  # what a build does first: indexes, then writes
            else:
                store._indexed.update(EMBEDDED_LABELS)  # keeps write() from creating the indexes
            store._ensure_constraints()
            clock = Clock(pid)
            calls = [nodes[start : start + variant.write_size] for start in range(0, len(nodes), variant.write_size)]
            list(in_flight(lambda part: store.write(part, []), calls, variant.writers))
            node_phase = clock.lap()
            if variant.index == "after":
                store._indexed.clear()
                store.check_embedder(info, record=True)  # creates the indexes and awaits them online
            index_phase = clock.lap()
            calls = [edges[start : start + variant.write_size] for start in range(0, len(edges), variant.write_size)]
            list(in_flight(lambda part: store.write([], part), calls, variant.writers))
            edge_phase = clock.lap()
            counts = store.counts()
            assert sum(counts.nodes.values()) == len(nodes), counts
            assert sum(counts.relationships.values()) == len(edges), counts
            seconds = node_phase["wall_s"] + index_phase["wall_s"]
            result = {
                "variant": variant.name,
                "nodes_per_s": round(len(nodes) / seconds),
                "vectors_per_s": round(sum(n.vector is not None for n in nodes) / seconds),
                "relationships_per_s": round(len(edges) / edge_phase["wall_s"]),
                "nodes_phase": node_phase,
                "index_phase": index_phase,
                "edges_phase": edge_phase,
            }
            if pid is not None:
                cpu = sum(p["server_cpu_s"] + p["client_cpu_s"] for p in (node_phase, index_phase))
                result["nodes_per_cpu_s"] = round(len(nodes) / cpu)
            if variant.vectors:
                result["check"] = check_indexes(store, nodes, seed)
            return result
        finally:
            store.close()


def summary(runs: list[dict]) -> dict:
    """Median and best of the repeated runs of one variant."""
    keys = ["nodes_per_s", "vectors_per_s", "relationships_per_s", "nodes_per_cpu_s"]
    return {
        f"{stat}_{key}": fn(r[key] for r in runs)
        for key in keys
        if all(key in r for r in runs)
        for stat, fn in (("median", median), ("best", max))
    }


def load_corpus(functions: int, random_vectors: bool) -> tuple[list[Node], list[Edge], EmbedderInfo, dict]:
    """The corpus nodes with their vectors, its edges, the embedder and a description."""
    files, _ = stdlib_corpus(functions)
    corpus = parse_corpus(files)
    edges = [e for unit in corpus.units for e in unit.edges]
    texts = embedded_texts(corpus.units)
    if random_vectors:
        matrix = np.random.default_rng(0).standard_normal((len(texts), 384)).astype(np.float32)
        vectors = dict(zip(texts, matrix / np.linalg.norm(matrix, axis=1, keepdims=True), strict=True))
        info = EmbedderInfo("random-unit", 384)
    else:
        embedder = make_embedder("minilm", default_cache_dir())
        vectors = embed_texts(texts, embedder, lambda *_: None)
        info = EmbedderInfo(embedder.name, embedder.dim)
    nodes = with_vectors(corpus.units, vectors)
    labels = {label.value: sum(n.label is label for n in nodes) for label in Label}
    described = {
        "files": len(files),
        "nodes": len(nodes),
        "nodes_with_vectors": sum(n.vector is not None for n in nodes),
        "relationships": len(edges),
        "nodes_by_label": labels,
        "vectors": "random unit vectors, dim 384" if random_vectors else f"{info.name} (dim {info.dim})",
    }
    return nodes, edges, info, described


def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--functions", type=int, default=6000, help="standard-library functions (6000: ~26k nodes)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of: {', '.join(VARIANTS)}")
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant, interleaved")
    parser.add_argument("--warmup", type=int, default=2, help="runs of the shipped path first, to warm the JIT up")
    parser.add_argument("--random-vectors", action="store_true", help="random unit vectors instead of the model's")
    parser.add_argument("--no-rust", action="store_true", help="without neo4j-rust-ext (pure-Python PackStream)")
    args = parser.parse_args()
    variants = [VARIANTS[name] for name in args.variants.split(",")]

    nodes, edges, info, corpus = load_corpus(args.functions, args.random_vectors)
    result: dict = {
        "benchmark": "Neo4j store write throughput (nodes with vectors until indexes online; relationships)",
        "date": utc_now(),
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_at_start": os.getloadavg(),
            "python": sys.version.split()[0],
            "neo4j_driver": package_version("neo4j"),
            "neo4j_rust_ext": None if args.no_rust else package_version("neo4j-rust-ext"),
            "server": "NEO4J_URI" if os.environ.get("NEO4J_URI") else "local Neo4j 5.26 (docker/neo4j-start.sh)",
        },
        "corpus": corpus,
        "variants": {v.name: asdict(v) for v in variants},
        "runs": [],
    }
    with neo4j_database() as server:
        result["warmup_runs"] = []
        for _ in range(args.warmup):
            result["warmup_runs"].append(run(VARIANTS["store"], nodes, edges, info, server, seed=0))
            print("warm-up:", json.dumps(result["warmup_runs"][-1]), flush=True)
        for repeat in range(args.repeat):
            for variant in variants:
                figures = run(variant, nodes, edges, info, server, seed=repeat)
                result["runs"].append(figures)
                print(json.dumps(figures), flush=True)
    result["machine"]["load_average_at_end"] = os.getloadavg()
    result["summary"] = {v.name: summary([r for r in result["runs"] if r["variant"] == v.name]) for v in variants}
    out = write_result(args.out, "neo4j-write", result)
    print(json.dumps(result["summary"], indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
