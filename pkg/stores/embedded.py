"""The default store: a directory holding one SQLite file; exact cosine top-k with numpy."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from pkg.errors import StoreError, StoreNotFoundError
from pkg.graph import Edge, Label, Node, Rel
from pkg.stores.base import (
    EmbedderInfo,
    FunctionRef,
    GraphCounts,
    GraphStore,
    Hit,
    NodeContext,
    Span,
    StoredNode,
)

DB_FILE = "pkg.sqlite"
SCHEMA_VERSION = "1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY, label TEXT NOT NULL, props TEXT NOT NULL, vector BLOB
);
CREATE INDEX IF NOT EXISTS nodes_by_label ON nodes (label);
CREATE TABLE IF NOT EXISTS edges (
    src TEXT NOT NULL, type TEXT NOT NULL, dst TEXT NOT NULL, PRIMARY KEY (src, type, dst)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_by_dst ON edges (dst, type);
"""
_CHUNK = 500  # ids per IN (...) list, below SQLite's bound-parameter limit


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
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the database in {directory}: {exc}") from exc
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
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)", [("embedder", info.name), ("dim", str(info.dim))]
            )

    # -- writes -----------------------------------------------------------------------------
    def write(self, nodes: Sequence[Node], edges: Sequence[Edge]) -> None:
        node_rows = [
            (
                n.id,
                n.label.value,
                json.dumps(n.props, sort_keys=True),
                None if n.vector is None else np.asarray(n.vector, dtype=np.float32).tobytes(),
            )
            for n in nodes
        ]
        edge_rows = [(e.src, e.type.value, e.dst) for e in edges]
        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO nodes VALUES (?, ?, ?, ?)", node_rows)
                self._db.executemany("INSERT OR IGNORE INTO edges VALUES (?, ?, ?)", edge_rows)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to the database in {self.directory}: {exc}") from exc
        self._matrices.clear()

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

    def counts(self) -> GraphCounts:
        nodes = dict(self._db.execute("SELECT label, count(*) FROM nodes GROUP BY label ORDER BY label").fetchall())
        rels = dict(self._db.execute("SELECT type, count(*) FROM edges GROUP BY type ORDER BY type").fetchall())
        return GraphCounts(nodes, rels)

    def close(self) -> None:
        self._db.close()
