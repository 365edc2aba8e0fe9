"""One comparison run: generate each generating arm's candidate per problem, judge every candidate in
the sandbox on the hidden tests, derive the reranking and oracle arms, and keep one record per
(problem, arm)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from pkg.benchmarks import Problem
from pkg.embedders import Embedder
from pkg.evaluation.arms import (
    DERIVED,
    GENERATING,
    ORACLE,
    RERANKED_PAPER,
    RERANKED_PAPER_EXAMPLES,
    SAMPLE_TEMPERATURE,
    Retriever,
    Sampled,
)
from pkg.evaluation.extract import code_from_reply
from pkg.evaluation.prompts import CONTEXT_BUDGET, build_messages, context_block
from pkg.evaluation.reuse import reuses_context
from pkg.evaluation.tasks import candidate, policy_task, shown_task
from pkg.generators.base import GenerationParams, Generator, generate_many
from pkg.progress import Progress, no_progress
from rerank.policies import Policy, Selection, assess, programs_to_assess
from rerank.policies.written_tests import TEST_PARAMS, write_tests
from rerank.reranker import Evidence, choose, cosine_similarities, parses
from rerank.sandbox import Limits, Outcome, Sandbox
from retrieval.prompt import fit_snippets


def _counter(progress: Progress, stage: str, total: int) -> Callable[[int], None]:
    """A sandbox progress callback (called with 1 per finished program, from the sandbox's threads)
    reporting to `progress`."""
    done = 0
    lock = threading.Lock()

    def advance(step: int) -> None:
        nonlocal done
        with lock:
            done += step
            progress(stage, done, total)

    return advance


@dataclass
class Record:
    """One arm's answer to one problem and its verdict on the hidden tests."""

    task_id: str
    arm: str
    passed: bool
    status: str
    error_type: str | None
    message: str = ""
    code: str = ""
    reply: str = ""
    context: str = ""
    context_tokens: int = 0
    context_truncated: bool = False
    reuses_context: bool | None = None  # retrieval arms: whether the answer took the context over
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generation_seconds: float = 0.0
    finish_reason: str = ""
    chosen_arm: str | None = None  # derived arms: whose candidate they picked
    stage: str | None = None  # reranking arms: the rule that decided
    parses: bool | None = None
    runs: bool | None = None
    examples: bool | None = None
    similarity: float | None = None


@dataclass
class RunSettings:
    """What a run needs besides the problems and arms."""

    params: GenerationParams = field(default_factory=GenerationParams)
    test_limits: Limits = field(default_factory=lambda: Limits(timeout_s=10.0))
    run_limits: Limits = field(default_factory=lambda: Limits(timeout_s=10.0))
    context_budget: int = CONTEXT_BUDGET
    concurrency: int = 1  # generation requests in flight (servers only)
    sample_temperature: float = SAMPLE_TEMPERATURE  # of the sampled arms (ARM@N)


def generate_arm(
    arm_name: str,
    problems: Sequence[Problem],
    generator: Generator,
    retriever: Retriever | None,
    settings: RunSettings,
    progress: Progress = no_progress,
    label: str | None = None,
) -> list[Record]:
    """The arm's candidate for every problem (from the generation cache where possible), with up to
    `settings.concurrency` generation requests in flight; the records are the arm's, or `label`'s."""
    arm = GENERATING[arm_name]
    label = label or arm_name
    fitted = []
    for problem in problems:
        found = retriever.snippets(arm, problem.query) if arm.mode is not None and retriever else []
        fitted.append(fit_snippets(found, settings.context_budget, generator.count_tokens))
    prompts = [build_messages(problem, snippets) for problem, (snippets, _) in zip(problems, fitted, strict=True)]
    replies = generate_many(
        generator,
        prompts,
        settings.params,
        settings.concurrency,
        lambda done: progress(f"generate {label}", done, len(problems)),
    )
    records = []
    for problem, (snippets, truncated), reply in zip(problems, fitted, replies, strict=True):
        context = context_block(snippets)
        code = code_from_reply(reply.text, problem.entry_point)
        records.append(
            Record(
                task_id=problem.task_id,
                arm=label,
                passed=False,
                status="pending",
                error_type=None,
                code=code,
                reply=reply.text,
                context=context,
                context_tokens=generator.count_tokens(context) if context else 0,
                context_truncated=truncated,
                reuses_context=reuses_context(code, snippets) if arm.mode is not None else None,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                generation_seconds=reply.seconds,
                finish_reason=reply.finish_reason,
            )
        )
    return records


def generate_samples(
    sampled: Sampled,
    problems: Sequence[Problem],
    generator: Generator,
    retriever: Retriever | None,
    settings: RunSettings,
    progress: Progress = no_progress,
) -> list[Record]:
    """The sampled arm's samples for every problem, one seed after another (seeds 1..N at the run's
    sample temperature), so that an interrupted run has whole samples cached."""
    records = []
    for seed in range(1, sampled.count + 1):
        params = replace(settings.params, temperature=settings.sample_temperature, seed=seed)
        seeded = replace(settings, params=params)
        records += generate_arm(sampled.arm, problems, generator, retriever, seeded, progress, sampled.sample(seed))
    return records


def _apply(record: Record, outcome: Outcome) -> None:
    record.passed = outcome.passed
    record.status = outcome.status
    record.error_type = None if outcome.passed else outcome.error_type
    record.message = outcome.message


def _run_each(
    records: Sequence[Record],
    problems: dict[str, Problem],
    program: Callable[[Problem, str], str],
    sandbox: Sandbox,
    limits: Limits,
    progress: Progress,
    stage: str,
) -> list[Outcome]:
    """One program per record, `program(problem, completion)` for its extracted code, run in the sandbox
    within the limits; the outcomes in the records' order, counted in `progress` under `stage`."""
    programs = []
    for record in records:
        problem = problems[record.task_id]
        programs.append(program(problem, problem.completion_from_code(record.code)))
    return sandbox.run_many(programs, limits, _counter(progress, stage, len(programs)))


def by_task_id(records: Sequence[Record]) -> dict[str, list[Record]]:
    """The records grouped by problem, in the order of their first record."""
    grouped: dict[str, list[Record]] = {}
    for record in records:
        grouped.setdefault(record.task_id, []).append(record)
    return grouped


def judge(
    records: Sequence[Record],
    problems: dict[str, Problem],
    sandbox: Sandbox,
    settings: RunSettings,
    progress: Progress = no_progress,
) -> None:
    """Runs every candidate against its problem's hidden tests, in place."""
    outcomes = _run_each(records, problems, Problem.test_program, sandbox, settings.test_limits, progress, "test")
    for record, outcome in zip(records, outcomes):
        _apply(record, outcome)


def gather_evidence(
    records: Sequence[Record],
    problems: dict[str, Problem],
    sandbox: Sandbox,
    embedder: Embedder,
    settings: RunSettings,
    with_examples: bool,
    progress: Progress = no_progress,
) -> None:
    """What the reranker may know of each candidate, in place: parses, runs alone without raising,
    passes the statement's examples, and cosine similarity to the problem's query. Never the tests."""
    for record in records:
        record.parses = parses(record.code)
    limits = settings.run_limits
    runs = _run_each(records, problems, Problem.solution_program, sandbox, limits, progress, "run alone")
    for record, outcome in zip(records, runs):
        record.runs = outcome.passed
    if with_examples:
        checked = _run_each(records, problems, Problem.example_program, sandbox, limits, progress, "examples")
        for record, outcome in zip(records, checked):
            record.examples = outcome.passed
    by_task = by_task_id(records)
    for done, (task_id, group) in enumerate(by_task.items(), start=1):
        query = embedder.embed_query(problems[task_id].query)
        vectors = embedder.embed_documents([r.code or " " for r in group])
        for record, similarity in zip(group, cosine_similarities(query, np.asarray(vectors))):
            record.similarity = float(similarity)
        progress("similarity", done, len(by_task))


def policy_choices(
    records: Sequence[Record],
    problems: dict[str, Problem],
    sandbox: Sandbox,
    policy: Policy,
    progress: Progress = no_progress,
    tests: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[str, Selection]:
    """The policy's choice per problem among its records, from the sandbox's assessments (the statement's
    examples and calls, and the model-written `tests` per task id; never the hidden tests) and the
    similarities gather_evidence set."""
    by_task = by_task_id(records)
    written = tests or {}
    items = [
        (
            replace(policy_task(problems[task_id]), tests=written.get(task_id, ())),
            [candidate(problems[task_id], r.arm, r.code, r.similarity) for r in group],
        )
        for task_id, group in by_task.items()
    ]
    assessed = assess(sandbox, items, _counter(progress, "assess", programs_to_assess(items)))
    return {
        task.task_id: policy.choose(task, candidates, assessments)
        for (task, candidates), assessments in zip(items, assessed, strict=True)
    }


def derive(arm_name: str, task_id: str, candidates: Sequence[Record], selection: Selection | None = None) -> Record:
    """A derived arm's record for one problem from that problem's candidate records: the oracle's and
    the paper's rerankers' by their rules, `reranked`'s and a sampled arm's by the policy's `selection`
    (a sampled arm's record carries its samples' generation time)."""
    if arm_name == ORACLE:
        winner = next((r for r in candidates if r.passed), candidates[0])
        stage = None
    elif arm_name in (RERANKED_PAPER, RERANKED_PAPER_EXAMPLES):
        evidence = [
            Evidence(bool(r.parses), bool(r.runs), r.similarity if r.similarity is not None else 0.0, r.examples)
            for r in candidates
        ]
        choice = choose(evidence, use_examples=arm_name == RERANKED_PAPER_EXAMPLES)
        winner, stage = candidates[choice.index], choice.stage
    else:
        if selection is None:
            raise ValueError(f"{arm_name} needs the policy's selection for {task_id}")
        winner, stage = candidates[selection.index], selection.stage
    return Record(
        task_id=task_id,
        arm=arm_name,
        passed=winner.passed,
        status=winner.status,
        error_type=winner.error_type,
        message=winner.message,
        code=winner.code,
        context_tokens=winner.context_tokens,
        reuses_context=winner.reuses_context,
        prompt_tokens=winner.prompt_tokens,
        completion_tokens=winner.completion_tokens,
        generation_seconds=0.0 if arm_name in DERIVED else sum(r.generation_seconds for r in candidates),
        chosen_arm=winner.arm,
        stage=stage,
    )


def derive_all(
    arms: Sequence[str],
    records: Sequence[Record],
    problems: Sequence[Problem],
    selections: Mapping[str, Selection] | None = None,
) -> list[Record]:
    """Records of the derived arms among `arms`, choosing among the generating arms' records (never a
    sampled arm's samples; `reranked` by the policy's `selections`, per task id)."""
    by_task = by_task_id([record for record in records if record.arm in GENERATING])
    chosen = selections or {}
    return [
        derive(arm, p.task_id, by_task[p.task_id], chosen.get(p.task_id))
        for arm in arms
        if arm in DERIVED
        for p in problems
    ]


def written_tests(
    problems: Sequence[Problem], writer: Generator, settings: RunSettings, progress: Progress = no_progress
) -> dict[str, tuple[str, ...]]:
    """Tests `writer` writes for each problem from its statement alone (as `codet` sees it), by task id."""
    shown = [shown_task(problem, policy_task(problem).calls) for problem in problems]
    tests = write_tests(
        writer, shown, TEST_PARAMS, settings.concurrency, lambda done: progress("write tests", done, len(shown))
    )
    return {problem.task_id: found for problem, found in zip(problems, tests, strict=True)}


def derive_sampled(
    sampled: Sampled,
    records: Sequence[Record],
    problems: dict[str, Problem],
    sandbox: Sandbox,
    policy: Policy,
    progress: Progress = no_progress,
    tests: Mapping[str, tuple[str, ...]] | None = None,
) -> list[Record]:
    """The sampled arm's records: the policy's choice per problem among that arm's samples alone."""
    samples = [record for record in records if record.arm in sampled.samples]
    selections = policy_choices(samples, problems, sandbox, policy, progress, tests)
    return [derive(sampled.name, task_id, group, selections[task_id]) for task_id, group in by_task_id(samples).items()]
