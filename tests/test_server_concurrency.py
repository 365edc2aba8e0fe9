"""`pkg serve` answering many calls at once: the read/write lock, the embedder that batches the queries
of concurrent calls, the embedded store read from many threads, and the real server with the MCP SDK's
client: eight clients answered as one would be, and queries answered while an `index` runs."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pkg.embedders import CachedEmbedder, EmbeddingCache
from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder
from pkg.graph import Label
from pkg.server import BatchedEmbedder, ReadWriteLock
from pkg.stores.embedded import EmbeddedStore
from tests.conftest import FIXTURES
from tests.helpers import build
from tests.test_server import NEW_FUNCTION, Built, HttpServer, _build, _client, _ok, serving_http

TEXTS = [
    "area of a circle from its radius",
    "the n-th fibonacci number",
    "yield the non-empty lines of a text file",
    "check whether a number is prime",
]


# -- the read/write lock ------------------------------------------------------------------------------------
def test_readers_share_the_lock_and_a_writer_has_it_alone() -> None:
    lock = ReadWriteLock()
    events: list[str] = []
    inside = threading.Barrier(3)  # two readers and this thread: both readers hold the lock at once
    release = threading.Event()  # ... until a writer and a later reader queue behind them

    def read(name: str) -> None:
        with lock.reading():
            events.append(f"{name} in")
            inside.wait(timeout=10)
            release.wait(timeout=60)
            events.append(f"{name} out")

    def write() -> None:
        with lock.writing():
            events.append("writer in")
            time.sleep(0.1)
            events.append("writer out")

    readers = [threading.Thread(target=read, args=(name,)) for name in ("a", "b")]
    for thread in readers:
        thread.start()
    inside.wait(timeout=10)
    writer = threading.Thread(target=write)
    writer.start()
    while not lock._writers_waiting:  # polled: a fixed sleep was too short on a busy host
        time.sleep(0.001)
    late = threading.Thread(target=lambda: read_alone(lock, events))  # a new reader waits behind the writer
    late.start()
    release.set()
    for thread in [*readers, writer, late]:
        thread.join(timeout=10)
    assert events[4:] == ["writer in", "writer out", "late in"]
    assert sorted(events[:4]) == ["a in", "a out", "b in", "b out"]


def read_alone(lock: ReadWriteLock, events: list[str]) -> None:
    with lock.reading():
        events.append("late in")


def test_a_failing_read_releases_the_lock() -> None:
    lock = ReadWriteLock()
    with pytest.raises(KeyError), lock.reading():
        raise KeyError("x")
    done = threading.Event()

    def write() -> None:
        with lock.writing():
            done.set()

    threading.Thread(target=write).start()
    assert done.wait(timeout=5)


# -- the embedder that batches concurrent calls -------------------------------------------------------------
class CountingModel(SentenceTransformerEmbedder):
    """The real default model, counting the calls and texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return super().embed_documents(texts)


@pytest.mark.model
def test_concurrent_queries_share_forward_passes_and_get_their_own_vectors(tmp_path: Path) -> None:
    model = CountingModel()
    alone = {text: model.embed_documents([text])[0] for text in TEXTS}
    batched = BatchedEmbedder(lambda: CachedEmbedder(model, EmbeddingCache(tmp_path / "embeddings.sqlite")))
    try:
        model.calls.clear()
        asked = TEXTS * 4
        with ThreadPoolExecutor(len(asked)) as pool:
            vectors = list(pool.map(batched.embed_query, asked))
        for text, vector in zip(asked, vectors, strict=True):
            assert np.allclose(vector, alone[text], atol=1e-5), text
        assert sum(model.calls) == len(TEXTS)  # each distinct text embedded once (the cache has the rest)
        documents = batched.embed_documents(["def f():\n    return 1\n", TEXTS[0]])
        assert documents.shape == (2, 384) and np.allclose(documents[1], alone[TEXTS[0]], atol=1e-5)
        assert batched.dim == 384 and batched.name == model.name
        assert batched.keeps_vectors  # a build through it prepares pruning variants, as through its cache
        assert batched.embed_documents([]).shape == (0, 384)
    finally:
        batched.close()


@pytest.mark.model
def test_an_embedding_failure_reaches_the_caller_and_the_embedder_goes_on(tmp_path: Path) -> None:
    batched = BatchedEmbedder(lambda: CachedEmbedder(CountingModel(), EmbeddingCache(tmp_path / "e.sqlite")))
    try:
        with pytest.raises(AttributeError):  # the cache hashes the text: None has no encode()
            batched.embed_documents([None])  # type: ignore[list-item]
        assert batched.embed_query(TEXTS[1]).shape == (384,)
    finally:
        batched.close()


# -- the embedded store read by many threads while another writes -------------------------------------------
@pytest.mark.model
def test_threads_read_the_embedded_store_beside_a_writer(module_embedder: CachedEmbedder, tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "db", create=True)
    try:
        build([FIXTURES / "corpus"], store, module_embedder)
        query = module_embedder.embed_query(TEXTS[0])
        expected = store.search(Label.IMPL, query, 3)
        with ThreadPoolExecutor(8) as pool:
            found = list(pool.map(lambda _: store.search(Label.IMPL, query, 3), range(32)))
            names = list(pool.map(lambda _: [c.function.name for c in store.contexts([expected[0].id])], range(32)))
        assert all(hits == expected for hits in found)
        assert names == [["Circle.area"]] * 32
        extra = tmp_path / "extra"
        extra.mkdir()
        (extra / "convert.py").write_text(NEW_FUNCTION)
        with EmbeddedStore(tmp_path / "db") as other:  # another connection commits, as another process would
            build([FIXTURES / "corpus", extra], other, module_embedder)
        celsius = module_embedder.embed_query("convert a temperature from celsius to fahrenheit")

        def top(_: int) -> str:
            return store.contexts([store.search(Label.IMPL, celsius, 1)[0].id])[0].function.name

        with ThreadPoolExecutor(4) as pool:
            assert set(pool.map(top, range(8))) == {"celsius_to_fahrenheit"}
        writer = threading.Thread(target=store.delete_sources, args=([str((extra / "convert.py").resolve())],))
        writer.start()  # a thread of this store commits: the other threads' searches see it too
        writer.join(timeout=60)
        with ThreadPoolExecutor(4) as pool:
            assert "celsius_to_fahrenheit" not in set(pool.map(top, range(8)))
    finally:
        store.close()


# -- the real server --------------------------------------------------------------------------------------------
@pytest.fixture()
def own_server(env: dict[str, str], tmp_path: Path) -> Iterator[HttpServer]:
    """`pkg serve --http` on a database of its own, which a test may change."""
    with serving_http(_build(tmp_path, env), "own-token") as server:
        yield server


def _answer(found: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(r["id"], r["name"], r["text"], r["score"], r["pruned"]) for r in found["results"]]


@pytest.mark.cli
def test_eight_clients_at_once_get_what_one_client_gets(own_server: HttpServer) -> None:
    """Func and block searches, pruned, each answered alike alone and with seven other clients asking."""
    calls = [{"text": text, "mode": mode, "k": 3} for text in TEXTS for mode in ("func", "block")]

    async def alone() -> list[list[tuple[Any, ...]]]:
        async with _client(own_server) as client:
            return [_answer(await _ok(client, "search", call)) for call in calls]

    async def one_of_eight(number: int) -> list[list[tuple[Any, ...]]]:
        async with _client(own_server) as client:
            mine = calls[number:] + calls[:number]  # every client asks in its own order
            answers = [_answer(await _ok(client, "search", call)) for call in mine]
            return answers[len(calls) - number :] + answers[: len(calls) - number]

    async def scenario() -> tuple[list[list[tuple[Any, ...]]], list[list[list[tuple[Any, ...]]]]]:
        expected = await alone()
        together = await asyncio.gather(*(one_of_eight(number) for number in range(8)))
        return expected, list(together)

    expected, together = asyncio.run(scenario())
    assert [answer[0][1] for answer in expected[::2]] == ["Circle.area", "fibonacci", "read_lines", "is_prime"]
    assert all(answers == expected for answers in together)


@pytest.mark.cli
def test_queries_are_answered_while_an_index_runs(own_server: HttpServer) -> None:
    built: Built = own_server.built
    (built.root / "corpus" / "convert.py").write_text(NEW_FUNCTION)

    async def scenario() -> tuple[dict[str, Any], list[str], dict[str, Any]]:
        async with _client(own_server) as indexer, _client(own_server) as asker:
            started = asyncio.Event()

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                started.set()

            index = asyncio.create_task(
                indexer.call_tool("index", {"paths": ["corpus"]}, progress_callback=on_progress)
            )
            await asyncio.wait_for(started.wait(), timeout=120)
            asked = [_ok(asker, "search", {"text": text, "k": 1}) for text in TEXTS]
            found = [answer["results"][0]["name"] for answer in await asyncio.gather(*asked)]
            report = await index
            assert not report.is_error, report
            after = await _ok(asker, "search", {"text": "convert a temperature from celsius to fahrenheit", "k": 1})
            return report.structured_content or {}, found, after

    report, found, after = asyncio.run(scenario())
    assert (report["files"], report["functions"]) == (1, 1)
    assert found == ["Circle.area", "fibonacci", "read_lines", "is_prime"]
    assert after["results"][0]["name"] == "celsius_to_fahrenheit"
