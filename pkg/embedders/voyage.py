"""Voyage AI embedder (API; key from VOYAGE_API_KEY, endpoint overridable by VOYAGE_BASE_URL)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from pkg.embedders.base import Embedder, unit_rows
from pkg.errors import EmbedderError

DEFAULT_MODEL = "voyage-code-3"
#: Output dimensions of the models' default settings.
KNOWN_DIMS = {"voyage-code-3": 1024, "voyage-code-2": 1536, "voyage-3": 1024, "voyage-3-large": 1024}
#: Texts per request; the API accepts up to 1,000 but token limits bite earlier on code.
BATCH = 64


class VoyageEmbedder(Embedder):
    """Embeds through the Voyage API with distinct document and query input types."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        self.name = f"voyage:{model}"
        self._model = model
        key = api_key or os.environ.get("VOYAGE_API_KEY")
        if not key:
            raise EmbedderError("the Voyage embedder needs an API key in VOYAGE_API_KEY")
        import voyageai

        self._client = voyageai.Client(
            api_key=key,
            base_url=base_url or os.environ.get("VOYAGE_BASE_URL"),
            timeout=timeout,
            max_retries=max_retries,
        )
        self._dim = KNOWN_DIMS.get(model)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._embed(["dimension probe"], "document").shape[1])
        return self._dim

    def _embed(self, texts: Sequence[str], input_type: str) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            chunk = list(texts[start : start + BATCH])
            try:
                result = self._client.embed(chunk, model=self._model, input_type=input_type, truncation=True)
            except Exception as exc:  # the client raises many error types; report them as one
                raise EmbedderError(f"Voyage request failed: {exc}") from exc
            if len(result.embeddings) != len(chunk):
                raise EmbedderError(f"Voyage returned {len(result.embeddings)} vectors for {len(chunk)} texts")
            rows.extend([float(x) for x in row] for row in result.embeddings)
        return unit_rows(np.asarray(rows, dtype=np.float32))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed(texts, "document")

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], "query")[0]
