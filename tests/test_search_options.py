"""Retrieval options on a real build: excluded sources in every mode, BM25 over chunks, and call-graph
expansion of code hits (Python, Go, JavaScript), through the API and the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pkg.embedders import CachedEmbedder
from pkg.errors import ConfigError
from pkg.stores.embedded import EmbeddedStore
from retrieval.lexical import open_index
from retrieval.search import MODES, Neighbour, Options, Result, retrieve
from retrieval.tokenize import estimate_tokens
from tests.conftest import FIXTURES, STDLIB, cli_build, run_cli
from tests.helpers import build

HEAPQ = STDLIB / "heapq.py"
STRUCTURE = FIXTURES / "structure"
#: heapq (calls within one file), json (calls across files) and one small file per other language.
CORPUS = [HEAPQ, STDLIB / "json", STRUCTURE]
HEAP_QUERY = "push an item onto a heap"


@dataclass
class Built:
    store: EmbeddedStore
    db_dir: Path
    embedder: CachedEmbedder

    def ask(self, query: str, mode: str, k: int = 3, **options: Any) -> list[Result]:
        answer = retrieve(self.store, self.embedder, query, mode, k, db_dir=self.db_dir, options=Options(**options))
        return answer.results

    def top(self, query: str, mode: str = "bm25-func", **options: Any) -> Result:
        return self.ask(query, mode, 1, **options)[0]


@pytest.fixture(scope="module")
def built(module_embedder: CachedEmbedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    db_dir = tmp_path_factory.mktemp("options")
    store = EmbeddedStore(db_dir, create=True)
    build(CORPUS, store, module_embedder)
    yield Built(store, db_dir, module_embedder)
    store.close()


# json has no code to exclude; the defs modes take code, not a text (tests/test_definitions.py excludes there)
@pytest.mark.parametrize("mode", [m for m in MODES if m not in ("json", "defs", "defs+func")])
def test_excluded_sources_leave_the_ranking_of_the_other_files(built: Built, mode: str) -> None:
    everything = built.ask(HEAP_QUERY, mode, 40)
    assert everything[0].path == str(HEAPQ)  # so the exclusion has something to drop
    hidden = frozenset({str(HEAPQ)})
    rest = [r.id for r in everything if r.path not in hidden]
    for k in (1, 3):
        found = built.ask(HEAP_QUERY, mode, k, exclude_sources=hidden)
        assert not any(r.path in hidden for r in found)
        assert len(found) == min(k, len(rest))
        if mode != "hybrid":  # fusing shortened rankings may reorder what is left
            assert [r.id for r in found] == rest[:k]


def test_exclusion_fetches_again_when_the_first_fetch_is_all_excluded(built: Built) -> None:
    everything = built.ask(HEAP_QUERY, "func", 20, with_pruning=False)
    assert {r.path for r in everything[:8]} == {str(HEAPQ)}  # past the first fetch (4 x k) and the second
    found = built.ask(HEAP_QUERY, "func", 2, with_pruning=False, exclude_sources=frozenset({str(HEAPQ)}))
    assert [r.id for r in found] == [r.id for r in everything if r.path != str(HEAPQ)][:2]


def test_bm25_chunk_ranks_chunks_by_the_chunk_index_without_an_embedder(built: Built) -> None:
    answer = retrieve(built.store, None, "heappushpop heappush", "bm25-chunk", 3, db_dir=built.db_dir)
    expected = open_index(built.store, built.db_dir, "chunk").search("heappushpop heappush", 3)
    assert [(r.id, r.score) for r in answer.results] == expected
    top = answer.results[0]
    assert (top.kind, top.path) == ("CHUNK", str(HEAPQ)) and "def heappushpop" in top.text
    nexted = retrieve(
        built.store, None, "heappushpop heappush", "bm25-chunk", 1, built.db_dir, Options(neighbour=Neighbour.NEXT)
    ).results[0]
    assert nexted.id == top.id and nexted.text.startswith(top.text) and len(nexted.text) > len(top.text)
    assert nexted.lines[0] == top.lines[0] and nexted.lines[1] > top.lines[1]
    as_text = retrieve(
        built.store,
        None,
        "heappushpop heappush",
        "bm25-chunk",
        1,
        built.db_dir,
        Options(neighbour="next"),  # type: ignore[arg-type]
    ).results[0]
    assert as_text == nexted  # a plain string names the same neighbour as the member
    with pytest.raises(ConfigError, match="unknown neighbour"):
        retrieve(built.store, None, "heap", "bm25-chunk", 1, built.db_dir, Options(neighbour="after"))  # type: ignore[arg-type]


def test_callees_of_a_python_hit_are_its_callees_signatures(built: Built) -> None:
    plain = built.top("heappush")
    hit = built.top("heappush", expand="callees")
    assert (hit.name, hit.id, hit.text) == ("heappush", plain.id, plain.text)
    assert hit.expansion == "# calls:\n# def _siftdown(heap, startpos, pos):"
    assert hit.pruned_text == f"{plain.text.rstrip()}\n{hit.expansion}\n"
    assert not hit.pruned and "_siftdown(heap, 0, len(heap)-1)" in hit.text  # the body stays the hit's own


def test_callees_of_go_and_javascript_hits_in_call_site_order(built: Built) -> None:
    total = built.top("Total xs", expand="callees")
    assert (total.name, total.expansion) == (
        "Total",
        "// calls:\n// func (c *Counter) Add(k int) int\n// func (c *Counter) Get() int\n// func helper(v int) int",
    )
    fill = built.top("fill", expand="callees")  # an arrow function shows behind the name it is bound to
    assert (fill.name, fill.expansion) == ("fill", "// calls:\n// push(x)\n// report = (s) =>")


def test_callers_of_a_hit(built: Built) -> None:
    get = built.top("Counter Get", expand="callers")
    assert (get.name, get.expansion) == (
        "Counter.Get",
        "// called by:\n// func (c *Counter) Add(k int) int\n// func Total(xs []int) int",
    )
    assert built.top("Total xs", expand="callers").expansion == ""  # nothing calls it: no block


def test_expansion_is_cut_to_its_budget(built: Built) -> None:
    header, first = "// calls:", "// func (c *Counter) Add(k int) int"
    budget = estimate_tokens(header) + estimate_tokens(first)
    assert built.top("Total xs", expand="callees", expand_budget=budget).expansion == f"{header}\n{first}"
    assert built.top("Total xs", expand="callees", expand_budget=budget - 1).expansion == ""
    unexpanded = built.top("Total xs", expand="callees", expand_budget=0)
    assert unexpanded.pruned_text == unexpanded.text


def test_expansion_leaves_out_excluded_files_and_follows_calls_across_files(built: Built) -> None:
    query = "dumps obj skipkeys ensure_ascii"
    dumps = built.top(query, expand="callees")  # json/__init__.py calls JSONEncoder.encode of json/encoder.py
    assert dumps.name == "dumps" and dumps.expansion.startswith('# calls:\n# def encode(self, o):\n#     """')
    hidden = built.top(query, expand="callees", exclude_sources=frozenset({str(STDLIB / "json" / "encoder.py")}))
    assert (hidden.id, hidden.expansion, hidden.pruned_text) == (dumps.id, "", dumps.text)


def test_vector_code_modes_expand_too_and_bad_options_are_refused(built: Built) -> None:
    for mode in ("func", "block", "hybrid"):
        [hit] = built.ask("move the parent down until the item fits", mode, 1, expand="callers", hybrid_unit="func")
        assert hit.kind in ("IMPL", "BLOCK") and hit.path == str(HEAPQ)
        assert "# called by:\n# def " in hit.pruned_text
    with pytest.raises(ConfigError, match="unknown expansion 'both'"):
        built.ask("heap", "bm25-func", expand="both")
    with pytest.raises(ConfigError, match="budget"):
        built.ask("heap", "bm25-func", expand="callees", expand_budget=-1)


@pytest.mark.cli
def test_the_cli_expands_code_hits(tmp_path: Path, env: dict[str, str]) -> None:
    db = tmp_path / "db"
    cli_build(db, env, str(HEAPQ), str(STRUCTURE))
    done = run_cli(
        "query",
        "heappush",
        "--mode",
        "bm25-func",
        "-k",
        "1",
        "--expand",
        "callees",
        "--db",
        str(db),
        "--format",
        "json",
        env_extra=env,
    )
    assert done.returncode == 0, done.stderr
    [hit] = json.loads(done.stdout)["results"]
    assert hit["pruned_text"] == hit["text"].rstrip() + "\n# calls:\n# def _siftdown(heap, startpos, pos):\n"
    text = run_cli(
        "query", "Counter Get", "--mode", "bm25-func", "-k", "1", "--expand", "callers", "--db", str(db), env_extra=env
    )
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0].endswith("shapes.go:12-12")  # not marked "(pruned)": expansion is no pruning
    assert "// called by:\n// func (c *Counter) Add(k int) int\n// func Total(xs []int) int" in text.stdout
    wrong = run_cli("query", "x", "--expand", "siblings", "--db", str(db), env_extra=env)
    assert wrong.returncode == 2 and "Invalid value for '--expand'" in wrong.stderr
