"""Every retrieval mode on both stores, on real code: the ranking each one is for."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ingest.chunking import chunk_source
from pkg.code.syntax_check import syntax_for
from pkg.embedders import CachedEmbedder
from pkg.errors import ConfigError, StoreError, StoreNotFoundError
from pkg.graph import Label
from pkg.stores.base import GraphStore
from pkg.stores.embedded import EmbeddedStore
from retrieval.bm25 import BM25Index
from retrieval.fusion import FUSION_DEPTHS, Fusion, reciprocal_rank_fusion, score_fusion
from retrieval.lexical import index_dir, open_index, refresh_indexes
from retrieval.names import name_in_query, name_leads_query, query_words
from retrieval.search import DEFAULT_MODE, Neighbour, Options, retrieve
from tests.conftest import FIXTURES, STDLIB, STDLIB_SLICE, STORE_KINDS, run_cli
from tests.helpers import build, empty_store
from tests.neo4j_server import wipe

CORPUS = [*STDLIB_SLICE, STDLIB / "shlex.py", FIXTURES / "corpus"]


@dataclass
class Built:
    store: GraphStore
    db_dir: Path
    embedder: CachedEmbedder

    def ask(self, query: str, mode: str, k: int = 3, **options: object) -> list:
        answer = retrieve(self.store, self.embedder, query, mode, k, db_dir=self.db_dir, options=Options(**options))
        return answer.results


@pytest.fixture(scope="module", params=STORE_KINDS)
def built(
    request: pytest.FixtureRequest, module_embedder: CachedEmbedder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Built]:
    db_dir = tmp_path_factory.mktemp(request.param)
    store = empty_store(request.param, db_dir, request)
    build(CORPUS, store, module_embedder)
    refresh_indexes(store, db_dir)
    yield Built(store, db_dir, module_embedder)
    store.close()


def test_bm25_func_matches_identifiers(built: Built) -> None:
    top = built.ask("heappushpop heap item", "bm25-func")
    assert top[0].name == "heappushpop" and top[0].kind == "IMPL"
    assert top[0].text == top[0].pruned_text  # the Func-BM25 baseline is not pruned
    camel = built.ask("insortLeft", "bm25-func", k=1)  # camelCase query, snake_case code
    assert camel[0].name == "insort_left"


def test_bm25_rows_returns_whole_items(built: Built) -> None:
    top = built.ask("shlex split posix quotes", "bm25-rows", k=1)[0]
    assert (top.kind, top.path) == ("ROW", str(STDLIB / "shlex.py"))
    assert top.text == (STDLIB / "shlex.py").read_text() and top.lines[0] == 1
    row = built.ask("reverse words sentence", "bm25-rows", k=1)[0]
    assert (row.row, row.name) == (2, "alpaca.jsonl#row2") and "reversed(sentence.split())" in row.text


def test_dense_rows_follow_meaning(built: Built) -> None:
    top = built.ask("wrap long paragraphs of text to a fixed line width", "dense-rows", k=1)[0]
    assert top.kind == "ROW" and top.path.endswith("textwrap.py")


def test_chunks_and_their_neighbours(built: Built) -> None:
    plain = built.ask("split a string using shell-like syntax", "chunk", k=1)[0]
    assert plain.kind == "CHUNK" and plain.path.endswith("shlex.py") and "def split(" in plain.text
    source = (STDLIB / "shlex.py").read_text()
    chunks = chunk_source(source)
    middle = chunks[len(chunks) // 2].text  # its own text finds a chunk that has both neighbours
    alone = built.ask(middle, "chunk", k=1)[0]
    assert alone.text == middle
    following = built.ask(middle, "chunk", k=1, neighbour=Neighbour.NEXT)[0]
    assert following.text == middle + chunks[len(chunks) // 2 + 1].text and following.text in source
    assert following.lines == (alone.lines[0], chunks[len(chunks) // 2 + 1].end_line)
    preceding = built.ask(middle, "chunk", k=1, neighbour=Neighbour.PREVIOUS)[0]
    assert preceding.text == chunks[len(chunks) // 2 - 1].text + middle
    assert preceding.lines == (chunks[len(chunks) // 2 - 1].start_line, alone.lines[1])


@pytest.mark.parametrize(("unit", "label"), [("func", Label.IMPL), ("chunk", Label.CHUNK), ("rows", Label.ROW)])
def test_hybrid_is_the_weighted_fusion_of_both_rankings(built: Built, unit: str, label: Label) -> None:
    """By default the sum of both rankings' scores scaled to 0-1, halved, and over functions 0.2 more for a
    function the query names (here shlex's `split`, `shlex.split` ...), 0.2 more again for one it leads
    with (`split`, `TextWrapper._split`); weighted RRF when asked."""
    query = "split the string into tokens using shell-like syntax"

    def rankings(depth: int) -> list[list[tuple[str, float]]]:
        sparse = open_index(built.store, built.db_dir, unit).search(query, depth)
        return [sparse, [(h.id, h.score) for h in built.store.search(label, built.embedder.embed_query(query), depth)]]

    expected = score_fusion(rankings(FUSION_DEPTHS[Fusion.SCORES]), [0.5, 0.5])
    if unit == "func":
        names = built.store.function_names([doc for doc, _ in expected])
        named = {doc for doc, _ in expected if name_in_query(names[doc], query_words(query))}
        leading = {doc for doc in named if name_leads_query(names[doc], query)}
        assert "split" in {names[doc] for doc in leading}
        lifted = ((d, s + 0.2 * (d in named) + 0.2 * (d in leading)) for d, s in expected)
        expected = sorted(lifted, key=lambda item: -item[1])
    fused = built.ask(query, "hybrid", k=5, hybrid_unit=unit)
    assert [(r.id, r.score) for r in fused] == [(d, pytest.approx(s)) for d, s in expected[:5]]
    rrf = built.ask(query, "hybrid", k=5, hybrid_unit=unit, fusion="rrf")
    ranked = [[doc for doc, _ in ranking] for ranking in rankings(FUSION_DEPTHS[Fusion.RRF])]
    expected_rrf = reciprocal_rank_fusion(ranked, [0.2, 0.8], 60)[:5]
    assert [(r.id, r.score) for r in rrf] == [(d, pytest.approx(s)) for d, s in expected_rrf]


def test_the_name_bonus_lifts_the_function_a_query_names(built: Built) -> None:
    query = "quote a string for use in a shell command line"
    assert [r.name for r in built.ask(query, "hybrid", k=2)] == ["quote", "join"]
    assert [r.name for r in built.ask(query, "hybrid", k=2, name_bonus=0.0)] == ["join", "quote"]


def test_hybrid_recovers_what_one_ranking_misses(built: Built) -> None:
    lexical_only = "insortRight"  # an identifier the embedding model does not know
    assert built.ask(lexical_only, "hybrid", k=3, hybrid_unit="func")[0].name == "insort_right"
    paraphrase = "arrange words into lines no wider than a limit"  # no identifier shared with the code
    names = [r.name for r in built.ask(paraphrase, "hybrid", k=5, hybrid_unit="func")]
    assert any(name.startswith(("TextWrapper", "wrap", "fill")) for name in names)


def test_a_missing_index_is_built_from_the_store(built: Built, tmp_path: Path) -> None:
    """As for a database built by an older PKG, whose function index had another form and folder."""
    answer = retrieve(built.store, None, "shlex split posix quotes", "bm25-rows", k=1, db_dir=tmp_path)
    assert answer.results[0].path == str(STDLIB / "shlex.py")
    assert (tmp_path / "bm25" / "rows").is_dir() and not (tmp_path / "bm25" / "func-v2").exists()
    (tmp_path / "bm25" / "func").mkdir()  # what an older build left: removed at the next refresh
    refresh_indexes(built.store, tmp_path)
    assert sorted(p.name for p in (tmp_path / "bm25").iterdir()) == ["chunk", "func-v2", "rows"]
    with EmbeddedStore(tmp_path / "empty", create=True) as empty, pytest.raises(StoreNotFoundError, match="no BM25"):
        retrieve(empty, None, "x", "bm25-rows", db_dir=tmp_path / "empty")


def test_stale_indexes_are_refused(built: Built, tmp_path: Path) -> None:
    index = open_index(built.store, built.db_dir, "func")
    index.build(index.ids[:-1], ["x"] * (len(index.ids) - 1)).save(index_dir(tmp_path, "func"))
    with pytest.raises(StoreError, match="run `pkg build` again"):
        retrieve(built.store, built.embedder, "x", "bm25-func", db_dir=tmp_path)
    with pytest.raises(ConfigError, match="unknown hybrid unit"):
        retrieve(built.store, built.embedder, "x", "hybrid", db_dir=built.db_dir, options=Options(hybrid_unit="file"))


def test_an_index_naming_replaced_nodes_is_refused(built: Built, tmp_path: Path) -> None:
    """As many documents as the store, but under ids it no longer holds (an interrupted build)."""
    ids, texts = zip(*built.store.texts(Label.IMPL))
    BM25Index.build([f"replaced-{doc}" for doc in ids], texts).save(index_dir(tmp_path, "func"))
    with pytest.raises(StoreError, match="not in the store .* run `pkg build` again"):
        retrieve(built.store, None, "heappush", "bm25-func", db_dir=tmp_path)


def test_bm25_modes_never_load_the_model(built: Built) -> None:
    answer = retrieve(built.store, None, "heappush", "bm25-func", k=1, db_dir=built.db_dir)
    assert answer.results[0].name == "heappush"
    with pytest.raises(ConfigError, match="needs an embedder"):
        retrieve(built.store, None, "heappush", "func", k=1, db_dir=built.db_dir)


@pytest.mark.cli
def test_every_mode_from_the_cli(tmp_path: Path) -> None:
    env = {"PKG_CACHE_DIR": str(tmp_path / "cache")}
    db = str(tmp_path / "db")
    assert run_cli("build", str(FIXTURES / "corpus"), "--db", db, env_extra=env).returncode == 0
    answers = {}
    for mode, expected in [
        ("bm25-rows", "ROW"),
        ("bm25-func", "IMPL"),
        ("dense-rows", "ROW"),
        ("hybrid", "IMPL"),
        ("chunk", "CHUNK"),
        ("func", "IMPL"),
        ("block", "BLOCK"),
        (None, "IMPL"),
    ]:
        args = (*(("--mode", mode) if mode else ()), "-k", "1", "--db", db, "--format", "json")
        done = run_cli("query", "is the number prime", *args, env_extra=env)
        assert done.returncode == 0, done.stderr
        answers[mode] = json.loads(done.stdout)
        top = answers[mode]["results"][0]
        assert top["kind"] == expected and "n % d == 0" in top["text"], (mode, top)
    assert answers[None] == answers["hybrid"]  # the mode a query gets when it names none


@pytest.mark.cli
def test_bm25_query_needs_no_embedder_and_follows_a_narrower_rebuild(tmp_path: Path) -> None:
    env = {"PKG_CACHE_DIR": str(tmp_path / "cache"), "VOYAGE_API_KEY": ""}
    db = str(tmp_path / "db")
    assert run_cli("build", str(FIXTURES / "corpus"), "--db", db, env_extra=env).returncode == 0
    # an embedder that cannot even start (no API key) is never built for a BM25 query
    done = run_cli(
        "query",
        "is the number prime",
        "--mode",
        "bm25-func",
        "--embedder",
        "voyage",
        "--db",
        db,
        "--format",
        "json",
        env_extra=env,
    )
    assert done.returncode == 0, done.stderr
    assert "n % d == 0" in json.loads(done.stdout)["results"][0]["text"]
    # rebuilt without rows: a rows query says the database holds none (no answer from an index outliving them)
    assert run_cli("build", str(FIXTURES / "corpus"), "--db", db, "--parts", "functions", env_extra=env).returncode == 0
    for fmt in ("json", "text"):
        done = run_cli(
            "query", "is the number prime", "--mode", "bm25-rows", "--db", db, "--format", fmt, env_extra=env
        )
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == (
            "pkg: this database holds no ROW nodes: its build left out the 'rows' part (pkg build --parts ...,rows)"
            " or found nothing for it\n"
        )
    done = run_cli("query", "zzzz qqqq", "--mode", "bm25-func", "--db", db, env_extra=env)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == "pkg: no bm25-func results for this query\n"


@pytest.mark.parametrize("mode", ["func", DEFAULT_MODE])
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_pruning_in_other_languages_keeps_valid_code(
    kind: str, mode: str, request: pytest.FixtureRequest, module_embedder: CachedEmbedder, tmp_path: Path
) -> None:
    store = empty_store(kind, tmp_path, request)
    try:
        build(sorted((FIXTURES / "languages").glob("[sS]ample.*")), store, module_embedder)
        refresh_indexes(store, tmp_path)
        query = "exponential backoff: a list of delays doubling in milliseconds"
        (top,) = retrieve(store, module_embedder, query, mode, k=1, db_dir=tmp_path).results
        assert top.name == "Backoff" and top.path.endswith("sample.go")
        assert len(top.pruned_text) < len(top.text)  # one of its three loops went
        syntax = syntax_for(top.text, "go")
        assert syntax is not None and syntax.valid(top.pruned_text)
        assert "delays = append(delays" in top.pruned_text
        options = Options(with_pruning=False)
        (whole,) = retrieve(store, module_embedder, query, mode, k=1, db_dir=tmp_path, options=options).results
        assert (whole.id, whole.pruned_text) == (top.id, top.text)
    finally:
        store.close()
        if kind == "neo4j":
            wipe(request.getfixturevalue("neo4j_uri"))
