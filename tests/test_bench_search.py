"""The code-search benchmark's corpus: docstrings stripped as CodeSearchNet strips them, names as PKG
gives them, packages taken in turn, queries from held-out packages only."""

from __future__ import annotations

import ast
from argparse import Namespace
from dataclasses import replace
from pathlib import Path

from bench.bench_search import (
    NO_BLOCKS,
    BlockLevers,
    Function,
    choose_queries,
    held_out,
    interleaved_files,
    make_corpus,
    paired,
    paired_with,
    strip_docstrings,
    tune_settings,
    with_name_words,
)
from ingest.extract import extract
from ingest.parse import parse_corpus
from pkg.embedders.tuning import FAST_PROFILE_TUNING, TuneSettings
from pkg.graph import Label
from tests.conftest import STDLIB


def test_docstrings_go_and_the_code_stays_valid() -> None:
    source = (
        "def f(x):\n"
        '    """Return x.\n\n    More about it.\n    """\n'
        "    return x\n\n"
        "class A:\n"
        "    def only_doc(self):\n"
        "        'Nothing else.'\n"
        '    def inline(self): """Same line."""\n'
        "    async def outer(self):\n"
        '        """Outer one."""  # a comment after it\n'
        "        def inner():\n"
        '            """Inner one."""\n'
        "            return 1\n"
        "        return inner\n"
    )
    stripped, summaries = strip_docstrings(source) or ("", {})
    assert summaries == {
        "f": "Return x.",
        "A.only_doc": "Nothing else.",
        "A.outer": "Outer one.",
        "A.outer.<locals>.inner": "Inner one.",
    }  # A.inline's docstring shares its line with the def: kept, and never a query
    assert '"""Same line."""' in stripped and "Return x" not in stripped and "Inner one" not in stripped
    tree = ast.parse(stripped)
    only_doc = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "only_doc")
    assert isinstance(only_doc.body[0], ast.Pass)
    assert strip_docstrings("def broken(:\n") is None


def test_the_benchmarks_names_are_the_extractors_names() -> None:
    for name in ("shlex.py", "fractions.py", "textwrap.py", "difflib.py"):
        stripped, summaries = strip_docstrings((STDLIB / name).read_text(encoding="utf-8")) or ("", {})
        extracted = {function.qualname for function in extract(stripped, "python").functions}
        assert summaries and set(summaries) <= extracted, name


def test_the_name_words_lever_leads_each_body_with_the_name_in_words() -> None:
    source = "class A:\n    def parse_json2Dict(self, x):\n        return x\n\n    def one(self): return 1\n"
    assert with_name_words(source) == (
        "class A:\n    def parse_json2Dict(self, x):\n        # parse json2 dict\n        return x\n\n"
        "    def one(self): return 1\n"
    )
    signature_on_lines = "def f(\n    x,\n) -> int: ...\n"
    assert with_name_words(signature_on_lines) == signature_on_lines
    shlex = with_name_words((STDLIB / "shlex.py").read_text(encoding="utf-8"))
    assert "    # read token\n" in shlex and ast.parse(shlex)


def test_the_lever_keeps_the_queries_it_is_measured_on(tmp_path: Path) -> None:
    (tmp_path / "site" / "pkg").mkdir(parents=True)
    (tmp_path / "site" / "pkg" / "m.py").write_text(
        'def two_lines(x):\n    """Return x plus one."""\n    return x + 1\n'
    )
    plain, _ = make_corpus(10, tmp_path / "plain", root=tmp_path / "site")
    worded, _ = make_corpus(10, tmp_path / "worded", name_words=True, root=tmp_path / "site")
    assert [f.lines for f in plain] == [f.lines for f in worded] == [2]
    assert "# two lines" in (tmp_path / "worded" / "pkg" / "m.py").read_text()


def test_files_come_package_by_package_in_turn(tmp_path: Path) -> None:
    for relative in ("beta/a.py", "beta/b.py", "beta/c.py", "alpha/x.py", "alpha/tests/t.py", "gamma.py"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("def f():\n    return 1\n")
    order = [str(p.relative_to(tmp_path)) for p in interleaved_files(tmp_path)]
    assert order == ["alpha/x.py", "beta/a.py", "gamma.py", "beta/b.py", "beta/c.py"]


def test_queries_come_from_held_out_packages_and_are_unambiguous(tmp_path: Path) -> None:
    packages = [f"package{i}" for i in range(12)]
    kept, tuned = next(p for p in packages if held_out(p)), next(p for p in packages if not held_out(p))

    def function(package: str, name: str, summary: str, lines: int = 5) -> Function:
        return Function(tmp_path / package / "m.py", name, summary, lines, package)

    functions = [
        function(kept, "parse_header", "Parse one header line into a pair."),
        function(tuned, "parse_body", "Parse the body of a message."),
        function(kept, "short", "Return the first item.", lines=2),  # under three lines
        function(kept, "test_parse", "Check that parsing works well."),  # a test
        function(kept, "__repr__", "Show the object as text here."),  # a dunder
        function(kept, "two", "Too short"),  # two words
        function(kept, "first", "Return the same summary twice."),
        function(tuned, "second", "Return the same summary twice."),  # the first one is ambiguous
    ]
    assert [q.qualname for q in choose_queries(functions, len(functions), 10)] == ["parse_header"]
    assert choose_queries(functions, 1, 10) == functions[:1]


def test_the_block_levers_leave_out_short_blocks_and_head_the_rest_with_the_signature(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "def scale(values, factor=2):\n"
        "    if not values:\n"
        "        return []\n"
        "    out = []\n"
        "    for v in values:\n"
        "        if v is None:\n"
        "            continue\n"
        "        out.append(v * factor)\n"
        "    return out\n"
    )
    corpus = parse_corpus([tmp_path], parts=("functions",))

    def blocks(levers: BlockLevers) -> tuple[list[str], int]:
        graph = levers.apply(corpus).sources[0].graph
        ids = {n.id for n in graph.nodes if n.label is Label.BLOCK}
        texts = sorted(str(n.props["text"]) for n in graph.nodes if n.label is Label.BLOCK)
        return texts, sum(1 for e in graph.edges if e.src in ids or e.dst in ids)

    texts, edges = blocks(BlockLevers())
    assert [t.split("\n")[0] for t in texts] == ["for v in values:", "if not values:", "if v is None:"] and edges == 3
    texts, edges = blocks(BlockLevers(min_lines=3))  # the two-line ifs go, with their edges
    assert [t.split("\n")[0] for t in texts] == ["for v in values:"] and edges == 1
    texts, _ = blocks(BlockLevers(min_lines=3, header=True))
    assert texts == [
        "def scale(values, factor=2):\nfor v in values:\n    if v is None:\n        continue\n"
        "    out.append(v * factor)"
    ]
    assert blocks(NO_BLOCKS) == ([], 0)


def test_runs_are_paired_query_by_query_with_counts_of_the_queries_helped_and_hurt() -> None:
    lever, baseline = [1, 2, None, 1, 5], [2, 2, 3, 1, None]
    measured = paired(lever, baseline)
    assert measured["recall_at_1"]["difference"] == 1 / 5  # query 1 up; query 4 first in both
    assert (measured["recall_at_1"]["helped"], measured["recall_at_1"]["hurt"]) == (1, 0)
    assert (measured["recall_at_10"]["helped"], measured["recall_at_10"]["hurt"]) == (1, 1)  # queries 5 and 3
    assert measured["mrr_at_10"]["difference"] == (0.5 + 0 - 1 / 3 + 0 + 0.2) / 5
    low, high = measured["recall_at_1"]["interval_95"]
    assert 0 <= low <= 0.2 <= high <= 0.6
    runs = {"minilm": {"modes": {"func": {"ranks": baseline}}}, "tuned:k": {"modes": {"func": {"ranks": lever}}}}
    assert paired_with(runs, ("minilm", "func")) == {"tuned:k/func": measured}
    assert paired_with(runs, ("static", "func")) == {}


def test_the_fast_profiles_teacher_is_tuned_as_pkg_tune_tunes_it_unless_told_otherwise() -> None:
    given = {"tune_pairs": 100, "tune_epochs": 2, "tune_learning_rate": 1e-4, "tune_no_hard_negatives": False}
    args = Namespace(**given, tune_max_tokens=None, tune_frozen_layers=None)
    assert tune_settings(args, TuneSettings()) == TuneSettings(max_pairs=100, epochs=2)
    assert tune_settings(args, FAST_PROFILE_TUNING) == replace(FAST_PROFILE_TUNING, max_pairs=100, epochs=2)
    told = Namespace(**given, tune_max_tokens=96, tune_frozen_layers=None)
    assert tune_settings(told, FAST_PROFILE_TUNING).max_tokens == 96 == tune_settings(told, TuneSettings()).max_tokens
    assert tune_settings(told, FAST_PROFILE_TUNING).frozen_layers == FAST_PROFILE_TUNING.frozen_layers
