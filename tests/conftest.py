"""Shared fixtures (the real default embedder, a real standard-library slice, a real Neo4j) and
the split of unit tests from integration tests: each integration test carries a marker per thing
it needs (registered in pyproject.toml), derived here from its fixtures where it can be; a session
that runs unit tests only fails any test that loads a model or starts what a marker stands for."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from pkg.benchmarks.mbpp import PACKAGED_DIR
from pkg.embedders import CachedEmbedder, EmbeddingCache, make_embedder
from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder, packaged_minilm_path
from tests.neo4j_server import start_local, wipe

STDLIB = Path(sysconfig.get_paths()["stdlib"])
#: A bounded, real corpus present on every machine with this Python.
STDLIB_SLICE = [STDLIB / "json", STDLIB / "textwrap.py", STDLIB / "heapq.py", STDLIB / "bisect.py"]
FIXTURES = Path(__file__).parent / "fixtures"
#: The graph of tests/fixtures/corpus (shapes.py, alpaca.jsonl), counted by hand. ROW: shapes.py and
#: the two JSONL rows; CHUNK: one per file or fence, all small, so no NEXT; each JSONL row is a JSON
#: document: a root PATH and three PATHVALUE leaves. shapes.py is a FILE with a CLASS (Circle) and a
#: MODULE (math) it IMPORTS; it CONTAINS Circle, Circle its two methods, and the file its three
#: functions; none calls another.
CORPUS_NODES = {"BLOCK": 10, "CHUNK": 3, "CLASS": 1, "FILE": 1, "IMPL": 7, "MODULE": 1, "NAME": 7, "PATH": 2}
CORPUS_NODES |= {"PATHVALUE": 6, "ROW": 3}
CORPUS_RELATIONSHIPS = {"CONTAINS": 6, "HAS_BLOCK": 6, "HAS_IMPL": 7, "IMPORTS": 1, "JSON_CHILD": 6, "PARENT": 4}
#: The MBPP release shipped with pkg.benchmarks (see its README.md).
MBPP_DIR = PACKAGED_DIR
#: The stores a test may run on; the Neo4j one marks the test `neo4j`.
STORE_KINDS = ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)]

#: The markers of integration tests; a test with none of them is a unit test.
INTEGRATION = ("model", "neo4j", "sandbox", "llm", "cli")
#: Fixtures that bring what a marker stands for: a test requesting one, directly or through other
#: fixtures, gets its marker.
FIXTURE_MARKERS = {
    "minilm": "model", "module_embedder": "model", "embedder": "model", "minilm_export": "model",
    "neo4j_uri": "neo4j", "empty_neo4j": "neo4j", "auth_neo4j": "neo4j",
    "sandbox": "sandbox",
    "smollm2": "llm",
}  # fmt: skip
#: Modules whose import means a model is loaded, and the marker that allows it.
HEAVY_MODULES = {"sentence_transformers": "model", "torch": "model", "onnxruntime": "model", "llama_cpp": "llm"}
#: Code that starts a process a unit test must not need: its module prefix and the marker.
LAUNCHERS = {"rerank.sandbox": "sandbox", "tests.neo4j_server": "neo4j", "tests.conftest": "cli"}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for marker in sorted({FIXTURE_MARKERS[name] for name in item.fixturenames if name in FIXTURE_MARKERS}):
            item.add_marker(marker)


def is_unit(item: pytest.Item) -> bool:
    """Whether the test needs none of what the integration markers stand for."""
    return not any(item.get_closest_marker(marker) for marker in INTEGRATION)


class UnitGuard:
    """While a unit test runs in a unit-only session, notes what it should not need: a model
    library imported, a sandbox, Neo4j or `pkg` process started (Python audit events)."""

    def __init__(self) -> None:
        self.watching = False
        self.seen: list[str] = []

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.watching:
            return
        if event == "import" and args[0] in HEAVY_MODULES:
            self.seen.append(f"imported {args[0]} ({HEAVY_MODULES[args[0]]})")
        elif event == "subprocess.Popen" and (launcher := _launcher(sys._getframe(1))):
            command = " ".join(map(str, args[1])).replace("\n", " ")
            self.seen.append(f"started `{command[:80]}` ({LAUNCHERS[launcher]})")


def _launcher(frame: FrameType | None) -> str | None:
    """The entry of LAUNCHERS whose code is on the stack."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        for prefix in LAUNCHERS:
            if module == prefix or module.startswith(prefix + "."):
                return prefix
        frame = frame.f_back
    return None


GUARD = UnitGuard()
sys.addaudithook(GUARD.audit)
UNIT_ONLY = pytest.StashKey[bool]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """A session of unit tests only starts watching them (collection must not load a model)."""
    if not session.items or not all(map(is_unit, session.items)):
        return
    loaded = sorted(name for name in HEAVY_MODULES if name in sys.modules)
    if loaded:
        pytest.exit(f"unit tests only, yet collecting them imported {', '.join(loaded)}", returncode=3)
    session.config.stash[UNIT_ONLY] = True


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures are set up
def pytest_runtest_setup(item: pytest.Item) -> None:
    GUARD.seen, GUARD.watching = [], item.config.stash.get(UNIT_ONLY, False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """Fails, after its fixtures are torn down, a unit test that needed an integration marker."""
    try:
        yield
    finally:
        seen, GUARD.seen, GUARD.watching = GUARD.seen, [], False
    if seen:
        pytest.fail(f"{item.nodeid} is not marked for what it needed: {'; '.join(seen)}", pytrace=False)


@pytest.fixture(scope="session")
def minilm() -> SentenceTransformerEmbedder:
    """The real default model, loaded once per session from its PyPI package."""
    return SentenceTransformerEmbedder()


@pytest.fixture(scope="session")
def static_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder whose models/ holds the fast profile's static table, distilled once (~20 s)."""
    folder = tmp_path_factory.mktemp("static-cache")
    assert make_embedder("static", folder).dim == 384
    return folder


@pytest.fixture(scope="module")
def module_embedder(minilm: SentenceTransformerEmbedder, tmp_path_factory: pytest.TempPathFactory) -> CachedEmbedder:
    """The real default model behind one cache for the whole test module."""
    return CachedEmbedder(minilm, EmbeddingCache(tmp_path_factory.mktemp("cache") / "embeddings.sqlite"))


@pytest.fixture()
def embedder(minilm: SentenceTransformerEmbedder, tmp_path: Path) -> CachedEmbedder:
    """The default model behind a fresh persistent cache."""
    return CachedEmbedder(minilm, EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite"))


#: When a `pkg` subprocess counts as hung. Room for a 2-core machine busy with other work: at a load
#: average of 4-7, `pkg build --structurer llama:smollm2-135m` ran past the 600 s this used to be.
HUNG_AFTER_S = 1800


def run_cli(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `pkg` entry point in a subprocess."""
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "pkg", *args], capture_output=True, text=True, env=env, timeout=HUNG_AFTER_S
    )


def cli_build(db: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The real `pkg build ARGS --db DB` with the environment's cache; a failed build fails the test."""
    done = run_cli("build", *args, "--db", str(db), env_extra=env)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="session")
def minilm_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder holding the packaged MiniLM's ONNX export (made once per session, ~20 s)."""
    from pkg.embedders.onnx_encoder import onnx_encoder

    models = tmp_path_factory.mktemp("onnx-models")
    assert onnx_encoder(Path(packaged_minilm_path()), models) is not None
    return models


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, minilm_export: Path) -> dict[str, str]:
    """A fresh embedding and generation cache (PKG_CACHE_DIR) for one test module's CLI runs; its
    models folder starts with the session's ONNX export of MiniLM, as any build would leave it."""
    cache = tmp_path_factory.mktemp("cache")
    shutil.copytree(minilm_export, cache / "models", copy_function=os.link)
    return {"PKG_CACHE_DIR": str(cache)}


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Path:
    """A database `pkg build` made of tests/fixtures/corpus, for one test module's CLI runs."""
    folder = tmp_path_factory.mktemp("db")
    cli_build(folder, env, str(FIXTURES / "corpus"))
    return folder


@pytest.fixture(scope="session")
def neo4j_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Bolt URI of a real Neo4j: NEO4J_URI if set (its database gets wiped!), else a local one
    started with docker/neo4j-start.sh for the session. Never skipped: no Neo4j fails the tests."""
    if os.environ.get("NEO4J_URI"):
        yield os.environ["NEO4J_URI"]
        return
    try:
        server = start_local(tmp_path_factory.mktemp("neo4j"))
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"no Neo4j for the tests (set NEO4J_URI or make docker/neo4j-start.sh work): {exc}")
    try:
        yield server.uri
    finally:
        server.stop()


@pytest.fixture()
def empty_neo4j(neo4j_uri: str) -> str:
    """The Neo4j URI, with its database emptied of data, constraints and indexes."""
    wipe(neo4j_uri)
    return neo4j_uri
