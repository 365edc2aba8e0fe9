"""Whether an answer builds on its retrieved context: the retrieval arms lose to NoRAG with small
models, and the table's reuse columns say how much of that loss comes from answers that take the
retrieved code over instead of solving the task."""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Stripped lines shorter than this (``else:``, ``return x``) are too common to count as taken over.
MIN_LINE_CHARS = 12
_ANY_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
_TOP_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)


def _substantial_lines(text: str) -> list[str]:
    stripped = (line.strip() for line in text.splitlines())
    return [line for line in stripped if len(line) >= MIN_LINE_CHARS and not line.startswith("#")]


def reuses_context(code: str, snippets: Sequence[str]) -> bool:
    """True when the answer defines a top-level function under a name some snippet defines, or at
    least half of its substantial lines (stripped, not comments, ≥ MIN_LINE_CHARS) appear verbatim
    in the snippets. Regular expressions, not a parser: answers that do not parse count too."""
    context = "\n".join(snippets)
    if not context.strip():
        return False
    if set(_TOP_DEF.findall(code)) & set(_ANY_DEF.findall(context)):
        return True
    lines = _substantial_lines(code)
    known = set(_substantial_lines(context))
    return bool(lines) and 2 * sum(line in known for line in lines) >= len(lines)
