"""The paper's reranker as a policy: parses → runs alone → (examples) → most similar to the query."""

from __future__ import annotations

from collections.abc import Sequence

from rerank.policies.base import Assessment, Candidate, Policy, Selection, Task
from rerank.reranker import Evidence, choose


class Paper(Policy):
    """`rerank.reranker.choose` over the sandbox's verdicts and the candidates' similarities."""

    def __init__(self, use_examples: bool = False) -> None:
        self.use_examples = use_examples
        self.name = "paper+examples" if use_examples else "paper"
        self.description = "parses → runs alone" + (" → passes the examples" if use_examples else "")
        self.description += " → most similar to the query"
        self.inputs = "the statement's examples with outputs (HumanEval)" if use_examples else "none"

    def choose(self, task: Task, candidates: Sequence[Candidate], assessments: Sequence[Assessment]) -> Selection:
        evidence = [
            Evidence(a.parses, a.runs, c.similarity, a.examples) for c, a in zip(candidates, assessments, strict=True)
        ]
        choice = choose(evidence, use_examples=self.use_examples)
        return Selection(choice.index, choice.stage, tuple(a.checks(len(task.calls)) for a in assessments))
