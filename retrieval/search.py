"""Func-PKG and Block-PKG retrieval: top-k by cosine, projection to functions, optional pruning."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from pkg.embedders import Embedder
from pkg.errors import ConfigError
from pkg.graph import Label
from pkg.stores.base import EmbedderInfo, GraphStore
from retrieval.prompt import ContextItem, augmented_prompt
from retrieval.prune import prune


class Mode(StrEnum):
    """Retrieval modes and the node label each one searches."""

    FUNC = "func"
    BLOCK = "block"

    @property
    def label(self) -> Label:
        return Label.IMPL if self is Mode.FUNC else Label.BLOCK


@dataclass(frozen=True)
class Result:
    """A retrieved node projected to its function, with its pruned text."""

    id: str
    kind: str
    name: str
    path: str
    row: int | None
    lines: tuple[int, int]
    score: float
    text: str
    pruned_text: str


@dataclass(frozen=True)
class Retrieval:
    """The results of a query and the prompt they make."""

    results: list[Result]
    prompt: str


def retrieve(
    store: GraphStore,
    embedder: Embedder,
    query: str,
    mode: Mode | str,
    k: int = 1,
    with_pruning: bool = True,
) -> Retrieval:
    """Answer a query with the k most similar nodes of the mode's kind."""
    try:
        mode = Mode(mode)
    except ValueError:
        raise ConfigError(f"unknown mode {mode!r}; use one of: {', '.join(m.value for m in Mode)}") from None
    if k < 1:
        raise ConfigError("k must be at least 1")
    if not query.strip():
        raise ConfigError("the query is empty")
    store.check_embedder(EmbedderInfo(embedder.name, embedder.dim))
    vector = embedder.embed_query(query)
    hits = store.search(mode.label, vector, k)
    contexts = {c.id: c for c in store.contexts([h.id for h in hits])}
    results: list[Result] = []
    for hit in hits:
        ctx = contexts[hit.id]
        pruned = prune(ctx, vector, embedder).text if with_pruning else ctx.text
        fn = ctx.function
        results.append(
            Result(
                id=ctx.id,
                kind=ctx.label.value,
                name=fn.name,
                path=fn.source,
                row=fn.row,
                lines=(ctx.start_line, ctx.end_line),
                score=hit.score,
                text=ctx.text,
                pruned_text=pruned,
            )
        )
    return Retrieval(results, augmented_prompt(query, _items(results)))


def _items(results: Sequence[Result]) -> list[ContextItem]:
    return [
        ContextItem(f"{r.name} ({r.path}{'' if r.row is None else f' row {r.row}'})", r.pruned_text)
        for r in results
    ]
