"""Pruning a retrieved node's block subtree (PKG paper, eq. 6-7), always yielding valid code.

Each direct child branch of the node is a candidate for removal; the remaining texts, and the
unpruned text itself, are embedded in one batch (a function's by its search text, as the index embeds it)
and the one most similar to the query wins. A
variant is a candidate only if it is valid code in the function's language (`syntax_check`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pkg.code.branches import branch_variants
from pkg.code.search_text import embedded_text
from pkg.embedders import Embedder
from pkg.graph import Span
from pkg.stores.base import NodeContext


@dataclass(frozen=True)
class Pruned:
    """The outcome of pruning one node."""

    text: str
    removed: Span | None  # the child branch dropped, or None when the unpruned text scored best
    score: float  # cosine similarity of `text` to the query
    unpruned_score: float


def prune(context: NodeContext, query: np.ndarray, embedder: Embedder) -> Pruned:
    """Drop the child branch whose removal makes the code most similar to the query, if any does."""
    candidates: list[tuple[str, Span | None]] = [(context.text, None)]
    candidates += branch_variants(context.text, context.start_line, context.children, context.function.lang)
    # embedded as the index embeds the node, so that the unpruned text's vector is the cached one
    function = context.function
    texts = [embedded_text(context.label, text, function.lang, function.name) for text, _ in candidates]
    scores = embedder.embed_documents(texts) @ np.asarray(query, dtype=np.float32)
    best = int(np.argmax(scores))  # ties keep the earliest, i.e. the unpruned text
    text, removed = candidates[best]
    return Pruned(text, removed, float(scores[best]), float(scores[0]))
