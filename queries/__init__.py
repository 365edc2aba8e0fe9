"""The Cypher statements of the Neo4j store, one parameterised statement per .cypher file."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

DIRECTORY = Path(__file__).parent
_NAME = re.compile(r"[a-z0-9_]+")


class UnknownQueryError(LookupError):
    """No .cypher file of that name exists in the queries directory."""


@cache
def cypher(name: str) -> str:
    """The text of queries/<name>.cypher, read once."""
    path = DIRECTORY / f"{name}.cypher"
    if not _NAME.fullmatch(name) or not path.is_file():
        known = ", ".join(sorted(p.stem for p in DIRECTORY.glob("*.cypher")))
        raise UnknownQueryError(f"no Cypher query named {name!r} in {DIRECTORY} (known: {known})")
    return path.read_text(encoding="utf-8").strip()
