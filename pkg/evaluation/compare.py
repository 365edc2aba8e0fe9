"""`pkg compare` end to end: corpus → PKG → candidates per arm → sandbox verdicts → report."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pkg.benchmarks import Problem, load_benchmark
from pkg.benchmarks.decontamination import near_duplicates
from pkg.evaluation.arms import (
    DERIVED,
    DERIVED_DESCRIPTIONS,
    GENERATING,
    RERANKED,
    RERANKED_PAPER_EXAMPLES,
    RERANKING,
    Retriever,
    sampled_arm,
)
from pkg.evaluation.corpus import write_corpus
from pkg.evaluation.report import ArmSummary, write_report
from pkg.evaluation.run import (
    Record,
    RunSettings,
    derive_all,
    derive_sampled,
    gather_evidence,
    generate_arm,
    generate_samples,
    judge,
    policy_choices,
    written_tests,
)
from pkg.generators.base import Generator
from pkg.graph import Label
from pkg.knowledge_base import KnowledgeBase
from pkg.progress import Progress, no_progress
from rerank.policies import DEFAULT_POLICY, POLICIES
from rerank.sandbox import Sandbox

#: The file in a comparison's folder caching the replies that wrote the selection policy's tests.
TESTS_CACHE = "codet-tests.jsonl"


@dataclass
class Comparison:
    """Everything one comparison needs, opened by the caller."""

    benchmark: str
    arms: Sequence[str]
    problems: Sequence[Problem]
    generator: Generator
    sandbox: Sandbox
    kb: KnowledgeBase  # the retrieval PKG, and the embedder of the reranker's similarity
    out_dir: Path
    retrieves: bool = True  # whether any arm retrieves (else the PKG is never built nor read)
    k: int = 1
    settings: RunSettings = field(default_factory=RunSettings)
    notes: Sequence[str] = ()
    test_writer: Generator | None = None  # writes the tests of a policy that needs them (default: generator)


def load_problems(benchmark: str, mbpp_path: Path | None, limit: int | None) -> list[Problem]:
    problems = load_benchmark(benchmark, mbpp_path)
    return problems[:limit] if limit else problems


def build_corpus(
    benchmark: str,
    kb: KnowledgeBase,
    mbpp_path: Path | None,
    with_docs: bool,
    corpus: Sequence[Path] = (),
    progress: Progress = no_progress,
) -> dict:
    """Builds (or incrementally updates) the retrieval PKG and its BM25 indexes: from `corpus` when
    given, else from the benchmark's default corpus."""
    paths = list(corpus) or write_corpus(benchmark, kb.db_dir / "corpus", mbpp_path, with_docs)
    built = kb.build(paths, progress=progress)
    nodes = kb.store.counts().nodes  # the whole corpus, not only what this (incremental) build added
    return {
        "files": len(paths),
        "functions": nodes.get(Label.IMPL.value, 0),
        "rows": nodes.get(Label.ROW.value, 0),
        "bm25": built.bm25,
    }


def decontamination(kb: KnowledgeBase, problems: Sequence[Problem]) -> dict:
    """Near-duplicates of the benchmark's reference solutions among the corpus's functions and rows."""
    texts = [text for label in (Label.IMPL, Label.ROW) for _, text in kb.store.texts(label)]
    found = near_duplicates(texts, {p.task_id: p.canonical_solution for p in problems})
    return {
        "corpus_texts": len(texts),
        "problems": len(problems),
        "problems_with_near_duplicates": len({task for task, _, _ in found}),
        "pairs": [{"task_id": t, "corpus_index": i, "similarity": round(s, 3)} for t, i, s in found],
    }


def run(c: Comparison, progress: Progress = no_progress) -> list[ArmSummary]:
    """Generates, judges and reports; returns the table's rows."""
    started = time.perf_counter()
    by_id = {p.task_id: p for p in c.problems}
    retriever = Retriever(c.kb, c.k) if c.retrieves else None
    generating = [arm for arm in c.arms if arm in GENERATING]
    sampled = [found for found in map(sampled_arm, c.arms) if found]
    records: list[Record] = []
    for arm in generating:
        records += generate_arm(arm, c.problems, c.generator, retriever, c.settings, progress)
    for samples in sampled:
        records += generate_samples(samples, c.problems, c.generator, retriever, c.settings, progress)
    judge(records, by_id, c.sandbox, c.settings, progress)
    if sampled or any(arm in RERANKING for arm in c.arms):
        with_examples = RERANKED_PAPER_EXAMPLES in c.arms
        gather_evidence(records, by_id, c.sandbox, c.kb.embedder, c.settings, with_examples, progress)
    policy = POLICIES[DEFAULT_POLICY]
    selects = RERANKED in c.arms or bool(sampled)
    tests = (
        written_tests(c.problems, c.test_writer or c.generator, c.settings, progress)
        if selects and policy.writes_tests
        else {}
    )
    pool = [record for record in records if record.arm in GENERATING]
    selections = policy_choices(pool, by_id, c.sandbox, policy, progress, tests) if RERANKED in c.arms else {}
    records += derive_all([arm for arm in c.arms if arm in DERIVED], records, c.problems, selections)
    for samples in sampled:
        records += derive_sampled(samples, records, by_id, c.sandbox, policy, progress, tests)
    replies_seconds = sum(r.generation_seconds for r in records if r.chosen_arm is None)  # not derived arms'
    notes = [
        f"- benchmark: {c.benchmark}, {len(c.problems)} problems; generator: {c.generator.model_id}; "
        f"greedy, max {c.settings.params.max_new_tokens} new tokens",
        f"- sandbox isolation: {c.sandbox.isolation}; retrieval top-{c.k}; embedder: {c.kb.embedder.name}",
        *(f"- {name}: {description}" for name, description in DERIVED_DESCRIPTIONS.items() if name in c.arms),
        *(
            [
                f"- the {DEFAULT_POLICY} policy's tests: {sum(map(len, tests.values()))} asserts for "
                f"{sum(map(bool, tests.values()))}/{len(c.problems)} problems, one greedy reply per problem by the "
                "generator, shown the statement alone (MBPP: its text and one shown call's inputs); cached in "
                f"{TESTS_CACHE}"
            ]
            if tests
            else []
        ),
        *(
            f"- {samples.name}: {samples.description}; temperature {c.settings.sample_temperature:g}; "
            '"generation s": all its samples\' per problem'
            for samples in sampled
        ),
        "- reused context: answers that define a function under a name the context defines, or take at least half "
        "of their substantial lines from it verbatim; passed if reused (norag): how many of those passed, and how "
        "many NoRAG answers passed on the same problems",
        f"- wall time of this report's run: {time.perf_counter() - started:.0f} s (generations come from the cache "
        f"where they exist); the replies took {replies_seconds / 3600:.1f} h of "
        'generation when they were made (the table\'s "generation s": per problem)',
        *c.notes,
    ]
    title = f"PKG comparison on {c.benchmark}: pass@1 per arm"
    return write_report(c.out_dir, records, list(c.arms), title, notes)


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
