"""Parsing a corpus: discover its files, keep those that changed, and turn each into its graph
(nodes and edges without vectors). Embedding and writing happen above, in `pkg.indexing`."""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ingest.extract import extract
from ingest.graph_builder import UnitGraph, branch_spans, chunk_graph, qualified_names, row_node, unit_graph
from ingest.json_graph import json_graph
from ingest.sources import Skipped, Structurer, discover, read_items
from ingest.structure import file_structure
from ingest.tutorials import is_tutorial
from pkg.code.branches import branch_variants
from pkg.code.search_text import embedded_text
from pkg.code.syntax_tree import python_tree
from pkg.config import DEFAULT_CHUNK_SIZE, MAX_FILE_BYTES, PARTS
from pkg.errors import ConfigError, CorpusError
from pkg.graph import Label, Node, SourceRecord
from pkg.progress import Progress, no_progress
from pkg.schema import BlockNode, ImplNode, NameNode, record_of

#: The labels of code structure, which a file has even without functions.
STRUCTURE_LABELS = (Label.FILE, Label.CLASS, Label.MODULE)
#: Bump when extraction changes what a file yields, so that every file is rebuilt.
GRAPH_VERSION = 9  # 2: NAME nodes no longer embedded; 3: Python functions from `ast` wherever it parses the file;
# 4: FILE, CLASS and MODULE nodes, CONTAINS, and the references linking turns into CALLS, IMPORTS, INHERITS;
# 5: each FILE keeps the stubs of its classes and constants (refs["stubs"]) for definitions context;
# 6: type facts in refs for the resolver, and @overload stubs folded into their implementation;
# 7: each Python FILE keeps the names its code uses (its `uses`), so definitions context parses none;
# 8: a method is embedded with its class's name in words after its own (pkg.code.search_text);
# 9: a function is embedded with its docstring's prose first, its doctests, literal blocks and directives after it


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
    links: int = 0  # CALLS, INHERITS and FILE→FILE IMPORTS edges the corpus holds after the build
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
    path: Path,
    parts: Collection[str],
    chunk_size: int,
    report: BuildReport,
    structurer: Structurer | None,
    stamp: str = "",
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
            graph.add(row_node(item))
        if "json" in parts and item.document is not None:
            found = json_graph(item.document, item.source, item.row)
            graph.nodes += found.nodes
            graph.edges += found.edges
        for unit in item.units:
            if "functions" in parts:
                tree = python_tree(unit.text) if unit.lang == "python" else None  # one parse, three readers
                extraction = extract(unit.text, unit.lang, tree)
                report.issues.extend(ParseIssue(unit.source, unit.row, i.line, i.message) for i in extraction.issues)
                found = unit_graph(unit, extraction.functions)
                graph.nodes += found.nodes
                graph.edges += found.edges
                if unit.row is None and unit.fence is None:  # a whole code file
                    names = [r for n in found.nodes if isinstance(r := record_of(n), NameNode)]
                    graph.add(*file_structure(unit.source, unit.lang, unit.text, stamp, names, tree))
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
    max_file_bytes: int = MAX_FILE_BYTES,
    own_db: Path | None = None,
) -> ParsedCorpus:
    """Discover the files under the paths and parse those whose fingerprint differs from `known`
    (what the store already holds) into the graph parts asked for (functions: NAME/IMPL/BLOCK, FILE/CLASS/MODULE;
    rows: ROW; chunks: CHUNK; json: PATH/PATHVALUE). Known files under the paths that are gone are listed as deleted.
    A `structurer` (with a `name`) replaces the deterministic tutorial converters. Files larger than
    `max_file_bytes` are skipped, like everything else left out, with their reason in report.skipped;
    so are PKG databases, `own_db` (the build's own) among them.
    Raises CorpusError if the paths hold nothing to build."""
    unknown = set(parts) - set(PARTS)
    if unknown or not parts:
        raise ConfigError(f"unknown graph parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    known = known or {}
    started = time.perf_counter()
    report = BuildReport()
    files, skipped = discover(paths, max_file_bytes, own_db)
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
        elif (graph := _file_graph(path, parts, chunk_size, report, structurer, stamp)) is not None:
            present.add(str(path))
            report.files += 1
            sources.append(SourceGraph(SourceRecord(str(path), stamp), graph))
        progress("parse", done, len(files))
    roots = [p.resolve() for p in paths]
    deleted = sorted(p for p in known if p not in present and _under(p, roots))
    corpus = ParsedCorpus(sources, deleted, report)
    # A known file that now yields nothing is work too: its old nodes must go. Structure alone (a
    # FILE and its imports) is no content.
    found = any(n.label not in STRUCTURE_LABELS for s in sources for n in s.graph.nodes)
    if not (found or any(s.record.path in known for s in sources)) and not report.unchanged_files and not deleted:
        what = "functions" if set(parts) == {"functions"} else "code or rows"
        raise CorpusError(f"no {what} found in {', '.join(str(p) for p in paths)}")
    report.removed_files = len(deleted)
    labels = Counter(n.label for n in corpus.nodes)
    report.blocks, report.chunks = labels[Label.BLOCK], labels[Label.CHUNK]
    report.seconds = time.perf_counter() - started
    return corpus


def pruning_variants(units: list[UnitGraph]) -> list[str]:
    """Every text that pruning embeds (one child branch removed) for the code nodes of the units: a
    function's as its search text."""
    variants: list[str] = []
    for unit in units:
        spans = branch_spans(unit)
        names = qualified_names([unit])
        code = [record_of(n) for n in unit.nodes if n.label in (Label.IMPL, Label.BLOCK)]
        langs = {node.id: node.lang for node in code if isinstance(node, ImplNode)}
        for node in code:
            if isinstance(node, ImplNode | BlockNode) and node.id in spans:
                lang, name = langs[node.impl_id], names.get(node.id, "")
                found = branch_variants(node.text, node.start_line, spans[node.id], lang)
                variants.extend(embedded_text(node.LABEL, text, lang, name) for text, _ in found)
    return variants
