"""Deterministic converters from tutorials (Markdown, reStructuredText, HTML) to one JSON shape.

Every converter turns its text into a flat stream of events in document order -- `Heading`s and
content blocks (`text`, `list`, `code`, `doctest` dicts) -- and `build_document` nests them into::

    {"title": ..., "source": ..., "sections": [{"title", "content", "sections"}, ...]}

This module holds that shared model; the converters live in `markdown`, `rst` and `html`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from pkg.errors import CorpusError

Block = dict[str, Any]
_SPACES = re.compile(r"\s+")
_STEM_SUFFIXES = re.compile(r"(\.(rst|txt|md|markdown|html?))+$", re.IGNORECASE)
#: Languages that mean "no particular language" (Sphinx's configured default, or plain text).
_NO_LANGUAGE = {"", "default", "none"}


@dataclass(frozen=True)
class Heading:
    """A heading event: `level` 1 is the outermost."""

    level: int
    title: str


Event = Heading | Block
#: Reads the block that starts at line `i`: the line after it and its events, or None for another kind of block.
BlockReader = Callable[[Sequence[str], int], tuple[int, list[Event]] | None]


def collapse(text: str) -> str:
    """Join soft line breaks and runs of whitespace into single spaces."""
    return _SPACES.sub(" ", text).strip()


def text_block(text: str) -> list[Block]:
    """A paragraph block, or nothing when the text is blank."""
    text = collapse(text)
    return [{"type": "text", "text": text}] if text else []


def code_block(text: str, language: str) -> list[Block]:
    """A `code` block, or a `doctest` one when its first line is a `>>>` prompt; nothing if blank."""
    lines = dedent(text.splitlines())
    while lines and not lines[0].strip():
        lines.pop(0)
    body = "\n".join(line.rstrip() for line in lines).rstrip()
    if not body:
        return []
    if body.startswith(">>>"):
        return [{"type": "doctest", "text": body}]
    language = language.strip().lower()
    return [{"type": "code", "language": "" if language in _NO_LANGUAGE else language, "text": body}]


def read_first(readers: Sequence[BlockReader], lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
    """What the first of the readers (Markdown's and reStructuredText's block kinds, in their order of
    precedence) that recognises the block at line `i` reads; None when none does."""
    for read in readers:
        found = read(lines, i)
        if found:
            return found
    return None


def doctest_session(lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
    """A `>>>` session that starts at line `i` and runs to the next blank line, as one block, with the
    line after it; None when line `i` is no prompt. Markdown and reStructuredText read them alike."""
    if not lines[i].lstrip().startswith(">>>"):
        return None
    end = i
    while end < len(lines) and lines[end]:
        end += 1
    return end, list(code_block("\n".join(lines[i:end]), ""))


def list_blocks(entries: Iterable[Sequence[Event]]) -> list[Block]:
    """A `list` block from the parsed content of each list item.

    An item's paragraphs are joined into its text; a nested list's items follow it in the same list;
    a code or doctest block inside an item ends the list there and follows it, keeping document order.
    """
    out: list[Block] = []
    items: list[str] = []
    for blocks in entries:
        parts: list[str] = []
        for block in blocks:
            if isinstance(block, Heading) or block["type"] == "text":
                parts.append(block.title if isinstance(block, Heading) else block["text"])
                continue
            _end_item(parts, items)
            if block["type"] == "list":
                items.extend(block["items"])
            else:
                _end_list(items, out)
                out.append(block)
        _end_item(parts, items)
    _end_list(items, out)
    return out


def _end_item(parts: list[str], items: list[str]) -> None:
    if parts:
        items.append(" ".join(parts))
        parts.clear()


def _end_list(items: list[str], out: list[Block]) -> None:
    if items:
        out.append({"type": "list", "items": list(items)})
        items.clear()


def indent_of(line: str) -> int:
    """How many whitespace characters the line starts with."""
    return len(line) - len(line.lstrip())


def indented_end(lines: Sequence[str], start: int, indent: int = 1) -> int:
    """End of the run of lines from `start` indented by `indent` or more, blank lines inside it included
    (Markdown's indented code and footnotes: 4; reStructuredText's indented blocks: any indent)."""
    end = start
    for k in range(start, len(lines)):
        if lines[k] and indent_of(lines[k]) < indent:
            break
        if lines[k]:
            end = k + 1
    return end


def dedent(lines: Sequence[str], most: int | None = None) -> list[str]:
    """Remove the common leading spaces of the non-blank lines (at most `most` of them)."""
    indents = [indent_of(line) for line in lines if line.strip()]
    cut = min(indents, default=0) if most is None else min([most, *indents])
    return [line[cut:] for line in lines]


def build_document(events: Iterable[Event], source: str) -> dict[str, Any]:
    """Nest the events into sections by heading level; content before any heading gets a section
    titled like the document. The title is the first heading of the outermost level used, else
    the file stem."""
    events = list(events)
    headings = [event for event in events if isinstance(event, Heading) and event.title]
    top = min((heading.level for heading in headings), default=0)
    title = next((h.title for h in headings if h.level == top), _stem(source))
    roots: list[dict[str, Any]] = []
    stack: list[tuple[int, dict[str, Any]]] = []
    current: dict[str, Any] | None = None
    for event in events:
        if isinstance(event, Heading):
            while stack and stack[-1][0] >= event.level:
                stack.pop()
            current = _section(event.title)
            (stack[-1][1]["sections"] if stack else roots).append(current)
            stack.append((event.level, current))
            continue
        if current is None:
            current = _section(title)
            roots.append(current)
        current["content"].append(event)
    return {"title": title, "source": source, "sections": roots}


def _section(title: str) -> dict[str, Any]:
    return {"title": title, "content": [], "sections": []}


def _stem(source: str) -> str:
    return _STEM_SUFFIXES.sub("", PurePath(source).name)


def _format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith((".md", ".markdown")):
        return "markdown"
    if name.endswith((".rst", ".rst.txt")) or (name.endswith(".txt") and "_sources" in path.parts):
        return "rst"
    if name.endswith((".html", ".htm")):
        return "html"
    raise CorpusError(
        f"unsupported tutorial format: {path} (expected .md, .markdown, .rst, .rst.txt, "
        ".txt under _sources, .html or .htm)"
    )


def is_tutorial(path: Path) -> bool:
    """Whether a file is a tutorial this package converts (by its extension)."""
    try:
        _format(path)
    except CorpusError:
        return False
    return True


def tutorial_to_json(path: Path) -> dict[str, Any]:
    """Convert one tutorial file to the JSON document, choosing the converter by file extension."""
    # Imported here: the converters import the shared model above from this package.
    from ingest.tutorials import html, markdown, rst

    converters = {"markdown": markdown.convert, "rst": rst.convert, "html": html.convert}
    convert = converters[_format(path)]
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"cannot read tutorial {path}: {exc}") from exc
    return convert(text, str(path))
