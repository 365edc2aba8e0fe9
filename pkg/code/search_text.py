"""What a function is embedded by: its name in words, its docstring, then its code without the docstring.

A sentence model reads a text's first 256 tokens: with the source as written, a long signature can push
the docstring, the part written in the query's language, out of that window (click's `style`: twelve
annotated parameters, then the docstring that names ANSI styles and colours). Led by the name in words
and the docstring, that part is read first; the code fills the rest of the window. For the same reason a
docstring's code (doctests, literal blocks) and directives come after its prose: four example calls in
`style`'s took ~100 tokens before its prose about colours.
"""

from __future__ import annotations

import ast
import re

from pkg.code.syntax_tree import UNPARSABLE, parse_python
from pkg.graph import Label

PYTHON = "python"
#: The words of an identifier: snake_case and camelCase parts, runs of capitals, numbers.
_NAME_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
#: A reStructuredText directive's first line (`.. versionchanged:: 8.0`, `.. code-block:: python`), its name.
_DIRECTIVE = re.compile(r"\.\.\s+([\w:-]+)::")
#: Directives whose text is prose about the function, kept in its search text as written.
ADMONITIONS = frozenset(
    {
        "admonition",
        "attention",
        "caution",
        "danger",
        "deprecated",
        "error",
        "hint",
        "important",
        "note",
        "seealso",
        "tip",
        "warning",
    }
)


def name_words(name: str) -> str:
    """An identifier's words, lowercased (`parse_JSONFile2` -> `parse json file 2`)."""
    return " ".join(part.lower() for part in _NAME_PART.findall(name))


def embedded_text(label: Label, text: str, lang: str, qualified_name: str = "") -> str:
    """What a node of a label is embedded by, at build and when pruning: a function (IMPL) by its search
    text (its qualified name gives its class), any other node by its text."""
    return function_search_text(text, lang, owner_words(qualified_name)) if label is Label.IMPL else text


def owner_words(qualified_name: str) -> str:
    """The words of the classes a method is defined in (`ExceptionInfo.type` -> `exception info`); none
    for a module's function or one nested in a function."""
    owner, _, _ = qualified_name.rpartition(".")
    return "" if not owner or "<locals>" in owner else name_words(owner.replace(".", "_"))


def function_search_text(code: str, lang: str, owner: str = "") -> str:
    """The text a function is embedded by: for a Python function, its name in words (then its class's,
    `owner`), its docstring (dedented, its prose first: prose_first) and its code without the docstring, one
    per line; any other code as it is."""
    function = sole_function(code) if lang == PYTHON else None
    if function is None:
        return code
    docstring = prose_first(ast.get_docstring(function, clean=True) or "")
    rest = without_docstring(code, function) or code
    head = " ".join(part for part in (name_words(function.name), owner) if part)
    return "\n".join(part for part in (head, docstring, rest) if part)


def sole_function(code: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function a Python source of one def (dedented, decorators included) defines, else None."""
    try:
        body = parse_python(code).body
    except UNPARSABLE:  # a build must not stop at code nested past the parser's recursion limit
        return None
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    return body[0]


def without_docstring(code: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The code with the lines of the function's docstring left out; None without a docstring or when
    it shares a line with other code."""
    first = function.body[0]
    if ast.get_docstring(function, clean=False) is None or first.end_lineno is None:
        return None
    lines = code.split("\n")
    before = lines[first.lineno - 1].encode()[: first.col_offset]  # ast's offsets count UTF-8 bytes
    after = lines[first.end_lineno - 1].encode()[first.end_col_offset or 0 :]
    if before.strip() or after.strip():
        return None
    return "\n".join(lines[: first.lineno - 1] + lines[first.end_lineno :])


def prose_first(docstring: str) -> str:
    """A docstring with its prose first, then its code and directives (split_docstring), so that a long
    example cannot push the prose out of a model's window."""
    return "\n".join(part for part in split_docstring(docstring) if part)


def split_docstring(text: str, kept: frozenset[str] = ADMONITIONS) -> tuple[str, str]:
    """A docstring (or any reStructuredText) as its prose and the rest, each in its order: the rest holds
    doctest sessions (from `>>>` to the next blank line), literal blocks (the lines indented under a line
    ending in `::`, which keeps one colon in the prose) and directives with their indented lines (`..
    versionchanged:: 8.0`), but for those named in `kept`, which stay in the prose as written (`.. warning::`).
    The rest has no blank lines."""
    lines = text.split("\n")
    prose: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if stripped.startswith(">>>"):
            while index < len(lines) and lines[index].strip():
                rest.append(lines[index])
                index += 1
            continue
        directive = _DIRECTIVE.match(stripped)
        if (directive and directive.group(1) in kept) or (not directive and not stripped.endswith("::")):
            prose.append(line)
            index += 1
            continue
        if directive:
            rest.append(line)
        elif intro := stripped[:-2].rstrip():
            prose.append(line[: _indent(line)] + intro + ("" if intro.endswith(":") else ":"))
        index += 1
        while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > _indent(line)):
            rest.extend([lines[index]] if lines[index].strip() else [])
            index += 1
        prose.append("")  # what follows the block is a paragraph of its own
    return re.sub(r"\n{3,}", "\n\n", "\n".join(prose)).strip(), "\n".join(rest)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
