"""The query side of the default embedder in ONNX Runtime: exported once from the packaged MiniLM,
its vectors and rankings those of the PyTorch model, and a query that imports no PyTorch."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from pkg.embedders import make_embedder
from pkg.embedders.onnx_encoder import Layout, export_path, layout
from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder, packaged_minilm_path
from pkg.knowledge_base import KnowledgeBase
from retrieval.search import Options
from tests.conftest import STDLIB

CORPUS = [STDLIB / "shlex.py", STDLIB / "fractions.py", STDLIB / "textwrap.py"]
#: The issue's queries (#35), beside the docstring summaries of the corpus.
ASKED = ["split a shell command line into arguments, honouring quotes", "convert a float to a fraction"]


def _real_texts() -> tuple[list[str], list[str]]:
    """The corpus's functions (source, up to far past MiniLM's 256 tokens) and their docstrings' first lines."""
    sources, summaries = [], []
    for path in CORPUS:
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef):
                sources.append(ast.get_source_segment(text, node) or "")
                doc = ast.get_docstring(node)
                if doc and len(doc.split("\n")[0]) > 15:
                    summaries.append(doc.split("\n")[0])
    return sources, summaries


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(database, cache folder) of a default build of CORPUS, as `pkg build` makes it."""
    cache = tmp_path_factory.mktemp("cache")
    db = tmp_path_factory.mktemp("db")
    with KnowledgeBase(db, "embedded", "minilm", cache) as kb:
        kb.build(CORPUS)
    return db, cache


@pytest.fixture(scope="module")
def onnx_minilm(built: tuple[Path, Path]) -> SentenceTransformerEmbedder:
    """The packaged MiniLM, its queries in ONNX Runtime from the build's export."""
    return SentenceTransformerEmbedder(onnx_dir=built[1] / "models")


@pytest.mark.model
def test_the_build_exports_the_model_once_into_the_cache(built: tuple[Path, Path]) -> None:
    models = built[1] / "models"
    (exported,) = models.glob("*.onnx")
    assert exported == export_path(Path(packaged_minilm_path()), models)
    written = exported.stat().st_mtime_ns
    assert make_embedder("minilm", built[1]).embed_query("parse a number").shape == (384,)
    assert exported.stat().st_mtime_ns == written and not list(models.glob("*.partial"))


@pytest.mark.model
def test_onnx_vectors_are_the_pytorch_vectors(
    onnx_minilm: SentenceTransformerEmbedder, minilm: SentenceTransformerEmbedder
) -> None:
    sources, summaries = _real_texts()
    texts = summaries + sources
    assert max(len(minilm._load().tokenize([t])["input_ids"][0]) for t in texts) == 256  # some fill the window
    reference = minilm.embed_documents(texts)
    together = onnx_minilm.embed_queries(texts)  # padded to the longest in one batch
    alone = np.stack([onnx_minilm.embed_query(t) for t in texts[:: max(1, len(texts) // 20)]])
    assert together.shape == reference.shape and together.dtype == np.float32
    assert float(np.min(np.sum(together * reference, axis=1))) >= 0.999
    assert float(np.min(np.sum(alone * reference[:: max(1, len(texts) // 20)], axis=1))) >= 0.999
    assert onnx_minilm.dim == 384 and onnx_minilm._model is None  # the queries loaded no PyTorch model


@pytest.mark.model
def test_onnx_queries_rank_as_pytorch_queries(
    built: tuple[Path, Path], onnx_minilm: SentenceTransformerEmbedder, minilm: SentenceTransformerEmbedder
) -> None:
    _, summaries = _real_texts()
    options = Options(with_pruning=False, hybrid_unit="func")
    for mode in ("func", "block", "hybrid"):
        with KnowledgeBase(built[0], embedder=onnx_minilm) as fast, KnowledgeBase(built[0], embedder=minilm) as slow:
            for query in ASKED + summaries:
                ours = [r.id for r in fast.query(query, mode, 10, options).results]
                theirs = [r.id for r in slow.query(query, mode, 10, options).results]
                assert ours == theirs, (mode, query)


#: What a query never uses: PyTorch (ONNX Runtime embeds it), the evaluation, the reranker and the LLMs,
#: the parsers, tree-sitter's grammars, and (outside hybrid and BM25 modes) BM25's SciPy.
NOT_FOR_QUERIES = (
    "torch",
    "transformers",
    "sentence_transformers",
    "pkg.evaluation",
    "pkg.benchmarks",
    "pkg.generators",
    "rerank",
    "ingest.parse",
    "tree_sitter_language_pack",
)
LEXICAL = ("bm25s", "scipy")
#: Runs the CLI on its arguments, then prints the modules of `sys.argv[1]` (comma-separated) it imported.
LOADED = (
    "import sys\n"
    "from pkg.cli import cli\n"
    "try:\n"
    "    cli.main(sys.argv[2:], standalone_mode=False)\n"
    "finally:\n"
    "    watched = sys.argv[1].split(',')\n"
    "    print('imported:', sorted(m for m in sys.modules if any(m == w or m.startswith(w + '.') for w in watched)))\n"
)


def _imported(watched: Sequence[str], *args: str, env: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """The output of `pkg ARGS` run in a fresh interpreter, and the watched modules (and their submodules)
    it imported."""
    command = [sys.executable, "-c", LOADED, ",".join(watched), *args]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300)
    assert done.returncode == 0, done.stderr
    output, _, imported = done.stdout.rpartition("imported: ")
    return output, ast.literal_eval(imported)


def test_the_cli_imports_a_command_only_when_it_is_used() -> None:
    listed, imported = _imported(("pkg", "ingest", "retrieval", "rerank"), "--help")
    assert "query" in listed and "compare" in listed and imported == ["pkg", "pkg.cli", "pkg.errors"]
    listed, imported = _imported(("pkg.cli", *NOT_FOR_QUERIES, *LEXICAL), "query", "--help")
    assert "--mode" in listed and imported == ["pkg.cli", "pkg.cli.commands"]


@pytest.mark.cli
@pytest.mark.model
def test_a_vector_query_imports_only_what_it_uses(built: tuple[Path, Path]) -> None:
    db, cache = built
    for mode in ("func", "hybrid", "block"):
        never = NOT_FOR_QUERIES if mode == "hybrid" else (*NOT_FOR_QUERIES, *LEXICAL)
        args = ("query", f"{ASKED[0]} ({mode})", "--db", str(db), "-k", "2", "--mode", mode)  # not in the cache
        answer, imported = _imported((*never, "onnxruntime"), *args, env={"PKG_CACHE_DIR": str(cache)})
        assert "1. " in answer and {m.split(".")[0] for m in imported} == {"onnxruntime"}, (mode, imported)


def _model_folder(tmp_path: Path, modules: list[str], pooling: str = "pooling_mode_mean_tokens") -> Path:
    """A copy of the packaged model's settings (no weights) with the given module types."""
    folder = tmp_path / "model"
    source = Path(packaged_minilm_path())
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    entries = [
        {"idx": i, "name": str(i), "path": "1_Pooling" if i == 1 else "", "type": t} for i, t in enumerate(modules)
    ]
    (folder / "modules.json").write_text(json.dumps(entries))
    config = json.loads((folder / "1_Pooling" / "config.json").read_text())
    config = {key: (key == pooling) if key.startswith("pooling_mode") else value for key, value in config.items()}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(config))
    return folder


def test_only_models_onnx_reproduces_qualify(tmp_path: Path) -> None:
    assert layout(Path(packaged_minilm_path())) == Layout(256, "mean")
    st = "sentence_transformers.models."
    assert layout(_model_folder(tmp_path / "a", [st + "Transformer", st + "Pooling"], "pooling_mode_cls_token")) == (
        Layout(256, "cls")
    )
    assert layout(_model_folder(tmp_path / "b", [st + "Transformer", st + "Pooling", st + "Dense"])) is None
    assert (
        layout(_model_folder(tmp_path / "c", [st + "Transformer", st + "Pooling"], "pooling_mode_max_tokens")) is None
    )
    assert layout(tmp_path) is None  # no modules.json: a plain Hugging Face folder


def test_a_model_written_again_gets_a_new_export(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    assert export_path(folder, tmp_path / "models") is None  # no weights, nothing to export
    weights = folder / "model.safetensors"
    weights.write_bytes(b"first")
    first = export_path(folder, tmp_path / "models")
    os.utime(weights, ns=(1, 1))
    assert first is not None and export_path(folder, tmp_path / "models") not in (None, first)
