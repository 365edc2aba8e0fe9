"""The build pipeline: discover sources, extract functions, embed, write to a store."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ingest.graph_builder import UnitGraph, unit_graph
from ingest.python_parser import extract_python
from ingest.sources import Skipped, discover, read_units
from pkg.embedders import CachedEmbedder, Embedder
from pkg.errors import CorpusError
from pkg.graph import Edge, Node
from pkg.stores.base import EmbedderInfo, GraphStore

#: progress(stage, done, total): called as work advances; stages are "parse", "embed", "write".
Progress = Callable[[str, int, int], None]
EMBED_BATCH = 256
WRITE_BATCH = 2000


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
    nodes: int = 0
    edges: int = 0
    texts_embedded: int = 0
    texts_from_cache: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    issues: list[ParseIssue] = field(default_factory=list)
    seconds: float = 0.0


def _no_progress(stage: str, done: int, total: int) -> None:
    """Default progress sink: ignore."""


def parse_corpus(paths: Sequence[Path], report: BuildReport, progress: Progress) -> list[UnitGraph]:
    """Discover and parse every source under the paths into per-unit graphs."""
    files, skipped = discover(paths)
    report.skipped.extend(skipped)
    graphs: list[UnitGraph] = []
    rows: set[tuple[str, int]] = set()
    for done, path in enumerate(files, start=1):
        units, unit_skips = read_units(path)
        report.skipped.extend(unit_skips)
        if units or not unit_skips:
            report.files += 1
        for unit in units:
            if unit.row is not None:
                rows.add((unit.source, unit.row))
            extraction = extract_python(unit.text)
            report.issues.extend(ParseIssue(unit.source, unit.row, i.line, i.message) for i in extraction.issues)
            graph = unit_graph(unit, extraction.functions)
            report.functions += len(extraction.functions)
            graphs.append(graph)
        progress("parse", done, len(files))
    report.rows = len(rows)
    return graphs


def embed_nodes(nodes: list[Node], embedder: Embedder, progress: Progress) -> list[Node]:
    """Return the nodes with their vectors; each distinct text is embedded once."""
    texts = list(dict.fromkeys(n.embed_text for n in nodes))
    vectors: dict[str, np.ndarray] = {}
    for start in range(0, len(texts), EMBED_BATCH):
        chunk = texts[start : start + EMBED_BATCH]
        vectors.update(zip(chunk, embedder.embed_documents(chunk)))
        progress("embed", min(start + EMBED_BATCH, len(texts)), len(texts))
    return [replace(n, vector=vectors[n.embed_text]) for n in nodes]


def build(
    paths: Sequence[Path],
    store: GraphStore,
    embedder: Embedder,
    progress: Progress = _no_progress,
) -> BuildReport:
    """Build (or extend) a PKG in the store from the code under the paths."""
    started = time.perf_counter()
    report = BuildReport()
    graphs = parse_corpus(paths, report, progress)
    nodes: list[Node] = [n for g in graphs for n in g.nodes]
    edges: list[Edge] = [e for g in graphs for e in g.edges]
    if not nodes:
        raise CorpusError(f"no functions found in {', '.join(str(p) for p in paths)}")
    report.blocks = sum(1 for n in nodes if n.label == "BLOCK")
    store.check_embedder(EmbedderInfo(embedder.name, embedder.dim), record=True)
    cached = isinstance(embedder, CachedEmbedder)
    hits, misses = (embedder.hits, embedder.misses) if cached else (0, 0)
    nodes = embed_nodes(nodes, embedder, progress)
    if cached:
        report.texts_from_cache = embedder.hits - hits
        report.texts_embedded = embedder.misses - misses
    else:
        report.texts_embedded = len({n.embed_text for n in nodes})
    for start in range(0, len(nodes), WRITE_BATCH):
        store.write(nodes[start : start + WRITE_BATCH], [])
        progress("write", min(start + WRITE_BATCH, len(nodes)), len(nodes) + len(edges))
    for start in range(0, len(edges), WRITE_BATCH):
        store.write([], edges[start : start + WRITE_BATCH])
        progress("write", len(nodes) + min(start + WRITE_BATCH, len(edges)), len(nodes) + len(edges))
    report.nodes, report.edges = len(nodes), len(edges)
    report.seconds = time.perf_counter() - started
    return report
