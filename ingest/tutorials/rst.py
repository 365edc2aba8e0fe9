"""reStructuredText, including the Sphinx dialect of the Python documentation, to the tutorial JSON.

A line-based reader: sections (underlined or over- and underlined titles, levels in the order their
adornment styles first appear), paragraphs, bullet/enumerated/field/definition lists, grid and simple
tables (one list item per row), literal blocks (`::`), doctest blocks (`>>>`), block quotes, and
directives. Code directives (`code-block`, `sourcecode`, `code`, `testcode`, `testoutput`,
`doctest`, `productionlist`, `parsed-literal`) give code; version notes read as Sphinx renders them
("Changed in version 3.2: ..."); directives without text (`index`, `toctree`, `module`, ...) and
comments, targets and substitution definitions are dropped; any other directive keeps its
arguments (e.g. a `function` signature) as text and its body as content.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

from ingest.tutorials import (
    BlockReader,
    Event,
    Heading,
    build_document,
    code_block,
    collapse,
    dedent,
    doctest_session,
    indented_end,
    list_blocks,
    read_first,
    text_block,
)

_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1*")
_BULLET = re.compile(r"[-*+\u2022\u2023\u2043](?: +|$)")
_ENUMERATOR = r"(?:\d+|#|[A-Za-z]|[ivxlcdm]+|[IVXLCDM]+)"
_ENUMERATED = re.compile(rf"(?:\({_ENUMERATOR}\)|{_ENUMERATOR}[.)])(?: +|$)")
_LINE_BLOCK = re.compile(r"\|(?: +|$)")
_FIELD = re.compile(r":([^:\s`][^:`]*?):(?: +(.*)|$)")
_DIRECTIVE = re.compile(r"([A-Za-z0-9](?:[\w.+-]|:(?!:))*)::(?:\s+(.*))?")
_FOOTNOTE = re.compile(r"\[(?:#[\w.-]*|\*|\d+|[A-Za-z][\w.-]*)\](?:\s+(.*))?")
_GRID_BORDER = re.compile(r"\+(?:-+\+)+")
_GRID_RULE = re.compile(r"\+(?:[-=]+\+)+")
_SIMPLE_BORDER = re.compile(r"=+(?: +=+)+")
_SIMPLE_RULE = re.compile(r"[-= ]+")
_INLINE = re.compile(
    r"``(?P<literal>.+?)``(?!`)"
    r"|(?::(?P<role>[\w.+-]+(?::[\w.+-]+)*):)?`(?P<interpreted>(?:[^`\\]|\\.)+)`(?:__?|:[\w.+-]+:)?"
    r"|(?<![\w\\])\*\*(?P<strong>[^\s*](?:.*?[^\s\\])??)\*\*(?![\w*])"
    r"|(?<![\w\\*])\*(?P<emphasis>[^\s*](?:.*?[^\s\\*])??)\*(?![\w*])"
    r"|\s*\[(?:#[\w.-]*|\*|\d+)\]_(?!\w)"
    r"|\\(?P<escaped>.?)",
    re.DOTALL,
)
_TITLED_TARGET = re.compile(r"(.*?)\s*<([^<>]+)>", re.DOTALL)
_NUMBERED_ROLES = {"pep": "PEP", "rfc": "RFC"}

#: Code directives and the language they imply (None: the directive's argument names it).
_VERBATIM: dict[str, str | None] = {
    "code-block": None,
    "sourcecode": None,
    "code": None,
    "testcode": "python",
    "testoutput": "",
    "doctest": "",
    "productionlist": "",
    "parsed-literal": "",
}
#: Sphinx's version notes, rendered the way Sphinx does; each `{}` takes one argument word.
_LABELS = {
    "versionadded": "New in version {}",
    "versionchanged": "Changed in version {}",
    "deprecated": "Deprecated since version {}",
    "deprecated-removed": "Deprecated since version {}, will be removed in version {}",
}
#: Directives without arguments whose first line and body are all content.
_ADMONITIONS = {
    "attention",
    "caution",
    "danger",
    "error",
    "hint",
    "important",
    "note",
    "tip",
    "warning",
    "seealso",
    "impl-detail",
    "epigraph",
    "highlights",
    "pull-quote",
    "compound",
    "container",
}
#: Directives whose arguments are not text (a condition, a group name): only the body is kept.
_BODY_ONLY = {"only", "glossary", "hlist"}
#: Directives whose arguments are inline text (a title) rather than a signature.
_TITLED = {"rubric", "centered", "admonition", "topic", "sidebar", "table", "list-table", "csv-table"}
#: Directives with nothing to read: index entries, navigation, metadata, files we cannot follow.
_SKIPPED = {
    "index",
    "toctree",
    "highlight",
    "sectionauthor",
    "moduleauthor",
    "codeauthor",
    "module",
    "currentmodule",
    "program",
    "image",
    "figure",
    "raw",
    "include",
    "literalinclude",
    "tabularcolumns",
    "testsetup",
    "testcleanup",
    "contents",
    "sectnum",
    "meta",
    "default-role",
    "role",
    "rst-class",
    "audit-event",
    "audit-event-table",
    "miscnews",
    "limited-api-list",
    "title",
}


def convert(text: str, source: str) -> dict[str, Any]:
    """Convert one reStructuredText document to the tutorial JSON."""
    lines = [line.rstrip() for line in text.expandtabs(8).splitlines()]
    return build_document(_Reader().blocks(lines, top=True), source)


def inline(text: str) -> str:
    """Strip inline markup: ``x`` -> x, :func:`len` -> len, `t <u>`_ -> t, **b** -> b; footnote
    references and escapes are dropped; whitespace is collapsed."""
    return collapse(_INLINE.sub(_inline_match, text))


def _inline_match(match: re.Match[str]) -> str:
    if match.group("literal") is not None:
        return match.group("literal")
    if match.group("interpreted") is not None:
        return _interpreted(match.group("role") or "", match.group("interpreted"))
    if match.group("strong") is not None:
        return match.group("strong")
    if match.group("emphasis") is not None:
        return match.group("emphasis")
    escaped = match.group("escaped") or ""
    return "" if escaped.isspace() else escaped  # an escaped space joins its neighbours


def _interpreted(role: str, content: str) -> str:
    """The displayed text of a role or reference: its title, else its target (`~a.b` -> b,
    `.name` -> name), and `PEP 8` / `RFC 4122` for the :pep: and :rfc: roles."""
    titled = _TITLED_TARGET.fullmatch(content)
    if titled:
        return titled.group(1) or titled.group(2)
    if role in _NUMBERED_ROLES:
        return f"{_NUMBERED_ROLES[role]} {content}"
    content = content.lstrip("!")
    content = content[1:].rsplit(".", 1)[-1] if content.startswith("~") else content
    return content.lstrip(".") or content


def _is_adornment(line: str) -> bool:
    return bool(_ADORNMENT.fullmatch(line))


class _Reader:
    """Reads blocks; remembers the section adornment styles in the order they appear."""

    def __init__(self) -> None:
        self.styles: list[tuple[str, bool]] = []

    def blocks(self, lines: Sequence[str], top: bool = False) -> list[Event]:
        """The events of a run of lines; section titles are recognised only at the top level."""
        parsers: list[BlockReader] = [
            self._transition,
            self._block_quote,
            self._explicit,
            doctest_session,  # after _block_quote: only unindented prompts reach it
            self._grid_table,
            self._simple_table,
            self._bullet_list,
            self._enumerated_list,
            self._field_list,
            self._line_block,
            self._definition,
        ]
        if top:
            parsers.insert(0, self._section)
        events: list[Event] = []
        i = 0
        while i < len(lines):
            if not lines[i]:
                i += 1
                continue
            if top and not events and _FIELD.fullmatch(lines[i]):
                i = _fields(lines, i)[1]  # Sphinx's file-wide metadata (:tocdepth: ...)
                continue
            i, found = read_first(parsers, lines, i) or self._paragraph(lines, i)
            events.extend(found)
        return events

    def _section(self, lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if _is_adornment(line) and nxt.strip() and i + 2 < len(lines):
            under = lines[i + 2]
            if _is_adornment(under) and under[0] == line[0] and not _is_adornment(nxt.strip()):
                return i + 3, [self._heading(nxt, (line[0], True))]
        underlined = not line[0].isspace() and not _is_adornment(line) and _is_adornment(nxt)
        if underlined and (len(nxt) >= len(line) or len(nxt) >= 4):
            return i + 2, [self._heading(line, (nxt[0], False))]
        return None

    def _heading(self, title: str, style: tuple[str, bool]) -> Heading:
        if style not in self.styles:
            self.styles.append(style)
        return Heading(self.styles.index(style) + 1, inline(title))

    @staticmethod
    def _transition(lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
        line = lines[i]
        if _is_adornment(line) and len(line) >= 4 and (i + 1 == len(lines) or not lines[i + 1]):
            return i + 1, []
        return None

    def _block_quote(self, lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
        if not lines[i][0].isspace():
            return None
        end = indented_end(lines, i)
        return end, self.blocks(dedent(lines[i:end]))

    def _explicit(self, lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
        if not (lines[i] == ".." or lines[i].startswith(".. ")):
            return None
        if lines[i] == ".." and (i + 1 == len(lines) or not lines[i + 1]):
            return i + 1, []  # an empty comment ends at the blank line after it
        end = indented_end(lines, i + 1)
        head, body = lines[i][2:].strip(), dedent(lines[i + 1 : end])
        footnote = _FOOTNOTE.fullmatch(head)
        if footnote:
            return end, self.blocks([footnote.group(1) or "", *body])
        directive = _DIRECTIVE.fullmatch(head)
        if directive:
            name = directive.group(1).rsplit(":", 1)[-1].lower()
            return end, self._directive(name, directive.group(2) or "", body)
        return end, []  # a comment, hyperlink target or substitution definition

    def _directive(self, name: str, head: str, body: list[str]) -> list[Event]:
        options, arguments, content = _split_directive_body(body)
        if name in _SKIPPED or "hide" in options:
            return []
        if name in _VERBATIM:
            language = _VERBATIM[name]
            code = [*arguments, "", *content] if arguments else content
            if language is None:
                language = head.split()[0] if head.split() else ""
            return list(code_block("\n".join(code), language))
        if name in _LABELS:
            return self._version_note(_LABELS[name], head, [*arguments, "", *content])
        if name in _ADMONITIONS:
            return self.blocks([head, *arguments, "", *content])
        if name in _BODY_ONLY:
            return self.blocks(content)
        signatures = _signatures([head, *arguments])
        titles = [inline(s) if name in _TITLED else collapse(s) for s in signatures]
        return [*[b for title in titles for b in text_block(title)], *self.blocks(content)]

    def _version_note(self, template: str, head: str, body: list[str]) -> list[Event]:
        arity = template.count("{}")
        words = head.split(None, arity)
        versions = (words + [""] * arity)[:arity]
        label = template.format(*versions)
        events = self.blocks([" ".join(words[arity:]), *body])
        if events and not isinstance(events[0], Heading) and events[0]["type"] == "text":
            return [*text_block(f"{label}: {events[0]['text']}"), *events[1:]]
        return [*text_block(f"{label}."), *events]

    def _grid_table(self, lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
        if not _GRID_BORDER.fullmatch(lines[i]):
            return None
        columns = [k for k, char in enumerate(lines[i]) if char == "+"]
        end = i + 1
        while end < len(lines) and lines[end].startswith(("+", "|")):
            end += 1
        rows: list[list[str]] = []
        cells: list[str] | None = None
        for line in lines[i + 1 : end]:
            if _GRID_RULE.fullmatch(line):
                rows.extend([cells] if cells else [])
                cells = None
                continue
            parts = [line[a + 1 : b] for a, b in pairwise(columns)]
            cells = [f"{c}\n{p}" for c, p in zip(cells, parts, strict=True)] if cells else parts
        rows.extend([cells] if cells else [])
        return end, self._table(rows)

    def _simple_table(self, lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
        if not _SIMPLE_BORDER.fullmatch(lines[i]):
            return None
        for end in range(i + 1, len(lines)):
            if _SIMPLE_BORDER.fullmatch(lines[end]) and (end + 1 == len(lines) or not lines[end + 1]):
                break
        else:
            return None
        starts = [m.start() for m in re.finditer(r"=+", lines[i])]
        rows: list[list[str]] = []
        for line in lines[i + 1 : end]:
            if not line or _SIMPLE_RULE.fullmatch(line):
                continue
            cells = [line[a:b] for a, b in pairwise([*starts, len(line)])]
            if rows and not cells[0].strip():
                rows[-1] = [f"{old}\n{new}" for old, new in zip(rows[-1], cells, strict=True)]
            else:
                rows.append(cells)
        return end + 1, self._table(rows)

    def _table(self, rows: list[list[str]]) -> list[Event]:
        """One list item per table row: the text of its non-empty cells joined by " | "."""
        items = [" | ".join(filter(None, (self._cell(cell) for cell in row))) for row in rows]
        return list(list_blocks(text_block(item) for item in items))

    def _cell(self, cell: str) -> str:
        """A cell's content read as blocks (it may hold lists or directives), as one line of text."""
        if not cell.strip("-=+ \n"):
            return ""  # a rule of a spanning cell
        parts: list[str] = []
        for block in self.blocks(dedent([line.rstrip() for line in cell.split("\n")])):
            if isinstance(block, dict):
                parts.extend(block["items"] if block["type"] == "list" else [block["text"]])
        return collapse(" ".join(parts))

    def _bullet_list(self, lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
        if not _BULLET.match(lines[i]) or _is_adornment(lines[i]):
            return None
        return self._list(lines, i, re.compile(re.escape(lines[i][0]) + r"(?: +|$)").match)

    def _enumerated_list(self, lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
        if not _ENUMERATED.match(lines[i]):
            return None
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if nxt and not nxt[0].isspace() and not _ENUMERATED.match(nxt):
            return None  # "A. Smith wrote\nthis" is a paragraph, not a list
        return self._list(lines, i, _same_enumeration(lines[i]))

    def _list(self, lines: Sequence[str], i: int, marker: Callable[[str], Any]) -> tuple[int, list[Event]]:
        entries: list[list[Event]] = []
        while i < len(lines) and lines[i] and marker(lines[i]):
            match = marker(lines[i])
            first = lines[i][match.end() :]
            end = indented_end(lines, i + 1)
            rest = dedent(lines[i + 1 : end], match.end() if first else None)
            entries.append(self.blocks([first, *rest]))
            i = end
            while i < len(lines) and not lines[i]:
                i += 1
        return i, list(list_blocks(entries))

    def _field_list(self, lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
        if not _FIELD.fullmatch(lines[i]):
            return None
        entries: list[list[Event]] = []
        fields, end = _fields(lines, i)
        for name, body_lines in fields:
            body = self.blocks(body_lines)
            if body and not isinstance(body[0], Heading) and body[0]["type"] == "text":
                body = [*text_block(f"{name}: {body[0]['text']}"), *body[1:]]
            else:
                body = [*text_block(name), *body]
            entries.append(body)
        return end, list(list_blocks(entries))

    @staticmethod
    def _line_block(lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
        if not _LINE_BLOCK.match(lines[i]):
            return None
        end = i + 1
        while end < len(lines) and (_LINE_BLOCK.match(lines[end]) or lines[end][:1].isspace()):
            end += 1
        text = "\n".join(_LINE_BLOCK.sub("", line) for line in lines[i:end])
        return end, list(text_block(inline(text)))

    def _definition(self, lines: Sequence[str], i: int) -> tuple[int, list[Event]] | None:
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if not nxt or not nxt[0].isspace() or lines[i].endswith("::"):
            return None
        end = indented_end(lines, i + 1)
        term = inline(lines[i].split(" : ", 1)[0])
        return end, [*text_block(term), *self.blocks(dedent(lines[i + 1 : end]))]

    def _paragraph(self, lines: Sequence[str], i: int) -> tuple[int, list[Event]]:
        end = i
        while end < len(lines) and lines[end] and not lines[end][0].isspace():
            end += 1
        raw = "\n".join(lines[i:end])
        if not raw.endswith("::"):
            return end, list(text_block(inline(raw)))
        raw = raw[:-2].rstrip() if raw[:-2].endswith((" ", "\n")) or raw == "::" else raw[:-1]
        events: list[Event] = list(text_block(inline(raw)))
        start = end
        while start < len(lines) and not lines[start]:
            start += 1
        if start < len(lines) and lines[start][0].isspace():
            end = indented_end(lines, start)
            events.extend(code_block("\n".join(lines[start:end]), ""))
        return end, events


def _enumeration(enumerator: str) -> str:
    """The kind of a list item's enumerator: "auto" (#), "arabic" (1) or "alpha" (a, i, A, I)."""
    first = enumerator.lstrip("(")[:1]
    return "auto" if first == "#" else "arabic" if first.isdigit() else "alpha"


def _same_enumeration(first: str) -> Callable[[str], re.Match[str] | None]:
    """Matches the items of the list `first` starts: "#." items join any list, "1." ones no "a." one."""
    kind = _enumeration(first)

    def marker(line: str) -> re.Match[str] | None:
        match = _ENUMERATED.match(line)
        if not match:
            return None
        other = _enumeration(line)
        return match if other == kind or "auto" in (kind, other) else None

    return marker


def _fields(lines: Sequence[str], i: int) -> tuple[list[tuple[str, list[str]]], int]:
    """The fields of the field list at `i` (name and body lines), and where the list ends."""
    fields = []
    while i < len(lines) and (field := _FIELD.fullmatch(lines[i])):
        end = indented_end(lines, i + 1)
        fields.append((inline(field.group(1)), [field.group(2) or "", *dedent(lines[i + 1 : end])]))
        i = end
        while i < len(lines) and not lines[i]:
            i += 1
    return fields, i


def _split_directive_body(body: list[str]) -> tuple[set[str], list[str], list[str]]:
    """Split a directive's body into the names of its options, its argument lines (before the
    first blank line) and its content (after it)."""
    blank = body.index("") if "" in body else len(body)
    fields = [_FIELD.fullmatch(line) for line in body[:blank]]
    options = {field.group(1) for field in fields if field}
    arguments = [line for line, field in zip(body[:blank], fields, strict=True) if not field]
    return options, arguments, body[blank + 1 :]


def _signatures(lines: list[str]) -> list[str]:
    """Argument lines, with backslash-continued lines joined."""
    joined: list[str] = []
    for line in lines:
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + line.strip()
        elif line.strip():
            joined.append(line.strip())
    return joined
