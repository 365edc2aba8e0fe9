"""Extract functions and their compound-statement blocks from source code, in any language of
``pkg.code.languages``, with one tree-sitter walk over each language's entry of the table.

* qualnames join container names with ``.`` (``Outer.Inner.method``,
  ``ns.Class.method``, Go ``Type.Method``, Rust ``Type.method``/``Trait.method``)
  and, like Python's ``__qualname__``, a function defined inside another one is
  ``outer.<locals>.inner``;
* every listed compound statement inside a function is a block, to any depth; a
  nested function is both a ``def`` block of the enclosing one and a function;
* texts are the node's source lines, dedented (see ``pkg.code.syntax_tree.dedented``),
  and spans include leading decorators/attributes;
* a function whose span holds an ERROR or MISSING node, or that the language's own
  parser rejects (``LanguageSpec.validate``), is left out and reported, as is each
  syntax error outside all functions. Never raises for bad code;
* where the language's own parser accepts the whole source (``LanguageSpec.exact``:
  Python's ``ast``), its answer is the extraction, so it is exact even where
  tree-sitter mis-parses.
"""

from __future__ import annotations

import ast

from tree_sitter import Node

from pkg.code.functions import Block, Extraction, Function, SyntaxIssue
from pkg.code.languages import LANGUAGES, LanguageSpec, node_text
from pkg.code.syntax_tree import dedented, describe, end_line, errors_outside, first_error, parser

_MODIFIER_LISTS = frozenset({"modifier", "modifiers", "function_modifiers"})


def extract(source: str, lang: str, tree: ast.Module | None = None) -> Extraction:
    """Extract every function (any depth) and its blocks from ``\\n``-separated ``lang`` source.

    ``lang`` is a key of ``pkg.code.languages.LANGUAGES`` (see ``language_for`` there);
    an unknown one raises ``ValueError``. ``tree``: Python source's ``ast`` module, when the caller
    parsed it already.
    """
    spec = LANGUAGES.get(lang)
    if spec is None:
        raise ValueError(f"unsupported language {lang!r}; expected one of {sorted(LANGUAGES)}")
    exact = spec.exact(source, tree) if spec.exact is not None else None
    return exact if exact is not None else _walk(spec, source)


def _walk(spec: LanguageSpec, source: str) -> Extraction:
    """Extract with tree-sitter and ``spec``."""
    root = parser(spec.grammar).parse(source.encode("utf-8", "surrogatepass")).root_node
    walker = _Walker(spec, source.split("\n"))
    try:
        walker.blocks_under(root, "")
    except RecursionError:
        return Extraction(functions=(), issues=(SyntaxIssue(1, "blocks nested too deeply"),))
    functions = [function for _, function in sorted(walker.functions, key=lambda f: f[0])]
    outside = errors_outside(root, lambda node: node.id in walker.function_ids)
    issues = sorted(walker.issues + outside, key=lambda i: i.line)
    return Extraction(functions=tuple(functions), issues=tuple(issues))


class _Walker:
    """Builds blocks from a tree, collecting valid functions and issues on the way."""

    def __init__(self, spec: LanguageSpec, lines: list[str]) -> None:
        self.spec = spec
        self.lines = lines
        self.functions: list[tuple[int, Function]] = []  # (start byte, function)
        self.issues: list[SyntaxIssue] = []
        self.function_ids: set[int] = set()  # every function node (or its wrapper), parsable or not

    def blocks_under(self, node: Node, prefix: str) -> tuple[Block, ...]:
        """Return the blocks whose nearest enclosing block is ``node``, in source order.

        ``prefix`` is the qualname prefix of definitions found there.
        """
        blocks: list[Block] = []
        stack = list(reversed(node.children))
        while stack:
            child = stack.pop()
            scope = self.spec.own_name(child) if child.type in self.spec.file_scopes else None
            if scope:
                prefix = f"{prefix}{scope}."
            block = self._block(child, prefix)
            if block is not None:
                blocks.append(block)
            else:
                stack.extend(reversed(child.children))
        return tuple(blocks)

    def _block(self, node: Node, prefix: str) -> Block | None:
        """Return the block ``node`` forms, or None if the walk should pass through it."""
        if node.type in self.spec.functions:
            return self._function(node, prefix)
        if node.type in self.spec.containers:
            return self._container(node, prefix)
        kind = self.spec.blocks.get(node.type)
        if kind is None:
            return None
        kind = kind if isinstance(kind, str) else kind(node)
        if kind == "if" and _is_else_arm(node):
            return None
        return self._make(kind, node.start_point.row + 1, node, self.blocks_under(node, prefix))

    def _function(self, node: Node, prefix: str) -> Block | None:
        """Build and record a named function with a body; None for anything else."""
        name = self.spec.own_name(node) or self._bound_name(node)
        if name is None or node.child_by_field_name("body") is None:
            return None
        qualname = prefix + name
        is_async = _is_async(node)
        children = self.blocks_under(node, f"{qualname}.<locals>.")
        block = self._make("async def" if is_async else "def", self._start(node), node, children)
        self._record(node, qualname, block)
        return block

    def _container(self, node: Node, prefix: str) -> Block | None:
        """Build the class block of a container with a body; None for mere references."""
        if node.child_by_field_name("body") is None:
            return None
        name = self.spec.own_name(node) or self._bound_name(node)
        inner_prefix = f"{prefix}{name}." if name else prefix
        return self._make("class", self._start(node), node, self.blocks_under(node, inner_prefix))

    def _make(self, kind: str, start: int, node: Node, children: tuple[Block, ...]) -> Block:
        """Build a block from line ``start`` to ``node``'s last line."""
        end = end_line(node)
        return Block(kind, start, end, dedented(self.lines[start - 1 : end]), children)

    def _record(self, node: Node, qualname: str, block: Block) -> None:
        """Record the function of ``block``, or an issue if it does not parse."""
        spanned = self._wrapper(node)  # a wrapper's errors (a decorator's, a template header's) are the function's
        self.function_ids.add(spanned.id)
        validate = self.spec.validate
        error = (validate(block.text, block.start_line) if validate is not None else None) or _tree_error(spanned)
        if error is not None:
            self.issues.append(SyntaxIssue(block.start_line, f"function {qualname!r} does not parse: {error}"))
            return
        self.functions.append((node.start_byte, Function.of_block(qualname, block)))

    def _bound_name(self, node: Node) -> str | None:
        """Return the identifier a definition is the value of (``const f = () => …``), or None."""
        lists = self.spec.binder_lists
        parent, index = node.parent, 0
        if parent is not None and parent.type in lists:  # Go: a, f := 1, func() {…}
            index = parent.named_children.index(node)
            parent = parent.parent
        name_field = self.spec.binders.get(parent.type) if parent is not None else None
        if parent is None or name_field is None:
            return None
        names = parent.children_by_field_name(name_field)
        if len(names) == 1 and names[0].type in lists:
            names = names[0].named_children
        if index >= len(names) or not names[index].type.endswith("identifier"):
            return None  # destructuring, member or computed targets stay anonymous
        return node_text(names[index])

    def _wrapper(self, node: Node) -> Node:
        """Return the parent whose span a definition takes (a decorated definition, a C++
        template declaration), or the definition itself."""
        parent = node.parent
        return parent if parent is not None and parent.type in self.spec.wrappers else node

    def _start(self, node: Node) -> int:
        """Return the first line of a definition, counting its leading decorators/attributes."""
        start = node = self._wrapper(node)
        sibling = node.prev_sibling
        while sibling is not None and (sibling.type in self.spec.leading or sibling.is_extra):
            if sibling.type in self.spec.leading:
                start = sibling
            sibling = sibling.prev_sibling
        return start.start_point.row + 1


def _tree_error(node: Node) -> str | None:
    """Describe the first ERROR or MISSING node under ``node``, or return None."""
    error = first_error(node)
    return None if error is None else describe(error)


def _is_else_arm(node: Node) -> bool:
    """Whether an ``if`` node is the ``else if`` arm of an enclosing ``if`` (part of its block)."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "else_clause":  # C, C++, JS/TS, Rust
        return True
    return parent.type == node.type and parent.child_by_field_name("alternative") == node


def _is_async(node: Node) -> bool:
    """Whether a function node carries an ``async`` keyword, directly or among its modifiers."""
    return any(
        child.type == "async" or (child.type in _MODIFIER_LISTS and any(c.type == "async" for c in child.children))
        for child in node.children
    )
