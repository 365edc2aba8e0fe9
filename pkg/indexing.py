"""Indexing a parsed corpus: embed its texts (and, optionally, every text pruning can produce) and
write whole sources to a store, several writes in flight where the store allows it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ingest.graph_builder import UnitGraph, qualified_names
from ingest.link import link_edges
from ingest.parse import BuildReport, ParsedCorpus, SourceGraph, pruning_variants
from pkg.code.search_text import embedded_text
from pkg.collector import collector_paused
from pkg.embedders import FAST_PROFILE, CachedEmbedder, Embedder
from pkg.forked import cores, started
from pkg.graph import EMBEDDED_LABELS, EmbedderInfo, Label, Node
from pkg.progress import Progress, no_progress
from pkg.schema import ImplNode
from pkg.stores.base import GraphStore, code_tables

if TYPE_CHECKING:
    from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder

T = TypeVar("T")
R = TypeVar("R")

EMBED_BATCH = 256
#: The corpus size (functions) from which the linking pass runs in a forked child beside the BM25
#: indexes, where there are two cores: each keeps one busy. At 100k functions the build took 200.9 s
#: against 211.9 s linking after the indexes (linking 13.4 CPU s in the child, receiving its 212k edges
#: 0.27 s), and the machine's memory peaked 1.2 GB higher, linking's and the indexes' peaks together
#: (scale-20261207T144356Z.json, scale-20261207T144905Z-linking-after-indexes.json). Below it,
#: linking takes under a second and runs here.
LINK_ASIDE_FROM = 5_000
WRITE_BATCH = 2000


def embed_texts(
    texts: list[str], embedder: Embedder, progress: Progress, keep: Set[str] | None = None
) -> dict[str, np.ndarray]:
    """Vectors of the distinct texts (only those in `keep`, when given; the others are embedded for
    the embedder's cache alone), embedded in batches. Ordered by their characters other than
    whitespace, lower-cased, so that texts which read alike to a tokenizer (a function and its
    pruning variants) share a batch, where an embedder that reads only their beginning embeds them
    once (SentenceTransformerEmbedder): at 20k functions 81,695 model inputs for 89,520 texts, against
    84,724 in the order the parser gives them and 81,666 in one batch."""
    distinct = sorted(set(texts), key=lambda text: ("".join(text.split()).lower(), text))
    vectors: dict[str, np.ndarray] = {}
    for start in range(0, len(distinct), EMBED_BATCH):
        chunk = distinct[start : start + EMBED_BATCH]
        matrix = embedder.embed_documents(chunk)
        rows = [i for i, text in enumerate(chunk) if keep is None or text in keep]
        # a copy of the kept rows: a row view would keep the whole batch's matrix alive
        kept = matrix if len(rows) == len(chunk) else matrix[rows]
        vectors.update(zip((chunk[i] for i in rows), kept))
        progress("embed", min(start + EMBED_BATCH, len(distinct)), len(distinct))
    return vectors


def fast_profile_fitted(
    texts: list[str], teacher: SentenceTransformerEmbedder, models_dir: Path, progress: Progress = no_progress
) -> tuple[str, bool]:
    """The spec of the fast profile's table fitted to the teacher's vectors of the texts
    (pkg.embedders.static.fit_fast_profile), and whether it was fitted now (else it was there)."""
    from pkg.embedders.static import fit_fast_profile  # noqa: PLC0415  # only `pkg tune` fits a table

    def embed(chosen: Sequence[str]) -> np.ndarray:
        vectors = embed_texts(list(chosen), teacher, progress)
        return np.stack([vectors[text] for text in chosen])

    key, now = fit_fast_profile(models_dir, teacher.name, teacher.max_tokens, texts, embed)
    return f"{FAST_PROFILE}:{key}", now


def search_text(node: Node, names: Mapping[str, str]) -> str:
    """What a node is embedded by (embedded_text: a function's search text, docstring first, else its
    text); `names` holds the qualified names of functions by IMPL id (qualified_names)."""
    return embedded_text(node.label, node.embed_text, node.props.get("lang", ""), names.get(node.id, ""))


def embedded_texts(units: Sequence[UnitGraph]) -> list[str]:
    """The search texts of the units' nodes that carry a vector (EMBEDDED_LABELS), in order."""
    names = qualified_names(units)
    return [search_text(n, names) for unit in units for n in unit.nodes if n.label in EMBEDDED_LABELS]


def with_vectors(units: Sequence[UnitGraph], vectors: Mapping[str, np.ndarray]) -> list[Node]:
    """The units' nodes, each of EMBEDDED_LABELS given the vector of its search text (as embed_texts
    returns them)."""
    names = qualified_names(units)
    return [
        replace(n, vector=vectors[search_text(n, names)]) if n.label in EMBEDDED_LABELS else n
        for unit in units
        for n in unit.nodes
    ]


def _write_batches(sources: list[SourceGraph]) -> Iterator[list[SourceGraph]]:
    """Whole sources grouped into batches of about WRITE_BATCH nodes; each batch is one write."""
    batch: list[SourceGraph] = []
    size = 0
    for source in sources:
        batch.append(source)
        size += len(source.graph.nodes)
        if size >= WRITE_BATCH:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def index_corpus(
    corpus: ParsedCorpus,
    store: GraphStore,
    embedder: Embedder,
    progress: Progress = no_progress,
    prepare_pruning: bool = True,
    alongside: Callable[[], object] = lambda: None,
) -> BuildReport:
    """Embed the changed sources of a parsed corpus and write them to the store, whole sources per
    write (each one transaction, replacing what the store held for them), which empties
    corpus.sources; remove deleted sources; then link the store, `alongside()` running meanwhile
    (link_store).

    With `prepare_pruning`, the texts pruning can produce are embedded too, into the embedding cache,
    so that query-time pruning needs no model call; an embedder that keeps no vectors (no cache in
    front, or one cheaper than its cache) would throw them away: a query that prunes embeds them."""
    started = time.perf_counter()
    report = corpus.report
    store.check_embedder(EmbedderInfo(embedder.name, embedder.dim), record=True)
    cached = embedder if isinstance(embedder, CachedEmbedder) else None
    hits, misses = (cached.hits, cached.misses) if cached else (0, 0)
    vectors, distinct_texts = _embed_corpus(corpus, embedder, prepare_pruning and embedder.keeps_vectors, progress)
    if cached:
        report.texts_from_cache = cached.hits - hits
        report.texts_embedded = cached.misses - misses
    else:
        report.texts_embedded = distinct_texts
    if corpus.deleted:
        store.delete_sources(corpus.deleted)
    total = len(corpus.nodes)

    def write(batch: list[SourceGraph]) -> tuple[int, int]:
        nodes = with_vectors([s.graph for s in batch], vectors)
        edges = [e for s in batch for e in s.graph.edges]
        store.replace_sources([s.record for s in batch], nodes, edges)
        return len(nodes), len(edges)

    for written_nodes, written_edges in in_flight(write, _write_batches(corpus.sources), store.writers):
        report.nodes += written_nodes
        report.edges += written_edges
        progress("write", report.nodes, total)
    # Written, the parsed graphs and their vectors are let go before the linking pass, which reads the
    # store: held beside it at 100k functions, they raised the build's peak memory from 2.1 to 3.1 GB.
    corpus.sources.clear()
    vectors.clear()
    report.links = link_store(store, alongside, progress)
    report.seconds += time.perf_counter() - started
    return report


def _embed_corpus(
    corpus: ParsedCorpus, embedder: Embedder, prepare_pruning: bool, progress: Progress
) -> tuple[dict[str, np.ndarray], int]:
    """The vectors of the corpus's node texts, and how many distinct texts were embedded. Pruning
    variants, when prepared, are embedded into the cache only: neither they nor their vectors outlive
    this call (at 100k functions 178,195 variants, whose vectors alone take 0.27 GB)."""
    texts = embedded_texts(corpus.units)
    if not prepare_pruning:
        vectors = embed_texts(texts, embedder, progress)
        return vectors, len(vectors)
    variants = pruning_variants(corpus.units)
    corpus.report.pruning_variants = len(variants)
    return embed_texts(texts + variants, embedder, progress, keep=set(texts)), len(set(texts + variants))


def reembed(store: GraphStore, embedder: Embedder, progress: Progress = no_progress) -> int:
    """Give every embedded node of the store the embedder's vector of its text, label by label, then
    record the embedder (the vectors must keep their dimension); how many nodes got one. Until the
    last write the old embedder stays recorded, so a run cut short leaves a database to re-embed again."""
    info = EmbedderInfo(embedder.name, embedder.dim)
    written = 0
    for label in EMBEDDED_LABELS:
        written += _reembed_label(store, label, embedder, progress)
    store.replace_embedder(info)
    return written


def _reembed_label(store: GraphStore, label: Label, embedder: Embedder, progress: Progress) -> int:
    rows = search_texts(store, label)
    vectors = embed_texts([text for _, text in rows], embedder, progress)
    for start in range(0, len(rows), WRITE_BATCH):
        chunk = rows[start : start + WRITE_BATCH]
        store.set_vectors(label, [(node_id, vectors[text]) for node_id, text in chunk])
        progress("write", start + len(chunk), len(rows))
    return len(rows)


def search_texts(store: GraphStore, label: Label) -> list[tuple[str, str]]:
    """(id, search text) of every node of a label, by id."""
    if label is not Label.IMPL:
        return store.texts(label)
    records = [r for r in store.label_records(label) if isinstance(r, ImplNode)]
    return list(zip((r.id for r in records), function_search_texts(store, records), strict=True))


def function_search_texts(store: GraphStore, records: Sequence[ImplNode]) -> list[str]:
    """The search texts of stored functions, in order, each with its class's words (its qualified name
    from the store)."""
    names = store.function_names([r.id for r in records])
    return [embedded_text(Label.IMPL, r.text, r.lang, names.get(r.id, "")) for r in records]


def link_store(
    store: GraphStore, alongside: Callable[[], object] = lambda: None, progress: Progress = no_progress
) -> int:
    """Recompute the edges between files (CALLS, INHERITS, FILE→FILE IMPORTS) over everything the
    store holds, replacing those it had; how many there are now. `alongside()` runs meanwhile: in a
    corpus of LINK_ASIDE_FROM functions or more on two cores or more, while a forked child links
    (pkg.forked); else first.
    Progress: stage "link", 0 of 2 with the tables read, 1 with the edges in hand, 2 with them written."""
    with collector_paused:
        tables = code_tables(store)
        aside = len(tables[2]) >= LINK_ASIDE_FROM and cores() > 1
        linking = started(partial(link_edges, *tables), fork=aside)
        del tables  # a forked child holds them; else the pending call does
        progress("link", 0, 2)
    try:
        alongside()
    except BaseException:
        linking.cancel()
        raise
    with collector_paused:
        edges = linking.result()
        progress("link", 1, 2)
        store.replace_links(edges)
    progress("link", 2, 2)
    return len(edges)


def in_flight(work: Callable[[T], R], items: Iterable[T], at_once: int) -> Iterator[R]:
    """work(item) for each item, at most `at_once` running together on threads; results as they
    finish. The first failure is raised once the calls already running are over."""
    if at_once <= 1:
        yield from map(work, items)
        return
    with ThreadPoolExecutor(at_once) as pool:
        running: set[Future[R]] = set()
        for item in items:
            if len(running) == at_once:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                yield from (future.result() for future in done)
            running.add(pool.submit(work, item))
        yield from (future.result() for future in as_completed(running))
