"""Whether a pruned text is still valid code, in the language of the function it was cut from.

Python is checked with `ast`. Other languages are parsed with their tree-sitter grammar; a
function or block cut out of its file may not parse on its own (a Java method, a Go `if`), so it
is framed the way its file held it (inside a class, inside a function body: the frames of its
`pkg.code.languages` entry), and its variants are checked in the first frame in which the
unpruned text parses without errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from pkg.code.languages import LANGUAGES, Frame
from pkg.code.syntax_tree import parse_python, parser

PYTHON = "python"


def parses(code: str) -> bool:
    """Whether the code is syntactically valid Python."""
    try:
        parse_python(code)
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
    (a language without a grammar here, or a text that does not parse in any of its language's
    frames, `LanguageSpec.frames`)."""
    if lang == PYTHON:
        return PYTHON_SYNTAX
    spec = LANGUAGES.get(lang)
    if spec is None:
        return None
    grammar = parser(spec.grammar)

    def clean(code: str, frame: Frame) -> bool:
        framed = f"{frame[0]}{code}{frame[1]}"
        return not grammar.parse(framed.encode("utf-8", "surrogatepass")).root_node.has_error

    for frame in (("", ""), *spec.frames):
        if clean(text, frame):
            return Syntax(partial(clean, frame=frame))
    return None
