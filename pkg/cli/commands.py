"""The commands that build, read and serve a PKG, and the options every command shares; the commands
that generate code with an LLM are in `pkg.cli.evaluate`."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from ingest.link import RESOLUTIONS
from pkg.config import DEFAULT_CHUNK_SIZE, MAX_FILE_BYTES, MIB, PARTS, default_cache_dir, default_db_dir
from pkg.embedders import DEFAULT_SPEC, SPEC_HELP
from pkg.embedders.tuning import FAST_PROFILE_TUNING, TuneSettings
from pkg.knowledge_base import KnowledgeBase, calls_json, outline_json
from pkg.stores import STORES
from retrieval.definitions import DEFAULT_BUDGET, DEFAULT_REACH, Gate, Reach, context_prompt, describe_invented
from retrieval.expand import EXPAND_BUDGET, Expand
from retrieval.fusion import FUSION_WEIGHTS, RRF_K, Fusion
from retrieval.lexical import UNITS
from retrieval.search import DEFAULT_MODE, MODES, Neighbour, Options
from retrieval.second_round import SIMILAR


class StageBars:
    """One progress bar per pipeline stage, on stderr when it is a terminal; a line when a build
    waits for another build of its database."""

    LABELS = {
        "parse": "parsing   ",
        "embed": "embedding ",
        "write": "writing   ",
        "link": "linking   ",
        "index": "BM25      ",
    }

    def __init__(self) -> None:
        self._stage: str | None = None
        self._bar: Any = None
        self._done = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage == "wait":
            if not done:
                click.echo("pkg: another build of this database is running; waiting for it to finish", err=True)
            return
        if not sys.stderr.isatty():
            return
        if stage != self._stage:
            self.close()
            self._stage, self._done = stage, 0
            self._bar = click.progressbar(length=total, label=self.LABELS.get(stage, stage), file=sys.stderr)
            self._bar.__enter__()
        self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


def db_option(command: Any) -> Any:
    command = click.option(
        "--db",
        "db_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=default_db_dir,
        show_default="$PKG_DB or ./.pkg",
        help="Directory of the embedded database, and of the BM25 indexes whichever the store.",
    )(command)
    command = click.option(
        "--store",
        type=click.Choice(STORES),
        default="embedded",
        show_default=True,
        help="Where the graph lives.",
    )(command)
    return command


def format_option(choices: list[str], help: str | None = None) -> Any:
    """--format: how a command prints its answer (the first choice, text, by default)."""
    return click.option("--format", "fmt", type=click.Choice(choices), default=choices[0], show_default=True, help=help)


def cache_option(command: Any) -> Any:
    return click.option(
        "--cache-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=default_cache_dir,
        show_default="$PKG_CACHE_DIR, else $XDG_CACHE_HOME/pkg or ~/.cache/pkg",
        help="Directory of the persistent caches: embeddings, and the replies of `pkg generate`.",
    )(command)


def embedder_option(command: Any) -> Any:
    """--embedder of a command that opens a database: the one chosen, else the database's, else the default
    (KnowledgeBase's rule)."""
    return click.option(
        "--embedder",
        default=None,
        show_default=f"the database's, else {DEFAULT_SPEC}",
        help=f"Embedding model: {SPEC_HELP}.",
    )(command)


@contextmanager
def knowledge_base(
    db_dir: Path, store: str, embedder: str | None = None, cache_dir: Path | None = None
) -> Iterator[KnowledgeBase]:
    kb = KnowledgeBase(db_dir, store, embedder, cache_dir)
    try:
        yield kb
    finally:
        kb.close()


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@db_option
@cache_option
@embedder_option
@click.option(
    "--parts",
    default=",".join(PARTS),
    show_default=True,
    help="What to build, comma-separated: functions (NAME/IMPL/BLOCK for func, block, bm25-func), "
    "rows (ROW for bm25-rows, dense-rows), chunks (CHUNK for chunk, hybrid), "
    "json (PATH/PATHVALUE for json).",
)
@click.option(
    "--chunk-size",
    type=click.IntRange(min=1),
    default=DEFAULT_CHUNK_SIZE,
    show_default=True,
    help="Largest cAST chunk, in non-whitespace characters.",
)
@click.option(
    "--max-file-size",
    type=click.IntRange(min=1),
    default=MAX_FILE_BYTES // MIB,
    show_default=True,
    metavar="MIB",
    help="Skip (and list) files larger than this many MiB; parsing one file holds about 70 bytes of memory per byte.",
)
@click.option(
    "--prepare-pruning/--no-prepare-pruning",
    default=True,
    show_default=True,
    help="Also embed every text pruning can produce, so queries prune without model calls.",
)
@click.option(
    "--structurer",
    default=None,
    metavar="GENERATOR",
    help="Turn tutorials into JSON with this LLM (e.g. llama:qwen2.5-coder-1.5b, openai:MODEL): answers are "
    "validated and retried, and the deterministic converter is the fallback. Default: deterministic only.",
)
@format_option(["text", "json"])
def build(
    paths: tuple[Path, ...],
    db_dir: Path,
    store: str,
    cache_dir: Path,
    embedder: str | None,
    parts: str,
    chunk_size: int,
    max_file_size: int,
    prepare_pruning: bool,
    structurer: str | None,
    fmt: str,
) -> None:
    """Build or update a PKG from PATHS: code files (Python, JavaScript, TypeScript, Java, Go, Rust,
    C, C++, C#), tutorials (Markdown, reStructuredText, HTML), JSON files, JSONL files of
    instruction/input/output rows with ```python fences, and directories of them (walked
    recursively). Only files that changed since the last build are processed. BM25 indexes are
    kept in --db, whichever the store."""
    chosen = [p.strip() for p in parts.split(",") if p.strip()]
    llm = _structurer(structurer, cache_dir) if structurer else None
    bars = StageBars()
    try:
        with knowledge_base(db_dir, store, embedder, cache_dir) as kb:
            built = kb.build(list(paths), chosen, chunk_size, prepare_pruning, llm, bars, max_file_size * MIB)
            info = kb.store.embedder_info()
            where = kb.store.location
    finally:
        bars.close()
        if llm is not None:
            llm.generator.close()
    report, bm25 = built.report, built.bm25
    structured = asdict(llm.stats) if llm else None
    if fmt == "json":
        extra = {
            "store": where,
            "bm25": {"dir": str(db_dir), "documents": bm25},
            "embedder": asdict(info) if info else None,
            "structurer": structured,
        }
        click.echo(json.dumps(asdict(report) | extra))
        return
    click.echo(f"built PKG in {where} ({store} store, {info.name if info else '?'}, {info.dim if info else '?'} dims)")
    click.echo(f"  files built: {report.files}  unchanged: {report.unchanged_files}  removed: {report.removed_files}")
    click.echo(
        f"  JSONL rows: {report.rows}  functions: {report.functions}  blocks: {report.blocks}  chunks: {report.chunks}"
    )
    click.echo(f"  nodes: {report.nodes}  relationships: {report.edges}")
    click.echo(
        f"  texts embedded: {report.texts_embedded}  from cache: {report.texts_from_cache}"
        f"  (incl. {report.pruning_variants} pruning variants)"
    )
    if report.skipped:
        # rarest reasons first: a symlink loop or an unreadable file is not buried under __pycache__ folders
        kinds = Counter(item.reason.split(":")[0] for item in report.skipped)
        click.echo(f"  skipped: {len(report.skipped)} (" + ", ".join(f"{k}: {n}" for k, n in kinds.most_common()) + ")")
        for item in sorted(report.skipped, key=lambda item: kinds[item.reason.split(":")[0]])[:10]:
            click.echo(f"    {item.path}: {item.reason}")
        if len(report.skipped) > 10:
            click.echo(f"    … and {len(report.skipped) - 10} more (use --format json for all)")
    if report.issues:
        click.echo(f"  left out as unparsable: {len(report.issues)}")
        for issue in report.issues[:10]:
            where = issue.source if issue.row is None else f"{issue.source}#row{issue.row}"
            click.echo(f"    {where}:{issue.line}: {issue.message}")
        if len(report.issues) > 10:
            click.echo(f"    … and {len(report.issues) - 10} more (use --format json for all)")
    if structured:
        click.echo(
            f"  tutorials structured by {structurer}: {structured['from_model']} of {structured['pages']} "
            f"(deterministic fallback: {structured['fallbacks']}, model calls: {structured['attempts']})"
        )
    click.echo(f"  BM25 indexes in {db_dir}: " + ", ".join(f"{unit} {n}" for unit, n in bm25.items()))
    click.echo(f"  seconds: {report.seconds:.1f}")


def _structurer(spec: str, cache_dir: Path) -> Any:
    """The LLM tutorial structurer, its replies cached in the cache folder."""
    from pkg.generators import make_generator
    from pkg.generators.cache import CachedGenerator, GenerationCache
    from pkg.generators.structurer import LlmStructurer

    generator = CachedGenerator(make_generator(spec), GenerationCache(cache_dir / "structurer-generations.jsonl"))
    return LlmStructurer(generator)


@click.command()
@click.argument("text")
@click.option(
    "--mode",
    type=click.Choice(list(MODES)),
    default=DEFAULT_MODE,
    show_default=True,
    help="; ".join(f"{name}: {spec.help}" for name, spec in MODES.items()) + ".",
)
@click.option("-k", "k", type=click.IntRange(min=1), default=3, show_default=True, help="Number of results.")
@click.option(
    "--no-prune", is_flag=True, help="Return retrieved code as is, without pruning (func, block, hybrid over func)."
)
@click.option(
    "--neighbour",
    type=click.Choice([n.value for n in Neighbour]),
    default="none",
    show_default=True,
    help="Add each chunk hit's next (prefix query) or previous (suffix query) chunk.",
)
@click.option(
    "--hybrid-unit",
    type=click.Choice(list(UNITS)),
    default=Options.hybrid_unit,
    show_default=True,
    help="What hybrid retrieves: rows, func or chunk.",
)
@click.option(
    "--fusion",
    type=click.Choice([f.value for f in Fusion]),
    default=Fusion(Options.fusion).value,
    show_default=True,
    help="Hybrid: how the BM25 and vector rankings combine. scores: a weighted sum of each ranking's scores"
    " scaled to 0-1, plus --name-bonus for a function the query names; rrf: weighted reciprocal rank fusion.",
)
@click.option(
    "--sparse-weight",
    type=float,
    help=f"Hybrid: BM25 weight.  [default: {FUSION_WEIGHTS[Fusion.SCORES][0]} with scores,"
    f" {FUSION_WEIGHTS[Fusion.RRF][0]} with rrf]",
)
@click.option(
    "--dense-weight",
    type=float,
    help=f"Hybrid: vector weight.  [default: {FUSION_WEIGHTS[Fusion.SCORES][1]} with scores,"
    f" {FUSION_WEIGHTS[Fusion.RRF][1]} with rrf]",
)
@click.option("--rrf-k", type=click.IntRange(min=1), default=RRF_K, show_default=True, help="Hybrid, rrf: its k.")
@click.option(
    "--name-bonus",
    type=click.FloatRange(min=0),
    default=Options.name_bonus,
    show_default=True,
    help="Hybrid over functions, scores: added to a function whose name's words (stemmed) all occur in the query"
    " (a word of 3 letters or more may begin one of the query's: eval, evaluate; or run several together:"
    " typename), and again when the query's first"
    " word is the name's first.",
)
@click.option("--with-titles", is_flag=True, help="json: prefix each leaf with the titles along its path.")
@click.option(
    "--expand",
    type=click.Choice([e.value for e in Expand]),
    default="none",
    show_default=True,
    help="Code hits (func, block, bm25-func, hybrid over func): add, as a comment under each, the signatures"
    " and docstrings (not bodies) of the functions it calls (callees) or that call it (callers), from the"
    " call graph, in call-site order.",
)
@click.option(
    "--expand-budget",
    type=click.IntRange(min=0),
    default=EXPAND_BUDGET,
    show_default=True,
    help="Tokens the --expand signatures may add under one hit.",
)
@format_option(
    ["text", "json", "prompt"], "text: readable results; json: results and prompt; prompt: the augmented prompt only."
)
@embedder_option
@db_option
@cache_option
def query(
    text: str,
    mode: str,
    k: int,
    no_prune: bool,
    neighbour: str,
    hybrid_unit: str,
    fusion: str,
    sparse_weight: float | None,
    dense_weight: float | None,
    rrf_k: int,
    name_bonus: float,
    with_titles: bool,
    expand: str,
    expand_budget: int,
    fmt: str,
    embedder: str | None,
    db_dir: Path,
    store: str,
    cache_dir: Path,
) -> None:
    """Retrieve context for TEXT (a task description or code) from the PKG."""
    options = Options(
        with_pruning=not no_prune,
        neighbour=Neighbour(neighbour),
        hybrid_unit=hybrid_unit,
        fusion=fusion,
        sparse_weight=sparse_weight,
        dense_weight=dense_weight,
        rrf_k=rrf_k,
        name_bonus=name_bonus,
        with_titles=with_titles,
        expand=expand,
        expand_budget=expand_budget,
    )
    with knowledge_base(db_dir, store, embedder, cache_dir) as kb:
        answer = kb.query(text, mode, k, options)
    if fmt == "json":
        keys = ("id", "kind", "name", "path", "row", "lines", "score", "text", "pruned_text")
        results = [{key: getattr(r, key) for key in keys} for r in answer.results]
        click.echo(json.dumps({"results": results, "prompt": answer.prompt}, indent=2))
    elif fmt == "prompt":
        click.echo(answer.prompt)
    elif not answer.results:
        click.echo(f"pkg: no {mode} results for this query", err=True)
    else:
        for rank, r in enumerate(answer.results, start=1):
            where = r.path if r.row is None else f"{r.path}#row{r.row}"
            where += f":{r.lines[0]}-{r.lines[1]}" if r.lines[0] else ""
            pruned = "  (pruned)" if r.kind in ("IMPL", "BLOCK") and r.pruned else ""
            click.echo(f"{rank}. {r.name}  [{r.kind} {r.score:.3f}]  {where}{pruned}")
            click.echo(r.pruned_text.rstrip() + "\n")


@click.command()
@db_option
@format_option(["text", "json"])
def stats(db_dir: Path, store: str, fmt: str) -> None:
    """Node counts per label, relationship counts per type, and the embedder of the PKG."""
    with knowledge_base(db_dir, store) as kb:
        found = kb.stats()
    counts, info = found.counts, found.embedder
    data = {
        "nodes": counts.nodes,
        "relationships": counts.relationships,
        "embedder": info.name if info else None,
        "dims": info.dim if info else None,
    }
    if fmt == "json":
        click.echo(json.dumps(data))
        return
    click.echo(f"embedder: {data['embedder']} ({data['dims']} dims)")
    for title, table in (("nodes", counts.nodes), ("relationships", counts.relationships)):
        click.echo(f"{title}:")
        for key, value in table.items():
            click.echo(f"  {key:<10} {value}")


@click.group()
def graph() -> None:
    """The code graph: who calls a function, what it calls, what a file contains."""


def _calls_command(callers: bool) -> Any:
    @click.argument("name")
    @click.option(
        "--limit",
        type=click.IntRange(min=1),
        default=20,
        show_default=True,
        help="At most this many callers (callees) of each function; the rest are counted.",
    )
    @click.option(
        "--resolution",
        "resolutions",
        type=click.Choice(RESOLUTIONS),
        multiple=True,
        help="Only the calls resolved this way (repeatable: --resolution self --resolution override); "
        "README's table of resolutions says what each means.  [default: all]",
    )
    @format_option(["text", "json"])
    @db_option
    def command(name: str, limit: int, resolutions: tuple[str, ...], fmt: str, db_dir: Path, store: str) -> None:
        with knowledge_base(db_dir, store) as kb:
            found = kb.calls(name, callers=callers, limit=limit, resolutions=resolutions)
        if fmt == "json":
            click.echo(json.dumps(calls_json(found, callers)))
            return
        if not found:
            raise click.ClickException(f"no function named {name!r}")
        for function, calls, left_out, filtered_out in found:
            click.echo(f"{function.name}  {function.source}:{function.start_line}")
            for call in calls:
                where = f"{call.function.source}:{call.function.start_line}"
                click.echo(
                    f"  {'<-' if callers else '->'} {call.function.name}  {where}  "
                    f"(line {call.line}, {call.resolution})"
                )
            if left_out:
                click.echo(f"  ... {left_out} more (--limit {limit})")
            if filtered_out:
                click.echo(f"  ... {filtered_out} resolved in other ways (--resolution)")

    return command


graph.command("callers", help="The functions that call NAME (qualified, or its last parts).")(_calls_command(True))
graph.command("callees", help="The functions NAME (qualified, or its last parts) calls.")(_calls_command(False))


@graph.command("file")
@click.argument("path")
@format_option(["text", "json"])
@db_option
def graph_file(path: str, fmt: str, db_dir: Path, store: str) -> None:
    """What the file PATH (or the files whose path ends with it) contains: classes and functions."""
    with knowledge_base(db_dir, store) as kb:
        outline = kb.file_outline(path)
    if not outline:
        raise click.ClickException(f"no code file {path!r} in the PKG")
    rows = outline_json(outline)
    if fmt == "json":
        click.echo(json.dumps(rows))
        return
    for row in rows:
        lines = f"  {row['start_line']}-{row['end_line']}" if row["start_line"] is not None else ""
        click.echo(f"{'  ' * row['depth']}{row['label']} {row['name']}{lines}")


def names_option(help_text: str) -> Any:
    """`--names`: which names of the code get a definition (context_at's Reach)."""
    return click.option(
        "--names",
        type=click.Choice([r.value for r in Reach]),
        default=DEFAULT_REACH.value,
        show_default=True,
        help=help_text,
    )


def _path_and_line(spec: str) -> tuple[str, int | None]:
    """PATH or PATH:LINE (a line from 1)."""
    path, colon, line = spec.rpartition(":")
    if colon and line.isdigit() and path:
        if int(line) < 1:
            raise click.BadParameter("lines count from 1", param_hint="PATH[:LINE]")
        return path, int(line)
    return spec, None


@click.command()
@click.argument("location", metavar="PATH[:LINE]")
@click.option(
    "--code",
    "code_file",
    type=click.File("r", encoding="utf-8"),
    default=None,
    help="The code being written at PATH, when it differs from the file on disk ('-': standard input).",
)
@click.option(
    "--draft",
    "draft_file",
    type=click.File("r", encoding="utf-8"),
    default=None,
    help="Python drafted for the line (e.g. a model's reply, not yet in the code): list the names it invents, "
    "which no file of the PKG, the code at PATH nor the builtins mention, with the definitions named most like "
    "them, which lead the context, and code like the draft (--similar); with gate auto, context only when it "
    "invents one ('-': standard input).",
)
@click.option(
    "--similar",
    type=click.IntRange(min=0),
    default=None,
    help="With a --draft that invents a name: this many snippets of other files most like the code before the "
    f"line and the draft (BM25 over chunks), after the definitions, in at most half the budget ({SIMILAR} by "
    "default; 0: none).",
)
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="Tokens of context at most.",
)
@names_option(
    "Define all of the file's names (nearest the line first), or only those used near the line (its enclosing "
    "top-level function or class)."
)
@click.option(
    "--gate",
    type=click.Choice([g.value for g in Gate]),
    default=Gate.AUTO.value,
    show_default=True,
    help="auto: nothing when the code near the line uses only its own file's names and the builtins (with "
    "--draft: when the draft invents no name); always: whatever it uses.",
)
@format_option(
    ["text", "json", "prompt"],
    "text: the stubs by file; json: each definition with name, path, lines, stub; "
    "prompt: the stubs, then the code up to the line.",
)
@db_option
def context(
    location: str,
    code_file: Any,
    draft_file: Any,
    similar: int | None,
    budget: int,
    names: str,
    gate: str,
    fmt: str,
    db_dir: Path,
    store: str,
) -> None:
    """The definitions the code at PATH[:LINE] uses from other files of the PKG, as stubs (signatures,
    class outlines, constants; never bodies), nearest uses first, within a token budget. PATH need not
    be in the PKG; LINE defaults to the file's last line."""
    path, line = _path_and_line(location)
    if code_file is not None and draft_file is not None and code_file.name == draft_file.name == "<stdin>":
        raise click.BadParameter("--code and --draft cannot both read standard input", param_hint="--draft")
    if similar is not None and draft_file is None:
        raise click.BadParameter("similar code is searched for a draft: give --draft too", param_hint="--similar")
    text = code_file.read() if code_file is not None else None
    draft = draft_file.read() if draft_file is not None else None
    if text is None and not Path(path).is_file():
        raise click.ClickException(f"no file {path!r} (give the code with --code)")
    with knowledge_base(db_dir, store) as kb:
        found = kb.context_at(path, line, text, similar, budget=budget, names=names, gate=gate, draft=draft)
    if fmt != "json":
        here = str(Path(path).resolve()) if Path(path).exists() else path  # as context_at reads it
        for name in found.invented:
            click.echo(f"invented: {describe_invented(name, here)}", err=True)
        for note in found.notes:
            click.echo(f"note: {note}", err=True)
    if fmt == "json":
        click.echo(json.dumps(found.json()))
    elif fmt == "prompt":
        code = text if text is not None else Path(path).read_text(encoding="utf-8")
        click.echo(context_prompt(found, path, code, line))
    elif found.gated:
        click.echo(f"no context: {found.gated}", err=True)
    elif not found.text:
        click.echo("no context: nothing the code uses from elsewhere fits the budget", err=True)
    else:
        click.echo(found.text, nl=False)


@click.command()
@click.option(
    "--http",
    "http",
    default=None,
    metavar="HOST:PORT",
    help="Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
)
@click.option(
    "--token",
    envvar="PKG_SERVE_TOKEN",
    show_envvar=True,
    default=None,
    metavar="TOKEN",
    help="Bearer token every HTTP request must carry; required unless HOST is loopback.",
)
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder the index tool may read (repeatable).  [default: the current directory]",
)
@click.option(
    "--watch",
    "watched",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Build from this file or folder now and again whenever it changes (repeatable).",
)
@embedder_option
@db_option
@cache_option
def serve(
    http: str | None,
    token: str | None,
    roots: tuple[Path, ...],
    watched: tuple[Path, ...],
    embedder: str | None,
    db_dir: Path,
    store: str,
    cache_dir: Path,
) -> None:
    """Serve the PKG to agents over MCP (stdio, or Streamable HTTP with --http): tools search,
    get_function, get_context, search_docs, stats and index, on one open database with the model loaded once."""
    from pkg.server import ServeSettings
    from pkg.server import serve as run_server

    settings = ServeSettings(db_dir, store, embedder, cache_dir, roots or (Path.cwd(),))
    run_server(settings, http, token, watched)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@embedder_option
@db_option
@cache_option
def watch(paths: tuple[Path, ...], embedder: str | None, db_dir: Path, store: str, cache_dir: Path) -> None:
    """Build the PKG from PATHS, then update it (incrementally) whenever they change, until interrupted."""
    from pkg.server import ServeSettings, watch_paths

    watch_paths(ServeSettings(db_dir, store, embedder, cache_dir), paths, lambda line: click.echo(line))


@click.command()
@click.option(
    "--max-pairs",
    type=click.IntRange(min=1),
    default=TuneSettings.max_pairs,
    show_default=True,
    help="Train on at most this many pairs (a seeded sample when there are more).",
)
@click.option("--epochs", type=click.IntRange(min=1), default=TuneSettings.epochs, show_default=True)
@click.option(
    "--batch-size",
    type=click.IntRange(min=2),
    default=TuneSettings.batch_size,
    show_default=True,
    help="Pairs per step: each summary's negatives are the batch's other functions.",
)
@click.option(
    "--learning-rate",
    type=click.FloatRange(min=0, min_open=True),
    default=TuneSettings.learning_rate,
    show_default=True,
)
@click.option(
    "--seed", type=int, default=TuneSettings.seed, show_default=True, help="Seed of the sample and the order."
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=8, max=256),
    help="Tokens of each text read in training (the tuned model embeds 256, as MiniLM): fewer train faster.  "
    f"[default: {TuneSettings.max_tokens}; {FAST_PROFILE_TUNING.max_tokens} on a database of the fast profile]",
)
@click.option(
    "--frozen-layers",
    type=click.IntRange(min=0, max=6),
    help="Lowest of MiniLM's 6 layers (and its word embeddings) left untrained: more train faster.  "
    f"[default: {TuneSettings.frozen_layers}; {FAST_PROFILE_TUNING.frozen_layers} on a database of the fast profile]",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="Leave out the functions of files whose path (as the database holds it) matches (repeatable), "
    "e.g. packages held out for an evaluation: --exclude '*/click/*'.",
)
@db_option
@cache_option
def tune(
    max_pairs: int,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    seed: int,
    max_tokens: int | None,
    frozen_layers: int | None,
    exclude: tuple[str, ...],
    db_dir: Path,
    store: str,
    cache_dir: Path,
) -> None:
    """Fine-tune the packaged MiniLM on this PKG's own Python functions (docstring summary -> code
    without the docstring, in-batch negatives) on the CPU, store it in --cache-dir/models, re-embed the
    database with it and record it as its embedder: `pkg query`, `pkg serve` and later builds use it.
    A database of the fast profile (`--embedder static`) stays fast: it gets a static table fitted to the
    tuned model's vectors of its functions (`static:KEY`) instead, its teacher trained lighter (fewer tokens,
    more frozen layers: twice as fast for a table as good). Running it again with the same functions and
    settings reuses the model (and the table)."""
    bars = StageBars()
    try:
        with knowledge_base(db_dir, store, None, cache_dir) as kb:
            settings = kb.tune_settings().given(  # the profile's max_tokens and frozen_layers unless given
                max_pairs=max_pairs,
                epochs=epochs,
                batch_size=batch_size,
                learning_rate=learning_rate,
                seed=seed,
                max_tokens=max_tokens,
                frozen_layers=frozen_layers,
            )
            tuned = kb.tune(settings, exclude, sys.stderr.isatty(), bars)
    finally:
        bars.close()
    how = "trained" if tuned.trained else "found in the cache"
    fitted = f" (the fast profile, fitted on {tuned.fitted_texts} texts)" if tuned.fitted_texts else ""
    click.echo(
        f"tuned {tuned.spec}{fitted} ({how}) on {tuned.pairs} pairs from {tuned.functions} Python functions; "
        f"re-embedded {tuned.reembedded} nodes; {tuned.seconds / 60:.1f} min"
    )
