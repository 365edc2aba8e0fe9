"""Finding source units in the paths a user gives: code files and PythonAlpaca-style JSONL rows."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import stat
import tokenize
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingest.tutorials import is_tutorial, tutorial_to_json
from pkg.code.languages import EXTENSIONS
from pkg.config import BM25_DIR, BM25_META, DB_FILE, DB_MARKER, MAX_FILE_BYTES
from pkg.errors import CorpusError

#: Code files by extension: Python, and the languages of pkg.code.languages.
CODE_SUFFIXES = {".py": "python", **EXTENSIONS}
ROW_SUFFIXES = {".jsonl"}
JSON_SUFFIXES = {".json"}
ROW_FIELDS = ("instruction", "input", "output")
VCS_DIRS = {".git", ".hg", ".svn"}
#: Directories skipped by name, with the reason a build lists (environments are recognised by content).
SKIPPED_DIR_NAMES = {
    "__pycache__": "bytecode cache",
    "node_modules": "installed npm packages",
    "site-packages": "installed Python packages",
}
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


def database_reason(directory: Path) -> str | None:
    """Why a directory is PKG data a build must never read (the issue: a database inside the folder
    built indexed its own BM25 files), or None. Recognised by the marker builds write, and in
    directories older than the marker by what the stores write there."""
    for name in (DB_MARKER, DB_FILE):
        if (directory / name).is_file():
            return f"PKG database (holds {name})"
    if (directory / BM25_META).is_file():
        return f"PKG BM25 index (holds {BM25_META})"
    if (directory / BM25_DIR).is_dir() and any((directory / BM25_DIR).glob(f"*/{BM25_META}")):
        return f"PKG database (holds BM25 indexes in {BM25_DIR}/)"
    return None


def _walk_skip_reason(path: Path, is_dir: bool) -> str | None:
    """Why an entry met in a walk is left out, or None to read it. Environments and databases are
    recognised by what they hold, so that a package merely named `venv` (like the standard library's) is read."""
    if is_dir and path.name in VCS_DIRS:
        return "version-control data"
    if is_dir and (reason := database_reason(path)):
        return reason
    if is_dir and (path / "pyvenv.cfg").is_file():
        return "virtual environment (holds pyvenv.cfg)"
    if is_dir and (path / "conda-meta").is_dir():
        return "conda environment (holds conda-meta/)"
    if is_dir and path.name in SKIPPED_DIR_NAMES:
        return SKIPPED_DIR_NAMES[path.name]
    return "hidden" if path.name.startswith(".") else None


def _supported(path: Path) -> bool:
    return (
        path.suffix in CODE_SUFFIXES or path.suffix in ROW_SUFFIXES or path.suffix in JSON_SUFFIXES or is_tutorial(path)
    )


def _stat(path: Path) -> os.stat_result | str:
    """The status of what the path leads to (symlinks followed), or why it cannot be had."""
    try:
        return path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink loop"
        if exc.errno == errno.ENOENT:
            return "dangling symlink" if path.is_symlink() else "no such file or directory"
        return f"unreadable: {exc.strerror}"


def _given_database(path: Path, own_db: Path | None) -> str | None:
    """Why a given path is, or lies inside, a database (`own_db`, resolved, or any other), or None."""
    real = path.resolve()
    for folder in (real, *real.parents):
        if reason := "PKG database (this build's --db)" if folder == own_db else database_reason(folder):
            return reason if folder == real else f"inside {folder}, a {reason}"
    return None


def discover(
    paths: Sequence[Path], max_file_bytes: int = MAX_FILE_BYTES, own_db: Path | None = None
) -> tuple[list[Path], list[Skipped]]:
    """Expand the given paths into the files to read; directories are walked recursively.

    Inside directories, hidden entries, version-control data, virtual and conda environments, caches,
    installed packages and unsupported files are skipped; symlinks are followed, but broken ones
    (loops, dangling) are skipped and each real file and directory is read once, so loops end.
    PKG databases (`own_db`, the build's --db, and any directory `database_reason` recognises) are
    skipped wherever they are met, and so is a given path inside one. Files larger than
    `max_file_bytes` are skipped. Every skip is returned with its reason.
    Raises CorpusError if a given path cannot be read, or if every given path is a database."""
    files: list[Path] = []
    skipped: list[Skipped] = []
    seen: set[Path] = set()
    own = own_db.resolve() if own_db is not None else None

    def first_visit(path: Path, what: str) -> bool:
        real = path.resolve()
        if real == own:
            skipped.append(Skipped(str(path), "PKG database (this build's --db)"))
            return False
        if real in seen:
            skipped.append(Skipped(str(path), f"already read: same {what} as {real}"))
            return False
        seen.add(real)
        return True

    def add_file(path: Path, size: int) -> None:
        if not first_visit(path, "file"):
            return
        if not _supported(path):
            skipped.append(Skipped(str(path), f"unsupported file type {path.suffix or '(none)'}"))
        elif size > max_file_bytes:
            skipped.append(
                Skipped(str(path), f"{size:,} bytes, over the size cap of {max_file_bytes:,} (--max-file-size)")
            )
        else:
            files.append(path.resolve())

    def visit(path: Path, status: os.stat_result) -> None:
        if stat.S_ISDIR(status.st_mode):
            if first_visit(path, "directory"):
                walk(path)
        elif stat.S_ISREG(status.st_mode):
            add_file(path, status.st_size)
        else:
            skipped.append(Skipped(str(path), "not a regular file"))

    def walk(directory: Path) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(str(directory), f"unreadable directory: {exc.strerror}"))
            return
        for entry in entries:
            path = Path(entry.path)
            status = _stat(path)
            if isinstance(status, str):
                skipped.append(Skipped(str(path), status))
                continue
            if reason := _walk_skip_reason(path, stat.S_ISDIR(status.st_mode)):
                skipped.append(Skipped(str(path), reason))
            else:
                visit(path, status)

    databases = []
    for given in paths:
        status = _stat(given)
        if isinstance(status, str):
            raise CorpusError(f"{status}: {given}")
        if reason := _given_database(given, own):
            skipped.append(Skipped(str(given), reason))
            databases.append(f"{given}: {reason}")
        else:
            visit(given, status)
    if paths and len(databases) == len(paths):
        raise CorpusError("; ".join(databases) + "; a build never reads a PKG database")
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
