"""The build pipeline on real code: ids are stable, writes are self-contained, pruning is prepared."""

from __future__ import annotations

import ast
import gc
import os
import threading
import time
import weakref
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ingest.link import link_edges
from ingest.parse import ParsedCorpus, parse_corpus
from pkg import indexing
from pkg.collector import BUILD_GC_THRESHOLD
from pkg.embedders import CachedEmbedder
from pkg.errors import CorpusError
from pkg.forked import CAN_FORK
from pkg.graph import Label
from pkg.indexing import in_flight
from pkg.knowledge_base import KnowledgeBase
from pkg.stores.base import code_tables
from pkg.stores.embedded import EmbeddedStore
from retrieval import lexical
from retrieval.search import retrieve
from tests.conftest import FIXTURES, STDLIB_SLICE, STORE_KINDS
from tests.helpers import build, empty_store
from tests.store_support import snapshot


def test_same_corpus_same_ids() -> None:
    first = {n.id for n in parse_corpus(STDLIB_SLICE).nodes}
    second = {n.id for n in parse_corpus(STDLIB_SLICE).nodes}
    assert first == second and len(first) == len(parse_corpus(STDLIB_SLICE).nodes)


def test_a_build_parses_each_python_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its functions, structure, class stubs and type facts are read from one ast tree."""
    parsed: Counter[str] = Counter()
    real_parse = ast.parse

    def counting_parse(source: str, *args: object, **kwargs: object) -> ast.Module:
        parsed[source] += 1
        return real_parse(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ast, "parse", counting_parse)
    graph = parse_corpus(STDLIB_SLICE)
    files = [n for n in graph.nodes if n.label == Label.FILE]
    texts = {
        path.read_text(encoding="utf-8")
        for root in STDLIB_SLICE
        for path in [root, *root.rglob("*.py")]
        if path.suffix == ".py"
    }
    assert len(files) == len(texts) > 5
    assert {text: parsed[text] for text in texts} == dict.fromkeys(texts, 1)


def test_a_build_collects_rarely_and_leaves_the_collector_as_it_found_it(
    embedder: CachedEmbedder, tmp_path: Path
) -> None:
    """The collector's first threshold is raised in every stage of a build, and restored after it,
    after a failed one too."""
    before = gc.get_threshold()
    during: dict[str, set[int]] = {}
    with KnowledgeBase(tmp_path / "db", "embedded", embedder) as kb:
        kb.build(
            [FIXTURES / "corpus"], progress=lambda stage, *_: during.setdefault(stage, set()).add(gc.get_threshold()[0])
        )
        assert gc.get_threshold() == before
        (tmp_path / "empty").mkdir()
        with pytest.raises(CorpusError):
            kb.build([tmp_path / "empty"])
    assert gc.get_threshold() == before and before[0] < BUILD_GC_THRESHOLD
    assert during == dict.fromkeys(["parse", "embed", "write", "link", "index"], {BUILD_GC_THRESHOLD})


def test_the_linking_pass_pauses_the_collector_and_leaves_it_as_it_found_it(
    embedder: CachedEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The collector is off while the linker runs (its tables are no garbage), on again after, off
    after when it was off before, and on only once the last of two passes running together ends."""
    real_link = indexing.link_edges
    seen: list[bool] = []
    monkeypatch.setattr(indexing, "link_edges", lambda *tables: seen.append(gc.isenabled()) or real_link(*tables))
    with EmbeddedStore(tmp_path / "db", create=True) as store:
        build(STDLIB_SLICE, store, embedder)
        assert seen == [False] and gc.isenabled()
        gc.disable()
        try:
            assert indexing.link_store(store) > 0 and not gc.isenabled()
        finally:
            gc.enable()
        first_inside, release = threading.Event(), threading.Event()

        def held_open(*tables: Any) -> list:
            first_inside.set()
            assert release.wait(60)
            return real_link(*tables)

        monkeypatch.setattr(indexing, "link_edges", held_open)
        first = threading.Thread(target=indexing.link_store, args=(store,))
        first.start()
        assert first_inside.wait(60)
        monkeypatch.setattr(indexing, "link_edges", real_link)
        with EmbeddedStore(tmp_path / "db") as other:  # a second pass, ending while the first still runs
            indexing.link_store(other)
        assert not gc.isenabled()
        release.set()
        first.join(120)
        assert gc.isenabled()


def test_the_linking_pass_leaves_no_cyclic_garbage(embedder: CachedEmbedder, tmp_path: Path) -> None:
    """What the collector's pause over the linker rests on: reference counting frees all of it."""
    with EmbeddedStore(tmp_path / "db", create=True) as store:
        report = build(STDLIB_SLICE, store, embedder)
        tables = code_tables(store)
    gc.collect()
    gc.disable()
    try:
        assert len(link_edges(*tables)) == report.links > 50
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_the_parsed_graphs_are_let_go_before_the_linking_pass(
    embedder: CachedEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written, a file's graph is no longer held: the linking pass reads the store, and the corpus
    beside it was a third of the peak memory of a 100k build."""
    parsed: list[weakref.ref] = []
    real_parse, real_link = parse_corpus, indexing.link_store
    alive_when_linking: list[int] = []

    def parse_and_watch(*args: Any, **kwargs: Any) -> ParsedCorpus:
        corpus = real_parse(*args, **kwargs)
        parsed.extend(weakref.ref(source.graph) for source in corpus.sources)
        return corpus

    def link_and_count(store: EmbeddedStore, *rest: Any) -> int:
        gc.collect()
        alive_when_linking.append(sum(ref() is not None for ref in parsed))
        return real_link(store, *rest)

    monkeypatch.setattr("ingest.parse.parse_corpus", parse_and_watch)
    monkeypatch.setattr(indexing, "link_store", link_and_count)
    with EmbeddedStore(tmp_path / "db", create=True) as store:
        report = build(STDLIB_SLICE, store, embedder)
        assert report.links > 0 and len(parsed) == report.files > 5
    assert alive_when_linking == [0]


@pytest.mark.skipif(not CAN_FORK, reason="forks on Linux only")
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_large_corpus_is_linked_in_a_forked_child_while_the_bm25_indexes_are_built(
    kind: str, embedder: CachedEmbedder, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From LINK_ASIDE_FROM functions (lowered here to the slice's) a child links while this process
    builds the BM25 indexes: the indexes wait until the child has begun, and the edges are those of
    linking in this process."""
    with empty_store(kind, tmp_path / "inline", request) as store:
        build(STDLIB_SLICE, store, embedder)
        inline = snapshot(store)
    linker = tmp_path / "linker"
    real_link, real_indexes = indexing.link_edges, lexical.refresh_indexes
    indexed_by: list[int] = []

    def link_and_say_where(*tables: Any) -> list:
        linker.write_text(str(os.getpid()))
        return real_link(*tables)

    def indexes_once_the_linker_runs(*args: Any) -> dict[str, int]:
        deadline = time.monotonic() + 120
        while not linker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        indexed_by.append(os.getpid())
        return real_indexes(*args)

    monkeypatch.setattr(indexing, "LINK_ASIDE_FROM", 1)
    monkeypatch.setattr(indexing, "cores", lambda: 2)  # whatever the machine has
    monkeypatch.setattr(indexing, "link_edges", link_and_say_where)
    monkeypatch.setattr(lexical, "refresh_indexes", indexes_once_the_linker_runs)
    stages: list[tuple[str, int]] = []
    with empty_store(kind, tmp_path / "forked", request) as store:
        built = KnowledgeBase(tmp_path / "forked", store, embedder).build(
            STDLIB_SLICE, progress=lambda stage, done, _: stages.append((stage, done))
        )
        forked = snapshot(store)
    assert indexed_by == [os.getpid()] and int(linker.read_text()) != os.getpid()
    assert forked.edges == inline.edges and built.report.links > 50 and built.bm25["func"] > 50
    assert [s for s in stages if s[0] in ("link", "index")] == [
        ("link", 0),
        ("index", 0),
        *[("index", n) for n in range(1, len(lexical.UNITS) + 1)],
        ("link", 1),
        ("link", 2),
    ]


def test_on_one_core_the_linking_pass_runs_here_after_the_work_beside_it(
    embedder: CachedEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child would only take turns with this process on one core, and add its memory to the peak."""
    with EmbeddedStore(tmp_path / "db", create=True) as store:
        build(STDLIB_SLICE, store, embedder)
        order: list[tuple[str, int]] = []
        real_link = indexing.link_edges
        monkeypatch.setattr(indexing, "LINK_ASIDE_FROM", 1)
        monkeypatch.setattr(indexing, "cores", lambda: 1)
        monkeypatch.setattr(indexing, "link_edges", lambda *t: order.append(("link", os.getpid())) or real_link(*t))
        assert indexing.link_store(store, lambda: order.append(("beside", os.getpid()))) > 50
        assert order == [("beside", os.getpid()), ("link", os.getpid())]


@pytest.mark.skipif(not CAN_FORK, reason="forks on Linux only")
def test_when_the_work_beside_the_forked_linker_fails_its_error_surfaces_and_no_edge_changes(
    embedder: CachedEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EmbeddedStore(tmp_path / "db", create=True) as store:
        build(STDLIB_SLICE, store, embedder)
        before = snapshot(store).edges
        monkeypatch.setattr(indexing, "LINK_ASIDE_FROM", 1)
        monkeypatch.setattr(indexing, "cores", lambda: 2)
        monkeypatch.setattr(indexing, "link_edges", lambda *tables: [])

        def fails() -> None:
            raise OSError("disk full")

        with pytest.raises(OSError, match="disk full"):
            indexing.link_store(store, fails)
        assert snapshot(store).edges == before
        assert indexing.link_store(store) == 0 and not any(e[1] == "CALLS" for e in snapshot(store).edges)


def test_prepared_pruning_needs_no_model_call_at_query_time(embedder: CachedEmbedder, tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path / "db", create=True) as store:
        report = build(STDLIB_SLICE, store, embedder)
        assert report.pruning_variants > report.functions
        misses = embedder.misses
        answer = retrieve(store, embedder, "pop the smallest item off the heap", "func", k=3)
        assert embedder.misses == misses + 1  # only the query itself is embedded
        assert "heappop" in [r.name for r in answer.results]


def test_without_preparation_pruning_still_works(embedder: CachedEmbedder, tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path / "db", create=True) as store:
        report = build([FIXTURES / "corpus"], store, embedder, prepare_pruning=False)
        assert report.pruning_variants == 0
        misses = embedder.misses
        answer = retrieve(store, embedder, "read the non-empty lines of a file", "func", k=1)
        assert answer.results[0].name == "read_lines"
        assert embedder.misses > misses + 1  # the branch variants were embedded on demand


def test_every_write_is_self_contained(
    embedder: CachedEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Units are written whole, nodes with their edges, even when batches are tiny."""
    monkeypatch.setattr("pkg.indexing.WRITE_BATCH", 7)
    written: list[tuple[set[str], set[str]]] = []
    with EmbeddedStore(tmp_path / "db", create=True) as store:
        original = store.replace_sources

        def spy(records: list, nodes: list, edges: list) -> None:
            written.append(({n.id for n in nodes}, {e.dst for e in edges}))
            original(records, nodes, edges)

        monkeypatch.setattr(store, "replace_sources", spy)
        build(STDLIB_SLICE, store, embedder)
        counts = store.counts()
    assert len(written) == 8  # one write per file: each file of the slice has more than 7 nodes
    assert all(targets <= ids for ids, targets in written)  # no edge points outside its own write
    assert counts.nodes[Label.IMPL] == counts.nodes[Label.NAME] == counts.relationships["HAS_IMPL"]


def test_every_language_is_built_by_its_extension() -> None:
    corpus = parse_corpus([FIXTURES / "languages"])
    names = [n for n in corpus.nodes if n.label is Label.NAME]
    by_lang = {lang: sum(n.props["lang"] == lang for n in names) for lang in {n.props["lang"] for n in names}}
    # tests/test_languages.py asserts each sample's functions; each broken file keeps two good ones.
    assert by_lang == {
        "javascript": 14,
        "typescript": 12,
        "java": 15,
        "go": 10,
        "rust": 13,
        "c": 9,
        "cpp": 12,
        "csharp": 12,
    }
    assert len(corpus.report.issues) == 8 and corpus.report.skipped == []
    chunks = [n for n in corpus.nodes if n.label is Label.CHUNK]
    assert {Path(n.props["source"]).suffix for n in chunks} == {
        ".js",
        ".ts",
        ".java",
        ".go",
        ".rs",
        ".c",
        ".cpp",
        ".cs",
    }


def test_writes_in_flight_run_together_up_to_the_limit_and_the_first_failure_surfaces() -> None:
    """Three calls run at once (the barrier needs all three), never more; a failure is raised
    after the calls already running have finished."""
    lock = threading.Lock()
    state = {"running": 0, "peak": 0}
    together = threading.Barrier(3, timeout=10)

    def work(item: int) -> int:
        with lock:
            state["running"] += 1
            state["peak"] = max(state["peak"], state["running"])
        try:
            if item < 3:
                together.wait()
            if item == 7:
                raise ValueError("batch 7 failed")
            return item * 10
        finally:
            with lock:
                state["running"] -= 1

    assert sorted(in_flight(work, range(6), 3)) == [0, 10, 20, 30, 40, 50]
    assert state["peak"] == 3
    together.reset()
    with pytest.raises(ValueError, match="batch 7"):
        list(in_flight(work, range(12), 3))
    assert state["running"] == 0
    assert [item * 10 for item in range(4)] == list(in_flight(lambda i: i * 10, range(4), 1))
