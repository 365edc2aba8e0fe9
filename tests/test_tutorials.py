"""Tutorial converters: hand-written fixtures checked exactly, and the real Python documentation
(Debian's python3.11-doc: reStructuredText sources and the Sphinx HTML built from them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ingest.tutorials import tutorial_to_json
from pkg.errors import CorpusError
from tests.conftest import FIXTURES

TUTORIALS = FIXTURES / "tutorials"
PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")
#: Sphinx's "smartquotes" turns source punctuation into typographic characters in the HTML.
SMARTQUOTES = str.maketrans(
    {
        "\u201c": '"',
        "\u201d": '"',
        "\u2018": "'",
        "\u2019": "'",
        "\u2014": "---",
        "\u2013": "--",
        "\u2026": "...",
    }
)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def items(*values: str) -> dict[str, Any]:
    return {"type": "list", "items": list(values)}


def code(language: str, value: str) -> dict[str, Any]:
    return {"type": "code", "language": language, "text": value}


def doctest(value: str) -> dict[str, Any]:
    return {"type": "doctest", "text": value}


def section(title: str, content: list[dict[str, Any]], sections: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"title": title, "content": content, "sections": sections or []}


def test_rst_fixture() -> None:
    path = TUTORIALS / "sample.rst"
    assert tutorial_to_json(path) == {
        "title": "Sample Tutorial",
        "source": str(path),
        "sections": [
            section(
                "Sample Tutorial",
                [text("Words before the title belong to a section named like the document.")],
            ),
            section(
                "Sample Tutorial",
                [text("An intro with inline code, a len call, bold, emphasis, a link and a footnote.")],
                [
                    section(
                        "Lists",
                        [
                            items("First item continues here.", "Second item:", "nested one", "nested two"),
                            items("Auto-numbered", "Again"),
                            text("Then a numbered list:"),
                            items("Numbered", "With a literal:"),
                            code("", "x = 1"),
                        ],
                    ),
                    section(
                        "Code",
                        [
                            text("Plain literal block:"),
                            code("", "for i in range(3):\n    print(i)"),
                            text("Console session"),
                            doctest(">>> 1 + 1\n2"),
                            code("", "$ python -m venv .venv"),
                            doctest('>>> print("direct doctest block")\ndirect doctest block'),
                            code("python", 'def greet(name):\n    return f"Hello, {name}!"'),
                            code("console", "$ pip install pkg"),
                            code("python", "print(3 * 7)"),
                            doctest(">>> sorted({3, 1, 2})\n[1, 2, 3]"),
                        ],
                        [
                            section(
                                "Subsection",
                                [
                                    text("spam(eggs, ham=None)"),
                                    text("Spam the eggs."),
                                    text("New in version 3.2."),
                                    text("Changed in version 3.4: Added ham."),
                                    text("A note's text."),
                                ],
                                [
                                    section(
                                        "Deeper",
                                        [
                                            items("Author: Jane Doe", "Version: 1.0"),
                                            text("term"),
                                            text("Its definition."),
                                            items("Name | Meaning", "a | first"),
                                            items("Key | Value", "x | 1", "y | 2"),
                                        ],
                                    )
                                ],
                            )
                        ],
                    ),
                    section("Back Up", [text("A line block of two lines."), text("The footnote text.")]),
                ],
            ),
        ],
    }


def test_markdown_fixture() -> None:
    path = TUTORIALS / "readme.md"
    assert tutorial_to_json(path) == {
        "title": "Widget Toolkit",
        "source": str(path),
        "sections": [
            section("Widget Toolkit", [text("Build")]),
            section(
                "Widget Toolkit",
                [text("A tiny toolkit for widgets, see the docs and widget.make(). It wraps lines softly.")],
                [
                    section(
                        "Installation",
                        [
                            code("console", "$ pip install widget-toolkit"),
                            text("Or from source:"),
                            code("bash", "git clone https://example.org/widget.git"),
                        ],
                    ),
                    section(
                        "Usage",
                        [
                            items("Import it.", "Make a widget:"),
                            code("python", 'import widget\nw = widget.make("knob")'),
                            items("Done."),
                            items("Features", "fast", "small"),
                            items("Another list"),
                            doctest(">>> import widget\n>>> widget.VERSION\n'1.0'"),
                            code("", 'indented = "code"\nprint(indented)'),
                            text("Quoted advice on two lines."),
                            items("Option | Default", "size | 10", "color | red"),
                        ],
                        [section("Details", [text("Text with Ctrl and an escaped *star* & an entity.")])],
                    ),
                ],
            ),
            section("Changelog", [text("Because it is small.")]),
        ],
    }


def test_html_fixture() -> None:
    path = TUTORIALS / "sphinx_page.html"
    assert tutorial_to_json(path) == {
        "title": "Sample Page",
        "source": str(path),
        "sections": [
            section(
                "Sample Page",
                [
                    text("Fish & chips, x<y, a call to len and it\u2019s fine."),
                    items("First item", "Second item", "nested"),
                    items("One", "Two"),
                    code("python3", 'def greet():\n    return "hi"'),
                ],
                [
                    section(
                        "Details",
                        [
                            doctest(">>> 2 + 2\n4"),
                            code("", "plain literal"),
                            text("spam(eggs)"),
                            text("Spam the eggs."),
                            text("Changed in version 3.4: Added ham."),
                            text("A note\u2019s text."),
                        ],
                        [section("Deeper", [items("Name | Meaning", "a | first")])],
                    ),
                    section("Back Up", [text("Loose paragraph"), text("The footnote text.")]),
                ],
            )
        ],
    }


@pytest.mark.parametrize("name", ["sample.rst", "readme.md", "sphinx_page.html"])
def test_keys_come_in_the_documented_order(name: str) -> None:
    document = tutorial_to_json(TUTORIALS / name)
    assert list(document) == ["title", "source", "sections"]
    keys = {"text": ["type", "text"], "list": ["type", "items"], "code": ["type", "language", "text"]}
    for _, found in walk(document["sections"]):
        assert list(found) == ["title", "content", "sections"]
        for block in found["content"]:
            assert list(block) == keys.get(block["type"], ["type", "text"])


@pytest.mark.parametrize(
    "path",
    [
        TUTORIALS / "sample.rst",
        TUTORIALS / "readme.md",
        TUTORIALS / "sphinx_page.html",
        PYTHON_DOCS / "_sources/library/json.rst.txt",
        PYTHON_DOCS / "library/json.html",
    ],
    ids=lambda path: path.name,
)
def test_conversion_is_deterministic(path: Path, python_docs: Path) -> None:
    """The same document in processes with different string hashing (set iteration order)."""
    convert = (
        "import json, sys; from pathlib import Path; from ingest.tutorials import tutorial_to_json; "
        "print(json.dumps(tutorial_to_json(Path(sys.argv[1]))))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", convert, str(path)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert outputs == {json.dumps(tutorial_to_json(path)) + "\n"}


def test_title_falls_back_to_the_file_stem(tmp_path: Path) -> None:
    page = tmp_path / "notes.md"
    page.write_text("Just a paragraph.\n\n```\ncode\n```\n", encoding="utf-8")
    assert tutorial_to_json(page) == {
        "title": "notes",
        "source": str(page),
        "sections": [section("notes", [text("Just a paragraph."), code("", "code")])],
    }


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("guide.md", "# Guide\n\nBody.\n"),
        ("guide.markdown", "Guide\n=====\n\nBody.\n"),
        ("guide.rst", "Guide\n=====\n\nBody.\n"),
        ("guide.rst.txt", "=====\nGuide\n=====\n\nBody.\n"),
        ("guide.html", "<main><h1>Guide</h1><p>Body.</p></main>"),
        ("GUIDE.HTM", "<body><nav>Menu</nav><h1>Guide</h1>Body.<footer>Footer</footer></body>"),
    ],
)
def test_converter_is_chosen_by_extension(tmp_path: Path, name: str, body: str) -> None:
    (tmp_path / name).write_text(body, encoding="utf-8")
    assert tutorial_to_json(tmp_path / name)["sections"] == [section("Guide", [text("Body.")])]


def test_txt_is_rst_only_under_a_sources_dir(tmp_path: Path) -> None:
    sources = tmp_path / "_sources"
    sources.mkdir()
    (sources / "page.txt").write_text("Title\n=====\n\nBody.\n", encoding="utf-8")
    (tmp_path / "page.txt").write_text("Title\n=====\n", encoding="utf-8")
    assert tutorial_to_json(sources / "page.txt")["sections"] == [section("Title", [text("Body.")])]
    with pytest.raises(CorpusError):
        tutorial_to_json(tmp_path / "page.txt")


@pytest.mark.parametrize("name", ["guide.pdf", "notes.txt", "README"])
def test_unknown_extension_is_a_corpus_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("text", encoding="utf-8")
    with pytest.raises(CorpusError) as raised:
        tutorial_to_json(path)
    message = str(raised.value)
    assert "unsupported tutorial format" in message and name in message and "\n" not in message


def test_unreadable_file_is_a_corpus_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.md"
    path.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(CorpusError, match="cannot read tutorial"):
        tutorial_to_json(path)


# --- the real Python documentation -------------------------------------------------------------


@pytest.fixture(scope="module")
def python_docs() -> Path:
    """The python3.11-doc tree; missing means a broken test set-up, so fail (never skip)."""
    if not (PYTHON_DOCS / "_sources").is_dir():
        where = "in CI" if os.environ.get("CI") else "locally"
        pytest.fail(f"{PYTHON_DOCS}/_sources is missing {where}: run `apt-get install -y python3.11-doc`")
    return PYTHON_DOCS


@pytest.fixture(scope="module")
def rst_pages(python_docs: Path) -> dict[str, dict[str, Any]]:
    """Every reStructuredText page, converted once, by path relative to `_sources`."""
    sources = python_docs / "_sources"
    return {p.relative_to(sources).as_posix(): tutorial_to_json(p) for p in sorted(sources.rglob("*.rst.txt"))}


def walk(sections: list[dict[str, Any]], depth: int = 0) -> list[tuple[int, dict[str, Any]]]:
    """Every section with its depth, in document order."""
    found = []
    for s in sections:
        found.append((depth, s))
        found.extend(walk(s["sections"], depth + 1))
    return found


def blocks(document: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for _, s in walk(document["sections"]) for b in s["content"] if b["type"] == kind]


def test_every_rst_page_converts(rst_pages: dict[str, dict[str, Any]]) -> None:
    assert len(rst_pages) >= 490
    for name, document in rst_pages.items():
        assert document["title"].strip(), name
        assert document["sections"], name
    code_items = sum(len(blocks(d, "code")) + len(blocks(d, "doctest")) for d in rst_pages.values())
    assert code_items > 5000  # measured: 5284 (3036 code + 2248 doctest)
    assert sum(len(blocks(d, "doctest")) for d in rst_pages.values()) > 2000


def test_introduction_page(rst_pages: dict[str, dict[str, Any]]) -> None:
    document = rst_pages["tutorial/introduction.rst.txt"]
    assert document["title"] == "An Informal Introduction to Python"
    [(_, root)] = [(d, s) for d, s in walk(document["sections"]) if d == 0]
    assert root["title"] == "An Informal Introduction to Python"
    assert [s["title"] for s in root["sections"]] == [
        "Using Python as a Calculator",
        "First Steps Towards Programming",
    ]
    calculator = root["sections"][0]
    assert [s["title"] for s in calculator["sections"]] == ["Numbers", "Strings", "Lists"]
    numbers = calculator["sections"][0]
    assert numbers["content"][1] == doctest(
        ">>> 2 + 2\n4\n>>> 50 - 5*6\n20\n>>> (50 - 5*6) / 4\n5.0\n"
        ">>> 8 / 5  # division always returns a floating point number\n1.6"
    )
    assert numbers["content"][0]["text"].startswith("The interpreter acts as a simple calculator:")
    assert root["content"][-2:] == [
        text("Some examples:"),
        code(
            "",
            "# this is the first comment\n"
            "spam = 1  # and this is the second comment\n"
            "          # ... and now a third!\n"
            'text = "# This is not a comment because it\'s inside quotes."',
        ),
    ]


def test_json_page(rst_pages: dict[str, dict[str, Any]]) -> None:
    document = rst_pages["library/json.rst.txt"]
    assert document["title"] == "json --- JSON encoder and decoder"
    assert any("json.dumps(" in b["text"] for b in blocks(document, "doctest"))
    texts = [b["text"] for b in blocks(document, "text")]
    assert texts[0] == "Source code: Lib/json/__init__.py"
    signature = (
        "dumps(obj, *, skipkeys=False, ensure_ascii=True, check_circular=True, allow_nan=True, "
        "cls=None, indent=None, separators=None, default=None, sort_keys=False, **kw)"
    )
    assert signature in texts
    assert "Changed in version 3.6: All optional parameters are now keyword-only." in texts


def test_sphinx_directives_in_the_python_docs(rst_pages: dict[str, dict[str, Any]]) -> None:
    """`testcode`, `code-block`, `:hide:` and metadata field lists, on real pages."""
    sqlite = rst_pages["library/sqlite3.rst.txt"]
    hidden = "[('a', 9), ('b', 12), ('c', 16), ('d', 12), ('e', 9)]"  # a `.. testoutput:: :hide:`
    assert not any(hidden in b["text"] for b in blocks(sqlite, "code"))
    window = [
        b["text"] for b in blocks(sqlite, "code") if 'create_window_function("sumint", 1, WindowSumInt)' in b["text"]
    ]
    assert len(window) == 1 and window[0].rstrip().endswith("print(cur.fetchall())")  # the `testcode` block, whole
    gui = rst_pages["faq/gui.rst.txt"]  # starts with `:tocdepth: 2`, which is not content
    assert [s["title"] for _, s in walk(gui["sections"])][:2] == [
        "Graphic User Interface FAQ",
        "General GUI Questions",
    ]
    languages = {b["language"] for d in rst_pages.values() for b in blocks(d, "code")}
    assert {"", "python", "c", "shell", "bash"} <= languages
    assert not {"none", "default"} & languages  # both mean "no particular language": ""


def section_titles(document: dict[str, Any]) -> list[tuple[int, str]]:
    return [(depth, s["title"].translate(SMARTQUOTES)) for depth, s in walk(document["sections"])]


def test_html_tutorial_matches_rst(python_docs: Path, rst_pages: dict[str, dict[str, Any]]) -> None:
    """The Sphinx HTML of each tutorial page gives the title and section outline of its source.

    Sphinx's smartquotes (-- to an en dash, "x" to curly quotes, ...) is undone before comparing."""
    pages = sorted((python_docs / "tutorial").glob("*.html"))
    assert len(pages) >= 15
    identical = []
    for page in pages:
        rst = rst_pages[f"tutorial/{page.stem}.rst.txt"]
        html = tutorial_to_json(page)
        assert html["title"].translate(SMARTQUOTES) == rst["title"], page.name
        identical.append(section_titles(html) == section_titles(rst))
    assert sum(identical) / len(identical) >= 0.9  # measured: 17 of 17
    introduction = tutorial_to_json(python_docs / "tutorial/introduction.html")
    assert blocks(introduction, "doctest") == blocks(rst_pages["tutorial/introduction.rst.txt"], "doctest")
