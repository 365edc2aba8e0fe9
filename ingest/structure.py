"""The structure of one code file: its FILE node, its classes (CLASS), what it imports (MODULE) and
what contains what (CONTAINS), plus the references that only the whole corpus can resolve (calls,
imports, base classes), kept as JSON in the FILE node for the linking pass (ingest.link).

Python is read with ``ast`` (a file ``ast`` rejects gets its FILE node and nothing else); the other
languages with one tree-sitter walk over per-grammar tables. A call is attributed to the innermost
function whose span holds its line; calls outside every function are left out.

``refs`` holds ``{"imports": [[local, module, attr, line]], "calls": [[caller NAME id, line, callee]],
"bases": [[class name, base]]}``: ``callee`` and ``base`` are dotted texts as written (``f``,
``self.m``, ``z.f``, ``x.m``, ``super().m``; ``C().m``, ``self.f().m`` for a method of what a call
returns; ``xs.[].m`` for ``xs[i].m``; ``x.__class__.m`` for ``type(x).m``; ``?.m`` for a method of
another receiver); Python
imports are absolute (relative ones resolved against the file's module), ``attr`` is null for
``import x`` and ``local`` is ``*`` for a star import. Python files add the type facts of
ingest.python_types: ``types``, ``fields``, ``returns``, ``properties``, ``abstract``, ``overloads`` (the
signatures of the ``@overload`` stubs folded into a function) and ``accesses``
(``[[caller NAME id, line, receiver.attr, get|set]]``), ``parameters`` (``[[function, positional
names, keyword-only names, 1 if bound]]``) and ``arguments`` (``[[caller NAME id, line, callee's
last name, positional expressions, [[keyword, expression]]]]``, for what callers pass to untyped
parameters); Java, C#, TypeScript and Go files add
``declared``: ``[[line, variable, type]]`` for the variables and parameters their functions type
(``Box()`` when a constructor gives the type). Apart from ``refs``, a Python file that parses keeps the
names its code uses in ``uses`` (``[[dotted, line]]``, ``[[dotted, line, 1]]`` for a name an import binds;
ingest.name_uses), for definitions context.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node as TsNode

from ingest.name_uses import encoded, python_uses
from ingest.python_types import TypeFacts, Walk, type_facts, walk
from pkg.code.languages import LANGUAGES, node_text
from pkg.code.stubs import first_lines, python_stubs
from pkg.code.syntax_tree import first_line, parser, python_tree
from pkg.graph import Label, content_id, text_hash
from pkg.schema import ClassNode, Contains, FileNode, Imports, ModuleNode, NameNode, NodeRecord, RelRecord


@dataclass
class Structure:
    """What a file declares and refers to, before ids are given."""

    module: str | None = None
    classes: list[tuple[str, int, int]] = field(default_factory=list)  # (qualified name, first, last line)
    bases: list[tuple[str, str]] = field(default_factory=list)  # (class name, base as written)
    imports: list[tuple[str, str, str | None, int]] = field(default_factory=list)
    #: (line, callee as written, first line of the function whose header holds the call, else 0):
    #: a decorator, a default or an annotation runs where the function is defined, not in it
    calls: list[tuple[int, str, int]] = field(default_factory=list)
    facts: TypeFacts | None = None  # Python: what receivers may hold (ingest.python_types)
    declared: list[tuple[int, str, str]] = field(default_factory=list)  # other languages: (line, variable, type)


def file_structure(
    source: str, lang: str, text: str, fingerprint: str, names: Sequence[NameNode], tree: ast.Module | None = None
) -> list[NodeRecord | RelRecord]:
    """The FILE, CLASS and MODULE records of a whole code file, with CONTAINS and FILE→MODULE
    IMPORTS; `names` are the NAME records the file's functions got; `tree`: a Python file's module,
    when the caller parsed it already."""
    if lang == "python" and tree is None:
        tree = python_tree(text)
    walked = walk(tree) if tree is not None else None  # one parse and one walk for every reader below
    found = python_structure(source, text, tree, walked=walked) if lang == "python" else tree_structure(lang, text)
    file_id = content_id(Label.FILE, source)
    function_at = FunctionAt(names)
    calls = [
        [caller.id, line, callee]
        for line, callee, header in found.calls
        if (caller := innermost([n for n in names if n.start_line != header], line) if header else function_at(line))
    ]
    refs: dict[str, object] = {
        "imports": [list(i) for i in found.imports],
        "calls": calls,
        "bases": [list(b) for b in found.bases],
        "stubs": python_stubs(text, tree) if lang == "python" else first_lines(text, found.classes),
        "sha256": text_hash(text),  # definitions context reuses these refs for the file as it was built
    }
    if found.facts is not None:
        refs |= _fact_refs(found.facts, function_at)
    if found.declared:
        refs["declared"] = [list(d) for d in found.declared]
    records: list[NodeRecord | RelRecord] = [
        FileNode(
            id=file_id,
            source=source,
            lang=lang,
            fingerprint=fingerprint,
            module=found.module,
            refs=json.dumps(refs, separators=(",", ":")),
            uses=encoded(python_uses(tree, children=walked.children))
            if tree is not None and walked is not None
            else None,
        )
    ]
    class_ids: dict[str, str] = {}
    for name, start, end in found.classes:
        class_id = content_id(Label.CLASS, source, name, start)
        if name not in class_ids:
            class_ids[name] = class_id
        records.append(ClassNode(id=class_id, source=source, name=name, lang=lang, start_line=start, end_line=end))
        owner = class_ids.get(name.rpartition(".")[0], file_id)
        records.append(Contains(owner, class_id))
    for function in names:
        records.append(Contains(class_ids.get(function.name.rpartition(".")[0], file_id), function.id))
    for module in dict.fromkeys(module for _, module, _, _ in found.imports):
        module_id = content_id(Label.MODULE, source, module)
        records += [ModuleNode(id=module_id, source=source, name=module), Imports(file_id, module_id)]
    return records


def _fact_refs(facts: TypeFacts, function_at: FunctionAt) -> dict[str, object]:
    """The type facts as refs keys; each function's accesses once per (text, kind), at the first line."""
    seen: dict[tuple[str, str, str], int] = {}
    for line, text, kind in facts.accesses:
        if (caller := function_at(line)) is not None:
            key = (caller.id, text, kind)
            seen[key] = min(line, seen.get(key, line))
    return {
        "types": facts.types,
        "fields": facts.fields,
        "returns": facts.returns,
        "items": facts.items,
        "elements": facts.elements,
        "properties": facts.properties,
        "abstract": facts.abstract,
        "overloads": facts.overloads,
        "accesses": [[caller, line, text, kind] for (caller, text, kind), line in seen.items()],
        "parameters": facts.parameters,
        "arguments": [
            [caller.id, line, callee, positional, keywords]
            for line, callee, positional, keywords in facts.arguments
            if (caller := function_at(line)) is not None
        ],
    }


def innermost(names: Sequence[NameNode], line: int) -> NameNode | None:
    """The function with the smallest span holding the line (the later one on a tie), or None."""
    best: NameNode | None = None
    for name in names:
        if name.start_line <= line <= name.end_line and (best is None or _tightness(name) < _tightness(best)):
            best = name
    return best


def _tightness(name: NameNode) -> tuple[int, int]:
    """What innermost() minimizes: the span, then the later start."""
    return name.end_line - name.start_line, -name.start_line


class FunctionAt:
    """innermost() over one file's functions for many lines: each line's function painted once, the
    largest spans first (a call or access at a time rescanned every function: 7% of a build's parse)."""

    def __init__(self, names: Sequence[NameNode]) -> None:
        self.by_line: list[NameNode | None] = [None] * (max((n.end_line for n in names), default=0) + 2)
        for name in sorted(reversed(names), key=_tightness, reverse=True):  # on a full tie the first wins, as there
            self.by_line[name.start_line : name.end_line + 1] = [name] * (name.end_line - name.start_line + 1)

    def __call__(self, line: int) -> NameNode | None:
        return self.by_line[line] if 0 <= line < len(self.by_line) else None


# -- Python -------------------------------------------------------------------------------------
def python_module(path: Path) -> str:
    """The dotted name of a Python file: its stem under the packages (directories with an
    ``__init__.py``) that hold it."""
    parts = [] if path.stem == "__init__" else [path.stem]
    directory = path.parent
    while (directory / "__init__.py").is_file() and directory.name:
        parts.insert(0, directory.name)
        directory = directory.parent
    return ".".join(parts) or path.parent.name


def python_structure(
    source: str, text: str, tree: ast.Module | None = None, types: bool = True, walked: Walk | None = None
) -> Structure:
    """Classes, imports and calls of a Python file, as ``ast`` reads it (`tree` and its `walked` nodes, when
    the caller has them already), and the type facts of its receivers unless `types` is off."""
    path = Path(source)
    found = Structure(module=python_module(path))
    if tree is None and (tree := python_tree(text)) is None:
        return found
    module = found.module or ""
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    walked = walked if walked is not None else walk(tree)
    _PythonReader(found, package, walked.children).visit_scope(tree, "")
    if types:
        found.facts = type_facts(tree, walked)
    return found


class _PythonReader:
    """Walks a module, naming classes as ``__qualname__`` does."""

    def __init__(self, found: Structure, package: str, children: dict[int, list[ast.AST]]) -> None:
        self.found = found
        self.package = package
        self.children = children  # by id(node): walk's listing, shared with the type facts

    def visit_scope(self, node: ast.AST, prefix: str, header: int = 0) -> None:
        for child in self.children[id(node)]:
            self.visit(child, prefix, header)

    def visit(self, node: ast.AST, prefix: str, header: int = 0) -> None:
        """Record what node holds; `header`: the first line of the function whose decorators,
        defaults or annotations node is part of (0 elsewhere)."""
        if isinstance(node, ast.ClassDef):
            name = prefix + node.name
            first = first_line(node)
            self.found.classes.append((name, first, node.end_lineno or node.lineno))
            self.found.bases.extend((name, text) for base in node.bases if (text := dotted(base)))
            for part in (*node.decorator_list, *node.bases, *node.keywords):
                self.visit(part, prefix)
            for statement in node.body:
                self.visit(statement, f"{name}.")
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = first_line(node)
            for part in (*node.decorator_list, node.args, *([node.returns] if node.returns else [])):
                self.visit(part, prefix, first)
            for statement in node.body:
                self.visit(statement, f"{prefix}{node.name}.<locals>.")
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.partition(".")[0]
                module = alias.name if alias.asname else local
                self.found.imports.append((local, module, None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            module = self._absolute(node.module, node.level)
            if module:
                for alias in node.names:
                    attr = None if alias.name == "*" else alias.name
                    self.found.imports.append((alias.asname or alias.name, module, attr, node.lineno))
        elif isinstance(node, ast.Call):
            if callee := dotted(node.func):
                self.found.calls.append((node.lineno, callee, header))
        self.visit_scope(node, prefix, header)

    def _absolute(self, module: str | None, level: int) -> str:
        if not level:
            return module or ""
        base = self.package.split(".") if self.package else []
        base = base[: len(base) - (level - 1)] if level > 1 else base
        return ".".join([*base, *([module] if module else [])])


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def dotted(node: ast.expr) -> str | None:
    """A callee or base as dotted text: ``a.b.c``, ``super().m``, ``?.m`` (receiver of another kind)."""
    parts: list[str] = []
    if isinstance(node, ast.Call) and _is_name(node.func, "type") and len(node.args) == 1:
        return f"{dotted(node.args[0]) or '?'}.__class__"  # type(self)(...): the class of self
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.insert(0, node.id)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super" and parts:
        parts.insert(0, "super()")
    elif isinstance(node, ast.Call) and _is_name(node.func, "type") and len(node.args) == 1 and parts:
        parts.insert(0, f"{dotted(node.args[0]) or '?'}.__class__")  # type(self).m
    elif isinstance(node, ast.Call) and parts and (called := dotted(node.func)) and "?" not in called:
        parts.insert(0, f"{called}()")  # C(...).m(), self.f().m(): a method of what the call returns
    elif isinstance(node, ast.Subscript) and parts and (held := dotted(node.value)) and "?" not in held:
        parts.insert(0, f"{held}.[]")  # xs[i].m(): a method of an element
    elif parts:
        parts.insert(0, "?")
    return ".".join(parts) or None


# -- other languages ----------------------------------------------------------------------------
def _children(*types: str) -> Callable[[TsNode], Iterator[TsNode]]:
    """Base-class finder: the named type identifiers under the node's children of these types."""

    def bases(node: TsNode) -> Iterator[TsNode]:
        for child in node.children:
            if child.type in types:
                yield from _type_names(child)

    return bases


def _type_names(node: TsNode) -> Iterator[TsNode]:
    """The type identifiers under a heritage clause, outside type arguments."""
    if node.type in ("type_arguments", "type_parameters", "arguments"):
        return
    if node.type in ("type_identifier", "identifier", "scoped_type_identifier", "qualified_name"):
        yield node
        return
    if node.type == "generic_name":  # C#: Base<T>
        yield from (c for c in node.children if c.type == "identifier")
        return
    for child in node.children:
        yield from _type_names(child)


@dataclass(frozen=True)
class _Grammar:
    """Where a grammar keeps classes, their bases, calls and the file's package."""

    classes: frozenset[str]
    bases: Callable[[TsNode], Iterator[TsNode]]
    calls: dict[str, Callable[[TsNode], str | None]]
    package: Callable[[TsNode], str | None] = lambda root: None


def _field_text(name: str) -> Callable[[TsNode], str | None]:
    def callee(node: TsNode) -> str | None:
        child = node.child_by_field_name(name)
        return node_text(child) if child is not None else None

    return callee


def _java_call(node: TsNode) -> str | None:
    name = node.child_by_field_name("name")
    receiver = node.child_by_field_name("object")
    if name is None:
        return None
    return node_text(name) if receiver is None else f"{node_text(receiver)}.{node_text(name)}"


def _first_named(*types: str) -> Callable[[TsNode], str | None]:
    """Package finder: the name of the first top-level node of these types."""

    def package(root: TsNode) -> str | None:
        for child in root.children:
            if child.type in types:
                name = child.child_by_field_name("name") or next(
                    (c for c in child.named_children if c.type.endswith(("identifier", "name"))), None
                )
                return node_text(name) if name is not None else None
        return None

    return package


_JS = _Grammar(
    classes=frozenset({"class_declaration", "class", "abstract_class_declaration", "interface_declaration"}),
    bases=_children("class_heritage", "extends_type_clause"),
    calls={"call_expression": _field_text("function")},
)
_C_CALLS = {"call_expression": _field_text("function")}
_GRAMMARS: dict[str, _Grammar] = {
    "javascript": _JS,
    "typescript": _JS,
    "tsx": _JS,
    "java": _Grammar(
        classes=frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}),
        bases=_children("superclass", "super_interfaces", "extends_interfaces"),
        calls={"method_invocation": _java_call},
        package=_first_named("package_declaration"),
    ),
    "csharp": _Grammar(
        classes=frozenset(
            {
                "class_declaration",
                "struct_declaration",
                "interface_declaration",
                "record_declaration",
                "enum_declaration",
            }
        ),
        bases=_children("base_list"),
        calls={"invocation_expression": _field_text("function")},
        package=_first_named("file_scoped_namespace_declaration", "namespace_declaration"),
    ),
    "go": _Grammar(
        classes=frozenset({"type_spec"}),
        bases=lambda node: iter(()),
        calls=_C_CALLS,
        package=_first_named("package_clause"),
    ),
    "rust": _Grammar(
        classes=frozenset({"struct_item", "enum_item", "trait_item", "union_item"}),
        bases=lambda node: iter(()),  # `impl Trait for Type` is read from the impl (see _Tree.walk)
        calls=_C_CALLS,
    ),
    "c": _Grammar(
        classes=frozenset({"struct_specifier", "union_specifier"}), bases=lambda node: iter(()), calls=_C_CALLS
    ),
    "cpp": _Grammar(
        classes=frozenset({"class_specifier", "struct_specifier", "union_specifier"}),
        bases=_children("base_class_clause"),
        calls=_C_CALLS,
    ),
}
_SEPARATORS = re.compile(r"::|->|\?\.")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*")
_LAST_NAME = re.compile(r"[A-Za-z_$~][\w$]*$")


def _callee(text: str) -> str | None:
    """A callee as dotted text (``a.b.f``), or ``?.f`` when only its last name is plain."""
    text = _SEPARATORS.sub(".", re.sub(r"<[^<>]*>", "", text))
    if _DOTTED.fullmatch(text):
        return text
    last = _LAST_NAME.search(text)
    return f"?.{last.group()}" if last else None


#: Nodes that declare typed variables or parameters (Java, C#, TypeScript, Go).
_DECLARATIONS = frozenset(
    {
        "formal_parameter",  # Java
        "local_variable_declaration",  # Java
        "parameter",  # C#
        "variable_declaration",  # C#
        "required_parameter",  # TypeScript
        "optional_parameter",
        "variable_declarator",  # TypeScript (Java's and C#'s are read from their declaration)
        "parameter_declaration",  # Go
        "var_spec",
        "short_var_declaration",
    }
)
_CONSTRUCTED = ("object_creation_expression", "new_expression", "composite_literal")
_TYPE_NAME = re.compile(r"[A-Za-z_$][\w$]*")


def _declared(node: TsNode) -> list[tuple[int, str, str]]:
    """(line, variable, type name) for each variable a declaration types, by its declared type or
    by the constructor it is given (``Box()``: ``var x = new Box()``, ``x := &Box{}``)."""
    line = node.start_point.row + 1
    if node.type == "short_var_declaration":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        names = [c for c in left.named_children] if left is not None else []
        values = [c for c in right.named_children] if right is not None else []
        return [(line, node_text(n), t) for n, v in zip(names, values, strict=False) if (t := _constructed(v))]
    declared = node.child_by_field_name("type")
    kind = _type_name(node_text(declared)) if declared is not None else None
    if node.type in ("local_variable_declaration", "variable_declaration"):  # Java, C#: type then declarators
        found = []
        for d in node.named_children:
            if d.type == "variable_declarator" and (name := d.child_by_field_name("name") or d.named_children[0]):
                value = d.child_by_field_name("value") or next(
                    (c for c in d.named_children if c.type in _CONSTRUCTED), None
                )
                t = kind if kind not in (None, "var") else (_constructed(value) if value is not None else None)
                if t:
                    found.append((line, node_text(name), t))
        return found
    if (
        node.type == "variable_declarator"
        and node.parent is not None
        and node.parent.type
        in (
            "local_variable_declaration",
            "variable_declaration",
        )
    ):
        return []
    named = node.child_by_field_name("name") or node.child_by_field_name("pattern")
    if named is None or named.type not in ("identifier", "field_identifier"):
        return []
    if kind is None and (value := node.child_by_field_name("value")) is not None:
        kind = _constructed(value)
    return [(line, node_text(named), kind)] if kind else []


def _constructed(value: TsNode) -> str | None:
    """``Box()`` for a value that constructs a Box (``new Box()``, ``&Box{}``), or None."""
    if value.type == "unary_expression" and value.named_children:
        value = value.named_children[0]
    if value.type not in _CONSTRUCTED:
        return None
    constructor = value.child_by_field_name("type") or value.child_by_field_name("constructor")
    if constructor is None:
        constructor = next((c for c in value.named_children if c.type in ("identifier", "type_identifier")), None)
    kind = _type_name(node_text(constructor)) if constructor is not None else None
    return f"{kind}()" if kind else None


def _type_name(text: str) -> str | None:
    """The class a type text names: ``: Box``, ``*Box``, ``pkg.Box``, ``Box<T>`` -> Box."""
    text = re.sub(r"<.*", "", text.lstrip(":*& \t")).strip()
    names = _TYPE_NAME.findall(text.rpartition(".")[2])
    return names[0] if len(names) == 1 else None


def tree_structure(lang: str, text: str) -> Structure:
    """Classes, bases and calls of a file in a tree-sitter language; the package (Java, Go, C#)."""
    spec, grammar = LANGUAGES[lang], _GRAMMARS[lang]
    root = parser(spec.grammar).parse(text.encode("utf-8", "surrogatepass")).root_node
    found = Structure(module=grammar.package(root))
    _Tree(lang, grammar, found).walk(root, "", in_function=False)
    return found


class _Tree:
    def __init__(self, lang: str, grammar: _Grammar, found: Structure) -> None:
        self.spec = LANGUAGES[lang]
        self.grammar = grammar
        self.found = found

    def walk(self, node: TsNode, prefix: str, in_function: bool) -> None:
        """Record the classes (outside functions) and calls under node; prefix names its definitions."""
        for child in node.children:
            inner, inside = prefix, in_function
            if child.type in self.spec.file_scopes and (scope := self.spec.own_name(child)):
                prefix = inner = f"{prefix}{scope}."
            if in_function and child.type in _DECLARATIONS:
                self.found.declared += _declared(child)
            if child.type in self.grammar.calls:
                callee = self.grammar.calls[child.type](child)
                if callee and (plain := _callee(callee)):
                    self.found.calls.append((child.start_point.row + 1, plain, 0))
            if child.type in self.spec.functions:
                inside = True
            elif not in_function and child.type in self.grammar.classes and self._has_body(child):
                if name := self._class_name(child):
                    self.found.classes.append((prefix + name, child.start_point.row + 1, child.end_point.row + 1))
                    self.found.bases.extend(
                        (prefix + name, b) for n in self.grammar.bases(child) if (b := _callee(node_text(n)))
                    )
            if child.type in self.spec.containers and not in_function:
                name = self.spec.own_name(child)
                inner = f"{prefix}{name}." if name else prefix
                trait = child.child_by_field_name("trait") if child.type == "impl_item" else None
                if trait is not None and name and (base := _callee(node_text(trait))):
                    self.found.bases.append((prefix + name, base))
            self.walk(child, inner, inside)

    def _has_body(self, node: TsNode) -> bool:
        if node.type == "type_spec":
            kind = node.child_by_field_name("type")
            return kind is not None and kind.type in ("struct_type", "interface_type")
        return node.child_by_field_name("body") is not None or any(
            c.type in ("field_declaration_list", "enum_variant_list", "declaration_list") for c in node.children
        )

    def _class_name(self, node: TsNode) -> str | None:
        name = node.child_by_field_name("name")
        return None if name is None else re.sub(r"<.*", "", node_text(name))
