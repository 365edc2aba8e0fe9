"""Selection policies on the committed candidates of `pkg compare` (HumanEval and MBPP): pass@1 of each.

Every candidate is assessed in the real sandbox (alone, with HumanEval's examples, on the statement's
calls and their mutations; never the hidden tests); a chosen candidate is judged by its committed
verdict in results.jsonl. Writes policies-<timestamp>.json and policies.md.

    python bench/bench_policies.py [--benchmarks humaneval,mbpp] [--reuse policies-....json]
        [--with-codet [--write-tests] [--test-generator SPEC] [--codet-cache PATTERN]] [--limit N]
        [--candidates PATTERN]

`--with-codet` adds the policies that need model-written tests (`codet`), read from --codet-cache
(one cached reply per problem); `--write-tests` first has --test-generator write the missing ones
into it, one line per reply, so an interrupted run resumes.

Where results.jsonl holds a sampled arm's samples (`pkg compare --arms ...,norag@4`), the compute-parity
table runs every policy on pools of equal size: pkg generate's default arms, the samples alone, and
NoRAG's greedy answer with one sample fewer.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import RESULTS, bench_parser, machine, utc_now, write_result  # noqa: E402
from pkg.benchmarks import Problem, load_benchmark  # noqa: E402
from pkg.errors import PkgError  # noqa: E402
from pkg.evaluation.arms import DERIVED, GENERATING, RERANKED, RERANKED_PAPER, sampled_of  # noqa: E402
from pkg.evaluation.compare import TESTS_CACHE  # noqa: E402
from pkg.evaluation.generate import DEFAULT_ARMS  # noqa: E402
from pkg.evaluation.tasks import candidate, policy_task, shown_task  # noqa: E402
from pkg.generators import DEFAULT_GENERATOR, make_generator  # noqa: E402
from pkg.generators.cache import GenerationCache  # noqa: E402
from rerank.policies import (  # noqa: E402
    BASELINE_ARM,
    DEFAULT_POLICY,
    POLICIES,
    Assessment,
    Candidate,
    Task,
    assess,
    prose_examples,
)
from rerank.policies.written_tests import TEST_PARAMS, TESTS_ASKED, ShownTask, cached_tests, run_tests  # noqa: E402
from rerank.sandbox import Sandbox  # noqa: E402
from rerank.sandbox.bwrap import BwrapSandbox  # noqa: E402

#: The sandbox's uids, apart from those of `pkg compare` and the tests.
UID_BASE = 63700
#: Where each benchmark's model-written tests are cached, beside its candidates.
CODET_CACHE = str(RESULTS / "compare-{benchmark}" / TESTS_CACHE)
#: Each benchmark's committed candidates and their verdicts.
CANDIDATES = str(RESULTS / "compare-{benchmark}" / "results.jsonl")
Items = list[tuple[Task, list[Candidate]]]
NOTES = [
    "HumanEval examples: the docstring's `>>>` examples and those written in prose (`f(x) ➞ y`, `f(x) == y`, "
    "`f(x) should return y`, ...); `prose_examples_hold_for_canonical` in the JSON says how many of the prose "
    "ones the reference solutions pass (checked once, never used to choose)",
    "MBPP: the statement shows its hidden tests, so policies run only their calls (the inputs), never compare "
    "with the expected values; MBPP has no examples check",
    "consensus probes: the statement's calls, then type-aware mutations of their literal arguments (int ±1 and 0; "
    "float +0.5, negated, 0.0; str empty, reversed, upper-cased, shortened, lengthened; list/tuple empty, reversed, "
    "shortened, lengthened, first item mutated; dict empty, shortened, reversed), at most 24, each under 0.5 CPU s; "
    "outputs compared by canonical repr (sets and dicts sorted, floats to 9 digits, 300 characters)",
    "NoRAG's vote weight 2 of the weighted policies was picked on these same candidates (weights 1-3 tried): "
    "their gain over the unweighted ones is in-sample",
    "cascade+codet's threshold (at least 2 agreeing candidates passing at least 1 written test more than NoRAG) was "
    "picked on these same candidates among five (agreeing 1/2/3, margin 1/2; HumanEval, MBPP passed): 1,1: 134, 168; "
    "2,1: 133, 174; 1,2: 134, 168; 2,2: 132, 174; 3,1: 134, 170. Its lead over cascade on MBPP is in-sample",
]


@dataclass(frozen=True)
class Codet:
    """Where the written tests are cached, the model that writes them, and whether to write missing ones."""

    cache: str  # a path with {benchmark}
    generator: str
    write: bool

    def tests(self, benchmark: str, shown: Sequence[ShownTask]) -> list[tuple[str, ...]]:
        cache = GenerationCache(Path(self.cache.format(benchmark=benchmark)))
        writer = (lambda: make_generator(self.generator)) if self.write else None

        def done(count: int) -> None:
            print(f"\r{benchmark}: wrote tests for {count} problems", end="", file=sys.stderr, flush=True)

        return cached_tests(shown, cache, self.generator, writer, TEST_PARAMS, done)


def with_test_verdicts(sandbox: Sandbox, items: Items, assessments: list[list[Assessment]]) -> list[list[Assessment]]:
    """Reused assessments with the candidates' verdicts on the written tests, run now."""
    programs = [candidate.program for _, candidates in items for candidate in candidates]
    verdicts = iter(run_tests(sandbox, programs, [task.tests for task, candidates in items for _ in candidates]))
    return [[replace(a, tests=next(verdicts)) for a in row] for row in assessments]


def load_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def candidates_of(problem: Problem, records: Sequence[dict]) -> list[Candidate]:
    return [candidate(problem, r["arm"], r["code"], r["similarity"]) for r in records]


def reloaded(rows: list[dict]) -> list[Assessment]:
    return [
        Assessment(
            a["parses"],
            a["runs"],
            a["examples"],
            None if a["outputs"] is None else tuple(a["outputs"]),
            tuple(a.get("tests", ())),
        )
        for a in rows
    ]


def canonical_check(sandbox: Sandbox, problems: Sequence[Problem]) -> str:
    """How many prose examples the reference solutions pass: a check of the extraction alone."""
    programs = [
        problem.canonical_solution + "\n" + example + "\n"
        for problem in problems
        for example in prose_examples(problem.prompt, problem.entry_point)
    ]
    return f"{sum(outcome.passed for outcome in sandbox.run_many(programs))}/{len(programs)}"


def choices_of(
    items: Items, assessments: list[list[Assessment]], passed: dict[str, list[bool]], names: Sequence[str]
) -> dict:
    """Each named policy's pick per problem: the arm, the deciding stage, the verdict, the cluster sizes."""
    choices: dict[str, dict[str, dict]] = {}
    for name in names:
        policy = POLICIES[name]
        choices[name] = {}
        for (task, candidates), assessed in zip(items, assessments, strict=True):
            selection = policy.choose(task, candidates, assessed)
            choices[name][task.task_id] = {
                "arm": candidates[selection.index].arm,
                "stage": selection.stage,
                "passed": passed[task.task_id][selection.index],
                "clusters": selection.clusters,
            }
    return choices


def evaluate(
    benchmark: str,
    sandbox: Sandbox | None,
    reused: dict | None,
    codet: Codet | None = None,
    limit: int | None = None,
    candidates: str = CANDIDATES,
) -> dict:
    """Every policy's choices and pass@1 on one benchmark (on its first `limit` problems), beside NoRAG's
    and the oracle's; those that need written tests only with `codet`; and the compute-parity pools
    where a sampled arm's samples are committed."""
    problems = {p.task_id: p for p in load_benchmark(benchmark)}
    by_task: dict[str, list[dict]] = {}
    samples: dict[str, list[dict]] = {}
    committed: dict[tuple[str, str], str] = {}  # (derived arm, task id) -> the arm it chose
    for record in load_records(Path(candidates.format(benchmark=benchmark))):
        if record["arm"] in GENERATING:
            by_task.setdefault(record["task_id"], []).append(record)
        elif sampled_of(record["arm"]):
            samples.setdefault(record["task_id"], []).append(record)
        elif record["arm"] in DERIVED:
            committed[record["arm"], record["task_id"]] = record["chosen_arm"]
    by_task = dict(list(by_task.items())[:limit])
    items = [(policy_task(problems[t]), candidates_of(problems[t], group)) for t, group in by_task.items()]
    if codet is not None:
        written = codet.tests(benchmark, [shown_task(problems[task.task_id], task.calls) for task, _ in items])
        items = [(replace(task, tests=tests), candidates) for (task, candidates), tests in zip(items, written)]
    start = time.perf_counter()
    if reused is not None:
        assessments = [reloaded(reused["assessments"][task.task_id]) for task, _ in items]
        if codet is not None:
            assert sandbox is not None
            assessments = with_test_verdicts(sandbox, items, assessments)
    else:
        assert sandbox is not None
        assessments = assess(sandbox, items)
    seconds = time.perf_counter() - start
    passed = {t: [bool(r["passed"]) for r in group] for t, group in by_task.items()}
    baseline = {t: passed[t][[r["arm"] for r in group].index(BASELINE_ARM)] for t, group in by_task.items()}
    names = [name for name, policy in POLICIES.items() if codet is not None or not policy.writes_tests]
    choices = choices_of(items, assessments, passed, names)
    rows = {
        "norag": summary({t: {"passed": baseline[t]} for t in by_task}, baseline, "no context", "none"),
        "oracle": summary(
            {t: {"passed": any(passed[t])} for t in by_task}, baseline, "any candidate passes (upper bound)", "tests"
        ),
    }
    for name in names:
        rows[name] = summary(choices[name], baseline, POLICIES[name].description, POLICIES[name].inputs)
    parity = {}
    for policy, arm in (("paper", RERANKED_PAPER), (DEFAULT_POLICY, RERANKED)):
        key = f"{policy} picks what {arm} picked"
        if policy not in choices:
            parity[key] = "not checked (its tests need --with-codet)"
            continue
        same = sum(choices[policy][t]["arm"] == committed.get((arm, t)) for t in by_task)
        parity[key] = f"{same}/{len(by_task)}"
    result = {
        "problems": len(items),
        "arms": [r["arm"] for r in next(iter(by_task.values()))],
        "assess_seconds": round(seconds, 1),
        "committed_columns": parity,
        "policies": rows,
        "choices": choices,
        "assessments": {
            task.task_id: [asdict(a) for a in row] for (task, _), row in zip(items, assessments, strict=True)
        },
    }
    if samples:
        sampled = Samples(problems, {t: samples[t] for t in by_task}, sandbox, reused)
        result["compute_parity"] = sampled.parity(items, assessments, by_task, baseline, names)
        result["sample_assessments"] = sampled.assessments_json
    if codet is not None:
        result["codet"] = {
            "generator": codet.generator,
            "cache": codet.cache.format(benchmark=benchmark),
            "problems_with_tests": sum(bool(task.tests) for task, _ in items),
            "tests": sum(len(task.tests) for task, _ in items),
            "written_tests": {task.task_id: list(task.tests) for task, _ in items},
        }
    if benchmark == "humaneval":
        key = "prose_examples_hold_for_canonical"
        checked = [problems[t] for t in by_task]
        result[key] = canonical_check(sandbox, checked) if sandbox and not reused else (reused or {}).get(key)
    return result


@dataclass
class Samples:
    """A sampled arm's committed samples per problem and their sandbox assessments (reused where an
    earlier result holds them, else run now, with the written tests' verdicts where the tasks have tests)."""

    problems: dict[str, Problem]
    records: dict[str, list[dict]]
    sandbox: Sandbox | None
    reused: dict | None

    def __post_init__(self) -> None:
        first = next(iter(self.records.values()))
        sampled = sampled_of(first[0]["arm"])
        assert sampled is not None
        self.sampled = sampled
        self.assessments_json: dict[str, list[dict]] = {}

    def assess(self, items: Items) -> list[list[Assessment]]:
        """The samples' assessments on `items`' tasks (whose tests, if any, are the written ones)."""
        earlier = (self.reused or {}).get("sample_assessments")
        if earlier is not None:
            assessed = [reloaded(earlier[task.task_id]) for task, _ in items]
            if any(task.tests for task, _ in items):
                assert self.sandbox is not None
                assessed = with_test_verdicts(self.sandbox, items, assessed)
        else:
            assert self.sandbox is not None
            assessed = assess(self.sandbox, items)
        self.assessments_json = {task.task_id: [asdict(a) for a in row] for (task, _), row in zip(items, assessed)}
        return assessed

    def parity(
        self,
        items: Items,
        assessments: list[list[Assessment]],
        by_task: dict[str, list[dict]],
        baseline: dict[str, bool],
        names: Sequence[str],
    ) -> dict:
        """Pass counts of every policy (and the oracle) on pools of equal size: pkg generate's default
        arms, the samples alone, NoRAG with one sample fewer, beside the whole pool of arms."""
        sample_items = [
            (task, candidates_of(self.problems[task.task_id], self.records[task.task_id])) for task, _ in items
        ]
        sample_assessed = self.assess(sample_items)
        # Every candidate of a problem by its arm: (candidate, assessment, verdict).
        pooled: dict[str, dict[str, tuple[Candidate, Assessment, bool]]] = {}
        for (task, candidates), assessed, sampled_assessed, (_, sampled) in zip(
            items, assessments, sample_assessed, sample_items, strict=True
        ):
            records = by_task[task.task_id] + self.records[task.task_id]
            both = zip([*candidates, *sampled], [*assessed, *sampled_assessed], records, strict=True)
            pooled[task.task_id] = {c.arm: (c, a, bool(r["passed"])) for c, a, r in both}
        samples = list(self.sampled.samples)
        pools = {
            "all arms": [c.arm for c in items[0][1]],
            "pkg generate's arms": list(DEFAULT_ARMS),
            f"{self.sampled.name} samples": samples,
            f"norag + {len(samples) - 1} samples": [BASELINE_ARM, *samples[:-1]],
        }
        tasks = {task.task_id: task for task, _ in items}
        table: dict[str, dict] = {}
        for pool, arms in pools.items():
            rows: dict[str, int | dict] = {"oracle": sum(any(pooled[t][arm][2] for arm in arms) for t in tasks)}
            for name in names:
                picks = {}
                for task_id, task in tasks.items():
                    chosen = [pooled[task_id][arm] for arm in arms]
                    selection = POLICIES[name].choose(task, [c for c, _, _ in chosen], [a for _, a, _ in chosen])
                    picks[task_id] = {"passed": chosen[selection.index][2]}
                row = summary(picks, baseline, "", "")
                rows[name] = {key: row[key] for key in ("passed", "helped", "hurt")}
            table[pool] = {"arms": arms, "policies": rows}
        return {"sampled_arm": self.sampled.name, "pools": table}


def summary(picks: dict[str, dict], baseline: dict[str, bool], description: str, inputs: str) -> dict:
    passed = sum(p["passed"] for p in picks.values())
    return {
        "passed": passed,
        "pass_at_1": round(100 * passed / len(picks), 1),
        "helped": sum(p["passed"] and not baseline[t] for t, p in picks.items()),
        "hurt": sum(baseline[t] and not p["passed"] for t, p in picks.items()),
        "description": description,
        "inputs": inputs,
    }


def markdown(results: dict[str, dict], isolation: str) -> str:
    first = next(iter(results.values()))
    shapes = "; ".join(f"{b}: {r['problems']} problems × {len(r['arms'])} arms" for b, r in results.items())
    parity = "; ".join(
        f"{b}: " + ", ".join(f"{key} {value}" for key, value in r["committed_columns"].items())
        for b, r in results.items()
    )
    lines = [
        "# Selection policies on the committed candidates",
        "",
        f"- candidates: bench/results/compare-<benchmark>/results.jsonl ({shapes}); judged by their committed verdicts",
        f"- sandbox isolation: {isolation}; against the committed `pkg compare` columns: {parity}",
        "- helped / hurt: problems the policy passes and NoRAG fails / the reverse",
        *(f"- {note}" for note in NOTES),
        *(
            f"- codet tests ({b}): {r['codet']['generator']} wrote them, one greedy reply per problem asking for "
            f"{TESTS_ASKED} `assert f(...) == expected` lines, shown HumanEval's signature and docstring or MBPP's "
            "task text and one call of its shown asserts without the expected value; kept: well-formed asserts "
            f"calling the entry point once, naming only builtins; {r['codet']['tests']} tests for "
            f"{r['codet']['problems_with_tests']}/{r['problems']} problems; each run per candidate, 1 CPU s each"
            for b, r in results.items()
            if "codet" in r
        ),
        "",
        "| policy | " + " | ".join(f"{b} pass@1 % | {b} passed | helped | hurt" for b in results) + " | inputs used |",
        "|---|" + "---|---|---|---|" * len(results) + "---|",
    ]
    for name, row in first["policies"].items():
        cells = []
        for r in results.values():
            own = r["policies"][name]
            cells += [str(own["pass_at_1"]), f"{own['passed']}/{r['problems']}", str(own["helped"]), str(own["hurt"])]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {row['inputs']} |")
    lines += ["", "Policies:", ""]
    lines += [f"- `{name}`: {POLICIES[name].description}" for name in first["policies"] if name in POLICIES]
    for benchmark, outcome in results.items():
        if "compute_parity" in outcome:
            lines += ["", *parity_table(benchmark, outcome)]
    return "\n".join(lines) + "\n"


def parity_table(benchmark: str, outcome: dict) -> list[str]:
    """The compute-parity table: one column per pool, one row per policy (passed/problems, +helped/-hurt)."""
    parity, problems = outcome["compute_parity"], outcome["problems"]
    pools = parity["pools"]
    lines = [
        f"## Compute parity on {benchmark}: the same policies over pools of retrieval arms and of samples",
        "",
        *(f"- {pool}: {', '.join(pool_rows['arms'])}" for pool, pool_rows in pools.items()),
        f"- {parity['sampled_arm']}: its arm's prompts sampled at the temperature of its `pkg compare` run "
        "(seeds 1..N); a pool without `norag` has no candidate in NoRAG's part, so the cascade falls back on "
        "self-checks and similarity",
        "- cells: passed (+helped / -hurt against greedy NoRAG)",
        "",
        "| policy | " + " | ".join(f"{pool} ({len(rows['arms'])})" for pool, rows in pools.items()) + " |",
        "|---|" + "---|" * len(pools),
    ]
    names = list(next(iter(pools.values()))["policies"])
    for name in names:
        cells = []
        for pool_rows in pools.values():
            row = pool_rows["policies"][name]
            cells.append(
                f"{row}/{problems}"
                if isinstance(row, int)
                else f"{row['passed']}/{problems} (+{row['helped']}/-{row['hurt']})"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--benchmarks", default="humaneval,mbpp")
    parser.add_argument("--reuse", type=Path, help="take the assessments from an earlier result instead of the sandbox")
    parser.add_argument("--with-codet", action="store_true", help="add the policies that need model-written tests")
    parser.add_argument("--write-tests", action="store_true", help="write the missing tests (loads the model)")
    parser.add_argument("--test-generator", default=DEFAULT_GENERATOR, help="the model that writes the tests")
    parser.add_argument("--codet-cache", default=CODET_CACHE, help="the tests' cache, {benchmark} in the path")
    parser.add_argument("--limit", type=int, help="only the first N problems of each benchmark")
    parser.add_argument("--candidates", default=CANDIDATES, help="pkg compare's results.jsonl, {benchmark} in the path")
    args = parser.parse_args()
    benchmarks = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    codet = Codet(args.codet_cache, args.test_generator, args.write_tests) if args.with_codet else None
    try:
        if args.reuse:
            earlier = json.loads(args.reuse.read_text(encoding="utf-8"))
            isolation = earlier["isolation"]
            with BwrapSandbox(workers=2, uid_base=UID_BASE) if codet else nullcontext() as sandbox:
                results = {
                    b: evaluate(b, sandbox, earlier["benchmarks"][b], codet, args.limit, args.candidates)
                    for b in benchmarks
                }
        else:
            with BwrapSandbox(workers=2, uid_base=UID_BASE) as sandbox:
                isolation = sandbox.isolation
                results = {b: evaluate(b, sandbox, None, codet, args.limit, args.candidates) for b in benchmarks}
    except PkgError as exc:
        parser.exit(2, f"bench_policies: {exc}\n")
    result = {"date": utc_now(), "machine": machine(), "isolation": isolation, "benchmarks": results}
    path = write_result(args.out, "policies", {**result, "reused": str(args.reuse) if args.reuse else None})
    (args.out / "policies.md").write_text(markdown(results, isolation), encoding="utf-8")
    for benchmark, outcome in results.items():
        print(benchmark, outcome["committed_columns"], "assess s:", outcome["assess_seconds"])
        for name, row in outcome["policies"].items():
            print(f"  {name:24} {row['passed']:4}/{outcome['problems']}  +{row['helped']} -{row['hurt']}")
        if "compute_parity" in outcome:
            print("\n".join(parity_table(benchmark, outcome)))
    print(path)


if __name__ == "__main__":
    main()
