"""A Neo4j 5.26 store: one label per node kind, one HNSW vector index per embedded label.

Every statement lives in queries/<name>.cypher and takes its values as parameters; the statements of
each label are rendered from one template over the labels of the schema table (queries.template).
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
from neo4j import Driver, GraphDatabase, ManagedTransaction, Record
from neo4j.exceptions import AuthError, DriverError, Neo4jError, ServiceUnavailable, SessionExpired

from pkg.errors import ConfigError, StoreError, StoreUnavailableError
from pkg.graph import EMBEDDED_LABELS, Edge, EmbedderInfo, Label, Node, Rel, SourceRecord, Span
from pkg.schema import NODE_RECORDS, NameNode, NodeRecord, node_record
from pkg.stores.base import CallEdge, FunctionRef, GraphCounts, GraphStore, Hit, NodeContext, require_text_label
from queries import cypher, template

DEFAULT_URI = "bolt://127.0.0.1:7687"
DEFAULT_USER = "neo4j"
META_KEY = "pkg"
#: Rows per UNWIND statement (bench/bench_neo4j_write.py: 500, 1,000 and 5,000 write equally fast).
BATCH = 1000
INDEX_WAIT_SECONDS = 300
#: HNSW graph parameters of the vector indexes and int8 quantization. Measured by
#: bench/bench_neo4j_write.py on 78k nodes (20k standard-library functions, MiniLM) on 2 cores:
#: a build leaves one index segment per write (Neo4j merges vector segments only 50 at a time) and
#: a search visits them all, 36-54 ms at p50 for 100 float candidates from 40 segments, 10-15 ms
#: quantized; search.cypher rescores the candidates on the stored float vectors. Writes with two
#: writers: ef_construction 50 3,800-5,200 nodes/s, 100 (Neo4j's default) 3,000-4,500 (the
#: machine's own noise is that wide), recall@10 0.99 either way. On the 130k leaves of the Python
#: docs ef_construction 50 cut recall@10 from 0.94 to 0.91 (bench/bench_json_docs.py): PATHVALUE
#: keeps 100. M 8 instead of 16 wrote no faster. Since NAME nodes carry no vector (58k vectors in
#: the 78k nodes) a warm server writes 6,000-7,200 nodes/s on a quiet machine (4,000-4,800 before).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 50
HNSW_EF_CONSTRUCTION_PATHVALUE = 100
HNSW_QUANTIZATION = True
#: Write calls a build keeps in flight: Neo4j inserts into the HNSW graphs of one transaction on one
#: core, so two writers use both (one writer: 2,300-3,800 nodes/s).
WRITERS = 2
#: Least number of neighbours asked of the HNSW index: recall@10 measured on 6k-9k MiniLM vectors
#: of standard-library code is 0.89-0.98 when asking for just 10, 0.998 or more from 100.
MIN_CANDIDATES = 100
#: The schema objects of each label, by the names existing databases know them by: the uniqueness
#: constraint on id, the index on source and (embedded labels) the vector index.
CONSTRAINT_NAMES: dict[Label, str] = {label: f"{label.value.lower()}_id" for label in NODE_RECORDS}
SOURCE_INDEX_NAMES: dict[Label, str] = {label: f"{label.value.lower()}_source" for label in NODE_RECORDS}
INDEX_NAMES: dict[Label, str] = {label: f"{label.value.lower()}_embedding" for label in EMBEDDED_LABELS}
#: The statement that writes each relationship type: its endpoints' labels (and properties) differ.
LINKS: dict[Rel, str] = {
    Rel.HAS_IMPL: "link_has_impl",
    Rel.HAS_BLOCK: "link_has_block",
    Rel.PARENT: "link_parent",
    Rel.NEXT: "link_next",
    Rel.JSON_CHILD: "link_json_child",
    Rel.CONTAINS: "link_contains",
    Rel.CALLS: "link_calls",
    Rel.IMPORTS: "link_imports",
    Rel.INHERITS: "link_inherits",
}
#: The statement that answers nearest_contexts() for each code label in one round trip.
NEAREST: dict[Label, str] = {Label.IMPL: "nearest_impl", Label.BLOCK: "nearest_block"}

T = TypeVar("T")

# The driver logs connection failures itself; without a handler Python would print them to stderr
# next to the one-line error this store raises. Records still propagate to configured handlers.
logging.getLogger("neo4j").addHandler(logging.NullHandler())


def _reason(exc: BaseException) -> str:
    """A one-line reason for a driver failure: the server's message, or the underlying OS error."""
    if isinstance(exc, Neo4jError) and exc.message:
        return " ".join(exc.message.split())
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.strerror:
            return seen.strerror[0].lower() + seen.strerror[1:]
        if isinstance(seen, BaseExceptionGroup):
            seen = seen.exceptions[0]
        else:
            seen = seen.__cause__ or seen.__context__
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


class Neo4jStore(GraphStore):
    """PKG in a Neo4j database; connection settings default to NEO4J_URI, NEO4J_USER,
    NEO4J_PASSWORD (no auth if unset or empty) and NEO4J_DATABASE (the server's default if unset)."""

    writers = WRITERS

    def __init__(
        self,
        uri: str | None = None,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
    ) -> None:
        self.uri = uri or os.environ.get("NEO4J_URI") or DEFAULT_URI
        user = user or os.environ.get("NEO4J_USER") or DEFAULT_USER
        password = password if password is not None else (os.environ.get("NEO4J_PASSWORD") or None)
        self.database = database or os.environ.get("NEO4J_DATABASE") or None
        try:
            self._driver: Driver = GraphDatabase.driver(
                self.uri, auth=None if password is None else (user, password), notifications_min_severity="OFF"
            )
        except (DriverError, ValueError) as exc:
            raise ConfigError(f"invalid Neo4j URI {self.uri!r}: {_reason(exc)}") from exc
        try:
            self._driver.verify_connectivity()
        except AuthError as exc:
            self._driver.close()
            if password is None:
                raise StoreUnavailableError(
                    f"Neo4j at {self.uri} requires credentials: set NEO4J_USER and NEO4J_PASSWORD"
                ) from exc
            raise StoreUnavailableError(f"Neo4j at {self.uri} refused the credentials of {user!r}") from exc
        except (DriverError, Neo4jError) as exc:
            self._driver.close()
            raise StoreUnavailableError(f"cannot reach Neo4j at {self.uri}: {_reason(exc)}") from exc
        self._constraints_ready = False
        self._indexed: set[Label] = set()
        self._embedder: EmbedderInfo | None = None

    # -- plumbing ---------------------------------------------------------------------------
    def _run(self, name: str, /, **params: Any) -> list[Record]:
        """Run queries/<name>.cypher in its own transaction and return its records."""
        return self._execute(cypher(name), **params)

    def _execute(self, statement: str, /, **params: Any) -> list[Record]:
        """Run a statement in its own transaction and return its records."""
        return self._guarded(lambda: self._driver.execute_query(statement, params, database_=self.database).records)

    def _guarded(self, work: Callable[[], T]) -> T:
        """Run work against the server, turning driver failures into store errors."""
        try:
            return work()
        except (ServiceUnavailable, SessionExpired) as exc:
            raise StoreUnavailableError(f"lost the connection to Neo4j at {self.uri}: {_reason(exc)}") from exc
        except (Neo4jError, DriverError) as exc:
            raise StoreError(f"Neo4j at {self.uri} failed: {_reason(exc)}") from exc

    def _ensure_constraints(self) -> None:
        """Create the uniqueness constraints on id (once per connection; no-ops if they exist)."""
        if not self._constraints_ready:
            self._run("constraint_meta")
            self._run("constraint_source")
            for label in NODE_RECORDS:
                self._execute(template("constraint_id", label=label.value, name=CONSTRAINT_NAMES[label]))
                self._execute(template("index_source", label=label.value, name=SOURCE_INDEX_NAMES[label]))
            self._constraints_ready = True

    def _ensure_vector_indexes(self, dim: int) -> None:
        """Create the missing vector indexes for vectors of `dim` and wait until they are online."""
        self._ensure_constraints()
        for label in EMBEDDED_LABELS:
            self._execute(
                template("vector_index", label=label.value, name=INDEX_NAMES[label]),
                dim=dim,
                m=HNSW_M,
                ef_construction=HNSW_EF_CONSTRUCTION_PATHVALUE if label is Label.PATHVALUE else HNSW_EF_CONSTRUCTION,
                quantization=HNSW_QUANTIZATION,
            )
        self.await_indexes()
        self._indexed.update(EMBEDDED_LABELS)

    def await_indexes(self) -> None:
        """Block until every index is online (populated), at most INDEX_WAIT_SECONDS."""
        self._run("await_indexes", seconds=INDEX_WAIT_SECONDS)

    # -- metadata ---------------------------------------------------------------------------
    @property
    def location(self) -> str:
        return self.uri if self.database is None else f"{self.uri} (database {self.database})"

    def embedder_info(self) -> EmbedderInfo | None:
        if self._embedder is None:  # once known it stays: every query checks it, a round trip each
            records = self._run("meta_read", key=META_KEY)
            if records and records[0]["embedder"] is not None:
                self._embedder = EmbedderInfo(records[0]["embedder"], int(records[0]["dim"]))
        return self._embedder

    def _record_embedder(self, info: EmbedderInfo) -> None:
        self._ensure_vector_indexes(info.dim)
        self._run("meta_write", key=META_KEY, embedder=info.name, dim=info.dim)
        self._embedder = info

    # -- writes -----------------------------------------------------------------------------
    def write(self, nodes: Sequence[Node], edges: Sequence[Edge]) -> None:
        self._transact(nodes, edges)

    def sources(self) -> dict[str, str]:
        return {r["path"]: r["fingerprint"] for r in self._run("sources_read")}

    def replace_sources(self, records: Sequence[SourceRecord], nodes: Sequence[Node], edges: Sequence[Edge]) -> None:
        rows = [{"path": r.path, "fingerprint": r.fingerprint} for r in records]
        drop = (cypher("delete_sources"), {"paths": [r.path for r in records]})
        self._transact(nodes, edges, before=[drop], after=[(cypher("sources_write"), {"rows": rows})])

    def set_vectors(self, label: Label, vectors: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = [{"id": i, "embedding": np.asarray(v, dtype=np.float32).tolist()} for i, v in vectors]
        self._transact([], [], before=[(template("set_vectors", label=label.value), {"rows": rows})])

    def delete_sources(self, paths: Sequence[str]) -> None:
        self._transact([], [], before=[(cypher("delete_sources"), {"paths": list(paths)})])

    def _transact(
        self,
        nodes: Sequence[Node],
        edges: Sequence[Edge],
        before: Sequence[tuple[str, dict[str, Any]]] = (),
        after: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> None:
        """In one transaction: the `before` statements (with their parameters), all nodes then all edges
        in batched UNWIND statements, the `after` statements."""
        self._ensure_constraints()
        vector = next((n.vector for n in nodes if n.vector is not None), None)
        if vector is not None and not self._indexed:  # written without a recorded embedder
            self._ensure_vector_indexes(len(vector))

        def work(tx: ManagedTransaction) -> None:
            for statement, params in before:
                tx.run(statement, params).consume()
            # Not consumed one by one: each batch is built, packed and sent before waiting for the
            # server to finish the previous one. The commit collects the results and raises the
            # first failure.
            for statement, rows in _batches(nodes, edges):
                tx.run(statement, rows=rows)
            for statement, params in after:
                tx.run(statement, params).consume()

        if nodes or edges or before or after:
            self._guarded(lambda: self._execute_write(work))

    def _execute_write(self, work: Callable[[ManagedTransaction], None]) -> None:
        with self._driver.session(database=self.database) as session:
            session.execute_write(work)

    # -- reads ------------------------------------------------------------------------------
    def _has_index(self, label: Label) -> bool:
        """Whether the label's vector index exists (remembered once it does)."""
        if label not in self._indexed and self._run("vector_index_exists", index=INDEX_NAMES[label])[0]["exists"]:
            self._indexed.add(label)
        return label in self._indexed

    def _nearest(self, name: str, label: Label, query: np.ndarray, k: int) -> list[Record]:
        """Run queries/<name>.cypher, which takes a label's $k nearest nodes to $vector from its $index."""
        if k <= 0 or not self._has_index(label):
            return []
        vector = np.asarray(query, dtype=np.float32).tolist()
        return self._run(name, index=INDEX_NAMES[label], k=k, candidates=max(k, MIN_CANDIDATES), vector=vector)

    def search(self, label: Label, query: np.ndarray, k: int) -> list[Hit]:
        return [Hit(r["id"], _cosine(r["score"])) for r in self._nearest("search", label, query, k)]

    def contexts(self, ids: Sequence[str]) -> list[NodeContext]:
        if not ids:
            return []
        return [_context(r) for r in self._run("contexts", ids=list(ids))]

    def nearest_contexts(self, label: Label, query: np.ndarray, k: int) -> list[tuple[NodeContext, float]]:
        """One statement (NEAREST): a round trip less than search then contexts."""
        if label not in NEAREST:
            raise ValueError(f"{label.value} nodes have no code context")
        records = self._nearest(NEAREST[label], label, query, k)
        return [(_context(r), _cosine(r["score"])) for r in records]

    def find_functions(self, name: str | None, source: str | None, limit: int) -> list[str]:
        return [r["id"] for r in self._run("find_functions", name=name, source=source, limit=limit)]

    def impl_ids(self, name_ids: Sequence[str]) -> dict[str, str]:
        if not name_ids:
            return {}
        return {r["name_id"]: r["impl_id"] for r in self._run("impl_ids", ids=list(name_ids))}

    def function_names(self, impl_ids: Sequence[str]) -> dict[str, str]:
        if not impl_ids:
            return {}
        return {r["impl_id"]: r["name"] for r in self._run("function_names", ids=list(impl_ids))}

    def nodes(self, ids: Sequence[str]) -> list[NodeRecord]:
        if not ids:
            return []
        return [node_record(r["id"], Label(r["label"]), r["props"]) for r in self._run("nodes", ids=list(ids))]

    def calls(self, name_ids: Sequence[str], callers: bool) -> list[CallEdge]:
        if not name_ids:
            return []
        records = self._run("callers" if callers else "callees", ids=list(name_ids))
        return [CallEdge(r["name_id"], r["other_id"], r["line"], r["resolution"]) for r in records]

    def file_contents(self, source: str) -> list[tuple[str, str]]:
        return [(r["src"], r["dst"]) for r in self._run("file_contents", source=source)]

    def label_records(self, label: Label) -> list[NodeRecord]:
        records = self._execute(template("label_nodes", label=label.value))
        return [node_record(r["id"], label, r["props"]) for r in records]

    def replace_links(self, edges: Sequence[Edge]) -> None:
        self._transact([], edges, before=[(cypher("unlink"), {})])

    def adjacent_chunks(self, ids: Sequence[str], following: bool) -> dict[str, str]:
        if not ids:
            return {}
        records = self._run("chunk_next" if following else "chunk_previous", ids=list(ids))
        return {r["id"]: r["neighbour"] for r in records}

    def texts(self, label: Label) -> list[tuple[str, str]]:
        require_text_label(label)
        return [(r["id"], r["text"]) for r in self._execute(template("texts", label=label.value))]

    def counts(self) -> GraphCounts:
        record = self._run("counts")[0]
        return GraphCounts(
            {k: v for k, v in sorted(record["nodes"].items()) if v},
            {k: v for k, v in sorted(record["relationships"].items()) if v},
        )

    def close(self) -> None:
        self._driver.close()


class _Rows(list[dict[str, Any]]):
    """The rows of one UNWIND statement, shown by repr() as their count.

    The driver formats every RUN message's parameters with repr() for its debug log even when that
    log is off: for 26k nodes with 384-float vectors, 8 s of repr against 0.3 s of PackStream."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<{len(self)} rows>"


def _node_row(node: Node) -> dict[str, Any]:
    # The vector goes as the float32 values the index keeps, so that stored and indexed vectors agree.
    embedding = None if node.vector is None else np.asarray(node.vector, dtype=np.float32).tolist()
    return {"id": node.id, "props": node.props, "embedding": embedding}


def _batches(nodes: Sequence[Node], edges: Sequence[Edge]) -> Iterator[tuple[str, _Rows]]:
    """The write statements with at most BATCH rows each, built as they are sent: the nodes of
    each label, then the edges of each relationship type."""
    by_label: dict[Label, list[Node]] = defaultdict(list)
    for n in nodes:
        by_label[n.label].append(n)
    by_type: dict[Rel, list[Edge]] = defaultdict(list)
    for e in edges:
        by_type[e.type].append(e)
    for label, group in by_label.items():
        for start in range(0, len(group), BATCH):
            yield template("merge_nodes", label=label.value), _Rows(map(_node_row, group[start : start + BATCH]))
    for rel, typed in by_type.items():
        for start in range(0, len(typed), BATCH):
            rows = _Rows({"src": e.src, "dst": e.dst, **e.props} for e in typed[start : start + BATCH])
            yield cypher(LINKS[rel]), rows


def _cosine(score: float) -> float:
    """Cosine similarity from Neo4j's cosine score, (1 + cos) / 2."""
    return 2.0 * score - 1.0


def _context(record: Record) -> NodeContext:
    name = record["name"]
    return NodeContext(
        id=record["id"],
        label=Label(record["label"]),
        text=record["text"],
        start_line=record["start_line"],
        end_line=record["end_line"],
        function=FunctionRef.of(NameNode.from_props(name["id"], name), record["impl_id"]),
        children=tuple(Span(c["id"], c["start_line"], c["end_line"]) for c in record["children"]),
    )
