"""BM25 indexes over the store's texts, kept on disk beside the database (in its directory)."""

from __future__ import annotations

from pathlib import Path

from pkg.config import BM25_DIR
from pkg.errors import StoreError, StoreNotFoundError
from pkg.graph import Label
from pkg.stores.base import GraphStore
from retrieval.bm25 import BM25Index

#: Lexical units and the label whose texts they index: the paper's "BM25" (whole rows) and
#: "Func-BM25" (functions), and cAST chunks for hybrid retrieval.
UNITS: dict[str, Label] = {"rows": Label.ROW, "func": Label.IMPL, "chunk": Label.CHUNK}


def index_dir(db_dir: Path, unit: str) -> Path:
    """Where the BM25 index of a unit lives."""
    return db_dir / BM25_DIR / unit


def refresh_indexes(store: GraphStore, db_dir: Path) -> dict[str, int]:
    """Rebuild the BM25 index of every unit from what the store now holds (an empty index when it
    holds none of the unit, so no older index outlives its nodes); returns document counts."""
    sizes = {}
    for unit, label in UNITS.items():
        documents = store.texts(label)
        BM25Index.build([doc for doc, _ in documents], [text for _, text in documents]).save(index_dir(db_dir, unit))
        sizes[unit] = len(documents)
    return sizes


def open_index(store: GraphStore, db_dir: Path, unit: str) -> BM25Index:
    """The BM25 index of a unit, checked against the store's node count (a stale index is refused)."""
    try:
        index = BM25Index.load(index_dir(db_dir, unit))
    except StoreNotFoundError:
        raise StoreNotFoundError(
            f"no BM25 index of {unit} in {db_dir}; build the database with `pkg build` (its --db is where"
            " the index lives)"
        ) from None
    expected = store.counts().nodes.get(UNITS[unit].value, 0)
    if len(index.ids) != expected:
        raise StoreError(
            f"the BM25 index of {unit} in {db_dir} has {len(index.ids)} documents but the store has {expected};"
            " run `pkg build` again to refresh it"
        )
    return index
