"""Shared fixtures: the real default embedder and a real standard-library slice."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from pkg.embedders import CachedEmbedder, EmbeddingCache
from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder

STDLIB = Path(sysconfig.get_paths()["stdlib"])
#: A bounded, real corpus present on every machine with this Python.
STDLIB_SLICE = [STDLIB / "json", STDLIB / "textwrap.py", STDLIB / "heapq.py", STDLIB / "bisect.py"]
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def minilm() -> SentenceTransformerEmbedder:
    """The real default model, loaded once per session from its PyPI package."""
    return SentenceTransformerEmbedder()


@pytest.fixture()
def embedder(minilm: SentenceTransformerEmbedder, tmp_path: Path) -> CachedEmbedder:
    """The default model behind a fresh persistent cache."""
    return CachedEmbedder(minilm, EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite"))


def run_cli(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `pkg` entry point in a subprocess."""
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "pkg", *args], capture_output=True, text=True, env=env, timeout=600
    )
