"""The graph-store protocol that the embedded store and the Neo4j store both implement."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pkg.errors import EmbedderMismatchError
from pkg.graph import Edge, Label, Node


@dataclass(frozen=True)
class EmbedderInfo:
    """Which embedder built a database, and the dimension of its vectors."""

    name: str
    dim: int


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
    lang: str  # the language the function is written in ("python", or a key of ingest.languages)


@dataclass(frozen=True)
class Span:
    """A directly nested block of a node: its id and line span (source coordinates)."""

    id: str
    start_line: int
    end_line: int


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
class StoredNode:
    """A node as read back: label and properties, without its vector."""

    id: str
    label: Label
    props: dict[str, Any]


@dataclass(frozen=True)
class SourceRecord:
    """A file the graph was built from, with the fingerprint (content and settings) it was built at."""

    path: str
    fingerprint: str


@dataclass(frozen=True)
class GraphSnapshot:
    """A whole graph as plain data, to compare two databases (vectors rounded to 5 decimals)."""

    nodes: dict[str, tuple[str, dict[str, Any], tuple[float, ...]]]
    edges: set[tuple[str, str, str]]
    sources: dict[str, str]


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
        and remember the records. Every node carries its source path in props["source"]."""

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
    def nodes(self, ids: Sequence[str]) -> list[StoredNode]:
        """Nodes of any label, in the order of ids (unknown ids are skipped)."""

    @abstractmethod
    def adjacent_chunks(self, ids: Sequence[str], following: bool) -> dict[str, str]:
        """For CHUNK ids, the id of the next (or, if not `following`, the previous) chunk of the
        same file, where there is one."""

    @abstractmethod
    def texts(self, label: Label) -> list[tuple[str, str]]:
        """(id, text) of every node of a label with a text (ROW, IMPL or CHUNK), by id: the documents
        of the lexical indexes."""

    @abstractmethod
    def snapshot(self) -> GraphSnapshot:
        """Everything in the graph (loads it all: for checks and tests on small graphs)."""

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

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def rounded(vector: Any) -> tuple[float, ...]:
    """A vector as a tuple rounded to 5 decimals, comparable across stores."""
    return tuple(round(float(x), 5) for x in vector)
