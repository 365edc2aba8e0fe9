"""Graph-write throughput and query latency on both stores, on a real corpus of ≥ 20k functions.

Starts its own Neo4j (docker/neo4j-start.sh) unless NEO4J_URI is set (then that database is
WIPED first). The corpus's embeddings come through the persistent cache, so a second run embeds
nothing. Queries are timed as a user's first query on a fresh build meets them: through a private
embedding cache that holds only what a build embeds (node texts, pruning variants), so every query
is embedded anew, and each store and mode gets its own queries. Each query's time is also split
into its stages (query embedding, the embedder check, vector search and contexts — one stage where
the store answers both in one statement —, pruning, the rest).
The writes are one build into a store just opened: for Neo4j a server just started, whose JVM has
not warmed up (a cold-start figure; bench_neo4j_write.py measures warm medians over repeats).
Writes JSON to bench/results/.

    python bench/bench_stores.py [--functions 20000] [--queries 200]
"""

from __future__ import annotations

import ast
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).parent), str(ROOT)]
from corpora import stdlib_corpus  # noqa: E402
from harness import bench_parser, machine, neo4j_database, percentile, utc_now, write_result  # noqa: E402

from ingest.parse import parse_corpus, pruning_variants  # noqa: E402
from pkg.config import default_cache_dir  # noqa: E402
from pkg.embedders import CachedEmbedder, Embedder, EmbeddingCache, make_embedder  # noqa: E402
from pkg.graph import Node, text_hash  # noqa: E402
from pkg.indexing import embed_texts, embedded_texts, in_flight, with_vectors  # noqa: E402
from pkg.stores.base import EmbedderInfo, GraphStore  # noqa: E402
from pkg.stores.embedded import EmbeddedStore  # noqa: E402
from pkg.stores.neo4j_store import Neo4jStore  # noqa: E402
from retrieval import search  # noqa: E402
from retrieval.search import retrieve  # noqa: E402
from tests.neo4j_server import wipe  # noqa: E402

BATCH = 2000


def write_throughput(store: GraphStore, nodes: list[Node], edges: list, info: EmbedderInfo) -> dict:
    """Nodes (with vectors) then relationships, in batches, as many in flight as a build keeps,
    timed separately."""
    store.check_embedder(info, record=True)
    started = time.perf_counter()
    parts = [nodes[start : start + BATCH] for start in range(0, len(nodes), BATCH)]
    list(in_flight(lambda part: store.write(part, []), parts, store.writers))
    node_s = time.perf_counter() - started
    started = time.perf_counter()
    parts = [edges[start : start + BATCH] for start in range(0, len(edges), BATCH)]
    list(in_flight(lambda part: store.write([], part), parts, store.writers))
    edge_s = time.perf_counter() - started
    vectors = sum(n.vector is not None for n in nodes)
    return {
        "nodes": len(nodes),
        "nodes_per_s": len(nodes) / node_s,
        "vectors": vectors,
        "vectors_per_s": vectors / node_s,
        "relationships": len(edges),
        "relationships_per_s": len(edges) / edge_s,
        "seconds": node_s + edge_s,
    }


class Stages:
    """Wall time spent inside chosen methods of objects, summed per query."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)

    def watch(self, obj: object, method: str, stage: str) -> None:
        inner = getattr(obj, method)

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.current[stage] += (time.perf_counter() - started) * 1000

        setattr(obj, method, timed)

    def take(self) -> dict[str, float]:
        taken, self.current = dict(self.current), defaultdict(float)
        return taken


def latency(run: Callable[[str], object], queries: list[str], stages: Stages) -> dict:
    for query in queries[:5]:
        run(query)  # warm-up: JIT, page cache
    stages.take()
    times, split = [], defaultdict(list)
    for query in queries[5:]:
        started = time.perf_counter()
        run(query)
        total = (time.perf_counter() - started) * 1000
        times.append(total)
        parts = stages.take()
        for stage, ms in parts.items():
            split[stage].append(ms)
        split["rest"].append(total - sum(parts.values()))
    return {
        "queries": len(times),
        "p50_ms": percentile(times, 50),
        "p95_ms": percentile(times, 95),
        "stage_p50_ms": {stage: round(percentile(ms, 50), 2) for stage, ms in split.items()},
    }


def query_embedder(prepared: dict[str, object], cache_dir: Path) -> Embedder:
    """The default embedder behind a fresh cache holding only what a build embeds (node texts and
    pruning variants), as a user's cache is before their first query."""
    embedder = make_embedder("minilm", None)
    cache = EmbeddingCache(cache_dir / "embeddings.sqlite")
    cache.put_many(embedder.name, "document", {text_hash(text): vector for text, vector in prepared.items()})
    return CachedEmbedder(embedder, cache)


def main() -> None:
    parser = bench_parser(__doc__, functions=20000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    files, expected = stdlib_corpus(args.functions)
    started = time.perf_counter()
    corpus = parse_corpus(files)
    parse_s = time.perf_counter() - started
    embedder = make_embedder("minilm", default_cache_dir())
    started = time.perf_counter()
    texts = embedded_texts(corpus.units) + pruning_variants(corpus.units)
    vectors = embed_texts(texts, embedder, lambda *_: None)
    embed_s = time.perf_counter() - started
    nodes = with_vectors(corpus.units, vectors)
    edges = [e for unit in corpus.units for e in unit.edges]
    info = EmbedderInfo(embedder.name, embedder.dim)

    functions = [ast.parse(n.props["text"]).body[0] for n in corpus.nodes if n.label == "IMPL"]
    docs = (ast.get_docstring(f) for f in functions if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef))
    queries = list(dict.fromkeys(d.strip().split("\n")[0] for d in docs if d and len(d.strip()) > 20))
    passes = 4  # two stores x two modes, each with queries of its own
    per_pass = args.queries + 5  # five warm-up queries first
    queries = queries[:: max(1, len(queries) // (passes * per_pass))][: passes * per_pass]
    if len(queries) < passes * per_pass:
        raise SystemExit(f"the corpus has only {len(queries)} distinct docstring queries; ask for fewer")

    result: dict = {
        "benchmark": "store write throughput and query latency",
        "date": utc_now(),
        "machine": machine(),
        "corpus": {
            "files": len(files),
            "functions": corpus.report.functions,
            "ast_functions": expected,
            "blocks": corpus.report.blocks,
            "nodes": len(nodes),
            "relationships": len(edges),
            "texts_embedded_or_cached": len(vectors),
            "parse_s": parse_s,
            "embed_s": embed_s,
        },
        "stores": {},
    }
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as servers:
        asker = query_embedder(vectors, Path(tmp))
        stages = Stages()
        stages.watch(asker, "embed_query", "query_embedding")
        stages.watch(search, "prune", "pruning")  # the variants' vectors come from the cache

        def neo4j() -> GraphStore:  # started only now: its start-up would slow the embedded store's run
            uri, _, _ = servers.enter_context(neo4j_database())
            wipe(uri)
            return Neo4jStore(uri)

        stores: dict[str, Callable[[], GraphStore]] = {
            "embedded": lambda: EmbeddedStore(Path(tmp) / "db", create=True),
            "neo4j": neo4j,
        }
        for kind, opener in stores.items():
            store = opener()
            figures = {"write": write_throughput(store, nodes, edges, info) | {"server": "just started, one build"}}
            if type(store).nearest_contexts is GraphStore.nearest_contexts:  # search, then contexts
                stages.watch(store, "search", "vector_search")
                stages.watch(store, "contexts", "contexts")
            else:  # both in one statement
                stages.watch(store, "nearest_contexts", "vector_search_and_contexts")
            stages.watch(store, "embedder_info", "embedder_check")
            for mode in ("func", "block"):
                mine, queries = queries[:per_pass], queries[per_pass:]
                figures[f"query_{mode}"] = latency(
                    lambda q, m=mode, s=store: retrieve(s, asker, q, m, k=1), mine, stages
                )
            store.close()
            result["stores"][kind] = figures
            print(kind, json.dumps(figures), flush=True)
    out = write_result(args.out, "stores", result)
    print(json.dumps(result, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
