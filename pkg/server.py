"""`pkg serve`: one open KnowledgeBase behind an MCP server, over stdio or Streamable HTTP.

The store, the BM25 indexes and the embedding model are opened once, at start, and the model is
warmed so that the first answer is as fast as the next. Reads (every tool but `index`) run on a pool
of threads at once, each with its own store connection; the embeddings they ask for meanwhile are
computed together, in one call of the model on its own thread. A write (`index`, a watch update)
waits for the reads in flight, runs alone, and the reads that arrive meanwhile wait for it; the event
loop keeps serving the transport throughout. Bad input comes back as a tool error (`isError`) of one
sentence; the server keeps serving.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import queue
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
import numpy as np
import watchfiles
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import (
    INVALID_REQUEST,
    CallToolResult,
    ErrorData,
    InputRequiredResult,
    JSONRPCError,
    TextContent,
    ToolAnnotations,
)
from pydantic import Field, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from ingest.link import RESOLUTIONS
from ingest.parse import BuildReport
from pkg.embedders import Embedder
from pkg.errors import ConfigError, PkgError
from pkg.evaluation.prompts import context_block
from pkg.knowledge_base import KnowledgeBase, calls_json, outline_json
from pkg.progress import Progress
from pkg.schema import BlockNode
from retrieval.definitions import DEFAULT_BUDGET, DEFAULT_REACH, Gate, Reach, describe_invented
from retrieval.expand import Expand
from retrieval.lexical import UNITS
from retrieval.prompt import fit_snippets
from retrieval.search import DEFAULT_MODE, MODES, Mode, Neighbour, Options, Result
from retrieval.second_round import SIMILAR
from retrieval.tokenize import estimate_tokens

#: Where the Streamable HTTP transport answers.
MCP_PATH = "/mcp"
#: The environment variable that holds the bearer token when --token is not given.
TOKEN_ENV = "PKG_SERVE_TOKEN"
#: Functions `get_function` returns at most.
FUNCTION_LIMIT = 20
#: Threads answering reads at once. More than the two cores: a read spends much of its time waiting
#: for the model, and the more queries wait together, the more one forward pass embeds.
READERS = 8
#: Threads of a torch model's forward pass. One: a pass on both cores spins on its barriers while the
#: readers and the transport want a core too, and on a busy machine (load 13 here, 40 modules) one
#: query took 1,056 ms on two threads, 37 ms on one; the 8 clients' searches 398 -> 31 ms per call.
MODEL_THREADS = 1
_HOST_PORT = re.compile(r"^\[?(?P<host>[^\[\]]+?)\]?:(?P<port>\d{1,5})$")

T = TypeVar("T")


def parse_bind(text: str) -> tuple[str, int]:
    """HOST and PORT of a `HOST:PORT` (IPv6 hosts in brackets: `[::1]:8765`)."""
    match = _HOST_PORT.match(text.strip())
    if match is None or not 0 < int(match["port"]) < 65536:
        raise ConfigError(f"--http takes HOST:PORT, like 127.0.0.1:8765, not {text!r}")
    return match["host"], int(match["port"])


def is_loopback(host: str) -> bool:
    """Whether a host name or address only reaches this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BearerTokenGuard:
    """ASGI middleware: an HTTP request without `Authorization: Bearer <token>` (the scheme in any case,
    RFC 7235) is refused with a JSON body that says what is wrong and a `WWW-Authenticate: Bearer`
    challenge carrying an RFC 6750 error code where one applies."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self._refusal(scope) if scope["type"] == "http" else None
        if refusal is not None:
            await _refuse(send, refusal)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> Refusal | None:
        given = [value for key, value in scope["headers"] if key == b"authorization"]
        if len(given) > 1:
            return Refusal(400, "invalid_request", f"send one Authorization header, not {len(given)}")
        scheme, _, credentials = (given[0] if given else b"").strip().partition(b" ")
        if scheme.lower() != b"bearer" or not credentials.strip():
            return Refusal(401, None, "this server needs the header Authorization: Bearer <token>")
        if not hmac.compare_digest(credentials.strip(), self._expected):
            return Refusal(401, "invalid_token", "the bearer token is wrong")
        return None


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: its HTTP status, its RFC 6750 error code (none when no bearer token was
    offered at all, as section 3.1 asks) and a sentence for the person reading it."""

    status: int
    code: str | None
    description: str


async def _refuse(send: Send, refusal: Refusal) -> None:
    """Answer with the refusal as a JSON-RPC error, the body the SDK's transport gives its own HTTP
    errors (its client raises it as an MCPError; the Inspector prints it)."""
    error = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=refusal.description))
    body = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    challenge = 'Bearer realm="pkg"'
    if refusal.code is not None:
        challenge += f', error="{refusal.code}", error_description="{refusal.description}"'
    headers = [
        (b"www-authenticate", challenge.encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True)
class ServeSettings:
    """What `pkg serve` opens: the KnowledgeBase, and the folders `index` may read."""

    db_dir: Path
    store: str = "embedded"
    embedder: str | None = None
    cache_dir: Path | None = None
    roots: tuple[Path, ...] = field(default_factory=lambda: (Path.cwd(),))


class ReadWriteLock:
    """Many readers at once, or one writer; a writer waiting keeps new readers out, so a stream of
    queries cannot starve a watch update. Held by the threads doing the work, not by the coroutines
    awaiting them, so a client that goes away mid-call cannot let a write overlap a read still running."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._writing and not self._writers_waiting)
            self._readers += 1
        try:
            yield
        finally:
            with self._changed:
                self._readers -= 1
                self._changed.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._changed:
            self._writers_waiting += 1
            try:
                self._changed.wait_for(lambda: not self._writing and not self._readers)
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._changed:
                self._writing = False
                self._changed.notify_all()


@dataclass
class _Embedding:
    """One caller's texts, waiting for the model's thread."""

    texts: Sequence[str]
    queries: bool
    done: Future[np.ndarray] = field(default_factory=Future)


@dataclass
class _Call:
    """Other work for the model's thread (reading the inner embedder's dimension)."""

    work: Callable[[], Any]
    done: Future[Any] = field(default_factory=Future)


class BatchedEmbedder(Embedder):
    """An embedder that many threads may call at once: every call waits for the one thread that uses
    the inner embedder (its model and its cache's connection), and the calls waiting together are
    answered by one call of it per kind (queries, documents), so one forward pass embeds the queries
    of every client asking at that moment (MiniLM on one thread: 15 ms of CPU for one query, 41 ms for
    eight). `make` builds the inner embedder, on that thread (an embedding cache's connection belongs
    to the thread that opened it)."""

    def __init__(self, make: Callable[[], Embedder]) -> None:
        self._waiting: queue.SimpleQueue[_Embedding | _Call | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="pkg-embed", daemon=True)
        self._thread.start()
        self.inner: Embedder = self._on_thread(make)
        self.name = self.inner.name
        self._dim = self._on_thread(lambda: self.inner.dim)

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def keeps_vectors(self) -> bool:
        return self.inner.keeps_vectors

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._ask(texts, queries=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self._ask([text], queries=True)[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._ask(texts, queries=True)

    def close(self) -> None:
        """Stop the model's thread once the calls already waiting are answered."""
        self._waiting.put(None)
        self._thread.join()

    def _on_thread(self, work: Callable[[], T]) -> T:
        call = _Call(work)
        self._waiting.put(call)
        result: T = call.done.result()
        return result

    def _ask(self, texts: Sequence[str], queries: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        job = _Embedding(texts, queries)
        self._waiting.put(job)
        return job.done.result()

    def _serve(self) -> None:
        while (first := self._waiting.get()) is not None:
            jobs = [first]
            while not self._waiting.empty():
                job = self._waiting.get()
                if job is None:
                    self._waiting.put(None)  # stop after these
                    break
                jobs.append(job)
            for call in (j for j in jobs if isinstance(j, _Call)):
                _settle(call.done, call.work)
            embeddings = [j for j in jobs if isinstance(j, _Embedding)]
            for queries in (True, False):
                self._answer([j for j in embeddings if j.queries is queries])

    def _answer(self, jobs: list[_Embedding]) -> None:
        if not jobs:
            return
        texts = [text for job in jobs for text in job.texts]
        embed = self.inner.embed_queries if jobs[0].queries else self.inner.embed_documents
        try:
            vectors = embed(texts)
        except Exception as exc:  # every caller gets the failure, as raised
            for job in jobs:
                job.done.set_exception(exc)
            return
        start = 0
        for job in jobs:
            job.done.set_result(vectors[start : start + len(job.texts)])
            start += len(job.texts)


def _warmed(embedder: Embedder) -> Embedder:
    """The embedder with its model loaded and run once (past its cache, which may hold the text), as a
    query and as a document (a model may run queries apart: SentenceTransformerEmbedder in ONNX), a
    torch model then limited to MODEL_THREADS: torch keeps that limit per thread, and this runs on the
    thread that runs the model."""
    inner = getattr(embedder, "inner", embedder)
    inner.embed_query("warm up the model")
    inner.embed_documents(["warm up the model"])
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(MODEL_THREADS)
    return embedder


def _settle(done: Future[T], work: Callable[[], T]) -> None:
    """Complete a future with what work returns, or with what it raises."""
    try:
        done.set_result(work())
    except Exception as exc:  # the caller waiting on the future gets it, typed as raised
        done.set_exception(exc)


class Workspace:
    """The open KnowledgeBase, the threads that use it, and the lock that keeps writes apart from reads."""

    def __init__(self, settings: ServeSettings, readers: int = READERS) -> None:
        self.settings = settings
        self.roots = tuple(root.resolve() for root in settings.roots)
        self._readers = ThreadPoolExecutor(max_workers=readers, thread_name_prefix="pkg-read")
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pkg-write")
        self._lock = ReadWriteLock()
        self._kb: KnowledgeBase | None = None
        self._embedder: BatchedEmbedder | None = None

    async def read(self, work: Callable[..., T], *args: Any) -> T:
        """Run blocking work that only reads the KnowledgeBase, beside other reads."""
        return await self._submit(self._readers, self._lock.reading, work, *args)

    async def write(self, work: Callable[..., T], *args: Any) -> T:
        """Run blocking work that may change the KnowledgeBase, alone."""
        return await self._submit(self._writer, self._lock.writing, work, *args)

    async def _submit(
        self,
        pool: ThreadPoolExecutor,
        held: Callable[[], AbstractContextManager[None]],
        work: Callable[..., T],
        *args: Any,
    ) -> T:
        def locked() -> T:
            with held():
                return work(*args)

        return await asyncio.wrap_future(pool.submit(locked))

    @property
    def kb(self) -> KnowledgeBase:
        if self._kb is None:
            raise ConfigError("the knowledge base is not open")
        return self._kb

    def open(self) -> None:
        """Open the KnowledgeBase and its store (if built: a KnowledgeBase opens its store on first use,
        which two reads must not do at once), and its embedder, warmed, behind a BatchedEmbedder."""
        s = self.settings
        with KnowledgeBase(s.db_dir, s.store, s.embedder, s.cache_dir) as chooser:
            # the one asked for, else the database's, else the default
            self._embedder = BatchedEmbedder(lambda: _warmed(chooser.embedder))
        self._kb = KnowledgeBase(s.db_dir, s.store, self._embedder, s.cache_dir)
        if not self._kb.exists:  # else the store is open now
            _say(f"no database in {s.db_dir} yet: the index tool builds one")

    def shutdown(self) -> None:
        """Let the calls in flight finish, then close the KnowledgeBase and stop the threads."""
        self._readers.shutdown()
        self._writer.shutdown()
        if self._kb is not None:
            self._kb.close()
        if self._embedder is not None:
            self._embedder.close()

    def readable(self, path: str) -> str:
        """A file a tool may read: one the database was built from, or one under the allowed roots."""
        if path in self.kb.store.sources():
            return path
        return str(self.allowed([path])[0])

    def allowed(self, paths: Sequence[str]) -> list[Path]:
        """The paths resolved (relative ones against the first root), each checked to exist under a root."""
        if not paths:
            raise ConfigError("give at least one path to index")
        resolved = []
        for text in paths:
            path = (self.roots[0] / text).resolve()
            if not any(path.is_relative_to(root) for root in self.roots):
                raise ConfigError(f"{text} is outside the allowed roots ({', '.join(map(str, self.roots))})")
            if not path.exists():
                raise ConfigError(f"{text} does not exist")
            resolved.append(path)
        return resolved


def _result(data: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _result_row(result: Result, text: str) -> dict[str, Any]:
    return {
        "id": result.id,
        "kind": result.kind,
        "name": result.name,
        "path": result.path,
        "row": result.row,
        "lines": list(result.lines),
        "score": round(result.score, 4),
        "text": text,
        "pruned": result.pruned,
    }


def _title(result: Result) -> str:
    where = result.path if result.row is None else f"{result.path}#row{result.row}"
    return (
        f"{result.name} ({where}:{result.lines[0]}-{result.lines[1]})"
        if result.lines[0]
        else f"{result.name} ({where})"
    )


def _fit(results: Sequence[Result], max_tokens: int | None) -> tuple[list[tuple[Result, str]], bool]:
    """The results with their texts, cut to max_tokens tokens in all (whole results first)."""
    texts = [r.pruned_text for r in results]
    if max_tokens is None:
        return list(zip(results, texts, strict=True)), False
    kept, truncated = fit_snippets(texts, max_tokens, estimate_tokens)
    return list(zip(results, kept, strict=False)), truncated


def _one_of(description: str, choices: Iterable[str]) -> Any:
    """The Field of a string argument that takes one of the choices, listed as the schema's enum."""
    return Field(description=description, json_schema_extra={"enum": list(choices)})


Text = Annotated[str, Field(description="A task description in natural language, or code.")]
ModeName = Annotated[str, _one_of("Retrieval mode: " + "; ".join(f"{n}: {s.help}" for n, s in MODES.items()), MODES)]
K = Annotated[int, Field(description="Number of results, at least 1.", json_schema_extra={"minimum": 1})]
ExpandName = Annotated[
    str,
    _one_of(
        "Code hits: add, as a comment under each, the signatures and docstrings (not bodies) of the functions it "
        "calls (callees) or that call it (callers).",
        (e.value for e in Expand),
    ),
]
HybridUnit = Annotated[str, _one_of("hybrid: what it retrieves and fuses.", UNITS)]
NeighbourName = Annotated[
    str,
    _one_of(
        "Chunk hits (chunk, bm25-chunk, hybrid over chunk): add the next chunk (for a prefix query) or the "
        "previous one (for a suffix query).",
        (n.value for n in Neighbour),
    ),
]
Budget = Annotated[
    int | None,
    Field(
        description="Most tokens (words and punctuation) of returned code in all; "
        "results past it are dropped, the last one cut at a line.",
        json_schema_extra={"minimum": 1},
    ),
]
FunctionName = Annotated[str, Field(description="Qualified name (`Class.method`) or its last parts (`method`).")]
Limit = Annotated[
    int,
    Field(
        description="At most this many callers (callees) of each function, at least 1; `left_out` counts the rest.",
        json_schema_extra={"minimum": 1},
    ),
]

Resolutions = Annotated[
    list[str] | None,
    Field(
        description="Only the calls resolved in one of these ways, as each call's `resolution` names them (all when "
        "absent): e.g. every way but the guesses by name (`property-name`, `package`, `name-only`).",
        json_schema_extra={"items": {"enum": list(RESOLUTIONS)}},
    ),
]


class Tools:
    """The MCP tools: each validates its input, runs on the Workspace's threads (`index` as a write,
    the others as reads), and answers with a readable text and the same data as structured content."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace

    async def _call(self, work: Callable[..., CallToolResult], *args: Any, writes: bool = False) -> CallToolResult:
        try:
            return await (self.ws.write if writes else self.ws.read)(work, *args)
        except PkgError as exc:
            return _error(str(exc))

    async def search(
        self,
        text: Text,
        mode: ModeName = DEFAULT_MODE,
        k: K = 5,
        prune: bool = True,
        max_tokens: Budget = None,
        expand: ExpandName = Expand.NONE.value,
        hybrid_unit: HybridUnit = Options.hybrid_unit,
        neighbour: NeighbourName = Neighbour.NONE.value,
    ) -> CallToolResult:
        """Search the Programming Knowledge Graph for code similar to a task or snippet. Returns the k best
        functions, blocks, corpus items, chunks or JSON leaves (by mode; default hybrid, BM25 and vectors
        fused over functions), best first, each with its file, lines, score (cosine similarity, BM25, or in
        hybrid the fused score: BM25 and cosine scaled to 0-1 and averaged, plus 0.2 for a function the text
        names) and code; with prune, irrelevant branches of retrieved functions are removed."""
        options = Options(with_pruning=prune, expand=expand, hybrid_unit=hybrid_unit, neighbour=neighbour)
        return await self._call(self._search, text, mode, k, max_tokens, options)

    def _search(self, text: str, mode: str, k: int, max_tokens: int | None, options: Options) -> CallToolResult:
        _check_budget(max_tokens)
        answer = self.ws.kb.query(text, mode, k, options)
        fitted, truncated = _fit(answer.results, max_tokens)
        rows = [_result_row(r, t) for r, t in fitted]
        shown = "\n\n".join(
            f"{i}. {_title(r)} [{r.kind} {r.score:.3f}]\n{t.rstrip()}" for i, (r, t) in enumerate(fitted, start=1)
        )
        return _result({"mode": mode, "results": rows, "truncated": truncated}, shown or f"no {mode} results")

    async def get_function(
        self,
        name: Annotated[str | None, Field(description="Qualified name (`Class.method`) or its last part.")] = None,
        path: Annotated[str | None, Field(description="The file's path, or its trailing part (`pkg/util.py`).")] = None,
    ) -> CallToolResult:
        """Look up functions in the knowledge graph by qualified name and/or file path. Returns each match's
        NAME (qualified name, file, lines, language), its IMPL (full source) and its top-level blocks
        (kind, lines, code). Give at least one of name and path."""
        return await self._call(self._get_function, name, path)

    def _get_function(self, name: str | None, path: str | None) -> CallToolResult:
        name, path = (name or "").strip() or None, (path or "").strip() or None
        if name is None and path is None:
            raise ConfigError("give a function name, a path, or both")
        store = self.ws.kb.store
        found = store.contexts(store.find_functions(name, path, FUNCTION_LIMIT + 1))
        blocks = {n.id: n for n in store.nodes([s.id for c in found for s in c.children]) if isinstance(n, BlockNode)}
        functions = [
            {
                "name": c.function.name,
                "path": c.function.source,
                "row": c.function.row,
                "lang": c.function.lang,
                "lines": [c.start_line, c.end_line],
                "impl": c.text,
                "blocks": [
                    {"kind": blocks[s.id].kind, "lines": [s.start_line, s.end_line], "text": blocks[s.id].text}
                    for s in c.children
                ],
            }
            for c in found[:FUNCTION_LIMIT]
        ]
        if not functions:
            raise ConfigError(f"no function matches {_criteria(name, path)}")
        shown = "\n\n".join(
            f"# {c.function.name} ({c.function.source}:{c.start_line}-{c.end_line})\n{c.text.rstrip()}"
            for c in found[:FUNCTION_LIMIT]
        )
        return _result({"functions": functions, "more": len(found) > FUNCTION_LIMIT}, shown)

    async def get_context(
        self,
        task: Text,
        k: K = 5,
        mode: ModeName = DEFAULT_MODE,
        max_tokens: Annotated[
            int, Field(description="Most tokens of context.", json_schema_extra={"minimum": 1})
        ] = 1500,
        expand: ExpandName = Expand.NONE.value,
    ) -> CallToolResult:
        """Prompt-ready context for a coding task: the k most relevant pieces of code (pruned to what matters
        for the task), titled with their names and files, in one <context> block that fits max_tokens tokens.
        Paste it into the prompt of the model that writes the code."""
        return await self._call(self._get_context, task, k, mode, max_tokens, expand)

    def _get_context(self, task: str, k: int, mode: str, max_tokens: int, expand: str) -> CallToolResult:
        _check_budget(max_tokens)
        answer = self.ws.kb.query(task, mode, k, Options(with_pruning=True, expand=expand))
        snippets = [f"# {_title(r)}\n{r.pruned_text.rstrip()}" for r in answer.results]
        frame = estimate_tokens(context_block(["x"])) - 1  # the block's own words around the snippets
        kept, truncated = fit_snippets(snippets, max(0, max_tokens - frame), estimate_tokens)
        block = context_block(kept)
        data = {
            "context": block,
            "items": [_title(r) for r in answer.results[: len(kept)]],
            "tokens": estimate_tokens(block),
            "truncated": truncated,
        }
        return _result(data, block or "no context found for this task")

    async def context_at(
        self,
        path: Annotated[
            str,
            Field(
                description="The file being written: under the allowed roots when `code` is not given (relative "
                "paths are taken from the first root); any path, used to resolve relative imports, when it is."
            ),
        ],
        line: Annotated[
            int | None, Field(description="The line being written, from 1 (default: the last).", ge=1)
        ] = None,
        code: Annotated[
            str | None, Field(description="The code being written at `path`, when it differs from the file.")
        ] = None,
        budget: Annotated[int, Field(description="Most tokens of context.", ge=1)] = DEFAULT_BUDGET,
        names: Annotated[
            str,
            Field(
                description="near: the names used in the enclosing top-level function or class; all: the file's.",
                json_schema_extra={"enum": [r.value for r in Reach]},
            ),
        ] = DEFAULT_REACH.value,
        gate: Annotated[
            str,
            Field(
                description="auto: no context when the code near the line uses only its own file's names and the "
                "builtins (given a draft: when the draft invents no name); always: context whatever it uses.",
                json_schema_extra={"enum": [g.value for g in Gate]},
            ),
        ] = Gate.AUTO.value,
        draft: Annotated[
            str | None,
            Field(
                description="Python drafted for the line and not yet in `code` or the file (e.g. a model's reply): "
                "the names it invents are listed in `invented` with the definitions named most like them, which "
                "lead the context, with the code most like the draft (`similar`); with gate `auto`, context only "
                "when it invents one."
            ),
        ] = None,
        similar: Annotated[
            int,
            Field(
                description="Given a draft that invents a name: how many snippets of other files most like the code "
                "before the line and the draft to add (BM25 over chunks), in at most half the budget.",
                ge=0,
            ),
        ] = SIMILAR,
    ) -> CallToolResult:
        """The definitions that the code being written uses from other files of the knowledge graph, as stubs
        (signatures with their docstring's first line, class outlines with fields and public methods, constant
        lines; never bodies), grouped by file and ranked by how near the line they are used, within `budget`
        tokens. Put them before the code in the prompt of the model that completes it. With gate `auto`, code that
        needs nothing from elsewhere gets no context and `gated` says why. Given a `draft`, it checks the draft's
        names: those that nothing in the graph or the file mentions were invented; then code of other files like the
        draft follows the definitions (on our repository benchmark, what helped a small model write it again)."""
        return await self._call(self._context_at, path, line, code, budget, names, gate, draft, similar)

    def _context_at(
        self,
        path: str,
        line: int | None,
        code: str | None,
        budget: int,
        names: str,
        gate: str,
        draft: str | None,
        similar: int,
    ) -> CallToolResult:
        if not path.strip():
            raise ConfigError("give the path of the file being written")
        chosen = self.ws.readable(path.strip()) if code is None else path.strip()
        found = self.ws.kb.context_at(chosen, line, code, similar, budget=budget, names=names, gate=gate, draft=draft)
        shown = found.text or f"no context: {found.gated or 'nothing the code uses from elsewhere fits the budget'}"
        invented = [f"invented: {describe_invented(name, chosen)}" for name in found.invented]
        notes = [f"note: {note}" for note in found.notes]
        return _result(found.json(), "\n".join([*invented, *notes, shown]))

    async def search_docs(self, text: Text, k: K = 5) -> CallToolResult:
        """Search the documentation and JSON documents in the knowledge graph (tutorials converted to JSON,
        JSON files, JSONL rows): the k leaves most similar to the text, each behind the section titles
        along its path."""
        return await self._call(self._search_docs, text, k)

    def _search_docs(self, text: str, k: int) -> CallToolResult:
        answer = self.ws.kb.query(text, Mode.JSON, k, Options(with_titles=True))
        rows = [
            {"path": r.name, "source": r.path, "row": r.row, "score": round(r.score, 4), "text": r.pruned_text}
            for r in answer.results
        ]
        shown = "\n".join(f"{i}. {row['text']}  ({row['source']})" for i, row in enumerate(rows, start=1))
        return _result({"results": rows}, shown or "no documentation results")

    async def callers(
        self, name: FunctionName, limit: Limit = FUNCTION_LIMIT, resolutions: Resolutions = None
    ) -> CallToolResult:
        """Who calls a function: each function whose qualified name is `name` (or ends with it), with the
        functions that call it, each with its file, lines, the line of the call and how the call was resolved
        (local, import, self, ...). An unknown name gives an empty list."""
        return await self._call(self._calls, name, limit, resolutions, True)

    async def callees(
        self, name: FunctionName, limit: Limit = FUNCTION_LIMIT, resolutions: Resolutions = None
    ) -> CallToolResult:
        """What a function calls: each function whose qualified name is `name` (or ends with it), with the
        functions of the knowledge graph it calls, each with its file, lines, the line of the call and how the
        call was resolved (local, import, self, ...). An unknown name gives an empty list."""
        return await self._call(self._calls, name, limit, resolutions, False)

    def _calls(self, name: str, limit: int, resolutions: list[str] | None, callers: bool) -> CallToolResult:
        name = name.strip()
        if not name:
            raise ConfigError("give a function name")
        if limit < 1:
            raise ConfigError("limit must be at least 1")
        found = self.ws.kb.calls(name, callers=callers, limit=limit, resolutions=resolutions or ())
        arrow = "<-" if callers else "->"
        shown = "\n".join(
            f"{f.name} ({f.source}:{f.start_line})"
            + "".join(
                f"\n  {arrow} {c.function.name} ({c.function.source}:{c.function.start_line}), "
                f"line {c.line}, {c.resolution}"
                for c in calls
            )
            + (f"\n  ... {left_out} more" if left_out else "")
            + (f"\n  ... {filtered_out} resolved in other ways" if filtered_out else "")
            for f, calls, left_out, filtered_out in found
        )
        return _result({"functions": calls_json(found, callers)}, shown or f"no function named {name!r}")

    async def file_outline(
        self,
        path: Annotated[
            str,
            Field(
                description="A code file the knowledge graph was built from, as `search` and `get_function` report "
                "it, or one under the allowed roots (relative paths are taken from the first root)."
            ),
        ],
    ) -> CallToolResult:
        """What a code file holds, from the knowledge graph: the FILE, then its classes and functions in line
        order with a class's members below it, each with its depth, label (FILE, CLASS, NAME), qualified name
        and lines. See a file's structure before reading or changing it."""
        return await self._call(self._file_outline, path)

    def _file_outline(self, path: str) -> CallToolResult:
        if not path.strip():
            raise ConfigError("give a file path")
        chosen = self.ws.readable(path.strip())
        rows = outline_json(self.ws.kb.file_outline(chosen))
        if not rows:
            raise ConfigError(f"no code file {path!r} in the knowledge graph")
        shown = "\n".join(
            f"{'  ' * row['depth']}{row['label']} {row['name']}"
            + (f"  {row['start_line']}-{row['end_line']}" if row["start_line"] is not None else "")
            for row in rows
        )
        return _result({"path": chosen, "outline": rows}, shown)

    async def stats(self) -> CallToolResult:
        """What the knowledge graph holds: node counts per label, relationship counts per type, the embedder,
        and the folders that `index` may read."""
        return await self._call(self._stats)

    def _stats(self) -> CallToolResult:
        kb = self.ws.kb
        found = kb.stats()
        data = {
            "nodes": found.counts.nodes,
            "relationships": found.counts.relationships,
            "embedder": asdict(found.embedder) if found.embedder else None,
            "store": kb.store.location,
            "roots": [str(r) for r in self.ws.roots],
        }
        return _result(data, json.dumps(data, indent=2))

    async def index(
        self,
        paths: Annotated[
            list[str],
            Field(
                description="Files or folders under the allowed roots (relative paths are taken from the first root)."
            ),
        ],
        ctx: Context,
    ) -> CallToolResult:
        """Build or update the knowledge graph from files and folders (code, tutorials, JSON, JSONL): only
        files changed since the last build are parsed and embedded, files gone are removed. Reports progress
        while it runs; queries wait until it is done."""
        loop = asyncio.get_running_loop()

        def report(progress: float, message: str) -> None:
            sent = asyncio.run_coroutine_threadsafe(ctx.report_progress(progress, None, message), loop)
            try:
                sent.result()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the client went away: the build goes on without an audience

        try:
            chosen = self.ws.allowed(paths)
        except PkgError as exc:
            return _error(str(exc))
        return await self._call(self._index, chosen, StageProgress(report), writes=True)

    def _index(self, paths: list[Path], progress: Progress) -> CallToolResult:
        built = self.ws.kb.build(paths, progress=progress)
        return _result(asdict(built.report) | {"bm25": built.bm25}, "indexed: " + _describe(built.report))


def _describe(report: BuildReport) -> str:
    return (
        f"files built {report.files}, unchanged {report.unchanged_files}, removed {report.removed_files}; "
        f"functions {report.functions}, blocks {report.blocks}, nodes {report.nodes}, "
        f"texts embedded {report.texts_embedded}, skipped {len(report.skipped)}"
    )


class StageProgress:
    """A build's (stage, done, total) calls as one increasing MCP progress value: the units done in
    every stage so far, sent at each tenth of a stage and when it ends (never twice the same value)."""

    def __init__(self, send: Callable[[float, str], None]) -> None:
        self._send = send
        self._stage: str | None = None
        self._offset = 0
        self._last = 0
        self._total = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self._stage:
            self._offset += self._total
            self._stage, self._last, self._total = stage, 0, total
        if done > self._last and (done == total or done - self._last >= max(1, total // 10)):
            self._last = done
            self._send(float(self._offset + done), f"{stage} {done}/{total}")


def _check_budget(max_tokens: int | None) -> None:
    if max_tokens is not None and max_tokens < 1:
        raise ConfigError("max_tokens must be at least 1")


def _criteria(name: str | None, path: str | None) -> str:
    return " in ".join(part for part in (name and f"name {name!r}", path and f"path {path!r}") if part)


#: The tools, each with its hints for clients: (method name, title, read-only).
TOOLS: tuple[tuple[str, str, bool], ...] = (
    ("search", "Search code", True),
    ("get_function", "Get a function", True),
    ("get_context", "Context for a task", True),
    ("context_at", "Definitions the code at a line uses", True),
    ("search_docs", "Search documentation", True),
    ("callers", "Callers of a function", True),
    ("callees", "Callees of a function", True),
    ("file_outline", "Outline of a file", True),
    ("stats", "Knowledge graph statistics", True),
    ("index", "Index files", False),
)


class CheckedServer(MCPServer[Any]):
    """An MCPServer that checks a call's arguments against its tool's signature before running it, and
    answers a mistake with one sentence (the SDK's own check answers with pydantic's report and a link
    to its docs, and ignores arguments the tool does not take). Every tool is checked, however added."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        tool = self._tool_manager.get_tool(name)  # the SDK's lookup: MCPServer has no public one (SDK 2.3.0)
        try:
            if tool is not None:
                check_arguments(tool, arguments)
        except ConfigError as exc:
            return _error(str(exc))
        return await super().call_tool(name, arguments, context)


def check_arguments(tool: Tool, arguments: dict[str, Any]) -> None:
    """Raise ConfigError, in one sentence, when the arguments do not fit the tool's signature: names it
    does not take, a required one missing, a value of the wrong type."""
    properties: dict[str, Any] = tool.parameters.get("properties", {})
    unknown = [name for name in arguments if name not in properties]
    if unknown:
        named = f"argument{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}"
        raise ConfigError(f"{tool.name} has no {named}; it takes {', '.join(properties) or 'no arguments'}")
    try:
        tool.fn_metadata.validate_arguments(arguments)
    except ValidationError as exc:
        wrong: dict[str, str] = {}
        for error in exc.errors():
            name = str(error["loc"][0]) if error["loc"] else tool.name
            takes = _takes(properties.get(name, {}))
            if error["type"] == "missing":
                wrong.setdefault(name, f"{name} is required: {takes}")
            else:
                wrong.setdefault(name, f"{name} takes {takes}, not {_shown(arguments.get(name))}")
        raise ConfigError("; ".join(wrong.values())) from exc


#: JSON schema types in words: one, and many.
_JSON_TYPES = {
    "string": ("a string", "strings"),
    "integer": ("an integer", "integers"),
    "number": ("a number", "numbers"),
    "boolean": ("true or false", "booleans"),
    "array": ("a list", "lists"),
    "object": ("an object", "objects"),
}


def _takes(schema: dict[str, Any]) -> str:
    """What a tool argument's JSON schema accepts, in words: `an integer of at least 1`, `one of a, b`."""
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    options = schema.get("anyOf", [schema])
    kinds = [_kind(option) for option in options if option.get("type") != "null"]
    words = " or ".join(kinds) + (f" of at least {schema['minimum']}" if "minimum" in schema else "")
    return words + (" (or null)" if len(kinds) < len(options) else "")


def _kind(schema: dict[str, Any]) -> str:
    one, _ = _JSON_TYPES.get(schema.get("type", ""), ("a value", "values"))
    items = schema.get("items", {}).get("type")
    return f"a list of {_JSON_TYPES[items][1]}" if items in _JSON_TYPES else one


def _shown(value: Any) -> str:
    """A value given to a tool, as JSON, cut short."""
    text = json.dumps(value, default=repr)
    return text if len(text) <= 40 else text[:37] + "..."


def build_server(workspace: Workspace) -> MCPServer[Any]:
    """The MCP server with every tool bound to the workspace."""
    server = CheckedServer(
        "pkg",
        instructions="PKG, a Programming Knowledge Graph: search code and docs, look up functions, their callers "
        "and callees and a file's outline, get prompt-ready context for a coding task, and the definitions that the "
        "code at a line uses from other files. Call `index` to add or update files.",
        log_level="WARNING",
    )
    # The SDK gives the root logger a stderr handler; libraries below log DEBUG records on loggers of
    # their own level (bm25s), which must not reach it.
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.WARNING)
    tools = Tools(workspace)
    for name, title, read_only in TOOLS:
        server.add_tool(
            getattr(tools, name),
            name=name,
            title=title,
            annotations=ToolAnnotations(read_only_hint=read_only, open_world_hint=False),
        )
    return server


def serve(
    settings: ServeSettings, http: str | None = None, token: str | None = None, watch: Sequence[Path] = ()
) -> None:
    """Open the KnowledgeBase, warm the model and serve MCP over stdio, or Streamable HTTP at `http`
    (HOST:PORT, path /mcp); keep the PKG up to date with the `watch` paths meanwhile. Binding anything
    but loopback needs a bearer token."""
    bind = parse_bind(http) if http else None
    if bind and not is_loopback(bind[0]) and not token:
        raise ConfigError(f"serving on {bind[0]} needs a bearer token: pass --token or set {TOKEN_ENV}")
    asyncio.run(_serve(settings, bind, token, list(watch)))


async def _serve(settings: ServeSettings, bind: tuple[str, int] | None, token: str | None, watch: list[Path]) -> None:
    workspace = Workspace(settings)
    watcher: asyncio.Task[None] | None = None
    try:
        await workspace.write(workspace.open)
        server = build_server(workspace)
        if watch:
            watcher = asyncio.create_task(_watch(workspace, watch))
        if bind is None:
            _say("ready on stdio")
            await server.run_stdio_async()
        else:
            await _serve_http(server, bind, token)
    finally:
        if watcher is not None:
            watcher.cancel()
        workspace.shutdown()


def watch_paths(settings: ServeSettings, paths: Sequence[Path], report: Callable[[str], None]) -> None:
    """`pkg watch`: update the PKG from the paths once the watcher is live, then after every change to
    them, until interrupted."""
    with KnowledgeBase(settings.db_dir, settings.store, settings.embedder, settings.cache_dir) as kb:
        changes = watchfiles.watch(*paths, **_watch_options(settings))
        for _ in _builds_due(changes):
            report(_update(kb, paths))


async def _watch(workspace: Workspace, paths: Sequence[Path]) -> None:
    """`pkg serve --watch`: the same updates, each on the KnowledgeBase's thread between tool calls."""
    first = True
    async for changes in watchfiles.awatch(*paths, **_watch_options(workspace.settings)):
        if changes or first:
            first = False
            _say(await workspace.write(_update, workspace.kb, paths))


def _builds_due(batches: Iterable[set[Any]]) -> Iterator[None]:
    """One item for the first batch (the watcher is live by then, so no edit slips in between the first
    build and the watch) and for every non-empty batch after it."""
    first = True
    for changes in batches:
        if changes or first:
            first = False
            yield None


def _update(kb: KnowledgeBase, paths: Sequence[Path]) -> str:
    """An incremental build, described in one line; a failure is reported and the watch goes on."""
    try:
        return "updated: " + _describe(kb.build(paths).report)
    except PkgError as exc:
        return f"not updated: {exc}"


def _watch_options(settings: ServeSettings) -> dict[str, Any]:
    """watchfiles' default filter (no VCS folders, caches, editor files), also ignoring the database and
    cache folders, which every build writes to; an empty batch after half a second of quiet, so the
    first build can wait until the watcher is live."""
    written = [settings.db_dir] + ([settings.cache_dir] if settings.cache_dir else [])
    ignored = watchfiles.DefaultFilter(ignore_paths=[str(p.resolve()) for p in written])
    return {"watch_filter": ignored, "yield_on_timeout": True, "rust_timeout": 500}


async def _serve_http(server: MCPServer, bind: tuple[str, int], token: str | None) -> None:
    import uvicorn

    host, port = bind
    app: ASGIApp = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    if token:
        app = BearerTokenGuard(app, token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    shown = f"[{host}]" if ":" in host else host
    _say(f"serving on http://{shown}:{port}{MCP_PATH}" + (" (bearer token required)" if token else ""))
    await uvicorn.Server(config).serve()


def _say(message: str) -> None:
    print(f"pkg serve: {message}", file=sys.stderr, flush=True)
