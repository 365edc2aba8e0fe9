"""The graph-store protocol that the embedded store and the Neo4j store both implement."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pkg.errors import EmbedderMismatchError, MissingPartError
from pkg.graph import Edge, EmbedderInfo, Label, Node, SourceRecord, Span
from pkg.schema import TEXT_LABELS, ClassNode, FileNode, NameNode, NodeRecord


@dataclass(frozen=True)
class Hit:
    """A node found by vector search, with its cosine similarity to the query."""

    id: str
    score: float


@dataclass(frozen=True)
class FunctionRef:
    """The function a retrieved node belongs to."""

    name_id: str
    impl_id: str
    name: str
    source: str
    row: int | None
    start_line: int
    end_line: int
    lang: str  # the language the function is written in ("python", or a key of pkg.code.languages)

    @classmethod
    def of(cls, name: NameNode, impl_id: str) -> FunctionRef:
        """The function of a NAME node and its IMPL."""
        return cls(name.id, impl_id, name.name, name.source, name.row, name.start_line, name.end_line, name.lang)


@dataclass(frozen=True)
class NodeContext:
    """A code node (IMPL or BLOCK) with what pruning and projection need, fetched in one go."""

    id: str
    label: Label
    text: str
    start_line: int
    end_line: int
    function: FunctionRef
    children: tuple[Span, ...]


@dataclass(frozen=True)
class CallEdge:
    """A CALLS edge seen from one end: the NAME asked about, the NAME at the other end, the call."""

    name_id: str
    other_id: str
    line: int
    resolution: str


@dataclass(frozen=True)
class GraphCounts:
    """Node counts per label and relationship counts per type."""

    nodes: dict[str, int]
    relationships: dict[str, int]


class GraphStore(ABC):
    """Persistent PKG storage: nodes with vectors, edges, exact or indexed top-k per label."""

    #: How many write calls (write, replace_sources) a build may run at once, each from its own
    #: thread, on disjoint sources. One: calls come one at a time.
    writers: int = 1

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the graph lives, for messages: a directory or a server address."""

    @abstractmethod
    def embedder_info(self) -> EmbedderInfo | None:
        """The embedder that built this database, or None if it is empty."""

    @abstractmethod
    def _record_embedder(self, info: EmbedderInfo) -> None:
        """Remember the embedder on first write."""

    @abstractmethod
    def write(self, nodes: Sequence[Node], edges: Sequence[Edge]) -> None:
        """Insert or replace nodes (with their vectors) and edges in one transaction; idempotent on ids.

        Edges may refer to nodes of the same call or of earlier ones."""

    @abstractmethod
    def sources(self) -> dict[str, str]:
        """Fingerprint of every source file the graph holds, by path."""

    @abstractmethod
    def replace_sources(self, records: Sequence[SourceRecord], nodes: Sequence[Node], edges: Sequence[Edge]) -> None:
        """In one transaction: drop every node of the records' sources, write the nodes and edges,
        and remember the records. Every node carries its source path in its "source" property."""

    @abstractmethod
    def set_vectors(self, label: Label, vectors: Sequence[tuple[str, np.ndarray]]) -> None:
        """In one transaction: give the nodes of a label these vectors, by id (unknown ids are skipped)."""

    @abstractmethod
    def delete_sources(self, paths: Sequence[str]) -> None:
        """In one transaction: drop every node of these sources and forget them."""

    @abstractmethod
    def search(self, label: Label, query: np.ndarray, k: int) -> list[Hit]:
        """The k nodes of a label most similar to a unit query vector, best first."""

    @abstractmethod
    def contexts(self, ids: Sequence[str]) -> list[NodeContext]:
        """Contexts of code nodes, in the order of ids (unknown ids are skipped)."""

    def nearest_contexts(self, label: Label, query: np.ndarray, k: int) -> list[tuple[NodeContext, float]]:
        """search() then contexts() for IMPL or BLOCK: the k nearest code nodes with their contexts
        and scores, best first. A store may answer both in one round trip."""
        if label not in (Label.IMPL, Label.BLOCK):
            raise ValueError(f"{label.value} nodes have no code context")
        hits = self.search(label, query, k)
        found = {c.id: c for c in self.contexts([h.id for h in hits])}
        return [(found[h.id], h.score) for h in hits]

    @abstractmethod
    def find_functions(self, name: str | None, source: str | None, limit: int) -> list[str]:
        """IMPL ids of at most `limit` functions, by file, row and line: those whose qualified name is
        `name` or ends with "." + name, in files whose path is `source` or ends with "/" + source
        (None matches any)."""

    @abstractmethod
    def impl_ids(self, name_ids: Sequence[str]) -> dict[str, str]:
        """The IMPL id of each of these NAME nodes, by NAME id (unknown ids are left out)."""

    @abstractmethod
    def function_names(self, impl_ids: Sequence[str]) -> dict[str, str]:
        """The qualified name of each IMPL node's function, by IMPL id (unknown ids are left out)."""

    @abstractmethod
    def nodes(self, ids: Sequence[str]) -> list[NodeRecord]:
        """Nodes of any label as their typed records, in the order of ids (unknown ids are skipped)."""

    @abstractmethod
    def label_records(self, label: Label) -> list[NodeRecord]:
        """Every node of a label as its typed record, by id (the tables of the linking pass)."""

    @abstractmethod
    def replace_links(self, edges: Sequence[Edge]) -> None:
        """In one transaction: drop every edge the linking pass computes (CALLS, INHERITS, FILE→FILE
        IMPORTS) and write these instead."""

    @abstractmethod
    def calls(self, name_ids: Sequence[str], callers: bool) -> list[CallEdge]:
        """The CALLS edges out of (with `callers`, into) the NAME nodes, by NAME id, line and other id."""

    @abstractmethod
    def file_contents(self, source: str) -> list[tuple[str, str]]:
        """The CONTAINS edges (container id, contained id) of the files whose path is `source` or ends
        with "/" + source, by container then contained id."""

    @abstractmethod
    def adjacent_chunks(self, ids: Sequence[str], following: bool) -> dict[str, str]:
        """For CHUNK ids, the id of the next (or, if not `following`, the previous) chunk of the
        same file, where there is one."""

    @abstractmethod
    def texts(self, label: Label) -> list[tuple[str, str]]:
        """(id, text) of every node of a label of TEXT_LABELS, by id: the documents of the lexical
        indexes (ValueError for another label)."""

    @abstractmethod
    def counts(self) -> GraphCounts:
        """Node and relationship counts."""

    @abstractmethod
    def close(self) -> None:
        """Release connections and files."""

    def check_embedder(self, info: EmbedderInfo, record: bool = False) -> None:
        """Refuse an embedder other than the one that built the database; record it on first use."""
        stored = self.embedder_info()
        if stored is None:
            if record:
                self._record_embedder(info)
            return
        if stored != info:
            raise EmbedderMismatchError(
                f"this database was built with {stored.name} ({stored.dim} dims), "
                f"not {info.name} ({info.dim} dims); use --embedder {stored.name} or a new database"
            )

    def replace_embedder(self, info: EmbedderInfo) -> None:
        """Record the embedder of the vectors the store now holds (after set_vectors gave every node the
        new embedder's); its vectors must have the dimension of those they replaced."""
        stored = self.embedder_info()
        if stored is not None and stored.dim != info.dim:
            raise EmbedderMismatchError(
                f"this database holds {stored.dim}-dimensional vectors; {info.name} makes {info.dim}: build a new one"
            )
        self._record_embedder(info)

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def code_tables(store: GraphStore) -> tuple[list[FileNode], list[ClassNode], list[NameNode]]:
    """The FILE, CLASS and NAME records a store holds (no NAME without a FILE): the linking pass's tables."""
    files = [r for r in store.label_records(Label.FILE) if isinstance(r, FileNode)]
    classes = [r for r in store.label_records(Label.CLASS) if isinstance(r, ClassNode)]
    names = [r for r in store.label_records(Label.NAME) if isinstance(r, NameNode)] if files else []
    return files, classes, names


#: The part of a build (`pkg build --parts`) that makes the nodes of each label a search reads.
PART_OF = {
    Label.IMPL: "functions",
    Label.BLOCK: "functions",
    Label.ROW: "rows",
    Label.CHUNK: "chunks",
    Label.PATHVALUE: "json",
}


def require_nodes(store: GraphStore, label: Label) -> None:
    """MissingPartError unless the store holds nodes of the label: asked when a search finds nothing, so a
    database built without them says so instead of answering with nothing."""
    if store.counts().nodes.get(label.value, 0) == 0:
        raise missing_part(label)


def missing_part(label: Label) -> MissingPartError:
    """The error of a database that holds no nodes of a label, naming the build part that makes them."""
    part = PART_OF[label]
    return MissingPartError(
        f"this database holds no {label.value} nodes: its build left out the {part!r} part"
        f" (pkg build --parts ...,{part}) or found nothing for it"
    )


def require_text_label(label: Label) -> None:
    """ValueError unless nodes of the label have a text (TEXT_LABELS)."""
    if label not in TEXT_LABELS:
        raise ValueError(f"{label.value} nodes have no text")
