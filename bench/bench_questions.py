"""Code search by questions from packages' own documentation, beyond docstrings: recall@1, @10 and MRR.

bench_search asks a function's docstring summary of its code without the docstring. Here the question is
a sentence a package's authors wrote about one of its functions in the hand-written documentation of its
source distribution (the reStructuredText or MyST Markdown below docs/ or doc/; changelogs left out),
fetched from PyPI at the version installed in the venv: a sentence that names exactly one function of the
package with a Sphinx role (:func:`style`, {meth}`Context.invoke`). The role becomes "this function" or
"this method" ("the :meth:`x` method" becomes "this method") and other markup its text, so the question
does not name its answer; code, directives, tables and section titles are not sentences. A question is
dropped when it has fewer than six words, or when six consecutive words of it are in the function's
docstring (a copy of the docstring asks nothing beyond it), or when its roles name no function of the
package, or more than one (a name several modules define counts once: any of them answers it). The
corpus is those packages as installed, docstrings kept (test folders left out), built per embedder with
functions only; a question is answered at rank r when the r-th result is a function it named. At most
--per-package questions a package, evenly spread over its sentences in document order. The ranks are
written as bench_search writes them, so bench/pair_search.py pairs two runs (a lever against its baseline).

--packages DIST:PACKAGE,... asks other distributions' documentation instead of DOCUMENTED's (a second set
of questions, to check a lever chosen on the first).

    python bench/bench_questions.py [--embedders minilm,static] [--per-package 40] [--packages D:P,...] [--work DIR]
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_search import LEXICAL_MODES, VARIANTS, K, _qualified, corpus_file, evaluate, paired_with  # noqa: E402
from bench.corpora import SITE_PACKAGES  # noqa: E402
from bench.harness import bench_parser, machine, utc_now, write_result  # noqa: E402
from pkg.code.search_text import split_docstring  # noqa: E402
from pkg.knowledge_base import KnowledgeBase  # noqa: E402

#: The corpus: distributions installed in the venv, each with the top-level package its functions are in.
#: The questions come from those whose source distributions document their functions by name (13 of the 21).
DOCUMENTED = {
    "click": "click",
    "Jinja2": "jinja2",
    "MarkupSafe": "markupsafe",
    "attrs": "attr",
    "anyio": "anyio",
    "diskcache": "diskcache",
    "jsonschema": "jsonschema",
    "referencing": "referencing",
    "tenacity": "tenacity",
    "python-dateutil": "dateutil",
    "urllib3": "urllib3",
    "h11": "h11",
    "requests": "requests",
    "rich": "rich",
    "joblib": "joblib",
    "fsspec": "fsspec",
    "pyparsing": "pyparsing",
    "multidict": "multidict",
    "yarl": "yarl",
    "aiohttp": "aiohttp",
    "pyrsistent": "pyrsistent",
}
MODES = ("func", "hybrid")
MIN_WORDS = 6
MAX_ANSWERS = 3
COPIED_WORDS = 6
_ROLE = re.compile(r":(?:py:)?(\w+):`([^`]*)`")
_LITERAL = re.compile(r"``([^`]*)``")
_LINK = re.compile(r"`([^`<]*?)\s*<[^>]*>`_+|`([^`]*)`_+")
_MYST_ROLE = re.compile(r"\{(?:py:)?(\w+)\}`")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_FENCE = re.compile(r"^\s*(```+|~~~+)")
_BULLET = re.compile(r"^(?:[*\-•+]|\d+\.|#\.)\s+")
_MASK = "\x00"
_KIND = r"(method|function|coroutine|decorator|context manager|class method)"
_TITLE_RULE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`:*])")
_WORD = re.compile(r"\w+")
_CHANGELOG = re.compile(r"change|history|news|release|whatsnew|upgrad|migrat|contribut|license|author", re.I)


@dataclass(frozen=True)
class Target:
    """A function of the corpus: its package, its file there and its qualified name."""

    package: str
    path: str
    qualname: str


@dataclass(frozen=True)
class Question:
    """A sentence of a package's documentation with the function it names masked, and that function."""

    package: str
    source: str  # the documentation file, relative to the unpacked distribution
    text: str
    answers: tuple[Target, ...]  # the functions its role may name (a name several modules define)


def fetch_sdist(distribution: str, cache: Path) -> Path:
    """The unpacked source distribution of the installed version (pip download, cached)."""
    version = importlib.metadata.version(distribution)
    unpacked = cache / f"{distribution}-{version}"
    if unpacked.is_dir():
        return unpacked
    downloads = cache / "downloads"
    pip = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--no-binary",
        ":all:",
        "-d",
        str(downloads),
    ]
    subprocess.run([*pip, f"{distribution}=={version}"], check=True, capture_output=True)
    stem = re.sub(r"[-_.]+", "[-_.]", distribution)
    archive = next(
        p for p in downloads.glob("*.tar.gz") if re.fullmatch(f"(?i){stem}-{re.escape(version)}.tar.gz", p.name)
    )
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    return unpacked


def documentation_files(unpacked: Path) -> list[Path]:
    """The distribution's hand-written documentation below docs/ or doc/ (.rst and .md), in path order."""
    files = [
        p
        for suffix in ("*.rst", "*.md")
        for p in unpacked.rglob(suffix)
        if {"docs", "doc"} & set(p.relative_to(unpacked).parts)
    ]
    return sorted(p for p in files if not _CHANGELOG.search(p.name))


def as_rst(markdown: str) -> str:
    """MyST Markdown as the reStructuredText this bench reads: fenced blocks (code, directives) and headings
    dropped, roles and links as reStructuredText's."""
    kept: list[str] = []
    fence = ""
    for line in markdown.split("\n"):
        opening = _FENCE.match(line)
        if fence:
            fence = "" if opening and opening.group(1).startswith(fence) else fence
            continue
        if opening:
            fence = opening.group(1)
            continue
        kept.append("" if line.lstrip().startswith(("#", ":::", "<")) else _MD_LINK.sub(r"\1", line))
    return _MYST_ROLE.sub(r":\1:`", "\n".join(kept))


def paragraphs(rst: str) -> Iterator[str]:
    """The prose paragraphs of a reStructuredText text, each on one line (a list's items each one):
    code blocks, directives and their bodies (split_docstring's rest), section titles, tables and comments
    left out."""
    lines = split_docstring(rst, kept=frozenset())[0].split("\n")
    current: list[str] = []
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else ""
        stripped = line.strip()
        title = _TITLE_RULE.match(stripped) or _TITLE_RULE.match(following.strip())
        if not stripped or title or stripped[0] in "|+" or stripped.startswith(".."):
            if current:
                yield " ".join(current)
            current = []
            continue
        if bullet := _BULLET.match(stripped):
            if current:
                yield " ".join(current)
            current = [stripped[bullet.end() :]]
            continue
        current.append(stripped)
    if current:
        yield " ".join(current)


def sentences(paragraph: str) -> list[str]:
    """A paragraph's sentences."""
    return [s.strip() for s in _SENTENCE_END.split(paragraph) if s.strip()]


def role_target(text: str) -> str:
    """The dotted name a role points to (`~click.style`, `echo() <click.echo>`, `.Context.invoke` -> the name)."""
    inner = re.search(r"<([^>]*)>", text)
    return (inner.group(1) if inner else text).strip().lstrip("~!.").removesuffix("()")


def resolve(name: str, namespaces: set[str], functions: dict[str, list[Target]]) -> tuple[Target, ...]:
    """The package's functions a dotted name names (at most MAX_ANSWERS), or none: `package.module.f` by
    its last part (those in that module when it is named), `Class.method` by both parts, a bare name
    by itself or, for a method, by the one class that defines it; a name in another package (a first part
    not among the package's namespaces, nor a class of it) names none."""
    parts = name.split(".")
    if len(parts) >= 2 and parts[0] not in namespaces and ".".join(parts[-2:]) not in functions:
        return ()
    found = functions.get(".".join(parts[-2:]), []) if len(parts) >= 2 else []
    if not found:
        found = functions.get(parts[-1], [])
        in_module = [t for t in found if len(parts) > 2 and parts[-2] in Path(t.path).with_suffix("").parts]
        found = in_module or found
    if not found and len(parts) == 1:
        found = [t for qualname, targets in functions.items() if qualname.endswith(f".{name}") for t in targets]
        found = found if len({t.qualname for t in found}) == 1 else []
    found = list(dict.fromkeys(found))  # an @overload's stubs are one function
    return tuple(found) if len(found) <= MAX_ANSWERS else ()


def masked(
    sentence: str, namespaces: set[str], functions: dict[str, list[Target]]
) -> tuple[str, tuple[Target, ...]] | None:
    """The sentence as a question (its one function role masked, other markup as text) and the functions
    it names; None unless its function roles name exactly one function (or one name) of the package."""
    named: set[tuple[Target, ...]] = set()
    for role, text in _ROLE.findall(sentence):
        if role in {"func", "meth"}:
            found = resolve(role_target(text), namespaces, functions)
            if not found:
                return None
            named.add(found)
    if len(named) != 1:
        return None

    def replace(match: re.Match[str]) -> str:
        role, text = match.groups()
        return _MASK + role if role in {"func", "meth"} else role_target(text).rpartition(".")[2]

    question = _LINK.sub(lambda m: m.group(1) or m.group(2), _LITERAL.sub(r"\1", _ROLE.sub(replace, sentence)))
    question = re.sub(rf"\b([Tt])he {_MASK}\w+ {_KIND}\b", r"\1his \2", question)
    question = re.sub(rf"{_MASK}\w+ {_KIND}\b", r"this \1", question)
    question = re.sub(rf"{_MASK}(\w+)", lambda m: "this function" if m.group(1) == "func" else "this method", question)
    return re.sub(r"\s+", " ", question).strip(), named.pop()


def copied(question: str, docstring: str) -> bool:
    """Whether COPIED_WORDS consecutive words of the question are in the docstring."""
    words, doc = _WORD.findall(question.lower()), " ".join(_WORD.findall(docstring.lower()))
    return any(f" {' '.join(words[i : i + COPIED_WORDS])} " in f" {doc} " for i in range(len(words) - COPIED_WORDS + 1))


def copy_package(package: str, corpus_dir: Path) -> tuple[dict[str, list[Target]], dict[Target, str]]:
    """Copy an installed package's files (tests and oversized files left out) into the corpus; its functions
    by qualified name, and their docstrings."""
    root = SITE_PACKAGES / package
    files = [root] if root.is_file() else sorted(root.rglob("*.py"))
    functions: dict[str, list[Target]] = {}
    docstrings: dict[Target, str] = {}
    for path in files:
        if not corpus_file(path, SITE_PACKAGES):
            continue
        relative = path.relative_to(SITE_PACKAGES)
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue
        target_path = corpus_dir / relative
        target_path.parent.mkdir(parents=True, exist_ok=True)
        target_path.write_text(source, encoding="utf-8")
        for qualname, function in _qualified(tree):
            target = Target(package, str(target_path), qualname)
            functions.setdefault(qualname, []).append(target)
            docstrings[target] = ast.get_docstring(function) or ""
    return functions, docstrings


def package_questions(
    unpacked: Path, distribution: str, package: str, functions: dict[str, list[Target]], docstrings: dict[Target, str]
) -> list[Question]:
    """Every question of a distribution's documentation, in document order, duplicates dropped (a name's
    first part is the package's when it is the package or the distribution: `attrs.define`)."""
    namespaces = {package, distribution.lower().replace("-", "_")}
    found: dict[tuple[str, tuple[Target, ...]], Question] = {}
    for path in documentation_files(unpacked):
        text = path.read_text(encoding="utf-8", errors="replace")
        text = as_rst(text) if path.suffix == ".md" else text
        for paragraph in paragraphs(text):
            for sentence in sentences(paragraph):
                asked = masked(sentence, namespaces, functions)
                if asked is None:
                    continue
                question, targets = asked
                if len(_WORD.findall(question)) < MIN_WORDS or any(copied(question, docstrings[t]) for t in targets):
                    continue
                source = str(path.relative_to(unpacked))
                found.setdefault((question, targets), Question(package, source, question, targets))
    return list(found.values())


def spread(questions: list[Question], count: int) -> list[Question]:
    """Up to count questions evenly spread over the list."""
    if len(questions) <= count:
        return questions
    return [questions[i * len(questions) // count] for i in range(count)]


def make_questions(
    corpus_dir: Path, cache: Path, per_package: int, packages: dict[str, str] = DOCUMENTED
) -> tuple[list[Question], dict[str, int]]:
    """Copy the packages (distribution -> top-level package) into corpus_dir and ask their documentation's
    questions; the questions and each package's function count."""
    shutil.rmtree(corpus_dir, ignore_errors=True)
    questions: list[Question] = []
    sizes: dict[str, int] = {}
    for distribution, package in packages.items():
        functions, docstrings = copy_package(package, corpus_dir)
        sizes[package] = len(docstrings)
        try:
            unpacked = fetch_sdist(distribution, cache)
        except subprocess.CalledProcessError as exc:  # no source distribution, or pip cannot prepare it
            print(f"{distribution}: no source distribution ({exc.stderr.decode()[-200:]!r})", file=sys.stderr)
            continue
        asked = package_questions(unpacked, distribution, package, functions, docstrings)
        questions += spread(asked, per_package)
        print(f"{distribution}: {len(docstrings)} functions, {len(asked)} questions", file=sys.stderr, flush=True)
    return questions, sizes


def rank_of(kb: KnowledgeBase, question: Question, variant: str) -> int | None:
    """The rank (from 1) of the question's function among the first K results of a VARIANTS entry, or None."""
    mode, options = VARIANTS[variant]
    answers = {(t.path, t.qualname) for t in question.answers}
    for rank, result in enumerate(kb.query(question.text, mode, K, options).results, start=1):
        if (result.path, result.name) in answers:
            return rank
    return None


def parse_packages(text: str) -> dict[str, str]:
    """`--packages`' DIST:PACKAGE,... as distribution -> top-level package, each installed here; else
    SystemExit with one line naming the entry."""
    packages: dict[str, str] = {}
    for item in text.split(","):
        distribution, colon, package = item.strip().partition(":")
        if not (distribution and colon and package):
            raise SystemExit(f"--packages: {item!r} is not DIST:PACKAGE (e.g. pluggy:pluggy)")
        try:
            importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            raise SystemExit(f"--packages: distribution {distribution!r} is not installed") from None
        if not (SITE_PACKAGES / package).is_dir():
            raise SystemExit(f"--packages: no package folder {package!r} in {SITE_PACKAGES}")
        packages[distribution] = package
    return packages


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--embedders", default="minilm,static", help="comma-separated embedder specs")
    parser.add_argument("--per-package", type=int, default=40, help="questions a package at most")
    parser.add_argument("--work", type=Path, default=Path("/tmp/pkg-bench-questions"), help="corpus, databases, cache")
    parser.add_argument("--packages", help="DIST:PACKAGE,... to ask instead of the default distributions")
    args = parser.parse_args()
    packages = parse_packages(args.packages) if args.packages else DOCUMENTED
    started = time.perf_counter()
    corpus_dir = args.work.resolve() / "corpus"
    questions, sizes = make_questions(corpus_dir, args.work / "sdists", args.per_package, packages)
    if not questions:
        raise SystemExit("no questions: no documentation of these distributions names one of their functions")
    runs: dict[str, dict] = {}
    lexical: dict = {}
    for spec in args.embedders.split(","):
        db = args.work / f"db-{spec.replace(':', '_').replace('/', '_')}"
        shutil.rmtree(db, ignore_errors=True)
        with KnowledgeBase(db, "embedded", spec, args.work / "cache") as kb:
            build_started = time.perf_counter()
            kb.build([corpus_dir], parts=("functions",), prepare_pruning=False)
            build_seconds = time.perf_counter() - build_started
            print(f"{spec}: built in {build_seconds:.0f} s", file=sys.stderr, flush=True)
            runs[spec] = {"build_seconds": round(build_seconds, 1), "modes": evaluate(kb, questions, MODES, rank_of)}
            lexical = lexical or evaluate(kb, questions, LEXICAL_MODES, rank_of)
    result = {
        "when": utc_now(),
        "machine": machine(),
        "corpus": {"functions": sum(sizes.values()), "packages": sizes, "questions": len(questions)},
        "questions_by_package": dict(Counter(q.package for q in questions)),
        "k": K,
        "embedders": runs,
        "lexical": lexical,
        "paired_with_minilm_hybrid": paired_with(runs, ("minilm", "hybrid")),
        "queries_ranked": [f"{q.package}:{q.source}:{q.answers[0].qualname}:{q.text}" for q in questions],
        "questions": [asdict(q) for q in questions],
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(write_result(args.out, "questions" if packages is DOCUMENTED else "questions-check", result))


if __name__ == "__main__":
    main()
