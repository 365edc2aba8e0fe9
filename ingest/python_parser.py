"""Extract Python functions and their compound-statement blocks with tree-sitter."""

from __future__ import annotations

import ast
import unicodedata
import warnings

from tree_sitter import Node

from ingest.syntax_tree import dedented, describe, end_line, errors_outside, first_error, parser
from ingest.functions import Block, Extraction, Function, SyntaxIssue

_KINDS = {
    "if_statement": "if",
    "for_statement": "for",
    "while_statement": "while",
    "try_statement": "try",
    "with_statement": "with",
    "match_statement": "match",
    "function_definition": "def",
    "class_definition": "class",
}
_ASYNC_CAPABLE = frozenset({"for_statement", "with_statement", "function_definition"})
# Node types whose children may be statements; expressions are never searched.
_CONTAINERS = frozenset(
    {
        "module",
        "block",
        "decorated_definition",
        "elif_clause",
        "else_clause",
        "except_clause",
        "finally_clause",
        "case_clause",
    }
)


def extract_python(source: str) -> Extraction:
    """Extract every function (any depth) and its blocks from ``\\n``-separated Python source.

    Functions that do not parse are left out and reported as issues, as are
    syntax-error regions outside any function. Never raises for bad code.
    """
    root = parser("python").parse(source.encode("utf-8")).root_node
    walker = _Walker(source.split("\n"))
    walker.blocks_under(root, "")
    functions = sorted(walker.functions, key=lambda f: f.start_line)
    issues = sorted(walker.issues + errors_outside(root, _is_function), key=lambda i: i.line)
    return Extraction(functions=tuple(functions), issues=tuple(issues))


class _Walker:
    """Builds blocks from a tree, collecting valid functions and issues on the way."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.functions: list[Function] = []
        self.issues: list[SyntaxIssue] = []

    def blocks_under(self, node: Node, prefix: str) -> tuple[Block, ...]:
        """Return the blocks whose nearest enclosing compound statement is ``node``.

        ``prefix`` is the qualname prefix of definitions found there.
        """
        blocks: list[Block] = []
        stack = list(reversed(node.children))
        while stack:
            child = stack.pop()
            definition = _definition(child)
            if definition is not None:
                blocks.append(self._block(child, definition, prefix))
            elif child.type in _CONTAINERS or child.has_error:
                stack.extend(reversed(child.children))
        return tuple(blocks)

    def _block(self, node: Node, definition: Node, prefix: str) -> Block:
        """Build the block of compound statement ``definition``, spanning ``node``.

        ``node`` is ``definition`` itself or the decorated definition wrapping it.
        """
        kind = _kind(definition)
        start, end = node.start_point.row + 1, end_line(node)
        qualname = prefix + _name(definition)
        if kind.endswith("def"):
            inner_prefix = qualname + ".<locals>."
        elif kind == "class":
            inner_prefix = qualname + "."
        else:
            inner_prefix = prefix
        children = self.blocks_under(definition, inner_prefix)
        block = Block(kind, start, end, dedented(self.lines[start - 1 : end]), children)
        if kind.endswith("def"):
            self._add_function(node, qualname, block)
        return block

    def _add_function(self, node: Node, qualname: str, block: Block) -> None:
        """Record the function of ``block``, or an issue if it does not parse."""
        error = _ast_error(block.text, block.start_line) or _tree_error(node)
        if error:
            message = f"function {qualname!r} does not parse: {error}"
            self.issues.append(SyntaxIssue(block.start_line, message))
            return
        self.functions.append(Function.of_block(qualname, block))


def _definition(node: Node) -> Node | None:
    """Return the compound statement ``node`` stands for (unwrapping decorators), if any."""
    if node.type == "decorated_definition":
        node = node.child_by_field_name("definition")
        if node is None:
            return None
    return node if node.type in _KINDS else None


def _kind(node: Node) -> str:
    """Return the block kind of a compound statement node, e.g. ``"async for"``."""
    kind = _KINDS[node.type]
    is_async = node.type in _ASYNC_CAPABLE and any(c.type == "async" for c in node.children)
    return f"async {kind}" if is_async else kind


def _name(node: Node) -> str:
    """Return a def/class name as Python sees it (NFKC-normalised), or ``""`` for other nodes."""
    name = node.child_by_field_name("name")
    if name is None or not name.text:
        return ""
    return unicodedata.normalize("NFKC", name.text.decode("utf-8", "replace"))


def _ast_error(text: str, first_line: int) -> str | None:
    """Return why ``ast`` rejects ``text`` (starting at ``first_line``), or None."""
    try:
        _parse_quietly(text)
    except SyntaxError:
        try:
            _parse_quietly("\n" * (first_line - 1) + text)  # again, for absolute line numbers
        except SyntaxError as error:
            reason = " ".join(str(error.msg).split())
            return f"{reason} (line {error.lineno})" if error.lineno else reason
    except (ValueError, RecursionError) as error:
        return " ".join(str(error).split())
    return None


def _parse_quietly(text: str) -> None:
    """``ast.parse`` without warnings (e.g. invalid escape sequences in user code)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ast.parse(text)


def _tree_error(node: Node) -> str | None:
    """Describe the first ERROR or MISSING node under ``node``, or return None."""
    error = first_error(node)
    return None if error is None else f"tree-sitter {describe(error)}"


def _is_function(node: Node) -> bool:
    """Whether ``node`` is a function definition, decorated or not."""
    definition = _definition(node)
    return definition is not None and definition.type == "function_definition"
