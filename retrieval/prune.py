"""Pruning a retrieved node's block subtree (PKG paper, eq. 6-7), always yielding valid code.

Each direct child branch of the node is a candidate for removal; the remaining texts, and the
unpruned text itself, are embedded in one batch and the one most similar to the query wins. A
variant is a candidate only if it is valid code in the function's language (`syntax_check`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pkg.embedders import Embedder
from pkg.stores.base import NodeContext, Span
from retrieval.syntax_check import PYTHON, PYTHON_SYNTAX, Syntax, syntax_for


@dataclass(frozen=True)
class Pruned:
    """The outcome of pruning one node."""

    text: str
    removed: Span | None  # the child branch dropped, or None when the unpruned text scored best
    score: float  # cosine similarity of `text` to the query
    unpruned_score: float


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


def branch_variants(
    text: str, first_line: int, children: Sequence[Span], lang: str = PYTHON
) -> list[tuple[str, Span]]:
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


def prune(context: NodeContext, query: np.ndarray, embedder: Embedder) -> Pruned:
    """Drop the child branch whose removal makes the code most similar to the query, if any does."""
    candidates: list[tuple[str, Span | None]] = [(context.text, None)]
    candidates += branch_variants(context.text, context.start_line, context.children, context.function.lang)
    scores = embedder.embed_documents([text for text, _ in candidates]) @ np.asarray(query, dtype=np.float32)
    best = int(np.argmax(scores))  # ties keep the earliest, i.e. the unpruned text
    text, removed = candidates[best]
    return Pruned(text, removed, float(scores[best]), float(scores[0]))
