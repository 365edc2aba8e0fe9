"""cAST chunking: invariants on real stdlib modules, behaviour, and parity with astchunk."""

from __future__ import annotations

import re
import textwrap
from bisect import bisect_left
from functools import cache
from pathlib import Path

import pytest
from astchunk import ASTChunkBuilder
from tree_sitter import Node
from tree_sitter_language_pack import get_parser

from bench.bench_chunking import astchunk_spans, lossy_regions, same_boundaries, stdlib_modules
from ingest.chunking import WHITESPACE, Chunk, chunk_source, non_whitespace_size
from pkg.errors import ConfigError

#: Sixty real modules, evenly spaced over the sorted top-level standard library.
MODULES = stdlib_modules(60, top_level=True)
SIZES = [200, 500, 2000]


@cache
def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _big_atoms(source: str, limit: int, lang: str) -> set[tuple[int, int]]:
    """Return the spans, less surrounding whitespace, of what cannot be split and is above
    ``limit``: leaves, and runs of a node's span (the whole source's, for the root) between its
    children. Only nodes above the limit can hold one."""
    data = source.encode("utf-8")
    spans = []
    root = get_parser(lang).parse(data).root_node
    stack: list[tuple[Node, int, int]] = [(root, 0, len(data))]
    while stack:
        node, start, end = stack.pop()
        children = node.children
        bounds = [start, *(b for c in children for b in (c.start_byte, c.end_byte)), end]
        spans.extend(zip(bounds[::2], bounds[1::2]))
        stack.extend((c, c.start_byte, c.end_byte) for c in children if non_whitespace_size(c.text.decode()) > limit)
    return {_core(data, start, end) for start, end in spans if data[start:end].strip(WHITESPACE)}


def _core(data: bytes, start: int, end: int) -> tuple[int, int]:
    """Return the span ``data[start:end]`` less its leading and trailing whitespace."""
    text = data[start:end]
    begin = start + len(text) - len(text.lstrip(WHITESPACE))
    return begin, begin + len(text.strip(WHITESPACE))


def _assert_invariants(source: str, chunks: list[Chunk], limit: int, lang: str = "python") -> None:
    """Verbatim, ordered, line-consistent chunks within the limit but for unsplittable pieces."""
    data = source.encode("utf-8")
    assert "".join(c.text for c in chunks) == source
    assert chunks[0].start_byte == 0 and chunks[-1].end_byte == len(data)
    for before, after in zip(chunks, chunks[1:]):
        assert before.end_byte == after.start_byte
    newlines = [match.start() for match in re.finditer(b"\n", data)]
    for chunk in chunks:
        assert chunk.text and data[chunk.start_byte : chunk.end_byte].decode("utf-8") == chunk.text
        assert chunk.start_line == bisect_left(newlines, chunk.start_byte) + 1
        assert chunk.end_line == bisect_left(newlines, chunk.end_byte - 1) + 1
    big = [c for c in chunks if non_whitespace_size(c.text) > limit]
    if big:
        atoms = _big_atoms(source, limit, lang)
        for chunk in big:
            assert _core(data, chunk.start_byte, chunk.end_byte) in atoms, (
                f"chunk at line {chunk.start_line} is over the limit without being a single unsplittable piece"
            )


def _statements(count: int) -> str:
    return "".join(f"value_{i} = {i}\n" for i in range(count))


def _function(name: str, statements: int) -> str:
    body = "".join(f"    total_{i} = compute({i}, factor)\n" for i in range(statements))
    return f"def {name}(factor):\n{body}    return factor\n"


# --- invariants on real files ----------------------------------------------------------


def test_enough_real_modules() -> None:
    assert len(MODULES) >= 50


@pytest.mark.parametrize("limit", SIZES)
def test_invariants_on_stdlib_modules(limit: int) -> None:
    for path in MODULES:
        source = _source(path)
        _assert_invariants(source, chunk_source(source, max_chunk_size=limit), limit)


# --- behaviour -------------------------------------------------------------------------


def test_small_file_is_one_chunk() -> None:
    source = "import os\n\n\ndef f(x):\n    return os.sep + x\n"
    assert chunk_source(source) == [Chunk(source, 1, 5, 0, len(source))]


def test_empty_source_gives_no_chunk() -> None:
    assert chunk_source("") == []


def test_whitespace_only_source_is_one_chunk() -> None:
    assert chunk_source("\n  \n") == [Chunk("\n  \n", 1, 2, 0, 4)]


def test_two_large_functions_are_not_merged() -> None:
    first, second = _function("first", 6), _function("second", 6)
    source = f"{first}\n\n{second}"
    limit = max(non_whitespace_size(first), non_whitespace_size(second)) + 5
    chunks = chunk_source(source, max_chunk_size=limit)
    assert [c.text for c in chunks] == [f"{first}\n\n", second]
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 10), (11, 18)]


def test_small_adjacent_statements_are_merged_greedily() -> None:
    source = _statements(40)
    chunks = chunk_source(source, max_chunk_size=60)
    _assert_invariants(source, chunks, 60)
    assert 1 < len(chunks) < 40
    assert all(c.text.count("\n") > 1 for c in chunks)
    for before, after in zip(chunks, chunks[1:]):
        first_statement = after.text.split("\n")[0]
        assert non_whitespace_size(before.text + first_statement) > 60


def test_crlf_line_endings_chunk_like_lf() -> None:
    source = _statements(40).replace("\n", "\r\n")
    chunks = chunk_source(source, max_chunk_size=60)
    _assert_invariants(source, chunks, 60)
    assert [(c.start_line, c.end_line) for c in chunks] == [
        (c.start_line, c.end_line) for c in chunk_source(_statements(40), max_chunk_size=60)
    ]


def test_function_larger_than_limit_is_split_inside() -> None:
    source = _function("big", 30)
    limit = non_whitespace_size(source) // 4
    chunks = chunk_source(source, max_chunk_size=limit)
    _assert_invariants(source, chunks, limit)
    assert len(chunks) >= 4
    assert chunks[0].text.startswith("def big(factor):\n")
    assert all(c.text.startswith("    total_") for c in chunks[1:-1])
    assert chunks[-1].text.endswith("    return factor\n")


def test_statements_on_one_line_are_cut_between_them() -> None:
    source = "alpha = 1; beta = 2; gamma = 3\n"
    chunks = chunk_source(source, max_chunk_size=8)
    assert [c.text for c in chunks] == ["alpha = 1; ", "beta = 2; ", "gamma = 3\n"]
    assert all(c.start_line == c.end_line == 1 for c in chunks)


def test_leaf_larger_than_limit_is_a_chunk_of_its_own() -> None:
    comment = "# " + "x" * 300
    source = f"a = 1\n{comment}\nb = 2\n"
    chunks = chunk_source(source, max_chunk_size=100)
    assert [c.text for c in chunks] == ["a = 1\n", f"{comment}\n", "b = 2\n"]
    _assert_invariants(source, chunks, 100)


def test_string_with_escapes_is_split_at_them_and_all_its_text_counts() -> None:
    lines = [f"line {i} of a long docstring with some words in it\\n" for i in range(12)]
    source = 'def f():\n    """' + "\n    ".join(lines) + '"""\n    return 1\n'
    chunks = chunk_source(source, max_chunk_size=150)
    _assert_invariants(source, chunks, 150)
    assert all(non_whitespace_size(c.text) <= 150 for c in chunks)
    assert len(chunks) >= non_whitespace_size(source) // 150


def test_size_counts_utf8_bytes_and_offsets_are_bytes() -> None:
    assert non_whitespace_size("é π 😀\n\t") == 2 + 2 + 4
    source = 'greeting = "héllo wörld"\n' * 8 + 'emoji = "😀"\n'
    chunks = chunk_source(source, max_chunk_size=40)
    _assert_invariants(source, chunks, 40)
    assert len(chunks) > 1


def test_other_languages_chunk_too() -> None:
    source = textwrap.dedent(
        """\
        function add(a, b) {
          const total = a + b;
          return total;
        }

        // A comment between functions.
        function scale(values, factor) {
          return values.map((value) => value * factor);
        }
        """
    )
    chunks = chunk_source(source, lang="javascript", max_chunk_size=40)
    assert len(chunks) > 1
    _assert_invariants(source, chunks, 40, lang="javascript")


@pytest.mark.parametrize("lang", ["no-such-language", ""])
def test_unknown_language_is_a_config_error(lang: str) -> None:
    with pytest.raises(ConfigError, match="no parser"):
        chunk_source("x = 1\n", lang=lang)


@pytest.mark.parametrize("size", [0, -5])
def test_limit_below_one_is_a_config_error(size: int) -> None:
    with pytest.raises(ConfigError, match="at least 1"):
        chunk_source("x = 1\n", max_chunk_size=size)


# --- parity with astchunk --------------------------------------------------------------


@pytest.mark.parametrize("limit", [2000, 500])
def test_boundaries_match_astchunk_on_stdlib_modules(limit: int) -> None:
    """Same boundaries as astchunk 0.1, except inside a top-level statement where astchunk
    loses text (of a leaf or string body above the limit) that we keep."""
    compared = total = 0
    for path in MODULES:
        source = _source(path)
        chunks, spans = chunk_source(source, max_chunk_size=limit), astchunk_spans(source, limit)
        regions = lossy_regions(source, limit)
        assert same_boundaries(chunks, spans, regions), path.name
        assert regions or same_boundaries(chunks, spans), path.name
        compared += sum(all(end <= r[0] or start >= r[1] for r in regions) for start, end in spans)
        total += len(spans)
    # The exception above must leave most of astchunk's windows compared.
    assert compared >= total * 2 // 3


def test_astchunk_drops_a_leaf_above_the_limit_that_we_keep() -> None:
    docstring = '"""' + "word " * 100 + '"""'
    source = f"def f():\n    {docstring}\n    return 1\n"
    builder = ASTChunkBuilder(max_chunk_size=100, language="python", metadata_template="none")
    theirs = "".join(window["content"] for window in builder.chunkify(source))
    assert "word" not in theirs
    chunks = chunk_source(source, max_chunk_size=100)
    assert "".join(c.text for c in chunks) == source
    assert any(c.text.strip() == ("word " * 100).strip() for c in chunks)
