"""A function's signature, without its body: what a caller needs to know to call it.

For Python it is read with `ast`: the `def` line(s) as written, annotations included, and the first
paragraph of the docstring. For the other languages it is tree-sitter's function node up to its body
(a leading doc comment sits outside the function's text, which starts at the declaration, so it is
not there to keep).
"""

from __future__ import annotations

import ast

from tree_sitter import Node

from pkg.code.languages import LANGUAGES, LanguageSpec
from pkg.code.syntax_tree import parse_python, parser

PYTHON = "python"


def signature(text: str, lang: str) -> str:
    """The signature of the function whose source is `text`, in `lang` ("python" or a key of
    `pkg.code.languages.LANGUAGES`); its first line when it cannot be read as a function."""
    found = _python_signature(text) if lang == PYTHON else _tree_sitter_signature(text, LANGUAGES.get(lang))
    return found if found is not None else _first_line(text)


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""


def _python_signature(text: str) -> str | None:
    """The def line(s) and, indented under them, the docstring's first paragraph in triple quotes."""
    try:
        module = parse_python(text)
    except (SyntaxError, ValueError):
        return None
    node = next((n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if node is None:
        return None
    header = _python_header(text.splitlines(), node)
    docstring = ast.get_docstring(node)
    if not docstring:
        return header
    first = " ".join(docstring.split("\n\n", 1)[0].split())
    indent = " " * (node.col_offset + 4)
    return f'{header}\n{indent}"""{first}"""'


def _python_header(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The lines from `def` to the line before the body, comments and blank lines after the colon
    dropped; a one-line function is cut after its colon."""
    body = node.body[0]
    if body.lineno == node.lineno:
        return lines[node.lineno - 1][: body.col_offset].rstrip()
    header = lines[node.lineno - 1 : body.lineno - 1]
    while header and (not header[-1].strip() or header[-1].lstrip().startswith("#")):
        header.pop()
    return "\n".join(header)


def _tree_sitter_signature(text: str, spec: LanguageSpec | None) -> str | None:
    """The first function node's text up to its body, parsed bare or in the first frame of the
    language that parses cleanly (a Java method needs its class)."""
    if spec is None:
        return None
    grammar = parser(spec.grammar)
    source = text.encode("utf-8", "surrogatepass")
    for before, after in (("", ""), *spec.frames):
        prefix = before.encode("utf-8")
        root = grammar.parse(prefix + source + after.encode("utf-8")).root_node
        if root.has_error:
            continue
        function = _first_function(root, spec, len(prefix))
        if function is None:
            continue
        body = function.child_by_field_name("body")
        end = body.start_byte if body is not None else function.end_byte
        header = (prefix + source)[function.start_byte : end].decode("utf-8", "replace")
        return " ".join(line.strip() for line in header.splitlines()).rstrip()
    return None


def _first_function(root: Node, spec: LanguageSpec, start: int) -> Node | None:
    """The first function node, in pre-order, at or after byte `start` (past the frame)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in spec.functions and node.start_byte >= start:
            return node
        stack.extend(reversed(node.children))
    return None
