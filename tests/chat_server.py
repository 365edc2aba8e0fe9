"""A local HTTP server speaking the OpenAI chat-completions (and legacy text-completions) wire format, for
the tests of the OpenAI-compatible client and of what drives it. `answer(body)` decides each reply, after `delay`
seconds; the server records the most requests it was answering at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.http_stub import JsonHandler, StubServer

#: (HTTP status, JSON body) for a request body.
Answer = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


def completion(content: str, prompt_tokens: int = 1, completion_tokens: int = 1) -> tuple[int, dict[str, Any]]:
    """A successful chat completion carrying `content`."""
    return 200, {
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def text_completion(text: str, prompt_tokens: int = 1, completion_tokens: int = 1) -> tuple[int, dict[str, Any]]:
    """A successful text completion (`/completions`) carrying `text`."""
    status, body = completion("", prompt_tokens, completion_tokens)
    body["choices"] = [{"index": 0, "finish_reason": "stop", "text": text}]
    return status, body


class _Handler(JsonHandler):
    server: ChatServer

    def do_POST(self) -> None:
        body = self.read_json()
        self.server.requests.append(body)
        self.server.paths.append(self.path)
        self.server.headers_seen.append(dict(self.headers))
        with self.server.answering():
            time.sleep(self.server.delay)
            found = self.path in ("/v1/chat/completions", "/v1/completions")
            status, payload = self.server.answer(body) if found else (404, {"error": "not found"})
        self.reply_json(status, payload)


class ChatServer(StubServer):
    """The chat API's stub; see the module docstring."""

    def __init__(self, answer: Answer, delay: float = 0.0) -> None:
        super().__init__(_Handler)
        self.answer = answer
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers_seen: list[dict[str, str]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._counting = threading.Lock()

    @contextmanager
    def answering(self) -> Iterator[None]:
        """Counts a request as in flight while it is answered."""
        with self._counting:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            yield
        finally:
            with self._counting:
                self.in_flight -= 1
