"""Build a PKG at the paper's scale: ≥100k functions of the installed packages, either store, any embedder.

The corpus is the venv's site-packages (bench/corpora.py: by package, then path, test folders left
out) until --functions functions. One `KnowledgeBase.build` (default settings; a fresh embedding
cache unless --db's cache holds an interrupted build's vectors, counted as texts_from_cache) is
timed by stage (parse, embed, write, link, BM25 indexes: the last two together, linking in a forked
child; link is what it adds), the Python type facts the parse extracts for the linking pass apart (the
resolver's cost: them and what linking adds as a share of the build),
then 50 real queries per mode (first docstring lines of corpus functions) are timed in modes func
and block, query embedding and pruning included. Records texts embedded, pruning variants, nodes,
relationships, peak RSS, disk size against the raw float32 vector bytes, and each query's answers,
which --compare checks against an earlier result (same corpus, another build setting or embedder).
Then a retrieval task on the corpus itself: 300 docstring first lines of other functions, recall@1
and @10 of the function each came from, and (with --compare) the top-10 overlap with the earlier
result. With --store neo4j the build goes to a just-started local Neo4j (or NEO4J_URI), and
--exact-db names an embedded build of the same corpus and embedder whose exact search the vector indexes'
recall@10 is measured against.

    python bench/bench_scale.py [--functions 100000] [--db DIR] [--embedder SPEC] [--no-prepare-pruning]
        [--store embedded|neo4j] [--exact-db DIR] [--compare JSON]
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpora import SITE_PACKAGES, site_packages_corpus  # noqa: E402
from bench.harness import bench_parser, generation_runs, machine, neo4j_database, percentile, utc_now, write_result  # noqa: E402
from ingest.python_types import type_facts, walk  # noqa: E402
from pkg.code.syntax_tree import UNPARSABLE, parse_python  # noqa: E402
from pkg.collector import collecting_rarely  # noqa: E402
from pkg.embedders import DEFAULT_SPEC, SPEC_HELP  # noqa: E402
from pkg.graph import EMBEDDED_LABELS  # noqa: E402
from pkg.knowledge_base import KnowledgeBase  # noqa: E402
from pkg.stores import STORES  # noqa: E402
from pkg.stores.base import GraphStore  # noqa: E402
from pkg.stores.embedded import EmbeddedStore  # noqa: E402
from pkg.stores.neo4j_store import Neo4jStore  # noqa: E402

MODES = ("func", "block")


@dataclass
class StageClock:
    """A build's progress sink: when each stage last reported, with a line on stderr now and then."""

    started: float = field(default_factory=time.perf_counter)
    started_cpu: float = field(default_factory=time.process_time)
    last: dict[str, float] = field(default_factory=dict)
    last_cpu: dict[str, float] = field(default_factory=dict)
    at: dict[tuple[str, int], float] = field(default_factory=dict)  # when each (stage, done) was last reported
    _shown: float = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        self.last[stage], self.last_cpu[stage] = now, time.process_time()
        self.at[stage, done] = now
        if now - self._shown >= 15 or done == total:
            self._shown = now
            print(f"[{now - self.started:7.1f} s] {stage} {done}/{total}", file=sys.stderr, flush=True)

    def seconds(self, stage: str, previous: str | None, cpu: bool = False) -> float:
        """Seconds (wall clock, or this process's CPU time) from the end of the previous stage (or
        the start) to the end of this one."""
        last, started = (self.last_cpu, self.started_cpu) if cpu else (self.last, self.started)
        start = last[previous] if previous else started
        return last.get(stage, start) - start


def disk_bytes(path: Path) -> int:
    """Apparent size of every file under path."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def peak_rss_bytes(who: int = resource.RUSAGE_SELF) -> int:
    """Peak resident set size of this process, or of its largest waited-for child (Linux reports KiB)."""
    return resource.getrusage(who).ru_maxrss * 1024


class MemoryWatch:
    """The machine's available memory (/proc/meminfo's MemAvailable), sampled on a thread twice a
    second: what the build takes of it counts the forked linker with its parent, their shared pages once."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> MemoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:
            self.samples.append((time.perf_counter(), available_bytes()))
            if self._stop.wait(0.5):
                return

    def peak_taken(self, start: float = 0.0, end: float = float("inf")) -> int:
        """The most memory taken between two perf_counter times, against the first sample."""
        inside = [free for at, free in self.samples if start <= at <= end]
        return self.samples[0][1] - min(inside) if inside else 0


def available_bytes() -> int:
    """MemAvailable of /proc/meminfo (Linux reports KiB)."""
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise OSError("no MemAvailable in /proc/meminfo")


def children_cpu_seconds() -> float:
    """CPU seconds of this process's waited-for children (the build's forked linker)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def real_queries(files: list[Path], count: int) -> dict[str, tuple[str, int]]:
    """`count` distinct first docstring lines (over 20 characters) of functions, spread evenly over
    the corpus in its order, each with the file and line of the function it came from."""
    step = max(1, len(files) // (8 * count))
    lines: dict[str, tuple[str, int]] = {}
    for path in files[::step]:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                first = doc.strip().split("\n")[0].strip() if doc else ""
                if len(first) > 20:
                    lines.setdefault(first, (str(path), node.lineno))
    found = list(lines)
    if len(found) > count:
        found = [found[i * len(found) // count] for i in range(count)]
    return {text: lines[text] for text in found}


def known_item_recall(kb: KnowledgeBase, queries: dict[str, tuple[str, int]], k: int = 10) -> dict:
    """A retrieval task on the corpus itself: how often the function a docstring line came from is the
    first func-mode hit, or among the first k; and each query's k ids (for top-k overlap)."""
    ranks, ids = [], {}
    for text, (path, line) in queries.items():
        results = kb.query(text, "func", k).results
        ids[text] = [r.id for r in results]
        found = [i for i, r in enumerate(results) if r.path == path and r.lines[0] <= line <= r.lines[1]]
        ranks.append(found[0] if found else None)
    return {
        "queries": len(ranks),
        "k": k,
        "recall_at_1": sum(rank == 0 for rank in ranks) / len(ranks),
        f"recall_at_{k}": sum(rank is not None for rank in ranks) / len(ranks),
        "ids": ids,
    }


def time_queries(kb: KnowledgeBase, queries: dict[str, list[str]], k: int) -> tuple[dict, dict[str, list]]:
    """Latency percentiles per mode and each query's answers (ids, and a digest of each pruned text)."""
    kb.query("warm up the store's index", "func", k)
    latency: dict[str, dict] = {}
    answers: dict[str, list] = {}
    for mode in MODES:
        times, cpu = [], []
        for text in queries[mode]:
            started, started_cpu = time.perf_counter(), time.process_time()
            results = kb.query(text, mode, k).results
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
            answers[f"{mode}:{text}"] = [
                [r.id, hashlib.sha1(r.pruned_text.encode()).hexdigest()[:12], len(r.text) - len(r.pruned_text)]
                for r in results
            ]
        latency[mode] = {
            "queries": len(times),
            "p50": percentile(times, 50),
            "p95": percentile(times, 95),
            "cpu_p50": percentile(cpu, 50),  # this process's CPU ms (all its threads)
            "cpu_p95": percentile(cpu, 95),
        }
        print(f"{mode}: p50 {latency[mode]['p50']:.1f} ms, p95 {latency[mode]['p95']:.1f} ms", file=sys.stderr)
    return latency, answers


def awaited_indexes(store: GraphStore) -> float | None:
    """Seconds Neo4j still took after the build to have every index online (its vector indexes exist
    before the first write and are kept up by each write); None for a store without index builds."""
    if not isinstance(store, Neo4jStore):
        return None
    started = time.perf_counter()
    store.await_indexes()
    return time.perf_counter() - started


def vector_recall(kb: KnowledgeBase, exact_db: Path, texts: list[str], k: int = 10) -> dict:
    """Recall@k of the store's vector search against the exact search of an embedded database that
    holds the same vectors (same corpus, same embedder), per embedded label, with the search latency."""
    vectors = kb.embedder.embed_queries(texts)
    recall: dict[str, float] = {}
    times: list[float] = []
    present = kb.store.counts().nodes
    with EmbeddedStore(exact_db) as exact:
        for label in (label for label in EMBEDDED_LABELS if present.get(label.value)):
            found = asked = 0
            for vector in vectors:
                truth = {hit.id for hit in exact.search(label, vector, k)}
                started = time.perf_counter()
                hits = kb.store.search(label, vector, k)
                times.append((time.perf_counter() - started) * 1000)
                found += len(truth & {hit.id for hit in hits})
                asked += len(truth)
            recall[label.value] = found / asked
    return {
        "queries": len(texts),
        f"recall_at_{k}": recall,
        "search_p50_ms": percentile(times, 50),
        "search_p95_ms": percentile(times, 95),
    }


def compare_answers(mine: dict, theirs: dict, mine_top: dict, theirs_top: dict) -> dict:
    """How many queries got the same top-k ids, and the same pruned texts, in both results; and the
    mean share of the known-item queries' top-10 ids both results hold."""
    shared_top = sorted(set(mine_top) & set(theirs_top))
    overlap = [len(set(mine_top[q]) & set(theirs_top[q])) / max(1, len(theirs_top[q])) for q in shared_top]
    shared = sorted(set(mine) & set(theirs))
    same_ids = [q for q in shared if [a[0] for a in mine[q]] == [a[0] for a in theirs[q]]]
    same_all = [q for q in same_ids if [a[1] for a in mine[q]] == [a[1] for a in theirs[q]]]
    differing = [{"query": q, "here": mine[q], "there": theirs[q]} for q in shared if q not in same_all]
    return {
        "queries": len(shared),
        "same_ids": len(same_ids),
        "same_pruned_texts": len(same_all),
        "top10_overlap": sum(overlap) / len(overlap) if overlap else None,
        "differ": differing,
    }


@collecting_rarely
def type_facts_seconds(files: list[Path]) -> tuple[float, float]:
    """CPU seconds of the Python type facts the build's parse extracts for the linking pass
    (ingest.python_types), measured apart (they are no stage of their own) with the collector set as
    in a build, and apart from them the seconds of listing each tree's nodes (python_types.walk), which
    the build does once per file for the structure reader and the facts both. At the collector's
    default, collections walking what the bench still holds of the build made 38.1 CPU s of the facts
    (with the walk) of the 100k corpus, which took 26.7 s in a fresh process (22.4 s as set)."""
    facts = walking = 0.0
    for path in files:
        try:
            tree = parse_python(path.read_text(encoding="utf-8", errors="replace"))
        except UNPARSABLE:
            continue
        started = time.process_time()
        walked = walk(tree)
        listed = time.process_time()
        type_facts(tree, walked)
        facts += time.process_time() - listed
        walking += listed - started
    return facts, walking


@contextmanager
def build_dirs(db: Path | None) -> Iterator[tuple[Path, Path]]:
    """(database dir, embedding cache dir): --db kept (with its cache beside it), else a temporary one."""
    if db is not None:
        if db.exists() and any(db.iterdir()):
            raise SystemExit(f"{db} is not empty: the bench builds from scratch")
        yield db, db.with_name(db.name + "-cache")
        return
    with tempfile.TemporaryDirectory(prefix="pkg-scale-") as tmp:
        yield Path(tmp) / "db", Path(tmp) / "cache"


def main() -> None:
    parser = bench_parser(__doc__, functions=100_000)
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help="database directory to keep, its embedding cache in DIR-cache beside it (default: a temporary one); "
        "a fresh DIR beside a copy of an interrupted build's cache resumes that build",
    )
    parser.add_argument("--queries", type=int, default=50, help="queries per mode")
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--no-prepare-pruning", dest="prepare_pruning", action="store_false")
    parser.add_argument("--embedder", default=DEFAULT_SPEC, help=f"embedder spec: {SPEC_HELP}")
    parser.add_argument(
        "--store", choices=STORES, default="embedded", help="neo4j: a just-started local server (or NEO4J_URI)"
    )
    parser.add_argument(
        "--exact-db", type=Path, default=None, help="embedded database of the same build: vector recall against it"
    )
    parser.add_argument("--compare", type=Path, default=None, help="an earlier result to compare answers with")
    args = parser.parse_args()

    load_before, beside_before = os.getloadavg()[0], generation_runs()
    started = time.perf_counter()
    files, counted = site_packages_corpus(args.functions)
    select_s = time.perf_counter() - started
    packages = sorted({f.relative_to(SITE_PACKAGES).parts[0] for f in files})
    print(
        f"corpus: {len(files)} files, {counted} functions, {len(packages)} packages ({select_s:.0f} s)", file=sys.stderr
    )
    queries = list(real_queries(files, 2 * args.queries))
    # each mode its own queries: a query asked twice would be a cache hit, not an embedding
    by_mode = {"func": queries[0::2], "block": queries[1::2]}
    known_items = real_queries(files[1::2], 300)  # other files' docstrings, asked after the timing

    with ExitStack() as stack:
        db, cache = stack.enter_context(build_dirs(args.db))
        server_home = None
        if args.store == "neo4j":
            uri, _, server_home = stack.enter_context(neo4j_database())
            os.environ["NEO4J_URI"] = uri
        with KnowledgeBase(db, args.store, embedder=args.embedder, cache_dir=cache) as kb:
            started = time.perf_counter()
            dim = kb.embedder.dim
            load_s = time.perf_counter() - started
            clock, children_cpu = StageClock(), children_cpu_seconds()
            with MemoryWatch() as memory:
                report = kb.build(files, prepare_pruning=args.prepare_pruning, progress=clock).report
            children_cpu = children_cpu_seconds() - children_cpu
            total_s = time.perf_counter() - clock.started
            total_cpu = time.process_time() - clock.started_cpu
            build_rss = peak_rss_bytes()
            model_inputs = getattr(getattr(kb.embedder, "inner", None), "inputs_encoded", None)
            index_wait_s = awaited_indexes(kb.store)
            counts = kb.stats().counts
            latency, answers = time_queries(kb, by_mode, args.k)
            retrieval = known_item_recall(kb, known_items)
            if args.exact_db is not None:
                retrieval["vector_search"] = vector_recall(kb, args.exact_db, list(known_items)[:100])
            embedder_name = kb.embedder.name
        write_s = clock.seconds("write", "embed")
        # the BM25 indexes are built while a forked child links (pkg.indexing.link_store): what linking
        # adds to the build is reading its tables, waiting for the child after the indexes, and writing
        linking = {
            "read_tables": clock.at["link", 0] - clock.last["write"],
            "wait_after_indexes": clock.at["link", 1] - clock.last["index"],
            "write_edges": clock.at["link", 2] - clock.at["link", 1],
            "forked_child_cpu_seconds": children_cpu,
            "forked_child_peak_rss_bytes": peak_rss_bytes(resource.RUSAGE_CHILDREN),
        }
        stages = {
            "parse": clock.seconds("parse", None),
            "embed": clock.seconds("embed", "parse"),
            "write": write_s,
            "link": linking["read_tables"] + linking["wait_after_indexes"] + linking["write_edges"],
            "bm25_indexes": clock.last["index"] - clock.at["link", 0],
            "total": total_s,
            "index_wait_after_build": index_wait_s,
        }
        # CPU seconds of this process: less sensitive than the wall clock to other work on the machine
        cpu = {
            "parse": clock.seconds("parse", None, cpu=True),
            "embed": clock.seconds("embed", "parse", cpu=True),
            "write": clock.seconds("write", "embed", cpu=True),
            "total": total_cpu,
        }
        stored_vectors = sum(counts.nodes.get(label.value, 0) for label in EMBEDDED_LABELS)
        db_bytes = disk_bytes(server_home / "data" if server_home else db)
        cache_bytes = disk_bytes(cache)
        if args.db is None:
            shutil.rmtree(cache, ignore_errors=True)

    types_s, walk_s = type_facts_seconds(files)
    result = {
        "benchmark": "scale: site-packages corpus",
        "store": args.store,
        "embedder": embedder_name,
        "date": utc_now(),
        "machine": machine(),
        "load_before": load_before,
        "beside_before": beside_before,
        "corpus": {
            "root": str(SITE_PACKAGES),
            "files": len(files),
            "functions_counted": counted,
            "packages": packages,
            "last_file": str(files[-1].relative_to(SITE_PACKAGES)),
            "selection_seconds": select_s,
        },
        "build": {
            "prepare_pruning": args.prepare_pruning,
            "model_load_seconds": load_s,
            "seconds": stages,
            "cpu_seconds": cpu,
            "functions": report.functions,
            "blocks": report.blocks,
            "texts_embedded": report.texts_embedded,
            # non-zero when the cache beside --db holds an interrupted build's vectors (not embedded again)
            "texts_from_cache": report.texts_from_cache,
            # sentence-transformers models run once per distinct model input (texts cut at the window)
            "model_inputs": model_inputs,
            "pruning_variants": report.pruning_variants,
            "texts_per_s": report.texts_embedded / stages["embed"] if stages["embed"] else None,
            "nodes": counts.nodes,
            "relationships": counts.relationships,
            "skipped": len(report.skipped),
            "issues": len(report.issues),
        },
        # what resolving calls costs: the type facts the linking pass reads and what the pass adds to
        # the build's wall time (an idle machine's CPU seconds are its wall seconds; parsing runs on one
        # thread); the node walk the facts share with the structure reader is not theirs (before
        # 2026-11-29 it was counted in). Before 2026-12-07 the pass ran alone, after the writes: all of
        # its time was added; since, a forked child links while the BM25 indexes are built.
        "resolver": {
            "type_facts_cpu_seconds": types_s,
            "shared_walk_cpu_seconds": walk_s,
            "link_seconds": stages["link"],
            "linking": linking,
            "share_of_build": (types_s + stages["link"]) / stages["total"],
        },
        "memory": {
            "peak_rss_build_bytes": build_rss,
            "peak_rss_bytes": peak_rss_bytes(),
            # the whole machine's available memory, least during the build and while linking beside the indexes
            "machine_peak_taken_build_bytes": memory.peak_taken(),
            "machine_peak_taken_linking_bytes": memory.peak_taken(clock.at["link", 0], clock.at["link", 2]),
        },
        "disk": {
            "db_bytes": db_bytes,
            "cache_bytes": cache_bytes,
            "stored_vectors": stored_vectors,
            "raw_vector_bytes": stored_vectors * dim * 4,
            "db_to_raw_vectors": db_bytes / (stored_vectors * dim * 4),
            "raw_embedded_text_bytes": report.texts_embedded * dim * 4,
        },
        "query": {"k": args.k, "ms": latency, "load_after": os.getloadavg()[0]},
        "retrieval": {key: value for key, value in retrieval.items() if key != "ids"},
        "answers": answers,
        "known_item_ids": retrieval["ids"],
    }
    compared = None
    if args.compare is not None:
        earlier = json.loads(args.compare.read_text())
        compared = compare_answers(answers, earlier["answers"], retrieval["ids"], earlier.get("known_item_ids", {}))
        result["compare"] = {"with": str(args.compare), **compared}
    out = write_result(args.out, "scale", result)
    summary = {key: result[key] for key in ("build", "memory", "disk", "query", "retrieval")}
    print(json.dumps(summary, indent=2))
    if compared is not None:
        print(json.dumps({key: v for key, v in compared.items() if key != "differ"}))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
