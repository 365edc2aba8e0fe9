"""Call-graph expansion of code hits: the signatures (and docstrings, never bodies) of the functions a
hit calls or that call it, from the CALLS edges, as a comment block under the hit's text."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from enum import StrEnum

from pkg.schema import NameNode
from pkg.stores.base import CallEdge, GraphStore, NodeContext
from retrieval.tokenize import estimate_tokens


class Expand(StrEnum):
    """Which end of a code hit's CALLS edges to show."""

    NONE = "none"
    CALLEES = "callees"  # what the hit calls: the API it relies on
    CALLERS = "callers"  # what calls the hit: how it is used


#: Tokens an expansion may add under one hit. Measured on the 66 functions of the tests' standard-library
#: slice (json, textwrap, heapq, bisect): a commented signature with its docstring's first paragraph
#: takes 33 tokens on average (median 27), a whole function 242 (median 155). So 256 holds some 8
#: signatures, and the expansion adds at most about one function's worth of context per hit.
EXPAND_BUDGET = 256

#: How many same-named functions of one file `find_functions` may return while the NAME of one
#: callee is looked up (`f` also matches `A.f`, `B.f`, ...).
_NAME_MATCHES = 100

#: Line comment of each language ("//" for every supported language but Python).
_COMMENT = {"python": "#"}


def expansions(
    store: GraphStore, hits: Sequence[NodeContext], expand: Expand, budget: int, exclude: Collection[str]
) -> dict[str, str]:
    """For each code hit (by id): the comment block of its callees' or callers' signatures, in
    call-site order, cut to `budget` tokens; functions of the `exclude`d files are left out, and so
    is a hit with nothing to show."""
    if expand is Expand.NONE or not hits:
        return {}
    callers = expand is Expand.CALLERS
    edges = store.calls(sorted({h.function.name_id for h in hits}), callers)
    others = {n.id: n for n in store.nodes(sorted({e.other_id for e in edges})) if isinstance(n, NameNode)}
    others = {i: n for i, n in others.items() if n.source not in exclude}
    signatures = _signatures(store, list(others.values()))
    blocks = {}
    for hit in hits:
        ranked = [e.other_id for e in _ranked(hit, edges, others, callers)]
        block = _block(hit.function.lang, callers, [signatures[i] for i in ranked if i in signatures], budget)
        if block:
            blocks[hit.id] = block
    return blocks


def _ranked(hit: NodeContext, edges: Sequence[CallEdge], others: dict[str, NameNode], callers: bool) -> list[CallEdge]:
    """The hit's edges in call-site order: callees by the line of their first call in the hit (only
    calls inside a BLOCK hit's lines), callers by file and line; never the hit itself."""
    mine = [e for e in edges if e.name_id == hit.function.name_id and e.other_id in others]
    mine = [e for e in mine if e.other_id != hit.function.name_id]
    if callers:
        return sorted(mine, key=lambda e: (others[e.other_id].source, e.line, others[e.other_id].name))
    mine = [e for e in mine if hit.start_line <= e.line <= hit.end_line]
    return sorted(mine, key=lambda e: (e.line, others[e.other_id].name))


def _signatures(store: GraphStore, names: Sequence[NameNode]) -> dict[str, str]:
    """The signature of each function, by NAME id, read from its IMPL; a method's named with its
    class (``def Parser.__init__(self)``); an anonymous function's (a JavaScript arrow function, a
    Go func literal) behind the name it is bound to."""
    # Imported here: its tree-sitter grammars are ~0.1 s of a cold `pkg query` that expands nothing.
    from pkg.code.signatures import signature  # noqa: PLC0415

    found = {}
    for name in names:
        impls = store.contexts(store.find_functions(name.name, name.source, _NAME_MATCHES))
        impl = next((c for c in impls if c.function.name_id == name.id), None)
        if impl is not None:
            text = signature(impl.text, impl.function.lang)
            owner, _, bound = name.name.rpartition(".")
            first, newline, rest = text.partition("\n")
            if bound not in first:
                found[name.id] = f"{bound} = {text}"
            elif owner and not owner.endswith("<locals>") and owner.rpartition(".")[2] not in first:
                # a method, named with its class (a Go method's receiver names it already)
                found[name.id] = first.replace(f"{bound}(", f"{owner}.{bound}(", 1) + newline + rest
            else:
                found[name.id] = text
    return found


def _block(lang: str, callers: bool, signatures: Sequence[str], budget: int) -> str:
    """The comment block of the signatures that fit the budget, in order; empty when none does."""
    comment = _COMMENT.get(lang, "//")
    lines = [f"{comment} {'called by' if callers else 'calls'}:"]
    used = estimate_tokens(lines[0])
    for text in dict.fromkeys(signatures):
        shown = [f"{comment} {line}" for line in text.splitlines()]
        cost = sum(estimate_tokens(line) for line in shown)
        if used + cost > budget:
            break
        lines += shown
        used += cost
    return "\n".join(lines) if len(lines) > 1 else ""
