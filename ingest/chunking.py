"""cAST chunking: split source code along its syntax tree, then merge small siblings.

The algorithm follows cAST (Zhang et al., 2025) and reproduces the chunk boundaries of its
reference implementation ``astchunk`` 0.1:

* A size is a number of non-whitespace UTF-8 *bytes*, whitespace being the six ASCII
  characters of :data:`string.whitespace`: the number of non-whitespace characters for
  ASCII text, while a non-ASCII character counts once per byte it encodes to.
* If the whole source fits in ``max_chunk_size`` it is one chunk. Otherwise the root's
  children are packed greedily, in order, into windows: a node joins the open window while
  the sum of node sizes stays within the limit, else the window is closed and the node
  opens the next one. A node larger than the limit closes the open window and is replaced
  by its children's windows, packed the same way and then merged greedily, left to right,
  while two neighbours fit together; the sibling after it opens a new window. The root's
  own windows are never merged.
* What cannot be split is kept whole, as a chunk above the limit: a leaf (a long comment,
  say) or, inside a node whose children miss some of its text (a string body, whose only
  children are its escape sequences), a run of that text. ``astchunk`` loses such text
  instead: it drops big leaves and splits such nodes as if the missed text were not there.

Windows cover syntax only; the whitespace between two windows goes to the earlier one up to
the start of the line on which the later one begins (or, when both share a line, up to the
later one's first byte). The first chunk starts at byte 0 and the last one ends at the end
of the source, so the chunks concatenate to the source verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from tree_sitter import Node

from pkg.code.syntax_tree import parser as grammar_parser
from pkg.errors import ConfigError

#: The bytes that do not count towards a chunk's size (``string.whitespace``).
WHITESPACE = b" \t\n\r\x0b\x0c"


@dataclass(frozen=True)
class Chunk:
    """A contiguous slice of a source file.

    Lines are 1-based and inclusive, counted by ``\\n``; bytes are UTF-8 offsets, end
    exclusive. ``end_line`` is the line of the chunk's last character (a trailing newline
    belongs to the line it ends).
    """

    text: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int


class _Window(NamedTuple):
    """A run of consecutive pieces of the tree: their byte span and the sum of their sizes."""

    start: int
    end: int
    size: int


def non_whitespace_size(text: str) -> int:
    """Return the size cAST measures: the number of non-whitespace UTF-8 bytes of ``text``."""
    return len(text.encode("utf-8").translate(None, WHITESPACE))


def chunk_source(source: str, lang: str = "python", max_chunk_size: int = 2000) -> list[Chunk]:
    """Split ``source`` into cAST chunks of at most ``max_chunk_size`` non-whitespace bytes.

    ``lang`` is any language name ``tree_sitter_language_pack`` parses. The chunks are in
    order and concatenate to ``source``. Only a piece that cannot be split, a leaf or an
    unbroken run of text inside a token such as a string, is ever a chunk above the limit,
    and then a chunk on its own. Empty source gives ``[]``.

    Raises:
        ConfigError: ``lang`` is unknown or ``max_chunk_size`` is below 1.
    """
    if max_chunk_size < 1:
        raise ConfigError(f"max_chunk_size must be at least 1, got {max_chunk_size}")
    parser = grammar_parser(lang)
    if not source:
        return []
    data = source.encode("utf-8")
    root = parser.parse(data).root_node
    windows = _Packer(data, max_chunk_size).tree(root)
    return _chunks(data, _cuts(data, windows))


class _Piece(NamedTuple):
    """A syntax node, or a run of text inside one that none of its children covers."""

    start: int
    end: int
    size: int
    node: Node | None


class _Packer:
    """Assigns the pieces of a syntax tree to windows of at most ``limit`` non-whitespace bytes."""

    def __init__(self, data: bytes, limit: int) -> None:
        self.data = data
        self.limit = limit

    def size(self, start: int, end: int) -> int:
        """Return the number of non-whitespace bytes in ``data[start:end]``."""
        return len(self.data[start:end].translate(None, WHITESPACE))

    def tree(self, root: Node) -> list[_Window]:
        """Return the windows of the whole source: one if it fits, else its parts', unmerged."""
        whole = _Piece(0, len(self.data), self.size(0, len(self.data)), root)
        if whole.size <= self.limit or not root.child_count:
            return [_Window(whole.start, whole.end, whole.size)]
        return self.pack(self.parts(root, whole))

    def parts(self, node: Node, piece: _Piece) -> list[_Piece]:
        """Return ``node``'s children and, in order between them, any text of ``piece`` they miss.

        Children usually cover every non-whitespace byte; a string body's children, though,
        are only its escape sequences, and the text between them must still be counted.
        """
        children = [_Piece(c.start_byte, c.end_byte, self.size(c.start_byte, c.end_byte), c) for c in node.children]
        if sum(child.size for child in children) == piece.size:
            return children
        parts: list[_Piece] = []
        position = piece.start
        for child in children:
            parts.extend(self.text_run(position, child.start))
            parts.append(child)
            position = child.end
        parts.extend(self.text_run(position, piece.end))
        return parts

    def text_run(self, start: int, end: int) -> list[_Piece]:
        """Return ``data[start:end]`` less surrounding whitespace as a piece, if anything is left."""
        text = self.data[start:end]
        core = text.strip(WHITESPACE)
        if not core:
            return []
        begin = start + len(text) - len(text.lstrip(WHITESPACE))
        return [_Piece(begin, begin + len(core), self.size(begin, begin + len(core)), None)]

    def pack(self, pieces: list[_Piece]) -> list[_Window]:
        """Greedily pack sibling ``pieces`` into windows, splitting any node over the limit."""
        windows: list[_Window] = []
        current: _Window | None = None
        for piece in pieces:
            if current is not None and current.size + piece.size <= self.limit:
                current = _Window(current.start, piece.end, current.size + piece.size)
                continue
            if current is not None:
                windows.append(current)
                current = None
            if piece.size <= self.limit:
                current = _Window(piece.start, piece.end, piece.size)
            elif piece.node is not None and piece.node.child_count:
                windows.extend(self.merge(self.pack(self.parts(piece.node, piece))))
            else:
                windows.append(_Window(piece.start, piece.end, piece.size))
        if current is not None:
            windows.append(current)
        return windows

    def merge(self, windows: list[_Window]) -> list[_Window]:
        """Merge neighbouring windows, left to right, while the pair fits in the limit."""
        merged = windows[:1]
        for window in windows[1:]:
            last = merged[-1]
            if last.size + window.size <= self.limit:
                merged[-1] = _Window(last.start, window.end, last.size + window.size)
            else:
                merged.append(window)
        return merged


def _cuts(data: bytes, windows: list[_Window]) -> list[int]:
    """Return the chunk boundaries: 0, one offset in each gap between windows, len(data)."""
    cuts = [0]
    for before, after in zip(windows, windows[1:]):
        line_start = data.rfind(b"\n", 0, after.start) + 1
        cut = line_start if line_start >= before.end else after.start
        if cut > cuts[-1]:
            cuts.append(cut)
    if len(data) > cuts[-1]:
        cuts.append(len(data))
    return cuts


def _chunks(data: bytes, cuts: list[int]) -> list[Chunk]:
    """Slice ``data`` at ``cuts`` into chunks with their line numbers."""
    chunks: list[Chunk] = []
    line = 1
    for start, end in zip(cuts, cuts[1:]):
        piece = data[start:end]
        newlines = piece.count(b"\n")
        last_line = line + newlines - piece.endswith(b"\n")
        chunks.append(Chunk(piece.decode("utf-8"), line, last_line, start, end))
        line += newlines
    return chunks
