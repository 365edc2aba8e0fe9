"""Embedders on real components: the packaged MiniLM model, the cache on disk, Voyage against a
local HTTP server that speaks the API's wire format."""

from __future__ import annotations

import base64
import platform
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from pkg.embedders import CachedEmbedder, Embedder, EmbeddingCache, make_embedder
from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder, same_model_input
from pkg.embedders.voyage import VoyageEmbedder
from pkg.errors import ConfigError, EmbedderError
from pkg.graph import text_hash
from pkg.indexing import EMBED_BATCH, embed_texts
from pkg.progress import no_progress
from tests.http_stub import JsonHandler, StubServer

#: Three functions of unrelated jobs (sort, fetch a page, read a config): what the ranking tests search.
RANKED_DOCS = [
    "def sort_numbers(values):\n    return sorted(values)",
    "def fetch_page(url):\n    import urllib.request\n    return urllib.request.urlopen(url).read()",
    "def read_config(path):\n    import json\n    with open(path) as f:\n        return json.load(f)",
]


def test_minilm_loads_offline_and_gives_unit_vectors(minilm: SentenceTransformerEmbedder) -> None:
    vectors = minilm.embed_documents(["def add(a, b):\n    return a + b", "for x in items:\n    print(x)"])
    assert minilm.name == "st:all-MiniLM-L6-v2" and minilm.dim == 384
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_minilm_ranks_related_code_first(minilm: SentenceTransformerEmbedder) -> None:
    scores = minilm.embed_documents(RANKED_DOCS) @ minilm.embed_query("download a web page from a url")
    assert int(np.argmax(scores)) == 1
    scores = minilm.embed_documents(RANKED_DOCS) @ minilm.embed_query("sort a list of numbers in ascending order")
    assert int(np.argmax(scores)) == 0


#: A function far over MiniLM's 256-token window, and its pruning variant without its last branch.
_LONG_HEAD = "def weighted_sum(values, weights):\n    total = 0\n" + "".join(
    f"    total += values[{i}] * weights[{i}]\n" for i in range(60)
)
LATE_BRANCH_KEPT = _LONG_HEAD + "    if total < 0:\n        raise ValueError(total)\n    return total"
LATE_BRANCH_PRUNED = _LONG_HEAD + "    return total"


def test_texts_that_differ_past_the_models_window_are_embedded_once(
    minilm: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    late_branch_kept, late_branch_pruned = LATE_BRANCH_KEPT, LATE_BRANCH_PRUNED
    early_branch_pruned = "def weighted_sum(values, weights):\n    return 0"
    texts = [late_branch_kept, late_branch_pruned, early_branch_pruned]
    model = minilm._load()
    assert same_model_input(model, texts) == [0, 0, 2]

    encoded: list[str] = []
    encode = model.encode
    monkeypatch.setattr(model, "encode", lambda batch, **kw: encoded.extend(batch) or encode(batch, **kw))
    vectors = minilm.embed_documents(texts)
    assert encoded == [late_branch_kept, early_branch_pruned]
    np.testing.assert_array_equal(vectors[0], vectors[1])
    one_by_one = np.stack([encode([t], normalize_embeddings=True)[0] for t in texts])
    np.testing.assert_allclose(vectors, one_by_one, atol=1e-5)


def test_a_build_embeds_a_function_and_its_late_variant_once_across_batches(
    minilm: SentenceTransformerEmbedder,
) -> None:
    kept, pruned = LATE_BRANCH_KEPT, LATE_BRANCH_PRUNED
    others = [f"def f{i}(x):\n    return x + {i}" for i in range(EMBED_BATCH)]
    texts = [kept, *others, pruned]  # a batch apart in the order given
    before = minilm.inputs_encoded
    vectors = embed_texts(texts, minilm, no_progress)
    assert minilm.inputs_encoded - before == len(texts) - 1
    np.testing.assert_array_equal(vectors[kept], vectors[pruned])


def test_texts_embedded_for_the_cache_only_leave_no_vectors_behind(minilm: SentenceTransformerEmbedder) -> None:
    kept = [f"def a_kept{i}(x):\n    return x * {i}" for i in range(3)]  # in the first batch, sorted
    texts = kept + [f"def cache_only{i}(x):\n    return x - {i}" for i in range(EMBED_BATCH)]
    vectors = embed_texts(texts, minilm, no_progress, keep=set(kept))
    assert set(vectors) == set(kept)
    everything = embed_texts(texts, minilm, no_progress)
    for text in kept:
        np.testing.assert_allclose(vectors[text], everything[text], atol=1e-6)
    # the kept rows are copied out of their batch: no array of the cache-only texts' vectors stays alive
    held = {id(v.base): v.base for v in vectors.values() if v.base is not None}
    assert sum(base.nbytes for base in held.values()) <= len(kept) * minilm.dim * 4


def _resident_bytes() -> int:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's heap and Linux's /proc")
def test_a_build_gives_the_models_freed_memory_back(minilm: SentenceTransformerEmbedder) -> None:
    # functions of 5 to 94 lines: PyTorch frees each batch's activations while the kept vectors stay;
    # measured here, RSS grew 145-260 MB without handing the freed heap back and 10-29 MB with it
    lines = [5 + i * 37 % 90 for i in range(512)]
    texts = [f"def f{i}(x):\n" + "".join(f"    x = x * {j} + {i}\n" for j in range(n)) for i, n in enumerate(lines)]
    minilm.embed_documents(["def warm(): pass"])
    before = _resident_bytes()
    vectors = embed_texts(texts, minilm, no_progress)
    assert len(vectors) == len(texts)
    assert _resident_bytes() - before < 80_000_000


class CountingEmbedder(Embedder):
    """A real embedder that counts the texts it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.calls = inner, inner.name, 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += len(texts)
        return self.inner.embed_documents(texts)


def test_cache_never_embeds_the_same_text_twice(minilm: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    counting = CountingEmbedder(minilm)
    path = tmp_path / "embeddings.sqlite"
    first = CachedEmbedder(counting, EmbeddingCache(path))
    texts = ["def a(): pass", "def b(): pass", "def a(): pass"]
    v1 = first.embed_documents(texts)
    assert counting.calls == 2  # the duplicate is embedded once
    second = CachedEmbedder(counting, EmbeddingCache(path))  # a new process would reopen the file like this
    v2 = second.embed_documents(texts + ["def c(): pass"])
    assert counting.calls == 3 and second.hits == 3 and second.misses == 1
    np.testing.assert_array_equal(v1, v2[:3])
    assert second.dim == 384


def test_cache_keys_by_model(minilm: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    CachedEmbedder(minilm, cache).embed_documents(["x = 1"])
    digest = text_hash("x = 1")
    assert list(cache.get_many(minilm.name, "document", [digest])) == [digest]
    assert cache.get_many("st:other-model", "document", [digest]) == {}  # another model's vector is never reused
    assert cache.get_many(minilm.name, "query", [digest]) == {}
    assert cache.dim("st:other-model") is None and cache.dim(minilm.name) == 384


def test_a_cache_sqlite_refuses_is_an_embedder_error(minilm: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite"
    cache = EmbeddingCache(path)
    cache._db.execute("PRAGMA query_only = 1")  # SQLite now refuses writes, as on a read-only or full disk
    with pytest.raises(EmbedderError, match=f"cannot write to the embedding cache at {path}: attempt to write"):
        CachedEmbedder(minilm, cache).embed_documents(["x = 1"])
    cache.close()
    with pytest.raises(EmbedderError, match=f"cannot read the embedding cache at {path}"):
        cache.get_many(minilm.name, "document", ["irrelevant"])


def test_unknown_embedder_spec_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown embedder"):
        make_embedder("word2vec", tmp_path)
    with pytest.raises(ConfigError, match="needs a model"):
        make_embedder("st", tmp_path)


@pytest.mark.model  # imports sentence-transformers to try the path
def test_missing_local_model_is_an_embedder_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="cannot load"):
        SentenceTransformerEmbedder(str(tmp_path / "no-such-model")).embed_documents(["x"])


# -- Voyage against a local stub of its HTTP API ---------------------------------------------------


class VoyageStub(JsonHandler):
    """Answers POST /v1/embeddings like the Voyage API (base64 float32 by default)."""

    requests: list[dict] = []
    status = 200

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        body = self.read_json()
        VoyageStub.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        if VoyageStub.status != 200:
            self.reply_json(VoyageStub.status, {"detail": "Provided API key is invalid."})
            return
        data = []
        for index, text in enumerate(body["input"]):
            vector = np.zeros(1024, dtype=np.float32)
            vector[len(text) % 1024] = 3.0  # deterministic and distinguishable
            vector[1023] = 4.0 if body["input_type"] == "query" else 0.0
            encoded = (
                base64.b64encode(vector.tobytes()).decode()
                if body.get("encoding_format") == "base64"
                else vector.tolist()
            )
            data.append({"object": "embedding", "embedding": encoded, "index": index})
        self.reply_json(200, {"object": "list", "data": data, "model": body["model"], "usage": {"total_tokens": 7}})


@pytest.fixture()
def voyage_url() -> Iterator[str]:
    VoyageStub.requests, VoyageStub.status = [], 200
    with StubServer(VoyageStub) as server:
        yield server.url


def test_voyage_client_speaks_the_api(voyage_url: str) -> None:
    embedder = VoyageEmbedder(api_key="pa-test-key", base_url=voyage_url, max_retries=0)
    texts = [f"def f{i}(): return {'x' * i}" for i in range(70)]  # more than one request's worth
    vectors = embedder.embed_documents(texts)
    query = embedder.embed_query("find f")
    assert embedder.name == "voyage:voyage-code-3" and embedder.dim == 1024
    assert vectors.shape == (70, 1024) and query.shape == (1024,)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert int(np.argmax(vectors[5])) == len(texts[5]) % 1024
    sent = VoyageStub.requests
    assert [len(r["input"]) for r in sent] == [64, 6, 1]
    assert {r["path"] for r in sent} == {"/v1/embeddings"}
    assert {r["auth"] for r in sent} == {"Bearer pa-test-key"}
    assert [r["input_type"] for r in sent] == ["document", "document", "query"]
    assert {r["model"] for r in sent} == {"voyage-code-3"}


def test_voyage_errors_are_embedder_errors(voyage_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    VoyageStub.status = 401
    with pytest.raises(EmbedderError, match="Voyage request failed"):
        VoyageEmbedder(api_key="pa-bad", base_url=voyage_url, max_retries=0).embed_documents(["x"])
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    with pytest.raises(EmbedderError, match="VOYAGE_API_KEY"):
        VoyageEmbedder()


def test_voyage_behind_the_cache_keeps_queries_apart(
    voyage_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test-key")
    monkeypatch.setenv("VOYAGE_BASE_URL", voyage_url)
    embedder = make_embedder("voyage", tmp_path)
    document = embedder.embed_documents(["same text"])[0]
    query = embedder.embed_query("same text")
    assert not np.allclose(document, query)  # query vectors are cached under their own input type
    embedder.embed_query("same text")
    assert len(VoyageStub.requests) == 2


def test_any_sentence_transformers_model_by_path(minilm: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    from pkg.embedders.sentence_transformer import packaged_minilm_path

    by_path = make_embedder(f"st:{packaged_minilm_path()}", None)
    assert by_path.name == f"st:{packaged_minilm_path()}" and by_path.dim == 384
    np.testing.assert_allclose(by_path.embed_documents(["x = 1"]), minilm.embed_documents(["x = 1"]), atol=1e-5)


def test_the_fit_teacher_reads_a_texts_first_tokens_and_keeps_the_models_name(
    minilm: SentenceTransformerEmbedder, tmp_path: Path
) -> None:
    from pkg.embedders import fit_teacher

    teacher = fit_teacher("minilm", tmp_path, 16)
    assert teacher.name == minilm.name and teacher.max_tokens == 16 and minilm.max_tokens is None
    words = " ".join(f"word{i}" for i in range(60))  # far past 16 tokens, within the model's 256
    head, tail_changed = teacher.embed_documents([words, words + " and a different ending"])
    np.testing.assert_array_equal(head, tail_changed)  # the ending lies past what it reads
    whole, whole_changed = minilm.embed_documents([words, words + " and a different ending"])
    assert float(whole @ whole_changed) < 0.999 and float(whole @ head) < 0.999
    np.testing.assert_allclose(teacher.embed_query(words), head, atol=1e-5)  # queries read as far
    with pytest.raises(EmbedderError, match="fitted to a local sentence-transformers model"):
        fit_teacher("static", tmp_path, 16)
    with pytest.raises(ConfigError, match="unknown embedder"):
        fit_teacher("word2vec", tmp_path, 16)


def test_a_fitted_tables_key_follows_how_far_the_teacher_read() -> None:
    from pkg.embedders.static import fitted_key

    texts = ["def add(a, b):\n    return a + b", "Add two numbers."]
    assert fitted_key("minilm", 128, texts) == fitted_key("minilm", 128, list(texts))
    assert len({fitted_key("minilm", reads, texts) for reads in (None, 128, 256)}) == 3


# -- the fast profile: static vectors distilled from the packaged MiniLM -------------------------------


@pytest.mark.model
def test_static_table_is_distilled_once_into_the_cache_folder(static_folder: Path) -> None:
    from pkg.embedders.static import RECIPE, StaticEmbedder

    table = static_folder / "models" / f"{RECIPE}.npy"
    written = table.stat().st_mtime_ns
    embedder = make_embedder("static", static_folder)
    assert isinstance(embedder, StaticEmbedder)  # no cache in front: it would cost more than it saves
    assert embedder.name == "static" and embedder.dim == 384 and not (static_folder / "embeddings.sqlite").exists()
    again = StaticEmbedder(static_folder / "models").embed_documents(["def add(a, b):\n    return a + b"])
    assert table.stat().st_mtime_ns == written and not list(table.parent.glob("*.partial.npy"))
    np.testing.assert_array_equal(again, embedder.embed_documents(["def add(a, b):\n    return a + b"]))
    assert not embedder.keeps_vectors and make_embedder("minilm", static_folder / "elsewhere").keeps_vectors


@pytest.mark.model
def test_static_vectors_are_unit_and_rank_related_code_first(static_folder: Path) -> None:
    from pkg.embedders.static import StaticEmbedder

    static = StaticEmbedder(static_folder / "models")
    vectors = static.embed_documents([*RANKED_DOCS, ""])
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, rtol=1e-5)
    assert not vectors[3].any()  # no tokens, no direction
    for query, expected in (("download a web page from a url", 1), ("load the json config file at a path", 2)):
        assert int(np.argmax(vectors[:3] @ static.embed_query(query))) == expected


@pytest.mark.model
def test_a_database_built_with_the_static_profile_queries_with_it(static_folder: Path, tmp_path: Path) -> None:
    from pkg.knowledge_base import KnowledgeBase

    source = tmp_path / "shapes.py"
    source.write_text(
        'def circle_area(radius):\n    """Area of a circle."""\n    return 3.14159 * radius ** 2\n\n\n'
        'def parse_header(line):\n    """Split an HTTP header line into name and value."""\n'
        '    name, _, value = line.partition(":")\n    return name.strip(), value.strip()\n'
    )
    with KnowledgeBase(tmp_path / "db", embedder="static", cache_dir=static_folder) as kb:
        report = kb.build([source]).report
        # nothing to keep prepared pruning texts in: they are embedded when a query prunes
        assert report.pruning_variants == 0 and report.texts_embedded > 0
    with KnowledgeBase(tmp_path / "db", cache_dir=static_folder) as kb:
        assert kb.stats().embedder is not None and kb.stats().embedder.name == "static"
        assert kb.query("split a header line into its name and value", "func", 1).results[0].name == "parse_header"
