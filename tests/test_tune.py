"""`pkg tune` end to end: real pairs from real standard-library modules, real sentence-transformers
training, the real CLI; then the database, its queries, a reopened KnowledgeBase and an incremental
build all use the tuned model, which ranks its training pairs better than the base model."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pkg.code.search_text import embedded_text
from pkg.embedders import Embedder
from pkg.embedders.onnx_encoder import export_path
from pkg.embedders.sentence_transformer import SentenceTransformerEmbedder, packaged_minilm_path
from pkg.embedders.static import StaticEmbedder, fitted_table
from pkg.embedders.tuning import (
    FAST_PROFILE_TUNING,
    Pair,
    TuneSettings,
    distinct_batches,
    docstring_pair,
    mine_pairs,
    model_key,
    partners,
    training_batches,
    tuned_folder,
)
from pkg.graph import Label
from pkg.indexing import search_texts
from pkg.knowledge_base import KnowledgeBase
from pkg.schema import ImplNode
from tests.conftest import FIXTURES, STDLIB, cli_build, run_cli

#: 88 pairs (pathlib 54, fractions 15, textwrap 11, shlex 8); shlex.py is built later, incrementally.
CORPUS = [STDLIB / "pathlib.py", STDLIB / "fractions.py", STDLIB / "textwrap.py"]
LATER = STDLIB / "shlex.py"
TUNE_ARGS = ("--batch-size", "8", "--epochs", "2", "--learning-rate", "5e-5")
QUESTION = "Return a fraction from a float"


def test_a_pair_is_the_summary_and_the_code_without_its_docstring() -> None:
    code = (
        'def area(r):\n    """Area of a circle\n    of radius r.\n\n    Details.\n    """\n'
        "    pi = 3.14159\n    return pi * r * r\n"
    )
    assert docstring_pair(code) == Pair(
        "Area of a circle of radius r.", "def area(r):\n    pi = 3.14159\n    return pi * r * r\n"
    )
    tiny = 'def one():\n    """Return the number one."""\n    return 1\n'
    inline = 'def f(x):\n    """Return x unchanged here."""; y = x\n    z = y\n    return z\n'
    short = 'def f(x):\n    """Return x."""\n    y = x\n    return y\n'
    assert [docstring_pair(c) for c in (tiny, inline, short, "def f(:\n", "x = 1\n")] == [None] * 5


def test_mining_skips_excluded_files_and_repeated_texts_and_samples_with_the_seed() -> None:
    def function(name: str, summary: str, body: str = "x = 1") -> str:
        return f'def {name}(x):\n    """{summary}"""\n    {body}\n    y = x\n    return y\n'

    functions = [
        ("/src/a.py", function("f", "Do the first thing.")),
        ("/src/a.py", function("g", "do the FIRST thing.", "x = 2")),  # the same summary, case aside
        ("/src/b.py", function("f", "Do another thing now.")),  # the same code as a.py's f
        ("/src/held/c.py", function("h", "Do a held out thing.", "x = 3")),
        ("/src/d.py", function("k", "Do the last thing.", "x = 4")),
    ]
    assert [p.query for p in mine_pairs(functions)] == [
        "Do the first thing.",
        "Do a held out thing.",
        "Do the last thing.",
    ]
    assert [p.query for p in mine_pairs(functions, exclude=["*/held/*"])] == [
        "Do the first thing.",
        "Do the last thing.",
    ]
    sample = mine_pairs(functions, max_pairs=2, seed=3)
    assert len(sample) == 2 and sample == mine_pairs(functions, max_pairs=2, seed=3)
    assert {p.query for p in sample} < {p.query for p in mine_pairs(functions)}


def test_a_pairs_negative_is_the_function_of_its_file_sharing_most_words_with_its_summary() -> None:
    def function(name: str, body: str, summary: str = "") -> str:
        doc = f'    """{summary}"""\n' if summary else ""
        return f"def {name}(x):\n{doc}    {body}\n    y = x\n    return y\n"

    functions = [
        ("/src/a.py", function("parse_header", "x = x.split(':')", "Parse one header line of a request.")),
        ("/src/a.py", function("read_body", "x = x.read()")),
        ("/src/a.py", function("header_line", "x = x.strip()")),  # shares "header", "line" with the summary
        ("/src/a.py", function("send", "x = x.send()", "Send the request body now.")),
        ("/src/b.py", function("alone", "x = x.close()", "Close the only thing here.")),
    ]
    pairs = {p.query: p for p in mine_pairs(functions)}
    assert pairs["Parse one header line of a request."].negative.startswith("def header_line(x):")
    sent = pairs["Send the request body now."].negative  # "body" in read_body's name, "request" nowhere else
    assert sent.startswith("def read_body(x):")
    # a file of one function: another pair's code (without its docstring)
    assert pairs["Close the only thing here."].negative in {p.code for p in pairs.values()} - {
        pairs["Close the only thing here."].code
    }


def test_batches_never_hold_a_text_twice_and_are_all_full() -> None:
    examples = [("q1", "c1", "c2"), ("q2", "c2", "c1"), ("q3", "c3", "c1"), ("q4", "c4", "c3"), ("q5", "c5", "c4")]
    batches = distinct_batches(examples, 2, seed=0)
    assert batches == distinct_batches(examples, 2, seed=0) and batches
    for batch in batches:
        assert len(batch) == 2
        texts = [text for index in batch for text in examples[index]]
        assert len(texts) == len(set(texts))
    used = [index for batch in batches for index in batch]
    assert len(used) == len(set(used))
    assert distinct_batches([("q", "same"), ("r", "SAME "), ("s", "same")], 2, seed=1) == []


def test_a_batch_holds_codes_of_like_length() -> None:
    # 64 examples whose code is i characters long, all in one window: a batch of 4 spans 4 lengths
    examples = [(f"q{i}", "x" * i) for i in range(1, 65)]
    batches = distinct_batches(examples, 4, seed=3)
    assert sorted(index for batch in batches for index in batch) == list(range(64))
    assert all(max(batch) - min(batch) == 3 for batch in batches)
    assert [min(batch) for batch in batches] != sorted(min(batch) for batch in batches)  # in a drawn order


def test_a_pair_shares_its_batch_with_the_pair_whose_code_is_its_hard_negative() -> None:
    # 0 and 1 are each other's negatives, 2's is 1's code, 3 to 7 have negatives that are no pair's code
    codes = [f"def f{i}(): pass" for i in range(8)]
    negatives = [codes[1], codes[0], codes[1], *(f"def other{i}(): pass" for i in range(5))]
    pairs = [Pair(f"summary number {i}", codes[i], negatives[i]) for i in range(8)]
    assert sorted(map(sorted, partners(pairs))) == [[0, 1, 2], [3], [4], [5], [6], [7]]
    # groups are drawn whole, so they mostly share a batch (one may straddle two): 36 of 50 epochs here,
    # against 6 when each pair is drawn alone
    shared = {}
    for hard in (True, False):
        batches = training_batches(pairs, TuneSettings(batch_size=4, hard_negatives=hard, epochs=50))
        assert len(batches) == 100 and all(len(set(batch)) == 4 for batch in batches)
        shared[hard] = sum({0, 1, 2} <= set(batch) for batch in batches)
    assert shared[True] >= 30 and shared[False] <= 10, shared


def test_the_key_follows_the_pairs_and_every_setting() -> None:
    pairs = [Pair("a b c", "def f(): pass"), Pair("d e f", "def g(): pass")]
    key = model_key(pairs, TuneSettings(), "all-MiniLM-L6-v2")
    assert key == model_key(list(pairs), TuneSettings(), "all-MiniLM-L6-v2")
    assert key != model_key(pairs[:1], TuneSettings(), "all-MiniLM-L6-v2")
    assert key != model_key(pairs, TuneSettings(seed=1), "all-MiniLM-L6-v2")
    assert key != model_key(pairs, TuneSettings(epochs=2), "all-MiniLM-L6-v2")
    assert key != model_key(pairs, TuneSettings(max_tokens=64), "all-MiniLM-L6-v2")
    assert key != model_key(pairs, TuneSettings(hard_negatives=False), "all-MiniLM-L6-v2")
    assert key != model_key(
        [Pair("a b c", "def f(): pass", "def g(): pass"), pairs[1]], TuneSettings(), "all-MiniLM-L6-v2"
    )


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> tuple[Path, str, str]:
    """(database, the tuned spec, `pkg tune`'s output) after a default build of CORPUS then `pkg tune`."""
    db = tmp_path_factory.mktemp("db")
    cli_build(db, env, *map(str, CORPUS), "--parts", "functions", "--no-prepare-pruning")
    done = run_cli("tune", "--db", str(db), *TUNE_ARGS, env_extra=env)
    assert done.returncode == 0, done.stderr
    found = re.search(r"tuned (tuned:[0-9a-f]{16}) \(trained\) on (\d+) pairs", done.stdout)
    assert found, done.stdout
    return db, found.group(1), done.stdout


def _model(spec: str, env: dict[str, str]) -> SentenceTransformerEmbedder:
    """The tuned model itself (no embedding cache in front), in PyTorch."""
    return SentenceTransformerEmbedder(str(tuned_folder(Path(env["PKG_CACHE_DIR"]) / "models", spec.split(":")[1])))


def _training_pairs(db: Path, cache: Path) -> list[Pair]:
    with KnowledgeBase(db, cache_dir=cache) as kb:
        functions = [r for r in kb.store.label_records(Label.IMPL) if isinstance(r, ImplNode)]
    return mine_pairs((f.source, f.text) for f in functions if "shlex" not in f.source)


def _mrr(embedder: Embedder, pairs: list[Pair]) -> float:
    """Mean reciprocal rank of each pair's code among all the pairs' codes, for its summary."""
    queries = embedder.embed_documents([p.query for p in pairs])
    codes = embedder.embed_documents([p.code for p in pairs])
    scores = queries @ codes.T
    ranks = (scores > scores.diagonal()[:, None]).sum(axis=1) + 1
    return float(np.mean(1 / ranks))


@pytest.mark.cli
def test_the_tuned_model_ranks_its_pairs_better_than_the_base(
    tuned: tuple[Path, str, str], env: dict[str, str], minilm: SentenceTransformerEmbedder
) -> None:
    db, spec, output = tuned
    pairs = _training_pairs(db, Path(env["PKG_CACHE_DIR"]))
    assert f"on {len(pairs)} pairs" in output and len(pairs) >= 80
    model = _model(spec, env)
    base, after = _mrr(minilm, pairs), _mrr(model, pairs)
    assert after > base + 0.02, (base, after)
    # trained on each text's first TuneSettings.max_tokens tokens, it embeds as many as MiniLM
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415 (torch only where a test needs it)

    saved = SentenceTransformer(str(tuned_folder(Path(env["PKG_CACHE_DIR"]) / "models", spec.split(":")[1])))
    assert TuneSettings.max_tokens < 256 == saved.max_seq_length
    # the word embeddings and the lowest layers are the base model's; the layer above them was trained
    base = SentenceTransformer(packaged_minilm_path())
    before, after = (dict(m[0].auto_model.named_parameters()) for m in (base, saved))
    frozen = TuneSettings.frozen_layers
    assert 0 < frozen < 6
    for name, value in before.items():
        if not name.startswith(("embeddings.", "encoder.")):
            continue  # the pooler: sentence-transformers pools the tokens itself
        kept = name.startswith("embeddings.") or any(name.startswith(f"encoder.layer.{i}.") for i in range(frozen))
        assert kept == bool((value == after[name]).all()), name


@pytest.mark.cli
def test_the_database_queries_and_reopening_use_the_tuned_model(
    tuned: tuple[Path, str, str], env: dict[str, str], minilm: SentenceTransformerEmbedder
) -> None:
    db, spec, _ = tuned
    cache = Path(env["PKG_CACHE_DIR"])
    stats = run_cli("stats", "--db", str(db), "--format", "json", env_extra=env)
    assert json.loads(stats.stdout)["embedder"] == spec
    exported = export_path(tuned_folder(cache / "models", spec.split(":")[1]), cache / "models")
    assert exported is not None and exported.exists()  # by `pkg tune`: no query waits for the export
    with KnowledgeBase(db, cache_dir=cache) as kb:
        assert kb.embedder.name == spec
        assert kb.tune_settings() == TuneSettings()  # a tuned MiniLM is no fast profile
        model = _model(spec, env)
        # every IMPL holds the tuned model's vector of its search text
        rows = search_texts(kb.store, Label.IMPL)[::25]
        for (node_id, _), vector in zip(rows, model.embed_documents([text for _, text in rows])):
            hit = kb.store.search(Label.IMPL, vector, 1)[0]
            assert hit.id == node_id and hit.score == pytest.approx(1.0, abs=1e-4)
        query = model.embed_query(QUESTION)
        expected = kb.store.search(Label.IMPL, query, 3)
        base = kb.store.search(Label.IMPL, minilm.embed_query(QUESTION), 3)
    query_args = ("--mode", "func", "-k", "3", "--no-prune", "--format", "json")  # scores: the vectors' cosines
    done = run_cli("query", QUESTION, "--db", str(db), *query_args, env_extra=env)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert [r["id"] for r in results] == [h.id for h in expected]
    assert [r["score"] for r in results] == pytest.approx([h.score for h in expected], abs=2e-3)
    assert [r["score"] for r in results] != pytest.approx([h.score for h in base], abs=2e-3)


@pytest.mark.cli
def test_tuning_again_reuses_the_model_and_a_later_build_embeds_with_it(
    tuned: tuple[Path, str, str], env: dict[str, str]
) -> None:
    db, spec, _ = tuned
    again = run_cli("tune", "--db", str(db), *TUNE_ARGS, env_extra=env)
    assert again.returncode == 0, again.stderr
    assert f"tuned {spec} (found in the cache)" in again.stdout and "re-embedded 0 nodes" in again.stdout
    built = cli_build(db, env, *map(str, CORPUS), str(LATER), "--parts", "functions", "--no-prepare-pruning")
    assert spec in built.stdout and "files built: 1 " in built.stdout
    model = _model(spec, env)
    with KnowledgeBase(db, cache_dir=Path(env["PKG_CACHE_DIR"])) as kb:
        later = [r for r in kb.store.label_records(Label.IMPL) if isinstance(r, ImplNode) and r.source == str(LATER)]
        assert len(later) > 10
        names = kb.store.function_names([r.id for r in later])
        texts = [embedded_text(Label.IMPL, r.text, r.lang, names[r.id]) for r in later]
        for record, vector in zip(later, model.embed_documents(texts)):
            hit = kb.store.search(Label.IMPL, vector, 1)[0]
            assert hit.id == record.id and hit.score == pytest.approx(1.0, abs=1e-4)


@pytest.mark.cli
def test_bad_input_is_one_line_and_a_non_zero_exit(tmp_path: Path, env: dict[str, str]) -> None:
    done = run_cli("tune", "--db", str(tmp_path / "none"), env_extra=env)
    assert (done.returncode, done.stderr) == (
        1,
        f"pkg: no PKG database in {tmp_path / 'none'}; run `pkg build` first\n",
    )
    db = tmp_path / "db"
    cli_build(db, env, str(FIXTURES / "corpus"), "--parts", "functions", "--no-prepare-pruning")
    done = run_cli("tune", "--db", str(db), env_extra=env)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("pkg: only ") and "need at least 32" in done.stderr
    done = run_cli("tune", "--db", str(db), "--batch-size", "1", env_extra=env)
    assert done.returncode == 2 and "--batch-size" in done.stderr


def test_a_fitted_table_meets_its_targets_and_keeps_the_rows_no_text_holds() -> None:
    draw = np.random.default_rng(0)
    base = draw.normal(size=(40, 6))
    hidden = draw.normal(size=(40, 6))
    rows = [list(draw.integers(0, 30, size=draw.integers(1, 8))) for _ in range(300)]  # tokens 30-39: in none
    targets = np.stack([hidden[ids].mean(axis=0) for ids in rows])
    table = fitted_table(base, rows, targets, ridge=1e-4)
    fitted = np.stack([table[ids].mean(axis=0) for ids in rows])
    assert np.abs(fitted - targets).max() < 0.05  # the texts' means meet their targets
    # the distilled rows, turned and scaled onto the targets' space, are the prior of every row
    prior = fitted_table(base, rows, targets, ridge=1e9)
    assert np.allclose(table[30:], prior[30:], atol=1e-4)
    turn = np.linalg.lstsq(base, prior, rcond=None)[0]
    assert np.allclose(turn @ turn.T, (turn @ turn.T)[0, 0] * np.eye(6), atol=1e-4)  # a scaled rotation


@pytest.fixture(scope="module")
def tuned_fast(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> tuple[Path, str, int]:
    """(database, its spec, the texts fitted on) after a fast-profile build of CORPUS then `pkg tune`."""
    db = tmp_path_factory.mktemp("fast-db")
    cli_build(db, env, *map(str, CORPUS), "--parts", "functions", "--no-prepare-pruning", "--embedder", "static")
    done = run_cli("tune", "--db", str(db), *TUNE_ARGS, env_extra=env)
    assert done.returncode == 0, done.stderr
    found = re.search(r"tuned (static:[0-9a-f]{16}) \(the fast profile, fitted on (\d+) texts\)", done.stdout)
    assert found, done.stdout
    return db, found.group(1), int(found.group(2))


@pytest.mark.cli
def test_tuning_a_fast_profile_fits_its_table_to_the_tuned_model(
    tuned_fast: tuple[Path, str, int], env: dict[str, str]
) -> None:
    db, spec, texts = tuned_fast
    cache = Path(env["PKG_CACHE_DIR"])
    pairs = _training_pairs(db, cache)
    assert texts > len(pairs)  # the functions' texts, then the summaries not among them
    stats = run_cli("stats", "--db", str(db), "--format", "json", env_extra=env)
    assert json.loads(stats.stdout)["embedder"] == spec
    # its teacher trained with the fast profile's max_tokens and frozen_layers (the model's key hashes the
    # settings), the CLI's other options over them
    with KnowledgeBase(db, cache_dir=cache) as kb:
        assert kb.tune_settings() == FAST_PROFILE_TUNING != TuneSettings()
        records = [r for r in kb.store.label_records(Label.IMPL) if isinstance(r, ImplNode) and r.lang == "python"]
    settings = replace(FAST_PROFILE_TUNING, batch_size=8, epochs=2, learning_rate=5e-5)
    mined = mine_pairs(((r.source, r.text) for r in records), (), settings.max_pairs, settings.seed)
    key = model_key(mined, settings, os.path.basename(packaged_minilm_path()))
    assert (tuned_folder(cache / "models", key) / "modules.json").exists()
    distilled, fitted = StaticEmbedder(cache / "models"), StaticEmbedder(cache / "models", spec.split(":")[1])
    before, after = _mrr(distilled, pairs), _mrr(fitted, pairs)
    assert after > before + 0.05, (before, after)
    with KnowledgeBase(db, cache_dir=cache) as kb:
        assert kb.embedder.name == spec
        rows = search_texts(kb.store, Label.IMPL)[::25]
        for (node_id, _), vector in zip(rows, fitted.embed_documents([text for _, text in rows])):
            hit = kb.store.search(Label.IMPL, vector, 1)[0]
            assert hit.id == node_id and hit.score == pytest.approx(1.0, abs=1e-4)
    again = run_cli("tune", "--db", str(db), *TUNE_ARGS, env_extra=env)
    assert again.returncode == 0, again.stderr
    assert f"tuned {spec} (the fast profile" in again.stdout and "re-embedded 0 nodes" in again.stdout
    missing = run_cli("query", QUESTION, "--db", str(db), env_extra={**env, "PKG_CACHE_DIR": str(db / "elsewhere")})
    assert missing.returncode == 1 and missing.stderr.startswith(f"pkg: no fitted static table {spec.split(':')[1]!r}")
