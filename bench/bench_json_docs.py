"""JSON-PKG end to end on the whole Python documentation, on both stores.

Converts every page of Debian's python3.11-doc (reStructuredText sources) to JSON and then to
PATH/PATHVALUE DAGs, embeds the leaves once (persistent cache), writes the same graph to the
embedded store and to Neo4j, and queries both in mode json. Queries are section titles taken from
the graph; a query is a hit when a leaf of that section is among the top 5. Also records how many
of the embedded store's exact top-10 Neo4j's vector index returns (a hit tied with the exact 10th
counts). Starts its own Neo4j unless NEO4J_URI is set (that database is WIPED). Writes JSON to
bench/results/.

    python bench/bench_json_docs.py [--docs DIR] [--queries 200]
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).parent), str(ROOT)]
from harness import bench_parser, machine, neo4j_database, percentile, utc_now, write_result  # noqa: E402

from ingest.parse import parse_corpus  # noqa: E402
from pkg.config import default_cache_dir  # noqa: E402
from pkg.embedders import make_embedder  # noqa: E402
from pkg.graph import Label  # noqa: E402
from pkg.indexing import embed_texts  # noqa: E402
from pkg.knowledge_base import KnowledgeBase  # noqa: E402
from pkg.schema import PathValueNode, expect  # noqa: E402
from pkg.stores.base import GraphStore  # noqa: E402
from pkg.stores.embedded import EmbeddedStore  # noqa: E402
from pkg.stores.neo4j_store import Neo4jStore  # noqa: E402
from retrieval.search import retrieve  # noqa: E402
from tests.neo4j_server import wipe  # noqa: E402

DOCS = Path("/usr/share/doc/python3.11/html/_sources")
TOP = 5
RECALL_K = 10


def section_queries(titles: list[str], count: int, seed: int = 0) -> list[str]:
    """Distinct innermost section titles long enough to be a question, sampled reproducibly."""
    innermost = sorted({t.split(" > ")[-1] for t in titles if t})
    usable = [t for t in innermost if len(t.split()) >= 3]
    return sorted(random.Random(seed).sample(usable, min(count, len(usable))))


def recall(exact: list[list[tuple[str, float]]], approximate: list[list[tuple[str, float]]]) -> float:
    """Share of the exact top-k the approximate top-k holds, per query; an approximate hit scoring
    as high as the exact k-th is as good as it (identical leaves from different pages tie)."""
    found = total = 0
    for want, got in zip(exact, approximate, strict=True):
        ids, last = {i for i, _ in want}, want[-1][1] if want else 1.0
        found += sum(1 for i, score in got if i in ids or score >= last - 1e-5)
        total += len(want)
    return found / total


def _report(stage: str, done: int, total: int) -> None:
    print(f"\r{stage}: {done}/{total}", end="\n" if done == total else "", file=sys.stderr, flush=True)


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    if not args.docs.is_dir():
        sys.exit(f"no documentation at {args.docs} (apt-get install python3.11-doc)")

    started = time.perf_counter()
    corpus = parse_corpus([args.docs], parts=("json",))
    parse_s = time.perf_counter() - started
    leaves = [n for n in corpus.nodes if n.label is Label.PATHVALUE]
    embedder = make_embedder("minilm", default_cache_dir())
    started = time.perf_counter()
    embed_texts([n.embed_text for n in leaves], embedder, _report)
    embed_s = time.perf_counter() - started
    queries = section_queries([n.props["titles"] for n in leaves], args.queries)

    result: dict = {
        "benchmark": "JSON-PKG on the Python documentation, both stores",
        "date": utc_now(),
        "machine": machine(),
        "corpus": {
            "docs": str(args.docs),
            "files": corpus.report.files,
            "leaves": len(leaves),
            "parse_s": parse_s,
            "embed_s": embed_s,
            "queries": len(queries),
        },
        "stores": {},
    }
    tops: dict[str, list[list[tuple[str, float]]]] = {}
    asker = make_embedder("minilm", None)  # no cache: every query is embedded, as a user's first
    asker.embed_query("warm up")
    with tempfile.TemporaryDirectory() as tmp, neo4j_database() as (uri, _, _):
        wipe(uri)
        stores: dict[str, GraphStore] = {
            "embedded": EmbeddedStore(Path(tmp) / "db", create=True),
            "neo4j": Neo4jStore(uri),
        }
        for kind, store in stores.items():
            started = time.perf_counter()
            report = KnowledgeBase(Path(tmp) / "db", store, embedder).build([args.docs], parts=("json",)).report
            build_s = time.perf_counter() - started
            counts = store.counts()
            hits, times, tops[kind] = 0, [], []
            for query in queries:
                started = time.perf_counter()
                found = retrieve(store, asker, query, "json", k=RECALL_K).results
                times.append((time.perf_counter() - started) * 1000)
                tops[kind].append([(r.id, r.score) for r in found])
                ids = [r.id for r in found[:TOP]]
                leaves = [expect(p, PathValueNode) for p in store.nodes(ids)]
                hits += any(query in leaf.titles.split(" > ") for leaf in leaves)
            store.close()
            result["stores"][kind] = {
                "build_s": build_s,
                "nodes_written": report.nodes,
                "edges_written": report.edges,
                "nodes_per_s": report.nodes / build_s,
                "counts": {"nodes": counts.nodes, "relationships": counts.relationships},
                f"section_hit_at_{TOP}": hits / len(queries),
                "query_ms": {"p50": percentile(times, 50), "p95": percentile(times, 95)},
            }
            print(kind, json.dumps(result["stores"][kind]), flush=True)
    result[f"neo4j_recall_at_{RECALL_K}"] = recall(tops["embedded"], tops["neo4j"])
    out = write_result(args.out, "json-docs", result)
    print(json.dumps({k: v for k, v in result.items() if k != "stores"}, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
