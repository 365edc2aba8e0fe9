"""A local HTTP server speaking the OpenAI embeddings wire format, for the tests of the
OpenAI-compatible embedder. Its vectors are hashed bags of words (texts that share words are near);
it can fail the next requests with given statuses and hold each request for `delay(texts)` seconds,
and it records every request, the headers, and the most requests it ever served at once."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.http_stub import JsonHandler, StubServer

DIM = 256


def hashed_vector(text: str, dim: int = DIM) -> list[float]:
    """Counts of the text's lower-cased words, each in the bucket its SHA-256 picks."""
    vector = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        vector[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % dim] += 1.0
    return vector


def _error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": "invalid_request_error", "code": None}}


class _Handler(JsonHandler):
    server: EmbeddingServer

    def do_POST(self) -> None:
        body = self.read_json()
        texts = body.get("input") if isinstance(body.get("input"), list) else []
        status = self.server.enter(body, dict(self.headers))
        try:
            time.sleep(self.server.delay(texts))
            status, reply = self._answer(status, body)
        finally:
            self.server.leave(texts)  # before replying, so that the client's next request cannot overlap it
        self.reply_json(status, reply)

    def _answer(self, status: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        texts = body.get("input")
        if self.path != "/v1/embeddings":
            return _error(404, f"no route {self.path}")
        if status != 200:
            return _error(status, f"the stub was told to answer {status}")
        if not isinstance(texts, list) or not all(isinstance(t, str) and t for t in texts) or "model" not in body:
            return _error(400, "'input' must be a non-empty list of non-empty strings and 'model' is required")
        data = [{"object": "embedding", "index": i, "embedding": hashed_vector(t)} for i, t in enumerate(texts)]
        # The API identifies each vector by its index; answering in reverse checks that the client reads it.
        return 200, {
            "object": "list",
            "data": data[::-1],
            "model": body["model"],
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
        }


class EmbeddingServer(StubServer):
    """The embeddings API's stub (see the module docstring); `failures` holds the statuses of the next
    answers (one each, then 200s)."""

    def __init__(self) -> None:
        super().__init__(_Handler)
        self.failures: list[int] = []
        self.delay: Callable[[list[str]], float] = lambda texts: 0.0
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.finished: list[list[str]] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()

    @property
    def batch_sizes(self) -> list[int]:
        return [len(request["input"]) for request in self.requests]

    def enter(self, body: dict[str, Any], headers: dict[str, str]) -> int:
        """Record a request arriving; the status to answer it with."""
        with self._lock:
            self.requests.append(body)
            self.headers_seen.append(headers)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            return self.failures.pop(0) if self.failures else 200

    def leave(self, texts: list[str]) -> None:
        """Record a request done."""
        with self._lock:
            self._in_flight -= 1
            self.finished.append(texts)
