"""Pruning: every candidate is valid code (checked over real standard-library functions), and the
choice follows the query."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ingest.extract import extract
from pkg.code.branches import branch_variants, without_branch
from pkg.code.functions import Block, Function, iter_blocks
from pkg.code.languages import LANGUAGES
from pkg.code.syntax_check import parses, syntax_for
from pkg.code.syntax_tree import parser
from pkg.embedders import Embedder
from pkg.graph import Label, Span
from pkg.stores.base import FunctionRef, NodeContext
from retrieval.prune import prune
from tests.conftest import STDLIB
from tests.test_languages import CASES, FIXTURES


def _function_ref(lang: str) -> FunctionRef:
    return FunctionRef("n", "i", "f", "f", None, 1, 1, lang)


def _context(node: Function | Block, label: Label, lang: str = "python") -> NodeContext:
    children = node.blocks if isinstance(node, Function) else node.children
    spans = tuple(Span(str(i), c.start_line, c.end_line) for i, c in enumerate(children))
    return NodeContext("x", label, node.text, node.start_line, node.end_line, _function_ref(lang), spans)


def test_emptied_suite_gets_pass() -> None:
    code = textwrap.dedent(
        """\
        def f(xs):
            for x in xs:
                if x:
                    print(x)
            return xs
        """
    )
    fn = extract(code, "python").functions[0]
    loop = fn.blocks[0]
    inner = _context(loop, Label.BLOCK)
    result = without_branch(inner.text, inner.start_line, inner.children[0])
    assert result == "for x in xs:\n    pass"
    outer = _context(fn, Label.IMPL)
    assert without_branch(outer.text, outer.start_line, outer.children[0]) == "def f(xs):\n    return xs"


def test_decorated_nested_def_and_if_chain_are_removed_whole() -> None:
    code = textwrap.dedent(
        """\
        def outer(v):
            @staticmethod
            def helper():
                return 1
            if v > 1:
                v = 1
            elif v < 0:
                v = 0
            else:
                v = 2
        """
    )
    fn = extract(code, "python").functions[0]
    ctx = _context(fn, Label.IMPL)
    assert [s.start_line for s in ctx.children] == [2, 5]
    assert without_branch(ctx.text, ctx.start_line, ctx.children[0]) == (
        "def outer(v):\n    if v > 1:\n        v = 1\n    elif v < 0:\n        v = 0\n    else:\n        v = 2"
    )
    assert without_branch(ctx.text, ctx.start_line, ctx.children[1]) == (
        "def outer(v):\n    @staticmethod\n    def helper():\n        return 1"
    )


def _stdlib_functions() -> list[Function]:
    functions: list[Function] = []
    for path in sorted(STDLIB.glob("*.py"))[:80] + sorted((STDLIB / "asyncio").glob("*.py")):
        code = path.read_text(encoding="utf-8", errors="replace")
        try:
            ast.parse(code)
        except SyntaxError:
            continue
        functions.extend(extract(code, "python").functions)
    return functions


def test_every_branch_removal_is_valid_code_on_the_stdlib() -> None:
    functions = _stdlib_functions()
    checked = 0
    for fn in functions:
        nodes: list[NodeContext] = [_context(fn, Label.IMPL)]
        nodes += [_context(b, Label.BLOCK) for b in iter_blocks(fn.blocks)]
        for ctx in nodes:
            for child in ctx.children:
                remaining = without_branch(ctx.text, ctx.start_line, child)
                assert remaining is not None, (fn.qualname, child)
                assert parses(remaining)
                lines = ctx.text.split("\n")
                start, end = child.start_line - ctx.start_line, child.end_line - ctx.start_line
                head, tail = lines[:start], lines[end + 1 :]
                indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
                # the branch's lines and nothing else, or in their place a `pass` at the branch's indent
                assert remaining in ("\n".join(head + tail), "\n".join([*head, f"{indent}pass", *tail])), fn.qualname
                checked += 1
    assert len(functions) > 2000 and checked > 5000


@pytest.fixture()
def two_branch_context() -> NodeContext:
    code = textwrap.dedent(
        """\
        def handle(request, items):
            if request.kind == "sort":
                items.sort(key=lambda item: item.price)
                return items
            with socket.create_connection((request.host, 80)) as conn:
                conn.sendall(request.payload)
                return conn.recv(4096)
        """
    )
    return _context(extract(code, "python").functions[0], Label.IMPL)


def test_prune_drops_the_branch_unrelated_to_the_query(embedder: Embedder, two_branch_context: NodeContext) -> None:
    query = embedder.embed_query("sort the items by price")
    result = prune(two_branch_context, query, embedder)
    assert result.removed is not None and result.removed.start_line == 5
    assert "socket" not in result.text and "sort" in result.text
    assert result.score > result.unpruned_score and parses(result.text)
    query = embedder.embed_query("open a socket connection to the host and send the payload")
    result = prune(two_branch_context, query, embedder)
    assert result.removed is not None and result.removed.start_line == 2 and "socket" in result.text


def test_prune_keeps_the_whole_node_when_nothing_helps(embedder: Embedder, two_branch_context: NodeContext) -> None:
    query = embedder.embed_query(two_branch_context.text)
    result = prune(two_branch_context, query, embedder)
    assert result.removed is None and result.text == two_branch_context.text
    assert result.score == pytest.approx(result.unpruned_score)


# --- other languages: tree-sitter decides validity ---------------------------------------


def _code_nodes(lang: str) -> list[NodeContext]:
    source = (FIXTURES / CASES[lang].file).read_text(encoding="utf-8")
    nodes = []
    for fn in extract(source, lang).functions:
        nodes.append(_context(fn, Label.IMPL, lang))
        nodes += [_context(b, Label.BLOCK, lang) for b in iter_blocks(fn.blocks)]
    return nodes


@pytest.mark.parametrize("lang", sorted(CASES))
def test_every_branch_removal_is_valid_code_in_each_language(lang: str) -> None:
    grammar = parser(LANGUAGES[lang].grammar)
    variants = 0
    for ctx in _code_nodes(lang):
        syntax = syntax_for(ctx.text, lang)
        assert syntax is not None, ctx.text  # every extracted text parses in one of its frames
        found = branch_variants(ctx.text, ctx.start_line, ctx.children, lang)
        assert len(found) == len(ctx.children)  # removing a whole statement never breaks these fixtures
        for remaining, child in found:
            assert syntax.valid(remaining) and len(remaining) < len(ctx.text)
            lines = ctx.text.split("\n")
            del lines[child.start_line - ctx.start_line : child.end_line - ctx.start_line + 1]
            assert remaining == "\n".join(lines)  # the branch's lines and nothing else
            variants += 1
    assert grammar.parse(b"}").root_node.has_error  # the check can say no
    assert variants >= 5


def test_a_removal_that_breaks_the_syntax_is_not_a_candidate() -> None:
    code = "func f(x bool) {\n\tif x {\n\t\ty()\n\t} else {\n\t\tz()\n\t}\n}"
    syntax = syntax_for(code, "go")
    assert syntax is not None
    whole_if = Span("if", 2, 6)
    assert without_branch(code, 1, whole_if, syntax) == "func f(x bool) {\n}"
    assert without_branch(code, 1, Span("if-head", 2, 3), syntax) is None  # leaves "} else {" behind
    assert branch_variants(code, 1, [Span("if-head", 2, 3)], "go") == []


def test_texts_that_do_not_parse_or_languages_without_a_grammar_are_never_pruned() -> None:
    broken = "int f() {\n  if (x) {\n    y();\n  }\n  return 1;\n"  # closing brace lost
    assert syntax_for(broken, "c") is None
    assert branch_variants(broken, 1, [Span("if", 2, 4)], "c") == []
    assert syntax_for("proc f {}", "tcl") is None


def test_prune_drops_the_branch_unrelated_to_the_query_in_java(embedder: Embedder) -> None:
    code = textwrap.dedent(
        """\
        public List<Item> handle(Request request, List<Item> items) throws IOException {
            if (request.kind.equals("sort")) {
                items.sort(Comparator.comparing(Item::price));
                return items;
            }
            try (Socket socket = new Socket(request.host, 80)) {
                socket.getOutputStream().write(request.payload);
                return read(socket.getInputStream());
            }
        }
        """
    )
    fn = extract(f"class Service {{\n{code}}}\n", "java").functions[0]
    ctx = _context(fn, Label.IMPL, "java")
    assert len(ctx.children) == 2
    result = prune(ctx, embedder.embed_query("sort the items by price"), embedder)
    assert result.removed is not None and result.removed.start_line == ctx.children[1].start_line
    assert "Socket" not in result.text and "sort" in result.text
    assert result.score > result.unpruned_score
