"""A persistent generation cache: an append-only JSONL file keyed by (model, messages or raw prompt, parameters).

One line per completion, flushed as soon as it exists, so an interrupted run resumes where it
stopped; a line cut short by a kill is ignored on the next open, and the next completion starts a
line of its own. JSONL keeps the cache readable and
diffable, so a benchmark's cache can be committed beside its results.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from pkg.generators.base import Completion, GenerationParams, Generator, Message


def cache_key(model_id: str, messages: Sequence[Message] | str, params: GenerationParams) -> str:
    """A raw prompt (a string) never shares a key with chat messages (a list)."""
    asked = messages if isinstance(messages, str) else list(messages)
    payload = json.dumps([model_id, asked, asdict(params)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


class GenerationCache:
    """Completions by key, loaded from and appended to one JSONL file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._entries: dict[str, Completion] = {}
        self._torn = False  # the file ends inside a line: the next append must not join it
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            self._torn = bool(text) and not text.endswith("\n")
            for line in text.splitlines():
                try:
                    row = json.loads(line)
                    self._entries[row["key"]] = Completion(**row["completion"])
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Completion | None:
        return self._entries.get(key)

    def put(self, key: str, completion: Completion) -> None:
        with self._lock:
            self._entries[key] = completion
            self.path.parent.mkdir(parents=True, exist_ok=True)
            line = json.dumps({"key": key, "completion": asdict(completion)}, ensure_ascii=False) + "\n"
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write("\n" + line if self._torn else line)
            self._torn = False


class CachedGenerator(Generator):
    """Answers from the cache when it can, otherwise asks the model and records the reply; as
    concurrent as the model it wraps (the cache writes one line at a time)."""

    def __init__(self, inner: Generator, cache: GenerationCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model_id = inner.model_id
        self.concurrent = inner.concurrent
        self.hits = 0
        self.misses = 0
        self._counting = threading.Lock()

    def generate(self, messages: Sequence[Message], params: GenerationParams) -> Completion:
        return self._cached(messages, params, lambda: self.inner.generate(messages, params))

    def complete(self, prompt: str, params: GenerationParams) -> Completion:
        return self._cached(prompt, params, lambda: self.inner.complete(prompt, params))

    def _cached(
        self, asked: Sequence[Message] | str, params: GenerationParams, answer: Callable[[], Completion]
    ) -> Completion:
        key = cache_key(self.model_id, asked, params)
        found = self.cache.get(key)
        if found is not None:
            with self._counting:
                self.hits += 1
            return found
        completion = answer()
        with self._counting:
            self.misses += 1
        self.cache.put(key, completion)
        return completion

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def close(self) -> None:
        self.inner.close()
