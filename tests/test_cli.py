"""The `pkg` command end to end on real files with the real default model."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from filelock import FileLock

from pkg.config import BUILD_LOCK, DB_FILE
from tests.conftest import (
    CORPUS_NODES,
    CORPUS_RELATIONSHIPS,
    FIXTURES,
    HUNG_AFTER_S,
    STDLIB_SLICE,
    cli_build,
    run_cli,
)

README = Path(__file__).parent.parent / "README.md"

CORPUS = FIXTURES / "corpus"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Path:
    db = tmp_path_factory.mktemp("db")
    report = json.loads(cli_build(db, env, str(CORPUS), "--format", "json").stdout)
    # shapes.py: __init__, area, fibonacci, read_lines, fetch_all; alpaca.jsonl: is_prime, reverse_words
    assert (report["files"], report["rows"], report["functions"]) == (2, 2, 7)
    # __init__: if; fibonacci: for; read_lines: with>for>if; fetch_all: async for>try; is_prime: if, for>if
    assert report["blocks"] == 10
    assert report["embedder"] == {"name": "st:all-MiniLM-L6-v2", "dim": 384}
    return db


def _stats(db: Path) -> dict:
    done = run_cli("stats", "--db", str(db), "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.cli
def test_stats_counts_nodes_and_relationships(built: Path) -> None:
    stats = _stats(built)
    assert (stats["nodes"], stats["relationships"]) == (CORPUS_NODES, CORPUS_RELATIONSHIPS)
    assert (stats["embedder"], stats["dims"]) == ("st:all-MiniLM-L6-v2", 384)


@pytest.mark.cli
def test_rebuild_is_idempotent_and_uses_the_cache(built: Path, env: dict[str, str]) -> None:
    before = _stats(built)
    done = run_cli("build", str(CORPUS), "--db", str(built), "--format", "json", env_extra=env)
    report = json.loads(done.stdout)
    assert (report["files"], report["unchanged_files"], report["nodes"], report["texts_embedded"]) == (0, 2, 0, 0)
    assert _stats(built) == before
    other = run_cli("build", str(CORPUS), "--db", str(built), "--chunk-size", "100", "--format", "json", env_extra=env)
    report = json.loads(other.stdout)  # other settings: every file is built again, from the cache
    assert (report["files"], report["unchanged_files"]) == (2, 0) and report["texts_from_cache"] > 0
    assert _stats(built)["nodes"]["CHUNK"] > before["nodes"]["CHUNK"]


def _query_json(db: Path, env: dict[str, str], text: str, *args: str) -> dict:
    done = run_cli("query", text, *args, "--db", str(db), "--format", "json", env_extra=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.cli
def test_query_json_projects_hits_to_functions(built: Path, env: dict[str, str]) -> None:
    answer = _query_json(built, env, "check if an integer is a prime number", "-k", "2")
    top = answer["results"][0]
    assert set(top) >= {"id", "kind", "name", "path", "score", "text", "pruned_text"}
    assert (top["kind"], top["name"], top["row"]) == ("IMPL", "is_prime", 1)
    assert top["path"].endswith("alpaca.jsonl")
    assert answer["results"][0]["score"] >= answer["results"][1]["score"]
    assert "<context>" in answer["prompt"] and "def is_prime" in answer["prompt"]
    assert answer["prompt"].startswith("check if an integer is a prime number")


@pytest.mark.cli
def test_block_mode_returns_blocks_of_the_right_function(built: Path, env: dict[str, str]) -> None:
    top = _query_json(built, env, "async for response in stream, append json", "--mode", "block", "-k", "1")["results"][
        0
    ]
    assert (top["kind"], top["name"]) == ("BLOCK", "fetch_all")
    assert top["text"].startswith("async for response in client.stream(urls):")


@pytest.mark.cli
def test_text_and_prompt_formats(built: Path, env: dict[str, str]) -> None:
    text = run_cli("query", "area of a circle", "--db", str(built), "-k", "1", env_extra=env)
    assert text.returncode == 0 and text.stdout.startswith("1. Circle.area  [IMPL ")
    prompt = run_cli("query", "area of a circle", "--db", str(built), "-k", "1", "--format", "prompt", env_extra=env)
    assert prompt.stdout.startswith("area of a circle\n") and "def area(self):" in prompt.stdout


@pytest.mark.cli
def test_build_on_a_standard_library_slice(tmp_path: Path, env: dict[str, str]) -> None:
    files = [f for p in STDLIB_SLICE for f in ([p] if p.is_file() else sorted(p.rglob("*.py")))]
    expected = sum(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        for f in files
        for n in ast.walk(ast.parse(f.read_text()))
    )
    done = run_cli("build", *map(str, STDLIB_SLICE), "--db", str(tmp_path), "--format", "json", env_extra=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    caches = [{"path": str(d), "reason": "bytecode cache"} for p in STDLIB_SLICE for d in p.rglob("__pycache__")]
    assert (report["files"], report["functions"], report["skipped"]) == (len(files), expected, caches)
    assert report["blocks"] > report["functions"]
    done = run_cli(
        "query", "push an item onto a heap", "--db", str(tmp_path), "-k", "3", "--format", "json", env_extra=env
    )
    names = [r["name"] for r in json.loads(done.stdout)["results"]]
    assert "heappush" in names


@pytest.mark.cli
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["build", "/no/such/path"], "no such file or directory"),
        (["build", str(FIXTURES / "corpus" / "pkgdemo" / "__init__.py")], "no such file"),
        (["query", "x", "--mode", "nope"], "Invalid value for '--mode'"),
        (["query", "x", "-k", "0"], "Invalid value for '-k'"),
        (["build", str(CORPUS), "--embedder", "word2vec"], "unknown embedder"),
        (["frobnicate"], "No such command"),
    ],
)
def test_user_mistakes_give_one_line_and_non_zero_exit(args: list[str], message: str, tmp_path: Path) -> None:
    done = run_cli(*args, "--db", str(tmp_path / "db"))
    assert done.returncode != 0
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


@pytest.mark.cli
def test_no_database_and_empty_corpus(tmp_path: Path, env: dict[str, str]) -> None:
    done = run_cli("query", "anything", "--db", str(tmp_path / "none"), env_extra=env)
    assert (
        done.returncode == 1
        and done.stderr.strip() == f"pkg: no PKG database in {tmp_path / 'none'}; run `pkg build` first"
    )
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("nothing to build\n")
    done = run_cli("build", str(tmp_path / "empty"), "--db", str(tmp_path / "db"), env_extra=env)
    assert done.returncode == 1 and "no code or rows found" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    (tmp_path / "empty" / "consts.py").write_text("X = 1\n")
    done = run_cli(
        "build", str(tmp_path / "empty"), "--parts", "functions", "--db", str(tmp_path / "db"), env_extra=env
    )
    assert done.returncode == 1 and done.stderr.startswith("pkg: no functions found")
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "db").exists()  # nothing is created for an empty corpus
    done = run_cli("build", str(tmp_path / "empty"), "--parts", "functions,tables", "--db", str(tmp_path / "db"))
    assert done.returncode == 1 and "unknown graph parts ['tables']" in done.stderr


@pytest.mark.cli
def test_syntax_errors_are_reported_and_good_functions_kept(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "mixed.py").write_text(
        "def good():\n    return 1\n\ndef bad(:\n    pass\n\ndef fine(x):\n    return x\n"
    )
    done = run_cli("build", str(tmp_path / "src"), "--db", str(tmp_path / "db"), "--format", "json", env_extra=env)
    report = json.loads(done.stdout)
    assert report["functions"] == 2 and len(report["issues"]) >= 1
    assert report["issues"][0]["line"] == 4


@pytest.mark.cli
def test_build_lists_a_symlink_loop_and_goes_on(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "real.py").write_text("def ok(): pass\n")
    (tmp_path / "d" / "self_loop.py").symlink_to("self_loop.py")
    done = run_cli("build", str(tmp_path / "d"), "--db", str(tmp_path / "db"), env_extra=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "functions: 1 " in done.stdout and "  skipped: 1 (symlink loop: 1)\n" in done.stdout
    assert f"    {tmp_path / 'd' / 'self_loop.py'}: symlink loop\n" in done.stdout


@pytest.mark.cli
def test_a_build_never_reads_a_database_in_the_folder_it_builds(tmp_path: Path, env: dict[str, str]) -> None:
    """The issue's example: a second build of a folder holding its own --db indexed the BM25 files."""
    folder, other = tmp_path / "t", tmp_path / "other"
    shutil.copytree(CORPUS, folder)
    db = folder / "pkgdb"
    cli_build(db, env, str(folder))
    before = _stats(db)
    again = json.loads(cli_build(db, env, str(folder), "--format", "json").stdout)
    assert (again["files"], again["unchanged_files"], again["nodes"]) == (0, 2, 0)
    assert {"path": str(db), "reason": "PKG database (holds PKG-DATABASE)"} in again["skipped"]
    assert _stats(db) == before
    done = run_cli("build", str(db), "--db", str(other), env_extra=env)
    assert (done.returncode, done.stderr) == (
        1,
        f"pkg: {db}: PKG database (holds PKG-DATABASE); a build never reads a PKG database\n",
    )
    assert not other.exists()


@pytest.mark.cli
def test_a_second_build_of_a_database_waits_for_the_first(tmp_path: Path, env: dict[str, str]) -> None:
    """Two builds of one database at once raced on the BM25 indexes' renames; the second now waits."""
    db = tmp_path / "db"
    db.mkdir()
    command = [sys.executable, "-m", "pkg", "build", str(CORPUS), "--db", str(db), "--format", "json"]
    with FileLock(db / BUILD_LOCK):  # a first build, holding the database
        second = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env}
        )
        assert second.stderr is not None
        said = next((line for line in iter(second.stderr.readline, "") if "waiting" in line), "")  # "" at its end
        assert said == "pkg: another build of this database is running; waiting for it to finish\n"
        assert second.poll() is None and not (db / DB_FILE).exists()
    out, err = second.communicate(timeout=HUNG_AFTER_S)
    assert second.returncode == 0, err
    assert json.loads(out)["functions"] == 7 and _stats(db)["nodes"] == CORPUS_NODES


def test_the_readme_lists_every_option_of_every_command() -> None:
    from pkg.cli import cli

    rows = {
        line.split("`")[1].split()[1]: line for line in README.read_text().splitlines() if line.startswith("| `pkg ")
    }
    context = click.Context(cli)
    commands = {name: cli.get_command(context, name) for name in cli.list_commands(context)}
    assert set(rows) == set(commands)
    for name, command in commands.items():
        assert command is not None and command.name == name
        options = [o for param in command.params for o in param.opts if o.startswith("--") and o != "--help"]
        assert [o for o in options if f"`{o}" not in rows[name] and f"/{o}" not in rows[name]] == [], name
