"""The build pipeline: discover sources, extract functions, embed, write to a store."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ingest.graph_builder import UnitGraph, branch_spans, chunk_graph, row_node, unit_graph
from ingest.python_parser import extract_python
from ingest.sources import Skipped, discover, read_items
from pkg.embedders import CachedEmbedder, Embedder
from pkg.errors import ConfigError, CorpusError
from pkg.graph import Label, Node
from pkg.stores.base import EmbedderInfo, GraphStore
from retrieval.prune import branch_variants

#: progress(stage, done, total): called as work advances; stages are "parse", "embed", "write".
Progress = Callable[[str, int, int], None]
EMBED_BATCH = 256
WRITE_BATCH = 2000
#: What a build can put in the graph: functions (NAME/IMPL/BLOCK), rows (ROW), chunks (CHUNK).
PARTS = ("functions", "rows", "chunks")
DEFAULT_CHUNK_SIZE = 2000


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


def _no_progress(stage: str, done: int, total: int) -> None:
    """Default progress sink: ignore."""


@dataclass
class ParsedCorpus:
    """A corpus parsed into per-unit graphs, not yet embedded or stored."""

    units: list[UnitGraph]
    report: BuildReport

    @property
    def nodes(self) -> list[Node]:
        return [n for g in self.units for n in g.nodes]


def parse_corpus(
    paths: Sequence[Path],
    progress: Progress = _no_progress,
    parts: Collection[str] = PARTS,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> ParsedCorpus:
    """Discover and parse every source under the paths into the graph parts asked for (functions:
    NAME/IMPL/BLOCK; rows: ROW; chunks: CHUNK). Raises CorpusError if nothing is found."""
    unknown = set(parts) - set(PARTS)
    if unknown or not parts:
        raise ConfigError(f"unknown graph parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    started = time.perf_counter()
    report = BuildReport()
    files, skipped = discover(paths)
    report.skipped.extend(skipped)
    graphs: list[UnitGraph] = []
    rows: set[tuple[str, int]] = set()
    for done, path in enumerate(files, start=1):
        items, item_skips = read_items(path)
        report.skipped.extend(item_skips)
        if items or not item_skips:
            report.files += 1
        for item in items:
            if item.row is not None:
                rows.add((item.source, item.row))
            graph = UnitGraph()
            if "rows" in parts:
                graph.nodes.append(row_node(item))
            for unit in item.units:
                if "functions" in parts:
                    extraction = extract_python(unit.text)
                    report.issues.extend(ParseIssue(unit.source, unit.row, i.line, i.message) for i in extraction.issues)
                    found = unit_graph(unit, extraction.functions)
                    graph.nodes += found.nodes
                    graph.edges += found.edges
                    report.functions += len(extraction.functions)
                if "chunks" in parts:
                    chunks = chunk_graph(unit, chunk_size)
                    graph.nodes += chunks.nodes
                    graph.edges += chunks.edges
            graphs.append(graph)
        progress("parse", done, len(files))
    corpus = ParsedCorpus([g for g in graphs if g.nodes], report)
    if not corpus.units:
        what = "functions" if set(parts) == {"functions"} else "code or rows"
        raise CorpusError(f"no {what} found in {', '.join(str(p) for p in paths)}")
    report.rows = len(rows)
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


def _write_batches(units: list[UnitGraph]) -> Iterator[UnitGraph]:
    """Whole units grouped into batches of about WRITE_BATCH nodes, so every write is self-contained."""
    batch = UnitGraph()
    for unit in units:
        batch.nodes.extend(unit.nodes)
        batch.edges.extend(unit.edges)
        if len(batch.nodes) >= WRITE_BATCH:
            yield batch
            batch = UnitGraph()
    if batch.nodes:
        yield batch


def pruning_variants(units: list[UnitGraph]) -> list[str]:
    """Every text that pruning can produce (one child branch removed) for the code nodes of the units."""
    variants = []
    for unit in units:
        spans = branch_spans(unit)
        for node in unit.nodes:
            if node.id in spans:
                found = branch_variants(node.props["text"], node.props["start_line"], spans[node.id])
                variants.extend(text for text, _ in found)
    return variants


def load(
    corpus: ParsedCorpus,
    store: GraphStore,
    embedder: Embedder,
    progress: Progress = _no_progress,
    prepare_pruning: bool = True,
) -> BuildReport:
    """Embed a parsed corpus and write it to the store, whole units per write (each one transaction).

    With `prepare_pruning`, the texts pruning can produce are embedded too: behind the embedding
    cache, query-time pruning then needs no model call."""
    started = time.perf_counter()
    report = corpus.report
    store.check_embedder(EmbedderInfo(embedder.name, embedder.dim), record=True)
    cached = isinstance(embedder, CachedEmbedder)
    hits, misses = (embedder.hits, embedder.misses) if cached else (0, 0)
    texts = [n.embed_text for n in corpus.nodes]
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
    total = len(corpus.nodes)
    for batch in _write_batches(corpus.units):
        store.write([replace(n, vector=vectors[n.embed_text]) for n in batch.nodes], batch.edges)
        report.nodes += len(batch.nodes)
        report.edges += len(batch.edges)
        progress("write", report.nodes, total)
    report.seconds += time.perf_counter() - started
    return report


def build(
    paths: Sequence[Path],
    store: GraphStore,
    embedder: Embedder,
    progress: Progress = _no_progress,
    prepare_pruning: bool = True,
    parts: Collection[str] = PARTS,
) -> BuildReport:
    """Build (or extend) a PKG in the store from the code under the paths."""
    return load(parse_corpus(paths, progress, parts), store, embedder, progress, prepare_pruning)
