"""Test support: an empty store of either kind, a build into an open store through the one build
pipeline, and judged records of the evaluation."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ingest.parse import BuildReport
from pkg.embedders import Embedder
from pkg.evaluation.run import Record
from pkg.knowledge_base import KnowledgeBase
from pkg.stores.base import GraphStore
from pkg.stores.embedded import EmbeddedStore
from pkg.stores.neo4j_store import Neo4jStore
from tests.neo4j_server import wipe


def build(paths: Sequence[Path], store: GraphStore, embedder: Embedder, **options: Any) -> BuildReport:
    """KnowledgeBase.build into an open store; its BM25 indexes go beside an embedded database, else
    into a fresh temporary folder."""
    db_dir = getattr(store, "directory", None) or Path(tempfile.mkdtemp(prefix="pkg-bm25-"))
    return KnowledgeBase(db_dir, store, embedder).build(paths, **options).report


def empty_store(kind: str, folder: Path, request: pytest.FixtureRequest) -> GraphStore:
    """An empty store of a kind of conftest's STORE_KINDS: a new embedded database in folder, or the
    session's Neo4j (the neo4j_uri fixture) wiped."""
    if kind == "embedded":
        return EmbeddedStore(folder, create=True)
    uri = request.getfixturevalue("neo4j_uri")
    wipe(uri)
    return Neo4jStore(uri)


def judged(task_id: str, arm: str, passed: bool, **fields: Any) -> Record:
    """An arm's record that passed the hidden tests or failed one of their assertions; `fields` sets the rest."""
    return Record(
        task_id, arm, passed, "passed" if passed else "failed", None if passed else "AssertionError", **fields
    )
