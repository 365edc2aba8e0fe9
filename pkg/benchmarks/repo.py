"""Repository-level completion tasks: a function of a real package loses its body; the model sees the
file's imports and its text up to the function's signature and docstring, plus what retrieval finds in
the rest of the package, and writes the body back.

The repositories are Python packages installed beside PKG, chosen (REPOSITORIES) for moderate size,
pure-Python code and little chance that a 2024 model memorised them. Each task is tagged by what its
reference body needs (`cross-file` or `in-file`, cross_file.py) and sampled deterministically, the same
number per repository and stratum.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import textwrap
import tokenize
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pkg.benchmarks.cross_file import Needed, PackageModules, needed_symbols
from pkg.code.syntax_tree import first_line
from pkg.errors import BenchmarkError
from retrieval.invented import identifiers, python_tokens, unknown
from retrieval.tokenize import estimate_tokens

REPO = "repo"


@dataclass(frozen=True)
class Repository:
    """An installed package to draw tasks from: its import name, its distribution, and why it is in."""

    package: str
    distribution: str
    why: str


#: Ten packages of 2.5k–28k lines. None is among the handful of packages every code model has seen
#: thousands of copies of (requests, numpy, click, jinja2, …); four were first released in 2024, at
#: or after the benchmark model's training cut-off (mcp in November 2024).
REPOSITORIES = (
    Repository("mcp", "mcp", "Model Context Protocol SDK, first released November 2024"),
    Repository("bm25s", "bm25s", "BM25 in NumPy/SciPy, first released July 2024"),
    Repository("langchain_text_splitters", "langchain-text-splitters", "text splitters, split out in 2024"),
    Repository("importlinter", "import-linter", "import contracts; a small user base"),
    Repository("pathspec", "pathspec", "gitignore-style pattern matching"),
    Repository("diskcache", "diskcache", "a disk-backed cache on SQLite"),
    Repository("markdown_it", "markdown-it-py", "a Markdown parser ported from JavaScript"),
    Repository("pyrsistent", "pyrsistent", "persistent data structures"),
    Repository("fire", "fire", "command lines from Python objects"),
    Repository("tenacity", "tenacity", "retrying with policies"),
)
CROSS_FILE = "cross-file"
IN_FILE = "in-file"
#: Tasks per repository and stratum: the ten packages have 8-101 cross-file candidates each (bm25s 8,
#: langchain-text-splitters 13, tenacity 14, pathspec 15, fire 17, the rest 20 or more), so up to 18 of
#: them make 157 cross-file tasks; 10 in-file tasks each make 100.
PER_STRATUM = {CROSS_FILE: 18, IN_FILE: 10}
#: The pilot that picks layouts and budgets: the first 3 picks of each stratum and repository (60 tasks,
#: a subset of the full run: too few packages have cross-file candidates to spare for a disjoint one).
PILOT_PER_STRATUM = {CROSS_FILE: 3, IN_FILE: 3}
#: A body fits the benchmark's 128 new tokens: at most 12 code lines and 96 word/punctuation tokens.
MAX_BODY_LINES = 12
MIN_BODY_LINES = 2
MAX_BODY_WORDS = 96
#: The in-file context is cut to its last lines within this many word/punctuation tokens (the file's
#: import block and the function's header always kept): about 900 model tokens, which keeps the prompt
#: near 1.5k tokens with 512 of context.
PREFIX_WORDS = 768
#: The line between the import block and the file's last lines when lines between them are left out.
ELISION = "# ...\n"


@dataclass(frozen=True)
class RepoTask:
    """One function to complete.

    `prefix` is the file up to and including the function's signature and docstring (cut to its last
    PREFIX_WORDS tokens at a line boundary); `body` the reference body after the docstring, dedented;
    `indent` the body's indentation in the file; `path` the file as installed (what the retrieval
    corpus names it by), `relpath` that file inside the package; `needs` the symbols of other files of
    the package the reference body uses.
    """

    task_id: str
    repository: str
    version: str
    path: str
    relpath: str
    name: str
    line: int
    prefix: str
    body: str
    indent: str
    body_line: int = 0  # where the body starts in the file, from 1
    needs: tuple[Needed, ...] = ()

    @property
    def stratum(self) -> str:
        return CROSS_FILE if self.needs else IN_FILE

    @property
    def query(self) -> str:
        """What retrieval is asked: the last ten lines of the in-file context (CrossCodeEval's query)."""
        return "\n".join(self.prefix.splitlines()[-10:])

    def file_before_body(self) -> str:
        """The whole file up to the body: the code at hand for a tool that reads the editor's file."""
        return "".join(Path(self.path).read_text(encoding="utf-8").splitlines(keepends=True)[: self.body_line - 1])

    def file_without_body(self) -> str:
        """The whole file but the reference body: the function being written is left empty."""
        lines = Path(self.path).read_text(encoding="utf-8").splitlines(keepends=True)
        start = self.body_line - 1
        return "".join(lines[:start] + lines[start + len(self.body.splitlines()) :])

    @property
    def function_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


def package_root(package: str) -> Path:
    """The folder of an installed package; a missing package is an error that says how to get it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise BenchmarkError(f"package {package!r} is not installed: pip install it (or `make .venv/bin/pkg`)")
    return Path(next(iter(spec.submodule_search_locations)))


def is_test_file(relpath: str) -> bool:
    """Tests are not the package's code: `test_*.py`, `*_test.py`, `conftest.py`, anything under a tests folder."""
    *folders, name = relpath.split("/")
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or bool({"tests", "test", "testing"} & set(folders))
    )


def source_files(root: Path) -> list[Path]:
    """The package's Python files, tests and vendored copies left out (they are not the package's code)."""
    return sorted(
        p
        for p in root.rglob("*.py")
        if not is_test_file(p.relative_to(root).as_posix())
        and not {"_vendor", "vendor"} & set(p.relative_to(root).parts[:-1])
    )


def load_repo_tasks(
    repositories: Sequence[Repository] = REPOSITORIES,
    per_stratum: Mapping[str, int] = PER_STRATUM,
) -> list[RepoTask]:
    """Up to `per_stratum[s]` tasks of each stratum s from each repository, chosen by a hash of their ids
    (so adding or removing other candidates never reshuffles a repository's picks), in repository order."""
    tasks: list[RepoTask] = []
    for repository in repositories:
        for stratum, found in repository_candidates(repository).items():
            tasks += found[: per_stratum.get(stratum, 0)]
    order = {r.package: i for i, r in enumerate(repositories)}
    return sorted(tasks, key=lambda t: (order[t.repository], t.relpath, t.line))


def repository_candidates(repository: Repository) -> dict[str, list[RepoTask]]:
    """Every candidate task of a repository, by stratum, each list in the order of the hash of task ids."""
    root = package_root(repository.package)
    version = importlib.metadata.version(repository.distribution)
    modules = PackageModules(repository.package, root)
    found = [task for path in source_files(root) for task in _file_tasks(modules, version, path)]
    found.sort(key=lambda t: hashlib.sha256(t.task_id.encode()).hexdigest())
    return {stratum: [t for t in found if t.stratum == stratum] for stratum in (CROSS_FILE, IN_FILE)}


def _file_tasks(modules: PackageModules, version: str, path: Path) -> Iterator[RepoTask]:
    tree = modules.tree(path)
    if tree is None:
        return
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    imports = import_block(tree)
    for qualname, function, enclosing in _functions(tree):
        task = _task(modules, version, path, (qualname, function, enclosing), lines, imports)
        if task is not None:
            yield task


_Function = tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None]


def _functions(tree: ast.Module) -> Iterator[_Function]:
    """Module-level functions and methods (of classes at any depth) with their class; never functions
    inside functions."""

    def visit(node: ast.AST, scope: str, cls: ast.ClassDef | None) -> Iterator[_Function]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield f"{scope}{child.name}", child, cls
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, f"{scope}{child.name}.", child)

    yield from visit(tree, "", None)


def import_block(tree: ast.Module) -> tuple[int, int] | None:
    """The lines (from 0, end exclusive) from the file's first top-level import to its last one before
    the first function or class; guards holding imports (`try:`, `if TYPE_CHECKING:`) count as imports."""
    spans: list[tuple[int, int]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            break
        if _imports(node):
            spans.append((first_line(node) - 1, node.end_lineno or node.lineno))
    return (spans[0][0], spans[-1][1]) if spans else None


def _imports(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return True
    return isinstance(node, ast.If | ast.Try) and any(isinstance(n, ast.Import | ast.ImportFrom) for n in node.body)


def _task(
    modules: PackageModules,
    version: str,
    path: Path,
    found: _Function,
    lines: Sequence[str],
    imports: tuple[int, int] | None,
) -> RepoTask | None:
    qualname, function, enclosing = found
    package, relpath = modules.package, path.relative_to(modules.root).as_posix()
    if any(_decorator_name(d) in {"abstractmethod", "overload"} for d in function.decorator_list):
        return None
    statements = function.body
    if ast.get_docstring(function, clean=False) is not None:
        statements = statements[1:]
    if not statements or statements[0].lineno == function.lineno:
        return None  # an empty body, or one on the `def` line
    body_start = first_line(statements[0]) - 1
    body_lines = lines[body_start : function.end_lineno]
    body = textwrap.dedent("".join(body_lines))
    code = code_lines(body)
    if not MIN_BODY_LINES <= len(code) <= MAX_BODY_LINES or _is_stub(statements):
        return None
    if estimate_tokens(body) > MAX_BODY_WORDS:
        return None
    prefix = _cut_prefix(lines[:body_start], first_line(function) - 1, imports)
    if "\n".join(code) in "\n".join(code_lines(prefix)):
        return None  # the file already shows the body: nothing for retrieval to add
    indent = body_lines[0][: len(body_lines[0]) - len(body_lines[0].lstrip())]
    return RepoTask(
        task_id=f"{package}/{relpath}:{qualname}",
        repository=package,
        version=version,
        path=str(path),
        relpath=relpath,
        name=qualname,
        line=function.lineno,
        prefix=prefix,
        body=body,
        indent=indent,
        body_line=body_start + 1,
        needs=needed_symbols(modules, path, function, enclosing, statements),
    )


def _decorator_name(decorator: ast.expr) -> str:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def _is_stub(statements: Sequence[ast.stmt]) -> bool:
    """Bodies that say nothing: `pass`, `...`, or raising NotImplementedError."""
    if len(statements) != 1:
        return False
    only = statements[0]
    if isinstance(only, ast.Pass) or (isinstance(only, ast.Expr) and isinstance(only.value, ast.Constant)):
        return True
    return isinstance(only, ast.Raise) and "NotImplementedError" in ast.unparse(only)


def _cut_prefix(lines: Sequence[str], header_start: int, imports: tuple[int, int] | None) -> str:
    """The file before the body within PREFIX_WORDS tokens: the import block and the header whole, then
    ELISION and as many of the lines before the header as fit (no ELISION when they reach the imports)."""
    start, end = imports if imports and imports[1] <= header_start else (0, 0)
    budget = PREFIX_WORDS - estimate_tokens("".join(lines[header_start:])) - estimate_tokens("".join(lines[start:end]))
    row = _first_fitting(lines, header_start, end, budget)
    if row > end:
        return ("".join(lines[start:end]) + ELISION if end > start else "") + "".join(lines[row:])
    budget -= estimate_tokens("".join(lines[end:header_start]))
    return "".join(lines[_first_fitting(lines, start, 0, budget) :])


def _first_fitting(lines: Sequence[str], stop: int, floor: int, budget: int) -> int:
    """The first of the lines from which those up to `stop` (exclusive) fit `budget` tokens, at least `floor`."""
    row = stop
    while row > floor and (budget := budget - estimate_tokens(lines[row - 1])) >= 0:
        row -= 1
    return row


def code_lines(code: str) -> list[str]:
    """The lines that carry code, stripped, comments cut (blank and comment-only lines dropped)."""
    lines = code.splitlines()
    for row, column in reversed(_comments(code)):
        lines[row - 1] = lines[row - 1][:column]
    stripped = (line.strip() for line in lines)
    return [line for line in stripped if line and not line.startswith("#")]


def _comments(code: str) -> list[tuple[int, int]]:
    """Where each comment starts (line from 1, column); those before a tokenizing error on broken code."""
    return [token.start for token in python_tokens(code) if token.type == tokenize.COMMENT]


def unknown_names(task: RepoTask, body: str) -> list[str]:
    """The identifiers of a written body that nothing around it mentions: not the package's other files, not
    the task's file without the body being written, not the builtins, and not the body's own bindings. A
    small model that names such a thing has invented it (`self._check_file` in pathspec, which has only
    `check_file`). The body being written is never read: its names would hide what the model invented."""
    return unknown(body, _file_names(task) | _other_files(task))


def _other_files(task: RepoTask) -> frozenset[str]:
    """Every identifier the package's files other than the task's mention."""
    files = _package_files(task.repository)
    return frozenset().union(*(_file_identifiers(path) for path in files if str(path) != task.path))


@cache
def _package_files(package: str) -> tuple[Path, ...]:
    return tuple(source_files(package_root(package)))


@cache
def _file_identifiers(path: Path) -> frozenset[str]:
    return frozenset(identifiers(path.read_text(encoding="utf-8", errors="replace")))


def _file_names(task: RepoTask) -> set[str]:
    """The identifiers of the task's file around the body being written: the rest of the file is known."""
    return set(identifiers(task.file_without_body()))
