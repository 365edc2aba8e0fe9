"""Definitions context's cost: `context_at` per call, warm and cold, on the ~20k-function standard-library
graph, a draft check's (a function's own body checked for invented names, cold and warm), the second round of a
draft that invents a name (the body with its first call misspelt: the similar code searched too), and what recording
the class and constant stubs and the names each file uses adds to a build. Each
call is timed by the wall clock and by the process's CPU time (the figure that holds on a busy machine).

Positions are functions of the corpus drawn with a fixed seed, each asked at its last line (the code at
hand read from the file, as `pkg context PATH:LINE` does). The first call of a process builds the
tables (the Linker over the store's FILE, CLASS and NAME nodes): that is the cold figure; the rest are
warm. A second pass over the same positions times the signature cache warm too. The build's added cost is
the time python_stubs and python_uses take over the corpus's files, against a fresh build's time with the
chosen embedder (the default MiniLM, or `--embedder static`, the fastest build, where the share is largest).
Writes JSON to bench/results/.

    python bench/bench_context.py [--functions 20000] [--calls 300] [--embedder minilm] [--db DIR]
"""

from __future__ import annotations

import ast
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).parent), str(ROOT)]
from corpora import stdlib_corpus  # noqa: E402
from harness import bench_parser, machine, percentile, utc_now, write_result  # noqa: E402

from ingest.name_uses import encoded, python_uses  # noqa: E402
from ingest.python_types import walk  # noqa: E402
from pkg.code.stubs import python_stubs  # noqa: E402
from pkg.code.syntax_tree import python_tree  # noqa: E402
from pkg.graph import Label  # noqa: E402
from pkg.knowledge_base import KnowledgeBase  # noqa: E402
from pkg.schema import NameNode  # noqa: E402

SEED = 20261127


def stubs_seconds(files: list[Path]) -> float:
    """What definitions context's records cost a build: python_stubs and python_uses over every file's text
    and syntax tree (the build parses and walks each file once, for every reader: that is not their cost)."""
    texts = [path.read_text(encoding="utf-8", errors="replace") for path in files]
    trees = [python_tree(text) for text in texts]
    walks = [walk(tree) if tree is not None else None for tree in trees]
    started = time.perf_counter()
    for text, tree, walked in zip(texts, trees, walks, strict=True):
        python_stubs(text, tree)
        if tree is not None and walked is not None:
            encoded(python_uses(tree, children=walked.children))
    return time.perf_counter() - started


def timed_calls(kb: KnowledgeBase, positions: list[tuple[str, int]]) -> tuple[list[tuple[float, float]], list[dict]]:
    """Each call's (wall, CPU) seconds: on a busy machine the wall time grows with the load, the process's
    CPU time is what the call costs."""
    seconds, answers = [], []
    for path, line in positions:
        started, cpu = time.perf_counter(), time.process_time()
        found = kb.context_at(path, line)
        seconds.append((time.perf_counter() - started, time.process_time() - cpu))
        answers.append({"definitions": len(found.definitions), "tokens": found.tokens, "gated": found.gated})
    return seconds, answers


def draft_calls(kb: KnowledgeBase, picks: list[NameNode]) -> tuple[list[tuple[float, float]], list[list[str]]]:
    """Each draft check's (wall, CPU) seconds and the names it calls invented: the draft is the function's own
    body (the lines after its signature), the code at hand its file without them. A real body invents nothing, so
    what is flagged is the check's false alarms on real code."""
    seconds, flagged = [], []
    for name in picks:
        body, text = _body_and_rest(name)
        started, cpu = time.perf_counter(), time.process_time()
        found = kb.context_at(name.source, name.start_line, text, draft=body)
        seconds.append((time.perf_counter() - started, time.process_time() - cpu))
        flagged.append([i.name for i in found.invented])
    return seconds, flagged


#: The first name a body calls: the name a "misspelt" draft changes so that it invents one.
FIRST_CALL = re.compile(r"\b([A-Za-z_]\w*)\(")


def misspelt_calls(kb: KnowledgeBase, picks: list[NameNode]) -> tuple[list[tuple[float, float]], list[int]]:
    """Each second round's (wall, CPU) seconds and how many similar snippets it returned: the draft is the
    function's own body with the first name it calls misspelt (`zz` appended: an invented name), so that the
    check opens the gate and the chunks like the code and the draft are searched (BM25) beside the definitions."""
    seconds, similar = [], []
    for name in picks:
        body, text = _body_and_rest(name)
        misspelt = FIRST_CALL.sub(lambda m: f"{m.group(1)}zz(", body, count=1)
        if misspelt == body:
            continue
        started, cpu = time.perf_counter(), time.process_time()
        found = kb.context_at(name.source, name.start_line, text, draft=misspelt)
        seconds.append((time.perf_counter() - started, time.process_time() - cpu))
        similar.append(len(found.similar))
    return seconds, similar


def _body_and_rest(name: NameNode) -> tuple[str, str]:
    """A function's body (the lines after its signature) and its file without them."""
    source = Path(name.source).read_text(encoding="utf-8", errors="replace")
    lines = source.splitlines(keepends=True)
    first = _body_line(source, name)
    return "".join(lines[first - 1 : name.end_line]), "".join(lines[: first - 1] + lines[name.end_line :])


def _body_line(source: str, name: NameNode) -> int:
    """The first line of a function's body (after a signature of many lines), by its syntax tree."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno == name.end_line:
            if node.name == name.name.rpartition(".")[2]:
                return node.body[0].lineno
    return name.start_line + 1


def summary(seconds: list[tuple[float, float]]) -> dict:
    result: dict = {"calls": len(seconds)}
    for clock, values in (("", [s[0] for s in seconds]), ("cpu_", [s[1] for s in seconds])):
        ms = [s * 1000 for s in values]
        result |= {
            f"{clock}mean_ms": round(statistics.fmean(ms), 2),
            f"{clock}p50_ms": round(percentile(ms, 50), 2),
            f"{clock}p95_ms": round(percentile(ms, 95), 2),
            f"{clock}max_ms": round(max(ms), 2),
        }
    return result


def main() -> None:
    parser = bench_parser(__doc__, functions=20000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--db", type=Path, default=None, help="Build into (or reuse) this database.")
    args = parser.parse_args()
    files, functions = stdlib_corpus(args.functions)
    db = args.db or Path(tempfile.mkdtemp(prefix="pkg-bench-context-")) / "db"
    result: dict = {"started": utc_now(), "machine": machine(), "corpus": {"files": len(files), "functions": functions}}

    stubs_s = stubs_seconds(files)
    with KnowledgeBase(db, embedder=args.embedder) as kb:
        fresh = not kb.exists
        started = time.perf_counter()
        kb.build(files)
        build_s = time.perf_counter() - started
        result["build"] = {
            "embedder": args.embedder,
            "seconds": round(build_s, 1),
            "fresh": fresh,
            "stubs_s": round(stubs_s, 2),
            "stubs_share_of_build": round(stubs_s / build_s, 4) if fresh else None,
        }
        names = [n for n in kb.store.label_records(Label.NAME) if isinstance(n, NameNode) and n.row is None]
        picks = random.Random(SEED).sample(names, min(args.calls, len(names)))
        positions = [(n.source, n.end_line) for n in picks]
        cold, first = timed_calls(kb, positions[:1])
        warm, answers = timed_calls(kb, positions[1:])
        again, _ = timed_calls(kb, positions[1:])
        drafts, flagged = draft_calls(kb, picks)
        rounds, similar = misspelt_calls(kb, picks)
    given = [a for a in answers if not a["gated"]]
    result |= {
        "cold_first_call_ms": round(cold[0][0] * 1000, 1),
        "cold_first_call_cpu_ms": round(cold[0][1] * 1000, 1),
        "warm": summary(warm),
        "warm_again": summary(again),
        "answers": {
            "with_context": len(given),
            "gated": len(answers) - len(given),
            "mean_definitions": round(statistics.fmean(a["definitions"] for a in given), 2) if given else 0,
            "mean_tokens": round(statistics.fmean(a["tokens"] for a in given), 1) if given else 0,
        },
        # the first check reads the graph's vocabulary (every chunk, lexed): its cold cost
        "draft": {
            "first_call_ms": round(drafts[0][0] * 1000, 1),
            "first_call_cpu_ms": round(drafts[0][1] * 1000, 1),
            "warm": summary(drafts[1:]),
            "real_bodies_flagged": sum(bool(f) for f in flagged),
            "flagged_examples": [f for f in flagged if f][:10],
        },
        # a draft that invents a name (the body's first call misspelt): the check, then the second round (the
        # BM25 chunk index opened by the first such call, then the definitions fitted beside the snippets)
        "second_round": {
            "first_call_ms": round(rounds[0][0] * 1000, 1),
            "first_call_cpu_ms": round(rounds[0][1] * 1000, 1),
            "warm": summary(rounds[1:]),
            "with_similar": sum(bool(n) for n in similar),
            "mean_similar": round(statistics.fmean(similar), 2),
        },
        "finished": utc_now(),
        "load_after": machine()["load"],
    }
    print(write_result(args.out, "context", result))


if __name__ == "__main__":
    main()
