"""Tests for the node listing the Python type facts and structure reader share (ingest.python_types)."""

from __future__ import annotations

import ast
import sysconfig
from pathlib import Path

import pytest

from ingest.python_types import child_nodes, walk

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# modules with every kind of node between them: match statements (re._parser), f-strings, async,
# decorators, star-args, walrus, global/nonlocal, imports with aliases, try/except* (asyncio.taskgroups)
MODULES = ("re/_parser.py", "typing.py", "asyncio/base_events.py", "asyncio/taskgroups.py", "dataclasses.py", "ast.py")
_SINGLETONS = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)


@pytest.mark.parametrize("module", MODULES)
def test_child_nodes_lists_what_ast_does_but_the_operator_and_context_singletons(module: str) -> None:
    tree = ast.parse((STDLIB / module).read_text(encoding="utf-8"))
    nodes = walk(tree).nodes
    assert {type(node) for node in nodes} >= {ast.Name, ast.Attribute, ast.Call, ast.Constant}
    for node in nodes:
        expected = [child for child in ast.iter_child_nodes(node) if not isinstance(child, _SINGLETONS)]
        assert child_nodes(node) == expected, ast.dump(node)[:200]
    expected_count = sum(1 for node in ast.walk(tree) if not isinstance(node, _SINGLETONS))
    assert len(nodes) == expected_count
