"""Helpers shared by the parsers' users: tree-sitter parsers, Python's `ast`, spans, dedented texts,
syntax errors."""

from __future__ import annotations

import ast
import threading
import warnings
from collections.abc import Callable

from tree_sitter import Node, Parser

from pkg.code.functions import SyntaxIssue
from pkg.errors import ConfigError

INDENT_CHARS = " \t\f"


_PARSERS = threading.local()


def parser(grammar: str) -> Parser:
    """Return the calling thread's tree-sitter parser for ``grammar`` (a tree-sitter-language-pack
    name): a parser keeps state while it parses, so threads that parse at once (the queries of
    `pkg serve`) must not share one.

    Raises:
        ConfigError: the language pack has no such grammar.
    """
    parsers: dict[str, Parser] = _PARSERS.__dict__.setdefault("by_grammar", {})
    if grammar not in parsers:
        # Imported on first need: its grammar bindings are ~0.05 s of a cold query that parses no code.
        from tree_sitter_language_pack import get_parser  # noqa: PLC0415

        try:
            parsers[grammar] = get_parser(grammar)  # type: ignore[arg-type]
        except LookupError as error:
            raise ConfigError(f"tree-sitter-language-pack has no parser for language {grammar!r}") from error
    return parsers[grammar]


# CPython 3.11 keeps the AST constructor's recursion depth in state every thread shares: two threads
# parsing at once can fail with "SystemError: AST constructor recursion depth mismatch" (cpython
# gh-106905), as `pkg serve`'s readers did pruning for 8 clients at once. Parsing holds the GIL
# anyway, so taking turns costs nothing.
_AST_TURNS = threading.Lock()


#: What parse_python raises for source it rejects: bad syntax, a NUL byte (ValueError), nesting too deep
#: for the parser (RecursionError, or MemoryError from its stack).
UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def parse_python(text: str) -> ast.Module:
    """``ast.parse`` safe to call from several threads, without the warnings old code gives (invalid
    escape sequences and the like). Raises what ``ast.parse`` raises (UNPARSABLE for rejected source)."""
    with _AST_TURNS, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


def python_tree(text: str) -> ast.Module | None:
    """parse_python's module, None for source ``ast`` rejects: for the readers that take a tree
    parsed once per file and parse it themselves without one."""
    try:
        return parse_python(text)
    except UNPARSABLE:
        return None


def first_line(node: ast.stmt) -> int:
    """A statement's first line, its decorators' included."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


def dedented(lines: list[str]) -> str:
    """Join ``lines``, removing the first line's indentation from every line starting with it.

    Lines without that prefix (inside multi-line strings, continuations, comments)
    are kept as they are, unlike ``textwrap.dedent``.
    """
    first = lines[0]
    indent = first[: len(first) - len(first.lstrip(INDENT_CHARS))]
    return "\n".join(line[len(indent) :] if line.startswith(indent) else line for line in lines)


def end_line(node: Node) -> int:
    """Return the 1-based last line of ``node``'s last real token.

    Trailing comments are ignored (tree-sitter-python lets a block absorb the
    comments after its last statement), as are zero-width error-recovery nodes.
    """
    while True:
        tokens = [c for c in node.children if is_real(c)]
        if not tokens:
            return node.end_point.row + 1
        node = tokens[-1]


def is_real(node: Node) -> bool:
    """Whether ``node`` is neither a comment-like extra nor a zero-width node."""
    return (node.has_error or not node.is_extra) and node.end_byte > node.start_byte


def first_error(node: Node) -> Node | None:
    """Return the first ERROR or MISSING node in ``node``'s subtree, in source order."""
    while node.has_error:
        child = next((c for c in node.children if c.has_error), None)
        if node.is_error or node.is_missing or child is None:
            return node
        node = child
    return None


def describe(node: Node) -> str:
    """Return a one-line description of an ERROR or MISSING node."""
    start, end = node.start_point.row + 1, end_line(node)
    if node.is_missing:
        return f"missing {node.type!r} at line {start}"
    return f"unparsable line {start}" if start == end else f"unparsable lines {start}-{end}"


def errors_outside(root: Node, is_function: Callable[[Node], bool]) -> list[SyntaxIssue]:
    """An issue for each ERROR or MISSING region outside every node ``is_function`` accepts
    (functions report their own errors)."""
    found: list[SyntaxIssue] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if is_function(node):
            continue
        if node.is_error or node.is_missing:
            found.append(SyntaxIssue(node.start_point.row + 1, f"{describe(node)} outside any function"))
        elif node.has_error:
            stack.extend(c for c in node.children if c.has_error)
    return found
