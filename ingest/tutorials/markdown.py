"""Markdown (CommonMark with GitHub tables) to the tutorial JSON.

Handles ATX and setext headings, paragraphs (with lazy continuation lines), bullet and ordered
lists (nested by indentation), fenced code (``` and ~~~, language from the info string), indented
code, `>>>` doctest examples, block quotes, pipe tables (one list item per row), HTML comments and
link reference definitions (both dropped). HTML tags in text are stripped.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from ingest.tutorials import (
    Event,
    Heading,
    build_document,
    code_block,
    collapse,
    doctest_session,
    indent_of,
    indented_end,
    list_blocks,
    read_first,
    text_block,
)

_FENCE = re.compile(r"( {0,3})(`{3,}|~{3,})[ \t]*([^\s`]*)")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_THEMATIC = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*")
_ITEM = re.compile(r"( {0,3})([-+*]|\d{1,9}[.)])(?:( +)(.*))?")
_QUOTE = re.compile(r" {0,3}> ?(.*)")
_COMMENT = re.compile(r" {0,3}<!--")
_REFERENCE = re.compile(r" {0,3}\[[^\]]+\]:\s*\S.*")
_FOOTNOTE = re.compile(r" {0,3}\[\^[^\]]+\]:\s*(.*)")
_TABLE_DELIMITER = re.compile(r" {0,3}\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_INLINE = re.compile(
    r"(?P<ticks>`+)(?P<code>.+?)(?<!`)(?P=ticks)(?!`)"
    r"|\[\^[^\]\s]+\]"
    r"|!?\[(?P<label>(?:[^\[\]]|\[[^\]]*\])*)\]"
    r"(?:\((?:[^()\s]|\([^()]*\))*(?:\s+\"[^\"]*\")?\)|\[[^\]]*\])"
    r"|<(?P<autolink>(?:https?|ftp|mailto):[^>\s]+)>"
    r"|<(?P<tag>/?[A-Za-z][\w-]*)(?:\s[^<>]*)?/?>"
    r"|(?<![\w\\])(?P<mark>\*\*|__)(?P<strong>[^\s](?:.*?[^\s\\])??)(?P=mark)(?![\w*])"
    r"|(?<![\w\\*])(?P<char>[*_])(?P<emphasis>[^\s*_](?:.*?[^\s\\*])??)(?P=char)(?![\w*])"
    r"|~~(?P<strike>.+?)~~"
    r"|\\(?P<escaped>[!-/:-@\[-`{-~])"
    r"|(?P<entity>&(?:#\d+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);)",
    re.DOTALL,
)


def convert(text: str, source: str) -> dict[str, Any]:
    """Convert one Markdown document to the tutorial JSON."""
    lines = [line.rstrip() for line in text.expandtabs(4).splitlines()]
    return build_document(_blocks(lines), source)


def inline(text: str) -> str:
    """Strip inline markup: `x` -> x, **b** -> b, [t](u) -> t, ![alt](u) -> alt, <u> -> u; HTML tags
    are dropped, escapes and entities decoded, whitespace collapsed."""
    return collapse(_strip(text))


def _strip(text: str) -> str:
    return _INLINE.sub(_inline_match, text)


def _inline_match(match: re.Match[str]) -> str:
    groups = match.groupdict()
    if groups["code"] is not None:
        return groups["code"]
    if groups["tag"] is not None:
        return " " if groups["tag"].lower() == "br" else ""
    if groups["entity"] is not None:
        return html.unescape(groups["entity"])
    for name in ("label", "strong", "emphasis", "strike"):
        if groups[name] is not None:
            return _strip(groups[name])
    return groups["autolink"] or groups["escaped"] or ""  # or a footnote reference


def _interrupts(line: str) -> bool:
    """Whether a line starts a block that ends a paragraph."""
    if _ATX.fullmatch(line) or _FENCE.match(line) or _THEMATIC.fullmatch(line):
        return True
    if _QUOTE.match(line) or _COMMENT.match(line):
        return True
    item = _ITEM.fullmatch(line)
    return bool(item and item.group(4) and item.group(2)[:-1] in ("", "1"))


def _blocks(lines: Sequence[str]) -> list[Event]:
    """The events of a run of lines."""
    events: list[Event] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line:
            i += 1
            continue
        parsers = (
            _fence,
            _indented_code,
            _atx,
            _thematic,
            doctest_session,
            _quote,
            _list,
            _comment,
            _footnote,
            _table,
        )
        i, found = read_first(parsers, lines, i) or _paragraph(lines, i)
        events.extend(found)
    return events


def _fence(lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
    opening = _FENCE.match(lines[i])
    if not opening:
        return None
    indent, fence = len(opening.group(1)), opening.group(2)
    closing = re.compile(rf" {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*")
    end = i + 1
    while end < len(lines) and not closing.fullmatch(lines[end]):
        end += 1
    body = [line[min(indent, indent_of(line)) :] for line in lines[i + 1 : end]]
    return end + 1, list(code_block("\n".join(body), opening.group(3)))


def _indented_code(lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
    if indent_of(lines[i]) < 4:
        return None
    end = indented_end(lines, i, 4)
    return end, list(code_block("\n".join(lines[i:end]), ""))


def _atx(lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
    heading = _ATX.fullmatch(lines[i])
    if not heading:
        return None
    return i + 1, [Heading(len(heading.group(1)), inline(heading.group(2) or ""))]


def _thematic(lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
    return (i + 1, []) if _THEMATIC.fullmatch(lines[i]) else None


def _quote(lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
    if not _QUOTE.match(lines[i]):
        return None
    inner: list[str] = []
    end = i
    while end < len(lines) and lines[end]:
        quoted = _QUOTE.match(lines[end])
        if not quoted and _interrupts(lines[end]):
            break
        inner.append(quoted.group(1) if quoted else lines[end])
        end += 1
    return end, _blocks(inner)


def _comment(lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
    if not _COMMENT.match(lines[i]):
        return None
    end = i
    while end < len(lines) and "-->" not in lines[end]:
        end += 1
    return end + 1, []


def _footnote(lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
    footnote = _FOOTNOTE.fullmatch(lines[i])
    if not footnote:
        return None
    end = indented_end(lines, i + 1, 4)
    body = [line[4:] for line in lines[i + 1 : end]]
    return end, _blocks([footnote.group(1), *body])


def _list(lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
    first = _ITEM.fullmatch(lines[i])
    if not first:
        return None
    kind = first.group(2)[-1]
    entries: list[list[Event]] = []
    while i < len(lines) and (item := _ITEM.fullmatch(lines[i])) and item.group(2)[-1] == kind:
        spaces = len(item.group(3) or "")
        offset = item.end(2) + (spaces if 1 <= spaces <= 4 else 1)
        body = [lines[i][offset:]]
        i += 1
        while i < len(lines):
            line = lines[i]
            lazy = body[-1] and not _interrupts(line) and not _ITEM.fullmatch(line)
            if line and indent_of(line) < offset and not lazy:
                break
            body.append(line[offset:] if indent_of(line) >= offset else line.strip())
            i += 1
        while body and not body[-1]:
            body.pop()
        entries.append(_blocks(body))
    return i, list(list_blocks(entries))


def _table(lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
    if i + 1 >= len(lines) or "|" not in lines[i] or "|" not in lines[i + 1]:
        return None
    if not _TABLE_DELIMITER.fullmatch(lines[i + 1]):
        return None
    rows = [lines[i]]
    end = i + 2
    while end < len(lines) and "|" in lines[end]:
        rows.append(lines[end])
        end += 1
    return end, list(list_blocks(text_block(_row(row)) for row in rows))


def _row(line: str) -> str:
    cells = _CELL_SPLIT.split(line.strip().strip("|"))
    return " | ".join(text for text in (inline(cell.replace("\\|", "|")) for cell in cells) if text)


def _paragraph(lines: Sequence[str], i: int) -> tuple[int, list[Event]]:
    if _REFERENCE.fullmatch(lines[i]):
        return i + 1, []
    end = i + 1
    while end < len(lines) and lines[end]:
        setext = _SETEXT.fullmatch(lines[end])
        if setext:
            level = 1 if setext.group(1)[0] == "=" else 2
            return end + 1, [Heading(level, inline("\n".join(lines[i:end])))]
        if _interrupts(lines[end]):
            break
        end += 1
    return end, list(text_block(inline("\n".join(lines[i:end]))))
