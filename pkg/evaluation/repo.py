"""`pkg compare --benchmark repo`: repository-level completion. Each task's body is written once per arm
(in-file context only, or with context retrieved from the rest of its package) and scored against the
reference body as CrossCodeEval and RepoEval do: exact match, edit similarity, identifier precision
and recall; plus whether the body parses.

Tasks run one after another with all their arms back to back: the prompt starts with the in-file
context, which the arms share, so a local model reuses its evaluation for all but the first arm; and
an interrupted run leaves complete tasks behind (the generation cache resumes the rest).
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from statistics import mean

from pkg.benchmarks.repo import REPOSITORIES, Repository, RepoTask, code_lines, identifiers, package_root, source_files
from pkg.embedders import Embedder
from pkg.evaluation.arms import GENERATING, Arm, expand_names
from pkg.evaluation.extract import code_blocks
from pkg.evaluation.prompts import context_block, fit_snippets
from pkg.generators.base import GenerationParams, Generator, Message
from pkg.knowledge_base import KnowledgeBase
from pkg.progress import Progress, no_progress
from retrieval.search import Expand, Mode, Neighbour, Options, Result

#: The repository benchmark's arms (the same record as `pkg compare`'s arms, three of them the very same;
#: mode None: in-file only).
REPO_ARMS: dict[str, Arm] = {
    arm.name: arm
    for arm in (
        Arm("infile", None, description="the in-file context alone (NoRAG)"),
        Arm("bm25-chunk", Mode.BM25_CHUNK, description="BM25 over cAST chunks"),
        GENERATING["chunk"],
        Arm("chunk+next", Mode.CHUNK, Options(neighbour=Neighbour.NEXT), description="a chunk and the one after it"),
        GENERATING["func-pkg"],
        GENERATING["block-pkg"],
        Arm(
            "func-pkg+callees",
            Mode.FUNC,
            Options(expand=Expand.CALLEES),
            description="PKG functions with the signatures of what they call",
        ),
        Arm("hybrid", Mode.HYBRID, description="BM25 and vector rankings of chunks, fused"),
    )
}
BASELINE = "infile"
#: Retrieved context per prompt, in model tokens: with a ~900-token in-file context and 128 new
#: tokens the prompt stays near 1.5k tokens, which a 2-core CPU evaluates in 10-20 s.
REPO_CONTEXT_BUDGET = 512
MAX_NEW_TOKENS = 128
#: A code block's closing fence: an opening fence starts the reply, or follows a line of text and carries the
#: language tag the prompt asks for, so neither has a newline on both sides.
CLOSING_FENCE = "\n```\n"
K = 3


def parse_repo_arms(spec: str) -> list[str]:
    """Comma-separated repository arms, or `all`; unknown names are an error naming the valid ones."""
    return expand_names(spec, list(REPO_ARMS), "repository arm", {"all": list(REPO_ARMS)})


@dataclass
class RepoRecord:
    """One arm's body for one task, and its scores against the reference."""

    task_id: str
    arm: str
    body: str
    reply: str
    exact: bool
    edit_similarity: float
    identifier_precision: float
    identifier_recall: float
    parses: bool
    context: str = ""
    context_tokens: int = 0
    retrieved: list[str] = field(default_factory=list)  # where each snippet came from
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generation_seconds: float = 0.0


# --- prompt and answer -------------------------------------------------------------------------------


def repo_messages(task: RepoTask, snippets: Sequence[str]) -> list[Message]:
    """The in-file context first (shared by every arm of a task), then the retrieved context, then the ask.

    The ask names what not to write: asked only for "the statements that follow", Qwen2.5-Coder-1.5B
    rewrote the whole class, or the file's imports (running out of its 128 tokens), on both mcp tasks
    tried with context; with the prohibition its five replies held statements alone (one of them the
    class's fields instead of the body)."""
    intro = f"Complete the body of one function of the Python package `{task.repository}`.\n\n"
    file = (
        f"The file `{task.relpath}` so far; it ends with the signature and docstring of `{task.name}`:\n"
        f"```python\n{task.prefix.rstrip()}\n```\n\n"
    )
    context = context_block(snippets).replace(
        "from a programming knowledge graph", f"from other files of `{task.repository}`"
    )
    ask = (
        f"Write only the body of `{task.function_name}`: the statements that follow its docstring, indented as in "
        "the file, in one ```python code block. Do not repeat its signature, its docstring or any other code of "
        "the file."
    )
    return [{"role": "user", "content": intro + file + context + ask}]


def body_from_reply(reply: str, function_name: str) -> str:
    """The body a reply writes, dedented: from a whole function of that name if it wrote one (its
    docstring dropped), else the first code block (or the reply) as it stands."""
    blocks = code_blocks(reply)
    code = textwrap.dedent(blocks[0] if blocks else reply)
    try:
        tree = ast.parse(code)
    except SyntaxError:  # cut short by the token limit, most often: drop a header it repeats by its text
        return _after_header(code, function_name).strip("\n") + "\n"
    lines = code.splitlines(keepends=True)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function_name:
            statements = node.body[1:] if ast.get_docstring(node, clean=False) is not None else node.body
            if statements:
                return textwrap.dedent("".join(lines[statements[0].lineno - 1 : node.end_lineno]))
    statements = tree.body
    if statements and isinstance(statements[0], ast.Expr) and isinstance(statements[0].value, ast.Constant):
        statements = statements[1:]  # a repeated docstring
    if not statements:
        return ""
    return "".join(lines[statements[0].lineno - 1 :]).rstrip("\n") + "\n"


_TRIPLE_QUOTES = ('"""', "'''")


def _after_header(code: str, function_name: str) -> str:
    """Code that does not parse, without the `def` of `function_name` and its docstring if it starts with
    them (a whole function cut short); otherwise as it is."""
    lines = code.splitlines(keepends=True)
    start = next(
        (i for i, line in enumerate(lines) if re.match(rf"\s*(async\s+)?def\s+{re.escape(function_name)}\s*\(", line)),
        None,
    )
    if start is None or any(line.strip() and not line.lstrip().startswith("@") for line in lines[:start]):
        return code
    end, depth = start, 0
    while end < len(lines):  # the signature ends at a colon outside brackets
        depth += sum(lines[end].count(c) for c in "([{") - sum(lines[end].count(c) for c in ")]}")
        end += 1
        if depth <= 0 and lines[end - 1].rstrip().endswith(":"):
            break
    rest = lines[end:]
    first = next((i for i, line in enumerate(rest) if line.strip()), None)
    if first is not None and rest[first].strip()[:3] in _TRIPLE_QUOTES:
        quote = rest[first].strip()[:3]
        closing = first if rest[first].strip().count(quote) >= 2 and len(rest[first].strip()) > 3 else None
        if closing is None:
            closing = next((i for i in range(first + 1, len(rest)) if quote in rest[i]), len(rest) - 1)
        rest = rest[closing + 1 :]
    return textwrap.dedent("".join(rest))


# --- scores ---------------------------------------------------------------------------------------------


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute: cost 1 each), one row at a time."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def edit_similarity(prediction: str, reference: str) -> float:
    """1 - Levenshtein distance / the longer length, over the code lines (RepoCoder's measure)."""
    a, b = "\n".join(code_lines(prediction)), "\n".join(code_lines(reference))
    if not a and not b:
        return 1.0
    return 1.0 - levenshtein(a, b) / max(len(a), len(b))


def identifier_scores(prediction: str, reference: str) -> tuple[float, float]:
    """Precision and recall of the prediction's identifiers against the reference's, as multisets."""
    predicted, expected = identifiers(prediction), identifiers(reference)
    remaining = list(expected)
    common = 0
    for name in predicted:
        if name in remaining:
            remaining.remove(name)
            common += 1
    precision = common / len(predicted) if predicted else 0.0
    recall = common / len(expected) if expected else 1.0
    return precision, recall


def body_parses(body: str) -> bool:
    """Whether a body is valid as the statements of a function (async, so that `await` is allowed)."""
    try:
        ast.parse("async def _completion():\n" + textwrap.indent(body or "pass\n", "    "))
    except (SyntaxError, ValueError):
        return False
    return True


def score(task: RepoTask, arm: str, body: str) -> RepoRecord:
    precision, recall = identifier_scores(body, task.body)
    return RepoRecord(
        task_id=task.task_id,
        arm=arm,
        body=body,
        reply="",
        exact=bool(code_lines(body)) and code_lines(body) == code_lines(task.body),
        edit_similarity=edit_similarity(body, task.body),
        identifier_precision=precision,
        identifier_recall=recall,
        parses=body_parses(body),
    )


# --- retrieval ------------------------------------------------------------------------------------------


def build_repositories(
    db_root: Path,
    embedder: str | Embedder | None,
    cache_dir: Path | None,
    progress: Progress = no_progress,
    repositories: Sequence[Repository] = REPOSITORIES,
) -> dict[str, dict]:
    """One PKG per repository under `db_root` (built, or updated incrementally); their node counts."""
    sizes = {}
    for repository in repositories:
        with KnowledgeBase(db_root / repository.package, embedder=embedder, cache_dir=cache_dir) as kb:
            kb.build(source_files(package_root(repository.package)), progress=progress)
            sizes[repository.package] = dict(kb.stats().counts.nodes)
    return sizes


def _copies_body(text: str, body: str) -> bool:
    """Whether retrieved text holds the reference body (a copy of it elsewhere in the package)."""
    return "\n".join(code_lines(body)) in "\n".join(code_lines(text))


def retrieve(kb: KnowledgeBase, arm: Arm, task: RepoTask) -> list[Result]:
    """The arm's top K for the task, never from the task's own file nor a copy of its body."""
    if arm.mode is None:
        return []
    options = replace(arm.options, exclude_sources=frozenset({task.path}))
    found = kb.query(task.query, arm.mode, K + 2, options).results
    return [r for r in found if not _copies_body(r.text, task.body)][:K]


def where(result: Result, task: RepoTask) -> str:
    """Where a snippet came from: its file inside the task's package, its lines, its name."""
    root = task.path.removesuffix(task.relpath)
    return f"{result.path.removeprefix(root)}:{result.lines[0]}-{result.lines[1]} {result.name}"


# --- the run --------------------------------------------------------------------------------------------


@dataclass
class RepoRun:
    """One repository run: the tasks and arms, the model, where the packages' PKGs are and the outputs go."""

    tasks: Sequence[RepoTask]
    arms: Sequence[str]
    generator: Generator
    db_root: Path
    out_dir: Path
    embedder: str | Embedder | None = None
    cache_dir: Path | None = None
    params: GenerationParams = field(default_factory=lambda: repo_params(MAX_NEW_TOKENS))


def repo_params(max_new_tokens: int) -> GenerationParams:
    """Greedy, at most `max_new_tokens`, stopping where the code block closes: what a reply says after
    its code is never scored, and it cost 3-4 s a reply on this CPU."""
    return GenerationParams(max_new_tokens=max_new_tokens, stop=(CLOSING_FENCE,))


def run_repo(run: RepoRun, progress: Progress = no_progress) -> list[RepoRecord]:
    """Every arm's body for every task, task by task; the records, also written to the output folder."""
    records: list[RepoRecord] = []
    open_kbs: dict[str, KnowledgeBase] = {}
    results = run.out_dir / "results.jsonl"
    run.out_dir.mkdir(parents=True, exist_ok=True)
    try:
        with results.open("w", encoding="utf-8") as sink:
            for done, task in enumerate(run.tasks, start=1):
                kb = open_kbs.get(task.repository)
                if kb is None:
                    kb = open_kbs[task.repository] = KnowledgeBase(
                        run.db_root / task.repository, embedder=run.embedder, cache_dir=run.cache_dir
                    )
                for arm_name in run.arms:
                    record = _one(run, kb, REPO_ARMS[arm_name], task)
                    records.append(record)
                    sink.write(json.dumps(asdict(record)) + "\n")
                sink.flush()
                progress("tasks", done, len(run.tasks))
    finally:
        for kb in open_kbs.values():
            kb.close()
    return records


def _one(run: RepoRun, kb: KnowledgeBase, arm: Arm, task: RepoTask) -> RepoRecord:
    found = retrieve(kb, arm, task)
    snippets, _ = fit_snippets([r.pruned_text for r in found], REPO_CONTEXT_BUDGET, run.generator.count_tokens)
    reply = run.generator.generate(repo_messages(task, snippets), run.params)
    record = score(task, arm.name, body_from_reply(reply.text, task.function_name))
    record.reply = reply.text
    record.context = context_block(snippets)
    record.context_tokens = run.generator.count_tokens(record.context) if snippets else 0
    record.retrieved = [where(r, task) for r in found[: len(snippets)]]
    record.prompt_tokens = reply.prompt_tokens
    record.completion_tokens = reply.completion_tokens
    record.generation_seconds = reply.seconds
    return record


# --- the report -----------------------------------------------------------------------------------------

#: An arm helps (hurts) a task when its edit similarity is at least this much above (below) the in-file arm's.
ES_MARGIN = 0.1
COLUMNS = (
    "arm",
    "tasks",
    "exact match %",
    "edit similarity",
    "identifier precision",
    "identifier recall",
    "parses %",
    "context tokens",
    "prompt tokens",
    "generation s",
    "EM helped",
    "EM hurt",
    "ES helped",
    "ES hurt",
)


def summarise(records: Sequence[RepoRecord], arms: Sequence[str]) -> list[dict]:
    """One row per arm; help/hurt against the in-file arm when it ran."""
    baseline = {r.task_id: r for r in records if r.arm == BASELINE}
    rows = []
    for arm in arms:
        group = [r for r in records if r.arm == arm]
        if not group:
            continue
        paired = [(r, baseline[r.task_id]) for r in group if r.task_id in baseline and arm != BASELINE]
        rows.append(
            {
                "arm": arm,
                "tasks": len(group),
                "exact match %": round(100.0 * mean(r.exact for r in group), 1),
                "edit similarity": round(mean(r.edit_similarity for r in group), 3),
                "identifier precision": round(mean(r.identifier_precision for r in group), 3),
                "identifier recall": round(mean(r.identifier_recall for r in group), 3),
                "parses %": round(100.0 * mean(r.parses for r in group), 1),
                "context tokens": round(mean(r.context_tokens for r in group)),
                "prompt tokens": round(mean(r.prompt_tokens for r in group)),
                "generation s": round(mean(r.generation_seconds for r in group), 1),
                "EM helped": _count(paired, lambda r, b: r.exact and not b.exact),
                "EM hurt": _count(paired, lambda r, b: b.exact and not r.exact),
                "ES helped": _count(paired, lambda r, b: r.edit_similarity >= b.edit_similarity + ES_MARGIN),
                "ES hurt": _count(paired, lambda r, b: r.edit_similarity <= b.edit_similarity - ES_MARGIN),
            }
        )
    return rows


def _count(
    paired: Sequence[tuple[RepoRecord, RepoRecord]], test: Callable[[RepoRecord, RepoRecord], bool]
) -> int | str:
    return sum(test(r, b) for r, b in paired) if paired else "–"


def write_repo_report(out_dir: Path, records: Sequence[RepoRecord], arms: Sequence[str], notes: Sequence[str]) -> str:
    """table.md and summary.json in `out_dir`; returns the table."""
    rows = summarise(records, arms)
    lines = [
        "# PKG on repository-level completion: one body per task and arm",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
        *("| " + " | ".join(str(row[c]) for c in COLUMNS) + " |" for row in rows),
        "",
        *notes,
        "",
    ]
    table = "\n".join(lines)
    (out_dir / "table.md").write_text(table, encoding="utf-8")
    (out_dir / "summary.json").write_text(json.dumps({"rows": rows, "notes": list(notes)}, indent=2) + "\n")
    return table
