"""A JSON document as a DAG of path nodes (PKG paper, section 3.1.2).

The document is a rooted tree of keys; an array contributes its indices to the path. Every key
whose value is an object or an array is a PATH node; every key whose value is a primitive is a
PATHVALUE node whose payload is `path = a/b/c ; value = ...`; JSON_CHILD edges go from a path to
each of its children. The document itself is the root PATH (path ""). A path is the JSON Pointer
of its key without the leading slash (`~` escaped as `~0`, `/` as `~1`), so distinct keys get
distinct paths; the one path two nodes share is "", of the root and of a top-level empty key, and
their ids differ.
"""

from __future__ import annotations

import json
from typing import Any

from ingest.graph_builder import UnitGraph
from pkg.graph import Label, content_id, text_hash
from pkg.schema import JsonChild, PathNode, PathValueNode

#: Keys whose string values name their object: a leaf's titles are those of its ancestors.
TITLE_KEY = "title"


def payload(path: str, value: Any) -> str:
    """The text a PATHVALUE is embedded and returned by."""
    return f"path = {path} ; value = {render(value)}"


def render(value: Any) -> str:
    """A primitive as text: strings as they are, other values as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def json_graph(document: Any, source: str, row: int | None = None) -> UnitGraph:
    """PATH and PATHVALUE nodes of a JSON document, with their JSON_CHILD edges."""
    graph = UnitGraph()
    root = PathNode(id=content_id(Label.PATH, source, row), source=source, row=row, path="")
    graph.add(root)
    _children(document, root.id, "", (), source, row, graph)
    return graph


def _children(
    value: Any, parent: str, pointer: str, titles: tuple[str, ...], source: str, row: int | None, graph: UnitGraph
) -> None:
    if isinstance(value, dict):
        title = value.get(TITLE_KEY)
        inner = (*titles, title) if isinstance(title, str) and title else titles
        items: list[tuple[str, Any]] = [(_escape(str(k)), v) for k, v in value.items()]
    elif isinstance(value, list):
        inner, items = titles, [(str(i), v) for i, v in enumerate(value)]
    else:
        return
    for key, child in items:
        child_pointer = f"{pointer}/{key}"
        child_path = child_pointer[1:]
        node: PathNode | PathValueNode
        if isinstance(child, dict | list):
            node = PathNode(id=content_id(Label.PATH, source, row, child_path), source=source, row=row, path=child_path)
            graph.add(node)
            _children(child, node.id, child_pointer, inner, source, row, graph)
        else:
            text = payload(child_path, child)
            node = PathValueNode(
                id=content_id(Label.PATHVALUE, source, row, child_path, text_hash(text)),
                source=source,
                row=row,
                path=child_path,
                value=render(child),
                text=text,
                titles=" > ".join(inner),
            )
            graph.add(node)
        graph.add(JsonChild(parent, node.id))
