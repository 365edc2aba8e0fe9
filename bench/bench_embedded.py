"""Benchmark of the walking skeleton on a standard-library slice (embedded store).

Measures functions/s and blocks/s parsed, texts/s embedded, build time, and query latency
p50/p95 (query embedding + top-k + pruning) in modes func and block. Writes JSON to bench/results/.

    python bench/bench_embedded.py [--modules 120] [--queries 100] [--out bench/results]
"""

from __future__ import annotations

import ast
import json
import sysconfig
import tempfile
import time
from pathlib import Path

from harness import bench_parser, machine, percentile, utc_now, write_result

from ingest.extract import extract
from pkg.code.functions import iter_blocks
from pkg.embedders import CachedEmbedder, EmbeddingCache
from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder
from pkg.knowledge_base import KnowledgeBase
from pkg.stores.embedded import EmbeddedStore
from retrieval.search import retrieve


def stdlib_files(count: int) -> list[Path]:
    """The first `count` top-level standard-library modules that ast parses, sorted by name."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for path in sorted(root.glob("*.py")):
        try:
            ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        files.append(path)
    return files[:count]


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--modules", type=int, default=120)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()

    files = stdlib_files(args.modules)
    sources = [f.read_text(encoding="utf-8") for f in files]
    started = time.perf_counter()
    extractions = [extract(s, "python") for s in sources]
    parse_s = time.perf_counter() - started
    functions = [fn for e in extractions for fn in e.functions]
    blocks = sum(1 for fn in functions for _ in iter_blocks(fn.blocks))

    model = SentenceTransformerEmbedder()
    model.embed_documents(["warm up"])
    sample = [fn.text for fn in functions[:512]]
    started = time.perf_counter()
    model.embed_documents(sample)
    embed_s = time.perf_counter() - started

    with tempfile.TemporaryDirectory() as tmp:
        embedder = CachedEmbedder(model, EmbeddingCache(Path(tmp) / "cache.sqlite"))
        store = EmbeddedStore(Path(tmp) / "db", create=True)
        started = time.perf_counter()
        report = KnowledgeBase(Path(tmp) / "db", store, embedder).build(files).report
        build_s = time.perf_counter() - started
        docstrings = [ast.get_docstring(ast.parse(fn.text).body[0]) for fn in functions]
        usable = [d.strip().split("\n")[0] for d in docstrings if d and len(d.strip()) > 20]
        # each mode its own queries: a query asked twice would be a cache hit, not an embedding
        queries = {"func": usable[0::2][: args.queries], "block": usable[1::2][: args.queries]}
        latency: dict[str, list[float]] = {"func": [], "block": []}
        for mode in latency:
            for query in queries[mode]:
                started = time.perf_counter()
                retrieve(store, embedder, query, mode, k=1)
                latency[mode].append((time.perf_counter() - started) * 1000)
        store.close()

    result = {
        "benchmark": "embedded walking skeleton",
        "date": utc_now(),
        "machine": machine(),
        "corpus": {
            "modules": len(files),
            "functions": len(functions),
            "blocks": blocks,
            "lines": sum(s.count("\n") for s in sources),
        },
        "parse": {"seconds": parse_s, "functions_per_s": len(functions) / parse_s, "blocks_per_s": blocks / parse_s},
        "embed": {"model": model.name, "texts": len(sample), "texts_per_s": len(sample) / embed_s},
        "build": {
            "seconds": build_s,
            "nodes": report.nodes,
            "edges": report.edges,
            "texts_embedded": report.texts_embedded,
        },
        "query_ms": {
            mode: {"queries": len(v), "p50": percentile(v, 50), "p95": percentile(v, 95)} for mode, v in latency.items()
        },
    }
    out = write_result(args.out, "embedded", result)
    print(json.dumps(result, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
