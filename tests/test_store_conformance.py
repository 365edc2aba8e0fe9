"""Both stores behave the same through GraphStore: one real corpus, the real model, a real Neo4j."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from ingest.graph_builder import qualified_names
from ingest.parse import BuildReport, parse_corpus
from pkg.embedders import CachedEmbedder, unit_rows
from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder
from pkg.errors import EmbedderMismatchError, StoreUnavailableError
from pkg.graph import EMBEDDED_LABELS, Label, Node
from pkg.indexing import embed_texts, embedded_texts, search_text, with_vectors
from pkg.schema import TEXT_LABELS, record_of
from pkg.stores import GraphStore, open_store
from pkg.stores.base import EmbedderInfo, GraphCounts
from pkg.stores.embedded import EmbeddedStore
from pkg.stores.neo4j_store import Neo4jStore
from retrieval.lexical import refresh_indexes
from retrieval.search import DEFAULT_MODE, retrieve
from tests.conftest import CORPUS_NODES, CORPUS_RELATIONSHIPS, FIXTURES, STDLIB_SLICE, STORE_KINDS, run_cli
from tests.helpers import build
from tests.neo4j_server import free_port, wipe
from tests.store_support import snapshot

KINDS = ("embedded", "neo4j")
#: The labels a code corpus fills; JSON-PKG's PATHVALUE is checked on both stores in test_json_pkg.py.
CODE_LABELS = tuple(label for label in EMBEDDED_LABELS if label is not Label.PATHVALUE)
K = 10


@dataclass
class Corpus:
    """The standard-library slice built into both stores, with its embedded nodes."""

    stores: dict[str, GraphStore]
    reports: dict[str, BuildReport]
    nodes: list[Node]
    embedded_dir: Path
    neo4j_uri: str

    def reopen(self, kind: str) -> GraphStore:
        """A fresh connection to the same database."""
        return EmbeddedStore(self.embedded_dir) if kind == "embedded" else Neo4jStore(self.neo4j_uri)


@pytest.fixture(scope="module")
def corpus(
    neo4j_uri: str, module_embedder: CachedEmbedder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Corpus]:
    wipe(neo4j_uri)
    embedded_dir = tmp_path_factory.mktemp("embedded")
    stores: dict[str, GraphStore] = {
        "embedded": EmbeddedStore(embedded_dir, create=True),
        "neo4j": Neo4jStore(neo4j_uri),
    }
    try:
        reports = {kind: build(STDLIB_SLICE, store, module_embedder) for kind, store in stores.items()}
        units = parse_corpus(STDLIB_SLICE).units
        nodes = with_vectors(units, embed_texts(embedded_texts(units), module_embedder, lambda *_: None))
        yield Corpus(stores, reports, nodes, embedded_dir, neo4j_uri)
    finally:
        for store in stores.values():
            store.close()
        wipe(neo4j_uri)


@pytest.fixture(scope="module")
def text_queries(module_embedder: CachedEmbedder) -> list[tuple[str, np.ndarray]]:
    """Real text queries: the first docstring line and the spelled-out name of each function."""
    texts: dict[str, None] = {}
    for path in sorted(p for root in STDLIB_SLICE for p in ([root] if root.is_file() else root.rglob("*.py"))):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                texts[node.name.strip("_").replace("_", " ")] = None
                doc = ast.get_docstring(node)
                if doc:
                    texts[doc.strip().splitlines()[0]] = None
    selected = [t for t in texts if t]
    assert len(selected) >= 50
    return [(text, module_embedder.embed_query(text)) for text in selected]


@pytest.mark.parametrize("kind", KINDS)
def test_build_writes_the_whole_corpus(corpus: Corpus, kind: str) -> None:
    report = corpus.reports[kind]
    counts = corpus.stores[kind].counts()
    assert sum(counts.nodes.values()) == report.nodes > 300
    assert sum(counts.relationships.values()) == report.edges + report.links > 300  # links: the linking pass
    assert counts.nodes["IMPL"] == counts.nodes["NAME"] == counts.relationships["HAS_IMPL"] == report.functions
    assert counts.nodes["BLOCK"] == report.blocks
    assert counts.nodes["ROW"] == report.files  # plain files: one row each
    assert counts.nodes["CHUNK"] == report.chunks == counts.relationships["NEXT"] + report.files


def test_both_stores_hold_the_same_graph(corpus: Corpus) -> None:
    embedded, neo4j = (corpus.stores[kind].counts() for kind in KINDS)
    assert embedded == neo4j
    assert list(neo4j.nodes) == ["BLOCK", "CHUNK", "CLASS", "FILE", "IMPL", "MODULE", "NAME", "ROW"]
    assert list(neo4j.relationships) == ["CALLS", "CONTAINS", "HAS_BLOCK", "HAS_IMPL", "IMPORTS", "NEXT", "PARENT"]
    same, other = (snapshot(corpus.stores[kind]) for kind in KINDS)
    assert {k: v[:2] for k, v in same.nodes.items()} == {k: v[:2] for k, v in other.nodes.items()}
    assert same.edges == other.edges and same.sources == other.sources
    assert all(same.nodes[k][2] == pytest.approx(v[2], abs=1e-5) for k, v in other.nodes.items())


@pytest.mark.parametrize("kind", KINDS)
def test_rebuild_is_idempotent(corpus: Corpus, module_embedder: CachedEmbedder, kind: str) -> None:
    store = corpus.stores[kind]
    before = snapshot(store)
    report = build(STDLIB_SLICE, store, module_embedder)
    assert (report.files, report.nodes, report.edges, report.texts_embedded) == (0, 0, 0, 0)
    assert snapshot(store) == before  # nodes, properties, vectors, edges and sources untouched


def test_the_fixture_gives_each_node_its_own_texts_vector(corpus: Corpus, minilm: SentenceTransformerEmbedder) -> None:
    """The expected nodes pair text and vector as an uncached model does, checked on a sample."""
    sample = [n for n in corpus.nodes if n.label in EMBEDDED_LABELS][::13]
    names = qualified_names(parse_corpus(STDLIB_SLICE).units)
    fresh = minilm.embed_documents([search_text(n, names) for n in sample])
    assert len(sample) > 20
    for node, vector in zip(sample, fresh, strict=True):
        np.testing.assert_allclose(node.vector, vector, atol=1e-4)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("label", CODE_LABELS)
def test_a_stored_vector_finds_its_own_node(corpus: Corpus, kind: str, label: Label) -> None:
    of_label = [n for n in corpus.nodes if n.label is label]
    # Distinct texts can have (nearly) the same vector — the tokenizer ignores whitespace, so
    # '"""\n' and '"""\n\n' do — and such ties may be broken differently by the two stores:
    # only nodes whose vector has no near twin are asked for.
    matrix = np.stack([n.vector for n in of_label])
    similarity = matrix @ matrix.T
    np.fill_diagonal(similarity, -1.0)
    distinct = [n for n, best in zip(of_label, similarity.max(axis=1), strict=True) if best < 0.999]
    unique = sorted(distinct, key=lambda n: n.id)
    assert len(unique) >= min(10, len(of_label)) >= 5
    for node in unique[:10]:
        assert node.vector is not None
        hit = corpus.stores[kind].search(label, node.vector, 1)[0]
        assert hit.id == node.id
        assert hit.score == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("label", CODE_LABELS)
def test_hnsw_top_k_recall_against_exact_search(
    corpus: Corpus, text_queries: list[tuple[str, np.ndarray]], label: Label
) -> None:
    """Recall@10 >= 0.95; a hit tied in score with the exact 10th counts as found."""
    found = 0
    k = min(K, corpus.stores["embedded"].counts().nodes[label.value])
    for _, vector in text_queries:
        exact = corpus.stores["embedded"].search(label, vector, k)
        exact_ids = {h.id for h in exact}
        approx = corpus.stores["neo4j"].search(label, vector, k)
        assert len(approx) == len(exact) == k
        assert all(a.score >= b.score for a, b in pairwise(approx))
        found += sum(1 for h in approx if h.id in exact_ids or h.score >= exact[-1].score - 1e-6)
        exact_scores = {h.id: h.score for h in exact}
        for hit in approx:
            if hit.id in exact_scores:
                assert hit.score == pytest.approx(exact_scores[hit.id], abs=1e-5)
    assert found / (k * len(text_queries)) >= 0.95


@pytest.mark.parametrize("kind", KINDS)
def test_nodes_read_back_as_the_records_built(corpus: Corpus, kind: str) -> None:
    """Every node, of every label, comes back as the typed record the ingesters built."""
    expected = [record_of(n) for n in reversed(corpus.nodes)]
    assert {type(r).__name__ for r in expected} == {
        "NameNode",
        "ImplNode",
        "BlockNode",
        "RowNode",
        "ChunkNode",
        "FileNode",
        "ClassNode",
        "ModuleNode",
    }
    found = corpus.stores[kind].nodes([*(r.id for r in expected), "no-such-id"])
    assert found == expected


@pytest.mark.parametrize("kind", KINDS)
def test_texts_are_those_of_the_text_labels(corpus: Corpus, kind: str) -> None:
    store = corpus.stores[kind]
    for label in TEXT_LABELS:
        expected = sorted((n.id, n.props["text"]) for n in corpus.nodes if n.label is label)
        assert store.texts(label) == expected
    with pytest.raises(ValueError, match="NAME nodes have no text"):
        store.texts(Label.NAME)


def test_contexts_are_identical(corpus: Corpus) -> None:
    code_ids = [n.id for n in corpus.nodes if n.label in (Label.IMPL, Label.BLOCK)]
    name_id = next(n.id for n in corpus.nodes if n.label is Label.NAME)
    ids = [*reversed(code_ids), "no-such-id", name_id, code_ids[0]]
    embedded, neo4j = (corpus.stores[kind].contexts(ids) for kind in KINDS)
    assert [c.id for c in neo4j] == [*reversed(code_ids), code_ids[0]]
    assert neo4j == embedded
    assert any(c.children for c in neo4j) and any(c.function.row is None for c in neo4j)


def test_impl_ids_follow_has_impl(corpus: Corpus) -> None:
    units = parse_corpus(STDLIB_SLICE).units
    has_impl = {e.src: e.dst for unit in units for e in unit.edges if e.type.value == "HAS_IMPL"}
    asked = [*sorted(has_impl)[:40], "no-such-id"]
    embedded, neo4j = (corpus.stores[kind].impl_ids(asked) for kind in KINDS)
    assert embedded == neo4j == {name_id: has_impl[name_id] for name_id in asked[:40]}


def test_function_names_follow_has_impl_back_to_the_name(corpus: Corpus) -> None:
    units = parse_corpus(STDLIB_SLICE).units
    names = {n.id: n.props["name"] for unit in units for n in unit.nodes if n.label is Label.NAME}
    impl_of = {e.src: e.dst for unit in units for e in unit.edges if e.type.value == "HAS_IMPL"}
    expected = {impl_of[name_id]: name for name_id, name in names.items() if name_id in impl_of}
    asked = [*sorted(expected)[:40], "no-such-id", next(iter(names))]  # a NAME id is no IMPL
    embedded, neo4j = (corpus.stores[kind].function_names(asked) for kind in KINDS)
    assert embedded == neo4j == {impl_id: expected[impl_id] for impl_id in asked[:40]}
    assert any("." in name for name in embedded.values())  # methods by their qualified names


@pytest.mark.parametrize("label", [Label.IMPL, Label.BLOCK])
def test_nearest_contexts_are_search_then_contexts(
    corpus: Corpus, text_queries: list[tuple[str, np.ndarray]], label: Label
) -> None:
    """Neo4j answers in one statement what the embedded store answers in two calls; the two agree
    where their searches do."""
    compared = 0
    for _, vector in text_queries[:20]:
        per_kind = {}
        for kind in KINDS:
            store = corpus.stores[kind]
            found = store.nearest_contexts(label, vector, 3)
            hits = store.search(label, vector, 3)
            assert [(c.id, pytest.approx(s, abs=1e-5)) for c, s in found] == [(h.id, h.score) for h in hits]
            assert [c for c, _ in found] == store.contexts([h.id for h in hits])
            per_kind[kind] = [c for c, _ in found]
        if [c.id for c in per_kind["embedded"]] == [c.id for c in per_kind["neo4j"]]:
            assert per_kind["embedded"] == per_kind["neo4j"]
            compared += 1
    assert compared >= 15
    with pytest.raises(ValueError, match="no code context"):
        corpus.stores["neo4j"].nearest_contexts(Label.ROW, text_queries[0][1], 1)


@pytest.mark.parametrize("mode", ["func", "block"])
def test_retrieval_and_pruning_agree(
    corpus: Corpus, module_embedder: CachedEmbedder, text_queries: list[tuple[str, np.ndarray]], mode: str
) -> None:
    pruned = 0
    for text, _ in text_queries[:15]:
        embedded, neo4j = (retrieve(corpus.stores[kind], module_embedder, text, mode, k=1) for kind in KINDS)
        (e,), (n,) = embedded.results, neo4j.results
        assert (n.id, n.name, n.path, n.lines, n.text, n.pruned_text) == (
            e.id,
            e.name,
            e.path,
            e.lines,
            e.text,
            e.pruned_text,
        )
        assert n.score == pytest.approx(e.score, abs=1e-5)
        assert neo4j.prompt == embedded.prompt
        pruned += n.pruned_text != n.text
    assert pruned > 0  # pruning actually happened on some of them


@pytest.mark.parametrize("kind", KINDS)
def test_a_fresh_connection_sees_the_embedder_and_refuses_another(corpus: Corpus, kind: str) -> None:
    expected = corpus.stores["embedded"].embedder_info()
    assert expected is not None and expected.dim == 384
    with corpus.reopen(kind) as store:
        assert store.embedder_info() == expected
        store.check_embedder(expected, record=True)
        with pytest.raises(EmbedderMismatchError, match=f"built with {expected.name}"):
            store.check_embedder(EmbedderInfo("voyage:voyage-code-3", 1024), record=True)
        assert store.embedder_info() == expected


# The tests below wipe the Neo4j database: they stay after every test of the `corpus` fixture.


def test_an_empty_neo4j_database_opens(empty_neo4j: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NEO4J_URI", empty_neo4j)
    with open_store("neo4j", tmp_path / "ignored") as store:
        assert store.embedder_info() is None
        assert store.counts() == GraphCounts({}, {})
        assert store.search(Label.IMPL, np.ones(4, dtype=np.float32) / 2, 3) == []
        assert store.contexts(["nothing"]) == []
    assert not (tmp_path / "ignored").exists()


def test_vector_indexes_follow_the_dimension_of_the_vectors(empty_neo4j: str) -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(300, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    nodes = [
        Node(f"b{i}", Label.BLOCK, {"text": f"x = {i}", "start_line": 1, "end_line": 1}, v)
        for i, v in enumerate(vectors)
    ]
    with Neo4jStore(empty_neo4j) as store:
        store.write(nodes, [])  # no embedder recorded: the indexes take the vectors' dimension
        store.write(nodes, [])
        assert store.counts() == GraphCounts({"BLOCK": 300}, {})
        for i in range(0, 300, 30):
            hit = store.search(Label.BLOCK, vectors[i], 1)[0]
            assert hit.id == f"b{i}" and hit.score == pytest.approx(1.0, abs=1e-5)
        exact = np.argsort(-(vectors @ vectors[7]), kind="stable")[:10]
        assert [h.id for h in store.search(Label.BLOCK, vectors[7], 10)] == [f"b{i}" for i in exact]


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_re_embedding_replaces_the_vectors_and_then_the_embedder(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    def opened(create: bool = False) -> GraphStore:
        return (
            EmbeddedStore(tmp_path, create)
            if kind == "embedded"
            else Neo4jStore(request.getfixturevalue("empty_neo4j"))
        )

    rng = np.random.default_rng(1)
    old, new = (unit_rows(rng.normal(size=(40, 8))) for _ in range(2))
    nodes = [
        Node(f"b{i}", Label.BLOCK, {"text": f"x = {i}", "start_line": 1, "end_line": 1}, v) for i, v in enumerate(old)
    ]
    with opened(create=True) as store:
        store.check_embedder(EmbedderInfo("st:old", 8), record=True)
        store.write(nodes, [])
        store.set_vectors(Label.BLOCK, [(f"b{i}", v) for i, v in enumerate(new)] + [("unknown", new[0])])
        store.set_vectors(Label.IMPL, [("b0", old[0])])  # another label's node keeps its vector
        for i in range(0, 40, 7):
            hit = store.search(Label.BLOCK, new[i], 1)[0]
            assert hit.id == f"b{i}" and hit.score == pytest.approx(1.0, abs=1e-5)
        assert store.embedder_info() == EmbedderInfo("st:old", 8)  # until the caller records the new one
        store.replace_embedder(EmbedderInfo("tuned:abc", 8))
        with pytest.raises(EmbedderMismatchError, match="8-dimensional vectors; st:wide makes 16"):
            store.replace_embedder(EmbedderInfo("st:wide", 16))
        assert store.embedder_info() == EmbedderInfo("tuned:abc", 8)
    with opened() as store:
        assert store.embedder_info() == EmbedderInfo("tuned:abc", 8)
        assert store.counts() == GraphCounts({"BLOCK": 40}, {})


def test_an_unreachable_neo4j_is_one_clear_error() -> None:
    uri = f"bolt://127.0.0.1:{free_port()}"
    with pytest.raises(StoreUnavailableError) as raised:
        Neo4jStore(uri)
    assert str(raised.value) == f"cannot reach Neo4j at {uri}: connection refused"


# -- the CLI against Neo4j --------------------------------------------------------------------
CLI_CORPUS = FIXTURES / "corpus"


@pytest.mark.cli
def test_cli_build_query_stats_on_neo4j(empty_neo4j: str, module_embedder: CachedEmbedder, tmp_path: Path) -> None:
    env = {"NEO4J_URI": empty_neo4j, "PKG_CACHE_DIR": str(tmp_path / "cache")}
    empty = run_cli("stats", "--store", "neo4j", "--format", "json", env_extra=env)
    assert empty.returncode == 0, empty.stderr
    assert json.loads(empty.stdout) == {"nodes": {}, "relationships": {}, "embedder": None, "dims": None}

    at = ("--store", "neo4j", "--db", str(tmp_path / "neo4j-db"))  # the BM25 indexes' folder
    done = run_cli("build", str(CLI_CORPUS), *at, "--format", "json", env_extra=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["files"], report["rows"], report["functions"], report["blocks"]) == (2, 2, 7, 10)

    stats = run_cli("stats", "--store", "neo4j", "--format", "json", env_extra=env)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout) == {
        "nodes": CORPUS_NODES,
        "relationships": CORPUS_RELATIONSHIPS,
        "embedder": "st:all-MiniLM-L6-v2",
        "dims": 384,
    }

    question = "check if an integer is a prime number"
    done = run_cli("query", question, *at, "-k", "2", "--format", "json", env_extra=env)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    with EmbeddedStore(tmp_path / "db", create=True) as embedded:
        build([CLI_CORPUS], embedded, module_embedder)
        refresh_indexes(embedded, tmp_path / "db")
        expected = retrieve(embedded, module_embedder, question, DEFAULT_MODE, k=2, db_dir=tmp_path / "db")
    assert answer["results"][0]["name"] == "is_prime" and answer["results"][0]["row"] is not None
    same = ("id", "kind", "name", "path", "row", "text", "pruned_text")
    assert [{key: r[key] for key in same} | {"lines": tuple(r["lines"])} for r in answer["results"]] == [
        {key: getattr(r, key) for key in same} | {"lines": r.lines} for r in expected.results
    ]
    assert [r["score"] for r in answer["results"]] == pytest.approx([r.score for r in expected.results], abs=1e-5)
    assert answer["prompt"] == expected.prompt


@pytest.mark.cli
def test_cli_reports_an_unreachable_neo4j_in_one_line(tmp_path: Path) -> None:
    uri = f"bolt://127.0.0.1:{free_port()}"
    done = run_cli("stats", "--store", "neo4j", env_extra={"NEO4J_URI": uri, "PKG_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 1
    assert done.stderr == f"pkg: cannot reach Neo4j at {uri}: connection refused\n"
