"""HTML, in particular Sphinx's pages of the Python documentation, to the tutorial JSON.

The page is parsed into a small element tree with the standard library's `html.parser`. Only the
main content is read: the first `role="main"` element, `div.body` or `<main>`; without one, the
`<body>` minus its navigation, header, footer and asides. Headings `h1`-`h6` give the levels;
`<p>` and loose text give paragraphs, `<ul>`/`<ol>` lists, tables one list item per row,
`<dl>` terms as text followed by their definitions, and `<pre>` code (or a doctest when it starts
with `>>>`) in the language of the enclosing `highlight-<lang>` element. Scripts, styles,
Sphinx's permalink anchors, section numbers, footnote references and admonition titles are dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from ingest.tutorials import Event, Heading, build_document, code_block, collapse, list_blocks, text_block

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_BLOCK = {
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "caption",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
#: Elements never read.
_SKIPPED_TAGS = {"script", "style", "noscript", "template", "nav", "form", "button", "head", "title"}
#: Page chrome, skipped when the page has no main-content element to read instead.
_CHROME_TAGS = {"header", "footer", "aside"}
#: Sphinx decorations (permalinks, section numbers, footnote marks and labels) and navigation.
_SKIPPED_CLASSES = {
    "headerlink",
    "section-number",
    "footnote-reference",
    "label",
    "admonition-title",
    "sphinxsidebar",
    "related",
    "footer",
}
#: Sphinx appends "()" to references to functions; like the reStructuredText reader, show the name.
_FUNCTION_XREFS = {"py-func", "py-meth", "c-func"}
#: An open element that a new element of the key's kind closes implicitly.
_IMPLIED_END = {
    "li": {"li"},
    "dt": {"dt", "dd"},
    "dd": {"dt", "dd"},
    "tr": {"tr", "td", "th"},
    "td": {"td", "th"},
    "th": {"td", "th"},
}
#: Sphinx marks code with the class `highlight-<language>` on an enclosing `<div>`.
_HIGHLIGHT_PREFIX = "highlight-"


@dataclass
class _Element:
    tag: str
    attrs: dict[str, str]
    children: list[_Element | str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class _TreeBuilder(HTMLParser):
    """Builds an element tree, closing unclosed `<p>`, `<li>`, `<td>`... the way browsers do."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Element("#document", {})
        self._open = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK and self._open[-1].tag == "p":
            self._open.pop()
        while self._open[-1].tag in _IMPLIED_END.get(tag, ()):
            self._open.pop()
        element = _Element(tag, {name: value or "" for name, value in attrs})
        self._open[-1].children.append(element)
        if tag not in _VOID:
            self._open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open[-1].children.append(_Element(tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self._open) - 1, 0, -1):
            if self._open[depth].tag == tag:
                del self._open[depth:]
                return

    def handle_data(self, data: str) -> None:
        self._open[-1].children.append(data)


def convert(text: str, source: str) -> dict[str, Any]:
    """Convert one HTML page to the tutorial JSON."""
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    main = next(_main_elements(builder.root), None)
    if main is not None:
        return build_document(_Walker(frozenset()).blocks(main), source)
    body = next((e for e in _elements(builder.root) if e.tag == "body"), builder.root)
    return build_document(_Walker(frozenset(_CHROME_TAGS)).blocks(body), source)


def _language(element: _Element, inherited: str) -> str:
    """The language named by an element's `highlight-<language>` class, else the inherited one."""
    names = sorted(c for c in element.classes if c.startswith(_HIGHLIGHT_PREFIX))
    return names[0].removeprefix(_HIGHLIGHT_PREFIX) if names else inherited


def _elements(element: _Element) -> Iterator[_Element]:
    """The element and its descendants, in document order."""
    yield element
    for child in element.children:
        if isinstance(child, _Element):
            yield from _elements(child)


def _main_elements(root: _Element) -> Iterator[_Element]:
    for element in _elements(root):
        is_body_div = element.tag == "div" and "body" in element.classes
        if element.attrs.get("role") == "main" or is_body_div or element.tag == "main":
            yield element


@dataclass(frozen=True)
class _Walker:
    """Turns elements into events, skipping `_SKIPPED_TAGS`, `skipped_tags` and `_SKIPPED_CLASSES`."""

    skipped_tags: frozenset[str]

    def _skipped(self, node: _Element | str) -> bool:
        if isinstance(node, str):
            return False
        return node.tag in _SKIPPED_TAGS or node.tag in self.skipped_tags or bool(node.classes & _SKIPPED_CLASSES)

    def blocks(self, element: _Element, language: str = "") -> list[Event]:
        """The events of an element's children; runs of inline children become paragraphs."""
        events: list[Event] = []
        loose: list[_Element | str] = []
        for child in element.children:
            if self._skipped(child):
                continue
            if isinstance(child, str) or child.tag not in _BLOCK:
                loose.append(child)
                continue
            events.extend(text_block(self.text(loose)))
            loose = []
            events.extend(self._block(child, language))
        events.extend(text_block(self.text(loose)))
        return events

    def _block(self, element: _Element, language: str) -> list[Event]:
        tag = element.tag
        if tag in _HEADINGS:
            return [Heading(_HEADINGS[tag], collapse(self.text(element.children)))]
        if tag == "p":
            return list(text_block(self.text(element.children)))
        if tag in ("ul", "ol"):
            items = [c for c in element.children if isinstance(c, _Element) and c.tag == "li"]
            return list(list_blocks(self.blocks(item, language) for item in items))
        if tag == "pre":
            return list(code_block(self._verbatim(element).removeprefix("\n"), language))
        if tag == "table":
            return self._table(element)
        return self.blocks(element, _language(element, language))

    def _table(self, table: _Element) -> list[Event]:
        rows = [row for row in _elements(table) if row.tag == "tr"]
        items = []
        for row in rows:
            cells = [c for c in row.children if isinstance(c, _Element) and c.tag in ("td", "th")]
            items.append(" | ".join(text for text in (collapse(self.text([c])) for c in cells) if text))
        return list(list_blocks(text_block(item) for item in items))

    def text(self, nodes: list[_Element | str]) -> str:
        """The text of inline content; block elements inside it are set apart by spaces."""
        return "".join(self._text(node) for node in nodes if not self._skipped(node))

    def _text(self, node: _Element | str) -> str:
        if isinstance(node, str):
            return node
        if node.tag == "br":
            return " "
        inner = self.text(node.children)
        if node.tag == "code" and node.classes & _FUNCTION_XREFS:
            return inner.removesuffix("()")
        return f" {inner} " if node.tag in _BLOCK else inner

    def _verbatim(self, node: _Element | str) -> str:
        if isinstance(node, str):
            return node
        return "\n" if node.tag == "br" else "".join(self._verbatim(child) for child in node.children)
