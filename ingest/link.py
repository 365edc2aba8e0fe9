"""Linking: the CALLS, INHERITS and FILE→FILE IMPORTS edges of a whole corpus, resolved from the
references each FILE node keeps (ingest.structure) over the corpus's FILE, CLASS and NAME tables.

Python names resolve as Python binds them: enclosing function scopes then the module (class bodies
are no scope for their methods), then imports (``from x import y``, ``import x as z; z.f()``,
re-exports and star imports followed); ``self.m()``/``cls.m()`` through the class and its bases in
order, ``super().m()`` through the bases; calling a class calls its ``__init__``. Other languages
resolve by name: a method of the caller's own class, then within the file, the package or
namespace (or directory), and the repository, each edge marked by the tier that found it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pkg.graph import Edge
from pkg.schema import Calls, ClassNode, FileNode, Imports, Inherits, NameNode

#: How a CALLS edge was resolved, most certain first: a function of an enclosing scope or the file
#: (local); through an import (import); a method through the caller's class and its bases (self),
#: or an override of it in a subclass (override); through the bases only (super); of a local
#: variable holding an instance (instance: ``x = C(); x.m()``); a class or module named in the call
#: (qualified); by name in the same package or directory (package) or anywhere in the repository
#: (name-only; for Python, the one method of that name, called on an unknown receiver); several
#: equally good candidates at one tier (ambiguous, one edge each).
RESOLUTIONS = (
    "local",
    "import",
    "self",
    "override",
    "super",
    "instance",
    "qualified",
    "package",
    "name-only",
    "ambiguous",
)
#: Languages whose functions may call each other, by language.
FAMILIES = {"javascript": "js", "typescript": "js", "tsx": "js", "c": "c", "cpp": "c"}
_SELF = {"self", "this", "Self", "cls"}
_SUPER = {"super", "base"}
N = TypeVar("N", NameNode, ClassNode)
_MAX_HOPS = 4  # re-exports followed through at most this many modules


@dataclass
class _File:
    record: FileNode
    imports: dict[str, list[tuple[str, str | None]]]  # local name -> (module, attr)
    stars: list[str]
    calls: list[tuple[str, int, str]]
    bases: list[tuple[str, str]]


class Linker:
    """The tables of a corpus and the resolution of its references."""

    def __init__(self, files: Sequence[FileNode], classes: Sequence[ClassNode], names: Sequence[NameNode]) -> None:
        self.files: dict[str, _File] = {f.source: _parse(f) for f in files}
        self.by_module: dict[str, list[str]] = defaultdict(list)
        for f in files:
            if f.lang == "python" and f.module:
                self.by_module[f.module].append(f.source)
        self.functions: dict[tuple[str, str], list[NameNode]] = defaultdict(list)
        self.by_last: dict[tuple[str, str], list[NameNode]] = defaultdict(list)  # (family, last name)
        self.name_of: dict[str, NameNode] = {}
        for name in names:
            if name.row is None and name.source in self.files:
                self.functions[(name.source, name.name)].append(name)
                self.by_last[(_family(name.lang), name.name.rpartition(".")[2])].append(name)
                self.name_of[name.id] = name
        self.classes: dict[tuple[str, str], list[ClassNode]] = defaultdict(list)
        self.classes_by_last: dict[tuple[str, str], list[ClassNode]] = defaultdict(list)
        for cls in classes:
            self.classes[(cls.source, cls.name)].append(cls)
            self.classes_by_last[(_family(cls.lang), cls.name.rpartition(".")[2])].append(cls)
        self.bases: dict[str, list[ClassNode]] = defaultdict(list)
        self.subclasses: dict[str, list[ClassNode]] = defaultdict(list)
        self._by_class: dict[tuple[str, str], list[NameNode]] = defaultdict(list)  # filled by members()
        self._inherits: list[tuple[ClassNode, ClassNode]] | None = None

    # -- names, for definitions context -------------------------------------------------------
    def resolve(self, file: FileNode, scope: str, dotted: str) -> list[NameNode | ClassNode]:
        """What a dotted name used inside `scope` (a function's qualified name, "" at module level) of
        `file` refers to: the corpus's functions and classes. `file` may be code that was never
        indexed: its references are read from its own record."""
        self.inheritance()
        f = _parse(file)
        if file.lang != "python":
            return [n for n, _ in self._named_call(f, _at_scope(file.source, scope), dotted)]
        head, _, rest = dotted.partition(".")
        own = self._own_class(_at_scope(file.source, scope))
        if head in ("self", "cls", "super()") and rest:
            if own is None:
                return []
            method = rest.partition(".")[0]
            found: list[NameNode | ClassNode] = list(self._method(own, method, skip_own=head == "super()"))
            return found or [*self._overrides(own, method)]
        for prefix in _scopes(scope) if scope else [""]:
            key = (file.source, prefix + head)
            local: list[NameNode | ClassNode] = [*self.functions.get(key, []), *self.classes.get(key, [])]
            if local:
                return self._members(local, rest) if rest else local
        return self._via_imports(f, head, 0, rest)

    def mro(self, cls: ClassNode) -> list[ClassNode]:
        """The class, then its bases depth first, each once."""
        self.inheritance()
        return self._mro(cls)

    def members(self, cls: ClassNode) -> list[NameNode]:
        """The methods defined in the class itself, in line order."""
        if not self._by_class:
            for (source, name), names in self.functions.items():
                self._by_class[(source, name.rpartition(".")[0])] += names
        return sorted(self._by_class.get((cls.source, cls.name), []), key=lambda n: n.start_line)

    def class_at(self, source: str, scope: str) -> ClassNode | None:
        """The class whose method (or a function nested in one) `scope` is."""
        return self._own_class(_at_scope(source, scope))

    # -- the edges ---------------------------------------------------------------------------
    def edges(self) -> list[Edge]:
        """Every INHERITS, IMPORTS (FILE→FILE) and CALLS edge of the corpus, in a stable order."""
        inherits = [Inherits(c.id, b.id) for c, b in self.inheritance()]
        imports = [
            Imports(f.record.id, self.files[target].record.id)
            for f in self.files.values()
            for target in self._imported(f)
        ]
        calls: dict[tuple[str, str], Calls] = {}
        for f in self.files.values():
            for caller_id, line, callee in f.calls:
                caller = self.name_of.get(caller_id)
                if caller is None:
                    continue
                for target, resolution in self._resolve_call(f, caller, callee):
                    key = (caller_id, target.id)
                    if key not in calls or line < calls[key].line:
                        calls[key] = Calls(caller_id, target.id, line, resolution)
        records = [*inherits, *imports, *calls.values()]
        return sorted({r.edge() for r in records}, key=lambda e: (e.type.value, e.src, e.dst))

    def inheritance(self) -> list[tuple[ClassNode, ClassNode]]:
        """Every (class, base) pair of the corpus, resolved once (`bases` and `subclasses` filled)."""
        if self._inherits is None:
            self._inherits = list(self._resolve_bases())
        return self._inherits

    def _resolve_bases(self) -> Iterator[tuple[ClassNode, ClassNode]]:
        for f in self.files.values():
            for class_name, base in f.bases:
                for cls in self.classes.get((f.record.source, class_name), []):
                    for target in self._resolve_class(f, class_name, base):
                        if target.id != cls.id and target not in self.bases[cls.id]:
                            self.bases[cls.id].append(target)
                            self.subclasses[target.id].append(cls)
                            yield cls, target

    def _imported(self, f: _File) -> list[str]:
        if f.record.lang != "python":
            return []
        found: dict[str, None] = {}
        for bindings in f.imports.values():
            for module, attr in bindings:
                sub = f"{module}.{attr}" if attr else module
                for target in self.by_module.get(sub) or self.by_module.get(module, []):
                    if target != f.record.source:
                        found[target] = None
        for module in f.stars:
            found.update(dict.fromkeys(t for t in self.by_module.get(module, []) if t != f.record.source))
        return list(found)

    # -- classes -----------------------------------------------------------------------------
    def _resolve_class(self, f: _File, class_name: str, text: str) -> list[ClassNode]:
        """The classes a base of a class names (Python: where the class statement stands)."""
        if f.record.lang == "python":
            found, _ = self._python_target(f, _scopes(class_name)[1:], text)
            return [c for c in found if isinstance(c, ClassNode)]
        last = text.rpartition(".")[2]
        return self._tiered(self.classes_by_last.get((_family(f.record.lang), last), []), f.record)[0]

    def _mro(self, cls: ClassNode) -> list[ClassNode]:
        """The class and its bases, depth first, each once."""
        order: list[ClassNode] = []
        stack = [cls]
        while stack:
            current = stack.pop(0)
            if current not in order:
                order.append(current)
                stack = [*self.bases.get(current.id, []), *stack]
        return order

    def _method(self, cls: ClassNode, name: str, skip_own: bool = False) -> list[NameNode]:
        for owner in self._mro(cls)[1 if skip_own else 0 :]:
            if found := self.functions.get((owner.source, f"{owner.name}.{name}")):
                return found
        return []

    # -- calls -------------------------------------------------------------------------------
    def _resolve_call(self, f: _File, caller: NameNode, callee: str) -> list[tuple[NameNode, str]]:
        if f.record.lang == "python":
            return self._python_call(f, caller, callee)
        return self._named_call(f, caller, callee)

    def _python_call(self, f: _File, caller: NameNode, callee: str) -> list[tuple[NameNode, str]]:
        head, _, rest = callee.partition(".")
        own = self._own_class(caller)
        if head in ("self", "cls") and rest and "." not in rest and own is not None:
            found = [(n, "self") for n in self._method(own, rest)]
            return found + [(n, "override") for n in self._overrides(own, rest) if n not in found]
        if head == "super()" and rest and "." not in rest and own is not None:
            return [(n, "super") for n in self._method(own, rest, skip_own=True)]
        if head == "super()":
            return []
        if "()." in callee:  # a method of an instance: C().m, for x = C(); x.m() and C(...).m()
            made, _, method = callee.rpartition("().")
            if "." in method or "?" in made:
                return []
            classes, _ = self._python_target(f, _scopes(caller.name), made)
            return [(n, "instance") for c in classes if isinstance(c, ClassNode) for n in self._method(c, method)]
        if head == "?" or (rest and "." not in rest and not self._bound(f, caller, head)):
            return self._unique(f, rest.rpartition(".")[2] or head)
        targets, how = self._python_target(f, _scopes(caller.name), callee)
        return [(n, how) for n in self._callable(targets)]

    def _own_class(self, caller: NameNode) -> ClassNode | None:
        """The class of a method, or of the method a nested function is defined in (its `self`)."""
        qualname = caller.name
        while True:
            found = self.classes.get((caller.source, qualname.rpartition(".")[0]))
            if found or ".<locals>." not in qualname:
                return found[0] if found else None
            qualname = qualname[: qualname.rfind(".<locals>.")]

    def _overrides(self, cls: ClassNode, name: str) -> list[NameNode]:
        """The methods of that name defined in the subclasses of a class, at any depth."""
        found: list[NameNode] = []
        seen = {cls.id}
        stack = list(self.subclasses.get(cls.id, []))
        while stack:
            sub = stack.pop()
            if sub.id not in seen:
                seen.add(sub.id)
                found += self.functions.get((sub.source, f"{sub.name}.{name}"), [])
                stack += self.subclasses.get(sub.id, [])
        return found

    def _bound(self, f: _File, caller: NameNode, name: str) -> bool:
        """Whether a name is a function, class or import of the caller's scopes or file."""
        return (
            name in f.imports
            or name in ("self", "cls")
            or any(
                (f.record.source, prefix + name) in self.functions or (f.record.source, prefix + name) in self.classes
                for prefix in _scopes(caller.name)
            )
        )

    def _unique(self, f: _File, name: str) -> list[tuple[NameNode, str]]:
        """A method of an unknown receiver: the one method of that name in the corpus, if there is one."""
        found = self.by_last.get((_family(f.record.lang), name), [])
        methods = [n for n in found if n.name.count(".") and ".<locals>." not in n.name and not name.startswith("__")]
        return [(methods[0], "name-only")] if len(found) == 1 and methods else []

    def _python_target(self, f: _File, scopes: Sequence[str], text: str) -> tuple[list[NameNode | ClassNode], str]:
        """What a dotted name means in a file where names are looked up under the scope prefixes
        (innermost first), and how it was found: a definition of the file (local) or an import."""
        head, _, rest = text.partition(".")
        for prefix in scopes:
            key = (f.record.source, prefix + head)
            found: list[NameNode | ClassNode] = [*self.functions.get(key, []), *self.classes.get(key, [])]
            if found:
                return (self._members(found, rest) if rest else found), "local"
        return self._module_member(f.record.source, head, 0, rest), "import"

    def _module_member(self, source: str, name: str, hops: int, rest_of: str = "") -> list[NameNode | ClassNode]:
        """What `name` (then `.rest_of`) is in a module file: its function or class, or what it imports."""
        f = self.files.get(source)
        if f is None or hops > _MAX_HOPS:
            return []
        if not rest_of:
            found: list[NameNode | ClassNode] = [
                *self.functions.get((source, name), []),
                *self.classes.get((source, name), []),
            ]
            if found and hops:
                return found
        else:
            classes = self.classes.get((source, name))
            if classes and hops:
                return list(self._members(list(classes), rest_of))
        return self._via_imports(f, name, hops, rest_of)

    def _via_imports(self, f: _File, name: str, hops: int, rest_of: str) -> list[NameNode | ClassNode]:
        """What `name` (then `.rest_of`) is through the imports of a file, star imports last."""
        for module, attr in f.imports.get(name, []):
            dotted = ".".join(p for p in (module, attr, rest_of) if p)
            if found := self._dotted(dotted, hops + 1):
                return found
        for module in f.stars:
            for target in self.by_module.get(module, []):
                if found := self._module_member(target, name, hops + 1, rest_of):
                    return found
        return []

    def _dotted(self, dotted: str, hops: int) -> list[NameNode | ClassNode]:
        """A module-qualified name (``pkg.mod.Class.method``): the longest module prefix in the corpus,
        then what the rest names in it."""
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module, rest = ".".join(parts[:cut]), parts[cut:]
            for target in self.by_module.get(module, []):
                if found := self._module_member(target, rest[0], hops, ".".join(rest[1:])):
                    return found
        return []

    def _members(self, owners: Sequence[NameNode | ClassNode], rest: str) -> list[NameNode | ClassNode]:
        """`Class.rest` (one more name) for the classes among owners, through their bases."""
        if "." in rest:
            return []
        found: list[NameNode | ClassNode] = []
        for owner in owners:
            if isinstance(owner, ClassNode):
                found += self._method(owner, rest) or [
                    c for c in self.classes.get((owner.source, f"{owner.name}.{rest}"), [])
                ]
        return found

    def _callable(self, targets: Iterable[NameNode | ClassNode]) -> list[NameNode]:
        """The functions that calling the targets runs: a function itself, a class's __init__."""
        found: list[NameNode] = []
        for target in targets:
            found += self._method(target, "__init__") if isinstance(target, ClassNode) else [target]
        return found

    def _named_call(self, f: _File, caller: NameNode, callee: str) -> list[tuple[NameNode, str]]:
        receiver, _, name = callee.rpartition(".")
        own = self._own_class(caller)
        go_receiver = f.record.lang == "go" and receiver.isidentifier()
        if own is not None and (receiver in _SELF or receiver in _SUPER or receiver == "" or go_receiver):
            if found := self._method(own, name, skip_own=receiver in _SUPER):
                return [(n, "self") for n in found]
        candidates = self.by_last.get((_family(f.record.lang), name), [])
        if own is not None and receiver.partition(".")[0] in _SELF:  # a method of a field: not of this class
            candidates = [n for n in candidates if not n.name.startswith(f"{own.name}.")]
        if receiver and receiver not in _SELF and receiver != "?":
            qualified = [n for n in candidates if f".{n.name}".endswith(f".{receiver}.{name}")]
            if qualified:
                return _marked(qualified, "qualified")
        found, tier = self._tiered(candidates, f.record)
        return _marked(found, tier)

    def _tiered(self, candidates: Sequence[N], file: FileNode) -> tuple[list[N], str]:
        """The candidates of the nearest tier: this file, its package (or directory), the repository."""
        here = [c for c in candidates if c.source == file.source]
        if here:
            return here, "local"
        package = _package(file)
        near = [c for c in candidates if c.source in self.files and _package(self.files[c.source].record) == package]
        if near:
            return near, "package"
        return list(candidates), "name-only"


def link_edges(files: Sequence[FileNode], classes: Sequence[ClassNode], names: Sequence[NameNode]) -> list[Edge]:
    """Every linked edge (CALLS, INHERITS, FILE→FILE IMPORTS) of a corpus from its tables."""
    return Linker(files, classes, names).edges()


def _at_scope(source: str, scope: str) -> NameNode:
    """A stand-in NAME for code at `scope` of a file, to resolve its names as a caller's."""
    return NameNode(id="", source=source, name=scope, row=None, lang="", start_line=0, end_line=0)


def _marked(found: Sequence[NameNode], tier: str) -> list[tuple[NameNode, str]]:
    return [(n, tier if len(found) == 1 else "ambiguous") for n in found]


def _parse(record: FileNode) -> _File:
    refs = json.loads(record.refs)
    imports: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
    stars = []
    for local, module, attr, _ in refs["imports"]:
        if local == "*":
            stars.append(module)
        else:
            imports[local].append((module, attr))
    calls = [(caller, line, callee) for caller, line, callee in refs["calls"]]
    return _File(record, dict(imports), stars, calls, [(c, b) for c, b in refs["bases"]])


def _family(lang: str) -> str:
    return FAMILIES.get(lang, lang)


def _package(file: FileNode) -> str:
    return file.module if file.module is not None else str(Path(file.source).parent)


def _scopes(qualname: str) -> list[str]:
    """The prefixes under which a function's code looks names up, innermost first: its own locals,
    each enclosing function's, the module (class bodies are skipped, as Python does)."""
    prefixes = [f"{qualname}.<locals>."]
    marker = ".<locals>."
    position = qualname.rfind(marker)
    while position != -1:
        prefixes.append(qualname[: position + len(marker)])
        position = qualname.rfind(marker, 0, position)
    prefixes.append("")
    return prefixes
