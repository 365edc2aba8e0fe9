"""CALLS edges measured against execution: run the standard library's own tests for some modules
under a tracer, record every (caller, callee) pair of corpus functions and every executed line, and
compare with the CALLS edges PKG links for those modules.

* recall: the share of traced pairs that are edges. "Explicit" pairs are those whose call-site line
  holds a call expression naming the callee (any call, for ``__init__``); the others are implicit
  (properties, operators, ``with``, iteration) or indirect (callbacks, functions held in variables,
  a generator started elsewhere than where it was made). The target applies to explicit pairs; all
  pairs are reported too;
* precision: of the edges whose call-site line executed, the share observed in the trace.

A code object maps to the innermost function whose span holds its first line (a lambda or a
comprehension counts as its enclosing function, as a call inside it does for PKG); a generator is
called when it first starts, not when it resumes. Usage:
``python bench/bench_call_graph.py [--modules textwrap shlex ...]`` writes JSON to bench/results/.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import sysconfig
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

# Runs in a child process: the tests import the standard library as it is, under the tracer.
_TRACER = r'''
import json, sys, threading, unittest
files = set(json.loads(sys.argv[1]))
tests, out = json.loads(sys.argv[2]), sys.argv[3]
calls, lines, started = set(), set(), set()
GENERATOR = 0x20 | 0x80 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR

def local(frame, event, arg):
    if event == "line":
        lines.add((frame.f_code.co_filename, frame.f_lineno))
    return local

def trace(frame, event, arg):
    code = frame.f_code
    if code.co_filename not in files:
        return None
    if code.co_flags & GENERATOR:
        if id(frame) in started:
            return local
        started.add(id(frame))
    caller = frame.f_back
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


suite = unittest.defaultTestLoader.loadTestsFromNames(tests)
runner = unittest.TextTestRunner(stream=open("/dev/null", "w"), verbosity=0, resultclass=Rearmed)
result = runner.run(suite)
sys.settrace(None)
threading.settrace(None)
json.dump({"calls": sorted(calls), "lines": sorted(lines), "tests": result.testsRun}, open(out, "w"))
'''


@dataclass
class Measure:
    """How the CALLS edges of a corpus compare with one traced run."""

    functions: int
    edges: int
    tests_run: int
    traced_pairs: int
    explicit_pairs: int
    recall_all: float
    recall_explicit: float
    executed_edges: int
    precision: float
    seconds_trace: float
    by_resolution: dict[str, tuple[int, int]]  # resolution -> (edges whose call site ran, those observed)
    missed: list[tuple[str, str, int]]  # (caller, callee, line) of explicit pairs without an edge
    unobserved: list[tuple[str, str, int, str]]  # (caller, callee, line, resolution) of executed edges never seen


def corpus_paths(modules: tuple[str, ...]) -> list[Path]:
    return [STDLIB / module for module in modules]


def trace(paths: list[Path], tests: list[str]) -> dict:
    """Run the test modules under the tracer; the traced calls and executed lines of the corpus files."""
    files = sorted(str(p) for path in paths for p in ([path] if path.is_file() else path.rglob("*.py")))
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "trace.json"
        subprocess.run(
            [sys.executable, "-c", _TRACER, json.dumps(files), json.dumps(tests), str(out)],
            cwd=scratch,
            check=True,
            timeout=3600,
            capture_output=True,
        )
        return dict(json.loads(out.read_text()))


def measure(modules: tuple[str, ...], keep: int = 30) -> Measure:
    """Build the functions and structure of the modules, trace their tests, compare."""
    paths = corpus_paths(modules)
    corpus = parse_corpus(paths, parts={"functions"})
    records = [record_of(n) for n in corpus.nodes]
    names = [r for r in records if isinstance(r, NameNode)]
    files = [r for r in records if isinstance(r, FileNode)]
    edges = link_edges(files, [r for r in records if isinstance(r, ClassNode)], names)
    calls = {(e.src, e.dst): e for e in edges if e.type is Rel.CALLS}
    by_file: dict[str, list[NameNode]] = defaultdict(list)
    for name in names:
        by_file[name.source].append(name)
    sites = {(c, line, callee.rpartition(".")[2]) for f in files for c, line, callee in json.loads(f.refs)["calls"]}
    sites |= {(caller, line, "__init__") for caller, line, _ in sites}

    started = time.perf_counter()
    run = trace(paths, [t for m in modules for t in SUITES[m]])
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
    missed = sorted((by_id[a].name, by_id[b].name, pairs[(a, b)]) for a, b in explicit if (a, b) not in calls)
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
        recall_all=sum(p in calls for p in pairs) / max(len(pairs), 1),
        recall_explicit=sum(p in calls for p in explicit) / max(len(explicit), 1),
        executed_edges=len(ran),
        precision=len(seen) / max(len(ran), 1),
        seconds_trace=seconds,
        by_resolution=dict(sorted(by_resolution.items())),
        missed=missed[:keep],
        unobserved=unobserved[:keep],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", nargs="+", default=list(SUITES), choices=list(SUITES))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = measure(tuple(args.modules))
    path = write_result(
        args.out,
        "call_graph",
        {"when": utc_now(), "machine": machine(), "modules": args.modules, **result.__dict__},
    )
    print(json.dumps({k: v for k, v in result.__dict__.items() if k not in ("missed", "unobserved")}, indent=2))
    print(path)


if __name__ == "__main__":
    main()
