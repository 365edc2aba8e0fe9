"""The embedder protocol: texts in, float32 unit vectors out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    #: Identity recorded in a database so that a mismatch can be detected (e.g. "st:all-MiniLM-L6-v2").
    name: str

    @property
    def keeps_vectors(self) -> bool:
        """Whether a text embedded now is not embedded again later (a cache is in front of the model)."""
        return False

    @property
    @abstractmethod
    def dim(self) -> int:
        """Dimension of the vectors."""

    @abstractmethod
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed corpus texts; returns an array of shape (len(texts), dim)."""

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a query; models without a query mode embed it as a document."""
        return self.embed_documents([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed several queries; models without a query mode embed them as documents, in one call."""
        if type(self).embed_query is Embedder.embed_query:
            return self.embed_documents(texts)
        return np.stack([self.embed_query(text) for text in texts])


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Return float32 rows scaled to unit length (zero rows stay zero)."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        array = array.reshape(len(array), -1)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return array / norms
