"""Whether a pruned text is still valid code, in the language of the function it was cut from.

Python is checked with `ast`. Other languages are parsed with their tree-sitter grammar; a
function or block cut out of its file may not parse on its own (a Java method, a Go `if`), so it
is framed the way its file held it (inside a class, inside a function body), and its variants are
checked in the first frame in which the unpruned text parses without errors.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from ingest.languages import LANGUAGES
from ingest.syntax_tree import parser

PYTHON = "python"

_CLASS = ("class _ {\n", "\n}")
_METHOD_BODY = ("class _ {\nvoid _() {\n", "\n}\n}")  # Java and C#: a body inside its class

#: Frames (prefix, suffix) tried in order after the bare text: members need their container,
#: statements a function body (which, for Java and C#, itself needs the class).
FRAMES: dict[str, tuple[tuple[str, str], ...]] = {
    "javascript": (_CLASS,),
    "typescript": (_CLASS,),
    "tsx": (_CLASS,),
    "java": (
        _CLASS,
        ("record _() {\n", "\n}"),  # compact constructors
        _METHOD_BODY,
    ),
    "csharp": (
        _CLASS,
        ("class _ {\nobject _ {\n", "\n}\n}"),  # property accessors
        _METHOD_BODY,
    ),
    "cpp": (("struct _ {\n", "\n};"), ("void _() {\n", "\n}")),
    "c": (("void _(void) {\n", "\n}"),),
    "go": (("func _() {\n", "\n}"),),
    "rust": (("impl _ {\n", "\n}"), ("fn _() {\n", "\n}")),
}


def parses(code: str) -> bool:
    """Whether the code is syntactically valid Python."""
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


@dataclass(frozen=True)
class Syntax:
    """How to tell valid code of one language, framed as the unpruned text needed."""

    valid: Callable[[str], bool]
    #: A statement that keeps an emptied block valid, where the language needs one (Python's pass).
    filler: str | None = None


PYTHON_SYNTAX = Syntax(parses, filler="pass")


def syntax_for(text: str, lang: str) -> Syntax | None:
    """The check for variants of `text`, written in `lang`; None when no variant can be checked
    (a language without a grammar here, or a text that does not parse in any frame)."""
    if lang == PYTHON:
        return PYTHON_SYNTAX
    spec = LANGUAGES.get(lang)
    if spec is None:
        return None
    grammar = parser(spec.grammar)

    def clean(code: str, frame: tuple[str, str]) -> bool:
        framed = f"{frame[0]}{code}{frame[1]}"
        return not grammar.parse(framed.encode("utf-8", "surrogatepass")).root_node.has_error

    for frame in (("", ""), *FRAMES.get(lang, ())):
        if clean(text, frame):
            return Syntax(lambda code, frame=frame: clean(code, frame))
    return None
