"""Code search on installed packages by CodeSearchNet's protocol: recall@1, @10 and MRR per mode and embedder.

Husain et al. (2019) pair a function's docstring summary (the query) with the function's code with
its docstring removed (the document). Here the corpus is the project venv's site-packages (test
folders left out, as in bench/corpora.py), taken file by file from every package in turn (packages in
name order, each one's files in path order) until --functions functions, so that a smaller corpus is a
prefix of a larger one. Every file is copied with the docstrings of its functions removed and built
into a PKG per embedder (functions only, no pruning variants). Packages are split by a hash of their
name: one in three is held out of any tuning (`pkg tune` trains on the others), and the queries come
from held-out packages only, from the first --query-functions functions of the order, so that both
corpus sizes answer the same queries. A query is kept where, as in CodeSearchNet's filter, its summary
(the docstring's first paragraph) has at least three words, the function at least three lines of code
and a name that is neither a test nor a dunder method, and no other function of the corpus has that
summary or the function's file and qualified name. A query is answered at rank r when the r-th result
of a mode is the function (for block mode: a block inside it). Modes func, hybrid (unit func, the
default score fusion with the name bonus) and hybrid-rrf (the hybrid before it: weighted RRF) per
embedder, block with --with-blocks (blocks are otherwise left out of the build: three quarters of its
texts); bm25-func once. No pruning: it changes no ranking. --split dev asks the queries of the training
packages instead, where settings of a lever are chosen before the held-out queries measure it. Builds
embed each function led by its name in words (pkg.code.search_text; its docstring, the other part it
leads with, is removed here); --name-words measured that lever before builds applied it: each function's
name split into words as a comment first in its body; with --with-blocks, block mode's levers:
--min-block-lines leaves out shorter blocks, --block-header puts the enclosing function's signature on
top of each block's text. --tune adds `pkg tune`'s model as an embedder, tuned on the pairs
of the corpus's training packages (the held-out ones excluded), with its cost (pairs, minutes) beside its
scores; with the fast profile (`static`) among the embedders, also the table `pkg tune` fits for a
database of the fast profile (`static:KEY`, fitted to the vectors of the training packages' functions and
the pairs' summaries by a teacher tuned as `pkg tune` tunes one there: 64 tokens, 4 frozen layers, unless
--tune-max-tokens or --tune-frozen-layers is given), with its cost.

    python bench/bench_search.py [--functions 5000] [--embedders minilm,static] [--queries 500] [--split dev]
        [--with-blocks
        [--min-block-lines N] [--block-header]] [--name-words] [--tune [--tune-pairs 20000] [--tune-epochs 1]
        [--tune-max-tokens N] [--tune-learning-rate 1e-4] [--tune-no-hard-negatives]
        [--tune-frozen-layers N]]
        [--work DIR]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpora import SITE_PACKAGES, _is_site_test, function_sources  # noqa: E402
from bench.harness import bench_parser, machine, utc_now, write_result  # noqa: E402
from ingest.graph_builder import UnitGraph, qualified_names  # noqa: E402
from ingest.parse import ParsedCorpus, SourceGraph, parse_corpus  # noqa: E402
from pkg.code.signatures import signature  # noqa: E402
from pkg.config import MAX_FILE_BYTES  # noqa: E402
from pkg.embedders import FAST_PROFILE, fit_teacher  # noqa: E402
from pkg.embedders.tuning import (  # noqa: E402
    FAST_PROFILE_TUNING,
    Pair,
    TuneSettings,
    fit_texts,
    mine_pairs,
    summary_of,
    tune,
)
from pkg.evaluation.repo import bootstrap_interval  # noqa: E402
from pkg.graph import Label, Node  # noqa: E402
from pkg.indexing import fast_profile_fitted, index_corpus, search_text  # noqa: E402
from pkg.knowledge_base import KnowledgeBase  # noqa: E402
from pkg.stores import open_store  # noqa: E402
from pkg.stores.base import GraphStore  # noqa: E402
from retrieval.fusion import Fusion  # noqa: E402
from retrieval.lexical import refresh_indexes  # noqa: E402
from retrieval.search import Options  # noqa: E402
from retrieval.tokenize import code_tokens  # noqa: E402

K = 10
HELD_OUT_EVERY = 3  # a package is held out when its name's hash is 0 modulo this
#: What is measured, by the name results report: a retrieval mode and its options (no pruning: it changes
#: no ranking). "hybrid" is the default (score fusion with the name bonus); "hybrid-rrf" the hybrid
#: before it (weighted RRF), the lever's baseline.
NO_PRUNING = Options(with_pruning=False, hybrid_unit="func")
VARIANTS: dict[str, tuple[str, Options]] = {
    "func": ("func", NO_PRUNING),
    "hybrid": ("hybrid", NO_PRUNING),
    "hybrid-rrf": ("hybrid", replace(NO_PRUNING, fusion=Fusion.RRF)),
    "block": ("block", NO_PRUNING),
    "bm25-func": ("bm25-func", NO_PRUNING),
}
MODES = ("func", "hybrid", "hybrid-rrf")
LEXICAL_MODES = ("bm25-func",)
#: What a benchmark asks: bench_search a docstring summary (Function), bench_questions a sentence.
Query = TypeVar("Query")


@dataclass(frozen=True)
class Function:
    """A function of the stripped corpus: its file there, qualified name, docstring summary, code lines."""

    path: Path
    qualname: str
    summary: str
    lines: int
    package: str


def package_of(relative: Path) -> str:
    """The top-level package (or module) a file below site-packages belongs to."""
    return relative.parts[0].removesuffix(".py")


def held_out(package: str) -> bool:
    """Whether a package is held out of tuning: its queries are the benchmark's."""
    return hashlib.sha256(package.encode()).digest()[0] % HELD_OUT_EVERY == 0


def interleaved_files(root: Path) -> Iterator[Path]:
    """Python files below root, round-robin over packages (by name), each package's files in path
    order; test folders and modules and files over the build's size cap are left out."""
    by_package: dict[str, list[Path]] = {}
    for path in sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).parts):
        if corpus_file(path, root):
            by_package.setdefault(package_of(path.relative_to(root)), []).append(path)
    queues = [by_package[name] for name in sorted(by_package)]
    for depth in range(max(map(len, queues), default=0)):
        for queue in queues:
            if depth < len(queue):
                yield queue[depth]


def corpus_file(path: Path, root: Path) -> bool:
    """Whether a Python file below root belongs in a corpus: neither a bytecode cache, nested
    site-packages, a test folder or module, nor over the build's size cap."""
    relative = path.relative_to(root)
    if {"__pycache__", "site-packages"} & set(relative.parts) or _is_site_test(relative):
        return False
    return path.stat().st_size <= MAX_FILE_BYTES


def _qualified(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function with its qualified name as the project's extractor gives it (outer.<locals>.inner)."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield prefix + child.name, child
                yield from walk(child, f"{prefix}{child.name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)

    return walk(tree, "")


def strip_docstrings(source: str) -> tuple[str, dict[str, str]] | None:
    """The source with each function's docstring removed (a function left empty gets `pass`), and the
    summaries of the functions whose docstring went, by qualified name; None when ast cannot read it."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    lines = source.split("\n")
    removals: list[tuple[int, int, str | None]] = []  # first and last line (0-based), replacement
    summaries: dict[str, str] = {}
    for qualname, function in _qualified(tree):
        doc = ast.get_docstring(function, clean=True)
        first = function.body[0]
        if doc is None or first.end_lineno is None or first.end_col_offset is None:
            continue
        before = lines[first.lineno - 1].encode()[: first.col_offset].decode(errors="replace")
        after = lines[first.end_lineno - 1].encode()[first.end_col_offset :].decode(errors="replace").strip()
        if before.strip() or (after and not after.startswith("#")):
            continue  # shares its lines with other code: kept, and not a query
        filler = f"{before}pass" if len(function.body) == 1 else None
        removals.append((first.lineno - 1, first.end_lineno - 1, filler))
        summaries[qualname] = summary_of(doc)
    for start, end, filler in sorted(removals, reverse=True):
        lines[start : end + 1] = [filler] if filler is not None else []
    stripped = "\n".join(lines)
    try:
        ast.parse(stripped)
    except SyntaxError:
        return None
    return stripped, summaries


def with_name_words(source: str) -> str:
    """The lever "identifiers split into words": a comment with each function's name split into words
    (`parse_json2Dict` -> `# parse json2 dict`) as the first line of its body, so that the words lead
    the text a model embeds; functions whose body starts on the def's line are left as they are."""
    lines = source.split("\n")
    inserts = []
    for _, function in _qualified(ast.parse(source)):
        first = function.body[0]
        indent = lines[first.lineno - 1].encode()[: first.col_offset].decode(errors="replace")
        if not indent.strip() and not isinstance(first, ast.Pass):  # the body starts its own line
            words = code_tokens(function.name)
            inserts.append((first.lineno - 1, f"{indent}# {' '.join(words[1:] or words)}"))
    for index, line in sorted(inserts, reverse=True):
        lines.insert(index, line)
    return "\n".join(lines)


def code_lines(source: str, qualname: str) -> int:
    """Lines of a function in the stripped source (0 when it is not found)."""
    for name, function in _qualified(ast.parse(source)):
        if name == qualname and function.end_lineno is not None:
            return function.end_lineno - function.lineno + 1
    return 0


def make_corpus(
    functions: int, corpus_dir: Path, name_words: bool = False, root: Path = SITE_PACKAGES
) -> tuple[list[Function], int]:
    """Copy files (stripped, and with_name_words if asked) into corpus_dir until they hold `functions`
    functions; return the functions whose docstring was removed, in corpus order, and the number of
    functions copied."""
    shutil.rmtree(corpus_dir, ignore_errors=True)
    found: list[Function] = []
    total = 0
    for path in interleaved_files(root):
        try:
            stripped = strip_docstrings(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
        if stripped is None:
            continue
        source, summaries = stripped
        count = sum(1 for _ in _qualified(ast.parse(source)))
        if count == 0:
            continue
        relative = path.relative_to(root)
        target = corpus_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(with_name_words(source) if name_words else source, encoding="utf-8")
        package = package_of(relative)
        # lines counted before the lever's comments, so that the lever keeps the same queries
        found += [Function(target, q, s, code_lines(source, q), package) for q, s in summaries.items()]
        total += count
        if total >= functions:
            break
    return found, total


def choose_queries(functions: list[Function], within: int, count: int, dev: bool = False) -> list[Function]:
    """Up to `count` queries from held-out packages (with `dev`, from the others) among the first
    `within` functions, evenly spread, filtered as CodeSearchNet filters (see the module's docstring)."""
    summaries = Counter(f.summary.lower() for f in functions)
    names = Counter((f.path, f.qualname) for f in functions)
    candidates = [
        f
        for f in functions[:within]
        if held_out(f.package) != dev
        and len(f.summary.split()) >= 3
        and f.lines >= 3
        and "test" not in f.qualname.rsplit(".", 1)[-1].lower()
        and not f.qualname.rsplit(".", 1)[-1].startswith("__")
        and summaries[f.summary.lower()] == 1
        and names[(f.path, f.qualname)] == 1
    ]
    if len(candidates) <= count:
        return candidates
    return [candidates[i * len(candidates) // count] for i in range(count)]


@dataclass(frozen=True)
class BlockLevers:
    """Block mode's levers (#35 point 3): leave out blocks of fewer lines than `min_lines` (NO_BLOCKS: all of
    them), and put the enclosing function's signature as a header on each block's embedded text."""

    min_lines: int = 1
    header: bool = False

    def apply(self, corpus: ParsedCorpus) -> ParsedCorpus:
        """The corpus with the levers applied to its BLOCK nodes (and the edges of those left out)."""
        sources = []
        for source in corpus.sources:
            impls = {n.id: n for n in source.graph.nodes if n.label is Label.IMPL}
            short = {
                n.id
                for n in source.graph.nodes
                if n.label is Label.BLOCK and n.props["end_line"] - n.props["start_line"] + 1 < self.min_lines
            }
            nodes = [self._headed(n, impls) for n in source.graph.nodes if n.id not in short]
            edges = [e for e in source.graph.edges if e.src not in short and e.dst not in short]
            sources.append(SourceGraph(source.record, UnitGraph(nodes, edges)))
        return ParsedCorpus(sources, corpus.deleted, corpus.report)

    def _headed(self, node: Node, impls: dict[str, Node]) -> Node:
        if not self.header or node.label is not Label.BLOCK:
            return node
        impl = impls[node.props["impl_id"]]
        header = signature(impl.props["text"], impl.props["lang"])
        return replace(node, props={**node.props, "text": f"{header}\n{node.props['text']}"})


NO_BLOCKS = BlockLevers(min_lines=sys.maxsize)


def build(kb: KnowledgeBase, store: GraphStore, corpus_dir: Path, levers: BlockLevers) -> int:
    """Build the corpus into kb (functions only, no pruning variants; blocks as the levers say: without
    --with-blocks none, they are three quarters of the texts to embed); how many functions it indexed."""
    corpus = levers.apply(parse_corpus([corpus_dir], parts=("functions",), known=store.sources()))
    indexed: dict[str, int] = {}
    index_corpus(
        corpus,
        store,
        kb.embedder,
        prepare_pruning=False,
        alongside=lambda: indexed.update(refresh_indexes(store, kb.db_dir)),
    )
    return indexed["func"]


def rank_of(kb: KnowledgeBase, query: Function, variant: str) -> int | None:
    """The rank (from 1) of the query's function among the first K results of a VARIANTS entry, or None."""
    mode, options = VARIANTS[variant]
    results = kb.query(query.summary, mode, K, options).results
    target = str(query.path)
    for rank, result in enumerate(results, start=1):
        if result.path == target and result.name == query.qualname:
            return rank
    return None


#: What one query's rank (None: not in the first K) scores on each measure; a run's score is their mean.
MEASURES: dict[str, Callable[[int | None], float]] = {
    "recall_at_1": lambda rank: float(rank == 1),
    "recall_at_10": lambda rank: float(rank is not None),
    "mrr_at_10": lambda rank: 1 / rank if rank is not None else 0.0,
}


def scores(ranks: list[int | None]) -> dict:
    """Recall@1, recall@10 and MRR@10 of the ranks found."""
    return {name: sum(map(value, ranks)) / len(ranks) for name, value in MEASURES.items()}


def evaluate(
    kb: KnowledgeBase,
    queries: Sequence[Query],
    modes: tuple[str, ...],
    rank: Callable[[KnowledgeBase, Query, str], int | None],
) -> dict:
    """Scores, query time and each query's rank (in the queries' order, by `rank`) per mode."""
    out = {}
    for mode in modes:
        started = time.perf_counter()
        ranks = [rank(kb, q, mode) for q in queries]
        seconds = time.perf_counter() - started
        out[mode] = {**scores(ranks), "ms_per_query": round(1000 * seconds / len(queries), 1)}
        print(f"  {mode}: {out[mode]}", file=sys.stderr, flush=True)
        out[mode]["ranks"] = ranks
    return out


def paired(ranks: list[int | None], baseline: list[int | None]) -> dict:
    """Per measure (recall@1, recall@10, MRR@10): the mean paired difference of the ranks against the
    baseline's on the same queries, its bootstrap 95% interval, and the queries it helped and hurt."""
    if len(ranks) != len(baseline):
        raise ValueError(f"{len(ranks)} ranks against {len(baseline)}: not the same queries")
    out = {}
    for name, value in MEASURES.items():
        differences = [value(a) - value(b) for a, b in zip(ranks, baseline)]
        low, high = bootstrap_interval(differences)
        out[name] = {
            "difference": sum(differences) / len(differences),
            "interval_95": [low, high],
            "helped": sum(d > 0 for d in differences),
            "hurt": sum(d < 0 for d in differences),
        }
    return out


def paired_with(runs: dict[str, dict], baseline: tuple[str, str]) -> dict:
    """Every other embedder and mode paired with the baseline (embedder, mode), when it ran."""
    spec, mode = baseline
    if spec not in runs:
        return {}
    against = runs[spec]["modes"][mode]["ranks"]
    return {
        f"{other}/{name}": paired(result["ranks"], against)
        for other, run in runs.items()
        for name, result in run["modes"].items()
        if (other, name) != baseline
    }


def held_out_globs(root: Path, packages: list[str]) -> list[str]:
    """The --exclude globs of the held-out packages under root, as `pkg tune` takes them."""
    return [glob for p in packages if held_out(p) for glob in (f"{root}/{p}/*", f"{root}/{p}.py")]


def fitted_fast_spec(
    corpus_dir: Path, packages: list[str], pairs: list[Pair], teacher: str, max_tokens: int, cache: Path
) -> tuple[str, dict]:
    """The fast profile `pkg tune` fits on a static database of the corpus: a table fitted to the tuned
    model's vectors (reading max_tokens tokens, as it was trained) of the corpus's functions (as the
    database holds them, docstrings removed) outside the held-out packages, and the pairs' summaries;
    its spec, and what it cost."""
    started = time.perf_counter()
    parsed = parse_corpus([corpus_dir], parts=("functions",))
    names = qualified_names(parsed.units)
    functions = [(n.props["source"], search_text(n, names)) for n in parsed.nodes if n.label is Label.IMPL]
    texts = fit_texts(functions, pairs, held_out_globs(corpus_dir, packages))
    spec, fitted_now = fast_profile_fitted(texts, fit_teacher(teacher, cache, max_tokens), cache / "models")
    cost = {
        "teacher": teacher,
        "teacher_reads": max_tokens,
        "texts": len(texts),
        "fitted_now": fitted_now,
        "fitting_minutes": round((time.perf_counter() - started) / 60, 2),
    }
    print(f"{spec}: {cost}", file=sys.stderr, flush=True)
    return spec, cost


def tuned_spec(
    corpus_dir: Path, packages: list[str], settings: TuneSettings, cache: Path
) -> tuple[str, dict, list[Pair]]:
    """`pkg tune`'s model for the corpus: trained on the pairs of the original files (docstrings in
    place) of the corpus's packages, the held-out ones left out by --exclude globs as `pkg tune` takes
    them; its spec, and what it cost. The pairs come from the files, not from a database: the corpus's
    database holds the functions without their docstrings."""
    started = time.perf_counter()
    originals = [SITE_PACKAGES / path.relative_to(corpus_dir) for path in sorted(corpus_dir.rglob("*.py"))]
    functions = function_sources(originals)
    pairs = mine_pairs(functions, held_out_globs(SITE_PACKAGES, packages), settings.max_pairs, settings.seed)
    mined = time.perf_counter() - started
    key, trained = tune(pairs, settings, cache / "models", show_progress=True)
    cost = {
        "functions_read": len(functions),
        "excluded_packages": sum(held_out(p) for p in packages),
        "pairs": len(pairs),
        "settings": asdict(settings),
        "trained_now": trained,
        "mining_seconds": round(mined, 1),
        "tuning_minutes": round((time.perf_counter() - started - mined) / 60, 2),
    }
    print(f"tuned:{key}: {cost}", file=sys.stderr, flush=True)
    return f"tuned:{key}", cost, pairs


def tune_settings(args: argparse.Namespace, profile: TuneSettings) -> TuneSettings:
    """`pkg tune`'s settings for a profile's database, the --tune-* options given over them."""
    return profile.given(
        max_pairs=args.tune_pairs,
        epochs=args.tune_epochs,
        learning_rate=args.tune_learning_rate,
        hard_negatives=not args.tune_no_hard_negatives,
        max_tokens=args.tune_max_tokens,
        frozen_layers=args.tune_frozen_layers,
    )


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--functions", type=int, default=5000, help="corpus size in functions")
    parser.add_argument("--query-functions", type=int, default=5000, help="queries come from these first functions")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument(
        "--split",
        choices=("test", "dev"),
        default="test",
        help="queries from the held-out packages (test), or from the others (dev: where levers' settings are"
        " chosen; a tuned model has trained on them)",
    )
    parser.add_argument("--embedders", default="minilm,static", help="comma-separated embedder specs")
    parser.add_argument("--name-words", action="store_true", help="lever: each function's name in words first")
    parser.add_argument("--with-blocks", action="store_true", help="build blocks too and measure block mode")
    parser.add_argument("--min-block-lines", type=int, default=1, help="lever: blocks of fewer lines left out")
    parser.add_argument("--block-header", action="store_true", help="lever: the function's signature atop each block")
    parser.add_argument("--work", type=Path, default=Path("/tmp/pkg-bench-search"), help="corpus, databases, cache")
    parser.add_argument("--tune", action="store_true", help="add `pkg tune`'s model, tuned on the training packages")
    parser.add_argument("--tune-pairs", type=int, default=TuneSettings.max_pairs, help="pkg tune --max-pairs")
    parser.add_argument("--tune-epochs", type=int, default=TuneSettings.epochs, help="pkg tune --epochs")
    parser.add_argument(
        "--tune-max-tokens",
        type=int,
        help=f"tokens read in training (default: pkg tune's, {TuneSettings.max_tokens}; for the fast profile's teacher "
        f"{FAST_PROFILE_TUNING.max_tokens})",
    )
    parser.add_argument("--tune-learning-rate", type=float, default=TuneSettings.learning_rate, help="of AdamW")
    parser.add_argument("--tune-no-hard-negatives", action="store_true", help="lever: pairs without hard negatives")
    parser.add_argument(
        "--tune-frozen-layers",
        type=int,
        help=f"pkg tune --frozen-layers (default: {TuneSettings.frozen_layers}; for the fast profile's teacher "
        f"{FAST_PROFILE_TUNING.frozen_layers})",
    )
    args = parser.parse_args()
    variant = f"{args.functions}{'-name-words' if args.name_words else ''}"
    corpus_dir = args.work / f"corpus-{variant}"
    levers = BlockLevers(args.min_block_lines, args.block_header) if args.with_blocks else NO_BLOCKS
    if args.with_blocks:
        variant += f"-blocks-min{levers.min_lines}{'-header' if levers.header else ''}"
    started = time.perf_counter()
    functions, total = make_corpus(args.functions, corpus_dir, args.name_words)
    queries = choose_queries(functions, args.query_functions, args.queries, dev=args.split == "dev")
    packages = sorted({f.package for f in functions})
    print(f"{total} functions, {len(packages)} packages, {len(queries)} queries", file=sys.stderr, flush=True)
    runs: dict[str, dict] = {}
    lexical: dict = {}
    specs = args.embedders.split(",")
    tuning: dict = {}
    fitting: dict = {}
    if args.tune:
        settings = tune_settings(args, TuneSettings())
        spec, tuning, pairs = tuned_spec(corpus_dir, packages, settings, args.work / "cache")
        specs.append(spec)
        if FAST_PROFILE in specs:  # `pkg tune` on the fast profile's database trains its own teacher, fits a table
            teacher_settings = tune_settings(args, FAST_PROFILE_TUNING)
            teacher, teacher_tuning, teacher_pairs = (
                (spec, tuning, pairs)
                if teacher_settings == settings
                else tuned_spec(corpus_dir, packages, teacher_settings, args.work / "cache")
            )
            fast, fitting = fitted_fast_spec(
                corpus_dir, packages, teacher_pairs, teacher, teacher_settings.max_tokens, args.work / "cache"
            )
            fitting |= {"teacher_tuning": teacher_tuning}
            specs.append(fast)
    for spec in specs:
        db = args.work / f"db-{variant}-{spec.replace(':', '_').replace('/', '_')}"
        cache = args.work / "cache"
        with open_store("embedded", db, create=True) as store, KnowledgeBase(db, store, spec, cache) as kb:
            build_started = time.perf_counter()
            indexed = build(kb, store, corpus_dir, levers)
            build_seconds = time.perf_counter() - build_started
            print(f"{spec}: built in {build_seconds:.0f} s", file=sys.stderr, flush=True)
            modes = (*MODES, "block") if args.with_blocks else MODES
            runs[spec] = {
                "build_seconds": round(build_seconds, 1),
                "functions_indexed": indexed,
                "modes": evaluate(kb, queries, modes, rank_of),
            } | ({"tuning": tuning} if spec.startswith("tuned:") else {})
            runs[spec] |= {"fitting": fitting} if spec.startswith(f"{FAST_PROFILE}:") else {}
            if not lexical:
                lexical = evaluate(kb, queries, LEXICAL_MODES, rank_of)
    result = {
        "when": utc_now(),
        "machine": machine(),
        "corpus": {
            "functions": total,
            "functions_stripped": len(functions),
            "packages": len(packages),
            "held_out_packages": sum(held_out(p) for p in packages),
            "queries": len(queries),
            "split": args.split,
            "query_packages": len({q.package for q in queries}),
            "query_functions": args.query_functions,
            "name_words": args.name_words,
            "block_levers": asdict(levers) if args.with_blocks else None,
        },
        "k": K,
        "embedders": runs,
        "lexical": lexical,
        # the baseline: the packaged MiniLM's func mode
        "paired_with_minilm_func": paired_with(runs, ("minilm", "func")),
        # the default settings (MiniLM's hybrid) against every other embedder and mode: the fast profile's target
        "paired_with_minilm_hybrid": paired_with(runs, ("minilm", "hybrid")),
        # the default hybrid (score fusion, name bonus) against the one before it, per embedder
        "hybrid_paired_with_rrf": {
            spec: paired(run["modes"]["hybrid"]["ranks"], run["modes"]["hybrid-rrf"]["ranks"])
            for spec, run in runs.items()
        },
        "queries_ranked": [f"{q.path.relative_to(corpus_dir)}:{q.qualname}" for q in queries],
        "seconds": round(time.perf_counter() - started, 1),
        "sample_queries": [{"query": q.summary, "function": q.qualname, "package": q.package} for q in queries[:10]],
    }
    print(write_result(args.out, f"search-{variant}{'-dev' if args.split == 'dev' else ''}", result))


if __name__ == "__main__":
    main()
