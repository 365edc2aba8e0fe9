"""The scale benchmark's corpus choice, query choice, answer comparison and recall measures, on small real trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_scale import compare_answers, known_item_recall, real_queries, type_facts_seconds, vector_recall
from bench.corpora import project_functions, site_packages_corpus
from pkg.knowledge_base import KnowledgeBase


def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _functions(count: int, doc: str = "") -> str:
    return "".join(f"def f{i}():\n    {doc!r}\n    return {i}\n\n" for i in range(count))


def test_corpus_goes_by_package_then_path_and_leaves_tests_out(tmp_path: Path) -> None:
    _write(tmp_path, "zlib_like/core.py", _functions(5))
    _write(tmp_path, "alpha/b.py", _functions(2))
    _write(tmp_path, "alpha/a.py", "def outer():\n    def inner():\n        return 1\n    return inner\n")
    _write(tmp_path, "alpha/tests/helpers.py", _functions(9))
    _write(tmp_path, "alpha/test_alpha.py", _functions(9))
    _write(tmp_path, "alpha/conftest.py", _functions(9))
    _write(tmp_path, "alpha/__pycache__/a.py", _functions(9))
    _write(tmp_path, "alpha/constants.py", "X = 1\n")
    _write(tmp_path, "Beta/m.py", _functions(1))

    files, total = site_packages_corpus(4, root=tmp_path)

    # "Beta" sorts before "alpha" (code point order); the nested function counts as a function
    assert [f.relative_to(tmp_path).as_posix() for f in files] == ["Beta/m.py", "alpha/a.py", "alpha/b.py"]
    assert total == 5
    assert site_packages_corpus(100, root=tmp_path)[1] == 10  # everything but tests and caches


def test_project_functions_counts_what_the_parser_keeps(tmp_path: Path) -> None:
    broken = _write(tmp_path, "broken.py", "def good():\n    return 1\n\ndef bad(:\n    pass\n")
    latin = tmp_path / "latin.py"
    latin.write_bytes("def f():\n    return 'é'\n".encode("latin-1"))
    assert project_functions(broken) == 1
    assert project_functions(latin) == 0


def test_real_queries_are_distinct_long_first_docstring_lines(tmp_path: Path) -> None:
    files = [
        _write(tmp_path, "a.py", _functions(3, "Return the number given, unchanged.\n\nMore.")),
        _write(
            tmp_path, "b.py", _functions(1, "short") + _functions(1, "Parse a header line into a name and a value.")
        ),
    ]
    assert real_queries(files, 5) == {
        "Return the number given, unchanged.": (str(files[0]), 1),
        "Parse a header line into a name and a value.": (str(files[1]), 5),
    }
    assert list(real_queries(files, 1)) == ["Return the number given, unchanged."]


def test_compare_answers_tells_ids_from_pruned_texts() -> None:
    mine = {"func:q1": [["a", "h1", 0]], "func:q2": [["b", "h2", 0]], "block:q3": [["c", "h3", 5]]}
    theirs = {"func:q1": [["a", "h1", 0]], "func:q2": [["b", "hX", 9]], "block:q3": [["d", "h3", 5]], "only": []}
    mine_top = {"k1": ["a", "b", "c", "d"], "k2": ["e"]}
    theirs_top = {"k1": ["a", "x", "c", "y"], "k2": ["f"], "k3": []}
    compared = compare_answers(mine, theirs, mine_top, theirs_top)
    assert (compared["queries"], compared["same_ids"], compared["same_pruned_texts"]) == (3, 2, 1)
    assert [d["query"] for d in compared["differ"]] == ["block:q3", "func:q2"]
    assert compared["top10_overlap"] == (2 / 4 + 0) / 2


def test_type_facts_are_timed_over_the_files_that_parse(tmp_path: Path) -> None:
    typed = "".join(f"def f{i}(x: int) -> str:\n    y = str(x)\n    return y\n\n" for i in range(300))
    files = [_write(tmp_path, "typed.py", typed), _write(tmp_path, "broken.py", "def (:\n")]
    facts, walking = type_facts_seconds(files)
    assert 0 < facts < 60 and 0 < walking < 60


@pytest.mark.model
def test_known_items_and_vector_recall_on_a_real_build(static_folder: Path, tmp_path: Path) -> None:
    files = [
        _write(tmp_path, "geo.py", 'def circle_area(radius):\n    """Area of a circle of the radius given."""\n'),
        _write(
            tmp_path,
            "net.py",
            'def parse_header(line):\n    """Split an HTTP header line into its name and value."""\n'
            '    return line.partition(":")[::2]\n',
        ),
    ]
    queries = real_queries(files, 5)
    with KnowledgeBase(tmp_path / "db", embedder="static", cache_dir=static_folder) as kb:
        kb.build(files)
        known = known_item_recall(kb, queries)
        assert (known["queries"], known["recall_at_1"], known["recall_at_10"]) == (2, 1.0, 1.0)
        assert set(known["ids"]) == set(queries) and all(len(ids) == 2 for ids in known["ids"].values())
        # the same database as its own exact reference: every label it embeds is recalled in full
        vectors = vector_recall(kb, tmp_path / "db", list(queries))
    assert vectors["queries"] == 2 and set(vectors["recall_at_10"]) == {"IMPL", "CHUNK", "ROW"}
    assert set(vectors["recall_at_10"].values()) == {1.0}
