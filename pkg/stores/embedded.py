"""The default store: a directory holding one SQLite file; exact cosine top-k with numpy."""

from __future__ import annotations

import json
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from threadpoolctl import ThreadpoolController

from pkg.config import DB_FILE
from pkg.errors import StoreError, StoreNotFoundError
from pkg.graph import Edge, EmbedderInfo, Label, Node, Rel, SourceRecord
from pkg.schema import BlockNode, CodeNode, ImplNode, NameNode, NodeRecord, expect, node_record
from pkg.stores.base import CallEdge, FunctionRef, GraphCounts, GraphStore, Hit, NodeContext, require_text_label

SCHEMA_VERSION = "4"  # 3: edges have properties; 4: a node's text kept apart from its props, compressed
# The text's compression: zlib level 1 keeps 41% of the bytes (level 6: 38%) at 21 MB/s of CPU, and
# took the 100k-function store from 3.25x its raw vector bytes on disk towards the 3x target.
TEXT_COMPRESSION_LEVEL = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY, label TEXT NOT NULL, source TEXT, props TEXT NOT NULL, vector BLOB, text BLOB
);
CREATE INDEX IF NOT EXISTS nodes_by_label ON nodes (label);
CREATE INDEX IF NOT EXISTS nodes_by_source ON nodes (source);
CREATE TABLE IF NOT EXISTS edges (
    src TEXT NOT NULL, type TEXT NOT NULL, dst TEXT NOT NULL, props TEXT, PRIMARY KEY (src, type, dst)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_by_dst ON edges (dst, type);
CREATE TABLE IF NOT EXISTS sources (path TEXT PRIMARY KEY, fingerprint TEXT NOT NULL) WITHOUT ROWID;
"""
_ADD_NODE_TEXT = "ALTER TABLE nodes ADD COLUMN text BLOB"  # format 3 rows keep their text in props
_UPGRADES = {"2": ("ALTER TABLE edges ADD COLUMN props TEXT", _ADD_NODE_TEXT), "3": (_ADD_NODE_TEXT,)}
_DROP_SOURCE_EDGES = """
DELETE FROM edges WHERE src IN (SELECT id FROM nodes WHERE source = ?1)
    OR dst IN (SELECT id FROM nodes WHERE source = ?1)
"""
# The edges the linking pass computes: CALLS, INHERITS, and IMPORTS between files.
_UNLINK = """
DELETE FROM edges WHERE type IN ('CALLS', 'INHERITS')
    OR (type = 'IMPORTS' AND dst IN (SELECT id FROM nodes WHERE label = 'FILE'))
"""
# Suffixes compared with substr, not LIKE: names hold "_", a LIKE wildcard.
_FIND_FUNCTIONS = """
SELECT e.dst FROM nodes n JOIN edges e ON e.src = n.id AND e.type = ?3
WHERE n.label = 'NAME'
    AND (?1 IS NULL OR json_extract(n.props, '$.name') = ?1
         OR substr(json_extract(n.props, '$.name'), -length(?1) - 1) = '.' || ?1)
    AND (?2 IS NULL OR n.source = ?2 OR substr(n.source, -length(?2) - 1) = '/' || ?2)
ORDER BY n.source, coalesce(json_extract(n.props, '$.row'), 0), json_extract(n.props, '$.start_line'), n.id
LIMIT ?4
"""
_FILE_CONTENTS = """
SELECT e.src, e.dst FROM nodes n JOIN edges e ON e.src = n.id AND e.type = ?2
WHERE n.label IN ('FILE', 'CLASS') AND (n.source = ?1 OR substr(n.source, -length(?1) - 1) = '/' || ?1)
ORDER BY e.src, e.dst
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
    mid-build leaves the last committed state, never a file that fails to open. Each thread that
    uses the store gets a connection of its own (WAL readers run beside each other and beside one
    writer); the vector matrices are shared by all of them."""

    def __init__(self, directory: Path, create: bool = False) -> None:
        self.directory = directory
        path = self._path = directory / DB_FILE
        if not path.exists():
            if not create:
                raise StoreNotFoundError(f"no PKG database in {directory}; run `pkg build` first")
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the database directory {directory}: {exc}") from exc
        try:
            self._local = threading.local()
            self._connections: list[sqlite3.Connection] = []
            self._lock = threading.Lock()
            self._db.execute("PRAGMA journal_mode=WAL")
            with self._db:
                self._db.executescript(_SCHEMA)
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", [SCHEMA_VERSION])
            version = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
            if version in _UPGRADES:  # older formats lack columns only: add them, rows stay readable
                with self._db:
                    for statement in _UPGRADES[version]:
                        self._db.execute(statement)
                    self._db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [SCHEMA_VERSION])
                version = SCHEMA_VERSION
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the database in {directory}: {exc}") from exc
        if version != SCHEMA_VERSION:
            self.close()
            raise StoreError(
                f"the database in {directory} has format {version}, this PKG reads format {SCHEMA_VERSION}; "
                "delete it and build again"
            )
        # Per label: the data version it was read at (see _current_data_version), its ids and vectors.
        self._matrices: dict[Label, tuple[int, list[str], np.ndarray]] = {}
        self._probe = self._connect()  # never writes, so its data_version moves with every commit

    @property
    def _db(self) -> sqlite3.Connection:
        """The calling thread's connection, opened on its first use."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
        return db

    def _connect(self) -> sqlite3.Connection:
        # check_same_thread off only so that close() may close every thread's connection
        db = sqlite3.connect(self._path, timeout=60, check_same_thread=False)
        db.execute("PRAGMA synchronous=NORMAL")
        with self._lock:
            self._connections.append(db)
        return db

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

    def set_vectors(self, label: Label, vectors: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = [(np.asarray(v, dtype=np.float32).tobytes(), i, label.value) for i, v in vectors]

        def work() -> None:
            self._db.executemany("UPDATE nodes SET vector = ? WHERE id = ? AND label = ?", rows)

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
        node_rows = []
        for n in nodes:
            props = dict(n.props)
            text = props.pop("text", None)
            node_rows.append(
                (
                    n.id,
                    n.label.value,
                    n.props.get("source"),
                    json.dumps(props, sort_keys=True),
                    None if n.vector is None else np.asarray(n.vector, dtype=np.float32).tobytes(),
                    None if text is None else zlib.compress(text.encode(), TEXT_COMPRESSION_LEVEL),
                )
            )
        self._db.executemany("INSERT OR REPLACE INTO nodes VALUES (?, ?, ?, ?, ?, ?)", node_rows)
        self._db.executemany(
            "INSERT OR REPLACE INTO edges VALUES (?, ?, ?, ?)",
            [
                (
                    e.src,
                    e.type.value,
                    e.dst,
                    orjson.dumps(e.props, option=orjson.OPT_SORT_KEYS).decode() if e.props else None,
                )
                for e in edges
            ],
        )

    # -- reads ------------------------------------------------------------------------------
    def _current_data_version(self) -> int:
        """A number that changes whenever any connection, in this process or another, commits."""
        with self._lock:
            return int(self._probe.execute("PRAGMA data_version").fetchone()[0])

    def _matrix(self, label: Label) -> tuple[list[str], np.ndarray]:
        version = self._current_data_version()
        cached = self._matrices.get(label)
        if cached is None or cached[0] != version:
            # read after the version: a commit in between only makes the next search read it again
            rows = self._db.execute(
                "SELECT id, vector FROM nodes WHERE label = ? AND vector IS NOT NULL ORDER BY id", [label.value]
            ).fetchall()
            ids = [r[0] for r in rows]
            matrix = (
                np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
                if rows
                else np.zeros((0, 0), dtype=np.float32)
            )
            cached = self._matrices[label] = (version, ids, matrix)
        return cached[1], cached[2]

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

    def _records(self, ids: Iterable[str]) -> dict[str, NodeRecord]:
        found: dict[str, NodeRecord] = {}
        id_list = list(dict.fromkeys(ids))
        for start in range(0, len(id_list), _CHUNK):
            chunk = id_list[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for node_id, label, props, text in self._db.execute(
                f"SELECT id, label, props, text FROM nodes WHERE id IN ({marks})", chunk
            ):
                found[node_id] = node_record(node_id, Label(label), stored_props(props, text))
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
        code: dict[str, CodeNode] = {i: r for i, r in self._records(ids).items() if isinstance(r, ImplNode | BlockNode)}
        name_of = self._names_of(sorted({node.impl_id for node in code.values()}))
        children: dict[str, list[str]] = {}
        for kind, rel in ((ImplNode, Rel.HAS_BLOCK), (BlockNode, Rel.PARENT)):
            children.update(self._targets([i for i, node in code.items() if isinstance(node, kind)], rel))
        related = self._records([*name_of.values(), *(c for cs in children.values() for c in cs)])
        result = []
        for node_id in ids:
            if node_id not in code:
                continue
            node = code[node_id]
            spans = sorted(
                (expect(related[c], BlockNode).span() for c in children[node_id]), key=lambda s: s.start_line
            )
            result.append(
                NodeContext(
                    id=node_id,
                    label=node.LABEL,
                    text=node.text,
                    start_line=node.start_line,
                    end_line=node.end_line,
                    function=FunctionRef.of(expect(related[name_of[node.impl_id]], NameNode), node.impl_id),
                    children=tuple(spans),
                )
            )
        return result

    def find_functions(self, name: str | None, source: str | None, limit: int) -> list[str]:
        rows = self._db.execute(_FIND_FUNCTIONS, [name, source, Rel.HAS_IMPL.value, limit])
        return [impl_id for (impl_id,) in rows]

    def impl_ids(self, name_ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for start in range(0, len(name_ids), _CHUNK):
            chunk = list(name_ids[start : start + _CHUNK])
            statement = f"SELECT src, dst FROM edges WHERE type = ? AND src IN ({','.join('?' * len(chunk))})"
            found.update(self._db.execute(statement, [Rel.HAS_IMPL.value, *chunk]))
        return found

    def function_names(self, impl_ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for start in range(0, len(impl_ids), _CHUNK):
            chunk = list(impl_ids[start : start + _CHUNK])
            statement = (
                "SELECT e.dst, json_extract(n.props, '$.name') FROM edges e JOIN nodes n ON n.id = e.src"
                f" WHERE e.type = ? AND e.dst IN ({','.join('?' * len(chunk))})"
            )
            found.update(self._db.execute(statement, [Rel.HAS_IMPL.value, *chunk]))
        return found

    def nodes(self, ids: Sequence[str]) -> list[NodeRecord]:
        found = self._records(ids)
        return [found[i] for i in ids if i in found]

    def label_records(self, label: Label) -> list[NodeRecord]:
        rows = self._db.execute("SELECT id, props, text FROM nodes WHERE label = ? ORDER BY id", [label.value])
        return [node_record(node_id, label, stored_props(props, text)) for node_id, props, text in rows]

    def replace_links(self, edges: Sequence[Edge]) -> None:
        def work() -> None:
            self._db.execute(_UNLINK)
            self._insert([], edges)

        self._transaction(work)

    def calls(self, name_ids: Sequence[str], callers: bool) -> list[CallEdge]:
        near, far = ("dst", "src") if callers else ("src", "dst")
        found: list[CallEdge] = []
        for start in range(0, len(name_ids), _CHUNK):
            chunk = list(name_ids[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            statement = f"SELECT {near}, {far}, props FROM edges WHERE type = ? AND {near} IN ({marks})"
            rows = self._db.execute(statement, [Rel.CALLS.value, *chunk])
            for name_id, other_id, props in rows:
                values = json.loads(props)
                found.append(CallEdge(name_id, other_id, values["line"], values["resolution"]))
        return sorted(found, key=lambda c: (c.name_id, c.line, c.other_id))

    def file_contents(self, source: str) -> list[tuple[str, str]]:
        return [(src, dst) for src, dst in self._db.execute(_FILE_CONTENTS, [source, Rel.CONTAINS.value])]

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
        require_text_label(label)
        rows = self._db.execute("SELECT id, props, text FROM nodes WHERE label = ? ORDER BY id", [label.value])
        return [(node_id, stored_props(props, text)["text"]) for node_id, props, text in rows]

    def counts(self) -> GraphCounts:
        nodes = dict(self._db.execute("SELECT label, count(*) FROM nodes GROUP BY label ORDER BY label").fetchall())
        rels = dict(self._db.execute("SELECT type, count(*) FROM edges GROUP BY type ORDER BY type").fetchall())
        return GraphCounts(nodes, rels)

    def close(self) -> None:
        """Close every thread's connection; the store is not used after this."""
        with self._lock:
            for db in self._connections:
                db.close()


def stored_props(stored: str, text: bytes | None) -> dict[str, Any]:
    """A node's properties as written: the JSON ones, and its text from its own column (compressed;
    a format-3 row has none there and keeps the text among the JSON ones)."""
    props: dict[str, Any] = json.loads(stored)
    if text is not None:
        props["text"] = zlib.decompress(text).decode()
    return props
