"""The repository-level completion benchmark: tasks sampled from installed packages, the body taken from a
reply, the scores; and a real run (SmolLM2, MiniLM, a real package's PKG) where retrieval never shows the
task's own file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pkg.benchmarks.repo import REPOSITORIES, Repository, code_lines, load_repo_tasks
from pkg.embedders import Embedder
from pkg.errors import BenchmarkError, ConfigError
from pkg.evaluation.repo import (
    REPO_ARMS,
    RepoRun,
    body_from_reply,
    body_parses,
    build_repositories,
    edit_similarity,
    identifier_scores,
    levenshtein,
    parse_repo_arms,
    retrieve,
    run_repo,
    summarise,
    where,
    write_repo_report,
)
from pkg.generators import make_generator
from pkg.knowledge_base import KnowledgeBase
from tests.conftest import run_cli

TENACITY = next(r for r in REPOSITORIES if r.package == "tenacity")


def test_tasks_are_deterministic_and_balanced() -> None:
    tasks = load_repo_tasks()
    assert tasks == load_repo_tasks()
    assert len(tasks) == 200
    assert {t.repository for t in tasks} == {r.package for r in REPOSITORIES}
    assert len({t.task_id for t in tasks}) == 200


def test_a_task_hides_its_body_and_ends_at_its_header() -> None:
    for task in load_repo_tasks():
        assert 2 <= len(code_lines(task.body)) <= 12
        assert "\n".join(code_lines(task.body)) not in "\n".join(code_lines(task.prefix))
        source = Path(task.path).read_text(encoding="utf-8")
        start = source.index(task.prefix)  # the prefix is the file's text, cut at a line boundary
        rest = source[start + len(task.prefix) :]
        assert code_lines(rest)[: len(code_lines(task.body))] == code_lines(task.body)
        header = task.prefix.splitlines()
        assert any(line.lstrip().startswith(("def ", "async def ")) for line in header[-40:])


def test_fewer_tasks_per_repository_keep_the_same_first_picks() -> None:
    few = load_repo_tasks([TENACITY], per_repository=5)
    many = load_repo_tasks([TENACITY], per_repository=20)
    assert {t.task_id for t in few} <= {t.task_id for t in many}


def test_a_missing_package_is_an_error_that_says_so() -> None:
    with pytest.raises(BenchmarkError, match="not installed"):
        load_repo_tasks([Repository("no_such_package_here", "no-such", "")])


@pytest.mark.parametrize(
    ("reply", "body"),
    [
        ("```python\nx = 1\nreturn x\n```\nThat is all.", "x = 1\nreturn x\n"),
        ("```python\n    x = 1\n    return x\n```", "x = 1\nreturn x\n"),
        ('```python\ndef f(a):\n    """Doc."""\n    x = a\n    return x\n```', "x = a\nreturn x\n"),
        ("```python\nclass C:\n    def f(self):\n        return 2\n```", "return 2\n"),
        ('```python\n"""Doc again."""\nreturn 3\n```', "return 3\n"),
        ("return 4", "return 4\n"),
        ("```python\nif x:\n    return (\n```", "if x:\n    return (\n"),
        ('```python\ndef f(a,\n      b) -> int:\n    """Doc\n    more."""\n    x = (a +', "x = (a +\n"),
        ('```python\n@cache\nasync def f(a):\n    """Doc."""\n    return g(', "return g(\n"),
        ("```python\ndef f(a):\n    return (a +", "return (a +\n"),
        ("```python\nx = 1\ndef f(a):\n    return (a +", "x = 1\ndef f(a):\n    return (a +\n"),
    ],
)
def test_the_body_comes_from_the_reply(reply: str, body: str) -> None:
    assert body_from_reply(reply, "f") == body


def test_scores() -> None:
    assert levenshtein("kitten", "sitting") == 3
    assert levenshtein("", "abc") == 3
    assert edit_similarity("x = 1  # set\n\nreturn x", "x = 1\nreturn x") == 1.0
    assert edit_similarity("return 1", "return 2") == pytest.approx(1 - 1 / 8)
    assert identifier_scores("a = f(b)", "a = g(b, b)") == (pytest.approx(2 / 3), pytest.approx(2 / 4))
    assert identifier_scores("", "return x") == (0.0, 0.0)
    assert body_parses("x = await y\nreturn x\n")
    assert not body_parses("return (\n")


def test_arms_parse_and_refuse_unknown_names() -> None:
    assert parse_repo_arms("all") == list(REPO_ARMS)
    assert parse_repo_arms("infile, func-pkg") == ["infile", "func-pkg"]
    with pytest.raises(ConfigError, match="func-pkg"):
        parse_repo_arms("infile,nope")


@pytest.mark.cli
def test_the_cli_refuses_an_unknown_repository_arm(tmp_path: Path) -> None:
    done = run_cli("compare", "--benchmark", "repo", "--arms", "nope", "--out", str(tmp_path / "run"))
    assert done.returncode != 0
    assert "unknown repository arm(s) nope" in done.stderr
    assert not (tmp_path / "run" / "pkg").exists()


@pytest.fixture(scope="module")
def tenacity_pkg(module_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo-pkg")
    build_repositories(root, module_embedder, None, repositories=[TENACITY])
    return root


@pytest.mark.model
def test_retrieval_never_shows_the_tasks_own_file(tenacity_pkg: Path, module_embedder: Embedder) -> None:
    with KnowledgeBase(tenacity_pkg / "tenacity", embedder=module_embedder) as kb:
        for task in load_repo_tasks([TENACITY], per_repository=6):
            for arm in ("bm25-chunk", "chunk", "func-pkg", "func-pkg+callees", "hybrid"):
                found = retrieve(kb, REPO_ARMS[arm], task)
                assert len(found) == 3, (arm, task.task_id)
                assert all(r.path != task.path for r in found)
                assert all("\n".join(code_lines(task.body)) not in "\n".join(code_lines(r.text)) for r in found)
                assert all(where(r, task).startswith(r.path.rsplit("/tenacity/", 1)[1]) for r in found)


@pytest.mark.model
@pytest.mark.llm
def test_a_real_run_scores_every_arm_of_every_task(
    tenacity_pkg: Path, module_embedder: Embedder, tmp_path: Path
) -> None:
    tasks = load_repo_tasks([TENACITY], per_repository=2)
    generator = make_generator("llama:smollm2-135m")
    try:
        run = RepoRun(tasks, ["infile", "func-pkg"], generator, tenacity_pkg, tmp_path, module_embedder)
        records = run_repo(run)
    finally:
        generator.close()
    assert [(r.task_id, r.arm) for r in records] == [(t.task_id, a) for t in tasks for a in ("infile", "func-pkg")]
    for record in records:
        assert record.reply and record.prompt_tokens > 0
        assert 0.0 <= record.edit_similarity <= 1.0
        assert record.parses == body_parses(record.body)
    with_context = [r for r in records if r.arm == "func-pkg"]
    assert all(r.context and r.retrieved and r.context_tokens > 0 for r in with_context)
    assert all(not r.context for r in records if r.arm == "infile")
    rows = summarise(records, ["infile", "func-pkg"])
    assert [row["tasks"] for row in rows] == [2, 2]
    table = write_repo_report(tmp_path, records, ["infile", "func-pkg"], ["- a note"])
    assert "| func-pkg | 2 |" in table
    saved = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [s["body"] for s in saved] == [r.body for r in records]
