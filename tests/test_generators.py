"""Generators: the OpenAI-compatible client against a local HTTP server speaking the API's wire
format, the JSONL generation cache, model resolution, and SmolLM2 through llama.cpp for real."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pkg.errors import ConfigError, GeneratorError, ModelError
from pkg.generators import GenerationParams, make_generator
from pkg.generators.cache import CachedGenerator, GenerationCache
from pkg.generators.models import QWEN_SHA256, resolve_model
from pkg.generators.openai_compat import OpenAICompatGenerator
from tests.chat_server import ChatServer, completion, text_completion

MESSAGES = [{"role": "user", "content": "Write a function that adds two numbers."}]


class _Scripted:
    """Echoes the last message in a fence; fails with 503 while `failures_left`; 400 for model "refuse"."""

    def __init__(self) -> None:
        self.failures_left = 0

    def __call__(self, body: dict) -> tuple[int, dict]:
        if self.failures_left:
            self.failures_left -= 1
            return 503, {"error": {"message": "busy"}}
        if body["model"] == "refuse":
            return 400, {"error": {"message": "bad model"}}
        if "prompt" in body:  # a raw completion: goes on with the prompt's last line
            return text_completion(f"  # after {body['prompt'].splitlines()[-1]!r}", 5, 3)
        return completion(f"```python\n# {body['messages'][-1]['content']}\n```", 11, 7)


@pytest.fixture()
def chat_server() -> Iterator[ChatServer]:
    with ChatServer(_Scripted()) as server:
        yield server


def _url(server: ChatServer) -> str:
    return server.url


def test_openai_client_sends_the_request_and_reads_the_reply(chat_server: ChatServer) -> None:
    generator = OpenAICompatGenerator("tiny-coder", base_url=_url(chat_server), api_key="secret", retries=0)
    reply = generator.generate(MESSAGES, GenerationParams(max_new_tokens=64, stop=("###",)))
    sent = chat_server.requests[0]
    assert sent["model"] == "tiny-coder" and sent["messages"] == MESSAGES
    assert sent["max_tokens"] == 64 and sent["temperature"] == 0.0 and sent["stop"] == ["###"]
    assert chat_server.headers_seen[0]["Authorization"] == "Bearer secret"
    assert reply.text == "```python\n# Write a function that adds two numbers.\n```"
    assert (reply.prompt_tokens, reply.completion_tokens, reply.finish_reason) == (11, 7, "stop")


def test_openai_client_takes_its_settings_from_the_environment(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PKG_OPENAI_BASE_URL", _url(chat_server))
    monkeypatch.setenv("PKG_OPENAI_API_KEY", "from-env")
    generator = make_generator("openai:tiny-coder")
    generator.generate(MESSAGES, GenerationParams())
    assert chat_server.headers_seen[0]["Authorization"] == "Bearer from-env"
    assert generator.model_id.startswith("openai:tiny-coder@http://127.0.0.1:")


def test_openai_client_retries_transient_errors(chat_server: ChatServer) -> None:
    chat_server.answer.failures_left = 2
    generator = OpenAICompatGenerator("tiny-coder", base_url=_url(chat_server), retries=2)
    assert generator.generate(MESSAGES, GenerationParams()).completion_tokens == 7
    assert len(chat_server.requests) == 3


def test_openai_client_errors_are_one_typed_line(chat_server: ChatServer) -> None:
    with pytest.raises(GeneratorError, match="HTTP 400"):
        OpenAICompatGenerator("refuse", base_url=_url(chat_server), retries=0).generate(MESSAGES, GenerationParams())
    with pytest.raises(GeneratorError, match="cannot reach"):
        OpenAICompatGenerator("x", base_url="http://127.0.0.1:9/v1", retries=0, timeout=2).generate(
            MESSAGES, GenerationParams()
        )


def test_cache_answers_repeats_and_survives_a_torn_last_line(chat_server: ChatServer, tmp_path: Path) -> None:
    path = tmp_path / "generations.jsonl"
    inner = OpenAICompatGenerator("tiny-coder", base_url=_url(chat_server), retries=0)
    cached = CachedGenerator(inner, GenerationCache(path))
    first = cached.generate(MESSAGES, GenerationParams())
    again = cached.generate(MESSAGES, GenerationParams())
    other = cached.generate(MESSAGES, GenerationParams(max_new_tokens=100))
    assert first == again and other.text == first.text
    assert len(chat_server.requests) == 2 and (cached.hits, cached.misses) == (1, 2)
    with path.open("a") as handle:  # a run killed while appending leaves half a line
        handle.write('{"key": "abc", "completion": {"te')
    reopened = CachedGenerator(inner, GenerationCache(path))
    assert len(reopened.cache) == 2
    assert reopened.generate(MESSAGES, GenerationParams()) == first
    assert len(chat_server.requests) == 2
    third = reopened.generate(MESSAGES, GenerationParams(max_new_tokens=50))  # appended after the torn line
    assert len(chat_server.requests) == 3
    assert (
        CachedGenerator(inner, GenerationCache(path)).generate(MESSAGES, GenerationParams(max_new_tokens=50)) == third
    )
    assert len(chat_server.requests) == 3


def test_openai_client_completes_raw_text_through_the_completions_endpoint(chat_server: ChatServer) -> None:
    generator = OpenAICompatGenerator("tiny-coder", base_url=_url(chat_server), retries=0)
    reply = generator.complete("<|file_sep|>a.py\nx = 1", GenerationParams(max_new_tokens=9, stop=("\ndef ",)))
    assert reply.text == "  # after 'x = 1'" and (reply.prompt_tokens, reply.completion_tokens) == (5, 3)
    assert chat_server.paths == ["/v1/completions"]
    sent = chat_server.requests[0]
    assert sent["prompt"] == "<|file_sep|>a.py\nx = 1" and "messages" not in sent
    assert sent["max_tokens"] == 9 and sent["stop"] == ["\ndef "]


def test_cache_keeps_raw_prompts_apart_from_chat_messages(chat_server: ChatServer, tmp_path: Path) -> None:
    inner = OpenAICompatGenerator("tiny-coder", base_url=_url(chat_server), retries=0)
    cached = CachedGenerator(inner, GenerationCache(tmp_path / "generations.jsonl"))
    prompt = MESSAGES[0]["content"]
    first = cached.complete(prompt, GenerationParams())
    assert cached.complete(prompt, GenerationParams()) == first
    chat = cached.generate(MESSAGES, GenerationParams())  # the same text as a chat turn is another request
    assert chat.text != first.text
    assert chat_server.paths == ["/v1/completions", "/v1/chat/completions"]
    reopened = CachedGenerator(inner, GenerationCache(tmp_path / "generations.jsonl"))
    assert reopened.complete(prompt, GenerationParams()) == first and reopened.hits == 1


def test_unknown_generators_and_models_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown generator"):
        make_generator("gpt:x")
    with pytest.raises(ConfigError, match="needs a model"):
        make_generator("llama")
    with pytest.raises(ModelError, match="unknown model"):
        resolve_model("no-such-model")


@pytest.mark.llm  # the benchmark model's packages (`make models`)
def test_qwen_assembles_from_its_packages_and_verifies() -> None:
    path = resolve_model("qwen2.5-coder-1.5b")
    assert path.stat().st_size == 1_117_320_768
    assert path.with_suffix(".gguf.sha256").read_text().strip() == QWEN_SHA256
    assert resolve_model("qwen2.5-coder-1.5b") == path  # the second call reuses the verified file


def test_assembly_rejects_corrupt_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pkg.generators import models

    bad = tmp_path / "part.bin"
    bad.write_bytes(b"not a model")
    monkeypatch.setattr(models, "qwen_part_paths", lambda: [bad])
    with pytest.raises(ModelError, match="does not verify"):
        models.assemble_qwen(tmp_path / "cache")
    assert not list((tmp_path / "cache" / "models").iterdir())


@pytest.fixture(scope="module")
def smollm2():
    generator = make_generator("llama:smollm2-135m")
    yield generator
    generator.close()


def test_smollm2_generates_deterministic_code_offline(smollm2) -> None:
    params = GenerationParams(max_new_tokens=48)
    messages = [{"role": "user", "content": "Write a Python function add(a, b) that returns a + b."}]
    first = smollm2.generate(messages, params)
    second = smollm2.generate(messages, params)
    assert first.text == second.text and first.text.strip()
    assert 0 < first.completion_tokens <= 48 and first.prompt_tokens > 10
    assert smollm2.model_id == "llama:smollm2-135m"
    assert smollm2.count_tokens("def add(a, b):\n    return a + b") > 5


@pytest.mark.llm
def test_pkg_llama_threads_sets_llama_cpp_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PKG_LLAMA_THREADS", "1")
    generator = make_generator("llama:smollm2-135m")
    try:
        # the prompt too: llama-cpp-python would read it with one thread per core
        assert generator._llm.n_threads == generator._llm.n_threads_batch == 1
    finally:
        generator.close()
    monkeypatch.setenv("PKG_LLAMA_THREADS", "all")
    with pytest.raises(ConfigError, match="PKG_LLAMA_THREADS must be a positive whole number, not 'all'"):
        make_generator("llama:smollm2-135m")


def test_smollm2_continues_raw_text_with_special_tokens_read_as_such(smollm2) -> None:
    params = GenerationParams(max_new_tokens=16, stop=("\ndef ",))
    prompt = "<|im_start|>def add(a, b):\n    "
    first = smollm2.complete(prompt, params)
    assert first.text == smollm2.complete(prompt, params).text
    assert first.text.strip() and "\ndef " not in first.text and 0 < first.completion_tokens <= 16
    # <|im_start|> is one of SmolLM2's special tokens: read as such, it is one token of the prompt, not six
    plain = smollm2.complete("def add(a, b):\n    ", params)
    assert first.prompt_tokens == plain.prompt_tokens + 1
