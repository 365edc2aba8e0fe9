"""Names a draft invents: the identifiers of code a model wrote that nothing it could have read mentions —
no file of the graph, not the file being written, not the builtins, not the draft's own bindings — each
with the graph's definitions whose names come nearest.

On the repository benchmark a small model's in-file reply named such a name in 45 of 257 tasks (pathspec's
`self._check_file`, where the class has `check_file`; markdown-it's `self.renderer.add_rule`). Taking
context only there, a second reply with BM25 chunks for the code and the draft gained +0.009 [+0.001,
+0.020] over in-file alone, where context for every task distracted as often as it helped.

The vocabulary is every identifier of the graph's stored code (its cAST chunks, which concatenate to each
file), read once per state of the store by a lexer that drops strings and comments by
pattern: Python's tokenizer read 18 MB of the standard library in 7.7 s, the pattern in 0.9 s, with the
same names but for string prefixes (`rb`), which only widen what counts as known.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import io
import keyword
import re
import textwrap
import threading
import tokenize
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from ingest.name_uses import python_uses
from pkg.schema import ChunkNode, ClassNode, ImplNode, Label, NameNode

if TYPE_CHECKING:
    from retrieval.definitions import CodeIndex

#: Names code may use without the graph mentioning them: the builtins and the attributes of built-in types.
BUILTIN_NAMES = frozenset(
    {*dir(builtins), *keyword.kwlist, "self", "cls"}.union(
        *(dir(t) for t in (str, bytes, int, float, list, tuple, dict, set, frozenset, object, type, BaseException))
    )
)
#: Suggestions per invented name at most, and how alike two names must be (difflib's ratio of their words): on
#: the repository benchmark's 53 invented names, 0.75 also offered `first_path` for `is_str_path` and
#: `set_exception` for `is_exception`.
SUGGESTIONS = 3
LIKENESS = 0.8

_SKIPPED = re.compile(r"""'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|#[^\n]*""")
_WORD = re.compile(r"\b(?!\d)\w+")


def python_tokens(code: str) -> Iterator[tokenize.TokenInfo]:
    """Python's tokens of code, up to where it stops tokenizing (code cut short, or not Python)."""
    try:
        yield from tokenize.generate_tokens(io.StringIO(code).readline)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return


def identifiers(code: str) -> list[str]:
    """The identifiers of code in order (keywords left out); best effort on code that does not tokenize."""
    return [t.string for t in python_tokens(code) if t.type == tokenize.NAME and not keyword.iskeyword(t.string)]


def mentioned(code: str) -> set[str]:
    """The words of Python code outside its strings and comments, keywords left out: `identifiers` at a
    tenth of the cost, plus string prefixes; any part of a file (a chunk) reads alike."""
    return {w for w in _WORD.findall(_SKIPPED.sub(" ", code)) if not keyword.iskeyword(w)}


def bound_names(body: str) -> set[str]:
    """The names a body binds (assigned, looped over, imported, defined, caught, `self.x = `, and keyword
    arguments' names), read from the longest part of it that parses."""
    tree = longest_parse(body)
    return set().union(*map(_binds, ast.walk(tree))) if tree is not None else set()


def longest_parse(body: str) -> ast.Module | None:
    """The longest part of a body that parses, from its start: a reply cut at its token limit ends mid-statement."""
    lines = textwrap.dedent(body).splitlines(keepends=True)
    for end in range(len(lines), 0, -1):
        last = lines[end - 1]
        opened = f"{last[: len(last) - len(last.lstrip())]}    pass\n"  # a block the cut left without a body
        for text in ("".join(lines[:end]), "".join(lines[:end]) + opened):
            try:
                return ast.parse(text)
            except SyntaxError:
                continue
    return None


def attributes_of(body: str, heads: set[str]) -> set[str]:
    """The attribute names a body reads from the names `heads` (`json.dumps`: dumps, for json)."""
    tree = longest_parse(body)
    found: set[str] = set()
    for use in python_uses(tree) if tree is not None else []:
        head, *rest = use.dotted.split(".")
        if rest and head in heads:
            found.update(rest)
    return found


def _binds(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Store):
        return {node.id if isinstance(node, ast.Name) else node.attr}
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.arg | ast.keyword) and node.arg:
        return {node.arg}  # a keyword argument's name is the callee's, often another package's (`check=True`)
    if isinstance(node, ast.ExceptHandler) and node.name:
        return {node.name}
    if isinstance(node, ast.alias):
        return {(node.asname or node.name).split(".")[0]}
    return set()


def unknown(draft: str, known: set[str] | frozenset[str]) -> list[str]:
    """The identifiers of a draft that are not `known`, not builtins and not bound by the draft itself."""
    return sorted(set(identifiers(draft)) - BUILTIN_NAMES - bound_names(draft) - known)


# -- the graph's side -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vocabulary:
    """The identifiers each file of the graph mentions, in how many files each is, and the definitions by
    the words of their last name (`check_file` and `checkFile` alike: `checkfile`)."""

    by_source: dict[str, frozenset[str]]
    files: Counter[str]
    definitions: dict[str, list[NameNode | ClassNode]]

    def known_outside(self, name: str, source: str) -> bool:
        """Whether a file of the graph other than `source` mentions the name."""
        return self.files[name] - (name in self.by_source.get(source, ())) > 0


_VOCABULARIES: WeakKeyDictionary[CodeIndex, Vocabulary] = WeakKeyDictionary()
_LOCK = threading.Lock()


def vocabulary(index: CodeIndex) -> Vocabulary:
    """The vocabulary of the graph the index reads, once per state of its store."""
    with _LOCK:
        found = _VOCABULARIES.get(index)
        if found is None:
            classes = [c for found_classes in index.linker.classes.values() for c in found_classes]
            found = _VOCABULARIES[index] = _read_vocabulary(index, list(index.linker.name_of.values()), classes)
        return found


def _read_vocabulary(index: CodeIndex, names: Sequence[NameNode], classes: Sequence[ClassNode]) -> Vocabulary:
    # each chunk read apart: a string's text cut into chunks of its own (a very long one) leaves a quote unpaired
    by_source = {source: frozenset().union(*map(mentioned, texts)) for source, texts in _stored_code(index).items()}
    files = Counter(word for found in by_source.values() for word in found)
    definitions: dict[str, list[NameNode | ClassNode]] = {}
    nodes: list[NameNode | ClassNode] = [*names, *classes]
    for node in nodes:
        if node.lang == "python" and ".<locals>." not in node.name:  # what a Python draft can call
            definitions.setdefault(_words(node.name.rpartition(".")[2]), []).append(node)
    return Vocabulary(by_source, files, definitions)


def _stored_code(index: CodeIndex) -> dict[str, list[str]]:
    """The code of each file: its chunks; for a file built without them (`--parts functions`), the file on
    disk, else its functions (what is outside them, its imports and constants, then goes unread)."""
    texts: dict[str, list[str]] = {}
    for record in index.store.label_records(Label.CHUNK):
        if isinstance(record, ChunkNode):
            texts.setdefault(record.source, []).append(record.text)
    unread = []
    for source in index.files:
        if source not in texts:
            try:
                texts[source] = [Path(source).read_text(encoding="utf-8", errors="replace")]
            except OSError:
                unread.append(source)
    if unread:
        wanted = set(unread)
        for record in index.store.label_records(Label.IMPL):
            if isinstance(record, ImplNode) and record.source in wanted:
                texts.setdefault(record.source, []).append(record.text)
    return texts


def _words(name: str) -> str:
    return name.replace("_", "").lower()


@dataclass(frozen=True)
class Invented:
    """A name the draft uses that nothing it could have read mentions, and the definitions named most like it."""

    name: str
    suggestions: tuple[NameNode | ClassNode, ...]

    def json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "suggestions": [{"name": n.name, "path": n.source, "line": n.start_line} for n in self.suggestions],
        }


def invented(
    words: Vocabulary, draft: str, at: tuple[str, str, int], outside: set[str], exclude: frozenset[str] = frozenset()
) -> list[Invented]:
    """The names of a Python draft that neither the graph's files other than the file being written nor its code
    (`at`: its path, its text without the draft, the line) mention, each with up to SUGGESTIONS definitions named
    like it (not those being written: what holds the line). The attributes the draft reads from `outside`, names
    bound to modules the graph does not hold (`json.dumps`), are not the graph's to judge."""
    here, code, line = at
    known = mentioned(code) | attributes_of(draft, outside)
    new = [n for n in unknown(draft, known) if not words.known_outside(n, here)]
    return [Invented(name, _suggestions(words, name, (here, line), exclude)) for name in new]


def _suggestions(
    words: Vocabulary, name: str, at: tuple[str, int], exclude: frozenset[str]
) -> tuple[NameNode | ClassNode, ...]:
    """Definitions whose last name is most like `name`'s (words compared without case or underscores),
    those of the file being written first."""
    here, line = at
    close = difflib.get_close_matches(_words(name), words.definitions, n=SUGGESTIONS, cutoff=LIKENESS)
    found = [
        node
        for key in close
        for node in words.definitions[key]
        if node.source not in exclude and not (node.source == here and node.start_line <= line <= node.end_line)
    ]
    found.sort(key=lambda n: (close.index(_words(n.name.rpartition(".")[2])), n.source != here, n.source, n.start_line))
    return tuple(found[:SUGGESTIONS])
