"""The one handle on a PKG: its store, database directory, BM25 indexes and embedder.

Every build goes through `KnowledgeBase.build` (parse → embed → write → lexical indexes) and every
query through `KnowledgeBase.query`; the CLI, `pkg compare` and a server hold one open.

    from pkg import KnowledgeBase

    with KnowledgeBase("./.pkg") as kb:
        kb.build(["src/"])
        for result in kb.query("merge two sorted lists", k=3).results:
            print(result.name, result.score)
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Unpack

from pkg.collector import collecting_rarely
from pkg.config import BUILD_LOCK, DB_MARKER, DEFAULT_CHUNK_SIZE, MAX_FILE_BYTES, PARTS, default_cache_dir
from pkg.embedders import DEFAULT_SPEC, FAST_PROFILE, Embedder, fit_teacher, make_embedder
from pkg.embedders.tuning import FAST_PROFILE_TUNING, Pair, TuneSettings, fit_texts, mine_pairs, tune
from pkg.errors import ConfigError, StoreError, StoreNotFoundError
from pkg.graph import EmbedderInfo, Label
from pkg.progress import Progress, no_progress
from pkg.schema import FileNode, ImplNode, NameNode, NodeRecord
from pkg.stores import GraphStore, open_store
from pkg.stores.base import GraphCounts
from retrieval.search import DEFAULT_MODE, Options, Retrieval, mode_spec, retrieve

if TYPE_CHECKING:
    from ingest.parse import BuildReport
    from ingest.sources import Structurer
    from retrieval.definitions import ContextOptions, DefinitionsContext

DB_MARKER_TEXT = "A PKG database (`pkg build --db`): builds skip this directory wherever they meet it.\n"


@dataclass
class Built:
    """What `KnowledgeBase.build` did: the parse and write report, and the BM25 documents per unit."""

    report: BuildReport
    bm25: dict[str, int]


@dataclass(frozen=True)
class Tuned:
    """What `KnowledgeBase.tune` did: the embedder spec it recorded, the Python functions it read, the
    pairs it trained on, whether it trained (else the model was there), the nodes it re-embedded, and for
    a database of the fast profile the texts its static table was fitted on (else 0)."""

    spec: str
    functions: int
    pairs: int
    trained: bool
    reembedded: int
    seconds: float
    fitted_texts: int = 0


@dataclass(frozen=True)
class Call:
    """The other end of a CALLS edge: the function called (or calling), the call's line, how it was resolved."""

    function: NameNode
    line: int
    resolution: str


class FunctionCalls(NamedTuple):
    """A function, its first calls (callers or callees) by line, how many more the limit left out, and how
    many were resolved in ways the filter left out (`KnowledgeBase.calls`' resolutions)."""

    function: NameNode
    calls: list[Call]
    left_out: int
    filtered_out: int


#: How many functions of one name `calls` answers for.
NAME_MATCHES = 20


def function_json(function: NameNode) -> dict[str, Any]:
    """A function's name, file, lines and language, as `pkg graph` and `pkg serve` answer them."""
    return {
        "name": function.name,
        "source": function.source,
        "start_line": function.start_line,
        "end_line": function.end_line,
        "lang": function.lang,
    }


def _fast_profile(embedder: EmbedderInfo | None) -> bool:
    """Whether a database's recorded embedder is the fast profile's: `static`, or `static:KEY` once tuned."""
    return embedder is not None and embedder.name.partition(":")[0] == FAST_PROFILE


def _by_line(call: Call) -> tuple[int, str, str]:
    return call.line, call.function.name, call.function.source


def calls_json(found: list[FunctionCalls], callers: bool) -> list[dict[str, Any]]:
    """What `KnowledgeBase.calls` found, as JSON: each function with its `callers` or `callees`, how many
    of them the limit `left_out` and how many the resolutions asked for `filtered_out`."""
    return [
        {
            **function_json(found_calls.function),
            "callers" if callers else "callees": [
                {**function_json(call.function), "line": call.line, "resolution": call.resolution}
                for call in found_calls.calls
            ],
            "left_out": found_calls.left_out,
            "filtered_out": found_calls.filtered_out,
        }
        for found_calls in found
    ]


def outline_json(outline: list[tuple[int, NodeRecord]]) -> list[dict[str, Any]]:
    """What `KnowledgeBase.file_outline` found, as JSON rows: depth, label, name and lines (a FILE's name
    is its path and its lines None)."""
    return [
        {
            "depth": depth,
            "label": record.LABEL.value,
            "name": getattr(record, "name", record.source),
            "start_line": getattr(record, "start_line", None),
            "end_line": getattr(record, "end_line", None),
        }
        for depth, record in outline
    ]


@dataclass(frozen=True)
class Stats:
    """Node counts per label, relationship counts per type, and the embedder of a PKG."""

    counts: GraphCounts
    embedder: EmbedderInfo | None


class KnowledgeBase:
    """One PKG: open it on a database directory (and a store kind), build it, query it, close it.

    `store` is a store kind (`embedded`, `neo4j`) or a store the caller opened (left open by close()).
    The store is opened on first use, so a build whose paths hold nothing leaves no empty database
    behind. `embedder` is a spec (`pkg.embedders.SPEC_HELP`) or an Embedder; left out, queries use
    the one that built the database and a first build uses the default. The embedding model is
    loaded only when a step needs vectors (BM25 modes never load it)."""

    def __init__(
        self,
        db_dir: str | Path,
        store: str | GraphStore = "embedded",
        embedder: str | Embedder | None = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        self.db_dir = Path(db_dir)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self._embedder_choice = embedder
        self._embedder: Embedder | None = embedder if isinstance(embedder, Embedder) else None
        # A store opened by the caller is used as it is and left open by close().
        self._owns_store = isinstance(store, str)
        self.store_kind = store if isinstance(store, str) else type(store).__name__
        self._store: GraphStore | None = None if isinstance(store, str) else store

    @property
    def store(self) -> GraphStore:
        """The open store; raises StoreNotFoundError when no database exists yet."""
        return self._open(create=False)

    @property
    def exists(self) -> bool:
        """Whether a database is there to query."""
        try:
            self._open(create=False)
        except StoreNotFoundError:
            return False
        return True

    @property
    def embedder(self) -> Embedder:
        """The embedder in use, loaded on first need: the one chosen, else the database's, else the default."""
        if self._embedder is None:
            spec = self._embedder_choice if isinstance(self._embedder_choice, str) else None
            if spec is None:
                info = self.store.embedder_info() if self.exists else None
                spec = info.name if info else DEFAULT_SPEC
            self._embedder = make_embedder(spec, self.cache_dir)
        return self._embedder

    def build(
        self,
        paths: Sequence[str | Path],
        parts: Sequence[str] = PARTS,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        prepare_pruning: bool = True,
        structurer: Structurer | None = None,
        progress: Progress = no_progress,
        max_file_bytes: int = MAX_FILE_BYTES,
    ) -> Built:
        """Build or update the PKG from the paths: only files that changed since the last build are
        parsed, embedded and written, files gone from the paths are removed, and every BM25 index is
        rebuilt from what the store then holds; files larger than `max_file_bytes` are skipped.
        One build of a database runs at a time: another waits for it, reporting progress stage "wait".
        Raises CorpusError when the paths hold nothing."""
        # Imported here, so that a query never loads the parsers (~0.1 s of a cold `pkg query`).
        from ingest.parse import parse_corpus  # noqa: PLC0415
        from pkg.indexing import index_corpus  # noqa: PLC0415
        from retrieval.lexical import refresh_indexes  # noqa: PLC0415

        with self._build_lock(progress), collecting_rarely:
            known = self.store.sources() if self.exists else {}
            corpus = parse_corpus(
                [Path(p) for p in paths], progress, parts, chunk_size, known, structurer, max_file_bytes, self.db_dir
            )
            store = self._open(create=True)
            self._mark_database()
            indexed: dict[str, int] = {}
            report = index_corpus(
                corpus,
                store,
                self.embedder,
                progress,
                prepare_pruning,
                alongside=lambda: indexed.update(refresh_indexes(store, self.db_dir, progress)),
            )
            return Built(report, indexed)

    def tune(
        self,
        settings: TuneSettings | None = None,
        exclude: Sequence[str] = (),
        show_progress: bool = False,
        progress: Progress = no_progress,
    ) -> Tuned:
        """Fine-tune the packaged MiniLM on the (docstring summary, code) pairs of the PKG's Python
        functions (files matching a glob of `exclude` left out; pkg.embedders.tuning) with `settings`, by
        default the profile's (tune_settings), re-embed every node with it and record it as the database's
        embedder, so that queries and later builds use it. Raises StoreNotFoundError without a database,
        TuningError with too few pairs."""
        from pkg.indexing import reembed  # noqa: PLC0415  # a cold query needs none of the build

        started = time.perf_counter()
        stored = self.store.embedder_info()
        if stored is None:
            raise StoreError("the database is empty; run `pkg build` first")
        records = [r for r in self.store.label_records(Label.IMPL) if isinstance(r, ImplNode)]
        functions = [r for r in records if r.lang == "python"]
        settings = settings or self.tune_settings()
        pairs = mine_pairs(((f.source, f.text) for f in functions), exclude, settings.max_pairs, settings.seed)
        key, trained = tune(pairs, settings, self.cache_dir / "models", show_progress)
        spec, fitted = f"tuned:{key}", 0
        if _fast_profile(stored):
            spec, fitted = self._fit_fast_profile(spec, records, pairs, exclude, settings, progress)
        self._embedder_choice, self._embedder = spec, make_embedder(spec, self.cache_dir)
        reembedded = 0 if stored.name == spec else reembed(self.store, self._embedder, progress)
        elapsed = time.perf_counter() - started
        return Tuned(spec, len(functions), len(pairs), trained, reembedded, elapsed, fitted)

    def tune_settings(self) -> TuneSettings:
        """What `tune` trains with unless told otherwise: TuneSettings(), or FAST_PROFILE_TUNING on a database
        of the fast profile, whose tuned model only teaches its static table."""
        return FAST_PROFILE_TUNING if _fast_profile(self.store.embedder_info()) else TuneSettings()

    def _fit_fast_profile(
        self,
        teacher: str,
        records: Sequence[ImplNode],
        pairs: Sequence[Pair],
        exclude: Sequence[str],
        settings: TuneSettings,
        progress: Progress,
    ) -> tuple[str, int]:
        """A database of the fast profile stays fast: a static table fitted to the tuned model's vectors of
        the PKG's functions (`records`) and the pairs' summaries (pkg.embedders.static); its spec, and the texts.
        The tuned model reads each text as far as it was trained to (settings.max_tokens): embedding the texts
        is most of the fit's time, 4.75 min of 6.1 for 20k texts at 128 tokens against 8.1 of 9.7 at the
        model's 256, at the same recall (bench_tune.py --fast-profile, bench_search.py; README)."""
        from pkg.indexing import fast_profile_fitted, function_search_texts  # noqa: PLC0415  # a cold query needs neither

        functions = list(zip((r.source for r in records), function_search_texts(self.store, records), strict=True))
        texts = fit_texts(functions, pairs, exclude, settings.seed)
        model = fit_teacher(teacher, self.cache_dir, settings.max_tokens)
        spec, _ = fast_profile_fitted(texts, model, self.cache_dir / "models", progress)
        return spec, len(texts)

    @contextmanager
    def _build_lock(self, progress: Progress) -> Iterator[None]:
        """Hold the database's build lock, waiting for another build's (progress "wait", 0 then 1)."""
        # filelock rather than fcntl: the same lock on Windows too, freed when its holder dies. Imported
        # here, like the parsers: a query never takes it.
        from filelock import FileLock, Timeout  # noqa: PLC0415

        path = self.db_dir / BUILD_LOCK
        created = not self.db_dir.exists()
        try:
            self.db_dir.mkdir(parents=True, exist_ok=True)
            lock = FileLock(path)
            try:
                lock.acquire(timeout=0)
            except Timeout:
                progress("wait", 0, 1)
                lock.acquire()
                progress("wait", 1, 1)
        except OSError as exc:
            raise StoreError(f"cannot lock {path}: {exc}") from exc
        try:
            yield
        except BaseException:
            if created and [p.name for p in self.db_dir.iterdir()] == [BUILD_LOCK]:
                path.unlink()  # a refused first build leaves no database directory behind
                self.db_dir.rmdir()
            raise
        finally:
            lock.release()

    def _mark_database(self) -> None:
        """Write the marker that tells every later build this directory is a database, never a source."""
        marker = self.db_dir / DB_MARKER
        try:
            self.db_dir.mkdir(parents=True, exist_ok=True)
            if not marker.exists():
                marker.write_text(DB_MARKER_TEXT, encoding="utf-8")
        except OSError as exc:
            raise StoreError(f"cannot write {marker}: {exc}") from exc

    def query(self, text: str, mode: str = DEFAULT_MODE, k: int = 3, options: Options | None = None) -> Retrieval:
        """The k best results of a retrieval mode for the text, and the prompt they make."""
        lexical = mode_spec(mode).lexical
        if not lexical and self.store.embedder_info() is None:
            raise StoreError("the database is empty; run `pkg build` first")
        return retrieve(self.store, None if lexical else self.embedder, text, mode, k, self.db_dir, options)

    def context_at(
        self,
        path: str | Path,
        line: int | None = None,
        text: str | None = None,
        similar: int | None = None,
        **options: Unpack[ContextOptions],
    ) -> DefinitionsContext:
        """The definitions, from other files of the PKG, of the names the code at `path` uses at `line`
        (default: its end), as stubs within `budget` tokens (default 512); `text` is the code being written
        there when it differs from the file (or the file is not on disk). `names` takes all of the file's
        (default) or those used near the line; with `gate` auto (default) nothing is returned for code that uses
        only its own file's names and the builtins, or names the graph does not hold (`.gated` says which).
        With `draft` (Python drafted for the line, not in `text`), `.invented` lists the names it invents with
        the definitions named like them, auto gives context only when it invents one, and then `.similar` holds
        the `similar` snippets (default 3) of other files most like the code and the draft, in at most half the
        budget. The options are `retrieval.definitions.ContextOptions`."""
        from retrieval.second_round import SIMILAR, draft_context  # noqa: PLC0415 (as in `build`)

        path = str(Path(path).resolve()) if text is None or Path(path).exists() else str(path)
        similar = SIMILAR if similar is None else similar
        return draft_context(self.store, self.db_dir, path, line, text, similar, **options)

    def calls(
        self, name: str, callers: bool = False, limit: int = 20, resolutions: Collection[str] = ()
    ) -> list[FunctionCalls]:
        """The functions (each once, at most NAME_MATCHES) whose qualified name is `name` or ends with
        "." + name, each with its first `limit` callees (with `callers`: callers) by line; with `resolutions`
        (of ingest.link.RESOLUTIONS), only the calls resolved in one of those ways (ConfigError for another)."""
        from ingest.link import RESOLUTIONS  # noqa: PLC0415 (as in `build`)

        if unknown := sorted(set(resolutions) - set(RESOLUTIONS)):
            raise ConfigError(f"unknown resolution {', '.join(map(repr, unknown))}: use {', '.join(RESOLUTIONS)}")
        contexts = self.store.contexts(self.store.find_functions(name, None, NAME_MATCHES))
        ids = list(dict.fromkeys(c.function.name_id for c in contexts))
        functions = [r for r in self.store.nodes(ids) if isinstance(r, NameNode)]
        edges = self.store.calls([f.id for f in functions], callers)
        others = {r.id: r for r in self.store.nodes(sorted({e.other_id for e in edges})) if isinstance(r, NameNode)}
        found: dict[str, list[Call]] = {f.id: [] for f in functions}
        filtered_out = dict.fromkeys(found, 0)
        for e in edges:
            if not resolutions or e.resolution in resolutions:
                found[e.name_id].append(Call(others[e.other_id], e.line, e.resolution))
            else:
                filtered_out[e.name_id] += 1
        # by line, then name: ids hash the file's path, so an order by id would change with the checkout
        ordered = {f.id: sorted(found[f.id], key=_by_line) for f in functions}
        return [
            FunctionCalls(f, ordered[f.id][:limit], max(len(ordered[f.id]) - limit, 0), filtered_out[f.id])
            for f in functions
        ]

    def file_outline(self, path: str) -> list[tuple[int, NodeRecord]]:
        """What the files whose path is `path` (or ends with "/" + path) contain, depth first: each FILE
        at depth 0, then its classes and functions in line order, a class's members below it."""
        edges = self.store.file_contents(path)
        records = {r.id: r for r in self.store.nodes(sorted({i for edge in edges for i in edge}))}
        children: dict[str, list[NodeRecord]] = {}
        for src, dst in edges:
            children.setdefault(src, []).append(records[dst])
        outline: list[tuple[int, NodeRecord]] = []

        def visit(record: NodeRecord, depth: int) -> None:
            outline.append((depth, record))
            members = children.get(record.id, [])
            for member in sorted(members, key=lambda m: (getattr(m, "start_line", 0), m.id)):
                visit(member, depth + 1)

        for record in sorted((r for r in records.values() if isinstance(r, FileNode)), key=lambda r: r.source):
            visit(record, 0)
        return outline

    def stats(self) -> Stats:
        """Counts and embedder of the PKG."""
        return Stats(self.store.counts(), self.store.embedder_info())

    def close(self) -> None:
        """Release the store and the embedder's caches."""
        if self._store is not None and self._owns_store:
            self._store.close()
            self._store = None

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self, create: bool) -> GraphStore:
        if self._store is None:
            self._store = open_store(self.store_kind, self.db_dir, create=create)
        return self._store
