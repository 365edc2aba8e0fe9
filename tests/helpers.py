"""Test support: building into a store the test opened, through the one build pipeline."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ingest.parse import BuildReport
from pkg.embedders import Embedder
from pkg.knowledge_base import KnowledgeBase
from pkg.stores.base import GraphStore


def build(paths: Sequence[Path], store: GraphStore, embedder: Embedder, **options: Any) -> BuildReport:
    """KnowledgeBase.build into an open store; its BM25 indexes go beside an embedded database, else
    into a fresh temporary folder."""
    db_dir = getattr(store, "directory", None) or Path(tempfile.mkdtemp(prefix="pkg-bm25-"))
    return KnowledgeBase(db_dir, store, embedder).build(paths, **options).report
