"""Linking: the CALLS, INHERITS and FILE→FILE IMPORTS edges of a whole corpus, resolved from the
references each FILE node keeps (ingest.structure) over the corpus's FILE, CLASS and NAME tables.

Python names resolve as Python binds them: enclosing function scopes then the module (class bodies
are no scope for their methods), then imports (``from x import y``, ``import x as z; z.f()``,
re-exports and star imports followed); ``self.m()``/``cls.m()`` through the class and its bases in
order, ``super().m()`` through the bases (in a mixin whose bases lack m, the partner it is
combined with, statically or by ``type()``); calling a class calls its ``__init__``. Other receivers
are followed through the type facts of ingest.python_types (annotations, constructor calls, return
types, attributes of ``self`` and of classes, ``isinstance`` narrowing, what callers pass to an
untyped parameter, the items of a returned tuple, the elements the corpus puts into a user-defined
container or into a dict or list attribute of ``self``; ``self`` handed on stands for the subclasses
that run the method), evaluated lazily and memoised; reads and writes of a property link to its
getter or setter. Other languages
resolve a receiver through its declared type (``Box b``, ``b := &Box{}``), then by name: a method
of the caller's own class, then within the file, the package or namespace (or directory), and the
repository, each edge marked by the tier that found it.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import orjson

from pkg.graph import Edge
from pkg.schema import Calls, ClassNode, FileNode, Imports, Inherits, NameNode

#: How a CALLS edge was resolved, most certain first: a function of an enclosing scope or the file
#: (local); through an import (import); a method through the caller's class and its bases (self),
#: or an override of it in a subclass (override, also for a receiver of a declared type or one holding
#: instances of a class and of its subclass); through the bases only (super); a method of a
#: receiver whose type comes from constructor calls (instance: ``x = C(); x.m()``, also through
#: ``self.x = C()`` and class attributes), from an annotation on the way (annotation: ``ctx: Context``,
#: ``-> Context``, ``isinstance(x, C)``) or from what an unannotated function returns, its callers
#: pass or the corpus puts into a container (inferred); a property read or written (property: the
#: getter or setter; property-name: one of the few of that name in the file or package, the
#: receiver's type unknown); a class or module named in the call (qualified); by name in the same
#: package or directory (package) or anywhere in the repository (name-only; for Python, the one
#: method of that name, called on an unknown receiver); several equally good candidates at one tier
#: (ambiguous, one edge each).
RESOLUTIONS = (
    "local",
    "import",
    "self",
    "override",
    "super",
    "instance",
    "annotation",
    "inferred",
    "property",
    "property-name",
    "qualified",
    "package",
    "name-only",
    "ambiguous",
)
_CERTAINTY = ("instance", "annotation", "inferred")  # how a receiver's type was found, most certain first
#: Languages whose functions may call each other, by language.
FAMILIES = {"javascript": "js", "typescript": "js", "tsx": "js", "c": "c", "cpp": "c"}
#: Built-ins that call a function they are given, and where it is given: a keyword, or a position.
_HANDED: dict[str, str | int] = {"sorted": "key", "min": "key", "max": "key", "sort": "key", "map": 0, "filter": 0}
_SELF = {"self", "this", "Self", "cls"}
_SUPER = {"super", "base"}
N = TypeVar("N", NameNode, ClassNode)
#: The methods of Python's built-in types and streams: an unknown receiver of these is as likely a
#: list, dict, str or file as the one corpus class defining the name (on the stdlib bench, 28 of the
#: 84 name-only edges whose line ran were never taken, all but one of them .pop() or .keys()).
_BUILTIN_METHODS = frozenset(
    name
    for kind in (list, dict, set, frozenset, str, bytes, bytearray, tuple, int, float, io.TextIOWrapper, io.BytesIO)
    for name in dir(kind)
)
#: A property read on a receiver of unknown type links to the properties of that name in the file
#: or package when there are at most this many: on the stdlib bench (email's token lists, whose
#: elements may be any of up to 9 token classes) guessing among any number took property recall
#: from 0.22 to 0.80 but precision from 0.980 to 0.823; at most 4, 0.42 and 0.953. Since the elements
#: of user containers are typed, the guesses left were taken 4 times of 13.
_MAX_GUESSES = 4
#: `self` handed to another object stands for at most this many subclasses: a base with more (sklearn's
#: estimator mixins: 263 at 100k functions) says little of which, and each call on it would fan out to all
_MAX_SUBCLASSES = 8
_MAX_SITES = 64  # call sites of one name read for what callers pass to an untyped parameter
_MAX_HOPS = 4  # re-exports followed through at most this many modules
_MAX_DEPTH = 8  # type expressions followed through at most this many others
#: ("i", class): an instance; ("c", class): the class; ("f", function); ("e", class): a container of instances;
#: ("m", file): a module
Value = tuple[str, NameNode | ClassNode | FileNode]
_ELEMENT_GETTERS = {"get", "pop", "setdefault"}  # a container method that returns one of its elements


@dataclass
class _File:
    record: FileNode
    imports: dict[str, list[tuple[str, str | None]]]  # local name -> (module, attr)
    stars: list[str]
    calls: list[tuple[str, int, str]]
    bases: list[tuple[str, str]]
    types: dict[tuple[str, str], list[tuple[str, int, int]]]  # (scope, name) -> (expression, first, last)
    fields: dict[tuple[str, str], list[tuple[str, str, bool]]]  # (class, attr) -> (scope, expression, class-level)
    returns: dict[str, list[str]]  # function -> expressions
    items: dict[tuple[str, int], list[str]]  # (function, position) -> expressions of the tuples it returns
    elements: list[tuple[str, str, str]]  # (scope, receiver, element): what a scope puts into a receiver
    properties: dict[tuple[str, int], str]  # (function, first line) -> get|set|del
    abstract: set[tuple[str, int]]  # (method, first line) of the methods only subclasses define
    narrowed: set[tuple[str, str]]  # (scope, name) of the names narrowed by isinstance somewhere
    accesses: list[list]  # [caller NAME id, line, receiver.attr, get|set]
    declared: dict[str, list[tuple[int, str]]]  # other languages: variable -> (line, declared type)
    parameters: dict[str, tuple[list[str], list[str], bool]]  # function -> positional, keyword-only, bound
    raw_arguments: list[list]  # [caller NAME id, line, callee's last name, positional, [[keyword, expression]]]
    _arguments: dict[tuple[str, int, str], tuple[list[str], dict[str, str]]] | None = None
    _elements_of: dict[tuple[str, str], list[str]] | None = None

    @property
    def elements_of(self) -> dict[tuple[str, str], list[str]]:
        """(scope, receiver) -> the elements that scope puts into it; indexed when first asked."""
        if self._elements_of is None:
            self._elements_of = defaultdict(list)
            for scope, receiver, element in self.elements:
                self._elements_of[(scope, receiver)].append(element)
        return self._elements_of

    @property
    def arguments(self) -> dict[tuple[str, int, str], tuple[list[str], dict[str, str]]]:
        """(caller, line, callee) -> what the call passes; read when first asked (few files are)."""
        if self._arguments is None:
            self._arguments = {
                (caller, line, callee): (positional, dict(keywords))
                for caller, line, callee, positional, keywords in reversed(self.raw_arguments)
            }
        return self._arguments


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
        self.own_methods: dict[tuple[str, str], list[NameNode]] = defaultdict(list)  # (source, class) -> methods
        for name in self.name_of.values():
            self.own_methods[(name.source, name.name.rpartition(".")[0])].append(name)
        self.bases: dict[str, list[ClassNode]] = defaultdict(list)
        self.subclasses: dict[str, list[ClassNode]] = defaultdict(list)
        self._memo: dict[tuple[str, str, str, str, int | None], tuple[list[Value], str]] = {}
        self._cuts = 0  # evaluations cut short by _MAX_DEPTH so far
        # what an evaluation cut short gave, with the depth it was asked at (valid at that depth or deeper)
        self._cut_memo: dict[tuple[str, str, str, str, int | None], tuple[int, tuple[list[Value], str]]] = {}
        self.sites: dict[str, list[tuple[_File, NameNode, int, str]]] = defaultdict(list)  # callee's last name
        for parsed in self.files.values():
            for caller_id, line, callee in parsed.calls if parsed.record.lang == "python" else []:
                if (caller := self.name_of.get(caller_id)) is not None:
                    self.sites[callee.rpartition(".")[2]].append((parsed, caller, line, callee))
        self._sites_memo: dict[tuple[str, int, str], list[tuple[NameNode, str]]] = {}
        self._subclass_memo: dict[str, list[ClassNode]] = {}
        self._mixin_memo: dict[str, list[tuple[ClassNode, set[str]]]] = {}  # method name -> _mixins
        self._reads_memo: dict[str, dict[str, set[str]]] = {}  # source -> function id -> what it calls or reads
        self._contents: dict[str, list[tuple[_File, str, str]]] | None = None  # class id -> what is put in
        self._element_memo: dict[str, list[Value]] = {}
        self._given_memo: dict[tuple[str, str], list[Value]] = {}  # (source, method) -> _self_given's
        self._self_contents: dict[str, list[tuple[ClassNode, _File, str, str]]] | None = None  # _put_on_self's
        self._bound_memo: dict[str, list[NameNode]] | None = None  # _class_bound's
        # What names resolve to, once the bases are known (a name is read at many sites: 15% of the
        # linking at 100k functions)
        self._dotted_memo: dict[tuple[str, int], list[NameNode | ClassNode]] = {}
        self._target_memo: dict[tuple[str, tuple[str, ...], str], tuple[list[NameNode | ClassNode], str]] = {}
        self._mros: dict[str, list[ClassNode]] | None = None  # filled once the bases are known
        self._inherits = [Inherits(c.id, b.id) for c, b in self._inheritance()]
        self._mros = {}
        self.accessors: dict[tuple[str, str], list[NameNode]] = defaultdict(list)  # (attribute, get|set|del)
        for name in self.name_of.values():
            if (kind := self._property_kind(name)) is not None:
                self.accessors[(name.name.rpartition(".")[2], kind)].append(name)

    # -- the public questions --------------------------------------------------------------------
    def resolve(self, file: FileNode, scope: str, dotted: str) -> list[NameNode | ClassNode]:
        """What a dotted name used inside `scope` (a function's qualname, "" at module level) of a
        file refers to; the file may be one the corpus does not hold (its refs are read here)."""
        f = self.files.get(file.source)
        if f is None or f.record.fingerprint != file.fingerprint:
            f = _parse(file)
        if file.lang == "python":
            found = [t for t, _ in self._python_refer(f, scope, dotted, None)]
        else:
            found = [t for t, _ in self._named_call(f, file.source, scope, dotted)]
        return list(dict.fromkeys(found))

    def mro(self, cls: ClassNode) -> list[ClassNode]:
        """The class and its bases, depth first, each once."""
        if self._mros is not None and cls.id in self._mros:
            return self._mros[cls.id]
        order: list[ClassNode] = []
        stack = [cls]
        while stack:
            current = stack.pop(0)
            if current not in order:
                order.append(current)
                stack = [*self.bases.get(current.id, []), *stack]
        if self._mros is not None:
            self._mros[cls.id] = order
        return order

    def members(self, cls: ClassNode) -> list[NameNode]:
        """The methods defined in the class itself."""
        return list(self.own_methods.get((cls.source, cls.name), []))

    def class_at(self, source: str, scope: str) -> ClassNode | None:
        """The class whose method (or a function nested in one) `scope` is."""
        return self._class_at(source, scope)

    # -- the edges ---------------------------------------------------------------------------
    def edges(self) -> list[Edge]:
        """Every INHERITS, IMPORTS (FILE→FILE) and CALLS edge of the corpus, in a stable order."""
        inherits = self._inherits
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
                for target, resolution in self._resolve_call(f, caller, line, callee):
                    key = (caller_id, target.id)
                    if key not in calls or line < calls[key].line:
                        calls[key] = Calls(caller_id, target.id, line, resolution)
            for caller_id, line, text, kind in f.accesses:
                if (text.rpartition(".")[2], kind) not in self.accessors:  # no getter (setter) of the name
                    continue
                caller = self.name_of.get(caller_id)
                for target, how in self._property(f, caller.name, line, text, kind) if caller is not None else []:
                    key = (caller_id, target.id)
                    if key not in calls or line < calls[key].line:
                        calls[key] = Calls(caller_id, target.id, line, how)
        records = [*inherits, *imports, *calls.values()]
        return sorted({r.edge() for r in records}, key=lambda e: (e.type.value, e.src, e.dst))

    def _inheritance(self) -> Iterator[tuple[ClassNode, ClassNode]]:
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

    def _method(self, cls: ClassNode, name: str, skip_own: bool = False) -> list[NameNode]:
        return self._first_defining(self.mro(cls)[1 if skip_own else 0 :], name)

    def _first_defining(self, order: Sequence[ClassNode], name: str) -> list[NameNode]:
        """The method of that name of the first class in `order` that defines one."""
        for owner in order:
            if found := self._own_method(owner, name):
                return found
        return []

    def _own_method(self, cls: ClassNode, name: str) -> list[NameNode]:
        """The method of that name the class itself defines (none if it only inherits one)."""
        return self.functions.get((cls.source, f"{cls.name}.{name}"), [])

    # -- calls -------------------------------------------------------------------------------
    def _resolve_call(self, f: _File, caller: NameNode, line: int, callee: str) -> list[tuple[NameNode, str]]:
        if f.record.lang == "python":
            found = self._python_refer(f, caller.name, callee, line) or self._handed(f, caller, line, callee)
            return [(n, how) for target, how in found for n in self._callable([target])]
        receiver = callee.rpartition(".")[0]
        typed = [kind for at, kind in f.declared.get(receiver, []) if caller.start_line <= at <= line]
        return self._named_call(f, caller.source, caller.name, callee, typed[-1] if typed else None)

    def _handed(self, f: _File, caller: NameNode, line: int, callee: str) -> list[tuple[NameNode | ClassNode, str]]:
        """What a built-in that calls the function it is given runs (``sorted(xs, key=_safe_key)``,
        ``map(f, xs)``, ``items.sort(key=f)``): that function, found as its name would be."""
        head, _, last = callee.rpartition(".")
        if head and last != "sort":  # of the methods, only list.sort takes a key
            return []
        where = _HANDED.get(last)
        if where is None or (not head and self._bound(f, caller.name, last)):
            return []
        passed, named = f.arguments.get((caller.id, line, last), ([], {}))
        given = named.get(where) if isinstance(where, str) else passed[where] if len(passed) > where else None
        if not given or "(" in given:
            return []
        return self._python_refer(f, caller.name, given, line)

    def _python_refer(
        self, f: _File, scope: str, text: str, line: int | None
    ) -> list[tuple[NameNode | ClassNode, str]]:
        """What a dotted text used in a scope of a Python file refers to, and how it was found."""
        if text.isidentifier() and not f.stars and not self._bound(f, scope, text) and not self._local(f, scope, text):
            # a name the file neither defines, imports nor assigns (117k of the 479k calls at 100k
            # functions are to a builtin) is nothing of the corpus: said before the evaluation that
            # finds the same (the CALLS edges are identical, found in 14.7 s instead of 16.5)
            return []
        head, _, rest = text.partition(".")
        own = self._class_at(f.record.source, scope)
        head = self._self_alias(f, scope, head)
        if head in ("self", "cls") and own is not None and "." not in rest:
            found: list[tuple[NameNode | ClassNode, str]] = [(n, "self") for n in self._method(own, rest)]
            overrides = self._reachable(own, scope, self._overrides(own, rest))
            found = self._dispatched(found, [(n, "override") for n in overrides])
            if found or not rest:  # cls(): the class itself
                return found or ([(own, "self")] if head == "cls" else [])
        if head == "super()" and rest and "." not in rest and own is not None:
            up = self._method(own, rest, skip_own=True) or self._chain_end(own, rest)
            return [(n, "super") for n in up]
        if head in ("super()", "?"):
            return list(self._unique(f, text.rpartition(".")[2])) if head == "?" else []
        bound = "(" not in head and self._bound(f, scope, head)
        if not rest or (bound and "(" not in text):
            targets, how = self._python_target(f, _scopes(scope), text)
            if not targets and not rest:  # a variable holding a class or a function: Charset = _charset.Charset
                return self._held(f, scope, text, line)
            if targets:
                return [(t, how) for t in targets]
        receiver, _, member = text.rpartition(".")
        values, how = self._values(f, scope, receiver, line)
        found = [found for value in values for found in self._member_of(value, member, how)]
        found += self._slot_overrides(values, member, found)
        if not found and values:  # an attribute holding a class or a function: self.formatter_class()
            held, how = self._attribute(values, member, how, 0)
            found = [(node, how) for kind, node in held if kind in "cf" and not isinstance(node, FileNode)]
        if not found and head in ("self", "cls") and own is not None and "." not in rest:
            return self._mixed_in(f, own, rest)
        element = receiver.endswith(".[]")  # xs[i].m with xs unknown: guessed by name, as ?.m is
        if found or values or (not element and ("." in rest or "(" in text or bound or self._typed(f, scope, head))):
            return found
        return list(self._unique(f, member))

    def _held(self, f: _File, scope: str, name: str, line: int | None) -> list[tuple[NameNode | ClassNode, str]]:
        """The classes and functions a variable may hold (``superinit = super().__init__``)."""
        values, how = self._values(f, scope, name, line)
        return [
            (node, _weakest(how, "inferred"))
            for kind, node in values
            if kind in "cf" and not isinstance(node, FileNode)
        ]

    def _mixed_in(self, f: _File, own: ClassNode, name: str) -> list[tuple[NameNode | ClassNode, str]]:
        """``self.m()`` when neither the class, its bases, its subclasses nor its attributes define m:
        a mixin, joined to its partner at run time (email's headers: type(name, (cls, base), {})),
        so the methods of that name in the file, else the package, outside the class's MRO."""
        if name.startswith("__") or self._field(own, name, instance=True):
            return []
        mro = {c.name for c in self.mro(own) if c.source == own.source}
        candidates = [
            n
            for n in self.by_last.get((_family(f.record.lang), name), [])
            if "." in n.name and n.name.rpartition(".")[0] not in mro and ".<locals>." not in n.name
        ]
        found, tier = self._tiered(candidates, f.record)
        return [] if tier == "name-only" else list(_marked(found, tier))

    def _member_of(self, value: Value, member: str, how: str) -> list[tuple[NameNode | ClassNode, str]]:
        """What `.member` of a value is: a method through the class and its bases (and, for an
        instance of a declared type, the overrides in subclasses), or a nested class."""
        kind, node = value
        if isinstance(node, FileNode):  # a module held in a variable: its function or class of that name
            return [(n, how) for n in self._defined_in(node.source, member)]
        if not isinstance(node, ClassNode) or kind == "e":
            return []
        found: list[tuple[NameNode | ClassNode, str]] = [(n, how) for n in self._method(node, member)]
        if kind == "i" and how == "annotation":  # a declared type may be a subclass; a constructed one is not
            found = self._dispatched(found, [(n, "override") for n in self._overrides(node, member)])
        return found or [(c, how) for c in self.classes.get((node.source, f"{node.name}.{member}"), [])]

    def _slot_overrides(
        self, values: list[Value], member: str, found: list[tuple[NameNode | ClassNode, str]]
    ) -> list[tuple[NameNode | ClassNode, str]]:
        """The overrides a receiver that holds instances of a class and of a subclass of it may run: such a
        receiver is a slot for the class's family (configparser's `self._interpolation` holds the class
        attribute `Interpolation()` or a subclass's `BasicInterpolation()`, and the tests pass an
        `ExtendedInterpolation()`), so every override of the method in the base's subclasses, as `override`."""
        held = [node for kind, node in values if kind == "i" and isinstance(node, ClassNode)]
        above = {base.id for other in dict.fromkeys(held) for base in self.mro(other)[1:]}
        bases = [c for c in held if c.id in above]
        known = {node for node, _ in found}
        overrides = [n for base in bases for n in self._overrides(base, member) if n not in known]
        return [(n, "override") for n in dict.fromkeys(overrides)]

    def _property(self, f: _File, scope: str, line: int, text: str, kind: str) -> list[tuple[NameNode, str]]:
        """The getter (get) or setter (set) that reading or writing `receiver.attr` runs, and how it
        was found: through the receiver's type (property), else, for an element of a container or
        a plain variable of no known type, by name in the file or package (property-name)."""
        receiver, _, attr = text.rpartition(".")
        values, how = self._values(f, scope, receiver, line)
        # an instance of a declared type, or self, may be of a subclass whose property overrides
        # the attribute (click: ParamType.arity = 1, Tuple.arity a property)
        on_self = self._self_alias(f, scope, receiver) == "self"
        found = []
        for k, cls in values:
            if k == "i" and isinstance(cls, ClassNode):
                overrides = self._overrides(cls, attr) if how == "annotation" or on_self else []
                found += self._method(cls, attr) + (self._reachable(cls, scope, overrides) if on_self else overrides)
        typed = [(n, "property") for n in dict.fromkeys(found) if self._property_kind(n) == kind]
        if typed or values or not self._unknown(f, scope, receiver):
            return typed
        named, tier = self._tiered(self.accessors.get((attr, kind), []), f.record)
        return [] if tier == "name-only" or len(named) > _MAX_GUESSES else [(n, "property-name") for n in named]

    def _unknown(self, f: _File, scope: str, receiver: str) -> bool:
        """Whether a receiver is of no type the corpus can tell: an element of a container (``self[0]``,
        ``for x in xs``) or a plain variable that is no import, function or class and has no facts."""
        if receiver.endswith(".[]"):
            return True
        return receiver.isidentifier() and not self._bound(f, scope, receiver) and not self._typed(f, scope, receiver)

    def _dispatched(
        self, found: list[tuple[NameNode | ClassNode, str]], overrides: list[tuple[NameNode | ClassNode, str]]
    ) -> list[tuple[NameNode | ClassNode, str]]:
        """A method found through the class and its overrides: an abstract one left out when
        overrides exist (it runs only on a subclass that forgot to define it)."""
        if not overrides:
            return found
        kept = [(n, how) for n, how in found if not self._abstract(n)]
        known = {n for n, _ in found}
        return kept + [(n, how) for n, how in overrides if n not in known]

    def _abstract(self, function: NameNode | ClassNode) -> bool:
        f = self.files.get(function.source)
        return f is not None and (function.name, function.start_line) in f.abstract

    def _property_kind(self, function: NameNode) -> str | None:
        f = self.files.get(function.source)
        return f.properties.get((function.name, function.start_line)) if f is not None else None

    # -- types ---------------------------------------------------------------------------------
    def _values(self, f: _File, scope: str, text: str, line: int | None, depth: int = 0) -> tuple[list[Value], str]:
        """What an expression of a scope may evaluate to (a class, an instance, a function), and how
        its type was found (a _CERTAINTY); memoised, a cycle or a long chain gives nothing (an answer cut short
        by the depth holds only for askers as deep or deeper)."""
        line = line if (scope, text.partition(".")[0]) in f.narrowed else None  # lines matter only there
        key = (f.record.source, f.record.fingerprint, scope, text, line)
        if key in self._memo:
            return self._memo[key]
        if (cut := self._cut_memo.get(key)) is not None and cut[0] <= depth:
            return cut[1]  # cut short when asked at this depth or nearer the top: so again here
        if depth > _MAX_DEPTH:
            self._cuts += 1
            return [], _CERTAINTY[0]
        self._memo[key] = ([], _CERTAINTY[0])  # while evaluating: a cycle ends here
        cuts = self._cuts
        if "#" in text:  # an item of the tuple a call returns
            called, _, item = text.rpartition("#")
            values, how = self._values(f, scope, called.removesuffix("()"), line, depth + 1)
            result = self._called(values, how, depth, int(item))
        else:
            result = self._chain(f, scope, text, line, depth)
        if self._cuts == cuts:
            self._memo[key] = result
        else:  # cut short by the depth it was asked at: asked nearer the top, it may go further
            del self._memo[key]
            self._cut_memo[key] = (depth, result)
        return result

    def _chain(self, f: _File, scope: str, text: str, line: int | None, depth: int) -> tuple[list[Value], str]:
        """What a dotted chain evaluates to: its head, then each attribute, call and element."""
        annotated, container = text.startswith(":"), text.endswith("[]") and not text.endswith(".[]")
        chain = text.lstrip(":").removesuffix("[]") if container else text.lstrip(":")
        segments = [(part.removesuffix("()"), part.endswith("()")) for part in chain.split(".")]
        values, how, rest = self._head(f, scope, segments, line, depth)
        through_self = segments[0][0] in ("self", "cls") and len(rest) < len(segments)
        for step, (name, called) in enumerate(rest):
            elements: list[Value] = [("i", node) for kind, node in values if kind == "e"]
            if name == "[]":  # an element: of a container whose element type is known, else unknown
                contained = [v for kind, node in values if kind == "i" for v in self._elements(node, depth)]
                values, how = elements + contained, _weakest(how, "inferred") if contained else how
                continue
            values = [v for v in values if v[0] != "e"]
            if not values and called and step == 0 and len(rest) == len(segments) - 1:
                guessed = self._guessed(f, scope, segments[0][0], name)
                if guessed:
                    values, how = self._called([("f", n) for n in guessed], "inferred", depth)
                    continue
            values, how = self._attribute(values, name, how, depth, subclassed=through_self and step == 0)
            if not values and through_self and step == 0 and (family := self._only_on_family(f, scope, name, depth))[0]:
                values, how = family[0], _weakest(how, family[1])
            if called:
                values, how = self._called(values, how, depth)
            values += elements if called and name in _ELEMENT_GETTERS else []
        if annotated:
            values = [("i", node) for kind, node in values if kind in "ic" and isinstance(node, ClassNode)]
            how = _weakest(how, "annotation")
        if container:
            values = [("e", node) for kind, node in values if kind == "i"]
        return list(dict.fromkeys(values)), how

    def _guessed(self, f: _File, scope: str, receiver: str, method: str) -> list[NameNode]:
        """The method a call on a variable of unknown type runs when the corpus has one method of that
        name (`_unique`, as its `name-only` edge says): what it returns is then the call's value
        (argparse's ``formatter = parser._get_formatter()`` in an action, `parser` being whatever the
        caller passes)."""
        if receiver in ("self", "cls") or self._bound(f, scope, receiver):
            return []
        return [n for n, _ in self._unique(f, method)]

    def _elements(self, node: NameNode | ClassNode | FileNode, depth: int) -> list[Value]:
        """The elements of an instance of a user-defined class: what the corpus puts into the
        receivers of the class or of its subclasses (self may be any); memoised per class, a cycle
        gives nothing."""
        if not isinstance(node, ClassNode):
            return []
        if node.id not in self._element_memo:
            self._element_memo[node.id] = []
            found: list[Value] = []
            for owner in [node, *self._descendants(node)]:
                for f, scope, element in self._put_into().get(owner.id, []):
                    found += self._values(f, scope, element, None, depth + 1)[0]
            self._element_memo[node.id] = list(dict.fromkeys(found))
        return self._element_memo[node.id]

    def _put_into(self) -> dict[str, list[tuple[_File, str, str]]]:
        """class id -> (file, scope, element) for what the corpus puts into a receiver that is an
        instance of the class; built when first asked, on memos of its own (an element asked for
        meanwhile is unknown, and no value found while building is kept)."""
        if self._contents is None:
            self._contents = {}
            kept = self._memo, self._sites_memo, self._element_memo, self._cut_memo
            self._memo, self._sites_memo, self._element_memo, self._cut_memo = {}, {}, {}, {}
            found: dict[str, list[tuple[_File, str, str]]] = defaultdict(list)
            for f in self.files.values():
                for scope, receiver, element in f.elements:
                    for kind, node in self._receiver(f, scope, receiver):
                        if kind == "i":
                            found[node.id].append((f, scope, element))
            self._memo, self._sites_memo, self._element_memo, self._cut_memo = kept
            self._contents = dict(found)
        return self._contents

    def _receiver(self, f: _File, scope: str, receiver: str) -> list[Value]:
        """What a receiver the corpus puts into may be, for `_put_into`: a plain local variable's values without the
        elements its scope puts into it, which are no instance (reading them took a quarter of the index's time at
        100k functions: 2.26 CPU s against 1.68)."""
        local = self._local(f, scope, receiver) if receiver.isidentifier() and receiver not in ("self", "cls") else None
        if local is None:
            return self._values(f, scope, receiver, None)[0]
        return list(dict.fromkeys(self._bound_to(f, local, receiver, None, 0)[0]))

    def _head(
        self, f: _File, scope: str, segments: list[tuple[str, bool]], line: int | None, depth: int
    ) -> tuple[list[Value], str, list[tuple[str, bool]]]:
        """The values of the first segments of an expression (a name, or a dotted module path), and
        the segments left."""
        name, called = segments[0]
        own = self._class_at(f.record.source, scope)
        values: list[Value] = []
        how = _CERTAINTY[0]
        if name in ("self", "cls") and own is not None:
            values = [("i" if name == "self" else "c", own)]
        elif name == "super" and called and own is not None:
            return [("i", base) for base in self.bases.get(own.id, [])], how, segments[1:]
        elif (local := self._local(f, scope, name)) is not None:
            values, how = self._bound_to(f, local, name, line, depth)
            if not values and (put := self._put_here(f, local[0], name, depth))[0]:  # a dict, list or set
                values, how = put
        else:
            return self._module_path(f, scope, segments, depth)
        if called:
            values, how = self._called(values, how, depth)
        return values, how, segments[1:]

    def _bound_to(
        self, f: _File, local: tuple[str, list[tuple[str, int, int]]], name: str, line: int | None, depth: int
    ) -> tuple[list[Value], str]:
        """The values of a local variable: what it is assigned (narrowed at the line where isinstance says so),
        and what callers pass where it is a parameter."""
        where, entries = local
        values: list[Value] = []
        how = _CERTAINTY[0]
        narrowed = [e for e, first, last in entries if first and line is not None and first <= line <= last]
        for expression in narrowed or [e for e, first, _ in entries if not first and e]:
            found, found_how = self._values(f, where, expression, None, depth + 1)
            values, how = values + found, _weakest(how, found_how)
        if not any(e for e, _, _ in entries):
            values, how = self._passed(f, where, name, depth)
        elif not any(e.startswith(":") for e, _, _ in entries):  # a default is one value of many
            passed, _ = self._passed(f, where, name, depth)
            values, how = values + passed, _weakest(how, "inferred") if passed else how
        return values, how

    def _only_on_family(self, f: _File, scope: str, name: str, depth: int) -> tuple[list[Value], str]:
        """``self.name`` that neither the class nor its bases define (inferred): the methods of that name
        in the subclasses that may be `self` here (argparse's ``self._get_formatter()`` in a container
        class, defined in ``ArgumentParser``), else, for a dict, list or set attribute of no class of
        the corpus, the instances the class's family puts into it (email's ``self._msgstack.append(msg)``,
        then ``root = self._msgstack.pop()``)."""
        own = self._class_at(f.record.source, scope)
        if own is None:
            return [], _CERTAINTY[0]
        if (_family(f.record.lang), name) in self.by_last:  # a function of that name somewhere
            methods = self._reachable(own, scope, self._overrides(own, name))
            if methods:
                return [("f", n) for n in methods], "inferred"
        found: list[Value] = []
        how = "inferred"
        for owner, put, where, element in self._put_on_self().get(name, []):
            if owner in self.mro(own) or own in self.mro(owner):
                values, element_how = self._values(put, where, element, None, depth + 1)
                found += [("e", node) for kind, node in values if kind == "i"]
                how = _weakest(how, element_how)
        return list(dict.fromkeys(found)), how

    def _put_on_self(self) -> dict[str, list[tuple[ClassNode, _File, str, str]]]:
        """attribute -> (class, file, scope, element) for what a class's methods put into
        ``self.attribute``; built when first asked."""
        if self._self_contents is None:
            self._self_contents = defaultdict(list)
            for f in self.files.values():
                for scope, receiver, element in f.elements:
                    head, _, attribute = receiver.partition(".")
                    if head == "self" and attribute.isidentifier() and (own := self._class_at(f.record.source, scope)):
                        self._self_contents[attribute].append((own, f, scope, element))
        return self._self_contents

    def _put_here(self, f: _File, scope: str, name: str, depth: int) -> tuple[list[Value], str]:
        """Elements of a local container of no class of the corpus (a dict, list or set): the instances its scope
        puts into it (argparse's ``group_map = {}``, ``group_map[action] = mutex_group``, then
        ``group_map.get(action, self)._add_action(action)``), found as surely as the elements are."""
        found: list[Value] = []
        how = _CERTAINTY[0]
        for element in f.elements_of.get((scope, name), []):
            values, element_how = self._values(f, scope, element, None, depth + 1)
            found += [("e", node) for kind, node in values if kind == "i"]
            how = _weakest(how, element_how)
        return found, how

    def _passed(self, f: _File, function: str, parameter: str, depth: int) -> tuple[list[Value], str]:
        """What the callers in the corpus pass to an untyped parameter of a function (inferred)."""
        if depth > _MAX_DEPTH:
            self._cuts += 1
            return [], _CERTAINTY[0]
        if function not in f.parameters:
            return [], _CERTAINTY[0]
        positional, keywords, bound = f.parameters[function]
        if parameter not in positional and parameter not in keywords:
            return [], _CERTAINTY[0]
        targets = {n.id for n in self.functions.get((f.record.source, function), [])}
        owner, _, last = function.rpartition(".")
        names = [last, owner.rpartition(".")[2]] if last == "__init__" else [last]  # C(...) runs C.__init__
        values: list[Value] = []
        for site, caller, line, callee in (s for name in names for s in self.sites.get(name, [])[:_MAX_SITES]):
            if not targets.intersection(n.id for n, _ in self._site(site, caller, line, callee)):
                continue
            receiver = self._binding(site, caller, line, callee, depth) if not bound else ""
            given = site.arguments.get((caller.id, line, callee.rpartition(".")[2]))
            if given is None and not receiver:  # no readable argument
                continue
            passed, named = given or ([], {})
            offset = int(bool(receiver) or (bound and not self._through_class(site, caller.name, callee)))
            index = positional.index(parameter) - offset if parameter in positional else -1
            if receiver and index == -1 and parameter in positional:
                expression = receiver  # a function a class body binds, called on an instance: it comes first
            else:
                expression = passed[index] if 0 <= index < len(passed) else named.get(parameter, "")
            if expression:
                values += self._values(site, caller.name, expression, line, depth + 1)[0]
                values += self._self_given(site, caller.name, expression)
        return list(dict.fromkeys(values)), "inferred"

    def _self_given(self, f: _File, scope: str, expression: str) -> list[Value]:
        """The subclasses' instances a method may pass as `self` (argparse's ``_ActionsContainer.
        add_mutually_exclusive_group`` makes a ``_MutuallyExclusiveGroup(self)``, self being a parser or
        a group): those of each subclass that runs the method (`_runs_from`)."""
        if not expression.isidentifier() or self._self_alias(f, scope, expression) != "self":
            return []
        key = (f.record.source, scope)
        if key not in self._given_memo:
            own = self._class_at(f.record.source, scope)
            running: list[Value] = (
                [("i", sub) for sub in self._descendants(own) if self._runs_from(own, scope, sub)] if own else []
            )
            self._given_memo[key] = running if len(running) <= _MAX_SUBCLASSES else []
        return self._given_memo[key]

    def _binding(self, f: _File, caller: NameNode, line: int, callee: str, depth: int) -> str:
        """The receiver of a call on an instance (``msg.walk()``) that runs a plain function, which a class
        body binds as a method (``from email.iterators import walk``): it is passed first; "" otherwise."""
        receiver = callee.rpartition(".")[0]
        if not receiver:
            return ""
        values, _ = self._values(f, caller.name, receiver, line, depth + 1)
        return receiver if any(kind == "i" for kind, _ in values) else ""

    def _site(self, f: _File, caller: NameNode, line: int, callee: str) -> list[tuple[NameNode, str]]:
        """The functions one call site runs, memoised (empty while it is being resolved)."""
        key = (caller.id, line, callee)
        if key not in self._sites_memo:
            self._sites_memo[key] = []
            self._sites_memo[key] = self._resolve_call(f, caller, line, callee)
        return self._sites_memo[key]

    def _through_class(self, f: _File, scope: str, callee: str) -> bool:
        """Whether a call names a method through its class (``Base.init(self, x)``: self is passed)."""
        receiver = callee.rpartition(".")[0]
        if not receiver or "(" in receiver or receiver in ("self", "cls"):
            return False
        found, _ = self._python_target(f, _scopes(scope), receiver)
        return any(isinstance(t, ClassNode) for t in found)

    def _module_path(
        self, f: _File, scope: str, segments: list[tuple[str, bool]], depth: int
    ) -> tuple[list[Value], str, list[tuple[str, bool]]]:
        """The longest leading dotted name that names functions or classes of the corpus, else an
        imported module-level variable."""
        plain = next((i + 1 for i, (_, called) in enumerate(segments) if called), len(segments))
        for cut in range(plain, 0, -1):
            targets, _ = self._python_target(f, _scopes(scope), ".".join(n for n, _ in segments[:cut]))
            if targets:
                values: list[Value] = [("c" if isinstance(t, ClassNode) else "f", t) for t in targets]
                how = _CERTAINTY[0]
                if segments[cut - 1][1]:
                    values, how = self._called(values, how, depth)
                return values, how, segments[cut:]
        if modules := self._modules(f, [n for n, _ in segments[:plain]]):
            return [("m", m) for m in modules[1]], _CERTAINTY[0], segments[modules[0] :]
        values, how = self._imported_variable(f, segments[0][0], depth)
        if values and segments[0][1]:
            values, how = self._called(values, how, depth)
        return values, how, segments[1:] if values else []

    def _defined_in(self, source: str, name: str) -> list[NameNode | ClassNode]:
        """The module-level functions and classes of a file named so."""
        return [*self.functions.get((source, name), []), *self.classes.get((source, name), [])]

    def _modules(self, f: _File, names: list[str]) -> tuple[int, list[FileNode]] | None:
        """The files of the longest leading dotted name that the file's imports make a module of the corpus
        (``import email.base64mime``, ``from email import quoprimime``), and how many names it takes; None
        when none does. Such a module is a value: a function returns it (``Charset._get_encoder``)."""
        for cut in range(len(names), 0, -1):
            for module, attr in f.imports.get(names[0], []):
                dotted = ".".join(p for p in (module if attr is None else f"{module}.{attr}", *names[1:cut]) if p)
                if sources := self.by_module.get(dotted):
                    return cut, [self.files[source].record for source in sources]
        return None

    def _imported_variable(self, f: _File, name: str, depth: int) -> tuple[list[Value], str]:
        """What a module-level variable imported by name (``from m import compat32``) holds."""
        values: list[Value] = []
        how = _CERTAINTY[0]
        for module, attr in f.imports.get(name, []):
            if attr is None:
                continue
            for source in self.by_module.get(module, []):
                target = self.files[source]
                for expression, _, _ in target.types.get(("", attr), []):
                    found, found_how = (
                        self._values(target, "", expression, None, depth + 1) if expression else ([], how)
                    )
                    values, how = values + found, _weakest(how, found_how)
        return values, how

    def _local(self, f: _File, scope: str, name: str) -> tuple[str, list[tuple[str, int, int]]] | None:
        """The scope (the innermost enclosing function, or the module) that binds a name, and its facts."""
        for where in _enclosing(scope):
            if entries := f.types.get((where, name)):
                return where, entries
        return None

    def _self_alias(self, f: _File, scope: str, name: str) -> str:
        """``self`` (``cls``) for the first parameter of a method that names it otherwise (``__self``)."""
        local = self._local(f, scope, name) if name not in ("self", "cls") else None
        aliases = {e for e, _, _ in local[1] if e} if local is not None and local[0] == scope else set()
        return aliases.pop() if aliases in ({"self"}, {"cls"}) else name

    def _typed(self, f: _File, scope: str, name: str) -> bool:
        """Whether a name is a local of the scope with facts (then an unknown result is no guess); an
        element of a container is no such fact (what it holds is seldom known)."""
        local = self._local(f, scope, name)
        return local is not None and any(e and not e.endswith(".[]") for e, _, _ in local[1])

    def _attribute(
        self, values: list[Value], name: str, how: str, depth: int, subclassed: bool = False
    ) -> tuple[list[Value], str]:
        """The values of `.name` on each value: an attribute's facts, a property's return, a method,
        a nested class; `__class__` of an instance is its class. `subclassed` (``self.x``): also what
        the subclasses assign to it in their class bodies (inferred), as self may be one of them."""
        found: list[Value] = []
        for kind, node in values:
            if isinstance(node, FileNode):  # a module: what it defines under that name
                found += [("c" if isinstance(n, ClassNode) else "f", n) for n in self._defined_in(node.source, name)]
                continue
            if not isinstance(node, ClassNode) or kind == "e":
                continue
            if name == "__class__" and kind == "i":
                found.append(("c", node))
                continue
            facts = self._field(node, name, instance=kind == "i")
            if facts and subclassed:
                shadowing = [fact for sub in self._descendants(node) for fact in self._class_level(sub, name)]
                facts, how = facts + shadowing, _weakest(how, "inferred") if shadowing else how
            for owner, scope, expression in facts:
                more, found_how = self._values(owner, scope, expression, None, depth + 1)
                found, how = found + more, _weakest(how, found_how)
            if facts:
                continue
            for method in self._method(node, name):
                if kind == "i" and self._property_kind(method) == "get":
                    more, how = self._called([("f", method)], how, depth)
                    found += more
                else:
                    found.append(("f", method))
            found += [("c", c) for c in self.classes.get((node.source, f"{node.name}.{name}"), [])]
        return found, how

    def _field(self, cls: ClassNode, name: str, instance: bool) -> list[tuple[_File, str, str]]:
        """The facts of an attribute of a class or its instances, from the first class in the MRO
        that assigns it: (file, scope, expression)."""
        for owner in self.mro(cls):
            f = self.files.get(owner.source)
            entries = f.fields.get((owner.name, name)) if f is not None else None
            if entries:
                return [(f, scope, e) for scope, e, class_level in entries if instance or class_level]  # type: ignore[misc]
        return []

    def _class_level(self, cls: ClassNode, name: str) -> list[tuple[_File, str, str]]:
        """What a class's own body assigns to an attribute: (file, scope, expression)."""
        f = self.files.get(cls.source)
        entries = f.fields.get((cls.name, name), []) if f is not None else []
        return [(f, scope, e) for scope, e, class_level in entries if class_level]  # type: ignore[misc]

    def _called(self, values: list[Value], how: str, depth: int, item: int | None = None) -> tuple[list[Value], str]:
        """What calling each value gives: an instance of a class, what a function returns (`item`: at
        that position of the tuples it returns)."""
        found: list[Value] = []
        for kind, node in values:
            if kind == "c" and isinstance(node, ClassNode) and item is None:
                found.append(("i", node))
            elif kind == "f" and isinstance(node, NameNode) and (f := self.files.get(node.source)) is not None:
                returned = f.returns.get(node.name, []) if item is None else f.items.get((node.name, item), [])
                for expression in returned:
                    more, found_how = self._values(f, node.name, expression, None, depth + 1)
                    # a declared return (-> X) is as certain as any annotation; what a body returns is inferred
                    declared = found_how if expression.startswith(":") else _weakest(found_how, "inferred")
                    found, how = found + more, _weakest(how, declared)
        return found, how

    def _class_at(self, source: str, qualname: str) -> ClassNode | None:
        """The class of a method, or of the method a nested function is defined in (its `self`)."""
        while True:
            found = self.classes.get((source, qualname.rpartition(".")[0]))
            if found or ".<locals>." not in qualname:
                return found[0] if found else None
            qualname = qualname[: qualname.rfind(".<locals>.")]

    def _overrides(self, cls: ClassNode, name: str) -> list[NameNode]:
        """The methods of that name defined in the subclasses of a class, at any depth, and in the mixins
        whose chain of ``super().name()`` ends in the class's method (`_chain_end`)."""
        subclasses = [*self._descendants(cls), *self._partners(cls, name)]
        return [n for sub in subclasses for n in self._own_method(sub, name)]

    def _chain_end(self, own: ClassNode, name: str) -> list[NameNode]:
        """Where ``super().name()`` goes in a mixin whose bases lack the method. Where the corpus combines
        the mixin with other bases (``class ThreadingTCPServer(ThreadingMixIn, TCPServer)``), the method
        after it in each such class's order. Where it does not, a class made at run time puts the partner
        after it (email's headers: ``type(name, (DateHeader, BaseHeader), {})``, where ``DateHeader.init``
        calls ``super().init``): the methods of that name in the file's other classes (outside the mixin's
        bases and subclasses, not local to a function) that end such a chain, calling no ``super()`` of it,
        and whose classes lie on one line of inheritance. None where a base of the mixin is not the
        corpus's (it may define the method)."""
        if name.startswith("__") or not all(self._bases_known(c) for c in self.mro(own)):
            return []
        orders = [self.mro(sub) for sub in self._descendants(own) if len(self._named_bases(sub)) > 1]
        if orders:  # the method after the mixin's in each combining class's order
            return list(dict.fromkeys(n for o in orders for n in self._first_defining(o[o.index(own) + 1 :], name)))
        family = {c.id for c in (*self.mro(own), *self._descendants(own))}
        ends: dict[ClassNode, NameNode] = {}
        for n in self._methods_named(own.source, name):
            owner = self.classes.get((n.source, n.name.rpartition(".")[0]), [])
            if owner and owner[0].id not in family and f"super().{name}" not in self._called_or_read(n):
                ends[owner[0]] = n
        line = sorted(ends, key=lambda c: len(self.mro(c)))
        if any(lower not in self.mro(upper) for lower, upper in zip(line, line[1:])):
            return []  # partners of unrelated classes: no telling which
        return list(ends.values())

    def _named_bases(self, cls: ClassNode) -> list[str]:
        """The bases a class statement names, but `object`."""
        return [base for name, base in self.files[cls.source].bases if name == cls.name and base != "object"]

    def _methods_named(self, source: str, name: str) -> list[NameNode]:
        """The methods of that name of a file's classes (not functions nested in them)."""
        return [
            n
            for n in self.by_last.get(("python", name), [])
            if n.source == source and ".<locals>." not in n.name and (source, n.name.rpartition(".")[0]) in self.classes
        ]

    def _partners(self, cls: ClassNode, name: str) -> list[ClassNode]:
        """The mixins whose ``super().name()`` chain ends in the method `cls` defines, and their subclasses:
        a call of that method on `cls` may run theirs (email's ``BaseHeader.__new__`` calls ``self.init``,
        which is ``DateHeader.init`` on a date header). A class inheriting the method is no partner's:
        pydoc's ``DocServer`` is an ``HTTPServer``, never a ``ThreadingMixIn``."""
        if (mixins := self._mixin_memo.get(name)) is None:
            mixins = self._mixin_memo[name] = self._mixins(name)
        if not mixins:
            return []
        ends = {n.id for n in self._own_method(cls, name)}
        found = [sub for mixin, chain_ends in mixins if ends & chain_ends for sub in (mixin, *self._descendants(mixin))]
        return list(dict.fromkeys(found))

    def _mixins(self, name: str) -> list[tuple[ClassNode, set[str]]]:
        """The classes whose method `name` calls ``super().name()`` that their bases lack, each with the
        ids of the methods where that call goes (`_chain_end`)."""
        found = []
        for _, caller, _, callee in self.sites.get(name, []):
            mixin = self._class_at(caller.source, caller.name) if callee == f"super().{name}" else None
            if mixin is None or caller.name != f"{mixin.name}.{name}" or self._method(mixin, name, skip_own=True):
                continue
            if ends := {n.id for n in self._chain_end(mixin, name)}:
                found.append((mixin, ends))
        return found

    def _bases_known(self, cls: ClassNode) -> bool:
        """Whether each base a class names (but `object`) is a class of the corpus."""
        return len(self._named_bases(cls)) == len(self.bases.get(cls.id, []))

    def _reachable(self, own: ClassNode, scope: str, overrides: list[NameNode]) -> list[NameNode]:
        """The overrides a call on `self` in `scope` (a method of `own`, or a function nested in one) can
        run: `self` there is an instance of a subclass only where that subclass inherits the method from
        `own`, or redefines it and calls it back (``super().m()``, ``Base.m(self)``). click's
        ``ClickException.show`` never runs on a ``BadParameter``: ``UsageError`` redefines ``show``."""
        kept = []
        for override in overrides:
            subclass = self.classes.get((override.source, override.name.rpartition(".")[0]), [])
            if not subclass or self._runs_from(own, scope, subclass[0]):
                kept.append(override)
        return kept

    def _runs_from(self, own: ClassNode, scope: str, subclass: ClassNode) -> bool:
        """Whether `self` in `scope` (a method of `own`, or a function nested in one) may be an instance
        of a subclass: where it inherits the method or redefines it and calls it back."""
        method = scope[len(own.name) + 1 :].partition(".")[0]
        if not scope.startswith(f"{own.name}.") or not method:
            return True
        runs = self._method(subclass, method)
        return not runs or any(self._calls_back(n, own, method) for n in runs)

    def _calls_back(self, function: NameNode, own: ClassNode, method: str) -> bool:
        """Whether a method is own's `method` itself, or a redefinition of it that calls the one it overrides."""
        if function.source == own.source and function.name == f"{own.name}.{method}":
            return True
        back = {f"super().{method}", f"{own.name.rpartition('.')[2]}.{method}"}
        return not back.isdisjoint(self._called_or_read(function))

    def _called_or_read(self, function: NameNode) -> set[str]:
        """The texts a function calls or reads as attributes (``super().label``: a property calls back
        too), memoised per file: read only for the redefinitions `_reachable` meets."""
        if (by_caller := self._reads_memo.get(function.source)) is None:
            by_caller = self._reads_memo[function.source] = defaultdict(set)
            f = self.files.get(function.source)
            for caller_id, _, text in f.calls if f is not None else []:
                by_caller[caller_id].add(text)
            for caller_id, _, text, _ in f.accesses if f is not None else []:
                by_caller[caller_id].add(text)
        return by_caller.get(function.id, set())

    def _descendants(self, cls: ClassNode) -> list[ClassNode]:
        """The subclasses of a class, at any depth, each once (memoised: a deep hierarchy is walked
        once, not at each call on it)."""
        if cls.id in self._subclass_memo:
            return self._subclass_memo[cls.id]
        found: list[ClassNode] = self._subclass_memo.setdefault(cls.id, [])
        seen = {cls.id}
        stack = list(self.subclasses.get(cls.id, []))
        while stack:
            sub = stack.pop()
            if sub.id not in seen:
                seen.add(sub.id)
                found.append(sub)
                stack += self.subclasses.get(sub.id, [])
        return found

    def _bound(self, f: _File, scope: str, name: str) -> bool:
        """Whether a name is a function, class or import of the scopes or the file."""
        return (
            name in f.imports
            or name in ("self", "cls")
            or any(
                (f.record.source, prefix + name) in self.functions or (f.record.source, prefix + name) in self.classes
                for prefix in _scopes(scope)
            )
        )

    def _unique(self, f: _File, name: str) -> list[tuple[NameNode, str]]:
        """A method of an unknown receiver: the one method of that name in the corpus, if there is one
        and no built-in type has a method of that name."""
        if name in _BUILTIN_METHODS:
            return []
        found = self.by_last.get((_family(f.record.lang), name), [])
        methods = [n for n in found if n.name.count(".") and ".<locals>." not in n.name and not name.startswith("__")]
        if len(found) == 1 and not methods and found[0] in self._class_bound().get(name, []):
            methods = found  # email's Message.walk: `from email.iterators import walk` in the class body
        return [(methods[0], "name-only")] if len(found) == 1 and methods else []

    def _class_bound(self) -> dict[str, list[NameNode]]:
        """Module-level functions a class body binds under their own name (``from email.iterators import
        walk`` in ``Message``, or ``walk = walk``): methods of that class by another path; built when first
        asked."""
        if self._bound_memo is None:
            self._bound_memo = defaultdict(list)
            for f in self.files.values():
                for (_, attr), entries in f.fields.items() if f.record.lang == "python" else []:
                    for scope, expression, class_level in entries:
                        if class_level and expression == attr:
                            targets, _ = self._python_target(f, _scopes(scope), attr)
                            self._bound_memo[attr] += [t for t in targets if isinstance(t, NameNode)]
        return self._bound_memo

    def _python_target(self, f: _File, scopes: Sequence[str], text: str) -> tuple[list[NameNode | ClassNode], str]:
        """What a dotted name means in a file where names are looked up under the scope prefixes
        (innermost first), and how it was found: a definition of the file (local) or an import."""
        if self._mros is None or f is not self.files.get(f.record.source):
            return self._python_target_uncached(f, scopes, text)  # the bases being read, or code at hand
        key = (f.record.source, tuple(scopes), text)
        if (known := self._target_memo.get(key)) is None:
            known = self._target_memo[key] = self._python_target_uncached(f, scopes, text)
        return known

    def _python_target_uncached(
        self, f: _File, scopes: Sequence[str], text: str
    ) -> tuple[list[NameNode | ClassNode], str]:
        head, _, rest = text.partition(".")
        for prefix in scopes:
            key = (f.record.source, prefix + head)
            found: list[NameNode | ClassNode] = [*self.functions.get(key, []), *self.classes.get(key, [])]
            if found:
                return (self._members(found, rest) if rest else found), "local"
        return self._module_member(f.record.source, head, 0, rest, f), "import"

    def _module_member(
        self, source: str, name: str, hops: int, rest_of: str = "", file: _File | None = None
    ) -> list[NameNode | ClassNode]:
        """What `name` (then `.rest_of`) is in a module file (`file`, when it is not the corpus's): its
        function or class, or what it imports."""
        f = file or self.files.get(source)
        if f is None or hops > _MAX_HOPS:
            return []
        if not rest_of:
            found = self._defined_in(source, name)
            if found and hops:
                return found
        else:
            classes = self.classes.get((source, name))
            if classes and hops:
                return list(self._members(list(classes), rest_of))
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
        if self._mros is None:  # the bases being read: a class's members may change yet
            return self._dotted_uncached(dotted, hops)
        key = (dotted, hops)
        if (known := self._dotted_memo.get(key)) is None:
            known = self._dotted_memo[key] = self._dotted_uncached(dotted, hops)
        return known

    def _dotted_uncached(self, dotted: str, hops: int) -> list[NameNode | ClassNode]:
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

    def _named_call(
        self, f: _File, source: str, scope: str, callee: str, declared: str | None = None
    ) -> list[tuple[NameNode, str]]:
        """A call in another language: through the receiver's declared type (the caller's own
        class: self), the caller's own class, then by name in tiers."""
        receiver, _, name = callee.rpartition(".")
        own = self._class_at(source, scope)
        if declared is not None:  # Box (declared), Box() (constructed)
            how = "instance" if declared.endswith("()") else "annotation"
            last = declared.removesuffix("()")
            classes, _ = self._tiered(self.classes_by_last.get((_family(f.record.lang), last), []), f.record)
            typed = [(n, "self" if c == own else how) for c in classes for n in self._method(c, name)]
            if typed:
                return typed
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


def _weakest(how: str, other: str) -> str:
    """The less certain of two ways a receiver's type was found."""
    return max(how, other, key=_CERTAINTY.index)


def _marked(found: Sequence[NameNode], tier: str) -> list[tuple[NameNode, str]]:
    return [(n, tier if len(found) == 1 else "ambiguous") for n in found]


def _parse(record: FileNode) -> _File:
    refs = orjson.loads(record.refs)
    imports: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
    stars = []
    for local, module, attr, _ in refs["imports"]:
        if local == "*":
            stars.append(module)
        else:
            imports[local].append((module, attr))
    calls = [(caller, line, callee) for caller, line, callee in refs["calls"]]
    types: dict[tuple[str, str], list[tuple[str, int, int]]] = defaultdict(list)
    for scope, name, expression, first, last in refs.get("types", []):
        types[(scope, name)].append((expression, first, last))
    fields: dict[tuple[str, str], list[tuple[str, str, bool]]] = defaultdict(list)
    for cls, attr, scope, expression, class_level in refs.get("fields", []):
        fields[(cls, attr)].append((scope, expression, bool(class_level)))
    returns: dict[str, list[str]] = defaultdict(list)
    for function, expression in refs.get("returns", []):
        returns[function].append(expression)
    items: dict[tuple[str, int], list[str]] = defaultdict(list)
    for function, position, expression in refs.get("items", []):
        items[(function, position)].append(expression)
    declared: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for line, variable, kind in refs.get("declared", []):
        declared[variable].append((line, kind))
    return _File(
        record,
        dict(imports),
        stars,
        calls,
        [(c, b) for c, b in refs["bases"]],
        dict(types),
        dict(fields),
        dict(returns),
        dict(items),
        [(scope, receiver, element) for scope, receiver, element in refs.get("elements", [])],
        {(function, first): kind for function, first, kind in refs.get("properties", [])},
        {(method, first) for method, first in refs.get("abstract", [])},
        {key for key, entries in types.items() if any(first for _, first, _ in entries)},
        refs.get("accesses", []),
        dict(declared),
        {
            function: (positional, keywords, bool(bound))
            for function, positional, keywords, bound in refs.get("parameters", [])
        },
        refs.get("arguments", []),
    )


def _family(lang: str) -> str:
    return FAMILIES.get(lang, lang)


def _package(file: FileNode) -> str:
    return file.module if file.module is not None else str(Path(file.source).parent)


def _enclosing(scope: str) -> list[str]:
    """A function's qualname, those of the functions enclosing it, then "" (the module)."""
    found = [scope] if scope else []
    while ".<locals>." in scope:
        scope = scope[: scope.rfind(".<locals>.")]
        found.append(scope)
    return [*found, ""]


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
