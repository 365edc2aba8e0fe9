"""Real corpora for benchmarks, chosen deterministically from this machine's standard library or
from the packages installed in the project's virtual environment."""

from __future__ import annotations

import ast
import sysconfig
from collections.abc import Callable, Iterable
from pathlib import Path

from ingest.extract import extract
from ingest.parse import parse_corpus
from pkg.config import MAX_FILE_BYTES
from pkg.graph import Label

STDLIB = Path(sysconfig.get_paths()["stdlib"])
#: The site-packages of the interpreter running the bench (the project's venv under .venv/bin/python).
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])
#: Test folders and modules are left out of the site-packages corpus: they are mostly assertion
#: scripts without docstrings, the kind of code nobody retrieves to write a function, and sympy's
#: and numpy's alone would make up a large share of it.
_TEST_DIRS = {"test", "tests"}
_NEVER = {"site-packages", "__pycache__", "lib2to3", "turtledemo", "ensurepip"}


def _is_test(path: Path) -> bool:
    return any(part in {"test", "tests", "idle_test"} for part in path.relative_to(STDLIB).parts)


def _functions(path: Path) -> int:
    """Functions ast finds in a file, or -1 when ast cannot read it."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return -1
    return sum(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(tree))


def stdlib_corpus(min_functions: int) -> tuple[list[Path], int]:
    """Library modules first, then test modules, in path order, until `min_functions` is reached."""
    candidates = sorted(
        (p for p in STDLIB.rglob("*.py") if not _NEVER & set(p.relative_to(STDLIB).parts)),
        key=lambda p: (_is_test(p), str(p)),
    )
    return _until(candidates, _functions, min_functions)


def _until(candidates: Iterable[Path], count: Callable[[Path], int], min_functions: int) -> tuple[list[Path], int]:
    """The candidates in order, those where `count` finds no function left out, until they hold
    `min_functions`; with their total."""
    files: list[Path] = []
    total = 0
    for path in candidates:
        found = count(path)
        if found <= 0:
            continue
        files.append(path)
        total += found
        if total >= min_functions:
            break
    return files, total


def _is_site_test(path: Path) -> bool:
    name = path.name
    return (
        bool(_TEST_DIRS & set(path.parent.parts))
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


def project_functions(path: Path) -> int:
    """Functions the project's own parser (ingest.extract) finds in a Python file; 0 when unreadable."""
    try:
        return len(extract(path.read_text(encoding="utf-8"), "python").functions)
    except (UnicodeDecodeError, ValueError, OSError):
        return 0


def site_packages_corpus(
    min_functions: int, root: Path = SITE_PACKAGES, count: Callable[[Path], int] = project_functions
) -> tuple[list[Path], int]:
    """Python files of the installed packages, in order of their path below `root` (so by package,
    then path), test folders and modules left out, until they hold `min_functions` functions as
    `count` finds them; files over the build's size cap are left out as a build would skip them."""
    candidates = sorted(
        (p for p in root.rglob("*.py") if not {"__pycache__", "site-packages"} & set(p.relative_to(root).parts)),
        key=lambda p: p.relative_to(root).parts,
    )
    kept = (p for p in candidates if not _is_site_test(p.relative_to(root)) and p.stat().st_size <= MAX_FILE_BYTES)
    return _until(kept, count, min_functions)


def function_sources(files: Iterable[Path]) -> list[tuple[str, str]]:
    """(file path, source) of every function of the files as a build extracts them: what `pkg tune`
    mines its pairs from."""
    parsed = parse_corpus(list(files), parts=("functions",))
    return [(n.props["source"], n.embed_text) for n in parsed.nodes if n.label is Label.IMPL]
