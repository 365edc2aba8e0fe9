"""The embedded store on disk: persistence, idempotence, exact top-k, embedder guard, crash safety."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import zlib
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from pkg.errors import EmbedderMismatchError, StoreNotFoundError
from pkg.graph import Edge, Label, Node, Rel
from pkg.stores.base import EmbedderInfo
from pkg.stores.embedded import DB_FILE, EmbeddedStore


def _random_nodes(count: int, dim: int, seed: int) -> list[Node]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        Node(f"b{i}", Label.BLOCK, {"text": f"x = {i}", "start_line": 1, "end_line": 1, "impl_id": "f"}, vectors[i])
        for i in range(count)
    ]


def test_missing_database_is_reported(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError, match="pkg build"):
        EmbeddedStore(tmp_path / "nothing")


def test_persistence_and_idempotent_writes(tmp_path: Path) -> None:
    nodes = _random_nodes(50, 8, 0)
    edges = [Edge(f"b{i}", Rel.PARENT, f"b{i + 1}") for i in range(49)]
    with EmbeddedStore(tmp_path, create=True) as store:
        store.check_embedder(EmbedderInfo("st:test", 8), record=True)
        store.write(nodes, edges)
        store.write(nodes, edges)  # same ids again
    with EmbeddedStore(tmp_path) as store:
        counts = store.counts()
        assert counts.nodes == {"BLOCK": 50} and counts.relationships == {"PARENT": 49}
        assert store.embedder_info() == EmbedderInfo("st:test", 8)
        hit = store.search(Label.BLOCK, nodes[7].vector, 1)[0]
        assert hit.id == "b7" and hit.score == pytest.approx(1.0, abs=1e-5)


def test_a_format_3_database_is_upgraded_in_place_and_keeps_its_texts(tmp_path: Path) -> None:
    """Format 3 kept a node's text among its JSON props; format 4 adds a compressed text column."""
    with sqlite3.connect(tmp_path / DB_FILE) as db:
        db.executescript(
            """
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            INSERT INTO meta VALUES ('schema_version', '3');
            CREATE TABLE nodes (id TEXT PRIMARY KEY, label TEXT NOT NULL, source TEXT, props TEXT NOT NULL,
                                vector BLOB);
            CREATE TABLE edges (src TEXT NOT NULL, type TEXT NOT NULL, dst TEXT NOT NULL, props TEXT,
                                PRIMARY KEY (src, type, dst)) WITHOUT ROWID;
            CREATE TABLE sources (path TEXT PRIMARY KEY, fingerprint TEXT NOT NULL) WITHOUT ROWID;
            INSERT INTO nodes VALUES ('old', 'BLOCK', NULL,
                '{"end_line": 1, "impl_id": "f", "start_line": 1, "text": "x = 0"}', NULL);
            """
        )
    with EmbeddedStore(tmp_path) as store:
        store.write(_random_nodes(2, 4, 0)[1:], [])
        assert dict(store.texts(Label.BLOCK)) == {"old": "x = 0", "b1": "x = 1"}
    with sqlite3.connect(tmp_path / DB_FILE) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("4",)
        props, text = db.execute("SELECT props, text FROM nodes WHERE id = 'b1'").fetchone()
        assert "text" not in props and zlib.decompress(text) == b"x = 1"


def test_top_k_is_exact_cosine(tmp_path: Path) -> None:
    nodes = _random_nodes(500, 16, 1)
    matrix = np.stack([n.vector for n in nodes])
    with EmbeddedStore(tmp_path, create=True) as store:
        store.write(nodes, [])
        for seed in range(20):
            query = np.random.default_rng(100 + seed).normal(size=16).astype(np.float32)
            query /= np.linalg.norm(query)
            expected = [f"b{i}" for i in np.argsort(-(matrix @ query), kind="stable")[:10]]
            hits = store.search(Label.BLOCK, query, 10)
            assert [h.id for h in hits] == expected
            assert all(a.score >= b.score for a, b in pairwise(hits))
        assert store.search(Label.IMPL, query, 10) == []
        assert len(store.search(Label.BLOCK, query, 10_000)) == 500


def test_other_connections_writes_are_seen(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path, create=True) as reader, EmbeddedStore(tmp_path) as writer:
        assert reader.search(Label.BLOCK, np.ones(4, dtype=np.float32) / 2, 5) == []
        writer.write(_random_nodes(3, 4, 2), [])
        assert len(reader.search(Label.BLOCK, np.ones(4, dtype=np.float32) / 2, 5)) == 3


def test_embedder_mismatch_is_refused(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path, create=True) as store:
        store.check_embedder(EmbedderInfo("st:all-MiniLM-L6-v2", 384), record=True)
        store.check_embedder(EmbedderInfo("st:all-MiniLM-L6-v2", 384))
        with pytest.raises(EmbedderMismatchError, match="built with st:all-MiniLM-L6-v2"):
            store.check_embedder(EmbedderInfo("voyage:voyage-code-3", 1024), record=True)


def test_kill_mid_write_leaves_a_store_that_opens(tmp_path: Path) -> None:
    """SIGKILL a process that writes batch after batch; every committed batch survives whole."""
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        from pkg.graph import Label, Node
        from pkg.stores.embedded import DB_FILE, EmbeddedStore
        store = EmbeddedStore(__import__("pathlib").Path({str(tmp_path)!r}), create=True)
        vector = np.ones(64, dtype=np.float32) / 8
        batch = 0
        while True:
            nodes = [Node(f"n{{batch}}-{{i}}", Label.BLOCK, {{"text": "x" * 500}}, vector) for i in range(1000)]
            store.write(nodes, [])
            batch += 1
            if batch == 3:
                print("writing", flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with EmbeddedStore(tmp_path) as store:
        written = store.counts().nodes["BLOCK"]
        assert written >= 3000 and written % 1000 == 0
