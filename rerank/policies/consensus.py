"""Selection by execution agreement, alone or behind a cascade of self-checks."""

from __future__ import annotations

from collections.abc import Sequence

from rerank.policies.base import BASELINE_ARM, Assessment, Candidate, Policy, Selection, Task


def checks_of(task: Task, assessments: Sequence[Assessment]) -> tuple[int, ...]:
    return tuple(a.checks(len(task.calls)) for a in assessments)


def best_checked(checks: Sequence[int]) -> list[int]:
    """The candidates that pass the most self-checks."""
    top = max(checks)
    return [i for i, passed in enumerate(checks) if passed == top]


def preferred(candidates: Sequence[Candidate], pool: Sequence[int]) -> int:
    """The baseline when it is in the pool, else the most similar (the earliest on ties)."""
    return max(pool, key=lambda i: (candidates[i].arm == BASELINE_ARM, candidates[i].similarity, -i))


def clusters(assessments: Sequence[Assessment], pool: Sequence[int], probes: int | None = None) -> list[list[int]]:
    """The pool's candidates grouped by identical outputs on the first `probes` probe calls (all when
    None); candidates without outputs are left out."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i in pool:
        outputs = assessments[i].outputs
        if outputs is not None:
            groups.setdefault(outputs[:probes], []).append(i)
    return list(groups.values())


class Consensus(Policy):
    """Among the candidates that pass the most self-checks (or all, unfiltered), the largest cluster of
    identical outputs on the probe calls; the baseline's vote weighs `baseline_weight`. Ties go to the
    baseline's cluster, then to the cluster with the most similar candidate. Without probe outputs,
    the preferred candidate of the pool."""

    def __init__(self, name: str, filtered: bool = True, baseline_weight: float = 1.0, mutations: bool = True) -> None:
        self.name, self.filtered, self.baseline_weight, self.mutations = name, filtered, baseline_weight, mutations
        self.compares_calls = True
        self.description = (
            ("candidates passing the most self-checks, then " if filtered else "")
            + "the largest cluster of identical outputs on the statement's calls"
            + (" and their mutations" if mutations else "")
            + (f" (NoRAG's vote weighs {baseline_weight:g})" if baseline_weight != 1 else "")
        )
        self.inputs = (
            "the statement's calls (inputs only)"
            + (" and type-aware mutations" if mutations else "")
            + ("; HumanEval's examples with outputs" if filtered else "")
        )

    def weight(self, candidate: Candidate) -> float:
        return self.baseline_weight if candidate.arm == BASELINE_ARM else 1.0

    def choose(self, task: Task, candidates: Sequence[Candidate], assessments: Sequence[Assessment]) -> Selection:
        checks = checks_of(task, assessments)
        pool = best_checked(checks) if self.filtered else list(range(len(candidates)))
        return self.among(task, candidates, assessments, pool, checks, "consensus")

    def among(
        self,
        task: Task,
        candidates: Sequence[Candidate],
        assessments: Sequence[Assessment],
        pool: Sequence[int],
        checks: tuple[int, ...],
        stage: str,
    ) -> Selection:
        groups = clusters(assessments, pool, None if self.mutations else len(task.calls))
        if not groups:
            return Selection(preferred(candidates, pool), "no outputs", checks)

        def rank(group: list[int]) -> tuple[float, bool, float]:
            votes = sum(self.weight(candidates[i]) for i in group)
            return (
                votes,
                any(candidates[i].arm == BASELINE_ARM for i in group),
                max(candidates[i].similarity for i in group),
            )

        groups.sort(key=rank, reverse=True)
        return Selection(preferred(candidates, groups[0]), stage, checks, tuple(len(g) for g in groups))


class Cascade(Policy):
    """NoRAG's candidate when it passes every self-check; otherwise the candidates that pass the most
    checks decide, by similarity or (`then`) by a consensus among them."""

    def __init__(self, name: str, then: Consensus | None = None) -> None:
        self.name, self.then = name, then
        self.compares_calls = then is not None
        self.description = "NoRAG unless another candidate passes more self-checks (runs, shown calls return, "
        self.description += "examples); then, among those passing the most, " + (
            f"the consensus (NoRAG's vote weighs {then.baseline_weight:g})" if then else "the most similar to the query"
        )
        self.inputs = "the statement's calls (inputs only); HumanEval's examples with outputs" + (
            "; mutations of the calls" if then else ""
        )

    def choose(self, task: Task, candidates: Sequence[Candidate], assessments: Sequence[Assessment]) -> Selection:
        checks = checks_of(task, assessments)
        baseline = next((i for i, c in enumerate(candidates) if c.arm == BASELINE_ARM), None)
        if baseline is not None and checks[baseline] == max(checks):
            return Selection(baseline, "baseline", checks)
        pool = best_checked(checks)
        if self.then is None:
            return Selection(preferred(candidates, pool), "fallback", checks)
        return self.then.among(task, candidates, assessments, pool, checks, "fallback consensus")
