"""Per-language tables telling ``ingest.code_parser`` what functions, scopes and blocks look like.

Conventions shared by every language (see ``ingest.code_parser`` for the walk):

* A *function* is a node of one of ``functions`` that has a ``body`` and a name:
  its own (``name`` field or a ``names`` rule), else the identifier it is bound
  to by one of ``binders`` (``const f = () => …`` → ``f``). Unnamed functions
  (callbacks, IIFEs, ``defer func() {…}()``) and bodiless declarations
  (abstract/interface methods, prototypes) are not functions; the walk passes
  through them, so their blocks belong to the enclosing function.
* A *container* (class, struct, interface, enum, record, impl, trait, namespace,
  module) prefixes the qualnames inside it with its name and ``.``; unnamed ones
  (C++ anonymous namespaces, JS anonymous class expressions) add nothing.
  Inside a function, a container with a body is a ``"class"`` block.
* ``blocks`` maps compound statements to their block kind. Kinds used: ``if``
  (the whole else-if/else chain is one block), ``for`` (C-style or condition
  loop), ``for in`` (for-in/of, enhanced for, foreach, range, Rust ``for``),
  ``while``, ``do``, ``loop`` (Rust), ``switch`` (statements and expressions),
  ``match`` (Rust), ``try`` (Java try-with-resources included), ``using``,
  ``lock`` (C#), ``synchronized`` (Java), ``with`` (JS), ``select`` (Go), plus
  ``def``/``async def`` for nested functions and ``class`` for containers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from tree_sitter import Node

#: Returns a node's name, or None when it has none.
NameRule = Callable[[Node], str | None]
#: A block kind, or a rule computing it from the node.
Kind = str | Callable[[Node], str]


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
)

TYPESCRIPT = replace(
    JAVASCRIPT,
    grammar="typescript",
    containers=JAVASCRIPT.containers
    | {"abstract_class_declaration", "internal_module", "module"},  # namespace, module
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
    containers=frozenset(
        {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}
    ),
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
)

#: Specs by language name (the tree-sitter-language-pack grammar name).
LANGUAGES: dict[str, LanguageSpec] = {
    spec.grammar: spec for spec in (JAVASCRIPT, TYPESCRIPT, TSX, JAVA, GO, RUST, C, CPP, CSHARP)
}

#: Language name by file extension (case-sensitive: ``.C`` is C++ by convention, so unknown).
EXTENSIONS: dict[str, str] = {
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
