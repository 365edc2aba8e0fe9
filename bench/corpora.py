"""Real corpora for benchmarks, chosen deterministically from this machine's standard library."""

from __future__ import annotations

import ast
import sysconfig
from pathlib import Path

STDLIB = Path(sysconfig.get_paths()["stdlib"])
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
    files: list[Path] = []
    total = 0
    for path in candidates:
        count = _functions(path)
        if count <= 0:
            continue
        files.append(path)
        total += count
        if total >= min_functions:
            break
    return files, total
