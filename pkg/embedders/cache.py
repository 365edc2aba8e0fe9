"""A persistent embedding cache keyed by (embedder, input type, text hash), shared by all databases."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pkg.embedders.base import Embedder
from pkg.errors import EmbedderError
from pkg.graph import text_hash

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL, input_type TEXT NOT NULL, hash TEXT NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (model, input_type, hash)
) WITHOUT ROWID
"""
_LOOKUP_CHUNK = 500  # stays below SQLite's limit on bound parameters


class EmbeddingCache:
    """Vectors on disk in SQLite; safe to share between processes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=60)
            self._db.execute("PRAGMA journal_mode=WAL")
            # A cache: a crash may lose its last writes, never its consistency, and no write waits
            # for an fsync (FULL's cost each query embedding: up to 8 ms at p95 here).
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise EmbedderError(f"cannot open the embedding cache at {path}: {exc}") from exc

    def get_many(self, model: str, input_type: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the given text hashes (missing ones are absent)."""
        found: dict[str, np.ndarray] = {}
        try:
            for start in range(0, len(hashes), _LOOKUP_CHUNK):
                chunk = list(hashes[start : start + _LOOKUP_CHUNK])
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT hash, vector FROM vectors WHERE model = ? AND input_type = ? AND hash IN ({marks})",
                    [model, input_type, *chunk],
                )
                for digest, blob in rows:
                    found[digest] = np.frombuffer(blob, dtype=np.float32)
        except sqlite3.Error as exc:
            raise EmbedderError(f"cannot read the embedding cache at {self.path}: {exc}") from exc
        return found

    def put_many(self, model: str, input_type: str, items: dict[str, np.ndarray]) -> None:
        """Store vectors by text hash (one transaction)."""
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                    [(model, input_type, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()],
                )
        except sqlite3.Error as exc:
            raise EmbedderError(
                f"cannot write to the embedding cache at {self.path}: {exc} (--cache-dir or PKG_CACHE_DIR moves it)"
            ) from exc

    def dim(self, model: str) -> int | None:
        """Dimension of any vector cached for the model, if there is one."""
        row = self._db.execute("SELECT length(vector) FROM vectors WHERE model = ? LIMIT 1", [model]).fetchone()
        return None if row is None else row[0] // 4

    def close(self) -> None:
        self._db.close()


class CachedEmbedder(Embedder):
    """Wraps an embedder so that no text is ever embedded twice by the same model."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache, query_differs: bool = False) -> None:
        self.name = inner.name
        self.inner = inner
        self.cache = cache
        self._query_differs = query_differs
        self.hits = 0
        self.misses = 0

    @property
    def dim(self) -> int:
        return self.cache.dim(self.name) or self.inner.dim

    @property
    def keeps_vectors(self) -> bool:
        return True

    def _cached(self, texts: Sequence[str], input_type: str, as_queries: bool = False) -> np.ndarray:
        """The texts' vectors from the cache, the missing ones embedded (as queries when as_queries:
        an embedder may run those apart, as SentenceTransformerEmbedder does in ONNX Runtime, even
        where they are cached beside documents)."""
        hashes = [text_hash(t) for t in texts]
        found = self.cache.get_many(self.name, input_type, sorted(set(hashes)))
        missing = {h: t for h, t in zip(hashes, texts) if h not in found}
        if missing:
            order = list(missing)
            texts_to_embed = [missing[h] for h in order]
            if as_queries:
                fresh = self.inner.embed_queries(texts_to_embed)
            else:
                fresh = self.inner.embed_documents(texts_to_embed)
            new = dict(zip(order, fresh))
            self.cache.put_many(self.name, input_type, new)
            found.update(new)
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[h] for h in hashes]).astype(np.float32, copy=False)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(texts, "document")

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(texts, "query" if self._query_differs else "document", as_queries=True)
