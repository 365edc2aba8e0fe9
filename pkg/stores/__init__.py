"""Graph stores: one protocol, the embedded default, and Neo4j."""

from __future__ import annotations

from pathlib import Path

from pkg.errors import ConfigError
from pkg.stores.base import EmbedderInfo, GraphStore

STORES = ("embedded",)

__all__ = ["STORES", "EmbedderInfo", "GraphStore", "open_store"]


def open_store(kind: str, db_dir: Path, create: bool = False) -> GraphStore:
    """Open the store of the given kind; `create` allows making a new embedded database."""
    if kind == "embedded":
        from pkg.stores.embedded import EmbeddedStore

        return EmbeddedStore(db_dir, create=create)
    raise ConfigError(f"unknown store {kind!r}; use one of: {', '.join(STORES)}")
