"""Retrieval modes over one built corpus: PKG (func, block, json), the paper's baselines
(bm25-rows, bm25-func, dense-rows), hybrid BM25 + dense fusion, and cAST chunks (by vector or BM25)
with neighbours. Options can hide files from every mode and add call-graph signatures to code hits."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

import numpy as np

from pkg.embedders import Embedder
from pkg.errors import ConfigError, StoreError
from pkg.graph import Label
from pkg.schema import ChunkNode, PathValueNode, RowNode, expect
from pkg.stores.base import EmbedderInfo, GraphStore, NodeContext, require_nodes
from retrieval.expand import EXPAND_BUDGET, Expand, expansions
from retrieval.fusion import FUSION_DEPTHS, FUSION_WEIGHTS, RRF_K, Fusion, reciprocal_rank_fusion, score_fusion
from retrieval.lexical import UNITS, open_index
from retrieval.names import NAME_BONUS, name_in_query, name_leads_query, query_words
from retrieval.prompt import ContextItem, augmented_prompt
from retrieval.prune import prune

#: The path the code of a `defs` query is read as (its relative imports resolve from nowhere).
QUERY_PATH = "<query>.py"
#: The kind of a definition's result.
DEFINITION = "DEFINITION"
#: With excluded sources, a ranking is first asked for this many times k hits, then this many times
#: more each round until k survive the exclusion or the ranking runs out.
OVERFETCH = 4


class Mode(StrEnum):
    """Retrieval modes."""

    FUNC = "func"  # Func-PKG: IMPL by vector, pruned
    BLOCK = "block"  # Block-PKG: BLOCK by vector, pruned
    BM25_ROWS = "bm25-rows"  # the paper's BM25 over whole corpus items
    BM25_FUNC = "bm25-func"  # the paper's Func-BM25 over functions
    BM25_CHUNK = "bm25-chunk"  # BM25 over cAST chunks, optionally with a neighbour
    DENSE_ROWS = "dense-rows"  # the paper's VoyageEmb arm: whole items by vector (any embedder)
    HYBRID = "hybrid"  # BM25 and dense rankings of one unit fused (their scores summed, or by RRF)
    CHUNK = "chunk"  # cAST chunks by vector, optionally with a neighbour
    JSON = "json"  # JSON-PKG: PATHVALUE leaves of JSON documents and tutorials by vector
    DEFS = "defs"  # the definitions the query's code uses, from other files, as stubs
    DEFS_FUNC = "defs+func"  # those definitions, then the most similar function


class Neighbour(StrEnum):
    """Which adjacent chunk to add to a chunk hit."""

    NONE = "none"
    NEXT = "next"  # for a prefix query: what follows the hit
    PREVIOUS = "previous"  # for a suffix query: what precedes the hit


@dataclass(frozen=True)
class Options:
    """Settings of the modes that have any."""

    with_pruning: bool = True
    neighbour: str = Neighbour.NONE  # chunk hits: which adjacent chunk to add (a Neighbour)
    hybrid_unit: str = "func"  # what hybrid ranks: functions (pruned, as func), rows or chunks
    fusion: str = Fusion.SCORES  # how hybrid fuses its rankings (a Fusion)
    sparse_weight: float | None = None  # None: the fusion's own default (FUSION_WEIGHTS)
    dense_weight: float | None = None
    rrf_k: int = RRF_K
    name_bonus: float = NAME_BONUS  # score fusion over functions: added when the query names the function,
    # and once more when its first word is the name's first
    with_titles: bool = False  # json: prefix each leaf with the titles along its path
    exclude_sources: frozenset[str] = frozenset()  # every mode: drop nodes of these files (a node's `source`)
    expand: str = Expand.NONE  # code hits: add the signatures of their callees or callers (an Expand)
    expand_budget: int = EXPAND_BUDGET  # tokens the expansion may add under one hit


@dataclass(frozen=True)
class Result:
    """A retrieved node, projected to its function for code nodes, with the text it contributes."""

    id: str
    kind: str
    name: str
    path: str
    row: int | None
    lines: tuple[int, int]
    score: float
    text: str
    pruned_text: str  # the text as pruned, then the expansion, if any
    expansion: str = ""  # the comment block of callee or caller signatures (Options.expand)

    @property
    def pruned(self) -> bool:
        """Whether pruning dropped code from the hit (the expansion after it does not count)."""
        shown = self.pruned_text.removesuffix(f"\n{self.expansion}\n") if self.expansion else self.pruned_text
        return shown.rstrip() != self.text.rstrip()


@dataclass(frozen=True)
class Retrieval:
    """The results of a query and the prompt they make."""

    results: list[Result]
    prompt: str


@dataclass
class _Query:
    """One query being answered: what it needs is computed once, on first use."""

    store: GraphStore
    embedder: Embedder | None
    text: str
    db_dir: Path | None
    options: Options
    _vector: np.ndarray | None = field(default=None, init=False)

    @property
    def vector(self) -> np.ndarray:
        if self._vector is None:
            if self.embedder is None:
                raise ConfigError("this mode needs an embedder")
            self.store.check_embedder(EmbedderInfo(self.embedder.name, self.embedder.dim))
            self._vector = self.embedder.embed_query(self.text)
        return self._vector

    def dense(self, label: Label, k: int) -> list[tuple[str, float]]:
        hits = self._kept(lambda n: [(h.id, h.score) for h in self.store.search(label, self.vector, n)], k)
        if not hits:
            require_nodes(self.store, label)
        return hits

    def sparse(self, unit: str, k: int) -> list[tuple[str, float]]:
        if self.db_dir is None:
            raise ConfigError("BM25 modes need the database directory that holds the index")
        index = open_index(self.store, self.db_dir, unit)
        return self._kept(lambda n: index.search(self.text, n), k)

    def _kept(self, rank: Callable[[int], list[tuple[str, float]]], k: int) -> list[tuple[str, float]]:
        """The k best hits of a ranking outside the excluded sources: it is asked for more hits until k
        survive or it has no more. Unknown ids are kept, for `_require_found` to report."""
        excluded = self.options.exclude_sources
        if not excluded:
            return rank(k)
        n = k
        while True:
            n *= OVERFETCH
            hits = rank(n)
            sources = {node.id: node.source for node in self.store.nodes([doc for doc, _ in hits])}
            kept = [(doc, score) for doc, score in hits if sources.get(doc) not in excluded]
            if len(kept) >= k or len(hits) < n:
                return kept[:k]


def retrieve(
    store: GraphStore,
    embedder: Embedder | None,
    query: str,
    mode: Mode | str,
    k: int = 1,
    db_dir: Path | None = None,
    options: Options | None = None,
) -> Retrieval:
    """Answer a query with the k best nodes of the mode. Modes that need no vector never touch
    the embedder; BM25 modes read their index from db_dir."""
    spec = mode_spec(mode)
    if k < 1:
        raise ConfigError("k must be at least 1")
    if not query.strip():
        raise ConfigError("the query is empty")
    options = options or Options()
    if options.hybrid_unit not in UNITS:
        raise ConfigError(f"unknown hybrid unit {options.hybrid_unit!r}; use one of: {', '.join(UNITS)}")
    if options.fusion not in set(Fusion):
        raise ConfigError(f"unknown fusion {options.fusion!r}; use one of: {', '.join(Fusion)}")
    if options.expand not in set(Expand):
        raise ConfigError(f"unknown expansion {options.expand!r}; use one of: {', '.join(Expand)}")
    if options.neighbour not in set(Neighbour):
        raise ConfigError(f"unknown neighbour {options.neighbour!r}; use one of: {', '.join(Neighbour)}")
    # the modes compare by identity: a plain string ("next") must become the member
    options = replace(options, neighbour=Neighbour(options.neighbour), expand=Expand(options.expand))
    if options.expand_budget < 0:
        raise ConfigError("the expansion budget must not be negative")
    q = _Query(store, embedder, query, db_dir, options)
    results = _expanded(q, spec.run(q, k))
    return Retrieval(results, augmented_prompt(query, [_item(r) for r in results]))


def _expanded(q: _Query, results: list[Result]) -> list[Result]:
    """Code results with their callees' or callers' signatures after their text, as the options ask."""
    expand = Expand(q.options.expand)
    code = [r.id for r in results if r.kind in (Label.IMPL.value, Label.BLOCK.value)]
    if expand is Expand.NONE or not code:
        return results
    blocks = expansions(q.store, q.store.contexts(code), expand, q.options.expand_budget, q.options.exclude_sources)
    return [
        replace(r, pruned_text=f"{r.pruned_text.rstrip()}\n{blocks[r.id]}\n", expansion=blocks[r.id])
        if r.id in blocks
        else r
        for r in results
    ]


def _hybrid(q: _Query, k: int) -> list[Result]:
    unit, fusion = q.options.hybrid_unit, Fusion(q.options.fusion)
    depth = max(FUSION_DEPTHS[fusion], 10 * k)
    rankings = [q.sparse(unit, depth), q.dense(UNITS[unit], depth)]
    default_sparse, default_dense = FUSION_WEIGHTS[fusion]
    weights = [
        default_sparse if q.options.sparse_weight is None else q.options.sparse_weight,
        default_dense if q.options.dense_weight is None else q.options.dense_weight,
    ]
    if fusion is Fusion.RRF:
        fused = reciprocal_rank_fusion([[doc for doc, _ in r] for r in rankings], weights, q.options.rrf_k)
    else:
        fused = score_fusion(rankings, weights)
        if UNITS[unit] is Label.IMPL and q.options.name_bonus:
            fused = _with_name_bonus(q, fused)
    if UNITS[unit] is Label.IMPL:
        return _code_results(q, _with_contexts(q, fused[:k]), prune_them=q.options.with_pruning)
    return _plain_results(q, fused[:k])


def _with_name_bonus(q: _Query, fused: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The fused functions reordered with the name bonus added to those the query names, and again to
    those it leads with (a stable sort: ties keep the fusion's order)."""
    names, words = q.store.function_names([doc for doc, _ in fused]), query_words(q.text)

    def bonus(name: str) -> float:
        times = name_in_query(name, words) + name_leads_query(name, q.text)
        return times * q.options.name_bonus

    lifted = [(doc, score + bonus(names.get(doc, ""))) for doc, score in fused]
    return sorted(lifted, key=lambda item: -item[1])


def _require_found(hits: Sequence[tuple[str, float]], found: Collection[str]) -> None:
    """Refuse hits the store no longer holds: a BM25 index left behind by an interrupted build, or
    one built beside another database, can name nodes the store has replaced."""
    missing = [doc for doc, _ in hits if doc not in found]
    if missing:
        raise StoreError(
            f"{len(missing)} retrieved node(s) are not in the store (first: {missing[0]}): its BM25 index is out"
            " of date; run `pkg build` again"
        )


def _with_contexts(q: _Query, hits: Sequence[tuple[str, float]]) -> list[tuple[NodeContext, float]]:
    contexts = {c.id: c for c in q.store.contexts([doc for doc, _ in hits])}
    _require_found(hits, contexts)
    return [(contexts[doc], score) for doc, score in hits]


def _code_results(q: _Query, found: Sequence[tuple[NodeContext, float]], prune_them: bool) -> list[Result]:
    results = []
    for ctx, score in found:
        pruned = prune(ctx, q.vector, q.embedder).text if prune_them and q.embedder else ctx.text
        results.append(_code_result(ctx, score, pruned))
    return results


def _code_result(ctx: NodeContext, score: float, pruned: str) -> Result:
    fn = ctx.function
    return Result(
        id=ctx.id,
        kind=ctx.label.value,
        name=fn.name,
        path=fn.source,
        row=fn.row,
        lines=(ctx.start_line, ctx.end_line),
        score=score,
        text=ctx.text,
        pruned_text=pruned,
    )


def _plain_results(q: _Query, hits: Sequence[tuple[str, float]]) -> list[Result]:
    """Results for ROW and CHUNK hits; chunks get their neighbour if the options ask for one."""
    nodes = {n.id: n for n in q.store.nodes([doc for doc, _ in hits])}
    _require_found(hits, nodes)
    neighbour = q.options.neighbour
    adjacent: dict[str, str] = {}
    if neighbour is not Neighbour.NONE:
        chunk_ids = [doc for doc, _ in hits if isinstance(nodes[doc], ChunkNode)]
        adjacent = q.store.adjacent_chunks(chunk_ids, following=neighbour is Neighbour.NEXT)
    extra = {n.id: expect(n, ChunkNode) for n in q.store.nodes(list(adjacent.values()))}
    results = []
    for doc, score in hits:
        node = nodes[doc]
        if isinstance(node, ChunkNode):
            lines, text = (node.start_line, node.end_line), node.text
            other = extra.get(adjacent.get(doc, ""))
            if other is not None:
                first, second = (node, other) if neighbour is Neighbour.NEXT else (other, node)
                lines, text = (first.start_line, second.end_line), first.text + second.text
            part = f" chunk {node.index}"
        else:
            node = expect(node, RowNode)
            lines, text, part = (1, node.lines), node.text, ""
        name = Path(node.source).name + ("" if node.row is None else f"#row{node.row}") + part
        results.append(Result(doc, node.LABEL.value, name, node.source, node.row, lines, score, text, text))
    return results


def _json_results(q: _Query, hits: Sequence[tuple[str, float]]) -> list[Result]:
    """PATHVALUE hits: the payload, optionally behind the titles along its path."""
    leaves = {n.id: expect(n, PathValueNode) for n in q.store.nodes([doc for doc, _ in hits])}
    results = []
    for doc, score in hits:
        leaf = leaves[doc]
        shown = f"[{leaf.titles}] {leaf.text}" if q.options.with_titles and leaf.titles else leaf.text
        results.append(Result(doc, leaf.LABEL.value, leaf.path, leaf.source, leaf.row, (0, 0), score, leaf.text, shown))
    return results


def _item(result: Result) -> ContextItem:
    where = result.path if result.row is None else f"{result.path} row {result.row}"
    return ContextItem(f"{result.name} ({where})", result.pruned_text)


def _vector_code(label: Label) -> Callable[[_Query, int], list[Result]]:
    def run(q: _Query, k: int) -> list[Result]:
        if q.options.exclude_sources:  # over-fetching ids before pruning, which embeds every result
            found = _with_contexts(q, q.dense(label, k))
        else:
            found = q.store.nearest_contexts(label, q.vector, k)
        return _code_results(q, found, prune_them=q.options.with_pruning)

    return run


def _definitions(q: _Query, k: int) -> list[Result]:
    """The k best-ranked definitions the query's code uses (every name, whatever the gate would say)."""
    # Imported here: the other modes never need the code structure (~0.15 s of a cold `pkg query`).
    from retrieval.definitions import Gate, Reach, definitions_context  # noqa: PLC0415

    found = definitions_context(
        q.store,
        QUERY_PATH,
        None,
        q.text,
        budget=sys.maxsize,
        names=Reach.ALL,
        gate=Gate.ALWAYS,
        exclude_sources=q.options.exclude_sources,
    )
    ranked = sorted(found.definitions, key=lambda d: -d.score)[:k]
    return [
        Result(f"{d.path}:{d.name}", DEFINITION, d.name, d.path, None, d.lines, d.score, d.stub, d.stub) for d in ranked
    ]


def _definitions_then_function(q: _Query, k: int) -> list[Result]:
    return _definitions(q, k) + _vector_code(Label.IMPL)(q, 1)


def _bm25_func(q: _Query, k: int) -> list[Result]:
    return _code_results(q, _with_contexts(q, q.sparse("func", k)), prune_them=False)


@dataclass(frozen=True)
class ModeSpec:
    """A retrieval mode: what it answers with, whether it ranks by BM25 alone (then the query is never
    embedded), and how it runs."""

    help: str
    lexical: bool
    run: Callable[[_Query, int], list[Result]]


#: Every retrieval mode, by name; the CLI, the server and `pkg compare` read their choices from here.
MODES: dict[str, ModeSpec] = {
    Mode.FUNC.value: ModeSpec("Func-PKG: functions by vector, pruned", False, _vector_code(Label.IMPL)),
    Mode.BLOCK.value: ModeSpec("Block-PKG: nested blocks by vector, pruned", False, _vector_code(Label.BLOCK)),
    Mode.BM25_ROWS.value: ModeSpec(
        "BM25 over whole corpus items (the paper's BM25)", True, lambda q, k: _plain_results(q, q.sparse("rows", k))
    ),
    Mode.BM25_FUNC.value: ModeSpec("BM25 over functions (the paper's Func-BM25)", True, _bm25_func),
    Mode.BM25_CHUNK.value: ModeSpec(
        "BM25 over cAST chunks, optionally with a neighbour chunk",
        True,
        lambda q, k: _plain_results(q, q.sparse("chunk", k)),
    ),
    Mode.DENSE_ROWS.value: ModeSpec(
        "whole corpus items by vector (the paper's VoyageEmb arm)",
        False,
        lambda q, k: _plain_results(q, q.dense(Label.ROW, k)),
    ),
    Mode.HYBRID.value: ModeSpec(
        "BM25 and vector rankings fused (see --fusion), of functions (pruned) unless the hybrid unit says otherwise",
        False,
        lambda q, k: _hybrid(q, k),
    ),
    Mode.CHUNK.value: ModeSpec(
        "cAST chunks by vector, optionally with a neighbour chunk",
        False,
        lambda q, k: _plain_results(q, q.dense(Label.CHUNK, k)),
    ),
    Mode.JSON.value: ModeSpec(
        "JSON-PKG: leaves of JSON documents and tutorials by vector",
        False,
        lambda q, k: _json_results(q, q.dense(Label.PATHVALUE, k)),
    ),
    Mode.DEFS.value: ModeSpec(
        "the definitions the query's code uses from the graph's files, as stubs", True, _definitions
    ),
    Mode.DEFS_FUNC.value: ModeSpec(
        "those definitions, then the most similar function by vector", False, _definitions_then_function
    ),
}

#: The mode of a query that names none (`pkg query`, the MCP tools, `KnowledgeBase.query`). On bench_search's
#: 317 held-out queries at 5k functions hybrid beats func with either model: MiniLM recall@10 0.830 against
#: 0.795 (+0.035 [+0.013, +0.060], 13 helped / 2 hurt), after `pkg tune` 0.871 against 0.842.
DEFAULT_MODE = Mode.HYBRID.value


def mode_spec(mode: str) -> ModeSpec:
    """The registry entry of a mode; an unknown mode is a ConfigError naming the valid ones."""
    if mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r}; use one of: {', '.join(MODES)}")
    return MODES[mode]
