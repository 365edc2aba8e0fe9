"""Graph stores: one protocol, the embedded default, and Neo4j."""

from __future__ import annotations

from pathlib import Path

from pkg.errors import ConfigError
from pkg.stores.base import EmbedderInfo, GraphStore

STORES = ("embedded", "neo4j")

__all__ = ["STORES", "EmbedderInfo", "GraphStore", "open_store"]


def open_store(kind: str, db_dir: Path, create: bool = False) -> GraphStore:
    """Open the store of the given kind; `create` allows making a new embedded database.

    Neo4j ignores `db_dir` and `create`: it connects to the server named by NEO4J_URI (and
    NEO4J_USER, NEO4J_PASSWORD, NEO4J_DATABASE); an empty database opens like any other.
    """
    if kind == "embedded":
        from pkg.stores.embedded import EmbeddedStore

        return EmbeddedStore(db_dir, create=create)
    if kind == "neo4j":
        from pkg.stores.neo4j_store import Neo4jStore

        return Neo4jStore()
    raise ConfigError(f"unknown store {kind!r}; use one of: {', '.join(STORES)}")
