"""Signatures of real functions as the extractor cuts them out of real files: headers, never bodies."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.extract import extract
from pkg.code.signatures import signature
from tests.conftest import FIXTURES, STDLIB

STRUCTURE = FIXTURES / "structure"
REPO = Path(__file__).parent.parent


def _signatures(path: Path, lang: str) -> dict[str, str]:
    return {fn.qualname: signature(fn.text, lang) for fn in extract(path.read_text(), lang).functions}


def test_python_signature_is_the_def_and_the_docstrings_first_paragraph() -> None:
    heapq = _signatures(STDLIB / "heapq.py", "python")
    assert (
        heapq["heappush"] == 'def heappush(heap, item):\n    """Push item onto heap, maintaining the heap invariant."""'
    )
    # a docstring of several paragraphs: only the first, on one line
    assert heapq["heapreplace"] == (
        'def heapreplace(heap, item):\n    """Pop and return the current smallest value, and add the new item."""'
    )
    # no docstring, and the comments between the def and the body are dropped
    assert heapq["_siftdown"] == "def _siftdown(heap, startpos, pos):"


def test_python_signature_keeps_a_multi_line_annotated_header() -> None:
    ours = _signatures(REPO / "pkg" / "code" / "signatures.py", "python")
    assert ours["_first_function"] == (
        "def _first_function(root: Node, spec: LanguageSpec, start: int) -> Node | None:\n"
        '    """The first function node, in pre-order, at or after byte `start` (past the frame)."""'
    )
    expand = _signatures(REPO / "retrieval" / "expand.py", "python")
    header = expand["expansions"].splitlines()[:3]
    assert header == [
        "def expansions(",
        "    store: GraphStore, hits: Sequence[NodeContext], expand: Expand, budget: int, exclude: Collection[str]",
        ") -> dict[str, str]:",
    ]


def test_a_one_line_python_function_is_cut_after_its_colon() -> None:
    assert signature("def double(x: int) -> int: return 2 * x\n", "python") == "def double(x: int) -> int:"


@pytest.mark.parametrize(
    ("file", "lang", "expected"),
    [
        (
            "shapes.go",
            "go",
            {
                "Counter.Add": "func (c *Counter) Add(k int) int",
                "Counter.Get": "func (c *Counter) Get() int",
                "Total": "func Total(xs []int) int",
                "helper": "func helper(v int) int",
            },
        ),
        (
            "shapes.js",
            "javascript",
            {"Stack.push": "push(x)", "fill": "function fill(n)", "report": "(s) =>"},
        ),
        # Java methods parse only inside their class: the signature is read in the language's frame
        ("Shapes.java", "java", {"Base.scale": "double scale(double x)", "Square.side": "double side()"}),
        ("shapes.rs", "rust", {"Dog.new": "fn new(age: u32) -> Dog", "Dog.name": "fn name(&self) -> String"}),
    ],
)
def test_tree_sitter_signature_is_the_function_up_to_its_body(file: str, lang: str, expected: dict[str, str]) -> None:
    found = _signatures(STRUCTURE / file, lang)
    assert {name: found[name] for name in expected} == expected
    assert not any("return" in text or "{" in text for text in found.values())


def test_unreadable_text_falls_back_to_its_first_line() -> None:
    assert signature("  not a function(\n  at all", "python") == "not a function("
    assert signature("x = 1\n", "go") == "x = 1"
    assert signature("x = 1\n", "cobol") == "x = 1"
