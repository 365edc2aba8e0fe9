"""Repository-level completion tasks: a function of a real package loses its body; the model sees the
file up to the function's signature and docstring, plus what retrieval finds in the rest of the
package, and writes the body back.

The repositories are Python packages installed beside PKG, chosen (REPOSITORIES) for moderate size,
pure-Python code and little chance that a 2024 model memorised them; tasks are sampled from them
deterministically, the same number per repository.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import io
import keyword
import textwrap
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pkg.code.syntax_tree import parse_python
from pkg.errors import BenchmarkError
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
TASKS_PER_REPOSITORY = 20
#: A body fits the benchmark's 128 new tokens: at most 12 code lines and 96 word/punctuation tokens.
MAX_BODY_LINES = 12
MIN_BODY_LINES = 2
MAX_BODY_WORDS = 96
#: The in-file context is cut to its last lines within this many word/punctuation tokens (the header
#: always kept): about 900 model tokens, which keeps the prompt near 1.5k tokens with 512 of context.
PREFIX_WORDS = 768


@dataclass(frozen=True)
class RepoTask:
    """One function to complete.

    `prefix` is the file up to and including the function's signature and docstring (cut to its last
    PREFIX_WORDS tokens at a line boundary); `body` the reference body after the docstring, dedented;
    `indent` the body's indentation in the file; `path` the file as installed (what the retrieval
    corpus names it by), `relpath` that file inside the package.
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

    @property
    def query(self) -> str:
        """What retrieval is asked: the last ten lines of the in-file context (CrossCodeEval's query)."""
        return "\n".join(self.prefix.splitlines()[-10:])

    @property
    def function_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


def package_root(package: str) -> Path:
    """The folder of an installed package; a missing package is an error that says how to get it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise BenchmarkError(f"package {package!r} is not installed: pip install it (or `make .venv/bin/pkg`)")
    return Path(next(iter(spec.submodule_search_locations)))


def source_files(root: Path) -> list[Path]:
    """The package's Python files, tests and vendored copies left out (they are not the package's code)."""
    skipped = {"tests", "test", "testing", "_vendor", "vendor"}
    return sorted(
        p
        for p in root.rglob("*.py")
        if not skipped & set(p.relative_to(root).parts[:-1]) and not p.name.startswith("test_")
    )


def load_repo_tasks(
    repositories: Sequence[Repository] = REPOSITORIES, per_repository: int = TASKS_PER_REPOSITORY
) -> list[RepoTask]:
    """`per_repository` tasks from each repository, chosen by a hash of their ids (so adding or
    removing other candidates never reshuffles a repository's picks), in repository order."""
    tasks: list[RepoTask] = []
    for repository in repositories:
        root = package_root(repository.package)
        version = importlib.metadata.version(repository.distribution)
        found = [task for path in source_files(root) for task in _file_tasks(repository.package, version, root, path)]
        found.sort(key=lambda t: hashlib.sha256(t.task_id.encode()).hexdigest())
        tasks += sorted(found[:per_repository], key=lambda t: (t.relpath, t.line))
    return tasks


def _file_tasks(package: str, version: str, root: Path, path: Path) -> Iterator[RepoTask]:
    try:
        source = path.read_text(encoding="utf-8")
        tree = parse_python(source)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return
    lines = source.splitlines(keepends=True)
    relpath = path.relative_to(root).as_posix()
    for qualname, function in _functions(tree):
        task = _task(package, version, path, relpath, qualname, function, lines)
        if task is not None:
            yield task


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Module-level functions and methods (of classes at any depth); never functions inside functions."""

    def visit(node: ast.AST, scope: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield f"{scope}{child.name}", child
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, f"{scope}{child.name}.")

    yield from visit(tree, "")


def _task(
    package: str,
    version: str,
    path: Path,
    relpath: str,
    qualname: str,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    lines: Sequence[str],
) -> RepoTask | None:
    if any(_decorator_name(d) in {"abstractmethod", "overload"} for d in function.decorator_list):
        return None
    statements = function.body
    if ast.get_docstring(function, clean=False) is not None:
        statements = statements[1:]
    if not statements or statements[0].lineno == function.lineno:
        return None  # an empty body, or one on the `def` line
    body_start = _first_line(statements[0]) - 1
    body_lines = lines[body_start : function.end_lineno]
    body = textwrap.dedent("".join(body_lines))
    code = code_lines(body)
    if not MIN_BODY_LINES <= len(code) <= MAX_BODY_LINES or _is_stub(statements):
        return None
    if estimate_tokens(body) > MAX_BODY_WORDS:
        return None
    prefix = _cut_prefix(lines[:body_start], _first_line(function) - 1)
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
    )


def _first_line(statement: ast.stmt) -> int:
    """The line a statement starts on, its decorators included."""
    return min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", []))])


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


def _cut_prefix(lines: Sequence[str], header_start: int) -> str:
    """The last lines of the file before the body within PREFIX_WORDS tokens, the header whole."""
    kept = list(lines[header_start:])
    budget = PREFIX_WORDS - estimate_tokens("".join(kept))
    for line in reversed(lines[:header_start]):
        budget -= estimate_tokens(line)
        if budget < 0:
            break
        kept.insert(0, line)
    return "".join(kept)


def code_lines(code: str) -> list[str]:
    """The lines that carry code, stripped, comments cut (blank and comment-only lines dropped)."""
    lines = code.splitlines()
    for row, column in reversed(_comments(code)):
        lines[row - 1] = lines[row - 1][:column]
    stripped = (line.strip() for line in lines)
    return [line for line in stripped if line and not line.startswith("#")]


def _comments(code: str) -> list[tuple[int, int]]:
    """Where each comment starts (line from 1, column); those before a tokenizing error on broken code."""
    return [token.start for token in _tokens(code) if token.type == tokenize.COMMENT]


def identifiers(code: str) -> list[str]:
    """The identifiers of code in order (keywords left out); best effort on code that does not tokenize."""
    return [t.string for t in _tokens(code) if t.type == tokenize.NAME and not keyword.iskeyword(t.string)]


def _tokens(code: str) -> Iterator[tokenize.TokenInfo]:
    """Python's tokens of code, up to where it stops tokenizing (code cut short, or not Python)."""
    try:
        yield from tokenize.generate_tokens(io.StringIO(code).readline)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return
