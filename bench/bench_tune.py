"""What `pkg tune` costs at its default --max-pairs: minutes to train on 20k pairs of real code.

The pairs are mined as `pkg tune` mines them (pkg.embedders.tuning.mine_pairs) from the functions of the
venv's site-packages (bench/corpora.py: by package, then path, test folders left out), six functions
read for each pair wanted; the model is trained with the default settings (or the ones given) into a
fresh models folder, and the minutes, steps and seconds per step are recorded with the load before and
after. Its quality is bench_search.py's business (held-out packages); this one measures time alone.
With --fast-profile TEACHER it trains nothing and times what `pkg tune` adds on a database of the fast
profile instead: fitting the static table to the teacher's vectors (`minilm` has the tuned model's size)
of the texts it would take from those functions (their search texts, then the pairs' summaries, at most
pkg.embedders.tuning.FIT_TEXTS), each read to its first --max-tokens tokens as `pkg tune` has the model it
trained read them, in a fresh models folder without an embedding cache.

    python bench/bench_tune.py [--pairs 20000] [--frozen-layers N] [--max-tokens N] [--no-hard-negatives]
        [--fast-profile TEACHER]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpora import function_sources, site_packages_corpus  # noqa: E402
from bench.harness import bench_parser, generation_runs, machine, utc_now, write_result  # noqa: E402
from pkg.code.search_text import embedded_text  # noqa: E402
from pkg.embedders import fit_teacher  # noqa: E402
from pkg.embedders.static import StaticEmbedder  # noqa: E402
from pkg.embedders.tuning import Pair, TuneSettings, fit_texts, mine_pairs, training_batches, tune  # noqa: E402
from pkg.graph import Label  # noqa: E402
from pkg.indexing import fast_profile_fitted  # noqa: E402

#: Functions read per pair wanted: the first 120k functions of site-packages make more than 20k pairs.
FUNCTIONS_PER_PAIR = 6


def corpus_pairs(wanted: int) -> tuple[list[Pair], list[tuple[str, str]]]:
    """At least `wanted` pairs (all the corpus's, if fewer) and the functions read for them, as (path, source)."""
    files, _ = site_packages_corpus(wanted * FUNCTIONS_PER_PAIR)
    functions = function_sources(files)
    return mine_pairs(functions, (), wanted, 0), functions


def fit_cost(teacher: str, max_tokens: int, pairs: list[Pair], functions: list[tuple[str, str]]) -> dict:
    """Minutes to embed the fit texts with the teacher reading max_tokens tokens of each (no cache, as
    `pkg tune` fits a table to the model it trained with that length) and to fit the table on them."""
    texts = fit_texts([(path, embedded_text(Label.IMPL, source, "python")) for path, source in functions], pairs)
    with tempfile.TemporaryDirectory(prefix="pkg-bench-fit-") as models:
        model = fit_teacher(teacher, Path(models), max_tokens)
        StaticEmbedder(Path(models)).dim  # the distilled table, made before the clock starts  # noqa: B018
        embedded: list[float] = []
        started = time.perf_counter()

        def progress(stage: str, done: int, total: int) -> None:
            if stage == "embed" and done == total:
                embedded.append(time.perf_counter() - started)

        fast_profile_fitted(texts, model, Path(models), progress)
        seconds = time.perf_counter() - started
    return {
        "teacher": teacher,
        "teacher_reads": max_tokens,
        "texts": len(texts),
        "embedding_minutes": round(embedded[-1] / 60, 2),
        "fitting_minutes": round((seconds - embedded[-1]) / 60, 2),
        "total_minutes": round(seconds / 60, 2),
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--pairs", type=int, default=TuneSettings.max_pairs)
    parser.add_argument("--frozen-layers", type=int, default=TuneSettings.frozen_layers)
    parser.add_argument("--max-tokens", type=int, default=TuneSettings.max_tokens)
    parser.add_argument("--no-hard-negatives", action="store_true")
    parser.add_argument("--fast-profile", metavar="TEACHER", help="time the fast profile's fit instead of training")
    args = parser.parse_args()
    if args.fast_profile:
        pairs, sources = corpus_pairs(args.pairs)
        load_before = os.getloadavg()[0]
        cost = fit_cost(args.fast_profile, args.max_tokens, pairs, sources)
        result = {"when": utc_now(), "machine": machine(), "load_before": load_before, "pairs": len(pairs)} | cost
        print(result, file=sys.stderr)
        print(f"written to {write_result(args.out, 'tune-fast-profile', result)}")
        return
    settings = TuneSettings(
        max_pairs=args.pairs,
        max_tokens=args.max_tokens,
        frozen_layers=args.frozen_layers,
        hard_negatives=not args.no_hard_negatives,
    )
    started = time.perf_counter()
    pairs, read = corpus_pairs(args.pairs)
    functions = len(read)
    mined = time.perf_counter() - started
    steps = len(training_batches(pairs, settings))
    print(f"{len(pairs)} pairs from {functions} functions ({mined:.0f} s); {steps} steps", file=sys.stderr)
    load_before, beside_before = os.getloadavg()[0], generation_runs()
    with tempfile.TemporaryDirectory(prefix="pkg-bench-tune-") as models:
        trained_at = time.perf_counter()
        tune(pairs, settings, Path(models), show_progress=True)
        seconds = time.perf_counter() - trained_at
    result = {
        "when": utc_now(),
        "machine": machine(),
        "load_before": load_before,
        "beside_before": beside_before,
        "functions_read": functions,
        "pairs": len(pairs),
        "settings": asdict(settings),
        "steps": steps,
        "mining_seconds": round(mined, 1),
        "tuning_minutes": round(seconds / 60, 2),
        "seconds_per_step": round(seconds / steps, 2),
    }
    print(result, file=sys.stderr)
    print(f"written to {write_result(args.out, 'tune', result)}")


if __name__ == "__main__":
    main()
