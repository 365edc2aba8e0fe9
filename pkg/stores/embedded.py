"""The default store: a directory holding one SQLite file; exact cosine top-k with numpy."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path

import numpy as np
from threadpoolctl import ThreadpoolController

from pkg.errors import StoreError, StoreNotFoundError
from pkg.graph import Edge, Label, Node, Rel
from pkg.stores.base import (
    EmbedderInfo,
    FunctionRef,
    GraphCounts,
    GraphSnapshot,
    GraphStore,
    Hit,
    NodeContext,
    SourceRecord,
    Span,
    StoredNode,
    rounded,
)

DB_FILE = "pkg.sqlite"
SCHEMA_VERSION = "2"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY, label TEXT NOT NULL, source TEXT, props TEXT NOT NULL, vector BLOB
);
CREATE INDEX IF NOT EXISTS nodes_by_label ON nodes (label);
CREATE INDEX IF NOT EXISTS nodes_by_source ON nodes (source);
CREATE TABLE IF NOT EXISTS edges (
    src TEXT NOT NULL, type TEXT NOT NULL, dst TEXT NOT NULL, PRIMARY KEY (src, type, dst)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_by_dst ON edges (dst, type);
CREATE TABLE IF NOT EXISTS sources (path TEXT PRIMARY KEY, fingerprint TEXT NOT NULL) WITHOUT ROWID;
"""
_DROP_SOURCE_EDGES = """
DELETE FROM edges WHERE src IN (SELECT id FROM nodes WHERE source = ?1)
    OR dst IN (SELECT id FROM nodes WHERE source = ?1)
"""
_CHUNK = 500  # ids per IN (...) list, below SQLite's bound-parameter limit


@cache
def _blas() -> ThreadpoolController:
    """The BLAS libraries numpy loaded. A search multiplies on one BLAS thread: OpenBLAS's workers
    spin for about 0.1 s after a call and took the two cores from torch's next query embedding,
    stalling one query in eight by 100-130 ms (20k functions: p50 30 -> 13 ms, p95 126 -> 18 ms;
    the product itself takes 1 ms more, 2 ms for 31k vectors)."""
    return ThreadpoolController().select(user_api="blas")


class EmbeddedStore(GraphStore):
    """Persistent, server-less store. Every write is one SQLite transaction (WAL), so a crash
    mid-build leaves the last committed state, never a file that fails to open."""

    def __init__(self, directory: Path, create: bool = False) -> None:
        self.directory = directory
        path = directory / DB_FILE
        if not path.exists():
            if not create:
                raise StoreNotFoundError(f"no PKG database in {directory}; run `pkg build` first")
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the database directory {directory}: {exc}") from exc
        try:
            self._db = sqlite3.connect(path, timeout=60)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self._db:
                self._db.executescript(_SCHEMA)
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", [SCHEMA_VERSION])
            version = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the database in {directory}: {exc}") from exc
        if version != SCHEMA_VERSION:
            self._db.close()
            raise StoreError(
                f"the database in {directory} has format {version}, this PKG reads format {SCHEMA_VERSION}; "
                "delete it and build again"
            )
        self._matrices: dict[Label, tuple[list[str], np.ndarray]] = {}
        self._data_version = self._current_data_version()

    # -- metadata ---------------------------------------------------------------------------
    @property
    def location(self) -> str:
        return str(self.directory)

    def embedder_info(self) -> EmbedderInfo | None:
        rows = dict(self._db.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')").fetchall())
        if "embedder" not in rows:
            return None
        return EmbedderInfo(rows["embedder"], int(rows["dim"]))

    def _record_embedder(self, info: EmbedderInfo) -> None:
        def work() -> None:
            self._db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)", [("embedder", info.name), ("dim", str(info.dim))]
            )

        self._transaction(work)

    # -- writes -----------------------------------------------------------------------------
    def write(self, nodes: Sequence[Node], edges: Sequence[Edge]) -> None:
        self._transaction(lambda: self._insert(nodes, edges))

    def sources(self) -> dict[str, str]:
        return dict(self._db.execute("SELECT path, fingerprint FROM sources").fetchall())

    def replace_sources(self, records: Sequence[SourceRecord], nodes: Sequence[Node], edges: Sequence[Edge]) -> None:
        def work() -> None:
            self._drop([r.path for r in records])
            self._insert(nodes, edges)
            self._db.executemany(
                "INSERT OR REPLACE INTO sources VALUES (?, ?)", [(r.path, r.fingerprint) for r in records]
            )

        self._transaction(work)

    def delete_sources(self, paths: Sequence[str]) -> None:
        self._transaction(lambda: self._drop(paths))

    def _transaction(self, work: Callable[[], None]) -> None:
        try:
            with self._db:
                work()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to the database in {self.directory}: {exc}") from exc
        self._matrices.clear()

    def _drop(self, paths: Sequence[str]) -> None:
        for path in paths:
            self._db.execute(_DROP_SOURCE_EDGES, [path])
            self._db.execute("DELETE FROM nodes WHERE source = ?", [path])
            self._db.execute("DELETE FROM sources WHERE path = ?", [path])

    def _insert(self, nodes: Sequence[Node], edges: Sequence[Edge]) -> None:
        node_rows = [
            (
                n.id,
                n.label.value,
                n.props.get("source"),
                json.dumps(n.props, sort_keys=True),
                None if n.vector is None else np.asarray(n.vector, dtype=np.float32).tobytes(),
            )
            for n in nodes
        ]
        self._db.executemany("INSERT OR REPLACE INTO nodes VALUES (?, ?, ?, ?, ?)", node_rows)
        self._db.executemany("INSERT OR IGNORE INTO edges VALUES (?, ?, ?)", [(e.src, e.type.value, e.dst) for e in edges])

    # -- reads ------------------------------------------------------------------------------
    def _current_data_version(self) -> int:
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def _matrix(self, label: Label) -> tuple[list[str], np.ndarray]:
        version = self._current_data_version()
        if version != self._data_version:  # another connection committed since we cached
            self._matrices.clear()
            self._data_version = version
        if label not in self._matrices:
            rows = self._db.execute(
                "SELECT id, vector FROM nodes WHERE label = ? AND vector IS NOT NULL ORDER BY id", [label.value]
            ).fetchall()
            ids = [r[0] for r in rows]
            matrix = (
                np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
                if rows
                else np.zeros((0, 0), dtype=np.float32)
            )
            self._matrices[label] = (ids, matrix)
        return self._matrices[label]

    def search(self, label: Label, query: np.ndarray, k: int) -> list[Hit]:
        ids, matrix = self._matrix(label)
        if not ids or k <= 0:
            return []
        with _blas().limit(limits=1):
            scores = matrix @ np.asarray(query, dtype=np.float32)
        k = min(k, len(ids))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]  # by score, ties by position for determinism
        return [Hit(ids[i], float(scores[i])) for i in top]

    def _props(self, ids: Iterable[str]) -> dict[str, tuple[Label, dict]]:
        found: dict[str, tuple[Label, dict]] = {}
        id_list = list(dict.fromkeys(ids))
        for start in range(0, len(id_list), _CHUNK):
            chunk = id_list[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for node_id, label, props in self._db.execute(
                f"SELECT id, label, props FROM nodes WHERE id IN ({marks})", chunk
            ):
                found[node_id] = (Label(label), json.loads(props))
        return found

    def _targets(self, ids: Sequence[str], rel: Rel) -> dict[str, list[str]]:
        targets: dict[str, list[str]] = {i: [] for i in ids}
        for start in range(0, len(ids), _CHUNK):
            chunk = list(ids[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            for src, dst in self._db.execute(
                f"SELECT src, dst FROM edges WHERE type = ? AND src IN ({marks})", [rel.value, *chunk]
            ):
                targets[src].append(dst)
        return targets

    def _names_of(self, impl_ids: Sequence[str]) -> dict[str, str]:
        names: dict[str, str] = {}
        for start in range(0, len(impl_ids), _CHUNK):
            chunk = list(impl_ids[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            for src, dst in self._db.execute(
                f"SELECT src, dst FROM edges WHERE type = ? AND dst IN ({marks})", [Rel.HAS_IMPL.value, *chunk]
            ):
                names[dst] = src
        return names

    def contexts(self, ids: Sequence[str]) -> list[NodeContext]:
        nodes = {i: v for i, v in self._props(ids).items() if v[0] in (Label.IMPL, Label.BLOCK)}
        impl_of = {i: (i if label is Label.IMPL else props["impl_id"]) for i, (label, props) in nodes.items()}
        name_of = self._names_of(sorted(set(impl_of.values())))
        children: dict[str, list[str]] = {}
        for label, rel in ((Label.IMPL, Rel.HAS_BLOCK), (Label.BLOCK, Rel.PARENT)):
            children.update(self._targets([i for i, v in nodes.items() if v[0] is label], rel))
        related = self._props([*impl_of.values(), *name_of.values(), *(c for cs in children.values() for c in cs)])
        result = []
        for node_id in ids:
            if node_id not in nodes:
                continue
            label, props = nodes[node_id]
            impl_id = impl_of[node_id]
            name_id = name_of[impl_id]
            name = related[name_id][1]
            spans = sorted(
                (Span(c, related[c][1]["start_line"], related[c][1]["end_line"]) for c in children[node_id]),
                key=lambda s: s.start_line,
            )
            result.append(
                NodeContext(
                    id=node_id,
                    label=label,
                    text=props["text"],
                    start_line=props["start_line"],
                    end_line=props["end_line"],
                    function=FunctionRef(
                        name_id=name_id,
                        impl_id=impl_id,
                        name=name["name"],
                        source=name["source"],
                        row=name.get("row"),
                        start_line=name["start_line"],
                        end_line=name["end_line"],
                        lang=name["lang"],
                    ),
                    children=tuple(spans),
                )
            )
        return result

    def nodes(self, ids: Sequence[str]) -> list[StoredNode]:
        found = self._props(ids)
        return [StoredNode(i, *found[i]) for i in ids if i in found]

    def adjacent_chunks(self, ids: Sequence[str], following: bool) -> dict[str, str]:
        near, far = ("src", "dst") if following else ("dst", "src")
        adjacent: dict[str, str] = {}
        for start in range(0, len(ids), _CHUNK):
            chunk = list(ids[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT {near}, {far} FROM edges WHERE type = ? AND {near} IN ({marks})", [Rel.NEXT.value, *chunk]
            )
            adjacent.update(rows.fetchall())
        return adjacent

    def texts(self, label: Label) -> list[tuple[str, str]]:
        rows = self._db.execute("SELECT id, props FROM nodes WHERE label = ? ORDER BY id", [label.value])
        return [(node_id, json.loads(props)["text"]) for node_id, props in rows]

    def snapshot(self) -> GraphSnapshot:
        nodes = {
            node_id: (
                label,
                {k: v for k, v in json.loads(props).items() if v is not None},
                rounded(np.frombuffer(vector, dtype=np.float32)) if vector else (),
            )
            for node_id, label, props, vector in self._db.execute("SELECT id, label, props, vector FROM nodes")
        }
        edges = set(self._db.execute("SELECT src, type, dst FROM edges").fetchall())
        return GraphSnapshot(nodes, edges, self.sources())

    def counts(self) -> GraphCounts:
        nodes = dict(self._db.execute("SELECT label, count(*) FROM nodes GROUP BY label ORDER BY label").fetchall())
        rels = dict(self._db.execute("SELECT type, count(*) FROM edges GROUP BY type ORDER BY type").fetchall())
        return GraphCounts(nodes, rels)

    def close(self) -> None:
        self._db.close()
