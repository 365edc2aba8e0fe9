"""The typed graph schema: its tables cover every label and relationship type, the ingesters' rows are
exactly their records, the README documents exactly the schema, and every label and relationship type
has its Cypher statements while every .cypher file is used."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from ingest.link import link_edges
from ingest.parse import parse_corpus
from pkg.errors import StoreError
from pkg.graph import EMBEDDED_LABELS, Label, Rel
from pkg.schema import (
    NODE_RECORDS,
    REL_RECORDS,
    TEXT_LABELS,
    ClassNode,
    FileNode,
    ImplNode,
    NameNode,
    PathValueNode,
    record_of,
)
from pkg.stores.neo4j_store import CONSTRAINT_NAMES, INDEX_NAMES, LINKS, NEAREST, SOURCE_INDEX_NAMES
from queries import DIRECTORY, TemplateError, cypher, placeholders, template
from tests.conftest import FIXTURES
from tests.store_support import QUERIES as TEST_QUERIES

ROOT = Path(__file__).resolve().parents[1]


def test_the_tables_type_every_label_and_relationship_type() -> None:
    assert list(NODE_RECORDS) == list(Label) and all(r.LABEL is label for label, r in NODE_RECORDS.items())
    assert list(REL_RECORDS) == list(Rel) and all(r.TYPE is rel for rel, r in REL_RECORDS.items())
    assert set(EMBEDDED_LABELS) <= set(TEXT_LABELS)
    assert all(r.properties()[0] == "source" for r in NODE_RECORDS.values())


def test_built_rows_are_exactly_their_records() -> None:
    """Every node a build makes is its record's row, and every edge joins labels its record allows."""
    corpus = parse_corpus([FIXTURES / "corpus", FIXTURES / "json", FIXTURES / "languages"], chunk_size=300)
    labels = {n.id: n.label for n in corpus.nodes}
    assert set(labels.values()) == set(Label)
    for node in corpus.nodes:
        record = record_of(node)
        assert type(record) is NODE_RECORDS[node.label]
        row = record.node()
        assert (row.id, row.label, row.props) == (node.id, node.label, node.props)
    edges = [e for s in corpus.sources for e in s.graph.edges]
    records = [record_of(n) for n in corpus.nodes]
    edges += link_edges(*([r for r in records if isinstance(r, kind)] for kind in (FileNode, ClassNode, NameNode)))
    assert {e.type for e in edges} == set(Rel)
    for edge in edges:
        assert labels[edge.src] in REL_RECORDS[edge.type].SOURCES
        assert labels[edge.dst] in REL_RECORDS[edge.type].TARGETS


def test_records_read_back_from_props() -> None:
    name = NameNode.from_props(
        "n",
        {"id": "n", "source": "a.py", "name": "f", "lang": "python", "start_line": 1, "end_line": 2, "embedding": None},
    )
    assert name == NameNode(id="n", source="a.py", name="f", row=None, lang="python", start_line=1, end_line=2)
    assert name.props() == {
        "source": "a.py",
        "name": "f",
        "row": None,
        "lang": "python",
        "start_line": 1,
        "end_line": 2,
    }
    with pytest.raises(StoreError, match="the IMPL node i has no 'text' property"):
        ImplNode.from_props("i", {"source": "a.py", "lang": "python", "start_line": 1, "end_line": 2})


def _table(heading: str) -> list[list[str]]:
    """The cells of the README table whose header row starts with `heading`, header excluded."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _names(cell: str) -> list[str]:
    """The `code` names of a cell outside its parenthesised remarks."""
    while (plain := re.sub(r"\([^()]*\)", "", cell)) != cell:
        cell = plain
    return re.findall(r"`([^`]+)`", cell)


def test_the_readme_describes_the_node_records() -> None:
    rows = _table("| label | record |")
    documented = {
        _names(label)[0]: (_names(record), _names(props), embedded) for label, record, _, props, embedded in rows
    }
    assert len(rows) == len(documented) and documented.keys() == {label.value for label in NODE_RECORDS}
    for label, record in NODE_RECORDS.items():
        names, props, embedded = documented[label.value]
        assert names == [record.__name__]
        assert sorted(props) == sorted(["id", *record.properties()]), label
        assert (not embedded.startswith("—")) == (label in EMBEDDED_LABELS), label


def test_the_readme_describes_the_relationship_records() -> None:
    rows = _table("| relationship | record |")
    assert [_names(rel)[0] for rel, *_ in rows] == [rel.value for rel in REL_RECORDS]
    for (_, record_cell, ends, props), record in zip(rows, REL_RECORDS.values(), strict=True):
        sources, targets = ends.split("→")
        assert _names(record_cell) == [record.__name__]
        assert _names(sources) == [label.value for label in record.SOURCES]
        assert _names(targets) == [label.value for label in record.TARGETS]
        assert _names(props) == list(record.properties())


# -- Cypher -----------------------------------------------------------------------------------
def _constants(paths: list[Path]) -> set[str]:
    """Every string literal of the Python files."""
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
    return found


def _named_statements(path: Path) -> set[str]:
    """The literal names a module passes to cypher, template, _run or _nearest (in their first argument)."""
    return {
        name.value
        for call in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(call, ast.Call)
        and getattr(call.func, "attr", getattr(call.func, "id", None)) in ("cypher", "template", "_run", "_nearest")
        and call.args
        for name in ast.walk(call.args[0])
        if isinstance(name, ast.Constant) and isinstance(name.value, str)
    }


def test_every_statement_is_used_by_the_store_by_its_literal_name() -> None:
    """The store names each statement it runs literally (in a call or in a table), and runs them all."""
    used = _named_statements(ROOT / "pkg" / "stores" / "neo4j_store.py") | set(LINKS.values()) | set(NEAREST.values())
    assert used == {path.stem for path in DIRECTORY.glob("*.cypher")}
    assert {path.stem for path in TEST_QUERIES.glob("*.cypher")} <= _constants(sorted(TEST_QUERIES.parent.glob("*.py")))


def test_every_label_has_its_statements() -> None:
    assert CONSTRAINT_NAMES.keys() == SOURCE_INDEX_NAMES.keys() == NODE_RECORDS.keys()
    assert set(INDEX_NAMES) == set(EMBEDDED_LABELS)
    for label in NODE_RECORDS:
        node = re.compile(rf"\(n:{label.value}\b")
        assert node.search(template("merge_nodes", label=label.value))
        assert node.search(template("constraint_id", label=label.value, name=CONSTRAINT_NAMES[label]))
        assert node.search(template("index_source", label=label.value, name=SOURCE_INDEX_NAMES[label]))
        # The statements that visit every label spell out one branch per label (each seeks its index).
        assert f"(n:{label.value} {{id: id}})" in cypher("nodes")
        assert f"(n:{label.value} {{source: path}})" in cypher("delete_sources")
        assert f"{label.value}: COUNT {{ (:{label.value}) }}" in cypher("counts")
    for label in EMBEDDED_LABELS:
        assert f"(n:{label.value})" in template("vector_index", label=label.value, name=INDEX_NAMES[label])
    for label in TEXT_LABELS:
        assert f"(n:{label.value})" in template("texts", label=label.value)
    assert set(NEAREST) == {Label.IMPL, Label.BLOCK}


def test_every_relationship_type_has_its_statements() -> None:
    assert list(LINKS) == list(REL_RECORDS)
    for rel, record in REL_RECORDS.items():
        link = cypher(LINKS[rel])
        assert re.search(rf"MERGE \(a\)-\[\w*:{rel.value}\]->\(b\)", link) and "UNWIND $rows AS row" in link
        assert all(f"row.{name}" in link for name in record.properties())
        assert all(f"(a:{label.value} {{id: row.src}})" in link for label in record.SOURCES)
        assert all(f"(b:{label.value} {{id: row.dst}})" in link for label in record.TARGETS)
        assert f"{rel.value}: COUNT {{ ()-[:{rel.value}]->() }}" in cypher("counts")


def test_templates_take_exactly_their_identifiers() -> None:
    assert placeholders("merge_nodes") == {"label"} and placeholders("search") == set()
    with pytest.raises(TemplateError, match=r"takes \['label'\]"):
        cypher("merge_nodes")
    with pytest.raises(TemplateError, match="not identifiers"):
        template("merge_nodes", label="IMPL {id: 1}) DETACH DELETE (n")
    with pytest.raises(TemplateError, match="no placeholders"):
        template("search", label="IMPL")
    assert "{{" not in template("texts", label=PathValueNode.LABEL.value)
