"""The graph model: node labels, relationship types, store rows (nodes, edges) and content-addressed ids.

The properties of each label and relationship type are typed in pkg.schema."""

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
    FILE = "FILE"  # a code file: its path, language and fingerprint
    CLASS = "CLASS"  # a class, struct, interface, trait or enum
    MODULE = "MODULE"  # a Python module a file imports, by dotted name


class Rel(StrEnum):
    """Relationship types."""

    HAS_IMPL = "HAS_IMPL"  # NAME -> IMPL
    HAS_BLOCK = "HAS_BLOCK"  # IMPL -> each top-level block of its body
    PARENT = "PARENT"  # BLOCK -> each directly nested BLOCK
    NEXT = "NEXT"  # CHUNK -> the following CHUNK of the same file
    JSON_CHILD = "JSON_CHILD"  # PATH -> each child PATH or PATHVALUE
    CONTAINS = "CONTAINS"  # FILE -> CLASS or NAME, CLASS -> nested CLASS or NAME
    CALLS = "CALLS"  # NAME -> each NAME it may call (with the call-site line and how it was resolved)
    IMPORTS = "IMPORTS"  # FILE -> each MODULE it imports, and the FILE the module resolves to
    INHERITS = "INHERITS"  # CLASS -> each base CLASS


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
    """A node as a store row: its properties by name (pkg.schema's record of its label builds and
    reads them) and, once embedded, its unit vector."""

    id: str
    label: Label
    props: dict[str, Any]
    vector: np.ndarray | None = field(default=None, repr=False)

    @property
    def embed_text(self) -> str:
        """Its text (code, a corpus item, a JSON leaf): what it is embedded by, a function's once rearranged
        (pkg.indexing.search_text)."""
        return str(self.props["text"])


@dataclass(frozen=True)
class Edge:
    """A relationship as a store row, between two node ids (pkg.schema's record of its type builds it),
    with its properties by name (none for most types)."""

    src: str
    type: Rel
    dst: str
    props: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class EmbedderInfo:
    """Which embedder built a database, and the dimension of its vectors."""

    name: str
    dim: int


@dataclass(frozen=True)
class Span:
    """A directly nested block of a node: its id and line span (source coordinates)."""

    id: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class SourceRecord:
    """A file the graph was built from, with the fingerprint (content and settings) it was built at."""

    path: str
    fingerprint: str
