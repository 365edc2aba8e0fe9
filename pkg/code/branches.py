"""Branch variants: the valid code left by removing one directly nested block of a function or
block. They do not depend on any query, so a build can embed them ahead of time."""

from __future__ import annotations

from collections.abc import Sequence

from pkg.code.syntax_check import PYTHON, PYTHON_SYNTAX, Syntax, syntax_for
from pkg.graph import Span


def without_branch(text: str, first_line: int, branch: Span, syntax: Syntax = PYTHON_SYNTAX) -> str | None:
    """The text with the branch's lines removed; an emptied block gets the language's filler
    (Python's `pass`). None if no valid result exists (then the branch is not a candidate)."""
    lines = text.split("\n")
    start, end = branch.start_line - first_line, branch.end_line - first_line
    if start <= 0 or end >= len(lines) or start > end:
        return None
    head, tail = lines[:start], lines[end + 1 :]
    candidate = "\n".join(head + tail)
    if syntax.valid(candidate):
        return candidate
    if syntax.filler is None:
        return None
    line = lines[start]
    indent = line[: len(line) - len(line.lstrip())]
    candidate = "\n".join([*head, f"{indent}{syntax.filler}", *tail])
    return candidate if syntax.valid(candidate) else None


def branch_variants(text: str, first_line: int, children: Sequence[Span], lang: str = PYTHON) -> list[tuple[str, Span]]:
    """The valid texts left by removing each child branch in turn. They do not depend on the query,
    so a build can embed them ahead of time and pruning then costs only dot products."""
    syntax = syntax_for(text, lang) if children else None
    if syntax is None:
        return []
    variants = []
    for child in children:
        remaining = without_branch(text, first_line, child, syntax)
        if remaining is not None:
            variants.append((remaining, child))
    return variants
