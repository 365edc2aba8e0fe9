"""A client of any OpenAI-compatible chat completions endpoint (vLLM, Ollama, llama.cpp's server,
hosted APIs). Settings from arguments or PKG_OPENAI_BASE_URL / PKG_OPENAI_API_KEY (falling back to
OPENAI_BASE_URL / OPENAI_API_KEY)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence

from pkg.config import OPENAI_API_URL, first_env
from pkg.errors import GeneratorError
from pkg.generators.base import Completion, GenerationParams, Generator, Message


class OpenAICompatGenerator(Generator):
    """POSTs to `<base_url>/chat/completions`; retries transient failures (429, 5xx, network). Each
    request has its own connection, so several threads may generate at once."""

    concurrent = True

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 300.0,
        retries: int = 3,
    ) -> None:
        self._model = model
        self._base_url = (base_url or first_env("PKG_OPENAI_BASE_URL", "OPENAI_BASE_URL") or OPENAI_API_URL).rstrip("/")
        self._api_key = api_key or first_env("PKG_OPENAI_API_KEY", "OPENAI_API_KEY")
        self._timeout = timeout
        self._retries = retries
        self.model_id = f"openai:{model}@{self._base_url}"

    def _post(self, payload: dict, endpoint: str = "chat/completions") -> dict:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(
            f"{self._base_url}/{endpoint}", data=json.dumps(payload).encode(), headers=headers, method="POST"
        )
        for attempt in range(self._retries + 1):
            try:
                with urllib.request.urlopen(request, timeout=self._timeout) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode(errors="replace")[:200]
                if exc.code in (429, 500, 502, 503, 504) and attempt < self._retries:
                    time.sleep(2**attempt)
                    continue
                raise GeneratorError(f"{self._base_url} answered HTTP {exc.code}: {detail}") from exc
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                if attempt < self._retries:
                    time.sleep(2**attempt)
                    continue
                reason = getattr(exc, "reason", exc)
                raise GeneratorError(f"cannot reach {self._base_url}: {reason}") from exc
            except json.JSONDecodeError as exc:
                raise GeneratorError(f"{self._base_url} did not answer JSON") from exc
        raise AssertionError("unreachable")

    def generate(self, messages: Sequence[Message], params: GenerationParams) -> Completion:
        return self._ask("chat/completions", {"messages": list(messages)}, params)

    def complete(self, prompt: str, params: GenerationParams) -> Completion:
        """Through the (legacy) `/completions` endpoint, which vLLM, llama.cpp's server and Ollama serve."""
        return self._ask("completions", {"prompt": prompt}, params)

    def _ask(self, endpoint: str, request: dict, params: GenerationParams) -> Completion:
        payload: dict = {
            "model": self._model,
            **request,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "seed": params.seed,
        }
        if params.stop:
            payload["stop"] = list(params.stop)
        started = time.perf_counter()
        body = self._post(payload, endpoint)
        try:
            choice = body["choices"][0]
            text = (choice["message"]["content"] if "messages" in request else choice["text"]) or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise GeneratorError(f"{self._base_url} answered without a completion: {str(body)[:200]}") from exc
        return Completion.of_reply(body, text, started)
