"""What a function body needs from other files of its package, decided statically (CrossCodeEval's
criterion): the symbols it uses that resolve through its file's imports, or through its class's bases, to a
definition in another file of the package.

Resolved: `import p.m [as z]` then `z.f`; `from p.m import f [as g]` (relative too), followed through
re-exports (`__init__` files importing the name from elsewhere, `*` imports included); `self.`/`cls.`/
`super().` members that the enclosing class inherits from a base defined in another file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pkg.code.syntax_tree import parse_python

#: How many re-exports or bases a name is followed through before giving up (a cycle, or a deep chain).
MAX_HOPS = 6


@dataclass(frozen=True, order=True)
class Needed:
    """A symbol defined in another file: its qualified name (`module.Name` or `module.Class.member`) and
    that file, relative to the package's folder."""

    name: str
    path: str

    @property
    def short(self) -> str:
        """The name as its definition spells it (the last part)."""
        return self.name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class _Binding:
    """What an imported name stands for: a module (`member` empty) or a name looked up in a module."""

    module: str
    member: str = ""


class PackageModules:
    """The modules of one installed package, by dotted name, each parsed once."""

    def __init__(self, package: str, root: Path) -> None:
        self.package = package
        self.root = root

    def module_of(self, path: Path) -> str:
        """The dotted name of a file of the package (`pkg/a/__init__.py` is `pkg.a`)."""
        parts = list(path.relative_to(self.root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        return ".".join([self.package, *parts])

    def file_of(self, module: str) -> Path | None:
        """The file of a module of the package, or None (outside the package, or no such file)."""
        if module != self.package and not module.startswith(self.package + "."):
            return None
        parts = module.split(".")[1:]
        for candidate in (self.root.joinpath(*parts).with_suffix(".py"), self.root.joinpath(*parts, "__init__.py")):
            if parts or candidate.name == "__init__.py":
                if candidate.is_file():
                    return candidate
        return None

    def tree(self, path: Path) -> ast.Module | None:
        return _parsed(path)

    def bindings(self, path: Path) -> dict[str, _Binding]:
        """The names a file's imports (at any depth) bind to modules or members of this package."""
        tree = self.tree(path)
        if tree is None:
            return {}
        found: dict[str, _Binding] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        found[alias.asname] = _Binding(alias.name)
                    else:  # `import p.m` binds `p`; attributes then walk down the modules
                        found[alias.name.split(".")[0]] = _Binding(alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                base = self._absolute(path, node.module, node.level)
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    submodule = f"{base}.{alias.name}"
                    binding = _Binding(submodule) if self.file_of(submodule) else _Binding(base, alias.name)
                    found[alias.asname or alias.name] = binding
        return {name: b for name, b in found.items() if self.file_of(b.module) is not None}

    def _absolute(self, path: Path, module: str | None, level: int) -> str:
        if not level:
            return module or ""
        here = self.module_of(path)
        package = here if path.name == "__init__.py" else here.rpartition(".")[0]
        for _ in range(level - 1):
            package = package.rpartition(".")[0]
        return f"{package}.{module}" if module else package

    def resolve(self, module: str, name: str, hops: int = 0) -> tuple[str, Path, ast.AST] | None:
        """Where `name` looked up in `module` is defined: (its defining module, that file, the definition,
        which carries the name under which it is defined), followed through re-exports; None when it is not
        found in the package."""
        path = self.file_of(module)
        tree = self.tree(path) if path else None
        if path is None or tree is None or hops > MAX_HOPS:
            return None
        definition = _top_level_definitions(tree).get(name)
        if definition is not None:
            return module, path, definition
        for node in _top_level(tree):
            if isinstance(node, ast.ImportFrom):
                base = self._absolute(path, node.module, node.level)
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        return self.resolve(base, alias.name, hops + 1)
                    if alias.name == "*" and (found := self.resolve(base, name, hops + 1)):
                        return found
        return None

    def member(self, module: str, class_name: str, member: str, hops: int = 0) -> tuple[str, Path] | None:
        """The class (qualified `module.Class`) and file defining `member` for instances of `class_name`
        (its own body or its bases, in the package), or None."""
        found = self.resolve(module, class_name)
        if found is None or hops > MAX_HOPS:
            return None
        defining_module, path, cls = found
        if not isinstance(cls, ast.ClassDef):
            return None
        if member in class_members(cls):
            return f"{defining_module}.{cls.name}", path
        for base in cls.bases:
            target = self.base_binding(path, base)
            if target and (inherited := self.member(target.module, target.member, member, hops + 1)):
                return inherited
        return None

    def base_binding(self, path: Path, base: ast.expr) -> _Binding | None:
        """A base class expression as a name to resolve: `Base` (imported or of this file) or `mod.Base`."""
        if isinstance(base, ast.Name):
            return self.bindings(path).get(base.id) or _Binding(self.module_of(path), base.id)
        if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
            module = self.bindings(path).get(base.value.id)
            if module and not module.member:
                return _Binding(module.module, base.attr)
        return None


@cache
def _parsed(path: Path) -> ast.Module | None:
    try:
        return parse_python(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None


def _top_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """A module's statements, those inside top-level `if`/`try` included (version or import guards)."""
    for node in tree.body:
        yield node
        if isinstance(node, ast.If | ast.Try):
            for block in (node.body, node.orelse, getattr(node, "finalbody", []), *_handlers(node)):
                yield from block


def _handlers(node: ast.If | ast.Try) -> list[list[ast.stmt]]:
    return [handler.body for handler in node.handlers] if isinstance(node, ast.Try) else []


def _top_level_definitions(tree: ast.Module) -> dict[str, ast.AST]:
    found: dict[str, ast.AST] = {}
    for node in _top_level(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update((t.id, node) for t in targets if isinstance(t, ast.Name))
    return found


def class_members(cls: ast.ClassDef) -> set[str]:
    """The names a class defines: methods, class attributes, and `self.X` its methods assign."""
    names: set[str] = set()
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    for inner in ast.walk(cls):
        if isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store) and _is_self(inner.value):
            names.add(inner.attr)
    return names


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in {"self", "cls"}


def _is_super(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def needed_symbols(
    modules: PackageModules,
    path: Path,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    enclosing: ast.ClassDef | None,
    statements: list[ast.stmt],
) -> tuple[Needed, ...]:
    """The symbols of other files of the package that `statements` (a body of `function` in `path`) use."""
    bindings = modules.bindings(path)
    found: set[Needed] = set()
    for statement in statements:
        for node in ast.walk(statement):
            target = _symbol(modules, path, bindings, enclosing, node)
            if target is not None and target.path != path.relative_to(modules.root).as_posix():
                found.add(target)
    return tuple(sorted(found))


def _symbol(
    modules: PackageModules,
    path: Path,
    bindings: dict[str, _Binding],
    enclosing: ast.ClassDef | None,
    node: ast.AST,
) -> Needed | None:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in bindings:
        binding = bindings[node.id]
        return _defined(modules, binding.module, binding.member) if binding.member else None
    if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
        return None
    if isinstance(node.value, ast.Name) and node.value.id in bindings:
        binding = bindings[node.value.id]
        if binding.member:
            return None  # `Cls.attr`: the class itself is what the body needs, found as a Name
        module = binding.module
        return _defined(modules, module, node.attr)
    if enclosing is not None and (_is_self(node.value) or _is_super(node.value)):
        if _is_self(node.value) and node.attr in class_members(enclosing):
            return None  # the enclosing class defines it in this file
        for base in enclosing.bases:
            target = modules.base_binding(path, base)
            inherited = modules.member(target.module, target.member, node.attr) if target else None
            if inherited:
                owner, file = inherited
                return Needed(f"{owner}.{node.attr}", file.relative_to(modules.root).as_posix())
    return None


def _defined(modules: PackageModules, module: str, name: str) -> Needed | None:
    found = modules.resolve(module, name)
    if found is None:
        return None
    defining_module, path, definition = found
    defined_as = getattr(definition, "name", name)  # a def or class renamed by `import … as`
    return Needed(f"{defining_module}.{defined_as}", path.relative_to(modules.root).as_posix())
