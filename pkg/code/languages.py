"""The language table: per language, what functions, scopes and blocks look like to ``ingest.extract``.

Conventions shared by every language (see ``ingest.extract`` for the walk):

* A *function* is a node of one of ``functions`` that has a ``body`` and a name:
  its own (``name`` field or a ``names`` rule), else the identifier it is bound
  to by one of ``binders`` (``const f = () => …`` → ``f``). Unnamed functions
  (callbacks, IIFEs, ``defer func() {…}()``, Python lambdas) and bodiless declarations
  (abstract/interface methods, prototypes) are not functions; the walk passes
  through them, so their blocks belong to the enclosing function.
* A *container* (class, struct, interface, enum, record, impl, trait, namespace,
  module) prefixes the qualnames inside it with its name and ``.``; unnamed ones
  (C++ anonymous namespaces, JS anonymous class expressions) add nothing.
  Inside a function, a container with a body is a ``"class"`` block.
* ``blocks`` maps compound statements to their block kind. Kinds used: ``if``
  (the whole else-if/else chain is one block), ``for`` (C-style or condition
  loop; Python's ``for``), ``for in`` (for-in/of, enhanced for, foreach, range, Rust ``for``),
  ``while``, ``do``, ``loop`` (Rust), ``switch`` (statements and expressions),
  ``match`` (Rust, Python), ``try`` (Java try-with-resources included), ``using``,
  ``lock`` (C#), ``synchronized`` (Java), ``with`` (JS, Python), ``select`` (Go), Python's
  ``async for``/``async with``, plus ``def``/``async def`` for nested functions and ``class``
  for containers.
* Python's own parser has the last word on Python: where ``ast`` accepts a file, its functions
  and blocks come from ``ast`` (``exact``), so tree-sitter's mis-parses cannot cost a function or
  a qualname; elsewhere each function found by tree-sitter must also pass ``ast`` (``validate``).
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from tree_sitter import Node

from pkg.code.functions import Block, Extraction, Function
from pkg.code.syntax_tree import dedented, parse_python, python_tree

#: Returns a node's name, or None when it has none.
NameRule = Callable[[Node], str | None]
#: A block kind, or a rule computing it from the node.
Kind = str | Callable[[Node], str]
#: Text put before and after a snippet so that it parses as its file held it.
Frame = tuple[str, str]


@dataclass(frozen=True)
class LanguageSpec:
    """What functions, containers and compound statements are in one tree-sitter grammar."""

    grammar: str
    functions: frozenset[str]
    containers: frozenset[str]
    blocks: Mapping[str, Kind]
    #: Declaration node type -> the field holding the name a function value is bound to.
    binders: Mapping[str, str] = field(default_factory=dict)
    #: List nodes around binder names and values (Go ``a, b := …``), matched by position.
    binder_lists: frozenset[str] = frozenset()
    #: Node type -> how to name it, for nodes not named by their ``name`` field.
    names: Mapping[str, NameRule] = field(default_factory=dict)
    #: Sibling nodes just before a definition that belong to it (decorators, attributes).
    leading: frozenset[str] = frozenset()
    #: Parents whose span a definition takes (C++ ``template <…>`` headers).
    wrappers: frozenset[str] = frozenset()
    #: Declarations naming the scope of everything after them (C# ``namespace A.B;``).
    file_scopes: frozenset[str] = frozenset()
    #: Frames tried in order after the bare text when a function or block cut out of its file is
    #: parsed on its own: members need their container, statements a function body.
    frames: tuple[Frame, ...] = ()
    #: The language's own parser as a check of a function's text that starts at the given line:
    #: why it rejects the text, or None. A function must pass it as well as tree-sitter.
    validate: Callable[[str, int], str | None] | None = None
    #: The language's own parser as the extractor: every function and block when it accepts the
    #: whole source, else None and tree-sitter extracts; its second argument is the source's tree
    #: when the caller parsed it already (a build reads each Python file's tree three ways).
    exact: Callable[[str, ast.Module | None], Extraction | None] | None = None

    def own_name(self, node: Node) -> str | None:
        """Return the name ``node`` declares itself, or None."""
        rule = self.names.get(node.type)
        return rule(node) if rule is not None else field_name(node, "name")


def node_text(node: Node) -> str:
    """Return a node's source text without layout whitespace (``operator ==`` → ``operator==``)."""
    text = (node.text or b"").decode("utf-8", "replace")
    return " ".join(re.sub(r"\s*([^\w\s])\s*", r"\1", text).split())


def field_name(node: Node, name_field: str) -> str | None:
    """Return the text of ``node``'s child in ``name_field``, or None."""
    child = node.child_by_field_name(name_field)
    return node_text(child) if child is not None and child.text else None


def _first_of_type(node: Node, node_type: str) -> Node | None:
    """Return the first node of ``node_type`` in ``node``'s subtree, in pre-order."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == node_type:
            return current
        stack.extend(reversed(current.children))
    return None


def _type_name(node: Node | None) -> str | None:
    """Return the bare name of a type (``*Stack[T]`` → ``Stack``, ``Vec<T>`` → ``Vec``)."""
    if node is None:
        return None
    identifier = _first_of_type(node, "type_identifier")
    return node_text(identifier if identifier is not None else node)


_CLASS: Frame = ("class _ {\n", "\n}")
_METHOD_BODY: Frame = ("class _ {\nvoid _() {\n", "\n}\n}")  # Java and C#: a body inside its class

# --- JavaScript / TypeScript -----------------------------------------------------------

_JS_BLOCKS: dict[str, Kind] = {
    "if_statement": "if",
    "for_statement": "for",
    "for_in_statement": "for in",  # for-in, for-of and for await
    "while_statement": "while",
    "do_statement": "do",
    "switch_statement": "switch",
    "try_statement": "try",
    "with_statement": "with",
}

_JS_BINDERS = {"variable_declarator": "name", "assignment_expression": "left", "pair": "key"}

JAVASCRIPT = LanguageSpec(
    grammar="javascript",
    functions=frozenset(
        {
            "function_declaration",
            "generator_function_declaration",
            "method_definition",  # in classes and object literals
            "function_expression",
            "generator_function",
            "arrow_function",
        }
    ),
    containers=frozenset({"class_declaration", "class"}),
    blocks=_JS_BLOCKS,
    binders={**_JS_BINDERS, "field_definition": "property"},
    frames=(_CLASS,),
)

TYPESCRIPT = replace(
    JAVASCRIPT,
    grammar="typescript",
    containers=JAVASCRIPT.containers | {"abstract_class_declaration", "internal_module", "module"},  # namespace, module
    binders={**_JS_BINDERS, "public_field_definition": "name"},  # TS's class field node
    leading=frozenset({"decorator"}),  # method decorators are siblings in TS class bodies
)

TSX = replace(TYPESCRIPT, grammar="tsx")

# --- Java ------------------------------------------------------------------------------

JAVA = LanguageSpec(
    grammar="java",
    functions=frozenset(
        {
            "method_declaration",
            "constructor_declaration",
            "compact_constructor_declaration",
            "lambda_expression",
        }
    ),
    containers=frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}),
    blocks={
        "if_statement": "if",
        "for_statement": "for",
        "enhanced_for_statement": "for in",
        "while_statement": "while",
        "do_statement": "do",
        "switch_expression": "switch",  # the grammar's node for switch statements too
        "try_statement": "try",
        "try_with_resources_statement": "try",
        "synchronized_statement": "synchronized",
    },
    binders={"variable_declarator": "name"},
    frames=(_CLASS, ("record _() {\n", "\n}"), _METHOD_BODY),  # the record: compact constructors
)

# --- Go --------------------------------------------------------------------------------


def _go_method_name(node: Node) -> str | None:
    """Name a method ``Type.Method`` after its receiver's type."""
    receiver = node.child_by_field_name("receiver")
    name = field_name(node, "name")
    receiver_type = _type_name(receiver) if receiver is not None else None
    return f"{receiver_type}.{name}" if receiver_type and name else name


def _go_for_kind(node: Node) -> str:
    """``for … range`` loops are ``for in``; three-clause, condition and bare loops are ``for``."""
    return "for in" if any(c.type == "range_clause" for c in node.children) else "for"


GO = LanguageSpec(
    grammar="go",
    functions=frozenset({"function_declaration", "method_declaration", "func_literal"}),
    containers=frozenset(),  # methods are declared at top level, named from their receiver
    blocks={
        "if_statement": "if",
        "for_statement": _go_for_kind,
        "expression_switch_statement": "switch",
        "type_switch_statement": "switch",
        "select_statement": "select",
    },
    binders={"short_var_declaration": "left", "var_spec": "name", "assignment_statement": "left"},
    binder_lists=frozenset({"expression_list"}),
    names={"method_declaration": _go_method_name},
    frames=(("func _() {\n", "\n}"),),
)

# --- Rust ------------------------------------------------------------------------------


def _impl_name(node: Node) -> str | None:
    """Name an impl block after its type: ``impl Trait for Type`` holds ``Type.method``."""
    return _type_name(node.child_by_field_name("type"))


RUST = LanguageSpec(
    grammar="rust",
    functions=frozenset({"function_item", "closure_expression"}),
    containers=frozenset({"impl_item", "trait_item", "mod_item"}),
    blocks={
        "if_expression": "if",  # if let too
        "for_expression": "for in",
        "while_expression": "while",  # while let too
        "loop_expression": "loop",
        "match_expression": "match",
    },
    binders={"let_declaration": "pattern"},
    names={"impl_item": _impl_name},
    leading=frozenset({"attribute_item"}),
    frames=(("impl _ {\n", "\n}"), ("fn _() {\n", "\n}")),
)

# --- C / C++ ---------------------------------------------------------------------------


def _scoped_name(node: Node) -> str:
    """Join a C++ scoped name with dots, dropping template arguments (``A<T>::b`` → ``A.b``)."""
    if node.type == "qualified_identifier":
        parts = [node.child_by_field_name("scope"), node.child_by_field_name("name")]
        return ".".join(_scoped_name(part) for part in parts if part is not None)
    if node.type in ("template_type", "template_function"):
        name = node.child_by_field_name("name")
        return _scoped_name(name) if name is not None else node_text(node)
    if node.type == "nested_namespace_specifier":
        return ".".join(_scoped_name(part) for part in node.named_children)
    return node_text(node)


def _declared_name(node: Node) -> str | None:
    """Name a function definition by following its declarator chain to the identifier.

    ``int (*get(int n))(int)``, ``int &A::get() const`` and ``T ns::A<T>::b()`` give
    ``get``, ``A.get`` and ``ns.A.b``.
    """
    current = node.child_by_field_name("declarator")
    while current is not None:
        inner = current.child_by_field_name("declarator")
        if inner is None and current.type in ("parenthesized_declarator", "reference_declarator"):
            inner = next(iter(current.named_children), None)  # these have no declarator field
        if inner is None:
            return _scoped_name(current)
        current = inner
    return None


def _cpp_scope_name(node: Node) -> str | None:
    """Name a namespace or class by its possibly scoped name."""
    name = node.child_by_field_name("name")
    return _scoped_name(name) if name is not None else None


_C_BLOCKS: dict[str, Kind] = {
    "if_statement": "if",
    "for_statement": "for",
    "while_statement": "while",
    "do_statement": "do",
    "switch_statement": "switch",
}

C = LanguageSpec(
    grammar="c",
    functions=frozenset({"function_definition"}),
    containers=frozenset(),  # C structs hold no functions
    blocks=_C_BLOCKS,
    names={"function_definition": _declared_name},
    frames=(("void _(void) {\n", "\n}"),),
)

_CPP_CONTAINERS = ("class_specifier", "struct_specifier", "union_specifier", "namespace_definition")

CPP = LanguageSpec(
    grammar="cpp",
    functions=frozenset({"function_definition", "lambda_expression"}),
    containers=frozenset(_CPP_CONTAINERS),
    blocks={**_C_BLOCKS, "for_range_loop": "for in", "try_statement": "try"},
    binders={"init_declarator": "declarator"},
    names={
        "function_definition": _declared_name,
        **{container: _cpp_scope_name for container in _CPP_CONTAINERS},
    },
    wrappers=frozenset({"template_declaration"}),
    frames=(("struct _ {\n", "\n};"), ("void _() {\n", "\n}")),
)

# --- C# --------------------------------------------------------------------------------


def _accessor_name(node: Node) -> str | None:
    """Name an accessor ``Property.get`` (``this.get`` for indexers, ``Event.add`` for events)."""
    keyword = field_name(node, "name")
    owner = node.parent.parent if node.parent is not None else None
    if owner is None or keyword is None:
        return keyword
    owner_name = "this" if owner.type == "indexer_declaration" else field_name(owner, "name")
    return f"{owner_name}.{keyword}" if owner_name else keyword


def _operator_name(node: Node) -> str | None:
    """Name an operator overload ``operator+``."""
    operator = field_name(node, "operator")
    return f"operator{operator}" if operator else None


def _destructor_name(node: Node) -> str | None:
    """Name a finalizer ``~Type``."""
    name = field_name(node, "name")
    return f"~{name}" if name else None


CSHARP = LanguageSpec(
    grammar="csharp",
    functions=frozenset(
        {
            "method_declaration",
            "constructor_declaration",
            "destructor_declaration",
            "operator_declaration",
            "accessor_declaration",  # get/set/init/add/remove with a body
            "local_function_statement",
            "lambda_expression",
        }
    ),
    containers=frozenset(
        {
            "class_declaration",
            "struct_declaration",
            "interface_declaration",
            "record_declaration",
            "namespace_declaration",
        }
    ),
    blocks={
        "if_statement": "if",
        "for_statement": "for",
        "foreach_statement": "for in",
        "while_statement": "while",
        "do_statement": "do",
        "switch_statement": "switch",
        "switch_expression": "switch",
        "try_statement": "try",
        "using_statement": "using",
        "lock_statement": "lock",
    },
    binders={"variable_declarator": "name"},
    names={
        "accessor_declaration": _accessor_name,
        "operator_declaration": _operator_name,
        "destructor_declaration": _destructor_name,
    },
    file_scopes=frozenset({"file_scoped_namespace_declaration"}),
    frames=(_CLASS, ("class _ {\nobject _ {\n", "\n}\n}"), _METHOD_BODY),  # the middle: property accessors
)

# --- Python ----------------------------------------------------------------------------


def _python_name(node: Node) -> str | None:
    """Name a def or class as Python does: identifiers are NFKC-normalised."""
    name = field_name(node, "name")
    return unicodedata.normalize("NFKC", name) if name else None


def _maybe_async(kind: str) -> Callable[[Node], str]:
    """A kind rule that makes ``kind`` ``async kind`` when the statement has the keyword."""

    def rule(node: Node) -> str:
        return f"async {kind}" if any(child.type == "async" for child in node.children) else kind

    return rule


def python_error(text: str, first_line: int) -> str | None:
    """Why ``ast`` rejects Python ``text``, which starts at line ``first_line``; None if it accepts it."""
    try:
        parse_python(text)
    except SyntaxError:
        try:
            parse_python("\n" * (first_line - 1) + text)  # again, for absolute line numbers
        except SyntaxError as error:
            reason = " ".join(str(error.msg).split())
            return f"{reason} (line {error.lineno})" if error.lineno else reason
    except (ValueError, RecursionError) as error:
        return " ".join(str(error).split())
    return None


#: The block kind of each compound statement `ast` parses, as the tree-sitter specs name it too.
AST_KINDS: dict[type[ast.stmt], str] = {
    ast.If: "if",
    ast.For: "for",
    ast.AsyncFor: "async for",
    ast.While: "while",
    ast.Try: "try",
    ast.TryStar: "try",
    ast.With: "with",
    ast.AsyncWith: "async with",
    ast.Match: "match",
    ast.FunctionDef: "def",
    ast.AsyncFunctionDef: "async def",
    ast.ClassDef: "class",
}


_LONE_CR = re.compile(r"\r(?!\n)")


def python_functions(source: str, module: ast.Module | None = None) -> Extraction | None:
    """Every function and block of ``\\n``-separated Python ``source`` as ``ast`` sees them (`module`:
    its tree, when the caller parsed it already), named, spanned and cut as the tree walk does; None
    when ``ast`` rejects the source, or would number its lines otherwise (a lone ``\\r`` ends a line
    for Python)."""
    if _LONE_CR.search(source):
        return None
    if module is None and (module := python_tree(source)) is None:
        return None
    reader = _AstReader(source.split("\n"))
    reader.blocks_under(module, "")
    functions = sorted(reader.functions, key=lambda function: function.start_line)
    return Extraction(functions=tuple(functions), issues=())


class _AstReader:
    """Builds blocks from an ``ast`` module, collecting its functions on the way."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.functions: list[Function] = []

    def blocks_under(self, node: ast.AST, prefix: str) -> tuple[Block, ...]:
        """Return the blocks of the compound statements directly in ``node``'s suites, in source
        order; ``prefix`` is the qualname prefix of definitions there."""
        statements = list(_suite_statements(node, self.lines))
        stubs = overload_stubs(statements)
        return tuple(
            self._block(statement, kind, prefix, function=id(statement) not in stubs)
            for statement in statements
            if (kind := AST_KINDS.get(type(statement))) is not None
        )

    def _block(self, node: ast.stmt, kind: str, prefix: str, function: bool = True) -> Block:
        """Build the block of compound statement ``node``, recording it as a function if it is one
        (and `function`: an ``@overload`` stub is a block of its scope, not a function)."""
        qualname = prefix + getattr(node, "name", "")
        if kind == "class":
            inner_prefix = f"{qualname}."
        elif kind.endswith("def"):
            inner_prefix = f"{qualname}.<locals>."
        else:
            inner_prefix = prefix
        start, end = _first_line(node, self.lines), node.end_lineno or node.lineno
        block = Block(kind, start, end, dedented(self.lines[start - 1 : end]), self.blocks_under(node, inner_prefix))
        if kind.endswith("def") and function:
            self.functions.append(Function.of_block(qualname, block))
        return block


def is_overload(node: ast.AST) -> bool:
    """Whether a definition is an ``@overload`` stub (``overload``, ``typing.overload``, ``t.overload``)."""
    return any(
        (isinstance(d, ast.Name) and d.id == "overload") or (isinstance(d, ast.Attribute) and d.attr == "overload")
        for d in getattr(node, "decorator_list", ())
    )


def overload_stubs(statements: list[ast.stmt]) -> set[int]:
    """The ids of the ``@overload`` stubs among the statements of one suite that an implementation
    (a later definition of the same name, not a stub) follows: they fold into it."""
    stubs: set[int] = set()
    pending: dict[str, list[int]] = {}
    for statement in statements:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            if is_overload(statement):
                pending.setdefault(statement.name, []).append(id(statement))
            else:
                stubs.update(pending.pop(statement.name, []))
    return stubs


def _suite_statements(node: ast.AST, lines: list[str]) -> Iterator[ast.stmt]:
    """Yield the statements directly in the suites of ``node`` (a module or compound statement),
    in source order; an ``elif`` arm is no statement of its own: its suites belong to the ``if``."""
    while True:
        yield from getattr(node, "body", ())
        for part in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            yield from part.body
        orelse: list[ast.stmt] = getattr(node, "orelse", [])
        if not _is_elif(node, orelse, lines):
            yield from orelse
            yield from getattr(node, "finalbody", ())
            return
        node = orelse[0]


def _is_elif(node: ast.AST, orelse: list[ast.stmt], lines: list[str]) -> bool:
    """Whether the ``else`` suite of ``node`` is an ``elif`` arm (an ``if`` spelt ``elif``)."""
    return (
        isinstance(node, ast.If)
        and len(orelse) == 1
        and isinstance(orelse[0], ast.If)
        and lines[orelse[0].lineno - 1].lstrip().startswith("elif")
    )


def _first_line(node: ast.stmt, lines: list[str]) -> int:
    """Return the first line of a statement, counting its decorators from their ``@``."""
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    if not decorators:
        return node.lineno
    line = decorators[0].lineno
    while line > 1 and not lines[line - 1].lstrip().startswith("@"):
        line -= 1  # the expression follows its ``@`` after a line continuation
    return line


PYTHON = LanguageSpec(
    grammar="python",
    functions=frozenset({"function_definition"}),  # lambdas are expressions, never functions
    containers=frozenset({"class_definition"}),
    blocks={
        "if_statement": "if",  # elif and else are clauses of the one node
        "for_statement": _maybe_async("for"),
        "while_statement": "while",
        "try_statement": "try",
        "with_statement": _maybe_async("with"),
        "match_statement": "match",
    },
    names={"function_definition": _python_name, "class_definition": _python_name},
    wrappers=frozenset({"decorated_definition"}),
    validate=python_error,
    exact=python_functions,
)

#: Specs by language name (the tree-sitter-language-pack grammar name).
LANGUAGES: dict[str, LanguageSpec] = {
    spec.grammar: spec for spec in (PYTHON, JAVASCRIPT, TYPESCRIPT, TSX, JAVA, GO, RUST, C, CPP, CSHARP)
}

#: Language name by file extension (case-sensitive: ``.C`` is C++ by convention, so unknown).
EXTENSIONS: dict[str, str] = {
    ".py": "python",
    **dict.fromkeys((".js", ".mjs", ".cjs", ".jsx"), "javascript"),
    ".ts": "typescript",
    ".tsx": "tsx",
    ".java": "java",
    ".go": "go",
    ".rs": "rust",
    **dict.fromkeys((".c", ".h"), "c"),
    **dict.fromkeys((".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"), "cpp"),
    ".cs": "csharp",
}


def language_for(path: Path) -> str | None:
    """Return the language of ``path`` by its extension, or None when it is not supported."""
    return EXTENSIONS.get(path.suffix)
