"""JSON-PKG: JSON documents and tutorials as PATH/PATHVALUE DAGs, retrieved by leaf, on both stores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.json_graph import json_graph
from pkg.embedders import CachedEmbedder
from pkg.graph import Label, Rel
from pkg.stores.base import GraphStore
from retrieval.search import Options, retrieve
from tests.conftest import FIXTURES, STORE_KINDS
from tests.helpers import build, empty_store

DOCS = Path("/usr/share/doc/python3.11/html/_sources/tutorial")
CORPUS = [DOCS / "introduction.rst.txt", DOCS / "controlflow.rst.txt", FIXTURES / "json", FIXTURES / "tutorials"]


def test_a_document_becomes_paths_and_leaves() -> None:
    document = {
        "title": "Retry policy",
        "retries": {"max": 3, "backoff/seconds": [1, 2, 4]},
        "enabled": True,
        "owner": None,
    }
    graph = json_graph(document, "config.json")
    paths = sorted(n.props["path"] for n in graph.nodes if n.label is Label.PATH)
    leaves = {n.props["path"]: n for n in graph.nodes if n.label is Label.PATHVALUE}
    assert paths == ["", "retries", "retries/backoff~1seconds"]
    assert sorted(leaves) == [
        "enabled",
        "owner",
        "retries/backoff~1seconds/0",
        "retries/backoff~1seconds/1",
        "retries/backoff~1seconds/2",
        "retries/max",
        "title",
    ]
    assert leaves["retries/max"].props["text"] == "path = retries/max ; value = 3"
    assert leaves["enabled"].props["text"] == "path = enabled ; value = true"
    assert leaves["owner"].props["value"] == "null" and leaves["title"].props["value"] == "Retry policy"
    assert leaves["retries/backoff~1seconds/2"].props["titles"] == "Retry policy"
    ids = {n.props["path"]: n.id for n in graph.nodes}
    edges = {(e.src, e.dst) for e in graph.edges}
    assert all(e.type is Rel.JSON_CHILD for e in graph.edges) and len(edges) == len(graph.nodes) - 1
    assert (ids["retries"], ids["retries/max"]) in edges and (ids[""], ids["title"]) in edges
    assert [n.id for n in json_graph(document, "config.json").nodes] == [n.id for n in graph.nodes]


def test_empty_keys_keep_paths_and_ids_apart() -> None:
    graph = json_graph({"a": 1, "": {"a": 2, "": {"": 3}}}, "odd.json")
    paths = [(n.label.value, n.props["path"]) for n in graph.nodes]
    assert paths == [
        ("PATH", ""),
        ("PATHVALUE", "a"),
        ("PATH", ""),
        ("PATHVALUE", "/a"),
        ("PATH", "/"),
        ("PATHVALUE", "//"),
    ]
    assert len({n.id for n in graph.nodes}) == len(graph.nodes)
    assert all(e.src != e.dst for e in graph.edges) and len(graph.edges) == len(graph.nodes) - 1


@pytest.fixture(scope="module", params=STORE_KINDS)
def store(
    request: pytest.FixtureRequest, module_embedder: CachedEmbedder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GraphStore]:
    opened = empty_store(request.param, tmp_path_factory.mktemp("db"), request)
    build(CORPUS, opened, module_embedder, parts=("json",))
    yield opened
    opened.close()


def test_tutorial_leaves_are_retrieved(store: GraphStore, module_embedder: CachedEmbedder) -> None:
    counts = store.counts()
    assert counts.nodes["PATHVALUE"] > 500 and counts.relationships["JSON_CHILD"] == (
        counts.nodes["PATH"] + counts.nodes["PATHVALUE"] - 6  # one root for each of the 6 documents
    )
    top = retrieve(store, module_embedder, "the operator that returns the remainder of a division", "json", k=3)
    assert any("17 % 3" in r.text for r in top.results)
    assert all(r.kind == "PATHVALUE" and r.text.startswith("path = ") for r in top.results)
    loop = retrieve(store, module_embedder, "iterate over a sequence of numbers with range", "json", k=5)
    assert any(r.path.endswith("controlflow.rst.txt") and "range(" in r.text for r in loop.results)
    retry = retrieve(store, module_embedder, "path = retries/max ; value = 3", "json", k=1).results[0]
    assert (retry.name, retry.score) == ("retries/max", pytest.approx(1.0, abs=1e-4))
    assert retry.path.endswith("config.json")  # .json files are documents too


def test_titles_make_a_leaf_readable(store: GraphStore, module_embedder: CachedEmbedder) -> None:
    query = "the operator that returns the remainder of a division"
    plain = retrieve(store, module_embedder, query, "json", k=1).results[0]
    titled = retrieve(store, module_embedder, query, "json", k=1, options=Options(with_titles=True)).results[0]
    assert titled.id == plain.id and titled.pruned_text == f"[{_titles(titled.path, plain.name)}] {plain.text}"
    assert "Using Python as a Calculator > Numbers" in titled.pruned_text


def _titles(source: str, path: str) -> str:
    from ingest.tutorials import tutorial_to_json

    node = tutorial_to_json(Path(source))
    titles = [node["title"]]
    parts = path.split("/")
    for key in parts[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, dict) and node.get("title"):
            titles.append(node["title"])
    return " > ".join(titles)
