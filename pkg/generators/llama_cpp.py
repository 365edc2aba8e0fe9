"""A local GGUF model through llama-cpp-python, prompted with the chat template stored in the GGUF."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from pkg.config import positive_setting
from pkg.errors import GeneratorError, PromptTooLongError
from pkg.generators.base import Completion, GenerationParams, Generator, Message

DEFAULT_CONTEXT = 4096


class LlamaCppGenerator(Generator):
    """Greedy decoding is top-k 1 with no repetition penalty, so replies are deterministic.

    Not used: prompt-lookup speculative decoding (llama-cpp-python's LlamaPromptLookupDecoding).
    Replies copy much of the prompt, and its drafts gave the same six HumanEval replies, but 19%
    slower on 2 cores: checking drafted tokens is compute bound on a CPU.

    `threads` (else PKG_LLAMA_THREADS, else one per core): on a machine busy with other work, one thread
    is the faster: 48 tokens of SmolLM2-135M took 15.8 s on one thread, 53.6 s on two, at a load average
    of 10 on 2 cores, as llama.cpp's threads wait for each other at every step. The prompt is read with
    the same threads: llama-cpp-python's own default there is one per core, so two one-thread processes
    ran four threads on 2 cores (load 3.8) and wrote ~1.1 repository-benchmark replies a minute each."""

    def __init__(
        self, model_path: Path, model_id: str | None = None, n_ctx: int = DEFAULT_CONTEXT, threads: int | None = None
    ) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise GeneratorError(
                "the llama.cpp generator needs llama-cpp-python (make llama installs it, built for this CPU)"
            ) from exc
        if not model_path.is_file():
            raise GeneratorError(f"no model file at {model_path}")
        self.model_id = model_id or f"llama:{model_path.name}"
        self._context = n_ctx
        threads = positive_setting(threads, "PKG_LLAMA_THREADS", os.cpu_count() or 1)
        try:
            self._llm = Llama(
                model_path=str(model_path),
                n_ctx=n_ctx,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
                seed=0,
            )
        except (ValueError, RuntimeError) as exc:
            raise GeneratorError(f"llama.cpp cannot load {model_path}: {exc}") from exc

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode(), add_bos=False, special=False))

    def generate(self, messages: Sequence[Message], params: GenerationParams) -> Completion:
        started = time.perf_counter()
        self._llm.set_seed(params.seed)
        try:
            reply = self._llm.create_chat_completion(
                messages=list(messages),  # type: ignore[arg-type]  # Message is the same TypedDict shape
                **_sampling(params),
            )
        except ValueError as exc:  # llama.cpp reports a prompt longer than the context this way
            raise PromptTooLongError(f"llama.cpp refused the prompt: {exc}") from exc
        assert isinstance(reply, dict)  # not streamed: one response
        return Completion.of_reply(reply, reply["choices"][0]["message"]["content"], started)

    def complete(self, prompt: str, params: GenerationParams) -> Completion:
        started = time.perf_counter()
        self._llm.set_seed(params.seed)
        try:  # create_completion tokenizes the prompt with special=True: <|file_sep|> is one token
            reply = self._llm.create_completion(prompt=prompt, **_sampling(params))
        except ValueError as exc:
            raise PromptTooLongError(f"llama.cpp refused the prompt: {exc}") from exc
        assert isinstance(reply, dict)
        return Completion.of_reply(reply, reply["choices"][0]["text"], started)

    def close(self) -> None:
        self._llm.close()


def _sampling(params: GenerationParams) -> dict:
    """llama.cpp's decoding arguments for `params`: greedy is top-k 1, no penalties."""
    greedy = params.temperature <= 0
    return {
        "max_tokens": params.max_new_tokens,
        "temperature": params.temperature,
        "top_k": 1 if greedy else 40,
        "top_p": 1.0 if greedy else 0.95,
        "min_p": 0.0,
        "repeat_penalty": 1.0,
        "stop": list(params.stop) or None,
        "seed": params.seed,
    }
