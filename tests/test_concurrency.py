"""Generation requests in flight at once against a server (a local OpenAI-compatible stub that answers
after a delay): as many at once as asked, the same replies in the same order as one at a time, a
cache that stays whole; and the local llama.cpp model refuses more than one."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pkg.errors import ConfigError, GeneratorError
from pkg.generators import GenerationParams
from pkg.generators.base import Message, generate_many
from pkg.generators.cache import CachedGenerator, GenerationCache
from pkg.generators.openai_compat import OpenAICompatGenerator
from tests.chat_server import ChatServer, completion
from tests.conftest import run_cli

DELAY = 0.3


def _echo(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A reply that depends on the prompt: HumanEval's function name, else the prompt's last word."""
    prompt = body["messages"][-1]["content"]
    named = re.search(r"def (\w+)\(", prompt)
    name = named.group(1) if named else prompt.split()[-1]
    return completion(f"```python\ndef {name}(*args):\n    return {len(prompt)}\n```")


@pytest.fixture()
def server() -> Iterator[ChatServer]:
    stub = ChatServer(_echo, delay=DELAY).start()
    yield stub
    stub.stop()


def _prompts(count: int) -> list[list[Message]]:
    return [[{"role": "user", "content": f"task number {n} " + "x" * n}] for n in range(count)]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_requests_in_flight_match_the_concurrency_and_replies_keep_their_order(
    concurrency: int, tmp_path: Path
) -> None:
    stub = ChatServer(_echo, delay=DELAY).start()
    try:
        cache = GenerationCache(tmp_path / "generations.jsonl")
        generator = CachedGenerator(OpenAICompatGenerator("stub", base_url=stub.url, api_key="k"), cache)
        prompts = _prompts(12)
        done: list[int] = []
        replies = generate_many(generator, prompts, GenerationParams(), concurrency, done.append)
    finally:
        stub.stop()
    assert stub.most_in_flight == concurrency
    assert [r.text for r in replies] == [_echo({"messages": p})[1]["choices"][0]["message"]["content"] for p in prompts]
    assert done == list(range(1, 13)) and (generator.misses, generator.hits) == (12, 0)
    lines = (tmp_path / "generations.jsonl").read_text().splitlines()
    assert len(lines) == 12 and all(json.loads(line)["key"] for line in lines)
    reopened = CachedGenerator(OpenAICompatGenerator("stub", base_url=stub.url), GenerationCache(cache.path))
    again = generate_many(reopened, prompts, GenerationParams(), concurrency)
    assert again == replies and (reopened.hits, reopened.misses) == (12, 0)


def test_a_failing_request_stops_the_batch_with_its_error(server: ChatServer) -> None:
    server.answer = lambda body: (400, {"error": "bad request"})
    generator = OpenAICompatGenerator("stub", base_url=server.url, retries=0)
    with pytest.raises(GeneratorError, match="HTTP 400"):
        generate_many(generator, _prompts(8), GenerationParams(), 2)
    assert len(server.requests) < 8  # the requests not yet sent were dropped


def test_concurrency_below_one_is_refused(server: ChatServer) -> None:
    with pytest.raises(ConfigError, match="at least 1"):
        generate_many(OpenAICompatGenerator("stub", base_url=server.url), _prompts(1), GenerationParams(), 0)


def _compare(out: Path, server: ChatServer, concurrency: int) -> list[dict[str, Any]]:
    done = run_cli(
        "compare",
        "--benchmark",
        "humaneval",
        "--limit",
        "6",
        "--arms",
        "norag",
        "--generator",
        "openai:stub",
        "--concurrency",
        str(concurrency),
        "--out",
        str(out),
        env_extra={"PKG_OPENAI_BASE_URL": server.url, "PKG_OPENAI_API_KEY": "k", "PKG_CACHE_DIR": str(out / "cache")},
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for record in records:
        record.pop("generation_seconds")
    return records


@pytest.mark.cli
@pytest.mark.sandbox
@pytest.mark.model  # the report names the embedder
def test_compare_with_concurrency_gives_the_same_records_in_the_same_order(tmp_path: Path) -> None:
    runs = {}
    for concurrency in (1, 3):
        stub = ChatServer(_echo, delay=DELAY).start()
        try:
            runs[concurrency] = _compare(tmp_path / f"c{concurrency}", stub, concurrency)
        finally:
            stub.stop()
        assert stub.most_in_flight == concurrency and len(stub.requests) == 6
    assert [r["task_id"] for r in runs[3]] == [f"HumanEval/{n}" for n in range(6)]
    assert runs[3] == runs[1]


@pytest.mark.cli
@pytest.mark.llm
def test_llama_refuses_more_than_one_request_at_a_time(tmp_path: Path) -> None:
    done = run_cli(
        "compare",
        "--benchmark",
        "humaneval",
        "--limit",
        "1",
        "--arms",
        "norag",
        "--generator",
        "llama:smollm2-135m",
        "--concurrency",
        "2",
        "--out",
        str(tmp_path / "out"),
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "pkg: llama:smollm2-135m answers one request at a time; concurrency 2 is for openai: servers"
    ]
