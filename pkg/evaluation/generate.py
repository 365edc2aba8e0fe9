"""`pkg generate`: a user's own task → one candidate per arm (context from the PKG, the prompts and
code extraction of `pkg compare`) → the candidate a selection policy picks in the sandbox, with the
evidence for it."""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from pkg.benchmarks import Problem
from pkg.errors import ConfigError
from pkg.evaluation.arms import GENERATING, Retriever, expand_names
from pkg.evaluation.extract import code_from_reply
from pkg.evaluation.prompts import build_messages, context_block
from pkg.evaluation.run import RunSettings
from pkg.evaluation.tasks import candidate as candidate_of
from pkg.evaluation.tasks import shown_task
from pkg.generators.base import Generator, generate_many
from pkg.knowledge_base import KnowledgeBase
from rerank.policies import POLICIES, Assessment, Candidate, Policy, Task, assess, probe_calls, statement_calls
from rerank.policies.examiner import RUN_LIMITS
from rerank.policies.written_tests import ShownTask, write_tests
from rerank.reranker import cosine_similarities
from rerank.sandbox import Sandbox
from retrieval.prompt import fit_snippets

DEFAULT_ARMS = ("norag", "func-pkg", "func-bm25", "chunk")
TASK_ID = "task"
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)\s*\(", re.MULTILINE)


@dataclass(frozen=True)
class UserTask:
    """A task as the arms and the policy see it: the problem (a signature with its docstring, completed
    like HumanEval's; or prose, answered with a whole solution like MBPP's), its examples as asserts
    (shown to the model), the user's tests (checks the model never sees), and the function to write."""

    problem: Problem
    examples: tuple[str, ...]
    tests: tuple[str, ...]
    entry_point: str | None

    @property
    def policy_task(self) -> Task:
        """What the policy checks: the examples and the tests, and the calls they make."""
        checks = self.examples + self.tests
        calls = statement_calls("\n".join(checks), self.entry_point) if self.entry_point else ()
        return Task(TASK_ID, self.entry_point or "", checks, calls)

    @property
    def shown_task(self) -> ShownTask:
        """What a model writing tests sees (`codet`): never the user's tests."""
        calls = statement_calls("\n".join(self.examples), self.entry_point) if self.entry_point else ()
        return shown_task(self.problem, calls)

    def answer(self, code: str) -> str:
        """The whole solution for a candidate's code: the code, or the signature it completes."""
        completion = self.problem.completion_from_code(code)
        if self.problem.benchmark == "mbpp" or completion.startswith("\n"):
            return code
        return self.problem.prompt.rstrip() + "\n" + completion


def _expression(source: str) -> ast.expr | None:
    try:
        return ast.parse(source.strip(), mode="eval").body
    except SyntaxError:
        return None


def _assert(source: ast.expr, want: ast.expr | None) -> str:
    """`assert source == want` (`is None` for None); a comparison without a want is asserted as it is."""
    if want is None and isinstance(source, ast.Compare):
        return ast.unparse(ast.Assert(test=source))
    expected = want if want is not None else ast.Constant(None)
    op: ast.cmpop = ast.Is() if isinstance(expected, ast.Constant) and expected.value is None else ast.Eq()
    return ast.unparse(ast.Assert(test=ast.Compare(left=source, ops=[op], comparators=[expected])))


def _inline(segment: str) -> str | None:
    """`CALL VALUE` on one line (`>>> add(2, 3) 5`, as a one-line docstring writes it) as an assert."""
    line = segment.strip()
    for match in re.finditer(r"\s+", line):
        source, want = _expression(line[: match.start()]), _expression(line[match.end() :])
        if source is not None and want is not None:
            return _assert(source, want)
    return None


def _doctest(segment: str, next_line: str | None) -> tuple[str | None, bool]:
    """One `>>>` segment as an assert or a statement, and whether it took `next_line` as its value."""
    source = _expression(segment)
    if source is None:
        inline = _inline(segment)
        if inline is not None:
            return inline, False
        try:
            ast.parse(segment.strip())
        except SyntaxError:
            return None, False
        return segment.strip(), False  # a statement, such as `x = 3`, that later examples use
    if not next_line or ">>>" in next_line:
        return _assert(source, None), False
    want = _expression(next_line)  # a value that is not a Python expression (printed text) is not checked
    return (_assert(source, want) if want is not None else None), True


def parse_examples(text: str, strict: bool = False, where: str = "") -> tuple[str, ...]:
    """The examples in `text` as asserts: `>>> CALL` with its value on the next line or after it on the
    same line. `strict` (a file of examples): every other line must be an assert or a comparison
    (`f(x) == y`), else a ConfigError names it; otherwise (a task's text) other lines are prose."""
    lines = text.splitlines()
    found: list[str] = []
    index = 0
    while index < len(lines):
        line, index = lines[index].strip(), index + 1
        if ">>>" in line and (not strict or line.startswith(">>>")):
            *inline, last = line.split(">>>")[1:]
            found += [example for example in map(_inline, inline) if example]
            example, took = _doctest(last, lines[index].strip() if index < len(lines) else None)
            index += took
            if example:
                found.append(example)
            elif strict:
                raise ConfigError(f"{where}:{index}: cannot read this >>> example: {line}")
        elif strict and line and not line.startswith("#"):
            found.append(_checked_assert(line, f"{where}:{index}"))
    return tuple(dict.fromkeys(found))


def _checked_assert(line: str, where: str) -> str:
    expression = _expression(line)
    if isinstance(expression, ast.Compare):
        return _assert(expression, None)
    try:
        statement = ast.parse(line).body
    except SyntaxError:
        statement = []
    if len(statement) == 1 and isinstance(statement[0], ast.Assert):
        return line
    raise ConfigError(f"{where}: not an assert, a comparison (f(x) == y) or a >>> example: {line}")


def _called(asserts: Sequence[str]) -> str | None:
    """The first function the asserts call that is not a builtin."""
    for source in asserts:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not hasattr(builtins, node.func.id):
                return node.func.id
    return None


def _signature(text: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    """The last top-level function of `text` when it is Python code, and the code: dedented, or
    rewritten one statement a line when a body shares its `def` line (a one-line docstring), so that a
    candidate's body can follow it."""
    code = textwrap.dedent(text).strip("\n")
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    if any(function.body[0].lineno == function.lineno for function in functions):
        code = ast.unparse(tree)
    return (functions[-1], code) if functions else None


def parse_task(
    text: str, examples: str = "", tests: str = "", where: tuple[str, str] = ("examples", "tests")
) -> UserTask:
    """The task for TEXT (prose, or a signature with a docstring), with the `>>>` examples of its text
    or docstring and those of an examples file's text, and a tests file's asserts."""
    if not text.strip():
        raise ConfigError("the task is empty: give what to write, e.g. a signature with a docstring")
    extra = parse_examples(examples, strict=True, where=where[0])
    checks = parse_examples(tests, strict=True, where=where[1])
    signature = _signature(text)
    if signature is not None:
        function, code = signature
        shown = parse_examples(ast.get_docstring(function) or "")
        found = tuple(dict.fromkeys(shown + extra))
        problem = Problem(TASK_ID, "humaneval", code + "\n", function.name, "", found, "")
        return UserTask(problem, found, checks, function.name)
    shown = parse_examples(text)
    found = tuple(dict.fromkeys(shown + extra))
    named = _DEF.search(text)
    entry_point = named.group(1) if named else _called(found + checks)
    prompt = text.strip() + ("\nYour code should pass these tests:\n\n" + "\n".join(extra) if extra else "")
    problem = Problem(TASK_ID, "mbpp", prompt, entry_point or "", "", found, "", text=text.strip())
    return UserTask(problem, found, checks, entry_point)


def parse_arms(spec: str) -> list[str]:
    """Comma-separated generating arms; anything else is a ConfigError naming the valid ones."""
    return expand_names(spec, list(GENERATING), "arm", {})


def policy_for(name: str, task: UserTask) -> Policy:
    """The named policy; one that compares outputs on the function's calls needs a task that shows some."""
    if name not in POLICIES:
        raise ConfigError(f"unknown policy {name!r}; choose from {', '.join(POLICIES)}")
    policy = POLICIES[name]
    if policy.compares_calls and not task.policy_task.calls:
        raise ConfigError(
            f"policy {name} compares candidates on calls of the function to write, and this task shows none: "
            "give a signature with >>> examples or --examples, or use --policy cascade"
        )
    if policy.writes_tests and not policy.tests_optional and not task.entry_point:
        raise ConfigError(
            f"policy {name} has the model write tests that call the function to write, and this task names none: "
            "give a signature, or examples that call it"
        )
    return policy


@dataclass(frozen=True)
class Verdict:
    """One arm's candidate and what the sandbox told of it."""

    arm: str
    code: str
    context_tokens: int
    similarity: float
    parses: bool
    runs: bool
    calls_return: bool | None  # None: the task shows no calls
    examples: bool | None  # the shown examples alone; None: there are none
    tests: bool | None  # the user's tests alone; None: there are none
    checks: int  # self-checks passed in order (parses, runs, calls return, examples and tests), 0-4
    agrees_with: tuple[str, ...]  # arms whose candidates gave the same outputs on the probe calls
    written_tests: int | None  # model-written tests passed (codet); None: the policy wrote none


@dataclass(frozen=True)
class Generated:
    """The chosen answer and the evidence: every candidate, the deciding rule, the clusters."""

    answer: str
    chosen: int
    policy: str
    stage: str
    clusters: tuple[int, ...]
    candidates: tuple[Verdict, ...]
    entry_point: str | None
    examples: tuple[str, ...]
    tests: tuple[str, ...]
    policy_checks: tuple[str, ...]  # the asserts the policy ran: the examples, then the tests
    probes: int
    generator: str
    isolation: str
    written_tests: tuple[str, ...] = ()  # asserts the model wrote for the policy (codet), from the task alone


def _candidates(
    task: UserTask, arms: Sequence[str], generator: Generator, kb: KnowledgeBase, settings: RunSettings, k: int
) -> tuple[list[Candidate], list[int]]:
    """One candidate per arm (with all arms' requests in flight together when the generator allows),
    and each one's context tokens."""
    retriever = Retriever(kb, k)
    fitted = []
    for name in arms:
        found = retriever.snippets(GENERATING[name], task.problem.query)
        fitted.append(fit_snippets(found, settings.context_budget, generator.count_tokens)[0])
    prompts = [build_messages(task.problem, snippets) for snippets in fitted]
    replies = generate_many(generator, prompts, settings.params, settings.concurrency)
    codes = [code_from_reply(reply.text, task.entry_point or "") for reply in replies]
    query = kb.embedder.embed_query(task.problem.query)
    vectors = np.asarray(kb.embedder.embed_documents([code or " " for code in codes]))
    similarities = [float(s) for s in cosine_similarities(query, vectors)]
    candidates = [
        candidate_of(task.problem, arm, code, similarity)
        for arm, code, similarity in zip(arms, codes, similarities, strict=True)
    ]
    tokens = [generator.count_tokens(context_block(snippets)) if snippets else 0 for snippets in fitted]
    return candidates, tokens


def _separately(sandbox: Sandbox, candidates: Sequence[Candidate], asserts: Sequence[str]) -> list[bool | None]:
    """Whether each candidate passes `asserts` (None when there are none)."""
    if not asserts:
        return [None] * len(candidates)
    checks = "".join(line + "\n" for line in asserts)
    return [outcome.passed for outcome in sandbox.run_many([c.program + "\n" + checks for c in candidates], RUN_LIMITS)]


def _verdicts(
    task: UserTask,
    candidates: Sequence[Candidate],
    assessments: Sequence[Assessment],
    tokens: Sequence[int],
    sandbox: Sandbox,
) -> tuple[Verdict, ...]:
    calls = len(task.policy_task.calls)
    task_tests = any(assessed.tests for assessed in assessments)
    examples = _separately(sandbox, candidates, task.examples)
    tests = _separately(sandbox, candidates, task.tests)
    verdicts = []
    for index, (candidate, assessed) in enumerate(zip(candidates, assessments, strict=True)):
        agrees = tuple(
            other.arm
            for other, theirs in zip(candidates, assessments, strict=True)
            if other is not candidate and assessed.outputs is not None and theirs.outputs == assessed.outputs
        )
        returns = (
            None
            if not calls
            else assessed.outputs is not None and not any(out.startswith("!") for out in assessed.outputs[:calls])
        )
        verdicts.append(
            Verdict(
                candidate.arm,
                candidate.code,
                tokens[index],
                round(candidate.similarity, 3),
                assessed.parses,
                assessed.runs,
                returns,
                examples[index],
                tests[index],
                assessed.checks(calls),
                agrees,
                sum(assessed.tests) if task_tests else None,
            )
        )
    return tuple(verdicts)


def generate(
    task: UserTask,
    arms: Sequence[str],
    policy: Policy,
    generator: Generator,
    kb: KnowledgeBase,
    sandbox: Sandbox,
    settings: RunSettings,
    k: int = 1,
) -> Generated:
    """Candidates for the task from every arm, assessed in the sandbox (on the examples and the tests,
    nothing else), and the policy's choice among them. `kb` is the PKG the retrieval arms read (opened
    only by them) and the embedder of the candidates' similarity to the task."""
    candidates, tokens = _candidates(task, arms, generator, kb, settings, k)
    policy_task = task.policy_task
    if policy.writes_tests and task.entry_point:
        # the tests' own budget, not the user's --max-new-tokens: ten asserts need it whatever the code's length,
        # and the reply is then the one `pkg compare` and bench_policies cache for the same task
        written = write_tests(generator, [task.shown_task], concurrency=settings.concurrency)[0]
        policy_task = replace(policy_task, tests=written)
    assessments = assess(sandbox, [(policy_task, candidates)])[0]
    selection = policy.choose(policy_task, candidates, assessments)
    return Generated(
        answer=task.answer(candidates[selection.index].code),
        chosen=selection.index,
        policy=policy.name,
        stage=selection.stage,
        clusters=selection.clusters,
        candidates=_verdicts(task, candidates, assessments, tokens, sandbox),
        entry_point=task.entry_point,
        examples=task.examples,
        tests=task.tests,
        policy_checks=policy_task.examples,
        probes=len(probe_calls(policy_task.calls)),
        generator=generator.model_id,
        isolation=sandbox.isolation,
        written_tests=policy_task.tests,
    )


def _mark(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def render(result: Generated) -> str:
    """The chosen code, then the evidence as comments (so the whole text is a Python module)."""
    chosen = result.candidates[result.chosen]
    ran = [
        _plural(len(result.examples), "example"),
        _plural(len(result.tests), "test"),
        _plural(result.probes, "probe call"),
    ]
    lines = [
        f"policy {result.policy} chose the {chosen.arm} candidate (deciding rule: {result.stage}); "
        f"generator {result.generator}, sandbox isolation {result.isolation}",
        f"the policy ran: {', '.join(ran)}" + (" (the tests are among the policy's checks)" if result.tests else ""),
        "arm          parses runs calls examples tests checks similarity context agrees with",
    ]
    for verdict in result.candidates:
        lines.append(
            f"{verdict.arm:<12} {_mark(verdict.parses):<6} {_mark(verdict.runs):<4} {_mark(verdict.calls_return):<5} "
            f"{_mark(verdict.examples):<8} {_mark(verdict.tests):<5} {verdict.checks}/4    {verdict.similarity:<10.3f} "
            f"{verdict.context_tokens:<7} {', '.join(verdict.agrees_with) or '-'}"
        )
    if result.clusters:
        lines.append("clusters of identical outputs on the probe calls: " + ", ".join(map(str, result.clusters)))
    if result.written_tests:
        passed = ", ".join(f"{v.arm} {v.written_tests}" for v in result.candidates)
        lines.append(f"model-written tests passed, of {len(result.written_tests)}: {passed}")
    return result.answer.rstrip() + "\n\n" + "\n".join("# " + line for line in lines) + "\n"
