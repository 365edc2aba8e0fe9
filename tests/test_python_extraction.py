"""Tests for Python function and block extraction (``ast`` where it parses the file, else tree-sitter).

Hand-checked fixtures pin exact qualnames, kinds and spans; every parseable
fixture and the standard library are cross-checked against ``ast``.
"""

from __future__ import annotations

import ast
import inspect
import sysconfig
import warnings
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from tree_sitter_language_pack import get_parser

from ingest.extract import extract
from ingest.sources import read_items
from pkg.code.functions import Block, Extraction, Function, iter_blocks
from pkg.code.languages import AST_KINDS

FIXTURES = Path(__file__).parent / "fixtures" / "python"
STDLIB = Path(sysconfig.get_paths()["stdlib"])
STDLIB_TOP_LEVEL_MODULES = 60
STDLIB_PACKAGES = ("json", "email", "asyncio")

_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)

Span = tuple[str, int, int]
Tree = tuple[object, ...]  # (kind, start_line, end_line, *child trees) of a block


# --- ast reference -------------------------------------------------------------


def _ast_start(node: ast.stmt) -> int:
    """First line of a statement, counting decorators."""
    decorators = getattr(node, "decorator_list", None)
    return decorators[0].lineno if decorators else node.lineno


def _is_elif(node: ast.AST, parent: ast.AST, lines: list[str]) -> bool:
    """Whether ``node`` is the ``elif`` arm of the ``if`` statement ``parent``."""
    return (
        isinstance(node, ast.If)
        and isinstance(parent, ast.If)
        and parent.orelse == [node]
        and lines[node.lineno - 1].lstrip().startswith("elif")
    )


def _ast_blocks(function: ast.AST, lines: list[str]) -> list[Span]:
    """Sorted (kind, start, end) of every compound statement inside ``function``."""
    found: list[Span] = []

    def visit(parent: ast.AST) -> None:
        for node in ast.iter_child_nodes(parent):
            kind = AST_KINDS.get(type(node))
            if kind is not None and not _is_elif(node, parent, lines):
                found.append((kind, _ast_start(node), node.end_lineno))
            visit(node)

    visit(function)
    return sorted(found)


def _ast_functions(tree: ast.Module, source: str) -> dict[tuple[str, int, int], list[Span]]:
    """Map (qualname, start, end) of every function to its sorted blocks, per ``ast``."""
    lines = source.split("\n")
    functions: dict[tuple[str, int, int], list[Span]] = {}

    def visit(parent: ast.AST, prefix: str) -> None:
        children = list(ast.iter_child_nodes(parent))
        for index, node in enumerate(children):
            if isinstance(node, _FUNCTION_NODES):
                key = (prefix + node.name, _ast_start(node), node.end_lineno)
                if not _folded(node, children[index + 1 :]):
                    functions[key] = _ast_blocks(node, lines)
                visit(node, f"{prefix}{node.name}.<locals>.")
            elif isinstance(node, ast.ClassDef):
                visit(node, f"{prefix}{node.name}.")
            else:
                visit(node, prefix)

    visit(tree, "")
    return functions


def _folded(node: ast.FunctionDef | ast.AsyncFunctionDef, later: list[ast.AST]) -> bool:
    """An @overload stub with an implementation (a definition of its name, no stub) after it."""

    def stub(n: ast.AST) -> bool:
        return any(ast.unparse(d).rpartition(".")[2] == "overload" for d in getattr(n, "decorator_list", []))

    return stub(node) and any(isinstance(n, _FUNCTION_NODES) and n.name == node.name and not stub(n) for n in later)


def _code_qualnames(source: str) -> Counter[tuple[str, int]]:
    """(co_qualname, co_firstlineno) of every def's code object, per the compiler."""
    found: Counter[tuple[str, int]] = Counter()
    stack = [compile(source, "<fixture>", "exec")]
    while stack:
        code = stack.pop()
        for const in code.co_consts:
            if hasattr(const, "co_qualname"):
                stack.append(const)
                is_function = const.co_flags & inspect.CO_NEWLOCALS  # class bodies lack it
                if is_function and not const.co_name.startswith("<"):  # lambdas, comprehensions
                    found[(const.co_qualname, const.co_firstlineno)] += 1
    return found


def _assert_matches_ast(source: str, extraction: Extraction) -> None:
    """Check functions and their blocks, at any depth, against ``ast``."""
    tree = ast.parse(source)  # these sources are valid Python: a SyntaxError fails the test
    expected = _ast_functions(tree, source)
    assert len(extraction.functions) == sum(isinstance(n, _FUNCTION_NODES) for n in ast.walk(tree))
    got = sorted((f.qualname, f.start_line, f.end_line) for f in extraction.functions)
    assert got == sorted(expected)
    for function in extraction.functions:
        blocks = sorted((b.kind, b.start_line, b.end_line) for b in iter_blocks(function.blocks))
        assert blocks == expected[(function.qualname, function.start_line, function.end_line)]


def _assert_texts_parse(functions: tuple[Function, ...]) -> None:
    """Every function and block text must be valid Python on its own."""
    for function in functions:
        ast.parse(function.text)
        for block in iter_blocks(function.blocks):
            ast.parse(block.text)


@cache
def _extract_file(path: Path) -> tuple[str, Extraction]:
    """Read (with normalised newlines) and extract a file, once per test session."""
    source = path.read_text(encoding="utf-8")
    return source, extract(source, "python")


def _assert_file_matches_ast(path: Path) -> None:
    """Full cross-check of one file: ast, compiler qualnames, standalone texts, no issues."""
    source, extraction = _extract_file(path)
    _assert_matches_ast(source, extraction)
    code_qualnames = _code_qualnames(source)
    assert Counter((f.qualname, f.start_line) for f in extraction.functions) == code_qualnames
    _assert_texts_parse(extraction.functions)
    assert not extraction.issues


def _tree(block: Block) -> Tree:
    """A block and its descendants as nested (kind, start, end, *children) tuples."""
    return (block.kind, block.start_line, block.end_line, *map(_tree, block.children))


def _functions(name: str) -> dict[str, Function]:
    """Extract a fixture and index its functions by qualname (asserting they are unique)."""
    functions = _extract_file(FIXTURES / name)[1].functions
    by_name = {f.qualname: f for f in functions}
    assert len(by_name) == len(functions)
    return by_name


def _summary(function: Function) -> tuple[int, int, bool, tuple[Tree, ...]]:
    """(start, end, is_async, block trees) of a function."""
    blocks = tuple(map(_tree, function.blocks))
    return (function.start_line, function.end_line, function.is_async, blocks)


# --- hand-checked fixtures ------------------------------------------------------


def test_definitions_qualnames_spans_and_blocks() -> None:
    functions = _functions("definitions.py")
    assert list(functions) == [
        "plain",
        "Shape.__init__",
        "Shape.label",
        "Shape.area",
        "Shape.Inner.method",
        "outer",
        "outer.<locals>.helper",
        "outer.<locals>.helper.<locals>.deepest",
        "outer.<locals>.Local.m",
        "outer.<locals>.Local.m.<locals>.inner",
        "outer.<locals>.Local.Deeper.n",
        "decorated",
        "conditional",
    ]
    assert _summary(functions["plain"]) == (5, 6, False, ())
    assert _summary(functions["Shape.label"]) == (20, 22, False, ())
    assert _summary(functions["Shape.area"]) == (24, 29, False, (("if", 28, 28),))
    assert _summary(functions["Shape.Inner.method"]) == (32, 34, False, ())
    assert _summary(functions["outer"]) == (
        37,
        54,
        False,
        (
            ("def", 38, 41, ("def", 39, 40)),
            (
                "class",
                43,
                52,
                ("def", 44, 47, ("def", 45, 46)),
                ("class", 49, 52, ("def", 50, 52, ("for", 52, 52))),
            ),
        ),
    )
    assert _summary(functions["outer.<locals>.Local.Deeper.n"]) == (
        50,
        52,
        False,
        (("for", 52, 52),),
    )
    assert _summary(functions["conditional"]) == (64, 65, False, ())


def test_decorators_are_part_of_the_text() -> None:
    functions = _functions("definitions.py")
    assert functions["decorated"].text == ("@functools.wraps(plain)\n@functools.lru_cache\ndef decorated():\n    pass")
    assert functions["Shape.area"].text == (
        "@functools.lru_cache(\n    maxsize=None,\n)\ndef area(self):\n    if self.sides: return 1\n    return 0"
    )
    assert functions["Shape.area"].blocks[0].text == "if self.sides: return 1"
    deeper = functions["outer"].blocks[1].children[1]
    assert deeper.text.startswith("class Deeper:\n    @staticmethod\n    def n():\n")


def test_control_flow_blocks() -> None:
    functions = _functions("control_flow.py")
    assert list(functions) == ["flow", "else_if", "one_liners"]
    assert _summary(functions["flow"]) == (
        1,
        48,
        False,
        (
            ("if", 2, 10, ("if", 9, 10)),  # elif/else arms belong to the one if block
            ("for", 11, 14, ("if", 12, 12)),  # for/else
            ("while", 15, 18),  # while/else
            ("try", 19, 29, ("with", 20, 21)),  # except/except/else/finally
            ("with", 30, 34),  # parenthesised multi-item with
            ("try", 35, 40),  # except*
            ("match", 41, 47, ("if", 43, 43)),
        ),
    )
    assert _summary(functions["else_if"]) == (51, 57, False, (("if", 52, 57, ("if", 55, 56)),))
    one_liners = functions["one_liners"]  # its trailing comment is not part of it
    assert _summary(one_liners) == (
        60,
        66,
        False,
        (("if", 61, 61), ("for", 62, 62), ("while", 63, 63), ("with", 64, 64), ("try", 65, 66)),
    )
    assert one_liners.text.endswith("    try: pass\n    finally: pass")
    assert functions["else_if"].blocks[0].children[0].text == "if a is None:\n    return 2"


def test_async_definitions_and_blocks() -> None:
    functions = _functions("async_code.py")
    assert list(functions) == ["fetch", "Client.get", "Client.get.<locals>.inner", "Client.sync"]
    assert _summary(functions["fetch"]) == (
        4,
        10,
        True,
        (("async with", 5, 7, ("async for", 6, 7)), ("async with", 8, 9)),
    )
    assert _summary(functions["Client.get"]) == (
        14,
        18,
        True,
        (("async def", 15, 17, ("for", 16, 17)),),
    )
    assert functions["Client.get.<locals>.inner"].is_async
    assert not functions["Client.sync"].is_async


def test_non_ascii_and_multiline_strings() -> None:
    functions = _functions("unicode_strings.py")
    assert list(functions) == ["Café.größe", "Café.after", "関数", "fullwidth"]
    grosse = functions["Café.größe"]
    assert _summary(grosse) == (7, 14, False, (("if", 12, 13),))
    assert grosse.text == (
        'def größe(self, 名前="値"):\n'
        '    text = """\n'
        "zero indentation\n"
        "  partial indentation\n"
        '"""\n'
        '    if 名前 == "値":\n'
        '        return "naïve ☕ " + text\n'
        "    return text"
    )
    assert grosse.blocks[0].text == 'if 名前 == "値":\n    return "naïve ☕ " + text'
    assert _summary(functions["関数"]) == (20, 24, False, (("for", 23, 24),))
    assert _summary(functions["fullwidth"]) == (27, 29, False, ())  # NFKC, like Python


def test_tab_indentation() -> None:
    functions = _functions("tabs.py")
    assert _summary(functions["tabbed"]) == (1, 5, False, (("if", 2, 5),))
    assert _summary(functions["T.m"]) == (9, 11, False, (("while", 10, 11),))
    assert functions["T.m"].text == "def m(self):\n\twhile True:\n\t\tbreak"


def test_syntax_errors_keep_good_functions_and_report_bad_ones() -> None:
    extraction = _extract_file(FIXTURES / "syntax_errors.py")[1]
    kept = [(f.qualname, f.start_line, f.end_line) for f in extraction.functions]
    assert kept == [
        ("good_before", 4, 5),
        ("outer_broken.<locals>.inner_ok", 21, 22),
        ("Holder.method_ok", 33, 34),
        ("good_after", 40, 42),
    ]
    assert [block.kind for block in extraction.functions[-1].blocks] == ["for"]
    issues = {issue.line: issue.message for issue in extraction.issues}
    assert list(issues) == [8, 12, 16, 20, 27, 31, 36]
    assert issues[8] == "function 'broken_signature' does not parse: invalid syntax (line 8)"
    py2 = "does not parse: Missing parentheses in call to"
    assert issues[12].startswith(f"function 'py2_print' {py2} 'print'")
    assert issues[12].endswith("(line 13)")
    assert issues[16].startswith(f"function 'py2_exec' {py2} 'exec'")
    assert issues[16].endswith("(line 17)")
    assert issues[20] == "function 'outer_broken' does not parse: invalid syntax (line 23)"
    assert issues[27] == "unparsable line 27 outside any function"
    assert issues[31] == "unparsable line 31 outside any function"  # in a class, not a function
    assert issues[36] == "function 'Holder.method_broken' does not parse: invalid syntax (line 37)"
    assert all("\n" not in message for message in issues.values())


def test_empty_source() -> None:
    assert extract("", "python") == Extraction(functions=(), issues=())


@pytest.mark.parametrize(
    "source",
    [
        "\x00",
        "def (:\n\x00\n))))",
        "x = " + "(" * 3000,
        "def f():\n    return " + "1 + " * 20000 + "1",  # too deep for ast, like for the compiler
    ],
    ids=["nul", "garbage", "deep-brackets", "deep-expression"],
)
def test_bad_input_is_reported_not_raised(source: str) -> None:
    extraction = extract(source, "python")
    assert not extraction.functions
    assert len(extraction.issues) == 1


VALID_FIXTURES = [path for path in sorted(FIXTURES.glob("*.py")) if path.name != "syntax_errors.py"]


@pytest.mark.parametrize("path", VALID_FIXTURES, ids=lambda p: p.name)
def test_fixture_matches_ast(path: Path) -> None:
    _assert_file_matches_ast(path)


# --- standard library slice -----------------------------------------------------


def _stdlib_files() -> list[Path]:
    """The first top-level stdlib modules plus a few whole packages."""
    files = sorted(STDLIB.glob("*.py"))[:STDLIB_TOP_LEVEL_MODULES]
    for package in STDLIB_PACKAGES:
        files += sorted((STDLIB / package).rglob("*.py"))
    return files


STDLIB_FILES = _stdlib_files()


@pytest.mark.parametrize("path", STDLIB_FILES, ids=lambda p: str(p.relative_to(STDLIB)))
def test_stdlib_matches_ast(path: Path) -> None:
    _assert_file_matches_ast(path)


def test_stdlib_slice_is_substantial() -> None:
    """Guards against a grammar-less tree-sitter install silently finding nothing."""
    assert len(STDLIB_FILES) >= STDLIB_TOP_LEVEL_MODULES
    functions = [f for path in STDLIB_FILES for f in _extract_file(path)[1].functions]
    assert len(functions) > 1000
    assert sum(1 for f in functions for _ in iter_blocks(f.blocks)) > 1000


# --- where tree-sitter and ast disagree, and where ast rejects the file --------------

#: A bracketed line indented less than its block: tree-sitter loses ``T.a``, ``ast`` does not.
MISPARSED = (
    "class T:\n"
    "    def a(self):\n"
    "        def f():\n"
    "            (bar.\n"
    "        baz)\n"
    "        return f\n"
    "\n"
    "    def b(self):\n"
    "        return 1\n"
)


def test_ast_decides_where_tree_sitter_misparses() -> None:
    assert get_parser("python").parse(MISPARSED.encode()).root_node.has_error  # the disagreement is real
    extraction = extract(MISPARSED, "python")
    spans = [(f.qualname, f.start_line, f.end_line) for f in extraction.functions]
    assert spans == [("T.a", 2, 6), ("T.a.<locals>.f", 3, 5), ("T.b", 8, 9)]
    assert extraction.functions[1].text == "def f():\n    (bar.\nbaz)"
    _assert_matches_ast(MISPARSED, extraction)
    _assert_texts_parse(extraction.functions)
    assert not extraction.issues


#: A broken definition that makes ``ast`` reject a whole file, so that tree-sitter extracts it.
BROKEN_TAIL = "\n\ndef broken_tail(:\n    pass\n"


@pytest.mark.parametrize("path", VALID_FIXTURES + STDLIB_FILES[:40], ids=lambda p: p.name)
def test_tree_sitter_finds_what_ast_finds_when_ast_rejects_the_file(path: Path) -> None:
    """The tree walk (the fallback) names, spans and cuts functions and blocks as ``ast`` does."""
    source, exact = _extract_file(path)
    fallback = extract(source + BROKEN_TAIL, "python")
    assert fallback.functions == exact.functions
    assert [(i.line, i.message.split(":")[0]) for i in fallback.issues] == [
        (source.count("\n") + 3, "function 'broken_tail' does not parse")
    ]


def whole_stdlib() -> Iterator[tuple[Path, str, ast.Module]]:
    """Every standard-library module (site-packages left out) that ``ast`` parses: its path, its
    text as a build reads it (its declared encoding, newlines normalised) and its tree."""
    for path in sorted(STDLIB.rglob("*.py")):
        items = [] if "site-packages" in path.relative_to(STDLIB).parts else read_items(path)[0]
        if items and (tree := _quiet_parse(source := items[0].units[0].text)) is not None:
            yield path, source, tree


def _quiet_parse(source: str) -> ast.Module | None:
    """``ast``'s tree of ``source``, without its warnings; None if it rejects the source."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def matches_ast(tree: ast.Module, source: str, extraction: Extraction) -> bool:
    """Whether ``extraction`` holds exactly ``ast``'s functions (qualname, span) with their blocks
    (kind, span) at any depth, and no issues; ``tree`` is ``ast``'s tree of ``source``."""
    got = {
        (f.qualname, f.start_line, f.end_line): sorted(
            (b.kind, b.start_line, b.end_line) for b in iter_blocks(f.blocks)
        )
        for f in extraction.functions
    }
    return len(got) == len(extraction.functions) and got == _ast_functions(tree, source) and not extraction.issues


@pytest.mark.slow  # 55-80 s on 2 busy cores, two thirds of it in the ast reference
def test_whole_stdlib_matches_ast() -> None:
    """Every module ``ast`` parses (bench/bench_stdlib_exactness.py measures the same)."""
    modules, mismatching, qualnames = 0, [], []
    for path, source, tree in whole_stdlib():
        extraction = extract(source, "python")
        modules += 1
        if not matches_ast(tree, source, extraction):
            mismatching.append(str(path.relative_to(STDLIB)))
        if path == STDLIB / "test" / "test_compile.py":  # tree-sitter mis-parses it
            qualnames = [f.qualname for f in extraction.functions]
    assert modules > 1500
    assert mismatching == []
    assert "TestExpressionStackSize.check_stack_size" in qualnames and "check_stack_size" not in qualnames
