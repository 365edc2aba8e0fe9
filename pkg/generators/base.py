"""The generator protocol: chat messages (or, for models that take it, raw text) in, one completion out."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypedDict

from pkg.errors import ConfigError, GeneratorError
from retrieval.tokenize import estimate_tokens


class Message(TypedDict):
    """One chat turn."""

    role: str
    content: str


@dataclass(frozen=True)
class GenerationParams:
    """Decoding settings; the defaults are greedy decoding with 512 new tokens at most."""

    max_new_tokens: int = 512
    temperature: float = 0.0
    seed: int = 0
    stop: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Completion:
    """A model's reply with the token counts the model reported."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str = "stop"

    @classmethod
    def of_reply(cls, reply: Mapping[str, Any], text: str | None, started: float) -> Completion:
        """The completion of an OpenAI-format reply (llama-cpp-python answers in it too) whose text was
        read out, timed from `started` (a time.perf_counter reading) until now."""
        usage = reply.get("usage") or {}
        return cls(
            text=text or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            seconds=time.perf_counter() - started,
            finish_reason=str(reply["choices"][0].get("finish_reason") or "stop"),
        )


class Generator(ABC):
    """A language model that answers chat messages."""

    #: Identifies the model and its weights in caches and reports.
    model_id: str
    #: Whether `generate` may be called from several threads at once (a server's client may).
    concurrent: bool = False

    @abstractmethod
    def generate(self, messages: Sequence[Message], params: GenerationParams) -> Completion:
        """One completion of `messages` under `params`."""

    def complete(self, prompt: str, params: GenerationParams) -> Completion:
        """The model's continuation of raw text `prompt` (no chat template; special tokens in it are
        read as such); a generator that only chats refuses."""
        raise GeneratorError(f"{self.model_id} answers chat messages only, not raw text to continue")

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` for this model; the base estimates them (`estimate_tokens`)."""
        return estimate_tokens(text)

    def close(self) -> None:  # noqa: B027 (a hook: most generators hold nothing to release)
        """Release the model; the default holds nothing."""


def require_concurrency(generator: Generator, concurrency: int) -> None:
    """Refuses more than one request at a time for a generator that answers one at a time."""
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, not {concurrency}")
    if concurrency > 1 and not generator.concurrent:
        raise ConfigError(
            f"{generator.model_id} answers one request at a time; concurrency {concurrency} is for openai: servers"
        )


def generate_many(
    generator: Generator,
    prompts: Sequence[Sequence[Message]],
    params: GenerationParams,
    concurrency: int = 1,
    done: Callable[[int], None] | None = None,
) -> list[Completion]:
    """One completion per prompt, in the prompts' order, with up to `concurrency` requests in flight;
    `done(n)` is called, in order, as the first n completions are known."""
    require_concurrency(generator, concurrency)

    def ask(messages: Sequence[Message]) -> Completion:
        return generator.generate(messages, params)

    # One at a time stays in this thread, so that an interrupt stops the model at once.
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="generate") if concurrency > 1 else None
    completions: list[Completion] = []
    try:
        for completion in pool.map(ask, prompts) if pool else map(ask, prompts):
            completions.append(completion)
            if done:
                done(len(completions))
    finally:
        if pool:  # on a failure, the requests not yet sent are dropped
            pool.shutdown(cancel_futures=True)
    return completions
