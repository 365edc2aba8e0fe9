"""MBPP (Austin et al. 2021), read from its released files: the copy shipped in this package
(data/mbpp/, CC-BY-4.0, see its README.md) or another one given by path."""

from __future__ import annotations

import ast
import builtins
import json
import os
from pathlib import Path
from typing import Any

from pkg.benchmarks.base import MBPP, Problem
from pkg.code.syntax_tree import parse_python
from pkg.errors import BenchmarkError

ENV_PATH = "PKG_MBPP_PATH"
#: The released files, unchanged, shipped as package data.
PACKAGED_DIR = Path(__file__).parent / "data" / "mbpp"
#: The file of each variant, as released.
FILES = {"full": "mbpp.jsonl", "sanitized": "sanitized-mbpp.json"}
#: Task ids of each split, as the dataset's README defines them.
SPLITS = {"prompt": range(1, 11), "test": range(11, 511), "validation": range(511, 601), "train": range(601, 975)}
#: The fields each variant must have: task id, task text, code, setup, tests.
FIELDS = {
    "full": ("task_id", "text", "code", "test_setup_code", "test_list"),
    "sanitized": ("task_id", "prompt", "code", "test_imports", "test_list"),
}
MISSING_HINT = f"pass --mbpp-path or set {ENV_PATH} to a folder with mbpp.jsonl / sanitized-mbpp.json"


def load_mbpp(path: Path | None = None, split: str = "test", variant: str = "sanitized") -> list[Problem]:
    """The problems of one split ("test", "prompt", "validation", "train" or "all") of one
    variant ("full": mbpp.jsonl, "sanitized": sanitized-mbpp.json), in task id order.

    `path` is the folder holding the files or the variant's file itself; by default
    $PKG_MBPP_PATH, else the packaged copy. The prompt is the task text and the tests, as the
    MBPP paper shows them.
    """
    if variant not in FILES:
        raise BenchmarkError(f"unknown MBPP variant {variant!r}; use {' or '.join(FILES)}")
    if split != "all" and split not in SPLITS:
        raise BenchmarkError(f"unknown MBPP split {split!r}; use {', '.join(SPLITS)} or all")
    rows = _read(_data_file(path, variant), variant)
    chosen = [row for row in rows if split == "all" or row["task_id"] in SPLITS[split]]
    return [_problem(row, variant) for row in sorted(chosen, key=lambda row: row["task_id"])]


def _data_file(path: Path | None, variant: str) -> Path:
    if path is None:
        path = Path(os.environ[ENV_PATH]) if os.environ.get(ENV_PATH) else PACKAGED_DIR
    file = path / FILES[variant] if path.is_dir() else path
    if not file.is_file():
        raise BenchmarkError(f"no MBPP data at {file}: {MISSING_HINT}")
    return file


def _read(file: Path, variant: str) -> list[dict[str, Any]]:
    try:
        text = file.read_text(encoding="utf-8")
        if variant == "sanitized":
            rows = json.loads(text)
        else:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BenchmarkError(f"cannot read {file} as the {variant} MBPP ({FILES[variant]}): {exc}") from exc
    if not isinstance(rows, list) or not all(
        isinstance(row, dict) and all(field in row for field in FIELDS[variant]) for row in rows
    ):
        raise BenchmarkError(f"{file} is not the {variant} MBPP: each problem needs {', '.join(FIELDS[variant])}")
    return rows


def _problem(row: dict[str, Any], variant: str) -> Problem:
    task_id = f"MBPP/{row['task_id']}"
    text = row["text"] if variant == "full" else row["prompt"]
    setup = row["test_setup_code"] if variant == "full" else "\n".join(row["test_imports"])
    tests = "\n".join(row["test_list"])
    return Problem(
        task_id=task_id,
        benchmark=MBPP,
        prompt=f"{text} Your code should pass these tests:\n\n{tests}",
        entry_point=tested_function(row["test_list"], row["code"], task_id),
        canonical_solution=row["code"],
        examples=(),
        test=tests,
        setup=setup,
        text=text,
    )


def tested_function(tests: list[str], code: str, task_id: str = "") -> str:
    """The name of the function the first test calls: among the names it calls, the first one
    `code` defines at top level, else the first one that is not a builtin."""
    try:
        called = [
            node.func.id
            for node in ast.walk(parse_python(tests[0]))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        ]
    except (IndexError, SyntaxError) as exc:
        raise BenchmarkError(f"MBPP {task_id}: cannot read its first test") from exc
    try:
        defined = {
            node.name
            for node in parse_python(code).body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        }
    except SyntaxError:
        defined = set()
    for name in [name for name in called if name in defined] + [name for name in called if name not in vars(builtins)]:
        return name
    raise BenchmarkError(f"MBPP {task_id}: its first test calls no function of its own")
