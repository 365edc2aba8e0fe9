"""The messages a model gets for a problem, with or without retrieved context."""

from __future__ import annotations

from collections.abc import Sequence

from pkg.benchmarks import Problem
from pkg.generators.base import Message

REPLY_FORMAT = "Answer with the complete solution, imports included, in a single ```python code block."


#: Context tokens a prompt may carry, at most: with 512 new tokens and the task, it fits a 4k window.
CONTEXT_BUDGET = 2048


def context_block(snippets: Sequence[str]) -> str:
    """Retrieved snippets as one delimited block; empty when there are none."""
    kept = [s.strip() for s in snippets if s.strip()]
    if not kept:
        return ""
    body = "\n\n".join(kept)
    return (
        "The following was retrieved from a programming knowledge graph and may or may not help:\n"
        f"<context>\n{body}\n</context>\n\n"
    )


def task_text(problem: Problem) -> str:
    """HumanEval shows the function to complete; MBPP shows the task and its tests."""
    if problem.benchmark == "humaneval":
        return f"Complete this Python function:\n```python\n{problem.prompt.rstrip()}\n```\n"
    return f"{problem.prompt.rstrip()}\n"


def build_messages(problem: Problem, snippets: Sequence[str] = ()) -> list[Message]:
    """One user turn: the context block (if any), the task, the reply format. No system turn, so
    each chat model gets its own default from its template."""
    return [{"role": "user", "content": f"{context_block(snippets)}{task_text(problem)}\n{REPLY_FORMAT}"}]
