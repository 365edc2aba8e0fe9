"""Turning extracted functions into PKG nodes and edges with content-addressed ids."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ingest.chunking import chunk_source
from ingest.sources import CorpusItem, SourceUnit
from pkg.code.functions import Block, Function
from pkg.graph import Edge, Label, Node, Span, content_id, text_hash
from pkg.schema import (
    BlockNode,
    ChunkNode,
    HasBlock,
    HasImpl,
    ImplNode,
    NameNode,
    Next,
    NodeRecord,
    Parent,
    RelRecord,
    RowNode,
    record_of,
)


@dataclass
class UnitGraph:
    """Nodes and edges of one source unit or corpus item (written together, in one transaction)."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)

    def add(self, *records: NodeRecord | RelRecord) -> None:
        """Append the store rows of typed records."""
        for record in records:
            if isinstance(record, NodeRecord):
                self.nodes.append(record.node())
            else:
                self.edges.append(record.edge())


def _block_nodes(
    impl_id: str, source: str, blocks: tuple[Block, ...], path: tuple[int, ...], graph: UnitGraph
) -> list[str]:
    ids = []
    for index, block in enumerate(blocks):
        here = (*path, index)
        block_id = content_id(Label.BLOCK, impl_id, here, text_hash(block.text))
        graph.add(
            BlockNode(
                id=block_id,
                source=source,
                kind=block.kind,
                text=block.text,
                start_line=block.start_line,
                end_line=block.end_line,
                depth=len(here),
                impl_id=impl_id,
            )
        )
        for child_id in _block_nodes(impl_id, source, block.children, here, graph):
            graph.add(Parent(block_id, child_id))
        ids.append(block_id)
    return ids


def unit_graph(unit: SourceUnit, functions: tuple[Function, ...]) -> UnitGraph:
    """NAME, IMPL and BLOCK nodes for every function of a unit, with their edges.

    Ids derive from the unit's identity, the function's qualified name and occurrence, and the
    hash of its text: rebuilding the same corpus yields the same ids.
    """
    graph = UnitGraph()
    occurrences: Counter[str] = Counter()
    for fn in functions:
        occurrence = occurrences[fn.qualname]
        occurrences[fn.qualname] += 1
        key = (unit.source, unit.row, unit.fence, fn.qualname, occurrence, text_hash(fn.text))
        name_id = content_id(Label.NAME, *key)
        impl_id = content_id(Label.IMPL, *key)
        lines = {"start_line": fn.start_line, "end_line": fn.end_line}
        graph.add(
            NameNode(id=name_id, source=unit.source, name=fn.qualname, row=unit.row, lang=unit.lang, **lines),
            ImplNode(id=impl_id, source=unit.source, text=fn.text, lang=unit.lang, **lines),
            HasImpl(name_id, impl_id),
        )
        for block_id in _block_nodes(impl_id, unit.source, fn.blocks, (), graph):
            graph.add(HasBlock(impl_id, block_id))
    return graph


def qualified_names(units: Iterable[UnitGraph]) -> dict[str, str]:
    """The qualified name of each IMPL node's function, by IMPL id."""
    names: dict[str, str] = {}
    for unit in units:
        of_name = {n.id: str(n.props["name"]) for n in unit.nodes if n.label is Label.NAME}
        names.update((e.dst, of_name[e.src]) for e in unit.edges if e.type is HasImpl.TYPE)
    return names


def branch_spans(unit: UnitGraph) -> dict[str, list[Span]]:
    """For each IMPL or BLOCK node of a unit, the spans of its direct child blocks, in line order."""
    blocks = (record_of(n) for n in unit.nodes if n.label is Label.BLOCK)
    spans = {block.id: block.span() for block in blocks if isinstance(block, BlockNode)}
    children: dict[str, list[Span]] = {}
    for edge in unit.edges:
        if edge.type in (HasBlock.TYPE, Parent.TYPE):
            children.setdefault(edge.src, []).append(spans[edge.dst])
    return {node_id: sorted(found, key=lambda s: s.start_line) for node_id, found in children.items()}


def row_node(item: CorpusItem) -> RowNode:
    """The ROW node of a corpus item: the whole file, or the whole JSONL row."""
    return RowNode(
        id=content_id(Label.ROW, item.source, item.row, text_hash(item.text)),
        source=item.source,
        row=item.row,
        text=item.text,
        lines=item.text.count("\n") + 1,
    )


def chunk_graph(unit: SourceUnit, max_chunk_size: int) -> UnitGraph:
    """cAST CHUNK nodes of a unit, linked by NEXT in file order."""
    graph = UnitGraph()
    previous: str | None = None
    for index, chunk in enumerate(chunk_source(unit.text, unit.lang, max_chunk_size)):
        chunk_id = content_id(Label.CHUNK, unit.source, unit.row, unit.fence, index, text_hash(chunk.text))
        graph.add(
            ChunkNode(
                id=chunk_id,
                source=unit.source,
                row=unit.row,
                index=index,
                text=chunk.text,
                start_line=chunk.start_line,
                end_line=chunk.end_line,
            )
        )
        if previous is not None:
            graph.add(Next(previous, chunk_id))
        previous = chunk_id
    return graph
