"""The Cypher statements of the Neo4j store, one parameterised statement per .cypher file.

Values always go as $parameters. What Cypher cannot take as a parameter — a label, a relationship
type, the name of a constraint or index — is a {{placeholder}} of a template file, filled by
template() with plain identifiers that the store takes from the schema table.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

DIRECTORY = Path(__file__).parent
_NAME = re.compile(r"[a-z0-9_]+")
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


class UnknownQueryError(LookupError):
    """No .cypher file of that name exists in the queries directory."""


class TemplateError(ValueError):
    """A statement was asked for with placeholders left unfilled, unknown, or filled with other than
    an identifier."""


@cache
def _text(name: str) -> str:
    path = DIRECTORY / f"{name}.cypher"
    if not _NAME.fullmatch(name) or not path.is_file():
        known = ", ".join(sorted(p.stem for p in DIRECTORY.glob("*.cypher")))
        raise UnknownQueryError(f"no Cypher query named {name!r} in {DIRECTORY} (known: {known})")
    return path.read_text(encoding="utf-8").strip()


def placeholders(name: str) -> set[str]:
    """The placeholders of queries/<name>.cypher (none for a plain statement)."""
    return set(_PLACEHOLDER.findall(_text(name)))


def cypher(name: str) -> str:
    """The text of queries/<name>.cypher, a statement without placeholders (read once)."""
    return template(name)


@cache
def template(name: str, /, **names: str) -> str:
    """The text of queries/<name>.cypher with each {{key}} replaced by names[key], an identifier."""
    wanted = placeholders(name)
    if wanted != names.keys():
        raise TemplateError(f"{name}.cypher takes {sorted(wanted) or 'no placeholders'}, not {sorted(names)}")
    if bad := [value for value in names.values() if not _IDENTIFIER.fullmatch(value)]:
        raise TemplateError(f"{name}.cypher: {bad} are not identifiers")
    return _PLACEHOLDER.sub(lambda match: names[match.group(1)], _text(name))
