"""Test support: a build into an open store through the one build pipeline, and judged records of the
evaluation."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ingest.parse import BuildReport
from pkg.embedders import Embedder
from pkg.evaluation.run import Record
from pkg.knowledge_base import KnowledgeBase
from pkg.stores.base import GraphStore


def build(paths: Sequence[Path], store: GraphStore, embedder: Embedder, **options: Any) -> BuildReport:
    """KnowledgeBase.build into an open store; its BM25 indexes go beside an embedded database, else
    into a fresh temporary folder."""
    db_dir = getattr(store, "directory", None) or Path(tempfile.mkdtemp(prefix="pkg-bm25-"))
    return KnowledgeBase(db_dir, store, embedder).build(paths, **options).report


def judged(task_id: str, arm: str, passed: bool, **fields: Any) -> Record:
    """An arm's record that passed the hidden tests or failed one of their assertions; `fields` sets the rest."""
    return Record(
        task_id, arm, passed, "passed" if passed else "failed", None if passed else "AssertionError", **fields
    )
