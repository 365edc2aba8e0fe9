"""The graph model: node labels, relationship types, nodes, edges and content-addressed ids."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np


class Label(StrEnum):
    """Node labels; those of EMBEDDED_LABELS carry an embedding."""

    NAME = "NAME"  # a function's qualified name
    IMPL = "IMPL"  # a function's full source
    BLOCK = "BLOCK"  # a compound statement inside a function
    ROW = "ROW"  # a corpus item as a whole: a file, or a JSONL row
    CHUNK = "CHUNK"  # a cAST chunk of a file (or of a JSONL row's code fence)
    PATH = "PATH"  # an internal key of a JSON document
    PATHVALUE = "PATHVALUE"  # a primitive leaf of a JSON document: "path = a/b/c ; value = ..."


class Rel(StrEnum):
    """Relationship types."""

    HAS_IMPL = "HAS_IMPL"  # NAME -> IMPL
    HAS_BLOCK = "HAS_BLOCK"  # IMPL -> each top-level block of its body
    PARENT = "PARENT"  # BLOCK -> each directly nested BLOCK
    NEXT = "NEXT"  # CHUNK -> the following CHUNK of the same file
    JSON_CHILD = "JSON_CHILD"  # PATH -> each child PATH or PATHVALUE


#: The labels that a retrieval mode searches by vector, each with its own vector index. NAME and PATH
#: are reached through their edges only: embedding them cost a build a quarter of its vectors.
EMBEDDED_LABELS: tuple[Label, ...] = (Label.IMPL, Label.BLOCK, Label.ROW, Label.CHUNK, Label.PATHVALUE)


def content_id(*parts: object) -> str:
    """A stable id derived from the given parts (same content, same id)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8"))
    return digest.hexdigest()[:32]


def text_hash(text: str) -> str:
    """Hex sha256 of a text, the key of embedding caches."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, eq=False)
class Node:
    """A node with its properties and, once embedded, its unit vector."""

    id: str
    label: Label
    props: dict[str, Any]
    vector: np.ndarray | None = field(default=None, repr=False)

    @property
    def embed_text(self) -> str:
        """What the node is embedded by: its text (code, a corpus item, a JSON leaf)."""
        return str(self.props["text"])


@dataclass(frozen=True)
class Edge:
    """A directed relationship between two node ids."""

    src: str
    type: Rel
    dst: str
