"""Pruning: every candidate is valid code (checked over real standard-library functions), and the
choice follows the query."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ingest.functions import Block, Function, iter_blocks
from ingest.python_parser import extract_python
from pkg.embedders import Embedder
from pkg.graph import Label
from pkg.stores.base import FunctionRef, NodeContext, Span
from retrieval.prune import parses, prune, without_branch
from tests.conftest import STDLIB

_FN = FunctionRef("n", "i", "f", "f.py", None, 1, 1)


def _context(node: Function | Block, label: Label) -> NodeContext:
    children = node.blocks if isinstance(node, Function) else node.children
    spans = tuple(Span(str(i), c.start_line, c.end_line) for i, c in enumerate(children))
    return NodeContext("x", label, node.text, node.start_line, node.end_line, _FN, spans)


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
    fn = extract_python(code).functions[0]
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
    fn = extract_python(code).functions[0]
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
        functions.extend(extract_python(code).functions)
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
                assert len(remaining) < len(ctx.text)
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
    return _context(extract_python(code).functions[0], Label.IMPL)


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
