"""Selection by dual agreement with model-written tests (CodeT, Chen et al. 2022): candidates that pass
the same tests and give the same outputs on the probe calls form a cluster; a cluster scores the tests
it passes times its size."""

from __future__ import annotations

from collections.abc import Sequence

from rerank.policies.base import BASELINE_ARM, Assessment, Candidate, Policy, Selection, Task
from rerank.policies.consensus import Cascade, best_checked, checks_of

#: The fewest candidates that must agree (same verdicts on the written tests, same outputs on the probe
#: calls) to overrule NoRAG: a lone candidate passing more written tests than NoRAG is too often a wrong
#: answer that fits a wrong test (bench/results/policies.md: with 1, MBPP 168/257 +19 -16; with 2, 174 +16 -7).
MIN_AGREEING = 2


def most_similar(candidates: Sequence[Candidate], pool: Sequence[int]) -> int:
    """The pool's candidate most similar to the query (the earliest on ties)."""
    return max(pool, key=lambda i: (candidates[i].similarity, -i))


def agreement_clusters(assessments: Sequence[Assessment], pool: Sequence[int]) -> list[list[int]]:
    """The pool's candidates grouped by identical verdicts on the written tests and identical outputs
    on the probe calls (a candidate whose probe program died groups with those alike in that)."""
    groups: dict[tuple[tuple[bool, ...], tuple[str, ...] | None], list[int]] = {}
    for i in pool:
        groups.setdefault((assessments[i].tests, assessments[i].outputs), []).append(i)
    return list(groups.values())


def ranked(
    candidates: Sequence[Candidate], assessments: Sequence[Assessment], groups: list[list[int]]
) -> list[list[int]]:
    """The clusters by dual-agreement score, tests passed × size, highest first; ties by similarity."""

    def rank(group: list[int]) -> tuple[int, float]:
        passed = sum(assessments[group[0]].tests)
        return passed * len(group), max(candidates[i].similarity for i in group)

    return sorted(groups, key=rank, reverse=True)


class Codet(Policy):
    """Among the candidates (or, `checked`, those passing the most self-checks), the cluster with the
    highest score, tests passed × size; ties go to the cluster with the most similar candidate, and
    the cluster's most similar candidate answers. Without written tests, the most similar candidate."""

    writes_tests = True

    def __init__(self, name: str, checked: bool = False) -> None:
        self.name, self.checked = name, checked
        self.description = (
            ("candidates passing the most self-checks, then " if checked else "")
            + "dual agreement: clusters by verdicts on model-written tests and outputs on the statement's calls "
            "and their mutations, scored tests passed × cluster size; ties by similarity"
        )
        self.inputs = (
            "tests the model wrote from the statement (MBPP: the task text and one shown call's inputs); "
            "the statement's calls (inputs only) and type-aware mutations"
            + ("; HumanEval's examples with outputs" if checked else "")
        )

    def choose(self, task: Task, candidates: Sequence[Candidate], assessments: Sequence[Assessment]) -> Selection:
        checks = checks_of(task, assessments)
        pool = best_checked(checks) if self.checked else list(range(len(candidates)))
        if not task.tests:
            return Selection(most_similar(candidates, pool), "no tests", checks)
        groups = ranked(candidates, assessments, agreement_clusters(assessments, pool))
        return Selection(most_similar(candidates, groups[0]), "dual agreement", checks, tuple(map(len, groups)))


class CascadeCodet(Policy):
    """NoRAG's candidate unless another passes more self-checks (then dual agreement among those passing
    the most), or at least `MIN_AGREEING` candidates passing as many self-checks agree and pass more
    written tests than NoRAG (then dual agreement among such clusters). Without written tests, the cascade."""

    writes_tests = True
    tests_optional = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.cascade = Cascade("cascade")
        self.description = (
            "NoRAG unless another candidate passes more self-checks, or at least "
            f"{MIN_AGREEING} candidates agree (verdicts on model-written tests, outputs on the statement's calls "
            "and their mutations) and pass more of those tests than NoRAG; then the best such cluster by dual "
            "agreement (tests passed × size); without written tests, the cascade"
        )
        self.inputs = (
            "tests the model wrote from the statement (MBPP: the task text and one shown call's inputs); the "
            "statement's calls (inputs only) and type-aware mutations; HumanEval's examples with outputs"
        )

    def choose(self, task: Task, candidates: Sequence[Candidate], assessments: Sequence[Assessment]) -> Selection:
        if not task.tests:
            return self.cascade.choose(task, candidates, assessments)
        checks = checks_of(task, assessments)
        pool = best_checked(checks)
        baseline = next((i for i, c in enumerate(candidates) if c.arm == BASELINE_ARM), None)
        if baseline is None or baseline not in pool:
            groups, stage = agreement_clusters(assessments, pool), "fallback dual agreement"
        else:
            floor = sum(assessments[baseline].tests)
            beating = [i for i in pool if sum(assessments[i].tests) > floor]
            groups = [g for g in agreement_clusters(assessments, beating) if len(g) >= MIN_AGREEING]
            if not groups:
                return Selection(baseline, "baseline", checks)
            stage = "agreement over baseline"
        groups = ranked(candidates, assessments, groups)
        return Selection(most_similar(candidates, groups[0]), stage, checks, tuple(map(len, groups)))
