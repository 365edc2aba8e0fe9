"""Tests for tree-sitter function and block extraction from JS, TS, Java, Go, Rust, C, C++ and C#.

Hand-checked fixtures pin qualnames, counts and block spans; broken fixtures pin issues.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from tree_sitter_language_pack import get_language, get_parser

from ingest.extract import extract
from pkg.code.functions import Block, Extraction, Function, iter_blocks
from pkg.code.languages import EXTENSIONS, LANGUAGES, LanguageSpec, language_for

FIXTURES = Path(__file__).parent / "fixtures" / "languages"

Tree = tuple[object, ...]  # (kind, start_line, end_line, *child trees) of a block


@dataclass(frozen=True)
class Case:
    """What one fixture must give.

    Every qualname in order, the total number of blocks, and (start, end, block
    trees) of a few hand-checked functions.
    """

    file: str
    qualnames: tuple[str, ...]
    blocks: int
    checked: dict[str, tuple[int, int, tuple[Tree, ...]]]


CASES = {
    "javascript": Case(
        "sample.js",
        (
            "parseLine",
            "Inventory.constructor",
            "Inventory.size",
            "Inventory.total",
            "Inventory.restock",
            "Inventory.describe",
            "load",
            "load.<locals>.parse",
            "countdown",
            "format",
            "report",
            "report.<locals>.header",
        ),
        12,
        {
            "parseLine": (4, 13, (("if", 6, 12),)),  # else if / else belong to the one block
            "load": (56, 71, (("try", 57, 70, ("def", 60, 63)),)),
            # the if of an anonymous callback belongs to the enclosing function
            "report": (86, 97, (("def", 87, 89), ("if", 92, 94))),
        },
    ),
    "typescript": Case(
        "sample.ts",
        (
            "Scheduling.priority",
            "logged",
            "Scheduler.constructor",
            "Scheduler.add",
            "Scheduler.drain",
            "Scheduler.onTimeout",
            "FifoScheduler.pick",
            "FifoScheduler.describe",
            "summarize",
            "summarize.<locals>.bump",
        ),
        10,
        {
            "Scheduler.add": (25, 32, (("if", 27, 29),)),  # from its decorator on
            "Scheduler.drain": (34, 46, (("while", 36, 44, ("try", 38, 43)),)),
            "summarize": (
                68,
                92,
                (
                    ("def", 70, 72),
                    ("for in", 73, 81, ("if", 74, 80)),
                    ("for", 82, 84),
                    ("for in", 85, 87),
                    ("do", 88, 90),
                ),
            ),
        },
    ),
    "java": Case(
        "Sample.java",
        (
            "Sample.isShort",
            "Sample.Sample",
            "Sample.toString",
            "Sample.count",
            "Sample.shelf",
            "Sample.sortTitles",
            "Sample.sortTitles.<locals>.compare",  # in an anonymous class
            "Sample.readFirst",
            "Sample.drain",
            "Sample.drain.<locals>.reset",
            "Sample.Rule.negate",
            "Sample.Kind.label",
            "Sample.Loan.Loan",
        ),
        13,
        {
            "Sample.count": (24, 36, (("for", 26, 34, ("if", 27, 33)),)),
            "Sample.readFirst": (58, 66, (("try", 59, 65),)),  # try-with-resources
            "Sample.drain": (
                68,
                88,
                (
                    ("while", 70, 73),
                    ("do", 74, 76),
                    ("synchronized", 77, 86, ("def", 78, 84, ("try", 79, 83))),
                ),
            ),
        },
    ),
    "go": Case(
        "sample.go",
        (
            "New",
            "Cache.Get",
            "Cache.Sweep",
            "Cache.Len",
            "Backoff",
            "Describe",
            "Watch",
            "Watch.<locals>.step",
        ),
        14,
        {
            "Backoff": (52, 65, (("for", 54, 56), ("for", 58, 60), ("for", 61, 63))),
            "Cache.Sweep": (39, 48, (("for in", 41, 46, ("if", 42, 45)),)),
            "Watch": (
                82,
                102,
                (
                    ("def", 84, 88, ("if", 85, 87)),
                    ("if", 90, 92),  # in the deferred anonymous func
                    ("for", 94, 101, ("select", 95, 100)),
                ),
            ),
        },
    ),
    "rust": Case(
        "sample.rs",
        (
            "Describe.describe",
            "Stack.new",
            "Stack.push",
            "Stack.drain_all",
            "Stack.fmt",
            "Stack.name",
            "classify",
            "totals",
            "totals.<locals>.double",
            "totals.<locals>.helper",
            "io.fetch",
        ),
        13,
        {
            "Stack.push": (23, 33, (("if", 25, 32),)),  # from its #[must_use] on
            "classify": (56, 68, (("match", 57, 67, ("if", 61, 65)),)),
            "totals": (
                70,
                93,
                (
                    ("for in", 72, 74),
                    ("loop", 76, 81, ("if", 78, 80)),
                    ("while", 83, 85),
                    ("def", 86, 88, ("if", 87, 87)),
                    ("def", 89, 91),
                ),
            ),
        },
    ),
    "c": Case(
        "sample.c",
        ("clamp", "ring_new", "ring_push", "ring_sum", "ring_state", "pick_op", "main"),
        9,
        {
            "clamp": (13, 22, (("if", 15, 21),)),
            "ring_sum": (42, 56, (("for", 46, 48), ("while", 49, 51), ("do", 52, 54))),
            "ring_state": (58, 71, (("switch", 60, 70, ("if", 66, 68)),)),
        },
    ),
    "cpp": Case(
        "sample.cpp",
        (
            "geo.Point.operator+",
            "geo.Shape.Shape",
            "geo.Shape.name",
            "geo.Polygon.Builder.add",
            "geo.Polygon.Polygon",  # out-of-class Polygon::Polygon
            "geo.Polygon.area",
            "largest",
            "countdown",  # anonymous namespace
            "classify",
            "classify.<locals>.describe",
        ),
        10,
        {
            "largest": (66, 79, (("for in", 69, 77, ("if", 70, 76)),)),  # from template <…>
            "classify": (
                93,
                107,
                (("def", 94, 101, ("switch", 95, 100)), ("try", 102, 106)),
            ),
        },
    ),
    "csharp": Case(
        "Sample.cs",
        (
            "Shop.Orders.Order.Order",
            "Shop.Orders.Order.Count.get",
            "Shop.Orders.Order.Total",
            "Shop.Orders.Order.Add",
            "Shop.Orders.Order.Sum",
            "Shop.Orders.Order.Status",
            "Shop.Orders.Order.SaveAsync",
            "Shop.Orders.Order.Large",
            "Shop.Orders.Order.Large.<locals>.IsLarge",
            "Shop.Orders.Order.Large.<locals>.cost",
        ),
        14,
        {
            "Shop.Orders.Order.Add": (29, 46, (("lock", 31, 45, ("if", 33, 44)),)),
            "Shop.Orders.Order.Status": (58, 69, (("switch", 60, 68, ("switch", 67, 67)),)),
            "Shop.Orders.Order.SaveAsync": (
                71,
                102,
                (
                    ("using", 74, 81, ("for", 76, 80)),
                    ("try", 82, 100, ("while", 84, 87), ("do", 88, 91)),
                ),
            ),
        },
    ),
}

#: (file, kept qualnames, line of the broken function, its one-line issue)
BROKEN = {
    "javascript": ("broken.js", ("good", "alsoGood"), 5, "'bad' does not parse: unparsable line 6"),
    "typescript": (
        "broken.ts",
        ("good", "Holder.fine"),
        5,
        "'bad' does not parse: unparsable line 6",
    ),
    "java": (
        "Broken.java",
        ("Broken.good", "Broken.alsoGood"),
        6,
        "'Broken.bad' does not parse: unparsable line 7",
    ),
    "go": (
        "broken.go",
        ("Good", "AlsoGood"),
        7,
        "'Bad' does not parse: missing 'identifier' at line 8",
    ),
    "rust": (
        "broken.rs",
        ("good", "also_good"),
        5,
        "'bad' does not parse: missing 'identifier' at line 6",
    ),
    "c": (
        "broken.c",
        ("good", "also_good"),
        6,
        "'bad' does not parse: missing 'identifier' at line 8",
    ),
    "cpp": (
        "broken.cpp",
        ("ok.good", "Holder.fine"),
        7,
        "'bad' does not parse: missing 'identifier' at line 8",
    ),
    "csharp": (
        "Broken.cs",
        ("Demo.Broken.Good", "Demo.Broken.AlsoGood"),
        10,
        "'Demo.Broken.Bad' does not parse: unparsable line 12",
    ),
}

#: Contexts a function text may need to parse in on its own (methods, accessors, closures).
WRAPPERS = {
    "javascript": ("class W {\n%s\n}",),
    "typescript": ("class W {\n%s\n}",),
    "java": ("class W {\n%s\n}", "record W() {\n%s\n}"),
    "go": ("func w() {\n%s\n}",),
    "rust": ("fn w() {\n%s\n}",),
    "c": (),
    "cpp": ("struct W {\n%s\n};",),
    "csharp": ("class W {\n%s\n}", "class W { int P {\n%s\n} }"),
}


@cache
def _extract(lang: str, name: str) -> Extraction:
    """Extract a fixture once per session."""
    return extract((FIXTURES / name).read_text(encoding="utf-8"), lang)


def _tree(block: Block) -> Tree:
    """A block and its descendants as nested (kind, start, end, *children) tuples."""
    return (block.kind, block.start_line, block.end_line, *map(_tree, block.children))


def _block_count(functions: tuple[Function, ...]) -> int:
    """Blocks of all functions at any depth; a nested function's count for it and its encloser."""
    return sum(1 for function in functions for _ in iter_blocks(function.blocks))


def _has_error(text: str, lang: str) -> bool:
    """Whether ``text`` parses with ERROR or MISSING nodes in ``lang``'s grammar."""
    return get_parser(lang).parse(text.encode("utf-8")).root_node.has_error  # type: ignore[arg-type]


# --- hand-checked fixtures ------------------------------------------------------


@pytest.mark.parametrize("lang", sorted(CASES))
def test_qualnames_counts_and_blocks(lang: str) -> None:
    case = CASES[lang]
    extraction = _extract(lang, case.file)
    assert extraction.functions, "no functions: is the grammar missing from the language pack?"
    assert tuple(f.qualname for f in extraction.functions) == case.qualnames
    assert len(extraction.functions) == len(case.qualnames)
    assert _block_count(extraction.functions) == case.blocks
    by_name = {f.qualname: f for f in extraction.functions}
    for qualname, expected in case.checked.items():
        function = by_name[qualname]
        got = (function.start_line, function.end_line, tuple(map(_tree, function.blocks)))
        assert got == expected, qualname
    assert not extraction.issues


@pytest.mark.parametrize("lang", sorted(CASES))
def test_texts_reparse_without_errors(lang: str) -> None:
    functions = _extract(lang, CASES[lang].file).functions
    for function in functions:
        contexts = [function.text] + [w % function.text for w in WRAPPERS[lang]]
        assert not all(_has_error(text, lang) for text in contexts), function.qualname


def test_texts_are_dedented_source_lines_with_decorators() -> None:
    by_name = {f.qualname: f for f in _extract("typescript", "sample.ts").functions}
    assert by_name["Scheduler.add"].text.startswith("@logged\nadd(task: T): boolean {\n  if (")
    assert by_name["summarize.<locals>.bump"].text == (
        "const bump = (key: string): void => {\n  counts.set(key, (counts.get(key) ?? 0) + 1);\n};"
    )
    push = next(f for f in _extract("rust", "sample.rs").functions if f.qualname == "Stack.push")
    assert push.text.startswith("#[must_use]\npub fn push(&mut self, item: T) -> bool {\n    if ")
    assert push.blocks[0].text.endswith("\n} else {\n    self.items.push(item);\n    true\n}")
    js = {f.qualname: f for f in _extract("javascript", "sample.js").functions}
    assert js["Inventory.size"].text == "get size() {\n  return this.#items.size;\n}"
    cpp = {f.qualname: f for f in _extract("cpp", "sample.cpp").functions}
    assert cpp["largest"].text.startswith("template <typename T>\nT largest(")
    go = {f.qualname: f for f in _extract("go", "sample.go").functions}
    assert go["Cache.Len"].text == "func (c Cache[V]) Len() int { return len(c.entries) }"


def test_async_functions() -> None:
    found = {lang: [f.qualname for f in _extract(lang, CASES[lang].file).functions if f.is_async] for lang in CASES}
    assert found == {
        "javascript": ["load"],
        "typescript": ["Scheduler.drain"],
        "java": [],
        "go": [],
        "rust": ["io.fetch"],
        "c": [],
        "cpp": [],
        "csharp": ["Shop.Orders.Order.SaveAsync"],
    }


# --- syntax errors and bad input ----------------------------------------------------


@pytest.mark.parametrize("lang", sorted(BROKEN))
def test_broken_function_is_reported_and_others_kept(lang: str) -> None:
    name, kept, line, message = BROKEN[lang]
    extraction = _extract(lang, name)
    assert tuple(f.qualname for f in extraction.functions) == kept
    assert [(i.line, i.message) for i in extraction.issues] == [(line, f"function {message}")]


def test_errors_outside_functions_are_reported() -> None:
    extraction = extract("int ok(void) { return 1; }\nint x = ;\n", "c")
    assert [f.qualname for f in extraction.functions] == ["ok"]
    assert [(i.line, i.message) for i in extraction.issues] == [
        (2, "missing 'identifier' at line 2 outside any function")
    ]


@pytest.mark.parametrize("lang", sorted(LANGUAGES))
@pytest.mark.parametrize(
    "source",
    ["", "\x00", "}}}{{{ ((( ;;; => ->", "f(" * 3000, "\ud800"],
    ids=["empty", "nul", "garbage", "deep-brackets", "lone-surrogate"],
)
def test_bad_input_never_raises(lang: str, source: str) -> None:
    extraction = extract(source, lang)
    assert not extraction.functions
    assert all("\n" not in issue.message for issue in extraction.issues)


def test_too_deep_nesting_is_reported_not_raised() -> None:
    source = "void f(void) {" + "if (x) {" * 2000 + "}" * 2000 + "}"
    extraction = extract(source, "c")
    assert extraction.functions == ()
    assert [(i.line, i.message) for i in extraction.issues] == [(1, "blocks nested too deeply")]


def test_unknown_language_is_an_error() -> None:
    with pytest.raises(ValueError, match="unsupported language 'cobol'"):
        extract("", "cobol")


# --- language table ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "lang"),
    [
        ("app.js", "javascript"),
        ("lib.mjs", "javascript"),
        ("cfg.cjs", "javascript"),
        ("View.jsx", "javascript"),
        ("main.ts", "typescript"),
        ("View.tsx", "tsx"),
        ("Main.java", "java"),
        ("main.go", "go"),
        ("lib.rs", "rust"),
        ("ring.c", "c"),
        ("ring.h", "c"),
        ("a.cc", "cpp"),
        ("a.cpp", "cpp"),
        ("a.cxx", "cpp"),
        ("a.hpp", "cpp"),
        ("a.hh", "cpp"),
        ("a.hxx", "cpp"),
        ("Program.cs", "csharp"),
        ("setup.py", "python"),
    ],
)
def test_language_for_known_extensions(name: str, lang: str) -> None:
    assert language_for(Path("src") / name) == lang


@pytest.mark.parametrize("name", ["notes.txt", "Makefile", "stubs.pyi", "a.C", "archive.tar.gz"])
def test_language_for_unknown_extensions(name: str) -> None:
    assert language_for(Path(name)) is None


def test_every_language_has_a_fixture_and_a_spec() -> None:
    assert set(EXTENSIONS.values()) == set(LANGUAGES)
    # Python's fixtures are in tests/fixtures/python (tests/test_python_extraction.py)
    assert set(CASES) == set(BROKEN) == set(WRAPPERS) == set(LANGUAGES) - {"tsx", "python"}


def _spec_node_types(spec: LanguageSpec) -> set[str]:
    """Every node type a spec names."""
    return set().union(
        spec.functions,
        spec.containers,
        spec.blocks,
        spec.binders,
        spec.binder_lists,
        spec.names,
        spec.leading,
        spec.wrappers,
        spec.file_scopes,
    )


@pytest.mark.parametrize("lang", sorted(LANGUAGES))
def test_spec_names_only_real_node_types_and_fields(lang: str) -> None:
    """Guards against typos: a misspelt node type would silently match nothing."""
    spec = LANGUAGES[lang]
    language = get_language(spec.grammar)  # type: ignore[arg-type]
    types = [t for t in sorted(_spec_node_types(spec)) if language.id_for_node_kind(t, True) is None]
    fields = [f for f in spec.binders.values() if language.field_id_for_name(f) is None]
    assert (types, fields) == ([], [])


def test_tsx_shares_the_typescript_rules() -> None:
    source = "const View = (props: Props) => {\n  if (props.on) {\n    return <b>{props.x}</b>;\n  }\n};"
    extraction = extract(source, "tsx")
    assert [(f.qualname, f.start_line, f.end_line) for f in extraction.functions] == [("View", 1, 5)]
    assert [_tree(b) for b in extraction.functions[0].blocks] == [("if", 2, 4)]
