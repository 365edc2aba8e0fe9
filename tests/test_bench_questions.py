"""The documentation-question benchmark's questions: a sentence of prose that names one function of the
package, that function masked, markup as text, copies of the docstring dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_questions import (
    Target,
    as_rst,
    copied,
    masked,
    package_questions,
    paragraphs,
    parse_packages,
    resolve,
    sentences,
)

STYLE = Target("click", "/c/click/termui.py", "style")
INVOKE = Target("click", "/c/click/core.py", "Context.invoke")
RUN = Target("anyio", "/c/anyio/_core/_eventloop.py", "run")
THREAD_RUN = Target("anyio", "/c/anyio/from_thread.py", "run")
DEFINE = Target("attr", "/c/attr/_next_gen.py", "define")
FUNCTIONS = {"style": [STYLE], "Context.invoke": [INVOKE], "run": [RUN, THREAD_RUN]}


def test_a_name_resolves_within_its_package_only() -> None:
    assert resolve("click.style", {"click"}, FUNCTIONS) == (STYLE,)
    assert resolve("Context.invoke", {"click"}, FUNCTIONS) == (INVOKE,)
    assert resolve("invoke", {"click"}, FUNCTIONS) == (INVOKE,)  # a bare method name its one class defines
    assert resolve("anyio.from_thread.run", {"anyio"}, FUNCTIONS) == (THREAD_RUN,)
    assert resolve("run", {"anyio"}, FUNCTIONS) == (RUN, THREAD_RUN)
    assert resolve("subprocess.run", {"anyio"}, FUNCTIONS) == ()  # another package's function of that name
    assert resolve("click.secho", {"click"}, FUNCTIONS) == ()
    assert resolve("attrs.define", {"attr", "attrs"}, {"define": [DEFINE, DEFINE]}) == (DEFINE,)  # overloads: one


def test_a_sentence_becomes_a_question_that_does_not_name_its_answer() -> None:
    question = masked(
        "Use :func:`~click.style` to colour text, as ``echo`` does for :class:`Context`.", "click", FUNCTIONS
    )
    assert question == ("Use this function to colour text, as echo does for Context.", (STYLE,))
    assert masked("Call the :meth:`Context.invoke` method to run it.", {"click"}, FUNCTIONS) == (
        "Call this method to run it.",
        (INVOKE,),
    )
    assert masked("Both :func:`style` and :meth:`Context.invoke` do it.", {"click"}, FUNCTIONS) is None
    assert masked("Like :func:`subprocess.run` it waits.", {"anyio"}, FUNCTIONS) is None
    assert masked("No role at all here.", {"click"}, FUNCTIONS) is None


def test_prose_is_read_without_code_titles_or_directives() -> None:
    rst = (
        "Colours\n=======\n\n"
        "Click can style text. It also\nstrips styles when piped.\n\n"
        "For example::\n\n    click.echo(click.style('x', fg='red'))\n\n"
        ".. versionadded:: 2.0\n    Styles.\n\n"
        "-   A first item.\n-   A second item.\n"
    )
    assert list(paragraphs(rst)) == [
        "Click can style text. It also strips styles when piped.",
        "For example:",
        "A first item.",
        "A second item.",
    ]
    assert sentences("Click can style text. It also strips styles when piped.") == [
        "Click can style text.",
        "It also strips styles when piped.",
    ]
    markdown = "# Title\n\nUse {func}`style` and [the docs](https://x).\n\n```python\nstyle('x')\n```\nAfter.\n"
    assert as_rst(markdown) == "\n\nUse :func:`style` and the docs.\n\nAfter.\n"


def test_a_copy_of_the_docstring_asks_nothing_beyond_it() -> None:
    docstring = "Styles a text with ANSI styles and returns the new string."
    assert copied("This function styles a text with ANSI styles and returns it.", docstring)
    assert not copied("Use this function to print coloured text in a terminal.", docstring)


def test_questions_come_from_the_documentation_files_in_order(tmp_path: Path) -> None:
    docs = tmp_path / "click-8" / "docs"
    docs.mkdir(parents=True)
    (docs / "utils.rst").write_text(
        "Printing\n--------\n\n"
        "To print coloured text to a terminal, use :func:`style` with :func:`echo`.\n\n"
        "Styles a text with ANSI styles, as :func:`style` does and returns the new string.\n\n"
        "Callbacks run through :meth:`Context.invoke`, which passes the context on.\n"
    )
    (docs / "changes.rst").write_text("Fixed how :meth:`Context.invoke` passes the context along.\n")
    functions = FUNCTIONS | {"echo": [Target("click", "/c/click/utils.py", "echo")]}
    docstrings = {STYLE: "Styles a text with ANSI styles and returns the new string.", INVOKE: ""}
    questions = package_questions(tmp_path / "click-8", "click", "click", functions, docstrings)
    # the first names two functions, the second copies style's docstring, the changelog is no documentation
    assert [(q.text, q.answers, q.source) for q in questions] == [
        ("Callbacks run through this method, which passes the context on.", (INVOKE,), "docs/utils.rst")
    ]


def test_packages_option_names_what_is_wrong_in_one_line() -> None:
    assert parse_packages("pluggy:pluggy, pytest:_pytest") == {"pluggy": "pluggy", "pytest": "_pytest"}
    for text, says in (
        ("pluggy", "is not DIST:PACKAGE"),
        ("pluggy:", "is not DIST:PACKAGE"),
        ("no-such-distribution-here:x", "is not installed"),
        ("pluggy:no_such_package_here", "no package folder"),
    ):
        with pytest.raises(SystemExit, match=says) as exc:
            parse_packages(text)
        assert "\n" not in str(exc.value)
