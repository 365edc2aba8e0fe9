"""Test support for the stores: whole-graph snapshots of both stores, and the Cypher only tests use
(tests/queries/<name>.cypher, parameterised like the store's own)."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from neo4j import Driver, GraphDatabase

from pkg.schema import NODE_RECORDS
from pkg.stores.base import GraphStore
from pkg.stores.embedded import DB_FILE, EmbeddedStore, stored_props
from pkg.stores.neo4j_store import Neo4jStore

QUERIES = Path(__file__).parent / "queries"


def cypher(name: str) -> str:
    """The text of tests/queries/<name>.cypher."""
    return (QUERIES / f"{name}.cypher").read_text(encoding="utf-8").strip()


def neo4j_driver(uri: str) -> Driver:
    """A driver for the server at uri, with the credentials of NEO4J_USER / NEO4J_PASSWORD like the store's."""
    password = os.environ.get("NEO4J_PASSWORD")
    auth = None if password is None else (os.environ.get("NEO4J_USER") or "neo4j", password)
    return GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF")


@dataclass(frozen=True)
class GraphSnapshot:
    """A whole graph as plain data, to compare two databases: each node's label, properties (absent
    ones left out, as Neo4j stores no nulls) and vector rounded to 5 decimals; edges; sources."""

    nodes: dict[str, tuple[str, dict[str, Any], tuple[float, ...]]]
    edges: set[tuple[str, str, str]]
    sources: dict[str, str]


def rounded(vector: Any) -> tuple[float, ...]:
    """A vector as a tuple rounded to 5 decimals, comparable across stores."""
    return tuple(round(float(x), 5) for x in vector)


def snapshot(store: GraphStore) -> GraphSnapshot:
    """Everything the store holds (loads it all: for small graphs), read over a connection of its own."""
    if isinstance(store, EmbeddedStore):
        return _embedded_snapshot(store)
    if isinstance(store, Neo4jStore):
        return _neo4j_snapshot(store)
    raise TypeError(f"no snapshot for {type(store).__name__}")


def _embedded_snapshot(store: EmbeddedStore) -> GraphSnapshot:
    with closing(sqlite3.connect(f"file:{store.directory / DB_FILE}?mode=ro", uri=True)) as db:
        nodes = {
            node_id: (
                label,
                {k: v for k, v in stored_props(props, text).items() if v is not None},
                rounded(np.frombuffer(vector, dtype=np.float32)) if vector else (),
            )
            for node_id, label, props, vector, text in db.execute("SELECT id, label, props, vector, text FROM nodes")
        }
        edges = set(db.execute("SELECT src, type, dst FROM edges").fetchall())
    return GraphSnapshot(nodes, edges, store.sources())


def _neo4j_snapshot(store: Neo4jStore) -> GraphSnapshot:
    with neo4j_driver(store.uri) as driver:
        labels = [label.value for label in NODE_RECORDS]
        records = driver.execute_query(cypher("snapshot_nodes"), labels=labels, database_=store.database).records
        nodes = {
            r["id"]: (
                r["label"],
                {k: v for k, v in r["props"].items() if k not in ("id", "embedding")},
                rounded(r["props"].get("embedding") or ()),
            )
            for r in records
        }
        records = driver.execute_query(cypher("snapshot_edges"), database_=store.database).records
        edges = {(r["src"], r["type"], r["dst"]) for r in records}
    return GraphSnapshot(nodes, edges, store.sources())
