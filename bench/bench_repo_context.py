"""Context recall of the repository benchmark's arms, without generation: for every task, the share of the
symbols of other files its reference body uses whose definition the arm's context holds, per stratum,
budget and `--names`; how often the auto gate lets context through; the context's size; context_at's time.
For the definitions arms, each missed symbol is `cut` (its definition is in the arm's context at an
unbounded budget, ranked below what filled the budget) or `unresolved` (not even then).

Writes repo-context-<timestamp>.json (repo-context-pilot-… with --pilot). The definitions arms need
no embedder; the similarity arm measured here is BM25 over chunks (the PKGs are built with the static
embedder, fast, which BM25 does not use).
Tokens are estimated (word/punctuation tokens), not the generator's.

    python bench/bench_repo_context.py [--pilot] [--db DIR] [--arms defs,...] [--budgets 256,512]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import bench_parser, machine, utc_now, write_result  # noqa: E402
from pkg.benchmarks.repo import CROSS_FILE, IN_FILE, PER_STRATUM, PILOT_PER_STRATUM, RepoTask, load_repo_tasks  # noqa: E402
from pkg.evaluation.repo import (  # noqa: E402
    REPO_ARMS,
    ContextSettings,
    arm_context,
    build_repositories,
    defines,
)
from pkg.knowledge_base import KnowledgeBase  # noqa: E402

BUDGETS = (128, 256, 512)
NAMES = ("near", "all")
ARMS = ("defs", "defs+func", "bm25-chunk")
#: A budget no definitions context reaches: what the arm would hold if nothing were cut.
UNBOUNDED = 1_000_000


def measure(tasks: Sequence[RepoTask], kbs: Mapping[str, KnowledgeBase], arm: str, settings: ContextSettings) -> dict:
    """Context recall (micro, over needed symbols), the auto gate's pass rate, tokens and seconds per task
    (the definitions arms: context_at twice, once per gate; warm after the first task of a package)."""
    by_stratum: dict[str, list[tuple[int, int, bool, int, float]]] = {CROSS_FILE: [], IN_FILE: []}
    missed = {"cut": 0, "unresolved": 0}
    gates = REPO_ARMS[arm].definitions
    for task in tasks:
        started = time.perf_counter()
        context = arm_context(settings, kbs[task.repository], REPO_ARMS[arm], task)
        seconds = time.perf_counter() - started
        found = sum(defines(context.text, n.short) for n in task.needs)
        tokens = settings.count_tokens(context.text) if context.snippets else 0
        by_stratum[task.stratum].append((len(task.needs), found, context.gated is None, tokens, seconds))
        if gates and found < len(task.needs):
            unbounded = arm_context(replace(settings, budget=UNBOUNDED), kbs[task.repository], REPO_ARMS[arm], task)
            for needed in task.needs:
                if not defines(context.text, needed.short):
                    missed["cut" if defines(unbounded.text, needed.short) else "unresolved"] += 1
    rows = {stratum: _row(rows, gates) for stratum, rows in by_stratum.items() if rows}
    return {**rows, "missed": missed} if gates else rows


def _row(rows: Sequence[tuple[int, int, bool, int, float]], gates: bool) -> dict:
    needed = sum(r[0] for r in rows)
    return {
        "tasks": len(rows),
        "context_recall": round(sum(r[1] for r in rows) / needed, 3) if needed else None,
        "tasks_with_every_symbol": sum(r[1] == r[0] for r in rows if r[0]),
        "auto_gives_context": sum(r[2] for r in rows) if gates else None,
        "mean_tokens": round(mean(r[3] for r in rows), 1),
        "mean_seconds": round(mean(r[4] for r in rows), 4),
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--pilot", action="store_true", help="only the pilot's 60 tasks")
    parser.add_argument("--db", type=Path, default=Path("repo-context-pkg"), help="where the packages' PKGs go")
    parser.add_argument("--arms", default=",".join(ARMS), help="the arms to measure, comma-separated")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="token budgets, comma-separated")
    args = parser.parse_args()
    tasks = load_repo_tasks(per_stratum=PILOT_PER_STRATUM if args.pilot else PER_STRATUM)
    started = time.perf_counter()
    build_repositories(args.db, "static", None)
    built = time.perf_counter() - started
    results = {}
    with ExitStack() as stack:
        kbs = {
            package: stack.enter_context(KnowledgeBase(args.db / package, embedder="static"))
            for package in dict.fromkeys(t.repository for t in tasks)
        }
        for arm in args.arms.split(","):
            for budget in map(int, args.budgets.split(",")):
                for names in NAMES if REPO_ARMS[arm].definitions else NAMES[:1]:
                    key = f"{arm} budget={budget} names={names}"
                    results[key] = measure(tasks, kbs, arm, ContextSettings(budget, names))
                    print(key, results[key], flush=True)
    result = {"date": utc_now(), "machine": machine(), "tasks": len(tasks), "build_seconds": round(built, 1)}
    name = "repo-context-pilot" if args.pilot else "repo-context"
    path = write_result(args.out, name, {**result, "pilot": args.pilot, "results": results})
    print("wrote", path)


if __name__ == "__main__":
    main()
