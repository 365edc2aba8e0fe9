"""BM25 indexes over the store's texts, kept on disk beside the database (in its directory)."""

from __future__ import annotations

import shutil
from pathlib import Path

from pkg.config import BM25_DIR
from pkg.errors import StoreError, StoreNotFoundError
from pkg.graph import Label
from pkg.progress import Progress, no_progress
from pkg.schema import ImplNode, expect
from pkg.stores.base import GraphStore, missing_part
from retrieval.bm25 import BM25Index
from retrieval.names import function_document

#: Lexical units and the label whose texts they index: the paper's "BM25" (whole rows) and
#: "Func-BM25" (functions), and cAST chunks for hybrid retrieval.
UNITS: dict[str, Label] = {"rows": Label.ROW, "func": Label.IMPL, "chunk": Label.CHUNK}
#: Each unit's folder: functions are in "func-v2" since their documents lead with their names and places
#: (the folder "func" of older builds, text alone, is left unread and removed at the next refresh).
_FOLDERS = {"rows": "rows", "func": "func-v2", "chunk": "chunk"}
_SUPERSEDED = ("func",)


def index_dir(db_dir: Path, unit: str) -> Path:
    """Where the BM25 index of a unit lives."""
    return db_dir / BM25_DIR / _FOLDERS[unit]


def refresh_indexes(store: GraphStore, db_dir: Path, progress: Progress = no_progress) -> dict[str, int]:
    """Rebuild the BM25 index of every unit from what the store now holds (an empty index when it
    holds none of the unit, so no older index outlives its nodes); returns document counts.
    Progress: stage "index", units done of all."""
    sizes: dict[str, int] = {}
    progress("index", 0, len(UNITS))
    for unit in UNITS:
        sizes[unit] = len(build_index(store, unit, db_dir).ids)
        progress("index", len(sizes), len(UNITS))
    for folder in _SUPERSEDED:
        shutil.rmtree(db_dir / BM25_DIR / folder, ignore_errors=True)
    return sizes


def build_index(store: GraphStore, unit: str, db_dir: Path) -> BM25Index:
    """Build and save the BM25 index of one unit from the store's texts (a function's led by its name and
    place, `retrieval.names.function_document`), and return it."""
    if unit == "func":
        functions = [expect(record, ImplNode) for record in store.label_records(Label.IMPL)]
        names = store.function_names([f.id for f in functions])
        documents = [(f.id, function_document(names.get(f.id, ""), f.source, f.text)) for f in functions]
    else:
        documents = store.texts(UNITS[unit])
    index = BM25Index.build([doc for doc, _ in documents], [text for _, text in documents])
    index.save(index_dir(db_dir, unit))
    return index


def open_index(store: GraphStore, db_dir: Path, unit: str) -> BM25Index:
    """The BM25 index of a unit, checked against the store's node count (a stale index is refused). A
    missing one is built from the store first when the store holds a built database (one built
    before an index existed, or by an older PKG whose index had another form)."""
    try:
        index = BM25Index.load(index_dir(db_dir, unit))
    except StoreNotFoundError:
        if store.embedder_info() is None:
            raise StoreNotFoundError(
                f"no BM25 index of {unit} in {db_dir}; build the database with `pkg build` (its --db is where"
                " the index lives)"
            ) from None
        index = build_index(store, unit, db_dir)
    expected = store.counts().nodes.get(UNITS[unit].value, 0)
    if expected == 0:
        raise missing_part(UNITS[unit])
    if len(index.ids) != expected:
        raise StoreError(
            f"the BM25 index of {unit} in {db_dir} has {len(index.ids)} documents but the store has {expected};"
            " run `pkg build` again to refresh it"
        )
    return index
