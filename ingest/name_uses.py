"""The names a Python syntax tree uses, with their lines: what definitions context resolves for the code
at hand (retrieval.definitions). A build records a whole file's (its FILE node's ``uses``), so
that asking for the names of an unchanged indexed file parses nothing: on the 20k-function standard-library
graph, parsing and walking one of its 5,000-line test modules was two thirds of the slowest calls.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from typing import NamedTuple

from ingest.python_types import child_nodes
from pkg.code.syntax_tree import first_line


class NameUse(NamedTuple):
    """A dotted name the code loads (`f`, `z.f`, `self.m`, `super().m`) on a line; `binding` marks an
    import binding the name, not a use of it."""

    dotted: str
    line: int
    binding: bool = False


def python_uses(
    tree: ast.AST, window: tuple[int, int] | None = None, children: dict[int, list[ast.AST]] | None = None
) -> list[NameUse]:
    """The dotted names the code loads (a chain once, not its parts), in the syntax tree's order, in the
    statements that reach into the window (every one for None); an import counts as a use of what it
    binds, on its own line. `children`: each node's children by id, when a walk listed them already (a
    third less time at build)."""
    below: Callable[[ast.AST], list[ast.AST]] = child_nodes if children is None else lambda n: children[id(n)]
    found: list[NameUse] = []
    pending = below(tree)[::-1]  # a stack: depth first, each node's children in their order
    while pending:
        node = pending.pop()
        if window and isinstance(node, ast.stmt) and not overlaps(node, window):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound = (a.asname or a.name.partition(".")[0] for a in node.names if a.name != "*")
            found += [NameUse(name, node.lineno, True) for name in bound]
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and (text := dotted_name(node)):
            found.append(NameUse(text, node.lineno))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found.append(NameUse(node.id, node.lineno))
        else:
            pending += below(node)[::-1]
    return found


def overlaps(statement: ast.stmt, window: tuple[int, int]) -> bool:
    """Whether the statement (its decorators included) reaches into the window of lines."""
    return first_line(statement) <= window[1] and (statement.end_lineno or statement.lineno) >= window[0]


def dotted_name(node: ast.Attribute) -> str | None:
    """An attribute chain on a name (`a.b.c`) or on `super()`; None for other receivers."""
    parts = [node.attr]
    value = node.value
    while isinstance(value, ast.Attribute):
        parts.insert(0, value.attr)
        value = value.value
    if isinstance(value, ast.Name):
        return ".".join([value.id, *parts])
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
        return ".".join(["super()", *parts])
    return None


def encoded(uses: list[NameUse]) -> str:
    """The uses as a FILE node keeps them, JSON: ``[dotted, line]``, ``[dotted, line, 1]`` for a binding."""
    rows = [[u.dotted, u.line, 1] if u.binding else [u.dotted, u.line] for u in uses]
    return json.dumps(rows, separators=(",", ":"))


def decoded(text: str) -> list[NameUse]:
    """The uses `encoded` wrote."""
    return [NameUse(str(row[0]), int(row[1]), len(row) > 2) for row in json.loads(text)]
