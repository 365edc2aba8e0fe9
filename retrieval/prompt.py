"""The augmented prompt: the task, the retrieved context in a delimited block, a brief instruction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ContextItem:
    """One retrieved snippet as it goes into a prompt."""

    title: str
    code: str


#: What ends a snippet cut to fit a budget.
TRUNCATED = "# … (truncated)"


def fit_snippets(snippets: Sequence[str], budget: int, count: Callable[[str], int]) -> tuple[list[str], bool]:
    """The snippets cut to `budget` tokens in all: whole snippets while they fit, then the first that
    does not, cut at a line boundary (a whole docs page can be one corpus item). Whether anything
    was cut comes second."""
    kept: list[str] = []
    used = 0
    for snippet in snippets:
        size = count(snippet)
        if used + size <= budget:
            kept.append(snippet)
            used += size
            continue
        lines = snippet.splitlines()
        low, high = 0, len(lines)  # the most lines that fit, by bisection
        while low < high:
            middle = (low + high + 1) // 2
            if used + count("\n".join(lines[:middle]) + "\n" + TRUNCATED) <= budget:
                low = middle
            else:
                high = middle - 1
        if low:
            kept.append("\n".join(lines[:low]) + "\n" + TRUNCATED)
        return kept, True
    return kept, False


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
