"""The OpenAI-compatible embedder against a real local server speaking the `/v1/embeddings` wire
format (tests/embedding_server.py): batching, order under concurrency, retries, errors, the key,
and a whole build and query through KnowledgeBase."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pkg import KnowledgeBase
from pkg.embedders import SPEC_HELP, make_embedder
from pkg.embedders.openai_compat import OpenAICompatEmbedder
from pkg.errors import ConfigError, EmbedderError
from tests.conftest import FIXTURES
from tests.embedding_server import DIM, EmbeddingServer, hashed_vector

TEXTS = [f"def f{i}(x): return x + {i}  # text {i}" for i in range(70)]


@pytest.fixture()
def server() -> Iterator[EmbeddingServer]:
    running = EmbeddingServer().start()
    yield running
    running.stop()


def stub_embedder(
    server: EmbeddingServer,
    batch_size: int | None = None,
    concurrency: int | None = None,
    api_key: str | None = None,
    retries: int = 5,
) -> OpenAICompatEmbedder:
    return OpenAICompatEmbedder(
        "stub-model", server.url, api_key, batch_size, concurrency, retries=retries, backoff=0.01
    )


def expected(texts: list[str]) -> np.ndarray:
    vectors = np.asarray([hashed_vector(t) for t in texts], dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_batches_are_sent_whole_and_answers_are_unit_float32(server: EmbeddingServer) -> None:
    embedder = stub_embedder(server, batch_size=32)
    vectors = embedder.embed_documents(TEXTS)
    assert sorted(server.batch_sizes) == [6, 32, 32]
    assert {r["model"] for r in server.requests} == {"stub-model"}
    assert vectors.dtype == np.float32 and vectors.shape == (70, DIM)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(vectors, expected(TEXTS), atol=1e-6)  # each row is its own text's vector
    assert embedder.dim == DIM and len(server.requests) == 3  # the dimension came with the first answer


def test_dimension_of_a_fresh_embedder_is_probed(server: EmbeddingServer) -> None:
    assert stub_embedder(server).dim == DIM and server.batch_sizes == [1]
    assert stub_embedder(server).embed_documents([]).shape == (0, DIM)


def test_input_order_is_kept_when_answers_come_back_out_of_order(server: EmbeddingServer) -> None:
    server.delay = lambda texts: 0.5 if TEXTS[0] in texts else 0.0
    vectors = stub_embedder(server, batch_size=10, concurrency=4).embed_documents(TEXTS)
    assert TEXTS[0] in server.finished[-1]  # the first batch was answered last
    np.testing.assert_allclose(vectors, expected(TEXTS), atol=1e-6)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_requests_overlap_up_to_the_concurrency(server: EmbeddingServer, concurrency: int) -> None:
    server.delay = lambda texts: 0.2
    stub_embedder(server, batch_size=2, concurrency=concurrency).embed_documents(TEXTS[:24])
    assert len(server.requests) == 12 and server.max_in_flight == concurrency


def test_transient_failures_are_retried(server: EmbeddingServer) -> None:
    server.failures = [503, 429, 500]
    vectors = stub_embedder(server).embed_documents(TEXTS[:3])
    assert len(server.requests) == 4
    np.testing.assert_allclose(vectors, expected(TEXTS[:3]), atol=1e-6)


def test_retries_are_bounded(server: EmbeddingServer) -> None:
    server.failures = [503] * 10
    with pytest.raises(EmbedderError, match=r"failed 3 attempts in a row, the last with HTTP 503: .*told to answer"):
        stub_embedder(server, retries=2).embed_documents(["x"])
    assert len(server.requests) == 3


@pytest.mark.parametrize("status", [400, 401, 404])
def test_a_refusal_is_not_retried(server: EmbeddingServer, status: int) -> None:
    server.failures = [status]
    with pytest.raises(EmbedderError, match=f"refused a batch of 2 texts with HTTP {status}: .*told to answer"):
        stub_embedder(server).embed_documents(["a", "b"])
    assert len(server.requests) == 1


def test_an_unreachable_server_is_an_embedder_error() -> None:
    with socket.socket() as probe:  # a port nothing listens on once the socket is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = OpenAICompatEmbedder("m", base_url=f"http://127.0.0.1:{port}/v1", retries=1, backoff=0.01)
    with pytest.raises(EmbedderError, match=f"127.0.0.1:{port}/v1/embeddings failed 2 attempts in a row.*refused"):
        embedder.embed_documents(["x"])


def test_the_key_is_sent_as_a_bearer_token(server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PKG_EMBED_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    stub_embedder(server).embed_documents(["x"])
    stub_embedder(server, api_key="sk-argument").embed_documents(["x"])
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    stub_embedder(server).embed_documents(["x"])
    monkeypatch.setenv("PKG_EMBED_API_KEY", "sk-pkg")
    stub_embedder(server).embed_documents(["x"])
    sent = [headers.get("Authorization") for headers in server.headers_seen]
    assert sent == [None, "Bearer sk-argument", "Bearer sk-openai", "Bearer sk-pkg"]


def test_the_spec_round_trips_and_settings_come_from_the_environment(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # PKG_EMBED_BASE_URL wins over it
    monkeypatch.setenv("PKG_EMBED_BASE_URL", server.url)
    monkeypatch.setenv("PKG_EMBED_BATCH_SIZE", "5")
    monkeypatch.setenv("PKG_EMBED_CONCURRENCY", "2")
    embedder = make_embedder("openai-embed:nomic-embed-text:latest", None)
    assert embedder.name == "openai-embed:nomic-embed-text:latest"
    assert make_embedder(embedder.name, None).name == embedder.name
    embedder.embed_documents(TEXTS[:12])
    assert sorted(server.batch_sizes) == [2, 5, 5] and server.max_in_flight <= 2
    assert {r["model"] for r in server.requests} == {"nomic-embed-text:latest"}
    assert "openai-embed:MODEL" in SPEC_HELP
    with pytest.raises(ConfigError, match="needs a model: openai-embed:MODEL"):
        make_embedder("openai-embed", None)
    monkeypatch.setenv("PKG_EMBED_CONCURRENCY", "many")
    with pytest.raises(ConfigError, match="PKG_EMBED_CONCURRENCY must be a positive whole number"):
        make_embedder("openai-embed:m", None)


def test_a_knowledge_base_builds_and_queries_through_the_server(
    server: EmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PKG_EMBED_BASE_URL", server.url)
    db, cache = tmp_path / "db", tmp_path / "cache"
    with KnowledgeBase(db, embedder="openai-embed:stub-model", cache_dir=cache) as kb:
        built = kb.build([FIXTURES / "corpus"])
        top = kb.query("fibonacci", mode="func", k=1).results
    assert built.report.texts_embedded > 0 and len(server.requests) > 0
    assert top[0].name.endswith("fibonacci")
    with KnowledgeBase(db, cache_dir=cache) as reopened:  # the database's embedder name is a spec
        info = reopened.stats().embedder
        assert info is not None and info.name == "openai-embed:stub-model"
        again = reopened.query("yield each line of the file at a path", mode="func", k=1).results
    assert again[0].name.endswith("read_lines")
    assert ["yield each line of the file at a path"] in [r["input"] for r in server.requests]
