"""The scale benchmark's corpus choice, query choice and answer comparison, on small real trees."""

from __future__ import annotations

from pathlib import Path

from bench.bench_scale import compare_answers, real_queries
from bench.corpora import project_functions, site_packages_corpus


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
    assert real_queries(files, 5) == [
        "Return the number given, unchanged.",
        "Parse a header line into a name and a value.",
    ]
    assert real_queries(files, 1) == ["Return the number given, unchanged."]


def test_compare_answers_tells_ids_from_pruned_texts() -> None:
    mine = {"func:q1": [["a", "h1", 0]], "func:q2": [["b", "h2", 0]], "block:q3": [["c", "h3", 5]]}
    theirs = {"func:q1": [["a", "h1", 0]], "func:q2": [["b", "hX", 9]], "block:q3": [["d", "h3", 5]], "only": []}
    compared = compare_answers(mine, theirs)
    assert (compared["queries"], compared["same_ids"], compared["same_pruned_texts"]) == (3, 2, 1)
    assert [d["query"] for d in compared["differ"]] == ["block:q3", "func:q2"]
