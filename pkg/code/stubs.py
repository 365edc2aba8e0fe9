"""What a definitions context shows of a class or a constant without its code: read at build time from
the file, kept in its FILE node (``refs["stubs"]``), and rendered at query time beside the signatures of
the functions (pkg.code.signatures) into stubs.

``class_stubs`` gives, per class: its header (the ``class`` line(s) as written), the first line of its
docstring, and its fields (assignments in the class body, then ``self.x`` assignments in ``__init__``),
each one line cut to FIELD_CHARS. ``constant_stubs`` gives the module's top-level assignments to plain
names the same way. Other languages keep each class's first line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from typing import Any

from pkg.code.syntax_tree import first_line, python_tree

#: A field or constant line longer than this is cut (with "..."): a long literal table says little
#: about how to use the name, and one line of 100 characters is about 25 tokens.
FIELD_CHARS = 100
#: At most this many fields per class are kept (the rest are counted in the stub).
MAX_FIELDS = 12


def _one_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    multi = len(text.strip().splitlines()) > 1
    if len(first) > FIELD_CHARS:
        return first[: FIELD_CHARS - 3].rstrip() + "..."
    return first + (" ..." if multi else "")


def _doc_line(node: ast.ClassDef | ast.Module) -> str:
    doc = ast.get_docstring(node)
    return doc.strip().splitlines()[0] if doc and doc.strip() else ""


def _header(lines: Sequence[str], node: ast.ClassDef) -> str:
    """The class statement's lines from its first decorator (`@dataclass` says how it is built) to its colon."""
    first = first_line(node)
    end = node.body[0].lineno - 1 if node.body else node.lineno
    header = [line.rstrip() for line in lines[first - 1 : max(end, node.lineno)]]
    while len(header) > 1 and (not header[-1].strip() or header[-1].lstrip().startswith(("#", '"', "'"))):
        header.pop()
    text = "\n".join(header)
    return text[: text.rfind(":") + 1] if ":" in text else text


def _assigned(statement: ast.stmt, lines: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(name, its line) for an assignment to plain names, or to `self.x`."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign):
        targets = [statement.target]
    else:
        return
    text = _one_line("".join(lines[statement.lineno - 1 : statement.end_lineno]))
    for target in targets:
        if isinstance(target, ast.Name):
            yield target.id, text
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            yield target.attr, text


def _init_fields(cls: ast.ClassDef, lines: Sequence[str]) -> Iterator[tuple[str, str]]:
    for statement in cls.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and statement.name == "__init__":
            for node in ast.walk(statement):
                if isinstance(node, ast.Assign | ast.AnnAssign):
                    yield from ((n, t) for n, t in _assigned(node, lines) if t.startswith("self."))


def _fields(cls: ast.ClassDef, lines: Sequence[str]) -> list[str]:
    found: dict[str, str] = {}
    for statement in cls.body:
        for name, text in _assigned(statement, lines):
            found.setdefault(name, text)
    for name, text in _init_fields(cls, lines):
        found.setdefault(name, text)
    shown = list(dict.fromkeys(found.values()))
    if len(shown) > MAX_FIELDS:
        shown = [*shown[:MAX_FIELDS], f"# ... {len(shown) - MAX_FIELDS} more fields"]
    return shown


def python_stubs(text: str, tree: ast.Module | None = None) -> dict[str, Any]:
    """``{"classes": {qualname: {"header", "doc", "fields"}}, "constants": {name: [line, text]}}`` of a
    Python file (`tree`: its module, when the caller parsed it already); empty tables when ``ast``
    rejects it."""
    if tree is None and (tree := python_tree(text)) is None:
        return {"classes": {}, "constants": {}}
    lines = text.splitlines(keepends=True)
    classes: dict[str, dict[str, Any]] = {}

    def visit(body: Sequence[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                name = prefix + node.name
                classes[name] = {"header": _header(lines, node), "doc": _doc_line(node), "fields": _fields(node, lines)}
                visit(node.body, f"{name}.")

    visit(tree.body, "")
    constants: dict[str, list[Any]] = {}
    for statement in _module_level(tree.body):
        for name, line in _assigned(statement, lines):
            constants.setdefault(name, [statement.lineno, line])
    return {"classes": classes, "constants": constants}


def _module_level(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's own statements, those inside a top-level `if`, `try` or `with` too (`try: import
    orjson; loads = orjson.loads`), but not those of its functions and classes."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.If | ast.Try | ast.TryStar | ast.With):
            nested = [*statement.body, *getattr(statement, "orelse", []), *getattr(statement, "finalbody", [])]
            nested += [s for handler in getattr(statement, "handlers", []) for s in handler.body]
            yield from _module_level(nested)


def first_lines(text: str, classes: Sequence[tuple[str, int, int]]) -> dict[str, Any]:
    """The stub tables of a file in another language: each class's first line, no fields or constants."""
    lines = text.splitlines()
    found = {
        name: {"header": lines[start - 1].strip(), "doc": "", "fields": []}
        for name, start, _ in classes
        if 0 < start <= len(lines)
    }
    return {"classes": found, "constants": {}}
