"""The augmented prompt: the task, the retrieved context in a delimited block, a brief instruction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ContextItem:
    """One retrieved snippet as it goes into a prompt."""

    title: str
    code: str


def augmented_prompt(query: str, items: Sequence[ContextItem]) -> str:
    """The query followed by the retrieved code and an instruction to use it only where it helps."""
    if not items:
        return query
    blocks = "\n\n".join(f"# {item.title}\n{item.code.rstrip()}" for item in items)
    return (
        f"{query.rstrip()}\n\n"
        "Possibly relevant code retrieved from a programming knowledge graph:\n"
        f"<context>\n{blocks}\n</context>\n\n"
        "Use the context above only where it helps; write a complete, correct solution to the task."
    )
