"""Function search finds the obvious function on real packages with the default settings (#35): the
demo's question about shell command lines in the demo's standard-library slice, and a question about
coloured output in click (8.1.7, fetched from PyPI by the venv's pip). The texts a function is
embedded by are checked on real code without a model."""

from __future__ import annotations

import inspect
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pkg.code.search_text import embedded_text, function_search_text, name_words, owner_words
from pkg.embedders import CachedEmbedder
from pkg.graph import Label
from pkg.knowledge_base import KnowledgeBase
from tests.conftest import STDLIB

#: The Makefile's DEMO_CORPUS without its README (a tutorial holds no functions).
DEMO_STDLIB = [
    STDLIB / name
    for name in (
        "json",
        "textwrap.py",
        "heapq.py",
        "bisect.py",
        "statistics.py",
        "difflib.py",
        "shlex.py",
        "fractions.py",
    )
]
CLICK = "click==8.1.7"
#: The demo's target holds since hybrid search lifts a name the query leads with twice over (shlex `join`, whose
#: code splits a command, leads both rankings: `split` is second in func mode, and third in hybrid when only
#: named functions are lifted, the question naming `quote` too). Click's is not met yet by all-MiniLM-L6-v2
#: (the ranks measured with the docstring first; at 50f4a3d in brackets): `style` is 11th in func mode
#: (51st), 11th in hybrid (34th), `secho` 65th (37th): no ranking holds it near the top. Strict: the test
#: fails once a lever meets the target, to drop the mark.
NOT_MET = pytest.mark.xfail(
    strict=True, raises=AssertionError, reason="#35's ranking target is not met by the default embedder yet"
)


def test_a_function_is_embedded_by_its_name_in_words_and_docstring_before_its_code() -> None:
    text = function_search_text(inspect.getsource(shlex.split), "python")
    lines = text.split("\n")
    assert lines[0] == "split"
    assert lines[1] == shlex.split.__doc__.strip()
    assert lines[2].startswith("def split(")
    assert '"""' not in text and "lex = shlex(s, posix=posix)" in text


def test_a_method_is_embedded_with_its_class_in_words_after_its_name() -> None:
    assert owner_words("ExceptionInfo.type") == "exception info"
    assert owner_words("Outer.HTTPInner.get") == "outer http inner"
    assert owner_words("split") == owner_words("outer.<locals>.inner") == owner_words("A.<locals>.f") == ""
    method = textwrap.dedent(inspect.getsource(shlex.shlex.get_token))
    lines = embedded_text(Label.IMPL, method, "python", "shlex.get_token").split("\n")
    assert lines[:2] == ["get token shlex", shlex.shlex.get_token.__doc__.strip()]
    assert embedded_text(Label.IMPL, method, "python", "get_token").startswith("get token\n")
    assert embedded_text(Label.BLOCK, method, "python", "shlex.get_token") == method


def test_code_without_a_docstring_or_in_another_language_keeps_its_text() -> None:
    code = "def parseJSONFile2(path):\n    with open(path) as f:\n        return f.read()\n"
    assert function_search_text(code, "python") == f"parse json file 2\n{code}"
    assert function_search_text("fn main() {}", "rust") == "fn main() {}"
    assert function_search_text("def broken(:\n", "python") == "def broken(:\n"
    assert name_words("HTTPServer_start") == "http server start"


@pytest.fixture(scope="module")
def click_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """click's package folder, installed from PyPI into a folder of its own (pip's cache serves reruns)."""
    target = tmp_path_factory.mktemp("click")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), CLICK]
    subprocess.run(pip, check=True, capture_output=True)
    return target / "click"


def first_names(db: Path, sources: list[Path], embedder: CachedEmbedder, question: str) -> list[str]:
    """The functions the default query (hybrid over functions) of a fresh build of the sources ranks first
    (k's default)."""
    with KnowledgeBase(db, "embedded", embedder) as kb:
        kb.build(sources, parts=("functions",), prepare_pruning=False)
        return [r.name for r in kb.query(question).results]


def test_the_demo_question_finds_shlex_split_first(tmp_path: Path, module_embedder: CachedEmbedder) -> None:
    names = first_names(
        tmp_path / "db", DEMO_STDLIB, module_embedder, "split a shell command line into arguments, honouring quotes"
    )
    assert names[0] == "split", names


@NOT_MET
def test_a_question_about_coloured_output_finds_click_style_or_secho(
    tmp_path: Path, module_embedder: CachedEmbedder, click_source: Path
) -> None:
    names = first_names(tmp_path / "db", [click_source], module_embedder, "print colored text to the terminal")
    assert {"style", "secho"} & set(names[:3]), names
