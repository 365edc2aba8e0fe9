"""The typed graph schema: one frozen record per node label and per relationship type.

Ingesters build records and turn them into store rows (Node, Edge); stores and retrieval read rows
back as records. NODE_RECORDS and REL_RECORDS are the schema tables that the stores iterate over.
A record's properties are its dataclass fields (minus `id` for nodes, `src` and `dst` for
relationships), stored under the field's name; a field typed `... | None` may be absent from a row.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import NoneType, UnionType
from typing import Any, ClassVar, Self, TypeVar

from pkg.errors import StoreError
from pkg.graph import Edge, Label, Node, Rel, Span

_PROPERTIES: dict[type, tuple[tuple[str, bool], ...]] = {}
_NAMES: dict[type, tuple[str, ...]] = {}


def _properties(record: type) -> tuple[tuple[str, bool], ...]:
    """(name, optional) of every stored property of a record type, in field order (worked out once)."""
    if record not in _PROPERTIES:
        hints = typing.get_type_hints(record)
        _PROPERTIES[record] = tuple(
            (f.name, isinstance(hints[f.name], UnionType) and NoneType in typing.get_args(hints[f.name]))
            for f in fields(record)
            if f.name not in ("id", "src", "dst")
        )
    return _PROPERTIES[record]


def _property_names(record: type) -> tuple[str, ...]:
    """The names of `_properties`, worked out once: asked for each record written (212k CALLS edges at 100k
    functions; 0.25 µs instead of 0.9)."""
    if record not in _NAMES:
        _NAMES[record] = tuple(name for name, _ in _properties(record))
    return _NAMES[record]


@dataclass(frozen=True, kw_only=True)
class NodeRecord:
    """A node of one label; every node carries the path of the file it comes from."""

    LABEL: ClassVar[Label]

    id: str
    source: str

    @classmethod
    def properties(cls) -> tuple[str, ...]:
        """The names of the stored properties (besides `id`)."""
        return _property_names(cls)

    @classmethod
    def from_props(cls, id: str, props: Mapping[str, Any]) -> Self:
        """The record of a stored node; other keys of props (an id, a vector) are ignored."""
        values: dict[str, Any] = {}
        for name, optional in _properties(cls):
            if name not in props and not optional:
                raise StoreError(f"the {cls.LABEL.value} node {id} has no {name!r} property")
            values[name] = props.get(name)
        return cls(id=id, **values)

    def props(self) -> dict[str, Any]:
        """The stored properties, by name (None for an absent optional one)."""
        return {name: getattr(self, name) for name, _ in _properties(type(self))}

    def node(self) -> Node:
        """The store row of this record, without a vector."""
        return Node(self.id, self.LABEL, self.props())


@dataclass(frozen=True, kw_only=True)
class NameNode(NodeRecord):
    """A function's qualified name (Python __qualname__ style), where it is defined."""

    LABEL = Label.NAME

    name: str
    row: int | None  # the JSONL line, or None for a plain file
    lang: str  # "python", or a key of pkg.code.languages
    start_line: int
    end_line: int


@dataclass(frozen=True, kw_only=True)
class ImplNode(NodeRecord):
    """A function's full source (decorators included, dedented)."""

    LABEL = Label.IMPL

    text: str
    lang: str
    start_line: int
    end_line: int

    @property
    def impl_id(self) -> str:
        """The IMPL a code node belongs to: itself."""
        return self.id


@dataclass(frozen=True, kw_only=True)
class BlockNode(NodeRecord):
    """A compound statement inside a function."""

    LABEL = Label.BLOCK

    kind: str  # the statement: "if", "for", "try", "def", ...
    text: str
    start_line: int
    end_line: int
    depth: int  # 1 for a top-level block of the function's body
    impl_id: str  # the IMPL of the function

    def span(self) -> Span:
        """Its id and line span."""
        return Span(self.id, self.start_line, self.end_line)


@dataclass(frozen=True, kw_only=True)
class RowNode(NodeRecord):
    """A corpus item as a whole: a file, or a JSONL row."""

    LABEL = Label.ROW

    row: int | None
    text: str
    lines: int


@dataclass(frozen=True, kw_only=True)
class ChunkNode(NodeRecord):
    """A cAST chunk of a file (or of a JSONL row's code fence)."""

    LABEL = Label.CHUNK

    row: int | None
    index: int  # its position among the chunks of its file
    text: str
    start_line: int
    end_line: int


@dataclass(frozen=True, kw_only=True)
class PathNode(NodeRecord):
    """An internal key of a JSON document (the document itself is the root, path "")."""

    LABEL = Label.PATH

    row: int | None
    path: str


@dataclass(frozen=True, kw_only=True)
class PathValueNode(NodeRecord):
    """A primitive leaf of a JSON document."""

    LABEL = Label.PATHVALUE

    row: int | None
    path: str
    value: str  # the primitive as text: strings as they are, others as JSON
    text: str  # "path = a/b/c ; value = ..."
    titles: str  # the titles along its path, joined by " > "


@dataclass(frozen=True, kw_only=True)
class FileNode(NodeRecord):
    """A code file (its path is its `source`), with what linking it to other files needs."""

    LABEL = Label.FILE

    lang: str
    fingerprint: str
    module: str | None  # Python: its dotted module name; others: its package or namespace, if any
    refs: str  # JSON: the references linking resolves (imports, calls, bases; see ingest.structure)
    #: JSON: the names a Python file's code uses, for definitions context (ingest.name_uses); apart from refs,
    #: which the linker decodes whole (on the 20k-function stdlib graph they more than doubled its decoding time)
    uses: str | None = None


@dataclass(frozen=True, kw_only=True)
class ClassNode(NodeRecord):
    """A class, struct, interface, trait or enum, by qualified name (`Outer.Inner`)."""

    LABEL = Label.CLASS

    name: str
    lang: str
    start_line: int
    end_line: int


@dataclass(frozen=True, kw_only=True)
class ModuleNode(NodeRecord):
    """A Python module imported by the file it comes from, by dotted name."""

    LABEL = Label.MODULE

    name: str


#: A node with code that retrieval projects to its function.
CodeNode = ImplNode | BlockNode


@dataclass(frozen=True)
class RelRecord:
    """A relationship of one type between nodes of its allowed source and target labels. A type with
    properties declares them as fields after `src` and `dst`."""

    TYPE: ClassVar[Rel]
    SOURCES: ClassVar[tuple[Label, ...]]
    TARGETS: ClassVar[tuple[Label, ...]]

    src: str
    dst: str

    def __init_subclass__(cls, rel: Rel, sources: tuple[Label, ...], targets: tuple[Label, ...], **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.TYPE, cls.SOURCES, cls.TARGETS = rel, sources, targets

    @classmethod
    def properties(cls) -> tuple[str, ...]:
        """The names of its stored properties."""
        return _property_names(cls)

    def edge(self) -> Edge:
        """The store row of this record."""
        return Edge(self.src, self.TYPE, self.dst, {name: getattr(self, name) for name in self.properties()})


@dataclass(frozen=True)
class HasImpl(RelRecord, rel=Rel.HAS_IMPL, sources=(Label.NAME,), targets=(Label.IMPL,)):
    """A function's name to its source."""


@dataclass(frozen=True)
class HasBlock(RelRecord, rel=Rel.HAS_BLOCK, sources=(Label.IMPL,), targets=(Label.BLOCK,)):
    """A function to each top-level block of its body."""


@dataclass(frozen=True)
class Parent(RelRecord, rel=Rel.PARENT, sources=(Label.BLOCK,), targets=(Label.BLOCK,)):
    """A block to each block directly nested in it."""


@dataclass(frozen=True)
class Next(RelRecord, rel=Rel.NEXT, sources=(Label.CHUNK,), targets=(Label.CHUNK,)):
    """A chunk to the following chunk of the same file."""


@dataclass(frozen=True)
class JsonChild(RelRecord, rel=Rel.JSON_CHILD, sources=(Label.PATH,), targets=(Label.PATH, Label.PATHVALUE)):
    """A JSON path to each of its children."""


@dataclass(frozen=True)
class Contains(RelRecord, rel=Rel.CONTAINS, sources=(Label.FILE, Label.CLASS), targets=(Label.CLASS, Label.NAME)):
    """A file to its top-level classes and functions, a class to its nested classes and methods."""


@dataclass(frozen=True)
class Calls(RelRecord, rel=Rel.CALLS, sources=(Label.NAME,), targets=(Label.NAME,)):
    """A function to a function it may call: one edge per callee (ambiguous candidates each get one)."""

    line: int  # the first call site in the caller's file
    resolution: str  # how the callee was found: see ingest.link.RESOLUTIONS


@dataclass(frozen=True)
class Imports(RelRecord, rel=Rel.IMPORTS, sources=(Label.FILE,), targets=(Label.MODULE, Label.FILE)):
    """A file to each module it imports, and to the corpus file that module resolves to."""


@dataclass(frozen=True)
class Inherits(RelRecord, rel=Rel.INHERITS, sources=(Label.CLASS,), targets=(Label.CLASS,)):
    """A class to each base class it resolves to."""


#: The record type of every node label.
NODE_RECORDS: dict[Label, type[NodeRecord]] = {
    record.LABEL: record
    for record in (
        NameNode,
        ImplNode,
        BlockNode,
        RowNode,
        ChunkNode,
        PathNode,
        PathValueNode,
        FileNode,
        ClassNode,
        ModuleNode,
    )
}
#: The record type of every relationship type.
REL_RECORDS: dict[Rel, type[RelRecord]] = {
    record.TYPE: record for record in (HasImpl, HasBlock, Parent, Next, JsonChild, Contains, Calls, Imports, Inherits)
}
#: The relationship types the linking pass computes over the whole corpus after each build (IMPORTS
#: only those into a FILE; those into a MODULE belong to the importing file).
LINKED_RELS: tuple[Rel, ...] = (Rel.CALLS, Rel.IMPORTS, Rel.INHERITS)
#: The labels whose nodes have a text: what the lexical indexes can be built over.
TEXT_LABELS: tuple[Label, ...] = tuple(label for label, record in NODE_RECORDS.items() if "text" in record.properties())


def node_record(node_id: str, label: Label, props: Mapping[str, Any]) -> NodeRecord:
    """The typed record of a stored node of any label."""
    return NODE_RECORDS[label].from_props(node_id, props)


def record_of(node: Node) -> NodeRecord:
    """The typed record of a store row."""
    return node_record(node.id, node.label, node.props)


R = TypeVar("R", bound=NodeRecord)


def expect(record: NodeRecord, kind: type[R]) -> R:
    """The record as the record type it should be; StoreError if the store holds another label there."""
    if not isinstance(record, kind):
        raise StoreError(f"node {record.id} is a {record.LABEL.value} node, not a {kind.LABEL.value} node")
    return record
