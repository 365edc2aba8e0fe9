"""Definitions context: for code being written, the definitions of the names it uses from other files
of the corpus, as stubs (signatures, class outlines, constant lines; never bodies), ranked by where the
names are used and cut to a token budget.

Similar-looking code distracts a model that completes code; what the code at hand uses informs it
(DraCo's dataflow-found definitions beat similar-code retrieval; on our repository benchmark every
similarity arm lowered edit similarity). The graph already knows what a name refers to: the code's
names are resolved through its imports, its enclosing class's bases and the corpus's tables by the
same Linker that makes the CALLS edges (ingest.link).

Ranking follows aider's repository map: a personalized PageRank over the definitions and the CALLS and
INHERITS edges between them and their neighbours, personalized by how near the line each definition is
used (1 / (1 + distance / NEAR_SCALE) per use). The budget is filled in that order; a class stub that
does not fit is trimmed (method docstrings, then methods the code does not use, then fields) before it
is dropped. `auto` is the retrieve-or-not gate: context only when the code uses names defined neither in
its own file nor in the builtins and the graph resolves some of them (Repoformer's point: retrieving
for code that needs nothing from elsewhere only distracts).
"""

from __future__ import annotations

import ast
import builtins
import json
import keyword
import re
import threading
from collections.abc import Callable, Iterator, Sequence, Set
from dataclasses import dataclass, field, replace
from enum import StrEnum
from hashlib import sha256
from pathlib import Path
from typing import Any, TypedDict, Unpack
from weakref import WeakKeyDictionary

from ingest.link import Linker
from ingest.name_uses import NameUse, decoded, python_uses
from ingest.structure import python_structure, tree_structure
from pkg.code.languages import language_for
from pkg.code.signatures import signature
from pkg.code.syntax_tree import UNPARSABLE, first_line, parse_python
from pkg.collector import collector_paused, keep_out_of_collections
from pkg.errors import ConfigError
from pkg.graph import text_hash
from pkg.schema import ClassNode, FileNode, NameNode
from pkg.stores.base import GraphStore, code_tables
from retrieval.invented import Invented, invented, longest_parse, vocabulary
from retrieval.tokenize import estimate_tokens

#: Tokens of context by default: a quarter of a 2k-token prompt.
DEFAULT_BUDGET = 512
#: A use this many lines from the line weighs half as much as a use on it.
NEAR_SCALE = 10
#: Outside any function or class, `near` takes the uses within this many lines of the line.
NEAR_LINES = 30
#: PageRank's damping: the share of rank that follows edges rather than returning to the used names.
DAMPING = 0.85
#: A docstring's first sentence is cut to this many characters (a line), as a field's line is.
DOC_CHARS = 100
#: How many levels of detail a class stub has (see _ClassStub.render).
CLASS_LEVELS = 6
#: Lines of a module's outline at most (its public functions and classes), and at its least detail.
MODULE_LINES = 24
MODULE_LEAST_LINES = 5
#: A module's outline weighs this share of its uses when some of them name a definition of it.
OUTLINE_SHARE = 0.5
#: Methods shown in a class stub at most (public ones and __init__, in line order; used ones first).
MAX_METHODS = 16
_BUILTINS = frozenset(dir(builtins))


class Gate(StrEnum):
    """Whether to return context: `auto` only when the code near the line (its enclosing top-level
    function or class) uses names from elsewhere that the graph resolves (given a draft: only when the draft
    invents a name), `always` whatever it uses."""

    AUTO = "auto"
    ALWAYS = "always"


class Reach(StrEnum):
    """Which names of the code get a definition: those used `near` the line (in its enclosing top-level
    function or class, else within NEAR_LINES lines), or `all` of the file's."""

    NEAR = "near"
    ALL = "all"


#: The file's names by default: on the repository benchmark's pilot (60 tasks, 512 tokens) `all` held 0.848
#: of the definitions the reference bodies need against near's 0.670, with the same edit similarity of the
#: replies; near names still come first, as the ranking puts names used nearest the line first.
DEFAULT_REACH = Reach.ALL
_FILES_KEPT = 64  # files whose uses CodeIndex keeps (the largest stdlib file: 8,600 uses, ~1 MB)


@dataclass(frozen=True)
class Definition:
    """A definition the code uses: its qualified name, file, lines, kind, stub and rank."""

    name: str
    path: str
    lines: tuple[int, int]
    kind: str  # "function", "method", "class" or "constant"
    stub: str
    score: float
    uses: tuple[str, ...]  # the names in the code that resolve to it

    def json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "lines": list(self.lines),
            "kind": self.kind,
            "stub": self.stub,
            "score": round(self.score, 6),
            "uses": list(self.uses),
        }


@dataclass(frozen=True)
class DefinitionsContext:
    """What `context_at` found: the definitions that fit the budget, their rendering (stubs grouped
    by file under a `# path` header, then any similar code under `# path:first-last`), the names used from
    elsewhere that resolved, why `auto` returned nothing (None when it returned context), the names a draft
    invents, the code most like the code at hand and such a draft (retrieval.second_round), and what the
    answer lacks for want of a part of the database (similar code, where it holds no chunks)."""

    definitions: list[Definition]
    text: str
    used: list[str]
    gated: str | None = None
    tokens: int = 0
    invented: list[Invented] = field(default_factory=list)  # with a draft: the names it invents
    similar: list[SimilarCode] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def json(self) -> dict[str, Any]:
        return {
            "definitions": [d.json() for d in self.definitions],
            "text": self.text,
            "used": self.used,
            "gated": self.gated,
            "tokens": self.tokens,
            "invented": [i.json() for i in self.invented],
            "similar": [s.json() for s in self.similar],
            "notes": self.notes,
        }


@dataclass(frozen=True)
class SimilarCode:
    """A snippet of another file like the code at hand and its draft: its file, lines, name and text (cut
    to the budget)."""

    path: str
    lines: tuple[int, int]
    name: str
    code: str

    def json(self) -> dict[str, Any]:
        return {"path": self.path, "lines": list(self.lines), "name": self.name, "code": self.code}


# -- the corpus's tables, once per store state -------------------------------------------------------


class CodeIndex:
    """The Linker over a store's FILE, CLASS and NAME tables, the stub tables of its files, and the
    stubs rendered so far; built once per state of the store (its sources' fingerprints)."""

    def __init__(self, store: GraphStore, state: str) -> None:
        self.store = store
        self.state = state
        files, classes, names = code_tables(store)
        self.linker = Linker(files, classes, names)
        self.files = {f.source: f for f in files}
        self._signatures: dict[str, str] = {}
        self._refs: dict[str, dict[str, Any]] = {}
        self._tops: dict[str, list[tuple[str, int, int]]] = {}
        self._classes_by_source: dict[str, list[ClassNode]] = {}
        self._file_uses: dict[str, list[NameUse]] = {}  # the last files asked, oldest first
        for cls in classes:
            if "." not in cls.name:
                self._classes_by_source.setdefault(cls.source, []).append(cls)
        self._lock = threading.Lock()

    def refs(self, source: str) -> dict[str, Any]:
        """The references a file's build recorded (read once)."""
        if source not in self._refs:
            self._refs[source] = json.loads(self.files[source].refs)
        return self._refs[source]

    def stubs(self, source: str) -> dict[str, Any]:
        """The class and constant stub tables of a file (empty for a file built before they were kept)."""
        return self.refs(source).get("stubs", {}) if source in self.files else {}

    def top_level(self, source: str) -> set[str]:
        """The names a file defines at its top level: functions, classes, constants."""
        return {name for name, _, _ in self._top_definitions(source)} | set(self.stubs(source).get("constants", {}))

    def top_level_span(self, source: str, line: int) -> tuple[int, int] | None:
        """The lines of the file's top-level function or class that holds the line."""
        return next(((a, b) for _, a, b in self._top_definitions(source) if a <= line <= b), None)

    def top_classes(self, source: str) -> list[tuple[str, int, int]]:
        """The file's top-level classes: name, first and last line."""
        return [(c.name, c.start_line, c.end_line) for c in self._classes_by_source.get(source, [])]

    def _top_definitions(self, source: str) -> list[tuple[str, int, int]]:
        if source not in self._tops:
            functions = [(n.name, n.start_line, n.end_line) for n in self.linker.own_methods.get((source, ""), [])]
            classes = [(c.name, c.start_line, c.end_line) for c in self._classes_by_source.get(source, [])]
            self._tops[source] = sorted(functions + classes, key=lambda t: t[1])
        return self._tops[source]

    def unchanged(self, source: str, text: str) -> FileNode | None:
        """The file's record when the index holds it built from exactly this text."""
        stored = self.files.get(source)
        return stored if stored is not None and self.refs(source).get("sha256") == text_hash(text) else None

    def file_uses(self, code: CodeAtHand) -> list[NameUse]:
        """The uses of an indexed file as a whole, kept for each of the last files asked: positions in one
        large module are asked for together (on the stdlib bench, 7 of the 15 slowest calls were in one file,
        each re-reading its ~5,000 uses). Read from what the build recorded, else from the file's tree."""
        with self._lock:
            uses = self._file_uses.pop(code.path, None)
        if uses is None:
            recorded = self.files[code.path].uses
            uses = decoded(recorded) if recorded is not None else code.uses_in(None)
            if recorded is None and not code.complete:
                return uses
        with self._lock:
            self._file_uses[code.path] = uses
            while len(self._file_uses) > _FILES_KEPT:
                del self._file_uses[next(iter(self._file_uses))]
        return uses

    def signatures(self, names: Sequence[NameNode]) -> dict[str, str]:
        """Each function's signature with its docstring's first line, by NAME id, read once."""
        with self._lock:
            missing = [n for n in names if n.id not in self._signatures]
            if missing:
                impls = self.store.impl_ids([n.id for n in missing])
                contexts = {c.function.name_id: c for c in self.store.contexts(list(impls.values()))}
                for name in missing:
                    context = contexts.get(name.id)
                    self._signatures[name.id] = _short_signature(context.text, name.lang) if context else ""
            return {n.id: self._signatures[n.id] for n in names}


_INDEXES: WeakKeyDictionary[GraphStore, CodeIndex] = WeakKeyDictionary()
_INDEXES_LOCK = threading.Lock()


def code_index(store: GraphStore) -> CodeIndex:
    """The store's CodeIndex, rebuilt when the files it holds changed since the last call."""
    state = sha256(json.dumps(sorted(store.sources().items())).encode()).hexdigest()
    with _INDEXES_LOCK:
        index = _INDEXES.get(store)
        if index is None or index.state != state:
            index = _INDEXES[store] = CodeIndex(store, state)
            # its ~6*10^5 objects (20k-function stdlib graph) would stay young, and every collection of the
            # younger generations until the next full one rescanned them (147 ms in one warm call); in the
            # oldest generation, every full collection still did
            keep_out_of_collections()
        return index


# -- the code at hand ----------------------------------------------------------------------------------


@dataclass
class CodeAtHand:
    """What the code being written holds at a line: its record as a FILE (its imports and bases), the
    scope of the line, the names it uses with their lines, what it defines itself."""

    path: str
    lang: str
    line: int
    record: FileNode
    scope: str = ""
    own_class: str = ""  # the qualified name of the class the line is in, if any
    uses: list[NameUse] = field(default_factory=list)
    defined: set[str] = field(default_factory=set)  # module-level names the file defines
    local: set[str] = field(default_factory=set)  # names bound in the functions around the line
    members: set[str] = field(default_factory=set)  # names the own class defines
    near: tuple[int, int] = (0, 0)  # the lines `near` covers
    imports: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)
    base_classes: list[ClassNode] | None = None  # what the own class's bases resolve to, once known
    resolutions: dict[str, _Resolution | None] = field(default_factory=dict)  # per external name, once per call
    tree: ast.Module | None = None  # Python that parses: its uses are read from the tree when asked
    text: str = ""
    whole: bool = True  # whether the tree is the whole text's (else only the definition around the line)
    indexed: bool = False  # the file as the index holds it (not code being written)
    all_uses: list[NameUse] | None = None  # the whole tree's uses, once read
    complete: bool = True  # whether the whole tree is the text's, not a cut of it (which depends on the line)

    def uses_in(self, window: tuple[int, int] | None) -> list[NameUse]:
        """The uses on the lines of the window (all of them for None, read from the tree once)."""
        if window is None and not self.whole:
            self.tree, parsed = _lenient_parse(self.text, self.line)
            self.whole, self.complete = True, parsed is self.text
        if self.tree is None:
            return [u for u in self.uses if window is None or window[0] <= u.line <= window[1]]
        if window is not None:
            return python_uses(self.tree, window)
        if self.all_uses is None:
            self.all_uses = python_uses(self.tree)
        return self.all_uses


def read_source(path: str) -> str:
    """A source file's text."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


def read_code(path: str, text: str | None, line: int | None, index: CodeIndex | None = None) -> CodeAtHand:
    """The code at hand: `text` (else the file at `path`) at `line` (default: its last line); a file the
    `index` holds as it is keeps the references its build recorded (its type facts included)."""
    text = read_source(path) if text is None else text
    lines = text.splitlines()
    line = len(lines) if line is None else line
    if not 1 <= line <= max(len(lines), 1):
        raise ConfigError(f"line {line} is outside {path} ({len(lines)} lines)")
    lang = language_for(Path(path)) or "python"
    if lang == "python":
        stored = index.unchanged(path, text) if index else None
        if index is not None and stored is not None and (code := _indexed_code(index, stored, text, line)):
            return code
        return _python_code(path, text, line, stored)
    return _other_code(path, lang, text, line)


def _indexed_code(index: CodeIndex, stored: FileNode, text: str, line: int) -> CodeAtHand | None:
    """A file the index holds as it is: the references its build recorded, and only the top-level
    function or class around the line parsed (a large module costs what that definition costs; the
    whole file is parsed only when all its names are asked for). None when the line is in no definition."""
    span = index.top_level_span(stored.source, line)
    if span is None:
        return None
    start, end = span
    try:  # blank lines first put the definition's nodes on the file's lines (no pass renumbering them)
        tree = parse_python("\n" * (start - 1) + "\n".join(text.splitlines()[start - 1 : end]))
    except UNPARSABLE:
        return None
    code = CodeAtHand(stored.source, "python", line, stored, tree=tree, text=text, whole=False, indexed=True)
    for bound, module, attr, _ in index.refs(stored.source)["imports"]:
        code.imports.setdefault(bound, []).append((module, attr))
    scope, own_class, near, local, members = _scope_at(tree, line)
    code.scope, code.own_class, code.near, code.local, code.members = scope, own_class, near, local, members
    return code


def _python_code(path: str, text: str, line: int, stored: FileNode | None) -> CodeAtHand:
    tree, parsed = _lenient_parse(text, line)
    if stored is not None:
        record, imports = stored, [tuple(i) for i in json.loads(stored.refs)["imports"]]
    else:
        found = python_structure(path, parsed, tree, types=False)
        refs = {"imports": [list(i) for i in found.imports], "calls": [], "bases": [list(b) for b in found.bases]}
        record = FileNode(id="", source=path, lang="python", fingerprint="", module=found.module, refs=json.dumps(refs))
        imports = found.imports
    code = CodeAtHand(path, "python", line, record, tree=tree, text=text, indexed=stored is not None)
    for bound, module, attr, _ in imports:
        code.imports.setdefault(bound, []).append((module, attr))
    if tree is None:
        code.uses = list(_dotted_words(parsed))
        code.near = (max(1, line - NEAR_LINES), line + NEAR_LINES)
        return code
    code.defined = _module_names(tree)
    scope, own_class, near, local, members = _scope_at(tree, line)
    code.scope, code.own_class, code.near, code.local, code.members = scope, own_class, near, local, members
    return code


_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_STRINGS_AND_COMMENTS = re.compile(r"'''[\s\S]*?'''" + r'|"""[\s\S]*?"""' + r"""|'[^'\n]*'|"[^"\n]*"|#[^\n]*""")


def _dotted_words(text: str) -> Iterator[NameUse]:
    """For code `ast` cannot read: the dotted words outside strings and comments, keywords left out."""
    blanked = _STRINGS_AND_COMMENTS.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    for number, row in enumerate(blanked.splitlines(), start=1):
        for match in _DOTTED.finditer(row):
            if not keyword.iskeyword(match.group().partition(".")[0]):
                yield NameUse(match.group(), number)


def _lenient_parse(text: str, line: int) -> tuple[ast.Module | None, str]:
    """The module as `ast` reads it; code being edited that does not parse is cut after the line (a
    `pass` added under an open block), then at the line; None when nothing parses."""
    lines = text.splitlines()
    head = lines[:line]
    indent = re.match(r"\s*", head[-1]).group() if head else ""  # type: ignore[union-attr]
    for candidate in (text, "\n".join([*head, indent + "    pass"]), "\n".join([*head[:-1], indent + "pass"])):
        try:
            return parse_python(candidate), candidate
        except UNPARSABLE:
            continue
    return None, text


def _module_names(tree: ast.Module) -> set[str]:
    """The names the module binds at its top level other than by import."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For | ast.With | ast.If | ast.Try):
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            names |= {n.name for n in ast.walk(node) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    return names


def _scope_at(tree: ast.Module, line: int) -> tuple[str, str, tuple[int, int], set[str], set[str]]:
    """The qualified name of the innermost function around the line, of the innermost class, the lines of
    the outermost definition around it, the names bound in its functions, and its class's members."""
    scope, own_class, near = "", "", (max(1, line - NEAR_LINES), line + NEAR_LINES)
    local: set[str] = set()
    members: set[str] = set()
    body: Sequence[ast.stmt] = tree.body
    prefix, outermost = "", True
    while True:
        node = next((n for n in body if _holds(n, line)), None)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return scope, own_class, near, local, members
        if outermost:
            near, outermost = (first_line(node), node.end_lineno or node.lineno), False
        if isinstance(node, ast.ClassDef):
            own_class = prefix + node.name
            members = {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
            members |= {
                t.id for n in node.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
            }
            members |= {  # fields: self.x = ... in any method
                n.attr
                for n in ast.walk(node)
                if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and _is_self(n.value)
            }
            prefix = f"{own_class}."
        else:
            scope = prefix + node.name
            local |= _bound_in(node)
            prefix = f"{scope}.<locals>."
        body = node.body


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _holds(node: ast.stmt, line: int) -> bool:
    return first_line(node) <= line <= (node.end_lineno or node.lineno)


def _bound_in(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters of a function and the names its body binds (not those of nested functions)."""
    args = function.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).partition(".")[0])
    return names


def _other_code(path: str, lang: str, text: str, line: int) -> CodeAtHand:
    """Code in a tree-sitter language: its calls are the names it uses (resolved by name, as CALLS are)."""
    found = tree_structure(lang, text)
    refs = {"imports": [], "calls": [], "bases": [list(b) for b in found.bases]}
    record = FileNode(id="", source=path, lang=lang, fingerprint="", module=found.module, refs=json.dumps(refs))
    code = CodeAtHand(path, lang, line, record)
    code.uses = [NameUse(callee, row) for row, callee, _ in found.calls if not callee.startswith("?")]
    code.near = (max(1, line - NEAR_LINES), line + NEAR_LINES)
    return code


# -- resolving ------------------------------------------------------------------------------------------


@dataclass
class _Found:
    """A definition being collected: its node (or constant), the uses that reach it, their weight."""

    key: str
    node: NameNode | ClassNode | None
    constant: tuple[str, str, int, str] | None = None  # (path, name, line, text)
    module: tuple[str, str] | None = None  # (path, dotted name) of a module the code uses as a whole
    uses: dict[str, None] = field(default_factory=dict)
    weight: float = 0.0
    members: set[str] = field(default_factory=set)  # of a class: the members the code uses
    inherited: bool = False  # a base of the code's own class: its protected members are the code's too
    suggested: bool = False  # a class shown for the members named like a draft's invented names, and only them


def _external(code: CodeAtHand, use: NameUse) -> bool:
    """Whether a use names something the file itself, the builtins or the function's locals do not define."""
    head, _, rest = use.dotted.partition(".")
    if head in ("self", "cls", "super()"):
        return bool(rest) and (head == "super()" or rest.partition(".")[0] not in code.members)
    if head in code.imports:
        return True
    return head not in code.defined and head not in code.local and head not in _BUILTINS


def _candidates(index: CodeIndex, code: CodeAtHand, use: NameUse) -> list[NameNode | ClassNode]:
    """The definitions outside the file that a use refers to: the longest prefix of its dotted name that
    resolves (`z.C.m`, else `z.C`, else `z`)."""
    parts = use.dotted.split(".")
    for cut in range(len(parts), 0, -1):
        dotted = ".".join(parts[:cut])
        if dotted in ("self", "cls", "super()"):
            break
        found = _resolved(index, code, dotted)
        if found:
            return [f for f in found if f.source != code.path]
    return []


def _resolved(index: CodeIndex, code: CodeAtHand, dotted: str) -> list[NameNode | ClassNode]:
    head, _, rest = dotted.partition(".")
    if head in ("self", "cls", "super()") and code.own_class:
        return _through_bases(index, code, rest.partition(".")[0], skip_own=head == "super()")
    return index.linker.resolve(code.record, code.scope, dotted)


def _through_bases(index: CodeIndex, code: CodeAtHand, member: str, skip_own: bool) -> list[NameNode | ClassNode]:
    """A member of the own class found in its bases (the class as written in the code at hand)."""
    if not skip_own and member in code.members:
        return []
    for cls in _bases(index, code):
        for owner in index.linker.mro(cls):
            found = [m for m in index.linker.members(owner) if m.name.rpartition(".")[2] == member]
            if found:
                return list(found)
    return []


def _bases(index: CodeIndex, code: CodeAtHand) -> list[ClassNode]:
    """The classes the own class's bases (as the code at hand writes them) resolve to, once per call."""
    if code.base_classes is None:
        written = [b for c, b in json.loads(code.record.refs)["bases"] if c == code.own_class]
        found = (index.linker.resolve(code.record, "", base) for base in written)
        code.base_classes = [c for classes in found for c in classes if isinstance(c, ClassNode)]
    return code.base_classes


def _constant(index: CodeIndex, code: CodeAtHand, use: NameUse) -> tuple[str, str, int, str] | None:
    """A module-level constant of another file that the use names through an import (`from m import C`,
    `import m; m.C`), following one re-export."""
    head, _, rest = use.dotted.partition(".")
    member = rest.partition(".")[0]
    for module, attr in code.imports.get(head, []):
        # `from m import C`; `import m` then `m.C`; `from pkg import m` then `m.C`
        tries = [(module, attr)] if attr else [(module, member)]
        if attr and member:
            tries.append((f"{module}.{attr}", member))
        for where, name in tries:
            if name and (found := _module_constant(index, where, name, hops=2)):
                return found
    return None


def _module_constant(index: CodeIndex, module: str, name: str, hops: int) -> tuple[str, str, int, str] | None:
    for source in index.linker.by_module.get(module, []):
        constants = index.stubs(source).get("constants", {})
        if name in constants:
            line, text = constants[name]
            return source, name, line, text
        if hops:
            for local, target, attr, _ in index.refs(source)["imports"]:
                if local == name and attr:
                    if found := _module_constant(index, target, attr, hops - 1):
                        return found
    return None


def _with_stored_imports(index: CodeIndex, code: CodeAtHand) -> None:
    """Code that is part of an indexed file (an excerpt that does not show all of it) also binds what the
    indexed file imports and defines at its top level; its own imports come first."""
    stored = index.files.get(code.path)
    if stored is None or stored.lang != code.lang:
        return
    code.defined |= index.top_level(code.path)
    if code.record is stored:
        return
    refs = index.refs(code.path)
    mine = json.loads(code.record.refs)
    known = {tuple(i[:3]) for i in mine["imports"]}
    extra = [i for i in refs["imports"] if tuple(i[:3]) not in known]
    for bound, module, attr, _ in extra:
        code.imports.setdefault(bound, []).append((module, attr))
    mine["imports"] += extra
    mine["bases"] += [b for b in refs["bases"] if b not in mine["bases"]]
    code.record = replace(code.record, refs=json.dumps(mine))


def _module(index: CodeIndex, code: CodeAtHand, use: NameUse) -> tuple[str, str] | None:
    """A module of the corpus that the use reaches through a name bound to it (`import m as z; z.f`,
    `from pkg import m; m`): what else the code may take from it is unknown, so it gets the module's outline."""
    head, _, rest = use.dotted.partition(".")
    for module, attr in code.imports.get(head, []):
        names = [f"{module}.{attr}"] if attr else [module, f"{module}.{rest.partition('.')[0]}"]
        for name in names:
            if sources := index.linker.by_module.get(name):
                return sources[0], name
    return None


def _pending_imports(code: CodeAtHand) -> set[str]:
    """The names the code imports but does not use yet: there for the code being written, so they count as
    used on the line. (Only for code given as it is being written: a whole indexed file has none to speak of.)"""
    if code.tree is None or code.indexed:
        return set()
    uses = code.uses_in(None)
    used = {u.dotted.partition(".")[0] for u in uses if not u.binding}
    return {u.dotted for u in uses if u.binding} - used


def _weight(code: CodeAtHand, use: NameUse) -> float:
    return 1.0 / (1.0 + abs(use.line - code.line) / NEAR_SCALE)


def _collect(index: CodeIndex, code: CodeAtHand, reach: Reach) -> tuple[dict[str, _Found], list[str]]:
    """The definitions the code's external names reach, weighted by nearness; and the external names."""
    found: dict[str, _Found] = {}
    external: dict[str, None] = {}
    pending = _pending_imports(code)
    if reach is Reach.NEAR:
        uses = code.uses_in(code.near)
    else:
        uses = index.file_uses(code) if code.indexed else code.uses_in(None)
    uses = [u for u in uses if u.dotted not in pending]
    # a name is resolved once however often it is used (a 7,000-line module uses ~5,000 names, mostly
    # repeated: resolving each use took 1.5 s a call under load, each name ~0.2 s), and once for the gate too
    resolutions = code.resolutions
    for use in [*uses, *(NameUse(name, code.line, binding=True) for name in sorted(pending))]:
        if use.dotted not in resolutions:
            resolutions[use.dotted] = _resolution(index, code, use) if _external(code, use) else None
        resolution = resolutions[use.dotted]
        if resolution is None:
            continue
        if not use.binding:  # the gate opens for names the code uses, not for what it merely imports
            external[use.dotted] = None
        weight = _weight(code, use)
        for owned in resolution.owners:
            _add(found, owned, use, weight)
        for key, constant, module in resolution.others:
            entry = found.setdefault(key, _Found(key, None, constant, module))
            entry.uses[use.dotted] = None
            entry.weight += weight
    # a module used as a namespace: its outline lists what else the code may take from it, below what the
    # code names of it
    named = {_source(f) for f in found.values() if f.module is None}
    for entry in found.values():
        if entry.module is not None and entry.module[0] in named:
            entry.weight *= OUTLINE_SHARE
    for base in (b for b in _bases(index, code) if b.source != code.path):
        entry = found.setdefault(base.id, _Found(base.id, base))
        entry.weight += 1.0  # as if used on the line: every `self.` of the class may reach it
        entry.inherited = True
        entry.uses[f"base {base.name}"] = None
    return found, list(external)


@dataclass(frozen=True)
class _Resolution:
    """What one external name reaches: definitions (each with the member the name uses of its class), and
    a constant or a module as (key, constant, module)."""

    owners: list[tuple[NameNode | ClassNode, str]]
    others: list[tuple[str, tuple[str, str, int, str] | None, tuple[str, str] | None]]


def _resolution(index: CodeIndex, code: CodeAtHand, use: NameUse) -> _Resolution:
    nodes = _candidates(index, code, use)
    others: list[tuple[str, tuple[str, str, int, str] | None, tuple[str, str] | None]] = []
    if not nodes and (constant := _constant(index, code, use)):
        others.append((f"constant:{constant[0]}:{constant[1]}", constant, None))
    if module := _module(index, code, use):
        others.append((f"module:{module[0]}", None, module))
    return _Resolution([_owner(index, node) for node in nodes], others)


def _owner(index: CodeIndex, node: NameNode | ClassNode) -> tuple[NameNode | ClassNode, str]:
    """A method is shown in its class's stub: (the class, the method's last name); else (node, "")."""
    if isinstance(node, NameNode) and "." in node.name and ".<locals>." not in node.name:
        owner = index.linker.class_at(node.source, node.name)
        if owner is not None:
            return owner, node.name.rpartition(".")[2]
    return node, ""


def _add(
    found: dict[str, _Found],
    owned: tuple[NameNode | ClassNode, str],
    use: NameUse,
    weight: float,
    suggested: bool = False,
) -> None:
    """A use reaching a definition (a class's `member`); a `suggested` class's entry is its own, keyed apart."""
    node, member = owned
    key = f"suggested:{node.id}" if suggested else node.id
    entry = found.setdefault(key, _Found(key, node, suggested=suggested))
    entry.uses[use.dotted] = None
    entry.weight += weight
    if member:
        entry.members.add(member)


# -- ranking ------------------------------------------------------------------------------------------


def _ranked(index: CodeIndex, found: dict[str, _Found]) -> list[tuple[_Found, float]]:
    """The definitions by personalized PageRank over them and the CALLS and INHERITS edges among them
    and their one-hop neighbours (callees of the functions, bases of the classes), personalized by weight."""
    import networkx as nx  # noqa: PLC0415 (only definitions context needs it)

    graph = nx.DiGraph()
    graph.add_nodes_from(found)
    functions = [f.node.id for f in found.values() if isinstance(f.node, NameNode)]
    for edge in index.store.calls(functions, callers=False) if functions else []:
        callee = index.linker.name_of.get(edge.other_id)
        if callee is None:
            continue
        target, member = _owner(index, callee)
        if target.id not in found:
            found[target.id] = _Found(target.id, target)
        if member:
            found[target.id].members.add(member)
        graph.add_edge(edge.name_id, target.id)
    for entry in list(found.values()):
        if isinstance(entry.node, ClassNode) and not entry.suggested:
            for base in index.linker.mro(entry.node)[1:2]:
                found.setdefault(base.id, _Found(base.id, base))
                graph.add_edge(entry.node.id, base.id)
    total = sum(f.weight for f in found.values()) or 1.0
    personal = {key: f.weight / total for key, f in found.items()}
    graph.add_nodes_from(found)
    ranks = nx.pagerank(graph, alpha=DAMPING, personalization=personal if any(personal.values()) else None)
    return sorted(((found[k], r) for k, r in ranks.items()), key=lambda p: (-p[1], p[0].key))


# -- stubs ----------------------------------------------------------------------------------------------


def _short_signature(text: str, lang: str) -> str:
    """A function's signature with its docstring cut to the first line; ` ...` after a bare Python header."""
    found = signature(text, lang)
    if lang != "python":
        return found
    lines = found.splitlines()
    header = [line for line in lines if not line.lstrip().startswith(('"""', "'''"))]
    doc = next((line for line in lines if line.lstrip().startswith(('"""', "'''"))), "")
    if doc:
        indent = doc[: len(doc) - len(doc.lstrip())]
        first = re.split(r"(?<=[.!?])\s", doc.strip().strip('"').strip("'").strip(), maxsplit=1)[0]
        first = first if len(first) <= DOC_CHARS else first[: DOC_CHARS - 3].rstrip() + "..."
        return "\n".join([*header, f'{indent}"""{first}"""'])
    return "\n".join(header) + " ..."


def _indented(text: str, indent: str = "    ") -> list[str]:
    lines = text.splitlines()
    base = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return [indent + line[base:] for line in lines]


#: The line of a class stub whose members were all left out.
_ELIDED = "    ..."


@dataclass
class _ClassStub:
    """A class's stub at decreasing detail: header, doc, fields, methods (used ones first)."""

    header: str
    doc: str
    fields: list[str]
    methods: list[tuple[str, str, bool]]  # (name, signature, used)

    def render(self, level: int) -> str:
        """0: everything; 1: methods without docstrings; 2: only used methods and __init__; 3: no fields;
        4: no __init__ either; 5: the header and docstring line alone."""
        lines = [self.header]
        if self.doc:
            lines.append(f'    """{self.doc}"""')
        if level < 3:
            lines += [f"    {f}" for f in self.fields]
        for name, text, used in self.methods:
            if level >= 5 or (level >= 2 and not used and (name != "__init__" or level >= 4)):
                continue
            shown = (
                text
                if level == 0
                else "\n".join(s for s in text.splitlines() if '"""' not in s)
                + ("" if text.rstrip().endswith("...") or '"""' not in text else " ...")
            )
            lines += _indented(shown)
        if len(lines) == 1 + bool(self.doc):
            lines.append(_ELIDED)
        return "\n".join(lines)


def _class_stub(index: CodeIndex, cls: ClassNode, used: set[str], inherited: bool) -> _ClassStub:
    """The class's stub: its public methods (and protected ones, `_m`, when the code's own class inherits
    them: a subclass calls its base's helpers), those the code uses, and `__init__`."""
    header, doc, fields = _class_head(index, cls)
    methods = [
        m
        for m in index.linker.members(cls)
        if (last := m.name.rpartition(".")[2]) in used
        or last == "__init__"
        or not last.startswith("_")
        or (inherited and not last.startswith("__"))
    ]
    methods.sort(key=lambda m: (m.name.rpartition(".")[2] not in used, m.start_line))
    methods = sorted(methods[:MAX_METHODS], key=lambda m: m.start_line)
    signatures = index.signatures(methods)
    return _ClassStub(
        header,
        doc,
        fields,
        [
            (m.name.rpartition(".")[2], signatures[m.id], m.name.rpartition(".")[2] in used)
            for m in methods
            if signatures[m.id]
        ],
    )


def _suggested_stub(index: CodeIndex, cls: ClassNode, members: set[str]) -> _ClassStub:
    """A class's header and only the methods named like a draft's invented names: the rest of a large class
    would leave them out of the budget (mcp's Client for a draft's `self._list_tools`)."""
    methods = [m for m in index.linker.members(cls) if m.name.rpartition(".")[2] in members]
    signatures = index.signatures(methods)
    header = _class_head(index, cls)[0]
    return _ClassStub(header, "", [], [(m.name.rpartition(".")[2], signatures[m.id], True) for m in methods])


def _class_head(index: CodeIndex, cls: ClassNode) -> tuple[str, str, list[str]]:
    """A class's header (its `class` line(s), decorators included), docstring line and fields, as built."""
    table = index.stubs(cls.source).get("classes", {}).get(cls.name, {})
    header = table.get("header") or f"class {cls.name.rpartition('.')[2]}:"
    return header, table.get("doc", ""), list(table.get("fields", []))


def _stubs(index: CodeIndex, entry: _Found, shown: set[str]) -> tuple[str, list[str]]:
    """The definition's kind and its stub at each level of detail, most detailed first (a module's
    outline without the names `shown` already)."""
    if entry.constant is not None:
        return "constant", [entry.constant[3]]
    if entry.module is not None:
        return "module", _outline_levels(index, entry.module[0], shown)
    node = entry.node
    if isinstance(node, ClassNode) and entry.suggested:
        stub = _suggested_stub(index, node, entry.members)
        return "class", list(dict.fromkeys(stub.render(level) for level in range(2)))
    if isinstance(node, ClassNode):
        stub = _class_stub(index, node, entry.members, entry.inherited)
        return "class", list(dict.fromkeys(stub.render(level) for level in range(CLASS_LEVELS)))
    assert isinstance(node, NameNode)
    return "function", [index.signatures([node])[node.id]]


def _least_stub(index: CodeIndex, entry: _Found, shown: set[str]) -> str:
    """The definition's stub at its least detail (the last of `_stubs`), without the signatures of a class's
    methods or of a module's whole outline: most definitions ranked never fit what is left of the budget
    (on the 20k-function stdlib graph, reading the stubs of those was half of a large file's call)."""
    if entry.module is not None:
        return "\n".join(text for _, text in _module_outline(index, entry.module[0], shown, MODULE_LEAST_LINES))
    if isinstance(entry.node, ClassNode) and entry.suggested:
        return _suggested_stub(index, entry.node, entry.members).render(1)
    if isinstance(entry.node, ClassNode):
        header, doc, _ = _class_head(index, entry.node)
        return _ClassStub(header, doc, [], []).render(CLASS_LEVELS - 1)
    return _stubs(index, entry, shown)[1][-1]


def _outline_levels(index: CodeIndex, source: str, shown: set[str], hidden: Set[str] = frozenset()) -> list[str]:
    """A module's outline at each level of detail, most detailed first, without the names `shown`, and with
    the lines of those `hidden` blanked (not refilled from the rest of the module)."""
    outline = _module_outline(index, source, shown, MODULE_LINES)
    sizes = (MODULE_LINES, 12, MODULE_LEAST_LINES)
    levels = ("\n".join(text for name, text in outline[:n] if name not in hidden) for n in sizes)
    return [level for level in dict.fromkeys(levels) if level]


def _module_outline(index: CodeIndex, source: str, shown: set[str], limit: int) -> list[tuple[str, str]]:
    """The first `limit` of a module's public top-level functions, classes and constants not `shown`, in line
    order, each with its name: a function's `def` line(s), a class's `class` line, a constant's assignment
    (only the functions among them have their signatures read)."""
    entries: list[tuple[int, str, NameNode | str]] = [
        (n.start_line, n.name, n) for n in index.linker.own_methods.get((source, ""), []) if not n.name.startswith("_")
    ]
    entries += [
        (line, name, text) for name, (line, text) in index.stubs(source).get("constants", {}).items() if name[:1] != "_"
    ]
    tables = index.stubs(source).get("classes", {})
    for name, start, _ in index.top_classes(source):
        if not name.startswith("_"):
            header = tables.get(name, {}).get("header") or f"class {name}:"
            entries.append((start, name, header.splitlines()[-1] + " ..."))
    pending = sorted((e for e in entries if e[1] not in shown), key=lambda e: (e[0], e[1]))
    outline: list[tuple[str, str]] = []
    while pending and len(outline) < limit:
        batch, pending = pending[: limit - len(outline)], pending[limit - len(outline) :]
        signatures = index.signatures([item for _, _, item in batch if isinstance(item, NameNode)])
        for _, name, item in batch:
            text = item if isinstance(item, str) else signatures[item.id] and _header_only(signatures[item.id])
            if text:  # a function whose signature cannot be read is left out
                outline.append((name, text))
    return outline


def _header_only(signature_text: str) -> str:
    header = [line for line in signature_text.splitlines() if not line.lstrip().startswith(('"""', "'''"))]
    text = "\n".join(header)
    return text if text.endswith("...") else text + " ..."


# -- the whole -----------------------------------------------------------------------------------------


class ContextOptions(TypedDict, total=False):
    """How `definitions_context` (and `KnowledgeBase.context_at`) answer: the token budget, which names
    (`Reach`), the gate, how tokens are counted (default: estimated), files whose definitions to leave out,
    and a draft of the code (Python) to check for invented names."""

    budget: int
    names: Reach | str
    gate: Gate | str
    count_tokens: Callable[[str], int] | None
    exclude_sources: frozenset[str]
    draft: str | None


@dataclass(frozen=True)
class RankedDefinitions:
    """What the code at hand uses from other files, ranked, before a budget is fitted: `definitions_context`
    fits it once, retrieval.second_round to what its similar code leaves."""

    index: CodeIndex
    path: str
    ranked: list[tuple[_Found, float]]
    used: list[str]
    invented: list[Invented]
    count: Callable[[str], int]
    exclude_sources: frozenset[str]
    gated_when_empty: bool  # the auto gate: nothing fitting is a reason, not an empty context

    def fitted(self, budget: int) -> DefinitionsContext:
        """The ranked definitions that fit `budget` tokens, rendered."""
        if budget < 0:
            raise ConfigError("the budget must not be negative")
        chosen = _fit(self.index, self.ranked, budget, self.count, self.path, self.exclude_sources)
        if self.gated_when_empty and not chosen:
            reason = f"none of the definitions it uses fits the budget of {budget} tokens"
            return DefinitionsContext([], "", self.used, reason, invented=self.invented)
        rendered = render(chosen, self.path)
        tokens = self.count(rendered) if rendered else 0
        return DefinitionsContext(chosen, rendered, self.used, None, tokens, self.invented)


@collector_paused  # see ranked_definitions
def definitions_context(
    store: GraphStore, path: str, line: int | None = None, text: str | None = None, **options: Unpack[ContextOptions]
) -> DefinitionsContext:
    """The definitions the code at `path` (or `text`, the code being written there) uses at `line`,
    from other files of the store, as stubs within `budget` tokens (counted by `count_tokens`, else
    estimated). Definitions in `exclude_sources` and in the file itself are never returned. With a `draft`
    (the code written there, not in `text`), the names it invents are listed with the definitions named most
    like them, which lead the context, and the auto gate gives context only when it invents one."""
    found = ranked_definitions(store, path, line, text, **options)
    return found if isinstance(found, DefinitionsContext) else found.fitted(options.get("budget", DEFAULT_BUDGET))


# Parsing a large module allocates ~10^5 objects, and each collection they set off scans every object the
# process holds, the graph's tables included: on the 20k-function stdlib graph that was half of a call's
# CPU time in a 6,600-line file (466 ms with the collector, 234 ms without). Restarted while the call's
# syntax tree was still alive, the first collection scanned it: 157 ms more. A call's own cycles are
# collected after it.
@collector_paused
def ranked_definitions(
    store: GraphStore, path: str, line: int | None = None, text: str | None = None, **options: Unpack[ContextOptions]
) -> RankedDefinitions | DefinitionsContext:
    """What `definitions_context` fits, ranked; or its answer already where the auto gate gives nothing."""
    names: Reach = _choice(Reach, options.get("names", DEFAULT_REACH), "names")
    gate: Gate = _choice(Gate, options.get("gate", Gate.AUTO), "gate")
    if options.get("budget", DEFAULT_BUDGET) < 0:
        raise ConfigError("the budget must not be negative")
    exclude_sources = options.get("exclude_sources", frozenset())
    index = code_index(store)
    code = read_code(path, text, line, index)
    _with_stored_imports(index, code)
    found, external = _collect(index, code, names)
    found = _outside(found, exclude_sources)
    used = sorted({u for f in found.values() for u in f.uses if not u.startswith("base ")})
    draft = options.get("draft")
    new = _invented(index, code, draft, exclude_sources, found) if draft is not None else []
    if gate is Gate.AUTO and draft is not None and not new:
        return DefinitionsContext([], "", used, NOTHING_INVENTED)
    if gate is Gate.AUTO and draft is None:
        # the gate reads the code near the line whatever `names` takes: with all of a file's names it
        # would open for nearly every file (155 of 157 cross-file and 74 of 100 in-file benchmark tasks)
        near_found, near_external = (found, external) if names is Reach.NEAR else _collect(index, code, Reach.NEAR)
        if reason := _gate_reason(_outside(near_found, exclude_sources), near_external):
            return DefinitionsContext([], "", [], reason)
    ranked = _ranked(index, found) if found else []
    count = options.get("count_tokens") or estimate_tokens
    return RankedDefinitions(index, code.path, ranked, used, new, count, exclude_sources, gate is Gate.AUTO)


#: Why the auto gate gives no context for a draft.
NOTHING_INVENTED = "the draft names only what the graph, its file and the builtins do"
#: A definition named like an invented name weighs as much as this many uses on the line.
SUGGESTED_WEIGHT = 2.0


def _invented(
    index: CodeIndex, code: CodeAtHand, draft: str, exclude: frozenset[str], found: dict[str, _Found]
) -> list[Invented]:
    """The names the draft invents; the definitions named like them join `found` ahead of the others."""
    if code.lang != "python":
        raise ConfigError(f"a draft is checked in Python only, not {code.lang}")
    imports = {bound: list(targets) for bound, targets in code.imports.items()}
    for bound, module, attr, _ in python_structure(code.path, draft, longest_parse(draft), types=False).imports:
        imports.setdefault(bound, []).append((module, attr))  # the draft's own, read as the file's are
    modules = index.linker.by_module
    outside = {  # `from x import y`: y is module x.y if the graph holds it, else an attribute of x
        bound
        for bound, targets in imports.items()
        if not any(_judged(index, f"{m}.{a}" if a and f"{m}.{a}" in modules else m) for m, a in targets)
    }
    new = invented(vocabulary(index), draft, (code.path, code.text, code.line), outside, exclude)
    for name in new:
        for node in name.suggestions:
            owned = _owner(index, node)
            # a method apart from its class as the code uses it: trimmed to fit, that one may show the header alone
            _add(found, owned, NameUse(name.name, code.line), SUGGESTED_WEIGHT, suggested=bool(owned[1]))
    return new


def _judged(index: CodeIndex, module: str) -> bool:
    """Whether the graph knows all a module offers: it holds the module, and the module takes nothing with
    `import *` from one it does not hold (os's `from posix import *` offers forkpty, which no file mentions)."""
    sources = index.linker.by_module.get(module, [])
    imports = (entry for source in sources for entry in index.refs(source)["imports"])
    return bool(sources) and not any(
        bound == "*" and origin not in index.linker.by_module for bound, origin, *_ in imports
    )


def _outside(found: dict[str, _Found], exclude_sources: frozenset[str]) -> dict[str, _Found]:
    """The definitions found that are in none of the excluded files."""
    return {key: entry for key, entry in found.items() if _source(entry) not in exclude_sources}


def _gate_reason(found: dict[str, _Found], external: list[str]) -> str | None:
    """Why the auto gate gives no context for code that uses these names and reaches these definitions."""
    if not external:
        return "the code uses only names of its own file, its locals and the builtins"
    if not found:
        return f"none of the {len(external)} names it uses from elsewhere is defined in the graph"
    return None


def _choice(kind: type[StrEnum], value: str, what: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        raise ConfigError(f"unknown {what} {value!r}; use one of: {', '.join(kind)}") from None


def _source(entry: _Found) -> str:
    if entry.module is not None:
        return entry.module[0]
    return entry.constant[0] if entry.constant else entry.node.source if entry.node else ""


@dataclass
class _Pick:
    """A definition `_fit` keeps: its stubs (most detailed first, with their token counts) and the one shown."""

    entry: _Found
    score: float
    kind: str
    levels: list[tuple[str, int]]
    level: int


def _fit(
    index: CodeIndex,
    ranked: Sequence[tuple[_Found, float]],
    budget: int,
    count: Callable[[str], int],
    here: str,
    exclude: frozenset[str],
) -> list[Definition]:
    """The ranked definitions that fit the budget with their file headers: first each at its least detail
    (in rank order, while they fit), then each in rank order at the most detail that what is left allows
    (a class trimmed rather than another definition dropped)."""
    picks: list[_Pick] = []
    shown: dict[str, set[str]] = {}  # the names picked so far, by file (a module's outline leaves them out)
    # one stub per file and text: a name defined twice alike (`try: def dumps(...)` / `except ImportError:
    # def dumps(...)` in bm25s) was printed twice
    seen: set[tuple[str, str]] = set()
    used = 0
    for entry, score in ranked:
        source = _source(entry)
        if source == here or source in exclude:
            continue
        header = 0 if source in shown else count(_header(source, here)) + 1
        smallest = _least_stub(index, entry, shown.get(source, set()))
        if not smallest or used + header + count(smallest) + 1 > budget:
            continue  # it does not fit even at its least detail
        kind, stubs = _stubs(index, entry, shown.get(source, set()))
        levels = [(stub, count(stub) + 1) for stub in stubs if stub]
        if levels and (source, levels[0][0]) in seen:
            continue
        if levels and used + header + levels[-1][1] <= budget:
            seen.add((source, levels[0][0]))
            picks.append(_Pick(entry, score, kind, levels, len(levels) - 1))
            shown.setdefault(source, set()).add(_last_name(entry))
            used += header + levels[-1][1]
    picks, used = _outlines_without_later(index, picks, used, budget, count)
    for pick in picks:
        least = pick.levels[pick.level][1]
        pick.level = next(i for i, (_, cost) in enumerate(pick.levels) if used - least + cost <= budget)
        used += pick.levels[pick.level][1] - least
    return [_definition(p.entry, p.kind, p.levels[p.level][0], p.score) for p in _shown_once(picks)]


def _outlines_without_later(
    index: CodeIndex, picks: list[_Pick], used: int, budget: int, count: Callable[[str], int]
) -> tuple[list[_Pick], int]:
    """The picks with each module's outline without the lines of the names of its file picked after it
    (rich's `filesize` outline, ranked above `filesize.pick_unit_and_suffix`, printed that function's line
    again); and the budget used then. The lines are blanked, not refilled from the rest of the module. When
    that empties the outline's least detail, its next level takes its place if it fits what is left of the
    budget; otherwise, or when nothing is left of it, the outline is dropped."""
    kept = []
    for position, pick in enumerate(picks):
        if pick.entry.module is None:
            kept.append(pick)
            continue
        source = pick.entry.module[0]
        same_file = [(at, _last_name(p.entry)) for at, p in enumerate(picks) if _source(p.entry) == source]
        before = {name for at, name in same_file if at < position}
        later = {name for at, name in same_file if at > position} - before
        if later:
            levels = [(stub, count(stub) + 1) for stub in _outline_levels(index, source, before, later)]
            if not levels or used - pick.levels[-1][1] + levels[-1][1] > budget:
                used -= pick.levels[-1][1]
                continue
            used += levels[-1][1] - pick.levels[-1][1]
            pick.levels, pick.level = levels, len(levels) - 1
        kept.append(pick)
    return kept, used


def _shown_once(picks: list[_Pick]) -> list[_Pick]:
    """The picks without a class stub whose lines another stub of the same class shows: a class the code uses,
    trimmed to its header, beside the stub of its methods named like a draft's invented names (tenacity's
    `class BaseRetrying(ABC): ...` was printed twice), or the methods' stub when the class's shows them."""
    by_class: dict[str, list[int]] = {}
    for position, pick in enumerate(picks):
        if isinstance(pick.entry.node, ClassNode):
            by_class.setdefault(pick.entry.node.id, []).append(position)
    dropped: set[int] = set()
    for twins in (positions for positions in by_class.values() if len(positions) == 2):
        first, second = (set(picks[i].levels[picks[i].level][0].splitlines()) - {_ELIDED} for i in twins)
        if first <= second:
            dropped.add(twins[0])
        elif second <= first:
            dropped.add(twins[1])
    return [pick for position, pick in enumerate(picks) if position not in dropped]


def _last_name(entry: _Found) -> str:
    if entry.constant is not None:
        return entry.constant[1]
    return entry.node.name.rpartition(".")[2] if entry.node is not None else ""


def _definition(entry: _Found, kind: str, stub: str, score: float) -> Definition:
    if entry.module is not None:
        path, name = entry.module
        return Definition(name, path, (1, 1), kind, stub, score, tuple(entry.uses))
    if entry.constant is not None:
        path, name, line, _ = entry.constant
        return Definition(name, path, (line, line), kind, stub, score, tuple(entry.uses))
    node = entry.node
    assert node is not None
    return Definition(node.name, node.source, (node.start_line, node.end_line), kind, stub, score, tuple(entry.uses))


def _header(source: str, here: str) -> str:
    return f"# {display_path(source, here)}"


def display_path(source: str, here: str) -> str:
    """A definition's file as shown: relative to the deepest folder it shares with the code at hand."""
    parts, others = Path(source).parts, Path(here).parts[:-1]
    shared = 0
    while shared < min(len(parts) - 1, len(others)) and parts[shared] == others[shared]:
        shared += 1
    return str(Path(*parts[shared - 1 :])) if shared > 1 else source


def describe_invented(name: Invented, here: str = "") -> str:
    """An invented name and the definitions named like it, on one line: `_check_file (like PathSpec.check_files
    at pathspec.py:159)`."""
    like = ", ".join(f"{n.name} at {display_path(n.source, here)}:{n.start_line}" for n in name.suggestions)
    return f"{name.name} (like {like})" if like else name.name


def render(definitions: Sequence[Definition], here: str = "") -> str:
    """The stubs grouped by file under a `# path` header, files in rank order, definitions in line order
    (a module's outline, the rest of what it offers, last)."""
    by_file: dict[str, list[Definition]] = {}
    for definition in definitions:
        by_file.setdefault(definition.path, []).append(definition)
    blocks = []
    for source, group in by_file.items():
        stubs = [d.stub for d in sorted(group, key=lambda d: (d.kind == "module", d.lines))]
        blocks.append("\n".join([_header(source, here), *stubs]))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def context_prompt(found: DefinitionsContext, path: str, code: str, line: int | None = None) -> str:
    """The context before the code it serves: the stubs by file, then the code at `path` up to the line
    under its own header (CrossCodeEval's layout: path-labelled context first, the current file last)."""
    shown = code.splitlines()[: line if line is not None else None]
    return "".join([found.text, "\n" if found.text else "", f"# {path}\n", "\n".join(shown), "\n"])
