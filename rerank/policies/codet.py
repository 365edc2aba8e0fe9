"""Selection by dual agreement with model-written tests (CodeT, Chen et al. 2022): candidates that pass
the same tests and give the same outputs on the probe calls form a cluster; a cluster scores the tests
it passes times its size."""

from __future__ import annotations

from collections.abc import Sequence

from rerank.policies.base import Assessment, Candidate, Policy, Selection, Task
from rerank.policies.consensus import best_checked, checks_of


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

        def rank(group: list[int]) -> tuple[int, float]:
            passed = sum(assessments[group[0]].tests)
            return passed * len(group), max(candidates[i].similarity for i in group)

        groups = sorted(agreement_clusters(assessments, pool), key=rank, reverse=True)
        return Selection(most_similar(candidates, groups[0]), "dual agreement", checks, tuple(map(len, groups)))
