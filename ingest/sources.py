"""Finding source units in the paths a user gives: code files and PythonAlpaca-style JSONL rows."""

from __future__ import annotations

import io
import json
import os
import re
import tokenize
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingest.languages import EXTENSIONS
from ingest.tutorials import is_tutorial, tutorial_to_json
from pkg.errors import CorpusError

#: Code files by extension: Python, and the languages of ingest.languages.
CODE_SUFFIXES = {".py": "python", **EXTENSIONS}
ROW_SUFFIXES = {".jsonl"}
JSON_SUFFIXES = {".json"}
ROW_FIELDS = ("instruction", "input", "output")
SKIPPED_DIRS = {".git", "__pycache__", "node_modules", "site-packages", ".venv", "venv"}
MAX_FILE_BYTES = 4 * 1024 * 1024
_FENCE = re.compile(r"```[ \t]*(python3?|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class SourceUnit:
    """One piece of code to parse: a whole file, or one fence of one JSONL row."""

    source: str  # absolute path of the file
    lang: str
    text: str  # with '\n' newlines
    row: int | None = None  # 1-based JSONL line
    fence: int | None = None  # 0-based fence index within the row


@dataclass(frozen=True)
class CorpusItem:
    """One corpus item as a user sees it: a whole file, or one JSONL row, with its code units and,
    for JSON, JSONL rows and tutorials, its JSON document."""

    source: str
    row: int | None
    text: str  # the file's text, or the row's fields joined by blank lines
    units: tuple[SourceUnit, ...]
    document: Any = None


@dataclass(frozen=True)
class Skipped:
    """A file or row left out, and why."""

    path: str
    reason: str


def _is_venv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file()


def discover(paths: Sequence[Path]) -> tuple[list[Path], list[Skipped]]:
    """Expand the given paths into the files to read; directories are walked recursively.

    Hidden entries, VCS folders, virtualenvs, caches and unsupported files found inside directories
    are skipped; symlinks are followed but each real directory is visited once, so loops end.
    """
    files: list[Path] = []
    skipped: list[Skipped] = []
    seen_files: set[Path] = set()
    seen_dirs: set[Path] = set()

    def add_file(path: Path) -> None:
        real = path.resolve()
        if real in seen_files:
            return
        seen_files.add(real)
        if path.suffix in CODE_SUFFIXES or path.suffix in ROW_SUFFIXES or path.suffix in JSON_SUFFIXES or is_tutorial(path):
            files.append(real)
        else:
            skipped.append(Skipped(str(path), f"unsupported file type {path.suffix or '(none)'}"))

    def walk(directory: Path) -> None:
        real = directory.resolve()
        if real in seen_dirs:
            return
        seen_dirs.add(real)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(str(directory), f"unreadable directory: {exc.strerror}"))
            return
        for entry in entries:
            path = Path(entry.path)
            if entry.name.startswith(".") or entry.name in SKIPPED_DIRS:
                continue
            if entry.is_dir():
                if not _is_venv(path):
                    walk(path)
            elif entry.is_file():
                add_file(path)

    for given in paths:
        if not given.exists():
            raise CorpusError(f"no such file or directory: {given}")
        if given.is_dir():
            walk(given)
        else:
            add_file(given)
    return files, skipped


def _decode(path: Path, data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise ValueError("binary file")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise ValueError(f"not text in a known encoding ({exc.__class__.__name__})") from exc
    return text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _fences(text: str) -> Iterator[str]:
    for match in _FENCE.finditer(text.replace("\r\n", "\n")):
        yield match.group(2)


def _json_value(text: str, where_line: bool) -> Any:
    """Parse JSON that can be stored: a ValueError names the problem when the text is not JSON, or
    holds what Python refuses to read (a number past its digit limit, nesting past its recursion
    limit) or no store can keep as UTF-8 (a lone surrogate from a `\\ud8xx` escape)."""
    try:
        value = json.loads(text)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg}" + (f" at line {exc.lineno}" if where_line else "")) from None
    except UnicodeEncodeError:
        raise ValueError("unusable JSON: a \\u escape encodes half of a surrogate pair") from None
    except RecursionError:
        raise ValueError("unusable JSON: nested too deeply") from None
    except ValueError as exc:
        raise ValueError(f"unusable JSON: {str(exc).split(';')[0]}") from None
    return value


#: Turns a tutorial file and its text into its JSON document (the deterministic converters by default).
Structurer = Callable[[Path, str], dict[str, Any]]


def read_items(path: Path, structurer: Structurer | None = None) -> tuple[list[CorpusItem], list[Skipped]]:
    """Read one discovered file into corpus items; problems become Skipped entries. Tutorials go
    through `structurer` when one is given."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return [], [Skipped(str(path), f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")]
        text = _decode(path, path.read_bytes())
    except OSError as exc:
        return [], [Skipped(str(path), f"unreadable: {exc.strerror}")]
    except ValueError as exc:
        return [], [Skipped(str(path), str(exc))]
    if path.suffix in CODE_SUFFIXES:
        unit = SourceUnit(str(path), CODE_SUFFIXES[path.suffix], text)
        return [CorpusItem(str(path), None, text, (unit,))], []
    if path.suffix in JSON_SUFFIXES:
        try:
            return [CorpusItem(str(path), None, text, (), _json_value(text, where_line=True))], []
        except ValueError as exc:
            return [], [Skipped(str(path), str(exc))]
    if path.suffix not in ROW_SUFFIXES:
        try:
            document = structurer(path, text) if structurer else tutorial_to_json(path)
            return [CorpusItem(str(path), None, text, (), document)], []
        except CorpusError as exc:
            return [], [Skipped(str(path), str(exc))]
    items: list[CorpusItem] = []
    skipped: list[Skipped] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = _json_value(line, where_line=False)
        except ValueError as exc:
            skipped.append(Skipped(f"{path}#row{number}", str(exc)))
            continue
        if not isinstance(row, dict):
            skipped.append(Skipped(f"{path}#row{number}", "row is not a JSON object"))
            continue
        fields = "\n\n".join(row[f].strip() for f in ROW_FIELDS if isinstance(row.get(f), str) and row[f].strip())
        units = tuple(
            SourceUnit(str(path), "python", code, row=number, fence=index) for index, code in enumerate(_fences(fields))
        )
        items.append(CorpusItem(str(path), number, fields, units, row))
    return items, skipped
