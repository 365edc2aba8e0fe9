"""Language-agnostic results of extracting functions and their blocks from source code."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Block:
    """A compound statement (if/for/while/try/with/match/def/class) inside a function.

    Lines are 1-based and inclusive; ``text`` is the statement's dedented source
    (decorators included for def/class) and ``children`` are the blocks directly
    nested in it, in source order.
    """

    kind: str
    start_line: int
    end_line: int
    text: str
    children: tuple[Block, ...]


@dataclass(frozen=True)
class Function:
    """A function or method at any nesting depth.

    ``qualname`` follows Python's ``__qualname__`` convention, the span and the
    dedented ``text`` include decorators, and ``blocks`` are the compound
    statements directly in the function body.
    """

    qualname: str
    start_line: int
    end_line: int
    text: str
    blocks: tuple[Block, ...]
    is_async: bool

    @classmethod
    def of_block(cls, qualname: str, block: Block) -> Function:
        """The function whose ``def`` (or ``async def``) block is ``block``."""
        return cls(qualname, block.start_line, block.end_line, block.text, block.children, block.kind == "async def")


@dataclass(frozen=True)
class SyntaxIssue:
    """A one-line report of source that was skipped because it does not parse."""

    line: int
    message: str


@dataclass(frozen=True)
class Extraction:
    """All functions of a source file, in source order, and the syntax issues met."""

    functions: tuple[Function, ...]
    issues: tuple[SyntaxIssue, ...]


def iter_blocks(blocks: Iterable[Block]) -> Iterator[Block]:
    """Yield the given blocks and all their descendants, in pre-order."""
    for block in blocks:
        yield block
        yield from iter_blocks(block.children)
