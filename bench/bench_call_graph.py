"""CALLS edges measured against execution: run a corpus's own tests under a tracer, record every
(caller, callee) pair of corpus functions and every executed line, and compare with the CALLS
edges PKG links for the corpus. Two corpora: twelve standard-library modules under their unittest
suites (little annotated), and click 8.1.7 from its PyPI source distribution under its pytest suite
(annotated).

* recall: the share of traced pairs that are edges. "Explicit" pairs are those whose call-site line
  holds a call expression naming the callee (any call, for ``__init__``); "property" pairs are those
  whose callee is a property getter, setter or deleter; the others are implicit (operators,
  ``with``, iteration) or indirect (callbacks, functions held in variables, a generator started
  elsewhere than where it was made). Recall is reported over explicit pairs, property pairs and all;
* precision: of the edges whose call-site line executed, the share observed in the trace; also
  without the ``override`` edges (``precision_static``): a call that may dispatch to a subclass's
  method is a true possibility the tests may never take at that line.

A code object maps to the innermost function whose span holds its first line (a lambda or a
comprehension counts as its enclosing function, as a call inside it does for PKG); a generator is
called when it first starts, not when it resumes, and a ``@contextmanager`` generator (started by
contextlib) by the ``with`` that enters it. Usage:
``python bench/bench_call_graph.py [--corpus stdlib|click] [--modules textwrap shlex ...]`` writes
JSON to bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import RESULTS, machine, utc_now, write_result  # noqa: E402
from ingest.link import link_edges  # noqa: E402
from ingest.parse import parse_corpus  # noqa: E402
from ingest.structure import innermost  # noqa: E402
from pkg.graph import Rel  # noqa: E402
from pkg.schema import ClassNode, FileNode, NameNode, record_of  # noqa: E402

STDLIB = Path(sysconfig.get_paths()["stdlib"])
#: Module (file or package directory under the standard library) -> the test modules that exercise it.
SUITES: dict[str, tuple[str, ...]] = {
    "textwrap.py": ("test.test_textwrap",),
    "shlex.py": ("test.test_shlex",),
    "difflib.py": ("test.test_difflib",),
    "json": ("test.test_json",),
    "fnmatch.py": ("test.test_fnmatch",),
    "string.py": ("test.test_string",),
    "pprint.py": ("test.test_pprint",),
    "configparser.py": ("test.test_configparser",),
    "argparse.py": ("test.test_argparse",),
    "email": ("test.test_email",),
    "tomllib": ("test.test_tomllib",),
    "csv.py": ("test.test_csv",),
}
SMALL = ("textwrap.py", "shlex.py", "difflib.py")
CLICK = "click==8.1.7"  # annotated, with its tests in the sdist
CACHE = Path.home() / ".cache" / "pkg-bench"

# Runs in a child process: the tests import the standard library as it is, under the tracer.
_TRACER = r'''
import dis, json, sys, threading, unittest
files = set(json.loads(sys.argv[1]))
tests, out = json.loads(sys.argv[2]), sys.argv[3]
calls, lines = set(), set()
GENERATOR = 0x20 | 0x80 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR
RESUME = dis.opmap["RESUME"]

def starting(frame):
    """Whether a generator's frame starts (RESUME 0) rather than resumes after a yield or an await:
    read from its code, since the ids of finished frames are reused by new ones."""
    code, at = frame.f_code.co_code, frame.f_lasti
    return at >= 0 and code[at] == RESUME and code[at + 1] == 0

def local(frame, event, arg):
    if event == "line":
        lines.add((frame.f_code.co_filename, frame.f_lineno))
    return local

def trace(frame, event, arg):
    code = frame.f_code
    if code.co_filename not in files:
        return None
    if code.co_flags & GENERATOR and not starting(frame):
        return local
    caller = frame.f_back
    while code.co_flags & GENERATOR and caller is not None and caller.f_code.co_filename.endswith("contextlib.py"):
        caller = caller.f_back  # a @contextmanager generator starts in contextlib: credit the `with` entering it
    if caller is not None and caller.f_code.co_filename in files:
        calls.add((caller.f_code.co_filename, caller.f_code.co_firstlineno, caller.f_lineno,
                   code.co_filename, code.co_firstlineno, code.co_name))
        lines.add((caller.f_code.co_filename, caller.f_lineno))
    return local

class Rearmed(unittest.TextTestResult):
    """Sets the tracer again before each test: Python drops it when it raises (a recursion test
    exhausting the stack inside it), and some tests switch tracing off."""

    def startTest(self, test):
        threading.settrace(trace)
        sys.settrace(trace)
        super().startTest(test)


class Plugin:
    """The same for pytest: tracing set again before each test; the tests counted."""

    ran = 0

    def pytest_runtest_setup(self, item):
        threading.settrace(trace)
        sys.settrace(trace)

    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            Plugin.ran += 1


if tests and tests[0] == "pytest":
    import pytest
    pytest.main([*tests[1:], "-q", "-p", "no:cacheprovider"], plugins=[Plugin()])
    ran = Plugin.ran
else:
    suite = unittest.defaultTestLoader.loadTestsFromNames(tests)
    runner = unittest.TextTestRunner(stream=open("/dev/null", "w"), verbosity=0, resultclass=Rearmed)
    ran = runner.run(suite).testsRun
sys.settrace(None)
threading.settrace(None)
json.dump({"calls": sorted(calls), "lines": sorted(lines), "tests": ran}, open(out, "w"))
'''


@dataclass(frozen=True)
class Corpus:
    """Source paths and how to run their tests: unittest names, or ``["pytest", args...]`` run in
    `cwd` with `pythonpath` first on the path (so the tests import these sources)."""

    name: str
    paths: list[Path]
    tests: list[str]
    cwd: Path | None = None
    pythonpath: Path | None = None


def stdlib(modules: tuple[str, ...]) -> Corpus:
    return Corpus("stdlib", [STDLIB / m for m in modules], [t for m in modules for t in SUITES[m]])


def click(requirement: str = CLICK) -> Corpus:
    """click's source distribution from PyPI (downloaded once into CACHE): its package and its tests."""
    name = requirement.replace("==", "-")
    root = CACHE / name
    if not root.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "-d", str(CACHE)]
        subprocess.run([*pip, requirement], check=True, capture_output=True, timeout=600)
        with tarfile.open(CACHE / f"{name}.tar.gz") as archive:
            archive.extractall(CACHE, filter="data")
    # its setup.cfg turns warnings into errors, and a newer pytest warns about its parametrize calls
    tests = ["pytest", str(root / "tests"), "-o", "filterwarnings="]
    return Corpus("click", [root / "src" / "click"], tests, root, root / "src")


@dataclass
class Measure:
    """How the CALLS edges of a corpus compare with one traced run."""

    functions: int
    edges: int
    tests_run: int
    traced_pairs: int
    explicit_pairs: int
    property_pairs: int
    recall_all: float
    recall_explicit: float
    recall_property: float
    executed_edges: int
    precision: float
    precision_static: float  # the same without `override` edges (dispatch the tests may never take)
    seconds_trace: float
    by_resolution: dict[str, tuple[int, int]]  # resolution -> (edges whose call site ran, those observed)
    missed: list[tuple[str, str, int]]  # (caller, callee, line) of explicit pairs without an edge
    missed_property: list[tuple[str, str, int]]  # the same of property pairs
    unobserved: list[tuple[str, str, int, str]]  # (caller, callee, line, resolution) of executed edges never seen


def trace(corpus: Corpus) -> dict:
    """Run the corpus's tests under the tracer; the traced calls and executed lines of its files."""
    files = sorted(str(p) for path in corpus.paths for p in ([path] if path.is_file() else path.rglob("*.py")))
    env = {**os.environ, "PYTHONPATH": str(corpus.pythonpath)} if corpus.pythonpath else None
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "trace.json"
        subprocess.run(
            [sys.executable, "-c", _TRACER, json.dumps(files), json.dumps(corpus.tests), str(out)],
            cwd=corpus.cwd or scratch,
            check=True,
            timeout=3600,
            capture_output=True,
            env=env,
        )
        return dict(json.loads(out.read_text()))


def measure(modules: tuple[str, ...], keep: int = 30) -> Measure:
    """The standard-library modules against their unittest suites."""
    return measure_corpus(stdlib(modules), keep)


def measure_corpus(corpus: Corpus, keep: int = 30) -> Measure:
    """Build the functions and structure of a corpus, trace its tests, compare."""
    parsed = parse_corpus(corpus.paths, parts={"functions"})
    records = [record_of(n) for n in parsed.nodes]
    names = [r for r in records if isinstance(r, NameNode)]
    files = [r for r in records if isinstance(r, FileNode)]
    edges = link_edges(files, [r for r in records if isinstance(r, ClassNode)], names)
    calls = {(e.src, e.dst): e for e in edges if e.type is Rel.CALLS}
    by_file: dict[str, list[NameNode]] = defaultdict(list)
    for name in names:
        by_file[name.source].append(name)
    sites = {(c, line, callee.rpartition(".")[2]) for f in files for c, line, callee in json.loads(f.refs)["calls"]}
    sites |= {(caller, line, "__init__") for caller, line, _ in sites}
    properties = {(f.source, first) for f in files for _, first, _ in json.loads(f.refs).get("properties", [])}
    accessors = {n.id for n in names if (n.source, n.start_line) in properties}

    started = time.perf_counter()
    run = trace(corpus)
    seconds = time.perf_counter() - started

    pairs: dict[tuple[str, str], int] = {}
    explicit: set[tuple[str, str]] = set()
    for caller_file, caller_first, line, callee_file, callee_first, callee_name in run["calls"]:
        caller = innermost(by_file[caller_file], caller_first)
        callee = innermost(by_file[callee_file], callee_first)
        if caller is None or callee is None or callee_name.startswith("<") or callee.start_line > callee_first:
            continue
        pairs.setdefault((caller.id, callee.id), line)
        if (caller.id, line, callee_name) in sites:
            explicit.add((caller.id, callee.id))
    executed = {tuple(x) for x in run["lines"]}
    by_id = {n.id: n for n in names}
    ran = [e for e in calls.values() if (by_id[e.src].source, e.props["line"]) in executed]
    seen = [e for e in ran if (e.src, e.dst) in pairs]
    static = [e for e in ran if e.props["resolution"] != "override"]
    by_property = {p for p in pairs if p[1] in accessors}
    missed, missed_property = (
        sorted((by_id[a].name, by_id[b].name, pairs[(a, b)]) for a, b in kind if (a, b) not in calls)
        for kind in (explicit - by_property, by_property)
    )
    unobserved = sorted(
        (by_id[e.src].name, by_id[e.dst].name, e.props["line"], e.props["resolution"])
        for e in ran
        if (e.src, e.dst) not in pairs
    )
    by_resolution: dict[str, tuple[int, int]] = {}
    for e in ran:
        executed_count, observed = by_resolution.get(e.props["resolution"], (0, 0))
        by_resolution[e.props["resolution"]] = (executed_count + 1, observed + ((e.src, e.dst) in pairs))
    return Measure(
        functions=len(names),
        edges=len(calls),
        tests_run=run["tests"],
        traced_pairs=len(pairs),
        explicit_pairs=len(explicit),
        property_pairs=len(by_property),
        recall_all=sum(p in calls for p in pairs) / max(len(pairs), 1),
        recall_explicit=sum(p in calls for p in explicit) / max(len(explicit), 1),
        recall_property=sum(p in calls for p in by_property) / max(len(by_property), 1),
        executed_edges=len(ran),
        precision=len(seen) / max(len(ran), 1),
        precision_static=sum((e.src, e.dst) in pairs for e in static) / max(len(static), 1),
        seconds_trace=seconds,
        by_resolution=dict(sorted(by_resolution.items())),
        missed=missed[:keep],
        missed_property=missed_property[:keep],
        unobserved=unobserved[:keep],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=("stdlib", "click"), default="stdlib")
    parser.add_argument("--modules", nargs="+", default=list(SUITES), choices=list(SUITES), help="stdlib only")
    parser.add_argument("--keep", type=int, default=30, help="missed and unobserved pairs kept in the JSON")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    corpus = stdlib(tuple(args.modules)) if args.corpus == "stdlib" else click()
    result = measure_corpus(corpus, args.keep)
    scope = args.modules if args.corpus == "stdlib" else [CLICK]
    path = write_result(
        args.out,
        f"call_graph-{args.corpus}" if args.corpus != "stdlib" else "call_graph",
        {"when": utc_now(), "machine": machine(), "corpus": args.corpus, "modules": scope, **result.__dict__},
    )
    lists = ("missed", "missed_property", "unobserved")
    print(json.dumps({k: v for k, v in result.__dict__.items() if k not in lists}, indent=2))
    print(path)


if __name__ == "__main__":
    main()
