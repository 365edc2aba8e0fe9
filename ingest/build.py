"""The build pipeline: discover sources, extract functions, embed, write to a store."""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

import numpy as np

from ingest.code_parser import extract_code
from ingest.graph_builder import UnitGraph, branch_spans, chunk_graph, row_node, unit_graph
from ingest.json_graph import json_graph
from ingest.python_parser import extract_python
from ingest.sources import Skipped, Structurer, discover, read_items
from ingest.tutorials import is_tutorial
from pkg.embedders import CachedEmbedder, Embedder
from pkg.errors import ConfigError, CorpusError
from pkg.graph import EMBEDDED_LABELS, Label, Node
from pkg.progress import Progress, no_progress
from pkg.stores.base import EmbedderInfo, GraphStore, SourceRecord
from retrieval.prune import branch_variants

T = TypeVar("T")
R = TypeVar("R")

EMBED_BATCH = 256
WRITE_BATCH = 2000
#: What a build can put in the graph: functions (NAME/IMPL/BLOCK), rows (ROW), chunks (CHUNK),
#: json (PATH/PATHVALUE of JSON files, JSONL rows and tutorials).
PARTS = ("functions", "rows", "chunks", "json")
DEFAULT_CHUNK_SIZE = 2000
#: Bump when extraction changes what a file yields, so that every file is rebuilt.
GRAPH_VERSION = 2  # 2: NAME nodes no longer embedded


@dataclass(frozen=True)
class ParseIssue:
    """A function or region left out of a unit because it does not parse."""

    source: str
    row: int | None
    line: int
    message: str


@dataclass
class BuildReport:
    """What a build did."""

    files: int = 0
    unchanged_files: int = 0
    removed_files: int = 0
    rows: int = 0
    functions: int = 0
    blocks: int = 0
    chunks: int = 0
    nodes: int = 0
    edges: int = 0
    pruning_variants: int = 0
    texts_embedded: int = 0
    texts_from_cache: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    issues: list[ParseIssue] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class SourceGraph:
    """Everything one file contributes to the graph; a rebuild replaces it as a whole."""

    record: SourceRecord
    graph: UnitGraph


@dataclass
class ParsedCorpus:
    """The files of a corpus that changed, parsed into graphs, and the files that are gone."""

    sources: list[SourceGraph]
    deleted: list[str]
    report: BuildReport

    @property
    def units(self) -> list[UnitGraph]:
        return [s.graph for s in self.sources]

    @property
    def nodes(self) -> list[Node]:
        return [n for s in self.sources for n in s.graph.nodes]


def fingerprint(data: bytes, parts: Collection[str], chunk_size: int, structurer: str = "") -> str:
    """What decides whether a file must be rebuilt: its bytes and the build settings (for a
    tutorial, also the structurer that turns it into JSON, when it is not the deterministic one)."""
    settings = f"{GRAPH_VERSION}|{','.join(sorted(parts))}|{chunk_size}|{structurer}".encode()
    return hashlib.sha256(settings + data).hexdigest()


def _file_graph(
    path: Path, parts: Collection[str], chunk_size: int, report: BuildReport, structurer: Structurer | None
) -> UnitGraph | None:
    """The graph of one file, or None if it cannot be read (the reason is in report.skipped)."""
    items, skips = read_items(path, structurer)
    report.skipped.extend(skips)
    if not items and skips:
        return None
    graph = UnitGraph()
    for item in items:
        if item.row is not None:
            report.rows += 1
        if "rows" in parts:
            graph.nodes.append(row_node(item))
        if "json" in parts and item.document is not None:
            found = json_graph(item.document, item.source, item.row)
            graph.nodes += found.nodes
            graph.edges += found.edges
        for unit in item.units:
            if "functions" in parts:
                extraction = extract_python(unit.text) if unit.lang == "python" else extract_code(unit.text, unit.lang)
                report.issues.extend(ParseIssue(unit.source, unit.row, i.line, i.message) for i in extraction.issues)
                found = unit_graph(unit, extraction.functions)
                graph.nodes += found.nodes
                graph.edges += found.edges
                report.functions += len(extraction.functions)
            if "chunks" in parts:
                chunks = chunk_graph(unit, chunk_size)
                graph.nodes += chunks.nodes
                graph.edges += chunks.edges
    return graph


def _under(path: str, roots: Sequence[Path]) -> bool:
    return any(path == str(root) or path.startswith(f"{root}{os.sep}") for root in roots)


def parse_corpus(
    paths: Sequence[Path],
    progress: Progress = no_progress,
    parts: Collection[str] = PARTS,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    known: Mapping[str, str] | None = None,
    structurer: Structurer | None = None,
) -> ParsedCorpus:
    """Discover the files under the paths and parse those whose fingerprint differs from `known`
    (what the store already holds) into the graph parts asked for (functions: NAME/IMPL/BLOCK;
    rows: ROW; chunks: CHUNK; json: PATH/PATHVALUE). Known files under the paths that are gone are listed as deleted.
    A `structurer` (with a `name`) replaces the deterministic tutorial converters.
    Raises CorpusError if the paths hold nothing to build."""
    unknown = set(parts) - set(PARTS)
    if unknown or not parts:
        raise ConfigError(f"unknown graph parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    known = known or {}
    started = time.perf_counter()
    report = BuildReport()
    files, skipped = discover(paths)
    report.skipped.extend(skipped)
    sources: list[SourceGraph] = []
    present: set[str] = set()
    for done, path in enumerate(files, start=1):
        try:
            by = getattr(structurer, "name", "custom") if structurer is not None and is_tutorial(path) else ""
            stamp = fingerprint(path.read_bytes(), parts, chunk_size, by)
        except OSError as exc:
            report.skipped.append(Skipped(str(path), f"unreadable: {exc.strerror}"))
            continue
        if known.get(str(path)) == stamp:
            present.add(str(path))
            report.unchanged_files += 1
        elif (graph := _file_graph(path, parts, chunk_size, report, structurer)) is not None:
            present.add(str(path))
            report.files += 1
            sources.append(SourceGraph(SourceRecord(str(path), stamp), graph))
        progress("parse", done, len(files))
    roots = [p.resolve() for p in paths]
    deleted = sorted(p for p in known if p not in present and _under(p, roots))
    corpus = ParsedCorpus(sources, deleted, report)
    # A known file that now yields nothing is work too: its old nodes must go.
    if not any(s.graph.nodes or s.record.path in known for s in sources) and not report.unchanged_files and not deleted:
        what = "functions" if set(parts) == {"functions"} else "code or rows"
        raise CorpusError(f"no {what} found in {', '.join(str(p) for p in paths)}")
    report.removed_files = len(deleted)
    labels = Counter(n.label for n in corpus.nodes)
    report.blocks, report.chunks = labels[Label.BLOCK], labels[Label.CHUNK]
    report.seconds = time.perf_counter() - started
    return corpus


def embed_texts(texts: list[str], embedder: Embedder, progress: Progress) -> dict[str, np.ndarray]:
    """Vectors of the distinct texts, embedded in batches."""
    distinct = list(dict.fromkeys(texts))
    vectors: dict[str, np.ndarray] = {}
    for start in range(0, len(distinct), EMBED_BATCH):
        chunk = distinct[start : start + EMBED_BATCH]
        vectors.update(zip(chunk, embedder.embed_documents(chunk)))
        progress("embed", min(start + EMBED_BATCH, len(distinct)), len(distinct))
    return vectors


def embedded_texts(nodes: Iterable[Node]) -> list[str]:
    """The texts of the nodes that carry a vector (EMBEDDED_LABELS), in order."""
    return [n.embed_text for n in nodes if n.label in EMBEDDED_LABELS]


def with_vectors(nodes: Iterable[Node], vectors: Mapping[str, np.ndarray]) -> list[Node]:
    """The nodes, each of EMBEDDED_LABELS given the vector of its text (as embed_texts returns them)."""
    return [replace(n, vector=vectors[n.embed_text]) if n.label in EMBEDDED_LABELS else n for n in nodes]


def _write_batches(sources: list[SourceGraph]) -> Iterator[list[SourceGraph]]:
    """Whole sources grouped into batches of about WRITE_BATCH nodes; each batch is one write."""
    batch: list[SourceGraph] = []
    size = 0
    for source in sources:
        batch.append(source)
        size += len(source.graph.nodes)
        if size >= WRITE_BATCH:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def pruning_variants(units: list[UnitGraph]) -> list[str]:
    """Every text that pruning can produce (one child branch removed) for the code nodes of the units."""
    variants = []
    for unit in units:
        spans = branch_spans(unit)
        langs = {node.id: node.props["lang"] for node in unit.nodes if node.label is Label.IMPL}
        for node in unit.nodes:
            if node.id in spans:
                lang = langs[node.props.get("impl_id", node.id)]
                found = branch_variants(node.props["text"], node.props["start_line"], spans[node.id], lang)
                variants.extend(text for text, _ in found)
    return variants


def load(
    corpus: ParsedCorpus,
    store: GraphStore,
    embedder: Embedder,
    progress: Progress = no_progress,
    prepare_pruning: bool = True,
) -> BuildReport:
    """Embed the changed sources of a parsed corpus and write them to the store, whole sources per
    write (each one transaction, replacing what the store held for them); remove deleted sources.

    With `prepare_pruning`, the texts pruning can produce are embedded too: behind the embedding
    cache, query-time pruning then needs no model call."""
    started = time.perf_counter()
    report = corpus.report
    store.check_embedder(EmbedderInfo(embedder.name, embedder.dim), record=True)
    cached = isinstance(embedder, CachedEmbedder)
    hits, misses = (embedder.hits, embedder.misses) if cached else (0, 0)
    texts = embedded_texts(corpus.nodes)
    if prepare_pruning:
        variants = pruning_variants(corpus.units)
        report.pruning_variants = len(variants)
        texts += variants
    vectors = embed_texts(texts, embedder, progress)
    if cached:
        report.texts_from_cache = embedder.hits - hits
        report.texts_embedded = embedder.misses - misses
    else:
        report.texts_embedded = len(vectors)
    if corpus.deleted:
        store.delete_sources(corpus.deleted)
    total = len(corpus.nodes)

    def write(batch: list[SourceGraph]) -> tuple[int, int]:
        nodes = with_vectors((n for s in batch for n in s.graph.nodes), vectors)
        edges = [e for s in batch for e in s.graph.edges]
        store.replace_sources([s.record for s in batch], nodes, edges)
        return len(nodes), len(edges)

    for written_nodes, written_edges in in_flight(write, _write_batches(corpus.sources), store.writers):
        report.nodes += written_nodes
        report.edges += written_edges
        progress("write", report.nodes, total)
    report.seconds += time.perf_counter() - started
    return report


def in_flight(work: Callable[[T], R], items: Iterable[T], at_once: int) -> Iterator[R]:
    """work(item) for each item, at most `at_once` running together on threads; results as they
    finish. The first failure is raised once the calls already running are over."""
    if at_once <= 1:
        yield from map(work, items)
        return
    with ThreadPoolExecutor(at_once) as pool:
        running: set[Future[R]] = set()
        for item in items:
            if len(running) == at_once:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                yield from (future.result() for future in done)
            running.add(pool.submit(work, item))
        yield from (future.result() for future in as_completed(running))


def build(
    paths: Sequence[Path],
    store: GraphStore,
    embedder: Embedder,
    progress: Progress = no_progress,
    prepare_pruning: bool = True,
    parts: Collection[str] = PARTS,
) -> BuildReport:
    """Build, extend or update a PKG in the store from the code under the paths: only files that
    changed since the last build are parsed and written, files that are gone are removed."""
    corpus = parse_corpus(paths, progress, parts, known=store.sources())
    return load(corpus, store, embedder, progress, prepare_pruning)
