"""The type facts of a Python file that the linking pass (ingest.link) evaluates to follow receivers:
what each local variable, ``self`` attribute, class attribute and function return may hold, which
functions are properties, and which attribute reads and writes may run one.

A fact's value is an *expression*: a dotted chain as written, each call kept as ``()``
(``C()``, ``self._get_formatter()``, ``ctx.obj``; ``type(x)`` is ``x.__class__``, ``staticmethod(f)``
is ``f``), evaluated in the
scope that wrote it; a leading ``:`` marks an annotation (an instance of what the chain names:
``:Context``, ``:self`` for ``Self``). ``Optional[X]``, ``X | None``, ``Union[...]``, string
annotations and ``type[X]`` (the class itself) are read; a generic container's element type is
kept as ``:X[]`` (``List[X]``, ``Iterator[X]``, ``Tuple[X, ...]``, a mapping's values), other
generics keep their origin. ``.[]`` is an element of what comes before it: ``x[i]``, and the target
of ``for x in xs`` is ``xs.[]``; ``e[]``, a container of what ``e`` holds: ``[e]``, ``[e for ...]``,
``list(xs)`` and ``xs[i:j]`` (``xs.[][]``)
(an empty display returned is left out). ``#i`` ends an item of the tuple a call returns: ``a, b = f()``
binds ``a`` to ``f()#0`` (``a, b = x, y``: to ``x``). A name bound in any other way (a starred or
nested unpacking, an unreadable value) has no facts: it may hold anything. ``x = None`` binds
nothing new. What a scope puts into a receiver (``x.append(e)``, ``x[i] = e``, ``C([e])``) is kept
for the linker to type the elements of user-defined containers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from pkg.code.languages import is_overload
from pkg.code.syntax_tree import first_line

# typing's names, matched by their last part (``typing.Optional``, ``t.Optional``, ``Optional``)
_UNIONS = {"Optional", "Union"}
_WRAPPERS = {"Annotated", "ClassVar", "Final"}
_CLASS_OF = {"type", "Type"}
_SELF = {"Self"}
#: Generic containers, by the position of their element (a mapping's: its value) among the arguments
_CONTAINERS = dict.fromkeys(
    "List list Sequence MutableSequence Iterable Iterator Collection Set set FrozenSet frozenset AbstractSet "
    "MutableSet Deque deque Generator AsyncIterator AsyncIterable".split(),
    0,
) | dict.fromkeys("Dict dict Mapping MutableMapping DefaultDict defaultdict OrderedDict".split(), -1)
_WRAPPED = {"staticmethod", "classmethod"}  # staticmethod(f) in a class body: f
#: Builtins whose one argument's elements are what they hold: ``parts = list(tokens)`` (email's
#: _refold_parse_tree copies a token list, then pops and folds its elements)
_COPIES = {"list", "tuple", "sorted", "reversed", "iter", "set", "frozenset"}
_GETTERS = {"property", "functools.cached_property", "cached_property", "abc.abstractproperty"}
_MAX_UNION = 4  # more alternatives than this is not a type worth following
_PUTS = {"append": 0, "insert": 1}  # the list methods that put one argument in, by its position
Function = ast.FunctionDef | ast.AsyncFunctionDef
#: The nodes _bound and _put read, so that the others (most of a scope's nodes) are skipped by their
#: type without a generator each
_BINDERS = {ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.withitem, ast.ExceptHandler, ast.For, ast.AsyncFor}
_BINDERS |= {ast.comprehension, ast.AugAssign}
_PUTTERS = {ast.Assign, ast.Call}
_SCOPES = {ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda}  # own_nodes does not descend into these
#: The only node types the readers of a scope's nodes look at (binders, puts, narrowing, returns, the
#: functions and classes it defines): own_nodes keeps just these (a seventh of the nodes of 2,500
#: modules), so each reader's pass skips the names, attributes and constants; at 100k functions the
#: facts took 16.1 CPU s with every node read by each reader, 10.7 s with these alone (and accesses'
#: and arguments' passes comparing node types instead of isinstance).
_READ = _BINDERS | _PUTTERS | _SCOPES | {ast.If, ast.Assert, ast.Return, ast.Yield, ast.YieldFrom}
# Fields child_nodes skips: operators and contexts (Load(), Add(), Eq(): singletons no fact reads) and the
# fields that never hold a node (names, numbers, flags); skipping the latter changes nothing found and
# lists the children of 1,000 files (20k functions) in 0.82 CPU s against 1.09.
_SKIPPED_FIELDS = {"ctx", "op", "ops"} | {
    *("id", "attr", "arg", "name", "asname", "module", "rest", "kwd_attrs", "kind", "type_comment"),
    *("level", "conversion", "simple", "is_async"),
}
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}  # by node type: the fields that may hold nodes to visit


@dataclass
class TypeFacts:
    """The facts of one file, as the refs JSON keeps them (see the module docstring)."""

    #: [scope, variable, expression, first line, last line]; lines 0, 0: the whole scope; expression
    #: "": a local name (a parameter, a loop variable) that may hold anything
    types: list[list[str | int]] = field(default_factory=list)
    #: [class, attribute, scope that assigns it, expression, 1 if set in the class body else 0]
    fields: list[list[str | int]] = field(default_factory=list)
    returns: list[list[str]] = field(default_factory=list)  # [function, expression]
    #: [function, position, expression]: what each position of the tuples a function returns holds
    items: list[list[str | int]] = field(default_factory=list)
    #: [scope, receiver expression, element expression]: what a scope puts into a receiver
    elements: list[list[str]] = field(default_factory=list)
    overloads: list[list[str]] = field(default_factory=list)  # [function, signature of one @overload stub]
    properties: list[list[str | int]] = field(default_factory=list)  # [function, first line, get|set|del]
    abstract: list[list[str | int]] = field(default_factory=list)  # [method, first line] for subclasses to define
    accesses: list[tuple[int, str, str]] = field(default_factory=list)  # (line, receiver.attr, get|set)
    #: [function, positional parameter names, keyword-only names, 1 if a call binds the first one]
    parameters: list[list[str | list[str] | int]] = field(default_factory=list)
    #: (line, the callee's last name, positional argument expressions ("" unreadable), [[keyword, expression]])
    arguments: list[tuple[int, str, list[str], list[list[str]]]] = field(default_factory=list)


def expression(node: ast.expr) -> str | None:
    """An expression as a dotted chain with calls kept as ``()``, or None when it is no such chain."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = expression(node.value)
        return f"{base}.{node.attr}" if base else None
    if isinstance(node, ast.Subscript):
        base = expression(node.value)
        # x[i] is an element; a slice, a container of the same elements
        return (f"{base}.[][]" if isinstance(node.slice, ast.Slice) else f"{base}.[]") if base else None
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id == "type" and len(node.args) == 1:
            base = expression(node.args[0])
            return f"{base}.__class__" if base else None
        if isinstance(node.func, ast.Name) and node.func.id in _COPIES and len(node.args) == 1:
            base = expression(node.args[0])
            return f"{base}.[][]" if base else None
        if isinstance(node.func, ast.Name) and node.func.id in _WRAPPED and len(node.args) == 1:
            return expression(node.args[0])
        called = expression(node.func)
        return f"{called}()" if called else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # `list(x) + parts`: a list like the left
        return expression(node.left)
    if (element := _element(node)) is not None:
        text = expression(element)
        return f"{text}[]" if text and (text.endswith(".[]") or not text.endswith("[]")) else None
    return None


def alternatives(node: ast.expr) -> list[str | None]:
    """The expressions a value may be: each branch of ``a if c else b`` and each operand of ``a or b`` (a None
    left out: email's `policy = msg.policy if self.policy is None else self.policy`), else the one expression."""
    if isinstance(node, ast.Constant | ast.JoinedStr):  # a literal: of a built-in type, so no class of the corpus
        return [""]
    if isinstance(node, ast.IfExp):
        branches = [node.body, node.orelse]
    elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        branches = node.values
    else:
        return [expression(node)]
    return [text for branch in branches if not _is_none(branch) for text in alternatives(branch)]


def _element(node: ast.expr) -> ast.expr | None:
    """The one element a comprehension, or a list or set display of one item, holds."""
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
        return node.elt
    if isinstance(node, ast.List | ast.Set) and len(node.elts) == 1 and not isinstance(node.elts[0], ast.Starred):
        return node.elts[0]
    return None


def annotation(node: ast.expr | None) -> list[str]:
    """The expressions an annotation gives (one per union member), None left out."""
    if node is None:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return annotation(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return annotation(node.left) + annotation(node.right)
    if isinstance(node, ast.Subscript):
        origin = _origin(node)
        members = _arguments(node)
        if not members:  # tuple[()]: the empty tuple
            return []
        if origin in _UNIONS:
            return [a for member in members for a in annotation(member)]
        if origin in _WRAPPERS:
            return annotation(members[0])
        if origin in _CLASS_OF:
            return [a[1:] for a in annotation(members[0])]  # the class itself, not an instance
        if origin in _CONTAINERS or (origin in ("Tuple", "tuple") and _is_ellipsis(members[-1])):
            element = members[_CONTAINERS.get(origin, 0)]
            return [f"{a}[]" for a in annotation(element) if not a.endswith("[]") and a != ":self"]
        return annotation(node.value)
    text = expression(node)
    if text is None or text == "None" or "(" in text:
        return []
    return [":self" if text.rpartition(".")[2] in _SELF else f":{text}"]


def _origin(node: ast.Subscript) -> str:
    """The last name of a generic annotation's origin (``t.List[X]``: List)."""
    return (expression(node.value) or "").rpartition(".")[2]


def _arguments(node: ast.Subscript) -> list[ast.expr]:
    """A generic annotation's arguments (``Dict[K, V]``: K, V; ``List[X]``: X)."""
    return node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]


def type_facts(tree: ast.Module, walked: Walk | None = None) -> TypeFacts:
    """The type facts of a parsed module, its attribute accesses and call arguments included;
    `walked`: walk(tree), when the caller listed the nodes already."""
    facts = TypeFacts()
    every, children = walked or walk(tree)
    reader = _Reader(facts, children)
    reader.scope(tree, "", reader.own_nodes(tree))
    facts.accesses = list(accesses(every))
    facts.arguments = list(arguments(every))
    return facts


class _Reader:
    def __init__(self, facts: TypeFacts, children: dict[int, list[ast.AST]]) -> None:
        self.facts = facts
        self.children = children  # by id(node): the tree's nodes' children, listed once

    def own_nodes(self, node: ast.AST) -> list[ast.AST]:
        """The nodes of a scope that a fact is read from (_READ), breadth first, not descending into
        the functions and classes it defines (listed)."""
        nodes = list(self.children.get(id(node)) or child_nodes(node))  # a class body is no node of the tree
        for child in nodes:
            if type(child) not in _SCOPES:
                nodes += self.children[id(child)]
        return [child for child in nodes if type(child) in _READ]

    def scope(self, node: Function | ast.Module, qualname: str, nodes: list[ast.AST], method: bool = True) -> None:
        """The facts of one function (or the module, qualname ""), whose own nodes are `nodes`,
        then of what it defines; `method`: a function of a class body (its self and cls are its class's)."""
        for name, values in _bindings(node, nodes, method=method).items():
            self.facts.types += [[qualname, name, v, 0, 0] for v in values or [""]]
        self.facts.types += [[qualname, *narrowed] for narrowed in _narrowing(node, nodes)]
        self.facts.elements += [[qualname, receiver, element] for receiver, element in _puts(nodes)]
        prefix = f"{qualname}.<locals>." if qualname else ""
        for child in nodes:
            if isinstance(child, ast.ClassDef):
                self.klass(child, prefix + child.name, qualname)
            elif isinstance(child, Function):
                self.function(child, prefix + child.name, self.own_nodes(child))

    def klass(self, node: ast.ClassDef, qualname: str, outer: str) -> None:
        body = ast.Module(body=node.body, type_ignores=[])
        class_level = _bindings(body, self.own_nodes(body), class_body=True)
        # evaluated in the outer scope, where the class's own names are read through the class
        through = qualname.removeprefix(f"{outer}.<locals>.") if outer else qualname
        members = {child.name for child in node.body if isinstance(child, Function | ast.ClassDef)}
        for name, values in class_level.items():
            self.facts.fields += [[qualname, name, outer, f"{through}.{v}" if v in members else v, 1] for v in values]
        self.facts.fields += [[qualname, name, outer, name, 1] for name in _imported_names(node.body)]
        for child in node.body:
            if isinstance(child, ast.ClassDef):
                self.klass(child, f"{qualname}.{child.name}", outer)
            elif isinstance(child, Function):
                method = f"{qualname}.{child.name}"
                if (kind := _property_kind(child)) is not None:
                    self.facts.properties.append([method, first_line(child), kind])
                if _is_abstract(child):
                    self.facts.abstract.append([method, first_line(child)])
                this = child.args.posonlyargs[:1] or child.args.args[:1]
                nodes = self.own_nodes(child)
                if this and this[0].arg not in ("self", "cls") and not _is_static(child):  # def forward(__self)
                    self.facts.types.append([method, this[0].arg, "cls" if _is_classmethod(child) else "self", 0, 0])
                if this:
                    for name, values in _attributes(this[0].arg, nodes).items():
                        self.facts.fields += [[qualname, name, method, v, 0] for v in values]
                self.function(child, method, nodes, method=True)

    def function(self, node: Function, qualname: str, nodes: list[ast.AST], method: bool = False) -> None:
        self.facts.returns += [[qualname, v] for v in _returns(node, nodes)]
        self.facts.items += [[qualname, position, v] for position, v in _items(node, nodes)]
        positional = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
        in_class = method
        if method and _is_classmethod(node):  # cls is bound whether called through the class or not
            positional, method = positional[1:], False
        bound = int(method and not _is_static(node))
        self.facts.parameters.append([qualname, positional, [a.arg for a in node.args.kwonlyargs], bound])
        if is_overload(node):  # a stub: its signature is kept, its return type joins the implementation's
            self.facts.overloads.append([qualname, signature(node)])
            return
        self.scope(node, qualname, nodes, method=in_class)


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """ast.iter_child_nodes as a list, in its order, without its generator per field (a third of the
    type facts' time at 100k functions) and without the operator and context nodes no fact reads."""
    fields = _CHILD_FIELDS.get(type(node))
    if fields is None:
        leaf = isinstance(node, ast.Constant)  # its value is a Python value, never a node
        fields = _CHILD_FIELDS[type(node)] = () if leaf else tuple(f for f in node._fields if f not in _SKIPPED_FIELDS)
    found: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            found.append(value)
        elif isinstance(value, list):
            found += [item for item in value if isinstance(item, ast.AST)]
    return found


class Walk(NamedTuple):
    """A tree's nodes, breadth first as ast.walk yields them, and each one's children by id: listed
    once for every reader of a file (its structure and its type facts)."""

    nodes: list[ast.AST]
    children: dict[int, list[ast.AST]]


def walk(tree: ast.AST) -> Walk:
    """Every node of a tree and its children (see Walk)."""
    nodes = [tree]
    children: dict[int, list[ast.AST]] = {}
    for node in nodes:  # the list grows while it is read: breadth first
        children[id(node)] = below = child_nodes(node)
        nodes += below
    return Walk(nodes, children)


def _imported_names(body: list[ast.stmt]) -> list[str]:
    """The names the imports among a class body's statements bind (``from email.iterators import walk``
    in ``Message``: a method; the file's imports say what each refers to)."""
    return [
        alias.asname or alias.name.partition(".")[0]
        for statement in body
        if isinstance(statement, ast.Import | ast.ImportFrom)
        for alias in statement.names
        if alias.name != "*"
    ]


def _bindings(
    node: ast.AST, nodes: list[ast.AST], class_body: bool = False, method: bool = True
) -> dict[str, list[str]]:
    """Each name the scope binds: its distinct expressions (annotations win over assignments), none
    when one of its values is unreadable (the name is local but may hold anything); a method's self
    and cls are left to its class, a plain function's are parameters like the others."""
    declared: dict[str, list[str]] = {}
    assigned: dict[str, list[str | None]] = {}
    if isinstance(node, Function):
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults) :], args.defaults))
        defaults |= {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
        for arg in [*positional, *args.kwonlyargs]:
            if declared_types := annotation(arg.annotation):
                declared[arg.arg] = declared_types
            elif arg.arg in defaults and not _is_none(defaults[arg.arg]):
                assigned.setdefault(arg.arg, []).extend(alternatives(defaults[arg.arg]))
    for child in nodes:
        if type(child) not in _BINDERS:
            continue
        for name, value, is_annotation in _bound(child):
            if isinstance(value, str):  # an item of a tuple
                assigned.setdefault(name, []).append(value)
            elif is_annotation:
                declared.setdefault(name, []).extend(annotation(value))
            elif value is None or not _is_none(value):
                assigned.setdefault(name, []).extend(alternatives(value) if value is not None else [None])
    if class_body:
        for child in node.body if isinstance(node, ast.Module) else []:
            if isinstance(child, Function | ast.ClassDef):
                assigned.setdefault(child.name, []).append(None)  # a method, not an attribute holding a value
    found = {name: list(dict.fromkeys(values)) for name, values in declared.items()}
    for name, values in assigned.items():
        if name not in found:
            known = list(dict.fromkeys(v for v in values if v))
            found[name] = known if None not in values else []
    if isinstance(node, Function):
        named = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        found |= {a.arg: [] for a in named if a.arg not in found and (not method or a.arg not in ("self", "cls"))}
        found |= {a.arg: [] for a in (args.vararg, args.kwarg) if a is not None}
    return {name: values if len(values) <= _MAX_UNION else [] for name, values in found.items()}


def _bound(node: ast.AST) -> Iterator[tuple[str, ast.expr | str | None, bool]]:
    """(name, value, whether the value is an annotation) for each plain name a node binds; value
    None: bound to something unreadable; a string: an item of the tuple a call returns."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                yield target.id, node.value, False
            else:
                yield from _unpacked(target, node.value)
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        yield node.target.id, node.annotation, True
        if node.value is not None:
            yield node.target.id, node.value, False
    elif isinstance(node, ast.NamedExpr):
        yield node.target.id, node.value, False
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        if isinstance(node.optional_vars, ast.Name):
            yield node.optional_vars.id, node.context_expr, False
        else:
            yield from ((n, None, False) for n in _stored(node.optional_vars))
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name, node.type, True
    elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension) and isinstance(node.target, ast.Name):
        yield node.target.id, ast.Subscript(value=node.iter, slice=ast.Constant(0)), False  # an element
    elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension | ast.AugAssign):
        yield from ((n, None, False) for n in _stored(node.target))


def _unpacked(target: ast.expr, value: ast.expr) -> Iterator[tuple[str, ast.expr | str | None, bool]]:
    """The names an unpacking binds: ``a, b = x, y`` each to its value, ``a, b = f()`` each to its
    item (``f()#0``, ``f()#1``); any other, to something unreadable."""
    names = target.elts if isinstance(target, ast.Tuple | ast.List) else []
    if names and all(isinstance(n, ast.Name) for n in names):
        called = expression(value) if isinstance(value, ast.Call) else None
        if called:
            yield from ((n.id, f"{called}#{i}", False) for i, n in enumerate(names) if isinstance(n, ast.Name))
            return
        if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(names) and not _starred(value.elts):
            yield from ((n.id, v, False) for n, v in zip(names, value.elts) if isinstance(n, ast.Name))
            return
    yield from ((n, None, False) for n in _stored(target))


def _starred(values: list[ast.expr]) -> bool:
    return any(isinstance(v, ast.Starred) for v in values)


def _stored(target: ast.AST) -> list[str]:
    """The plain names a target binds (``a, *b``; not those an attribute or subscript target reads)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for element in target.elts for n in _stored(element)]
    return _stored(target.value) if isinstance(target, ast.Starred) else []


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_empty(node: ast.expr) -> bool:
    """An empty list, tuple, set or dict display: a container with no element to follow."""
    return isinstance(node, ast.List | ast.Tuple | ast.Set | ast.Dict) and not (
        node.keys if isinstance(node, ast.Dict) else node.elts
    )


def _narrowing(node: ast.AST, nodes: list[ast.AST]) -> Iterator[list[str | int]]:
    """[variable, annotation, first, last] for ``if isinstance(x, C):`` bodies and what follows an
    ``assert isinstance(x, C)`` in its block."""
    for child in nodes:
        if isinstance(child, ast.If) and child.body:
            first, last = child.body[0].lineno, child.body[-1].end_lineno or child.body[-1].lineno
        elif isinstance(child, ast.Assert):
            first, last = child.lineno, getattr(node, "end_lineno", None) or child.lineno
        else:
            continue
        for var, cls in _isinstance(child.test):
            narrowed: list[str | int] = [var, cls, first, last]
            yield narrowed


def _isinstance(test: ast.expr) -> list[tuple[str, str]]:
    if not (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and len(test.args) == 2
        and isinstance(test.args[0], ast.Name)
    ):
        return []
    classes = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
    return [(test.args[0].id, f":{text}") for c in classes if (text := expression(c)) and "(" not in text]


def _attributes(this: str, nodes: list[ast.AST]) -> dict[str, list[str]]:
    """The attributes of `this` that a method assigns: each one's distinct expressions, or none when
    one of its values is unreadable (then the attribute may hold anything)."""
    values: dict[str, list[str | None]] = {}
    for node in nodes:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.annotation
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == this:
                if isinstance(node, ast.AnnAssign):
                    values.setdefault(target.attr, []).extend(annotation(value))
                elif value is not None and not _is_none(value):
                    values.setdefault(target.attr, []).extend(alternatives(value))
    return {
        name: list(dict.fromkeys(v for v in found if v))
        for name, found in values.items()
        if None not in found and 0 < len(found) <= _MAX_UNION
    }


def _returns(function: Function, nodes: list[ast.AST]) -> list[str]:
    """What a function returns: its annotation, else the expressions of its return statements when
    every one is readable (a generator returns nothing to follow)."""
    if function.returns is not None:
        return annotation(function.returns)
    found: list[str | None] = []
    for node in nodes:
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return []
        if isinstance(node, ast.Return) and node.value is not None and not _is_none(node.value):
            found += [] if _is_empty(node.value) else alternatives(node.value)
    return [] if None in found or len(set(found)) > _MAX_UNION else list(dict.fromkeys(v for v in found if v))


def _items(function: Function, nodes: list[ast.AST]) -> list[tuple[int, str]]:
    """(position, expression) of what each position of the tuples a function returns holds: from
    ``-> Tuple[X, Y]``, else from its returns when each is a tuple display of one length or a call
    (whose items are passed on: ``f()#0``); a position with an unreadable value holds anything."""
    if function.returns is not None:
        return [(i, a) for i, member in enumerate(_tuple_members(function.returns)) for a in annotation(member)]
    displays: list[list[ast.expr]] = []
    calls: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return []
        if not isinstance(node, ast.Return) or node.value is None or _is_none(node.value):
            continue
        called = expression(node.value) if isinstance(node.value, ast.Call) else None
        if isinstance(node.value, ast.Tuple) and not _starred(node.value.elts):
            displays.append(node.value.elts)
        elif called:
            calls.append(called)
        else:
            return []
    if len({len(display) for display in displays}) != 1:
        return []
    found: list[tuple[int, str]] = []
    for i in range(len(displays[0])):
        values = [expression(display[i]) for display in displays] + [f"{c}#{i}" for c in calls]
        if None not in values and len(set(values)) <= _MAX_UNION:
            found += [(i, v) for v in dict.fromkeys(v for v in values if v)]
    return found


def _tuple_members(node: ast.expr) -> list[ast.expr]:
    """The members of a fixed-length tuple annotation (``Tuple[X, Y]``), else none."""
    if not isinstance(node, ast.Subscript) or _origin(node) not in ("Tuple", "tuple"):
        return []
    members = _arguments(node)
    return [] if not members or _is_ellipsis(members[-1]) else members


def _puts(nodes: list[ast.AST]) -> Iterator[tuple[str, str]]:
    """(receiver, element) for each readable value a scope puts into a readable receiver."""
    for node in nodes:
        if type(node) not in _PUTTERS:
            continue
        for receiver, element in _put(node):
            if not _is_none(element) and (into := expression(receiver)) and (text := expression(element)):
                yield into, text


def _put(node: ast.AST) -> list[tuple[ast.expr, ast.expr]]:
    """(receiver, element) for what a node puts into a container: ``x.append(e)``, ``x.insert(i, e)``,
    ``x.extend([e, f])`` or ``x.extend(other)``, ``x[i] = e``, ``x[i:j] = [e, f]`` and ``C([e, f])``."""
    if isinstance(node, ast.Assign):
        return [
            (target.value, e)
            for target in node.targets
            if isinstance(target, ast.Subscript)
            for e in (_spread(node.value) if isinstance(target.slice, ast.Slice) else [node.value])
        ]
    if not isinstance(node, ast.Call) or node.keywords or _starred(node.args):
        return []
    method = node.func if isinstance(node.func, ast.Attribute) else None
    if method is not None and method.attr in _PUTS and len(node.args) == _PUTS[method.attr] + 1:
        return [(method.value, node.args[-1])]
    if method is not None and method.attr == "extend" and len(node.args) == 1:
        return [(method.value, e) for e in _spread(node.args[0])]
    if len(node.args) == 1 and isinstance(node.args[0], ast.List | ast.Tuple):
        return [(node, e) for e in _spread(node.args[0])]
    return []


def _spread(node: ast.expr) -> list[ast.expr]:
    """The elements of an iterable: the items of a display (not starred), else any element of it."""
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [e for e in node.elts if not isinstance(e, ast.Starred)]
    return [ast.Subscript(value=node, slice=ast.Constant(0))]


def _is_static(function: Function) -> bool:
    return any(expression(d) == "staticmethod" for d in function.decorator_list)


def _is_abstract(function: Function) -> bool:
    """A method only for subclasses to define: ``@abstractmethod``, or a body (past its docstring)
    that only raises NotImplementedError."""
    if any((expression(d) or "").rpartition(".")[2] == "abstractmethod" for d in function.decorator_list):
        return True
    body = function.body[1:] if ast.get_docstring(function) is not None else function.body
    raised = body[0].exc if len(body) == 1 and isinstance(body[0], ast.Raise) else None
    raised = raised.func if isinstance(raised, ast.Call) else raised
    return raised is not None and expression(raised) == "NotImplementedError"


def _is_classmethod(function: Function) -> bool:
    return any(expression(d) == "classmethod" for d in function.decorator_list) or function.name in (
        "__new__",
        "__init_subclass__",
        "__class_getitem__",
    )


def signature(function: Function) -> str:
    """A definition's first line as Python would print it: ``def f(x: int) -> str``."""
    prefix = "async def" if isinstance(function, ast.AsyncFunctionDef) else "def"
    returns = f" -> {ast.unparse(function.returns)}" if function.returns is not None else ""
    return f"{prefix} {function.name}({ast.unparse(function.args)}){returns}"


def _property_kind(function: Function) -> str | None:
    for decorator in function.decorator_list:
        text = expression(decorator) or ""
        if text in _GETTERS:
            return "get"
        if text.endswith((".setter", ".deleter")) and text.count(".") == 1:
            return "set" if text.endswith(".setter") else "del"
    return None


#: The built-ins that read or write an attribute named by a string: getattr(x, "name") reads x.name.
_REFLECTION = {"getattr": "get", "hasattr": "get", "setattr": "set"}


def accesses(every: list[ast.AST]) -> Iterator[tuple[int, str, str]]:
    """(line, receiver.attr, get|set) of each attribute read or written (not called) on a readable
    receiver, also through getattr, hasattr and setattr with a constant name: the accesses that may
    run a property; `every`: a tree's nodes, breadth first (a call comes before its callee)."""
    called: set[int] = set()
    for node in every:  # ast's node types are not subclassed: compared, not isinstance
        if type(node) is ast.Call:
            called.add(id(node.func))
            if reflected := _reflected(node):
                yield node.lineno, *reflected
        elif type(node) is ast.Attribute and id(node) not in called and type(node.ctx) is not ast.Del:
            if text := expression(node):
                yield node.lineno, text, "set" if type(node.ctx) is ast.Store else "get"


def arguments(every: list[ast.AST]) -> Iterator[tuple[int, str, list[str], list[list[str]]]]:
    """(line, callee's last name, positional expressions, [[keyword, expression]]) of each call with
    a readable argument: what a caller may pass to an untyped parameter. Positional arguments stop
    at the first ``*args``; an unreadable one is "". `every`: a tree's nodes."""
    for node in every:
        if type(node) is not ast.Call or not node.args and not node.keywords:
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        starred = next((i for i, a in enumerate(node.args) if isinstance(a, ast.Starred)), len(node.args))
        positional = [expression(a) or "" for a in node.args[:starred]]
        keywords = [[k.arg, text] for k in node.keywords if k.arg and (text := expression(k.value))]
        if callee and (any(positional) or keywords):
            yield node.lineno, callee, positional, keywords


def _reflected(call: ast.Call) -> tuple[str, str] | None:
    """(receiver.attr, get|set) of ``getattr(receiver, "attr"...)`` and the like."""
    kind = _REFLECTION.get(call.func.id) if isinstance(call.func, ast.Name) else None
    if kind is None or len(call.args) < 2:
        return None
    name = call.args[1]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.isidentifier()):
        return None
    receiver = expression(call.args[0])
    return (f"{receiver}.{name.value}", kind) if receiver else None
