"""BM25 retrieval: the code tokenizer, parity with rank_bm25, ranking on real code, persistence."""

from __future__ import annotations

import ast
import sysconfig
from collections import Counter
from functools import partial
from pathlib import Path

import bm25s
import pytest
from rank_bm25 import BM25Okapi

from pkg.errors import ConfigError, StoreError, StoreNotFoundError
from retrieval.bm25 import BM25Index
from retrieval.tokenize import code_tokens

STDLIB = Path(sysconfig.get_paths()["stdlib"])
#: A real, bounded slice of code present with every Python.
SOURCES = [*sorted((STDLIB / "json").glob("*.py")), STDLIB / "textwrap.py", STDLIB / "heapq.py", STDLIB / "bisect.py"]

#: Queries for the parity test: words, identifiers in several styles, repeats, unknown words.
PARITY_QUERIES = [
    "read json file",
    "handleLongWord",
    "heap push pop",
    "heap heap push",
    "insort right",
    "bisect_left lo hi",
    "decode unicode escape",
    "dedent text",
    "JSONDecodeError",
    "scanstring",
    "encode_basestring_ascii",
    "sort_keys indent separators",
    "TextWrapper width",
    "merge iterables key reverse",
    "nsmallest nlargest",
    "object_hook object_pairs_hook",
    "fix sentence endings",
    "frobnicate json",
    "wrap paragraph lines",
    "raw_decode idx end",
    "make iterencode markers",
]


def _functions(path: Path) -> list[tuple[str, str]]:
    """(id, source) of every function in `path`, nested ones and methods included."""
    source = path.read_text(encoding="utf-8")
    return [
        (f"{path.relative_to(STDLIB).as_posix()}:{node.lineno}:{node.name}", ast.get_source_segment(source, node) or "")
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], list[str]]:
    """Ids and texts of the functions of the standard-library slice."""
    pairs = [pair for path in SOURCES for pair in _functions(path)]
    assert 30 <= len(pairs) <= 100
    return [i for i, _ in pairs], [t for _, t in pairs]


@pytest.fixture(scope="module")
def index(corpus: tuple[list[str], list[str]]) -> BM25Index:
    """The default index of the corpus."""
    return BM25Index.build(*corpus)


def _name(doc_id: str) -> str:
    """The function name in an id of `_functions`."""
    return doc_id.rsplit(":", 1)[1]


# --- tokenizer ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("read_json_file", ["read_json_file", "read", "json", "file"]),
        ("readJsonFile", ["readjsonfile", "read", "json", "file"]),
        ("JsonFileReader", ["jsonfilereader", "json", "file", "reader"]),
        ("HTTPServerError", ["httpservererror", "http", "server", "error"]),
        ("getHTTPResponse", ["gethttpresponse", "get", "http", "response"]),
        ("parseURL", ["parseurl", "parse", "url"]),
        ("parse_json2Dict", ["parse_json2dict", "parse", "json2", "dict"]),
        ("HTTP2Server", ["http2server", "http2", "server"]),
        ("base64 utf8", ["base64", "utf8"]),
        ("x = 42 + 0xFF * 3.5", ["x", "42", "0xff", "3", "5"]),
        ("__init__", ["__init__", "init"]),
        ("_private_name", ["_private_name", "private", "name"]),
        ("parse Parse PARSE", ["parse", "parse", "parse"]),
        ("if (a, b) -> dict[str, int]: # done!", ["if", "a", "b", "dict", "str", "int", "done"]),
        ("größeBerechnen naïve", ["größeberechnen", "größe", "berechnen", "naïve"]),
        ("変数名 = 1", ["変数名", "1"]),
        ("", []),
        ("+-*/ ;:", []),
    ],
)
def test_code_tokens(text: str, expected: list[str]) -> None:
    assert code_tokens(text) == expected


def test_code_tokens_drops_stop_words_from_wholes_and_parts() -> None:
    assert code_tokens("def get_self(self):", stop_words={"def", "self"}) == ["get_self", "get"]


# --- parity with rank_bm25 ------------------------------------------------------------------------


@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.75), (1.2, 0.3)])
def test_scores_and_rankings_match_rank_bm25_okapi(corpus: tuple[list[str], list[str]], k1: float, b: float) -> None:
    """BM25Index scores are BM25Okapi's for any query whose tokens are each in at most half of the
    documents. The two differ only for a token in more than half (negative Okapi idf: BM25Okapi
    floors it at epsilon x mean idf, BM25Index gives it 0), so these queries avoid such tokens, and
    the test checks that they do. Rankings agree too, equal scores ordered by id."""
    ids, texts = corpus
    tokenized = [code_tokens(text) for text in texts]
    okapi = BM25Okapi(tokenized, k1=k1, b=b)
    df = Counter(token for doc in tokenized for token in set(doc))
    index = BM25Index.build(ids, texts, k1=k1, b=b)
    for query in PARITY_QUERIES:
        tokens = code_tokens(query)
        assert all(df[token] <= len(texts) / 2 for token in tokens), query
        reference = okapi.get_scores(tokens)
        expected = sorted(((i, s) for i, s in zip(ids, reference) if s > 0), key=lambda hit: (-hit[1], hit[0]))
        got = index.search(query, k=len(ids))
        assert got, query
        assert [i for i, _ in got] == [i for i, _ in expected], query
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-5), query


def test_tokens_in_most_documents_weigh_nothing(corpus: tuple[list[str], list[str]], index: BM25Index) -> None:
    """The one difference from BM25Okapi: `return`, in most functions, gets idf 0, not a floor."""
    ids, texts = corpus
    tokenized = [code_tokens(text) for text in texts]
    assert sum("return" in doc for doc in tokenized) > len(ids) / 2
    assert BM25Okapi(tokenized).get_scores(["return"]).max() > 0
    assert index.search("return", k=len(ids)) == []
    assert index.search("return json", k=len(ids)) == index.search("json", k=len(ids))


# --- ranking on real code -------------------------------------------------------------------------


def test_identifier_fragments_find_the_function(index: BM25Index) -> None:
    best, _ = index.search("read json file", k=3)[0]
    assert best.startswith("json/__init__.py:") and _name(best) == "load"


@pytest.mark.parametrize(
    ("query", "function"), [("handleLongWord", "_handle_long_word"), ("insortRight", "insort_right")]
)
def test_camel_case_queries_match_snake_case_code(index: BM25Index, query: str, function: str) -> None:
    assert _name(index.search(query, k=1)[0][0]) == function


def test_k_limits_results_and_ties_go_by_id() -> None:
    ids = ["c", "a", "d", "b", "e", "f", "g"]
    index = BM25Index.build(ids, ["json load", "json load", "dump", "json load", "dumps", "x", "y"])
    assert [i for i, _ in index.search("load", k=10)] == ["a", "b", "c"]
    assert [i for i, _ in index.search("load", k=2)] == ["a", "b"]
    assert len({s for _, s in index.search("load", k=10)}) == 1


def test_queries_without_known_tokens_find_nothing(index: BM25Index) -> None:
    assert index.search("frobnicate", k=5) == []
    assert index.search("-> ()", k=5) == []


def test_bad_arguments_are_refused(index: BM25Index) -> None:
    with pytest.raises(ConfigError, match="one id per text"):
        BM25Index.build(["a", "b"], ["text"])
    with pytest.raises(ConfigError, match="unique"):
        BM25Index.build(["a", "a"], ["one", "two"])
    with pytest.raises(ConfigError, match="k must be"):
        index.search("json", k=0)


@pytest.mark.parametrize("texts", [[], ["", "+ - ;"]])
def test_corpora_without_tokens_work(tmp_path: Path, texts: list[str]) -> None:
    ids = [f"doc{i}" for i in range(len(texts))]
    index = BM25Index.build(ids, texts)
    assert index.search("anything", k=3) == []
    index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx")
    assert loaded.ids == tuple(ids)
    assert loaded.search("anything", k=3) == []


# --- persistence ----------------------------------------------------------------------------------


def _small(first_id: str) -> BM25Index:
    """A three-document index whose first document, `first_id`, is the only one about json."""
    return BM25Index.build([first_id, "other", "more"], ["json load", "text wrap", "heap push"])


def test_save_load_round_trip(tmp_path: Path, corpus: tuple[list[str], list[str]], index: BM25Index) -> None:
    index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx")
    assert loaded.ids == index.ids
    assert (loaded.k1, loaded.b) == (index.k1, index.b)
    for query in PARITY_QUERIES:
        assert loaded.search(query, k=len(corpus[0])) == index.search(query, k=len(corpus[0]))


def test_saving_replaces_an_index_and_leaves_nothing_behind(tmp_path: Path) -> None:
    _small("old").save(tmp_path / "idx")
    _small("new").save(tmp_path / "idx")
    assert BM25Index.load(tmp_path / "idx").ids == ("new", "other", "more")
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]


def test_a_failed_save_keeps_the_previous_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _small("old").save(tmp_path / "idx")

    def crash(self: bm25s.BM25, save_dir: Path, **kwargs: object) -> None:
        (Path(save_dir) / "vocab.index.json").write_text("{")
        raise OSError("disk full")

    monkeypatch.setattr(bm25s.BM25, "save", crash)
    with pytest.raises(StoreError, match="disk full"):
        _small("new").save(tmp_path / "idx")
    assert BM25Index.load(tmp_path / "idx").search("json load", k=1)[0][0] == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]


def test_saving_refuses_to_replace_other_data(tmp_path: Path) -> None:
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "notes.txt").write_text("keep me")
    with pytest.raises(StoreError, match="not a BM25 index"):
        BM25Index.build(["a"], ["json"]).save(tmp_path / "idx")
    assert (tmp_path / "idx" / "notes.txt").read_text() == "keep me"


def test_loading_with_another_tokenizer_is_refused(tmp_path: Path) -> None:
    def whitespace_tokens(text: str) -> list[str]:
        return text.lower().split()

    BM25Index.build(["a"], ["json load"]).save(tmp_path / "idx")
    with pytest.raises(ConfigError, match="tokenizer"):
        BM25Index.load(tmp_path / "idx", tokenizer=whitespace_tokens)
    with pytest.raises(ConfigError, match="tokenizer"):
        BM25Index.load(tmp_path / "idx", tokenizer=partial(code_tokens, stop_words={"self"}))


def test_a_tokenizer_with_bound_stop_words_round_trips(tmp_path: Path) -> None:
    tokenizer = partial(code_tokens, stop_words={"self", "def"})
    texts = ["def load(self)", "def dump(self)", "def close(self)"]
    BM25Index.build(["a", "b", "c"], texts, tokenizer=tokenizer).save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx", tokenizer=partial(code_tokens, stop_words={"def", "self"}))
    assert loaded.search("self load", k=3) == loaded.search("load", k=3) != []


def test_loading_nothing_or_garbage_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        BM25Index.load(tmp_path / "missing")
    _small("a").save(tmp_path / "idx")
    for meta in (tmp_path / "idx").glob("pkg-*.json"):
        meta.write_text("{")
    with pytest.raises(StoreError, match="cannot read"):
        BM25Index.load(tmp_path / "idx")
