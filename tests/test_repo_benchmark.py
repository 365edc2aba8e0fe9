"""The repository-level completion benchmark: tasks sampled per stratum from installed packages (their
cross-file needs decided statically, the in-file context keeping the imports), the three prompt layouts,
the body taken from a reply or a continuation, the scores and the per-stratum report with its bootstrap;
and a real run (SmolLM2, MiniLM, a real package's PKG) where retrieval never shows the task's own file."""

from __future__ import annotations

import ast
import json
from functools import cache
from pathlib import Path

import pytest

from pkg.benchmarks.cross_file import Needed
from pkg.benchmarks.repo import (
    CROSS_FILE,
    ELISION,
    IN_FILE,
    PER_STRATUM,
    PILOT_PER_STRATUM,
    REPOSITORIES,
    Repository,
    RepoTask,
    code_lines,
    import_block,
    is_test_file,
    load_repo_tasks,
    repository_candidates,
    unknown_names,
)
from pkg.embedders import Embedder
from pkg.errors import BenchmarkError, ConfigError
from pkg.evaluation.repo import (
    AUTO,
    CHECK,
    DRAFT_DEFS,
    NOTHING_INVENTED,
    RECHECK,
    REPO_ARMS,
    ContextSettings,
    RepoRun,
    arm_context,
    body_from_continuation,
    body_from_reply,
    body_parses,
    bootstrap_interval,
    build_repositories,
    context_first_messages,
    defines,
    derive_auto,
    derive_check,
    edit_similarity,
    identifier_scores,
    levenshtein,
    parse_layouts,
    parse_repo_arms,
    raw_stops,
    repo_messages,
    repo_prompt,
    retrieve,
    run_repo,
    score,
    summarise,
    where,
    write_repo_report,
)
from pkg.generators import make_generator
from pkg.knowledge_base import KnowledgeBase
from retrieval import definitions
from retrieval.prompt import TRUNCATED, ContextItem
from retrieval.tokenize import estimate_tokens
from tests.conftest import run_cli

TENACITY = next(r for r in REPOSITORIES if r.package == "tenacity")


@cache
def _all_tasks() -> tuple[RepoTask, ...]:
    return tuple(load_repo_tasks())


@cache
def _candidates(package: str) -> dict[str, list[RepoTask]]:
    return repository_candidates(next(r for r in REPOSITORIES if r.package == package))


def _task(task_id: str) -> RepoTask:
    package = task_id.split("/", 1)[0]
    return next(t for tasks in _candidates(package).values() for t in tasks if t.task_id == task_id)


def test_tasks_are_deterministic_and_stratified() -> None:
    tasks = _all_tasks()
    assert list(tasks) == load_repo_tasks()
    assert len({t.task_id for t in tasks}) == len(tasks)
    strata = [t.stratum for t in tasks]
    assert strata.count(CROSS_FILE) >= 150 and strata.count(IN_FILE) >= 100
    assert {t.repository for t in tasks} == {r.package for r in REPOSITORIES}
    for repository in REPOSITORIES:  # per package: the quota, or every candidate when there are fewer
        candidates = _candidates(repository.package)
        for stratum, quota in PER_STRATUM.items():
            mine = [t for t in tasks if t.repository == repository.package and t.stratum == stratum]
            assert {t.task_id for t in mine} == {t.task_id for t in candidates[stratum][:quota]}
    assert all(bool(t.needs) == (t.stratum == CROSS_FILE) for t in tasks)


def test_the_pilot_is_balanced_and_part_of_the_run() -> None:
    pilot = load_repo_tasks(per_stratum=PILOT_PER_STRATUM)
    assert len(pilot) == 60
    assert {(t.repository, t.stratum) for t in pilot} == {(r.package, s) for r in REPOSITORIES for s in PER_STRATUM}
    assert {t.task_id for t in pilot} <= {t.task_id for t in _all_tasks()}


def test_no_task_comes_from_a_test_file() -> None:
    assert is_test_file("core_test.py") and is_test_file("test_core.py") and is_test_file("conftest.py")
    assert is_test_file("sub/tests/helpers.py") and not is_test_file("testing_tools.py")
    fire = _candidates("fire")
    assert any(Path(fire[IN_FILE][0].path).parent.glob("*_test.py"))  # fire keeps its tests beside its code
    assert not any(is_test_file(t.relpath) for tasks in fire.values() for t in tasks)


def test_a_task_hides_its_body_and_ends_at_its_header() -> None:
    for task in _all_tasks():
        assert 2 <= len(code_lines(task.body)) <= 12
        assert "\n".join(code_lines(task.body)) not in "\n".join(code_lines(task.prefix))
        source = Path(task.path).read_text(encoding="utf-8")
        tail = task.prefix.split(ELISION)[-1]  # after the elided lines, the file's text up to the body
        before_body = "".join(source.splitlines(keepends=True)[: task.body_line - 1])
        assert before_body.endswith(tail) and task.file_before_body() == before_body
        rest = source[len(before_body) :]
        assert code_lines(rest)[: len(code_lines(task.body))] == code_lines(task.body)
        header = task.prefix.splitlines()
        assert any(line.lstrip().startswith(("def ", "async def ")) for line in header[-40:])


def test_the_in_file_context_keeps_the_import_block() -> None:
    elided = [t for t in _all_tasks() if ELISION in t.prefix]
    assert len(elided) >= 100  # most files are longer than the 768-word context
    for task in elided:
        source = Path(task.path).read_text(encoding="utf-8")
        start, end = import_block(ast.parse(source)) or (0, 0)
        imports = "".join(source.splitlines(keepends=True)[start:end])
        assert task.prefix.startswith(imports + ELISION)
        assert task.prefix.count(ELISION) == 1
    short = [t for t in _all_tasks() if ELISION not in t.prefix]
    assert short and all(t.file_before_body().endswith(t.prefix) for t in short)


def test_fewer_tasks_per_stratum_keep_the_same_first_picks() -> None:
    few = load_repo_tasks([TENACITY], per_stratum={CROSS_FILE: 2, IN_FILE: 3})
    many = load_repo_tasks([TENACITY])
    assert {t.task_id for t in few} <= {t.task_id for t in many}
    assert [t.stratum for t in few].count(CROSS_FILE) == 2 and len(few) == 5


def test_a_missing_package_is_an_error_that_says_so() -> None:
    with pytest.raises(BenchmarkError, match="not installed"):
        load_repo_tasks([Repository("no_such_package_here", "no-such", "")])


@pytest.mark.parametrize(
    ("task_id", "needs"),
    [
        # `from .util import normalize_file, CheckResult` (the names), `util.` (the module)
        (
            "pathspec/pathspec.py:PathSpec.check_file",
            [Needed("pathspec.util.CheckResult", "util.py"), Needed("pathspec.util.normalize_file", "util.py")],
        ),
        ("pathspec/pathspec.py:PathSpec.match_tree_files", [Needed("pathspec.util.iter_tree_files", "util.py")]),
        # `formatting.Underline(...)` through `from fire import formatting`
        ("fire/helptext.py:_GetPossibleActionsString", [Needed("fire.formatting.Underline", "formatting.py")]),
        # super().__init__ of a base class imported from the package's __init__
        ("tenacity/tornadoweb.py:TornadoRetrying.__init__", [Needed("tenacity.BaseRetrying.__init__", "__init__.py")]),
        # self.<inherited members> of a base class in another file
        (
            "tenacity/asyncio/__init__.py:AsyncRetrying.iter",
            [
                Needed("tenacity.BaseRetrying._begin_iter", "__init__.py"),
                Needed("tenacity.BaseRetrying.iter_state", "__init__.py"),
            ],
        ),
        # re-exported: imported from mcp.client.auth (its __init__), defined in its exceptions module
        (
            "mcp/client/auth/utils.py:validate_authorization_response_iss",
            [Needed("mcp.client.auth.exceptions.OAuthFlowError", "client/auth/exceptions.py")],
        ),
        # in-file: what it uses is its own class's, or the builtins
        ("pyrsistent/_plist.py:PList.__new__", []),
        ("tenacity/retry.py:retry_base.__rand__", []),
    ],
)
def test_tasks_are_tagged_by_the_symbols_of_other_files_their_body_uses(task_id: str, needs: list[Needed]) -> None:
    task = _task(task_id)
    assert list(task.needs) == needs
    assert task.stratum == (CROSS_FILE if needs else IN_FILE)


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
    with pytest.raises(ConfigError, match="takes its replies from infile and defs"):
        parse_repo_arms("infile,auto")
    with pytest.raises(ConfigError, match="check takes its replies from infile and defs[+]func"):
        parse_repo_arms("infile,defs,check")
    with pytest.raises(ConfigError, match="recheck reads infile's reply first"):
        parse_repo_arms("defs,recheck")


def test_layouts_parse_per_arm() -> None:
    arms = ["infile", "defs", "func-pkg"]
    assert parse_layouts("chat", arms) == dict.fromkeys(arms, "chat")
    assert parse_layouts("repo,defs=chat-context-first", arms) == {
        "infile": "repo",
        "defs": "chat-context-first",
        "func-pkg": "repo",
    }
    assert parse_layouts("func-pkg=chat", arms)["infile"] == "repo"  # arms not named get DEFAULT_LAYOUT
    with pytest.raises(ConfigError, match="chat-context-first"):
        parse_layouts("fim", arms)
    with pytest.raises(ConfigError, match="unknown repository arm 'nope'"):
        parse_layouts("nope=repo", arms)


STUB = ContextItem(
    "stop.py", "class stop_after_attempt(stop_base):\n    def __init__(self, max_attempt_number: int) -> None: ..."
)


def test_the_chat_layouts_put_the_labelled_context_before_or_after_the_file() -> None:
    task = _task("tenacity/tornadoweb.py:TornadoRetrying.__init__")
    after = repo_messages(task, [STUB])[0]["content"]
    first = context_first_messages(task, [STUB])[0]["content"]
    for prompt in (after, first):
        assert task.prefix.rstrip() in prompt and STUB.code in prompt and prompt.endswith("any other code of the file.")
    assert after.index(task.prefix.rstrip()) < after.index(STUB.code) and "# stop.py" not in after
    assert first.index(f"# stop.py\n{STUB.code}") < first.index(task.prefix.rstrip())
    assert "From other files of `tenacity`" not in context_first_messages(task, [])[0]["content"]


def test_the_repo_layout_is_qwens_repository_format_ending_after_the_docstring() -> None:
    task = _task("tenacity/tornadoweb.py:TornadoRetrying.__init__")
    prompt = repo_prompt(task, [STUB, ContextItem("wait.py", "  ")])  # an empty snippet makes no file
    assert prompt == (
        f"<|repo_name|>tenacity\n<|file_sep|>tenacity/stop.py\n{STUB.code}\n"
        f"<|file_sep|>tenacity/tornadoweb.py\n{task.prefix}"
    )
    assert prompt.endswith(") -> None:\n") and task.indent == " " * 8  # the model goes on with the body
    assert raw_stops(task) == ("<|file_sep|>", "\n    def ", "\n    async def ", "\n    @", "\nclass ")
    assert raw_stops(_task("fire/helptext.py:_GetPossibleActionsString"))[1] == "\ndef "
    assert raw_stops(_task("pathspec/pathspec.py:PathSpec.check_file"))[1] == "\n\tdef "  # indented by tabs


@pytest.mark.parametrize(
    ("text", "body"),
    [
        ("        x = 1\n\n        return x\n\n    def other(self):\n        pass\n", "x = 1\n\nreturn x\n"),
        (
            "        if a:\n            return (\n                1\n            )\nclass B:\n",
            "if a:\n    return (\n        1\n    )\n",
        ),
        ("        return 1", "return 1\n"),
        ("    pass\n", ""),  # at once one level out: no body
        ("", ""),
    ],
)
def test_a_continuation_is_cut_where_the_bodys_indentation_ends(text: str, body: str) -> None:
    assert body_from_continuation(text, " " * 8) == body


def test_context_recall_looks_for_the_definition_of_each_needed_symbol() -> None:
    assert defines(STUB.code, "stop_after_attempt") and defines(STUB.code, "__init__")
    assert defines("# util.py\nDEFAULT: int = 3\n", "DEFAULT") and defines("async def fetch(x): ...", "fetch")
    assert not defines("stop_after_attempt(3)\nx = stop_after_attemptx", "stop_after_attempt")
    assert not defines("if DEFAULT == 3:", "DEFAULT")
    task = _task("pathspec/pathspec.py:PathSpec.check_file")
    record = score(task, "defs", "return CheckResult(file, True, 0)\n", "class CheckResult:\n    file: str")
    assert (record.needed, record.needed_in_context, record.needed_in_body) == (2, 1, 1)
    assert record.stratum == CROSS_FILE


def test_the_bootstrap_interval_is_seeded_and_brackets_the_mean() -> None:
    differences = [0.3, -0.1, 0.2, 0.0, 0.5, 0.1, -0.2, 0.4]
    low, high = bootstrap_interval(differences)
    assert (low, high) == bootstrap_interval(differences)
    assert low < sum(differences) / len(differences) < high and low > -0.2 and high < 0.5
    assert bootstrap_interval([0.1] * 30) == (pytest.approx(0.1), pytest.approx(0.1))
    symmetric_low, symmetric_high = bootstrap_interval([-1.0, 1.0] * 50)
    assert symmetric_low < 0 < symmetric_high and symmetric_low == pytest.approx(-symmetric_high, abs=0.03)
    assert bootstrap_interval([1.0, 0.0, 1.0], resamples=20_000, seed=1) != (low, high)


def test_a_body_naming_what_the_package_never_mentions_is_caught() -> None:
    """pathspec's PathSpec.check_file: the reference names only what pathspec has; a small model's reply
    that calls an invented private method is caught, and nothing the reply binds, the builtins, another
    package's keyword argument or a name of the file around the body counts as invented."""
    task = _task("pathspec/pathspec.py:PathSpec.check_file")
    assert unknown_names(task, task.body) == []
    invented = "result = self._check_file(file, separators)\nreturn result\n"
    assert unknown_names(task, invented) == ["_check_file"]
    bound = (
        "import stat as zz_stat\nfor zz_kind, zz_path in enumerate(file):\n    self.zz_seen = len(zz_path)\n"
        "with open(zz_path, zz_newline='') as zz_handle:\n    return CheckResult(zz_handle, zz_kind, index=\n"
    )
    assert unknown_names(task, bound) == []  # cut short: its bindings from the part that parses
    assert unknown_names(task, bound.replace("zz_handle:", "handle:")) == ["zz_handle"]
    assert "check_file" not in task.body and unknown_names(task, "return self.check_file(file)\n") == []
    # the body being written is never read: importlib.import_module is named in import-linter only there
    hidden = _task("importlinter/application/use_cases.py:_string_to_class")
    assert "import_module" in hidden.body and unknown_names(hidden, hidden.body) == ["import_module"]


def test_check_takes_the_second_reply_only_where_the_first_invents_a_name() -> None:
    task = _task("pathspec/pathspec.py:PathSpec.check_file")
    infile = score(task, "infile", "return self._check_file(file)\n")
    infile.generation_seconds = 10.0
    second = score(task, "defs+func", task.body, "def normalize_file(file, separators=None): ...")
    second.generation_seconds = 12.0
    checked = derive_check(task, infile, second)
    assert (checked.arm, checked.body, checked.gated, checked.generation_seconds) == (CHECK, task.body, None, 22.0)
    infile = score(task, "infile", "return CheckResult(file, None, None)\n")
    kept = derive_check(task, infile, second)
    assert kept.body == infile.body and kept.context == "" and "names only what" in kept.gated


def test_the_report_has_every_stratum_and_auto_takes_its_replies_by_the_gate(tmp_path: Path) -> None:
    cross = _task("pathspec/pathspec.py:PathSpec.check_file")
    own = _task("pyrsistent/_plist.py:PList.__new__")
    records = []
    for task in (cross, own):
        infile = score(task, "infile", "pass\n")
        defs = score(task, "defs", task.body, "def normalize_file(file, separators=None): ...")
        defs.gated = None if task is cross else "the code uses only names of its own file"
        records += [infile, defs, derive_auto(infile, defs)]
    auto = [r for r in records if r.arm == AUTO]
    assert [r.body for r in auto] == [cross.body, "pass\n"] and auto[1].context == ""
    arms = ["infile", "defs", AUTO]
    by_stratum = {stratum: summarise(records, arms, stratum) for stratum in ("all", CROSS_FILE, IN_FILE)}
    assert [row["tasks"] for row in by_stratum["all"]] == [2, 2, 2]
    cross_rows = {row["arm"]: row for row in by_stratum[CROSS_FILE]}
    assert cross_rows["defs"]["exact match %"] == 100.0 and cross_rows["infile"]["exact match %"] == 0.0
    assert cross_rows["defs"]["context recall"] == 0.5 and cross_rows["infile"]["context recall"] == 0.0
    assert cross_rows["defs"]["needed-symbol recall"] == 1.0 and cross_rows["defs"]["EM helped"] == 1
    assert cross_rows["infile"]["ES vs infile [95% CI]"] == "–"
    assert cross_rows[AUTO]["ES vs infile [95% CI]"].startswith("+")
    assert {row["arm"]: row for row in by_stratum[IN_FILE]}[AUTO]["ES helped"] == 0
    assert by_stratum[IN_FILE][0]["context recall"] == "–"
    table = write_repo_report(tmp_path, records, arms, ["- a note"])
    assert [line for line in table.splitlines() if line.startswith("## ")] == [
        "## all tasks",
        "## cross-file tasks",
        "## in-file tasks",
    ]
    assert set(json.loads((tmp_path / "summary.json").read_text())["strata"]) == {"all", CROSS_FILE, IN_FILE}


@pytest.mark.cli
def test_the_cli_refuses_an_unknown_repository_arm(tmp_path: Path) -> None:
    done = run_cli("compare", "--benchmark", "repo", "--arms", "nope", "--out", str(tmp_path / "run"))
    assert done.returncode != 0
    assert "unknown repository arm(s) nope" in done.stderr
    assert not (tmp_path / "run" / "pkg").exists()
    done = run_cli("compare", "--benchmark", "repo", "--layout", "infile=fim", "--out", str(tmp_path / "run"))
    assert done.returncode != 0 and "unknown layout 'fim'" in done.stderr
    assert not (tmp_path / "run" / "pkg").exists()
    done = run_cli("compare", "--benchmark", "repo", "--shard", "3/2", "--out", str(tmp_path / "run"))
    assert done.returncode != 0 and "--shard" in done.stderr and "not '3/2'" in done.stderr
    assert not (tmp_path / "run" / "pkg").exists()


@pytest.mark.cli
@pytest.mark.llm
def test_the_cli_builds_the_packages_pkgs_where_db_says(tmp_path: Path) -> None:
    db, out = tmp_path / "pkgs", tmp_path / "run"
    done = run_cli(
        "compare", "--benchmark", "repo", "--arms", "infile", "--limit", "3", "--shard", "2/2", "--embedder",
        "static", "--generator", "llama:smollm2-135m", "--max-new-tokens", "8", "--db", str(db), "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (db / "tenacity").is_dir() and not (out / "pkg").exists()
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in records] == [_all_tasks()[1].task_id]  # the second shard of the first three


@pytest.fixture(scope="module")
def tenacity_pkg(module_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo-pkg")
    build_repositories(root, module_embedder, None, repositories=[TENACITY])
    return root


@pytest.mark.model
def test_retrieval_never_shows_the_tasks_own_file(tenacity_pkg: Path, module_embedder: Embedder) -> None:
    with KnowledgeBase(tenacity_pkg / "tenacity", embedder=module_embedder) as kb:
        for task in load_repo_tasks([TENACITY], per_stratum=PILOT_PER_STRATUM):
            for arm in ("bm25-chunk", "chunk+next", "func-pkg"):
                found = retrieve(kb, REPO_ARMS[arm], task)
                assert len(found) == 3, (arm, task.task_id)
                assert all(r.path != task.path for r in found)
                assert all("\n".join(code_lines(task.body)) not in "\n".join(code_lines(r.text)) for r in found)
                assert all(where(r, task).startswith(r.path.rsplit("/tenacity/", 1)[1]) for r in found)


@pytest.mark.model
def test_the_definitions_arms_hold_what_cross_file_bodies_need(tenacity_pkg: Path, module_embedder: Embedder) -> None:
    settings = ContextSettings(budget=256)
    with KnowledgeBase(tenacity_pkg / "tenacity", embedder=module_embedder) as kb:
        tasks = load_repo_tasks([TENACITY], per_stratum=PILOT_PER_STRATUM)
        found = needed = 0
        for task in tasks:
            defs = arm_context(settings, kb, REPO_ARMS["defs"], task)
            assert all(not line.startswith(task.relpath) for line in defs.retrieved)  # never its own file
            assert estimate_tokens(defs.text) <= 256
            found += sum(defines(defs.text, n.short) for n in task.needs)
            needed += len(task.needs)
            mixed = arm_context(settings, kb, REPO_ARMS["defs+func"], task)
            assert mixed.snippets[: len(defs.snippets)] == defs.snippets and mixed.gated == defs.gated
            assert len(mixed.retrieved) <= len(defs.retrieved) + 1 and estimate_tokens(mixed.text) <= 256 + 8
            # bm25+defs: bm25-chunk's first chunk, in at most half the budget, last; the definitions before it
            twin, chunks = (arm_context(settings, kb, REPO_ARMS[arm], task) for arm in ("bm25+defs", "bm25-chunk"))
            assert twin.retrieved[-1] == chunks.retrieved[0] and twin.snippets[-1].title == chunks.snippets[0].title
            shown = twin.snippets[-1].code.removesuffix(TRUNCATED).rstrip("\n")
            assert chunks.snippets[0].code.startswith(shown) and estimate_tokens(twin.snippets[-1].code) <= 128
            assert twin.gated == defs.gated and estimate_tokens(twin.text) <= 256 + 8
        assert needed and found / needed >= 0.5
        in_file = [arm_context(settings, kb, REPO_ARMS["defs"], t) for t in tasks if t.stratum == IN_FILE]
        # the gate opens only for code that uses names the graph resolves in other files (here each of
        # tenacity's three in-file pilot tasks does: @_utils.override, a base class); closed, no context
        assert all((c.gated is None) == bool(c.snippets) for c in in_file)


@pytest.mark.model
def test_a_draft_arm_retrieves_only_after_a_draft_that_invents_a_name(
    tenacity_pkg: Path, module_embedder: Embedder
) -> None:
    task = _task("tenacity/asyncio/__init__.py:AsyncRetrying._run_retry")
    recheck, settings = REPO_ARMS[RECHECK], ContextSettings(budget=256)
    with KnowledgeBase(tenacity_pkg / "tenacity", embedder=module_embedder) as kb:
        kept = arm_context(settings, kb, recheck, task, task.body)
        assert (kept.snippets, kept.gated) == ([], NOTHING_INVENTED)
        draft = "if retry_state.outcome.zz_failed_before:\n    self.iter_state.retry_run_result = True\n"
        found = arm_context(settings, kb, recheck, task, draft)
        assert found.gated is None and len(found.snippets) == len(found.retrieved) > 0
        assert not any(line.startswith(task.relpath) for line in found.retrieved)  # never its own file
        assert estimate_tokens(found.text) <= 256 + 8
        # the draft is part of the query: its words bring chunks the code at hand alone does not
        with_draft = [where(r, task) for r in retrieve(kb, recheck, task, 3, draft)]
        assert with_draft[: len(found.retrieved)] == found.retrieved
        assert with_draft != [where(r, task) for r in retrieve(kb, REPO_ARMS["bm25-chunk"], task, 3)]
        # defs+draft: the product's check (context_at with the draft), on the same replies as the benchmark's
        product = REPO_ARMS[DRAFT_DEFS]
        assert arm_context(settings, kb, product, task, task.body).gated == definitions.NOTHING_INVENTED
        misspelt = "if self.iter_state.zz_failed_before:\n    return self._post_retry_check_actons(retry_state)\n"
        checked = arm_context(settings, kb, product, task, misspelt)
        assert checked.gated is None and estimate_tokens(checked.text) <= 256 + 8
        assert "_post_retry_check_actions" in checked.text  # BaseRetrying's stub, its protected method shown
        # then the second round's code like the code and the draft, nearest the file
        again = kb.context_at(task.path, task.body_line - 1, task.file_without_body(), budget=256, draft=misspelt)
        assert again.similar and checked.snippets[-1].code == again.similar[-1].code
        for pilot in load_repo_tasks([TENACITY], per_stratum=PILOT_PER_STRATUM):
            for body in (pilot.body, misspelt, draft):
                found = kb.context_at(
                    pilot.path, pilot.body_line - 1, pilot.file_without_body(), draft=body, gate="always"
                )
                assert [i.name for i in found.invented] == unknown_names(pilot, body), pilot.task_id


@pytest.mark.model
@pytest.mark.llm
def test_a_real_run_scores_every_arm_of_a_task_in_its_layout(
    tenacity_pkg: Path, module_embedder: Embedder, tmp_path: Path
) -> None:
    tasks = [_task("tenacity/tornadoweb.py:TornadoRetrying.__init__")]
    arms = ["infile", "func-pkg", "defs", "defs+func", AUTO, CHECK, RECHECK, DRAFT_DEFS]
    layouts = {"infile": "chat", "func-pkg": "repo", "defs": "chat-context-first", "defs+func": "repo"}
    generator = make_generator("llama:smollm2-135m")
    try:
        run = RepoRun(tasks, arms, generator, tenacity_pkg, tmp_path, module_embedder)
        run.layouts, run.budget = layouts, 256  # BaseRetrying's stub (~250 tokens) does not fit 128
        records = run_repo(run)
    finally:
        generator.close()
    by_arm = {r.arm: r for r in records}
    assert [(r.task_id, r.arm) for r in records] == [(tasks[0].task_id, arm) for arm in arms]
    assert {arm: by_arm[arm].layout for arm in layouts} == layouts
    for record in records:
        assert record.reply and record.prompt_tokens > 0 and record.stratum == CROSS_FILE and record.needed == 1
        assert 0.0 <= record.edit_similarity <= 1.0
        assert record.parses == body_parses(record.body)
    infile, func, defs = by_arm["infile"], by_arm["func-pkg"], by_arm["defs"]
    assert not infile.context and infile.context_tokens == 0
    assert func.retrieved and 0 < func.context_tokens <= 256
    assert func.body == body_from_continuation(func.reply, tasks[0].indent)
    assert defs.gated is None and defs.needed_in_context == 1  # super().__init__: BaseRetrying's stub
    assert by_arm[AUTO].reply == defs.reply and by_arm[AUTO].generation_seconds == 0.0
    second = by_arm["defs+func"] if unknown_names(tasks[0], infile.body) else infile
    assert (by_arm[CHECK].reply, by_arm[CHECK].gated is None) == (second.reply, second is not infile)
    assert (by_arm[RECHECK].gated is None) == bool(by_arm[RECHECK].retrieved) == (second is not infile)
    assert (by_arm[DRAFT_DEFS].gated is None) == bool(by_arm[DRAFT_DEFS].retrieved)
    assert (by_arm[DRAFT_DEFS].gated is None) == bool(by_arm[DRAFT_DEFS].context)
    rows = summarise(records, arms)
    assert [row["tasks"] for row in rows] == [1] * len(arms)
    table = write_repo_report(tmp_path, records, arms, ["- a note"])
    assert "| func-pkg | repo | 1 |" in table and "| defs | chat-context-first | 1 |" in table
    saved = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [s["body"] for s in saved] == [r.body for r in records]
