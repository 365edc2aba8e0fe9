"""`pkg compare --benchmark repo`: repository-level completion. Each task's body is written once per arm
(in-file context only, context retrieved from the rest of its package by similarity, or the definitions
of the names the code uses) in the arm's prompt layout, and scored against the reference body as
CrossCodeEval and RepoEval do: exact match, edit similarity, identifier recall; plus how many of the
symbols the body needs from other files the context holds and the body uses. Reported per stratum
(all, cross-file, in-file) with paired bootstrap intervals against the in-file arm.

Tasks run one after another with all their arms back to back: the prompts of a layout start with the
same text, which a local model evaluates once per task; an interrupted run leaves complete tasks behind
(the generation cache resumes the rest).
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from statistics import mean

import numpy as np

from pkg.benchmarks.repo import (
    CROSS_FILE,
    IN_FILE,
    REPOSITORIES,
    Repository,
    RepoTask,
    code_lines,
    identifiers,
    package_root,
    source_files,
    unknown_names,
)
from pkg.embedders import Embedder
from pkg.errors import ConfigError
from pkg.evaluation.arms import expand_names
from pkg.evaluation.extract import code_blocks
from pkg.evaluation.prompts import context_block
from pkg.generators.base import Completion, GenerationParams, Generator, Message
from pkg.knowledge_base import KnowledgeBase
from pkg.progress import Progress, no_progress
from retrieval.definitions import DEFAULT_REACH, DefinitionsContext
from retrieval.prompt import ContextItem, fit_snippets
from retrieval.search import Mode, Neighbour, Options, Result
from retrieval.tokenize import estimate_tokens


@dataclass(frozen=True)
class RepoArm:
    """How an arm gets its context: similar code by `mode` (None: none), the definitions of the names the
    code uses (`definitions`), or neither, its replies taken from other arms (`derived`). With both, the
    definitions come first and the similar code gets what is left, unless `similar_first`: then the one most
    similar snippet takes at most half the budget and the definitions the rest. A `draft` arm reads the
    in-file reply first: only where it names what the package never mentions does the arm retrieve, for the
    code at hand and that draft together (RepoCoder's second round); elsewhere its prompt is in-file's."""

    name: str
    description: str
    mode: Mode | None = None
    options: Options = Options()
    definitions: bool = False
    derived: bool = False
    similar_first: bool = False
    draft: bool = False


BASELINE = "infile"
DEFS = "defs"
AUTO = "auto"
CHECK = "check"
RECHECK = "recheck"
DRAFT_DEFS = "defs+draft"
#: The arm whose reply the check takes where in-file's names something the package does not.
CHECKED = "defs+func"
NOTHING_INVENTED = "the in-file reply names only what the package, its file and the builtins do"
#: The arms a derived arm takes its replies from.
DERIVED_FROM = {AUTO: (BASELINE, DEFS), CHECK: (BASELINE, CHECKED)}
#: The repository benchmark's arms.
REPO_ARMS: dict[str, RepoArm] = {
    arm.name: arm
    for arm in (
        RepoArm(BASELINE, "the in-file context alone (NoRAG)"),
        RepoArm("bm25-chunk", "BM25 over cAST chunks", Mode.BM25_CHUNK),
        RepoArm("chunk+next", "a chunk by vector and the one after it", Mode.CHUNK, Options(neighbour=Neighbour.NEXT)),
        RepoArm("func-pkg", "PKG functions by vector, pruned", Mode.FUNC),
        RepoArm(DEFS, "stubs of the definitions the code uses, from the graph (context_at)", definitions=True),
        RepoArm(
            "defs+func",
            "the definitions, then the best similar function in what is left of the budget",
            Mode.FUNC,
            definitions=True,
        ),
        # bm25-chunk's gain on the first 116 tasks (+0.039) came from near-twin functions, its first chunk;
        # definitions alone moved nothing: this arm keeps that chunk and gives the definitions the rest
        RepoArm(
            "bm25+defs",
            "the most similar chunk by BM25 (at most half the budget), then the definitions in what is left",
            Mode.BM25_CHUNK,
            definitions=True,
            similar_first=True,
        ),
        RepoArm(
            AUTO,
            "the retrieve-or-not gate: defs' reply where context_at's auto gate gives context, else infile's",
            derived=True,
        ),
        # gates that read the reply instead of the code at hand; check's second reply is defs+func's, chosen on
        # the pilot (60 tasks: +0.006 against defs' -0.000, chunk+next's +0.004 and bm25-chunk's +0.002)
        RepoArm(
            RECHECK,
            "where infile's reply invents a name: BM25 chunks for the code at hand and that reply together",
            Mode.BM25_CHUNK,
            draft=True,
        ),
        # the product's form of the check: context_at given the reply as its draft (its gate opens only where the
        # draft invents a name: the check's replies but 6 whose only invented names are attributes of modules outside
        # the package, os.path.relpath), the definitions named like the invented names leading those the code uses;
        # the code at hand is the task's file without the body
        RepoArm(
            DRAFT_DEFS,
            "where infile's reply invents a name: context_at with that reply as its draft (definitions named like the"
            " invented names first, then code like the code at hand and the reply)",
            definitions=True,
            draft=True,
        ),
        RepoArm(
            CHECK,
            f"a check after generation: {CHECKED}'s reply where infile's names an identifier the package never"
            " mentions (an invented one), else infile's",
            derived=True,
        ),
    )
}
#: Retrieved context per prompt, in model tokens, unless the run sets another (the same for every arm):
#: with a ~900-token in-file context and 128 new tokens the prompt stays near 1.5k tokens, which a
#: 2-core CPU evaluates in 10-20 s.
REPO_CONTEXT_BUDGET = 512
MAX_NEW_TOKENS = 128
#: A code block's closing fence: an opening fence starts the reply, or follows a line of text and carries the
#: language tag the prompt asks for, so neither has a newline on both sides.
CLOSING_FENCE = "\n```\n"
K = 3


def parse_repo_arms(spec: str) -> list[str]:
    """Comma-separated repository arms, or `all`; unknown names are an error naming the valid ones, and
    `auto` and `check` need the two arms each takes its replies from."""
    arms = expand_names(spec, list(REPO_ARMS), "repository arm", {"all": list(REPO_ARMS)})
    for derived, sources in DERIVED_FROM.items():
        if derived in arms and not set(sources) <= set(arms):
            raise ConfigError(f"{derived} takes its replies from {' and '.join(sources)}: name them too")
    drafting = [name for name in arms if REPO_ARMS[name].draft]
    if drafting and BASELINE not in arms:
        raise ConfigError(f"{drafting[0]} reads {BASELINE}'s reply first: name {BASELINE} too")
    return arms


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
    stratum: str = ""
    layout: str = ""
    needed: int = 0  # symbols of other files the reference body uses
    needed_in_context: int = 0  # of those, how many the context defines
    needed_in_body: int = 0  # of those, how many the body names
    gated: str | None = None  # why context_at's auto gate gave nothing (defs arms; auto took infile's reply)
    context: str = ""
    context_tokens: int = 0
    retrieved: list[str] = field(default_factory=list)  # where each snippet came from
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generation_seconds: float = 0.0


# --- prompt and answer -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """How a prompt puts the file and the context together: as chat messages, or as raw text the model
    continues (`raw`)."""

    name: str
    description: str
    raw: bool = False


LAYOUTS: dict[str, Layout] = {
    layout.name: layout
    for layout in (
        Layout("chat", "chat: the file, then the context unlabelled, then the ask (the first benchmark's)"),
        Layout("chat-context-first", "chat: the context first, each snippet under its path, then the file and the ask"),
        Layout(
            "repo",
            "raw completion in Qwen2.5-Coder's repository format: each context file after <|file_sep|>PATH, the "
            "task's file last, continued after the docstring and cut where the body's indentation ends",
            raw=True,
        ),
    )
}
#: Chosen on the pilot (60 tasks): in-file alone scores 0.515 edit similarity as raw completion in the
#: repository format against 0.397 in the chat layout, and no context arm is better in another layout.
DEFAULT_LAYOUT = "repo"


def parse_layouts(spec: str, arms: Sequence[str]) -> dict[str, str]:
    """Each arm's layout from `LAYOUT` (every arm), `ARM=LAYOUT,…`, or both (`repo,defs=chat`); arms not
    named get the bare layout, else DEFAULT_LAYOUT. Unknown names are a ConfigError."""
    default, chosen = DEFAULT_LAYOUT, {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        arm, equals, layout = part.rpartition("=")
        if layout not in LAYOUTS:
            raise ConfigError(f"unknown layout {layout!r}; choose from {', '.join(LAYOUTS)}")
        if not equals:
            default = layout
        elif arm.strip() in REPO_ARMS:
            chosen[arm.strip()] = layout
        else:
            raise ConfigError(
                f"unknown repository arm {arm.strip()!r} in the layout; choose from {', '.join(REPO_ARMS)}"
            )
    return {arm: chosen.get(arm, default) for arm in arms}


def _intro(task: RepoTask) -> str:
    return f"Complete the body of one function of the Python package `{task.repository}`.\n\n"


def _file(task: RepoTask) -> str:
    return (
        f"The file `{task.relpath}` so far (`# ...` marks lines left out); it ends with the signature and docstring "
        f"of `{task.name}`:\n```python\n{task.prefix.rstrip()}\n```\n\n"
    )


def _ask(task: RepoTask) -> str:
    return (
        f"Write only the body of `{task.function_name}`: the statements that follow its docstring, indented as in "
        "the file, in one ```python code block. Do not repeat its signature, its docstring or any other code of "
        "the file."
    )


def repo_messages(task: RepoTask, snippets: Sequence[ContextItem]) -> list[Message]:
    """`chat`: the in-file context first (shared by every arm of a task), then the context, then the ask.

    The ask names what not to write: asked only for "the statements that follow", Qwen2.5-Coder-1.5B
    rewrote the whole class, or the file's imports (running out of its 128 tokens), on both mcp tasks
    tried with context; with the prohibition its five replies held statements alone (one of them the
    class's fields instead of the body)."""
    context = context_block([s.code for s in snippets]).replace(
        "from a programming knowledge graph", f"from other files of `{task.repository}`"
    )
    return [{"role": "user", "content": _intro(task) + _file(task) + context + _ask(task)}]


def context_first_messages(task: RepoTask, snippets: Sequence[ContextItem]) -> list[Message]:
    """`chat-context-first`: CrossCodeEval's order, each snippet under its path, the file last before the ask."""
    labelled = "".join(f"```python\n# {s.title}\n{s.code.strip()}\n```\n\n" for s in snippets if s.code.strip())
    context = f"From other files of `{task.repository}`:\n\n{labelled}" if labelled else ""
    return [{"role": "user", "content": _intro(task) + context + _file(task) + _ask(task)}]


FILE_SEP = "<|file_sep|>"


def repo_prompt(task: RepoTask, snippets: Sequence[ContextItem]) -> str:
    """`repo`: the repository format Qwen2.5-Coder was trained on, the task's file last, its text ending
    with the docstring so that the model goes on with the body."""
    files = "".join(f"{FILE_SEP}{task.repository}/{s.title}\n{s.code.strip()}\n" for s in snippets if s.code.strip())
    return f"<|repo_name|>{task.repository}\n{files}{FILE_SEP}{task.repository}/{task.relpath}\n{task.prefix}"


def raw_stops(task: RepoTask) -> tuple[str, ...]:
    """Where a raw continuation surely left the body: another file, or the next definition one level out
    (the indentation cut in body_from_continuation decides the rest; these only save generation)."""
    outer = task.indent[:-1] if task.indent.endswith("\t") else task.indent[:-4]  # one level out (pathspec: tabs)
    return (FILE_SEP, f"\n{outer}def ", f"\n{outer}async def ", f"\n{outer}@", "\nclass ")


def body_from_continuation(text: str, indent: str) -> str:
    """The body a raw continuation writes, dedented: its lines up to the first non-blank one indented less
    than the body."""
    kept: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.strip() and not line.startswith(indent):
            break
        kept.append(line)
    return textwrap.dedent("".join(kept)).strip("\n") + "\n" if "".join(kept).strip() else ""


def ask_model(
    generator: Generator, layout: str, task: RepoTask, snippets: Sequence[ContextItem], params: GenerationParams
) -> tuple[Completion, str]:
    """The model's reply to the task in a layout, and the body taken from it."""
    if LAYOUTS[layout].raw:
        reply = generator.complete(repo_prompt(task, snippets), replace(params, stop=raw_stops(task)))
        return reply, body_from_continuation(reply.text, task.indent)
    build = context_first_messages if layout == "chat-context-first" else repo_messages
    reply = generator.generate(build(task, snippets), params)
    return reply, body_from_reply(reply.text, task.function_name)


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


def defines(context: str, name: str) -> bool:
    """Whether context text holds a definition of `name`: `def NAME`, `class NAME`, `NAME =` or a field's
    `self.NAME =` (annotated too)."""
    pattern = rf"^\s*(?:(?:async\s+)?def|class)\s+{re.escape(name)}\b|^\s*(?:self\.)?{re.escape(name)}\s*(?::[^=\n]*)?="
    return re.search(pattern, context, re.MULTILINE) is not None


def score(task: RepoTask, arm: str, body: str, context: str = "") -> RepoRecord:
    """The body's scores against the task's reference, and what of the needed symbols `context` defines."""
    precision, recall = identifier_scores(body, task.body)
    named = set(identifiers(body))
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
        stratum=task.stratum,
        needed=len(task.needs),
        needed_in_context=sum(defines(context, n.short) for n in task.needs),
        needed_in_body=sum(n.short in named for n in task.needs),
        context=context,
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


def retrieve(kb: KnowledgeBase, arm: RepoArm, task: RepoTask, k: int = K, draft: str = "") -> list[Result]:
    """The arm's top k similar snippets for the task (its code at hand, then a draft body if given), never
    from the task's own file nor a copy of its body."""
    if arm.mode is None:
        return []
    options = replace(arm.options, exclude_sources=frozenset({task.path}))
    found = kb.query(f"{task.query}\n{draft}" if draft else task.query, arm.mode, k + 2, options).results
    return [r for r in found if not _copies_body(r.text, task.body)][:k]


def _package_path(path: str, task: RepoTask) -> str:
    """A file of the task's package, relative to the package's folder."""
    return path.removeprefix(task.path.removesuffix(task.relpath))


def where(result: Result, task: RepoTask) -> str:
    """Where a snippet came from: its file inside the task's package, its lines, its name."""
    return f"{_package_path(result.path, task)}:{result.lines[0]}-{result.lines[1]} {result.name}"


@dataclass
class Context:
    """An arm's context for a task: the snippets, where they came from, and why the auto gate declined."""

    snippets: list[ContextItem] = field(default_factory=list)
    retrieved: list[str] = field(default_factory=list)
    gated: str | None = None

    @property
    def text(self) -> str:
        return "\n\n".join(s.code for s in self.snippets)

    def tokens(self, count: Callable[[str], int]) -> int:
        """The snippets' size, each counted by `count`."""
        return sum(count(s.code) for s in self.snippets)


@dataclass
class RepoRun:
    """One repository run: the tasks and arms with their layouts, the model, the context budget (model
    tokens, every arm alike) and which imported names get a stub, where the PKGs are and outputs go."""

    tasks: Sequence[RepoTask]
    arms: Sequence[str]
    generator: Generator
    db_root: Path
    out_dir: Path
    embedder: str | Embedder | None = None
    cache_dir: Path | None = None
    params: GenerationParams = field(default_factory=lambda: repo_params(MAX_NEW_TOKENS))
    layouts: Mapping[str, str] = field(default_factory=dict)  # arm -> layout; DEFAULT_LAYOUT if absent
    budget: int = REPO_CONTEXT_BUDGET
    names: str = DEFAULT_REACH.value


@dataclass(frozen=True)
class ContextSettings:
    """How much context an arm gets (model tokens, counted by `count_tokens`) and which imported names
    the definitions arms stub (`near` the line or `all`)."""

    budget: int = REPO_CONTEXT_BUDGET
    names: str = DEFAULT_REACH.value
    count_tokens: Callable[[str], int] = estimate_tokens


def arm_context(settings: ContextSettings, kb: KnowledgeBase, arm: RepoArm, task: RepoTask, draft: str = "") -> Context:
    """The arm's context for the task within the budget: definitions, then similar code (fitted first for a
    `similar_first` arm, shown last either way); a `draft` arm's none unless the draft invents a name."""
    if arm.draft and arm.definitions:
        return _draft_definitions(settings, kb, task, draft)
    if arm.draft and not unknown_names(task, draft):
        return Context(gated=NOTHING_INVENTED)
    context = Context()
    left = settings.budget
    similar = Context()
    if arm.similar_first:
        similar = _similar(settings, kb, arm, task, 1, settings.budget // 2)
        left -= similar.tokens(settings.count_tokens)
    if arm.definitions:
        context = _stubs_context(_definitions(replace(settings, budget=left), kb, task, "always"), task)
        context.gated = _definitions(settings, kb, task, "auto").gated
        left -= context.tokens(settings.count_tokens)
    if arm.mode is not None and not arm.similar_first:
        similar = _similar(settings, kb, arm, task, 1 if arm.definitions else K, left, draft)
    context.snippets += similar.snippets  # similar code last, nearest the file
    context.retrieved += similar.retrieved
    return context


def _stubs_context(found: DefinitionsContext, task: RepoTask) -> Context:
    """The definitions found as snippets, one per file."""
    by_file: dict[str, list[str]] = {}
    for definition in found.definitions:
        by_file.setdefault(_package_path(definition.path, task), []).append(definition.stub.rstrip())
    return Context(
        [ContextItem(path, "\n\n".join(stubs)) for path, stubs in by_file.items()],
        [f"{_package_path(d.path, task)}:{d.lines[0]}-{d.lines[1]} {d.name}" for d in found.definitions],
        found.gated,
    )


def _draft_definitions(settings: ContextSettings, kb: KnowledgeBase, task: RepoTask, draft: str) -> Context:
    """context_at with the draft, for the task's file without its body (an editor's file, the function being
    written left empty), at the body's first line: its stubs, then its similar code but any copy of the body
    (what is left of the budget then stays unused)."""
    found = kb.context_at(
        task.path,
        task.body_line - 1,
        task.file_without_body(),
        budget=settings.budget,
        names=settings.names,
        gate="auto",
        count_tokens=settings.count_tokens,
        draft=draft,
    )
    context = _stubs_context(found, task)
    for snippet in found.similar:
        if not _copies_body(snippet.code, task.body):
            context.snippets.append(ContextItem(_package_path(snippet.path, task), snippet.code))
            context.retrieved.append(f"{_package_path(snippet.path, task)}:{snippet.lines[0]}-{snippet.lines[1]}")
    return context


def _similar(
    settings: ContextSettings, kb: KnowledgeBase, arm: RepoArm, task: RepoTask, k: int, budget: int, draft: str = ""
) -> Context:
    """The arm's k most similar snippets that fit the budget."""
    found_code = retrieve(kb, arm, task, k, draft)
    texts, _ = fit_snippets([r.pruned_text for r in found_code], max(budget, 0), settings.count_tokens)
    return Context(
        [ContextItem(_package_path(r.path, task), t) for r, t in zip(found_code, texts, strict=False)],
        [where(r, task) for r in found_code[: len(texts)]],
    )


def _definitions(settings: ContextSettings, kb: KnowledgeBase, task: RepoTask, gate: str) -> DefinitionsContext:
    """context_at for the code at hand: the task's file up to the body (the editor's view), never the file
    itself (context_at leaves it out) nor anything after the body."""
    return kb.context_at(
        task.path,
        None,  # the end of the text: the line before the body
        task.file_before_body(),
        budget=settings.budget,
        names=settings.names,
        gate=gate,
        count_tokens=settings.count_tokens,
    )


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
                written: dict[str, RepoRecord] = {}
                generating = [REPO_ARMS[name] for name in run.arms if not REPO_ARMS[name].derived]
                for arm in sorted(generating, key=lambda a: a.draft):  # a draft arm reads infile's reply
                    written[arm.name] = _one(run, kb, arm, task, written[BASELINE].body if arm.draft else "")
                if AUTO in run.arms:
                    written[AUTO] = derive_auto(written[BASELINE], written[DEFS])
                if CHECK in run.arms:
                    written[CHECK] = derive_check(task, written[BASELINE], written[CHECKED])
                for name in run.arms:
                    records.append(written[name])
                    sink.write(json.dumps(asdict(written[name])) + "\n")
                sink.flush()
                progress("tasks", done, len(run.tasks))
    finally:
        for kb in open_kbs.values():
            kb.close()
    return records


def derive_auto(infile: RepoRecord, defs: RepoRecord) -> RepoRecord:
    """The auto arm's record: defs' where the gate let context through, else infile's (no generation)."""
    chosen = infile if defs.gated is not None else defs
    return replace(chosen, arm=AUTO, gated=defs.gated, generation_seconds=0.0)


def derive_check(task: RepoTask, infile: RepoRecord, checked: RepoRecord) -> RepoRecord:
    """The check arm's record: where infile's body names identifiers the package never mentions, the checked
    arm's (a second generation, with context), else infile's with `gated` saying why no context."""
    invented = unknown_names(task, infile.body)
    chosen = checked if invented else infile
    gated = None if invented else NOTHING_INVENTED
    return replace(
        chosen,
        arm=CHECK,
        gated=gated,
        generation_seconds=infile.generation_seconds + (checked.generation_seconds if invented else 0.0),
    )


def _one(run: RepoRun, kb: KnowledgeBase, arm: RepoArm, task: RepoTask, draft: str = "") -> RepoRecord:
    context = arm_context(ContextSettings(run.budget, run.names, run.generator.count_tokens), kb, arm, task, draft)
    layout = run.layouts.get(arm.name, DEFAULT_LAYOUT)
    reply, body = ask_model(run.generator, layout, task, context.snippets, run.params)
    record = score(task, arm.name, body, context.text)
    record.layout = layout
    record.gated = context.gated
    record.reply = reply.text
    record.context_tokens = sum(map(run.generator.count_tokens, (s.code for s in context.snippets)))  # as budgeted
    record.retrieved = context.retrieved
    record.prompt_tokens = reply.prompt_tokens
    record.completion_tokens = reply.completion_tokens
    record.generation_seconds = reply.seconds
    return record


# --- the report -----------------------------------------------------------------------------------------

#: An arm helps (hurts) a task when its edit similarity is at least this much above (below) the in-file arm's.
ES_MARGIN = 0.1
#: Resamples of the paired bootstrap and its seed: 10,000 puts the 2.5/97.5 percentiles within about
#: 0.002 of their limit for 100-250 paired differences of edit similarity.
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
STRATA = ("all", CROSS_FILE, IN_FILE)
COLUMNS = (
    "arm",
    "layout",
    "tasks",
    "exact match %",
    "edit similarity",
    "ES vs infile [95% CI]",
    "identifier recall",
    "needed-symbol recall",
    "context recall",
    "parses %",
    "context tokens",
    "prompt tokens",
    "generation s",
    "EM helped",
    "EM hurt",
    "ES helped",
    "ES hurt",
)


def bootstrap_interval(
    differences: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """The 95% percentile interval of the mean of paired differences, by resampling tasks with replacement."""
    values = np.asarray(differences, dtype=float)
    if not len(values):
        return float("nan"), float("nan")
    picks = np.random.default_rng(seed).integers(0, len(values), size=(resamples, len(values)))
    low, high = np.percentile(values[picks].mean(axis=1), [2.5, 97.5])
    return float(low), float(high)


def summarise(records: Sequence[RepoRecord], arms: Sequence[str], stratum: str = "all") -> list[dict]:
    """One row per arm over the stratum's tasks; differences and help/hurt against the in-file arm when it ran."""
    chosen = [r for r in records if stratum == "all" or r.stratum == stratum]
    baseline = {r.task_id: r for r in chosen if r.arm == BASELINE}
    rows = []
    for arm in arms:
        group = [r for r in chosen if r.arm == arm]
        if group:
            paired = [(r, baseline[r.task_id]) for r in group if r.task_id in baseline and arm != BASELINE]
            rows.append(_row(arm, group, paired))
    return rows


def _row(arm: str, group: Sequence[RepoRecord], paired: Sequence[tuple[RepoRecord, RepoRecord]]) -> dict:
    needed = sum(r.needed for r in group)
    return {
        "arm": arm,
        "layout": ",".join(sorted({r.layout for r in group})),
        "tasks": len(group),
        "exact match %": round(100.0 * mean(r.exact for r in group), 1),
        "edit similarity": round(mean(r.edit_similarity for r in group), 3),
        "ES vs infile [95% CI]": _difference(paired),
        "identifier recall": round(mean(r.identifier_recall for r in group), 3),
        "needed-symbol recall": round(sum(r.needed_in_body for r in group) / needed, 3) if needed else "–",
        "context recall": round(sum(r.needed_in_context for r in group) / needed, 3) if needed else "–",
        "parses %": round(100.0 * mean(r.parses for r in group), 1),
        "context tokens": round(mean(r.context_tokens for r in group)),
        "prompt tokens": round(mean(r.prompt_tokens for r in group)),
        "generation s": round(mean(r.generation_seconds for r in group), 1),
        "EM helped": _count(paired, lambda r, b: r.exact and not b.exact),
        "EM hurt": _count(paired, lambda r, b: b.exact and not r.exact),
        "ES helped": _count(paired, lambda r, b: r.edit_similarity >= b.edit_similarity + ES_MARGIN),
        "ES hurt": _count(paired, lambda r, b: r.edit_similarity <= b.edit_similarity - ES_MARGIN),
    }


def _difference(paired: Sequence[tuple[RepoRecord, RepoRecord]]) -> str:
    """The mean paired difference of edit similarity and its bootstrap interval, as one cell."""
    if not paired:
        return "–"
    differences = [r.edit_similarity - b.edit_similarity for r, b in paired]
    low, high = bootstrap_interval(differences)
    return f"{mean(differences):+.3f} [{low:+.3f}, {high:+.3f}]"


def _count(
    paired: Sequence[tuple[RepoRecord, RepoRecord]], test: Callable[[RepoRecord, RepoRecord], bool]
) -> int | str:
    return sum(test(r, b) for r, b in paired) if paired else "–"


def write_repo_report(out_dir: Path, records: Sequence[RepoRecord], arms: Sequence[str], notes: Sequence[str]) -> str:
    """table.md (a table per stratum) and summary.json in `out_dir`; returns the tables."""
    strata = {stratum: summarise(records, arms, stratum) for stratum in STRATA}
    lines = ["# PKG on repository-level completion: one body per task and arm", ""]
    for stratum, rows in strata.items():
        if not rows:
            continue
        lines += [
            f"## {stratum} tasks",
            "",
            "| " + " | ".join(COLUMNS) + " |",
            "|" + "---|" * len(COLUMNS),
            *("| " + " | ".join(str(row[c]) for c in COLUMNS) + " |" for row in rows),
            "",
        ]
    table = "\n".join([*lines, *notes, ""])
    (out_dir / "table.md").write_text(table, encoding="utf-8")
    summary = {"strata": strata, "notes": list(notes)}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return table
