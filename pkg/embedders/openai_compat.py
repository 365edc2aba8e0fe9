"""Embedder for any OpenAI-compatible `/v1/embeddings` endpoint: text-embeddings-inference, vLLM,
Ollama, hosted APIs. Settings from arguments or PKG_EMBED_BASE_URL / PKG_EMBED_API_KEY (falling back
to OPENAI_BASE_URL / OPENAI_API_KEY), PKG_EMBED_BATCH_SIZE and PKG_EMBED_CONCURRENCY."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pkg.config import OPENAI_API_URL, first_env, positive_setting
from pkg.embedders.base import Embedder, unit_rows
from pkg.errors import EmbedderError

SPEC_KIND = "openai-embed"
#: Texts per request: text-embeddings-inference refuses more than 32 unless started with a larger
#: --max-client-batch-size; OpenAI takes up to 2,048.
DEFAULT_BATCH_SIZE = 32
DEFAULT_CONCURRENCY = 4


class OpenAICompatEmbedder(Embedder):
    """POSTs batches to `<base_url>/embeddings`, `concurrency` at a time; retries connection errors,
    429 and 5xx with exponential backoff (`retries` times, first wait `backoff` seconds)."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int | None = None,
        concurrency: int | None = None,
        timeout: float = 120.0,
        retries: int = 5,
        backoff: float = 1.0,
    ) -> None:
        self.name = f"{SPEC_KIND}:{model}"
        self._model = model
        base = base_url or first_env("PKG_EMBED_BASE_URL", "OPENAI_BASE_URL") or OPENAI_API_URL
        self.url = f"{base.rstrip('/')}/embeddings"
        self._api_key = api_key or first_env("PKG_EMBED_API_KEY", "OPENAI_API_KEY")
        self.batch_size = positive_setting(batch_size, "PKG_EMBED_BATCH_SIZE", DEFAULT_BATCH_SIZE)
        self.concurrency = positive_setting(concurrency, "PKG_EMBED_CONCURRENCY", DEFAULT_CONCURRENCY)
        self._timeout = timeout
        self._retries = retries
        self._backoff = backoff
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = self._embed_batch(["dimension probe"]).shape[1]
        return self._dim

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batches = [list(texts[start : start + self.batch_size]) for start in range(0, len(texts), self.batch_size)]
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches)))
        try:
            return np.concatenate(list(pool.map(self._embed_batch, batches)))
        finally:
            pool.shutdown(cancel_futures=True)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        body = self._post({"model": self._model, "input": texts})
        try:
            items = sorted(body["data"], key=lambda item: item["index"])
            vectors = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderError(f"{self.url} answered without embeddings: {str(body)[:200]}") from exc
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise EmbedderError(f"{self.url} returned {len(vectors)} vectors for {len(texts)} texts")
        if self._dim is None:
            self._dim = vectors.shape[1]
        elif vectors.shape[1] != self._dim:
            raise EmbedderError(f"{self.url} returned {vectors.shape[1]}-dimensional vectors after {self._dim}")
        return unit_rows(vectors)

    def _post(self, payload: dict) -> dict:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=json.dumps(payload).encode(), headers=headers, method="POST")
        attempts = self._retries + 1
        for attempt in range(attempts):
            try:
                with urllib.request.urlopen(request, timeout=self._timeout) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode(errors="replace").strip()[:200]
                if exc.code != 429 and exc.code < 500:
                    raise EmbedderError(
                        f"{self.url} refused a batch of {len(payload['input'])} texts with HTTP {exc.code}: {detail}"
                    ) from exc
                failure = f"HTTP {exc.code}: {detail}"
            except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, dropped connections
                failure = str(getattr(exc, "reason", exc))
            except json.JSONDecodeError as exc:
                raise EmbedderError(f"{self.url} did not answer JSON") from exc
            if attempt < self._retries:
                time.sleep(self._backoff * 2**attempt)
        raise EmbedderError(f"{self.url} failed {attempts} attempts in a row, the last with {failure}")
