"""Incremental builds converge to a clean build of the final corpus, on both stores, whatever the
sequence of edits, and a build killed with SIGKILL and started again ends in that same state."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from ingest.parse import ParsedCorpus, parse_corpus, pruning_variants
from pkg.embedders import CachedEmbedder
from pkg.indexing import embedded_texts
from pkg.stores.base import GraphStore
from pkg.stores.embedded import EmbeddedStore
from pkg.stores.neo4j_store import Neo4jStore
from tests.conftest import FIXTURES, STDLIB, STORE_KINDS
from tests.helpers import build
from tests.neo4j_server import wipe
from tests.store_support import GraphSnapshot, snapshot

Opener = Callable[[str], GraphStore]


@pytest.fixture(params=STORE_KINDS)
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens named, empty databases of one kind (Neo4j Community has one database: the names
    take turns, each wiped when it is opened)."""
    opened: list[GraphStore] = []
    if request.param == "embedded":

        def opener(name: str) -> GraphStore:
            opened.append(EmbeddedStore(tmp_path / name, create=True))
            return opened[-1]
    else:
        uri = request.getfixturevalue("neo4j_uri")

        def opener(name: str) -> GraphStore:
            for store in opened:
                store.close()
            wipe(uri)
            opened.append(Neo4jStore(uri))
            return opened[-1]

    yield opener
    for store in opened:
        store.close()


def assert_same_graph(actual: GraphSnapshot, expected: GraphSnapshot) -> None:
    """Same nodes (ids, labels, properties), edges and sources; vectors equal up to the float noise
    of embedding a text in different batches."""
    assert {k: v[:2] for k, v in actual.nodes.items()} == {k: v[:2] for k, v in expected.nodes.items()}
    assert actual.edges == expected.edges and actual.sources == expected.sources
    for node_id, (_, _, vector) in expected.nodes.items():
        np.testing.assert_allclose(actual.nodes[node_id][2], vector, atol=1e-4)


def _texts(corpus: ParsedCorpus) -> set[str]:
    """Every text a build of the corpus embeds."""
    return set(embedded_texts(corpus.units)) | set(pruning_variants(corpus.units))


def _corpus(root: Path) -> Path:
    root.mkdir()
    for name in ("heapq.py", "bisect.py", "shlex.py"):
        shutil.copy(STDLIB / name, root / name)
    shutil.copy(FIXTURES / "corpus" / "alpaca.jsonl", root / "alpaca.jsonl")
    return root


def _edit(root: Path) -> None:
    """Change one function, delete a file, add a file, append a JSONL row."""
    bisect = root / "bisect.py"
    bisect.write_text(bisect.read_text().replace("lo = mid + 1", "lo = mid + 1  # moved right", 1))
    (root / "shlex.py").unlink()
    (root / "sub").mkdir()
    shutil.copy(STDLIB / "textwrap.py", root / "sub" / "textwrap.py")
    with (root / "alpaca.jsonl").open("a") as rows:
        rows.write(
            json.dumps({"instruction": "Square", "input": "", "output": "```python\ndef sq(x):\n    return x * x\n```"})
            + "\n"
        )


def test_edits_converge_to_a_clean_build(open_store: Opener, embedder: CachedEmbedder, tmp_path: Path) -> None:
    """With a cache of its own, so that what it counts as embedded is what this test's builds embedded."""
    root = _corpus(tmp_path / "corpus")
    store = open_store("incremental")
    seen = _texts(parse_corpus([root]))
    first = build([root], store, embedder)
    assert first.files == 4 and first.unchanged_files == 0
    _edit(root)
    changed = _texts(parse_corpus([root], known=store.sources()))
    misses = embedder.misses
    second = build([root], store, embedder)
    assert (second.files, second.unchanged_files, second.removed_files) == (3, 1, 1)  # heapq.py untouched
    # Nothing embedded before is embedded again: only the texts the edits brought.
    assert embedder.misses - misses == second.texts_embedded == len(changed - seen) > 0
    third = build([root], store, embedder)
    assert (third.files, third.unchanged_files, third.nodes) == (0, 4, 0)
    incremental = snapshot(store)

    clean = open_store("clean")
    build([root], clean, embedder)
    assert_same_graph(incremental, snapshot(clean))
    assert {Path(p).name for p in incremental.sources} == {"heapq.py", "bisect.py", "textwrap.py", "alpaca.jsonl"}


def test_building_a_subtree_leaves_the_rest(
    open_store: Opener, module_embedder: CachedEmbedder, tmp_path: Path
) -> None:
    root = _corpus(tmp_path / "corpus")
    (root / "sub").mkdir()
    shutil.copy(STDLIB / "textwrap.py", root / "sub" / "textwrap.py")
    store = open_store("subtree")
    build([root], store, module_embedder)
    before = snapshot(store)
    (root / "sub" / "textwrap.py").unlink()
    shutil.copy(STDLIB / "heapq.py", root / "sub" / "heapq.py")
    report = build([root / "sub"], store, module_embedder)  # only sub/ is looked at
    assert (report.files, report.removed_files) == (1, 1)
    after = snapshot(store)
    outside = {p: f for p, f in before.sources.items() if "/sub/" not in p}
    assert {p: f for p, f in after.sources.items() if "/sub/" not in p} == outside
    clean = open_store("clean")  # nodes and edges too: the same as a build of the whole tree as it now is
    build([root], clean, module_embedder)
    assert_same_graph(after, snapshot(clean))


def test_a_file_emptied_of_functions_loses_them(
    open_store: Opener, module_embedder: CachedEmbedder, tmp_path: Path
) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "a.py").write_text("def a():\n    return 1\n")
    store = open_store("emptied")
    build([root], store, module_embedder, parts={"functions"})
    (root / "a.py").write_text("A = 1\n")
    report = build([root], store, module_embedder, parts={"functions"})
    assert (report.files, report.functions) == (1, 0)
    assert store.counts().nodes.get("IMPL", 0) == 0 and store.counts().nodes.get("NAME", 0) == 0
    assert build([root], store, module_embedder, parts={"functions"}).unchanged_files == 1


_KILLED_BUILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import pkg.indexing
    from tests.helpers import build
    from ingest.parse import ParsedCorpus, parse_corpus, pruning_variants
    from pkg.embedders import make_embedder
    from pkg.stores.embedded import EmbeddedStore
    from pkg.stores.neo4j_store import Neo4jStore

    pkg.indexing.WRITE_BATCH = 1  # one file per transaction
    kind, target, root, cache = sys.argv[1:5]
    store = EmbeddedStore(Path(target), create=True) if kind == "embedded" else Neo4jStore(target)
    original = store.replace_sources

    def slow(records, nodes, edges):
        original(records, nodes, edges)
        print("wrote", flush=True)
        time.sleep(0.5)

    store.replace_sources = slow
    build([Path(root)], store, make_embedder("minilm", Path(cache)))
    """
)


def test_a_killed_build_converges(open_store: Opener, module_embedder: CachedEmbedder, tmp_path: Path) -> None:
    root = _corpus(tmp_path / "corpus")
    (root / "json").mkdir()
    for path in (STDLIB / "json").glob("*.py"):
        shutil.copy(path, root / "json" / path.name)
    store = open_store("killed")
    target = str(getattr(store, "directory", None) or store.uri)
    cache = str(tmp_path / "cache")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _KILLED_BUILD,
            "embedded" if isinstance(store, EmbeddedStore) else "neo4j",
            target,
            str(root),
            cache,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for _ in range(3):
        assert proc.stdout.readline() == "wrote\n"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = snapshot(store)
    assert 3 <= len(partial.sources) < 9  # some files were written, not all
    build([root], store, module_embedder)
    resumed = snapshot(store)

    clean = open_store("clean")
    build([root], clean, module_embedder)
    assert_same_graph(resumed, snapshot(clean))
    assert len(resumed.sources) == 9
