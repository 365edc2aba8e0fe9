"""The retrieval corpus of a comparison, which must not contain the benchmark's own solutions.

- HumanEval: MBPP (every split) + a standard-library slice + a Python-docs slice.
- MBPP (test split): MBPP's other splits + HumanEval's canonical solutions + the same slices.

Benchmark code goes in as JSONL rows (instruction, output with a ```python fence), the format
`pkg build` reads; the slices are the installed files themselves.
"""

from __future__ import annotations

import json
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from pkg.benchmarks import Problem, load_humaneval, load_mbpp
from pkg.errors import ConfigError

#: Standard-library modules of everyday algorithms and text handling.
STDLIB_MODULES = (
    "heapq.py",
    "bisect.py",
    "statistics.py",
    "textwrap.py",
    "string.py",
    "fractions.py",
    "difflib.py",
    "calendar.py",
    "colorsys.py",
    "fnmatch.py",
    "shlex.py",
    "collections/__init__.py",
    "functools.py",
)
#: Pages of the Python documentation (Debian's python3.11-doc) for the JSON-PKG arm.
DOCS_ROOT = Path("/usr/share/doc/python3.11/html/_sources")
DOCS_PAGES = (
    "tutorial/introduction.rst.txt",
    "tutorial/controlflow.rst.txt",
    "tutorial/datastructures.rst.txt",
    "tutorial/inputoutput.rst.txt",
    "tutorial/errors.rst.txt",
    "tutorial/classes.rst.txt",
    "tutorial/stdlib.rst.txt",
    "tutorial/stdlib2.rst.txt",
    "library/functions.rst.txt",
    "library/stdtypes.rst.txt",
    "library/string.rst.txt",
    "library/re.rst.txt",
    "library/math.rst.txt",
    "library/itertools.rst.txt",
    "library/collections.rst.txt",
    "library/heapq.rst.txt",
    "library/bisect.rst.txt",
    "library/functools.rst.txt",
)


def _rows(items: Sequence[tuple[str, str]]) -> str:
    return "".join(
        json.dumps({"instruction": text, "input": "", "output": f"```python\n{code.strip()}\n```"}) + "\n"
        for text, code in items
    )


def stdlib_paths() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return [root / name for name in STDLIB_MODULES if (root / name).is_file()]


def docs_paths(docs_root: Path = DOCS_ROOT) -> list[Path]:
    """The docs pages; missing docs are an error that says how to install them."""
    paths = [docs_root / page for page in DOCS_PAGES]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise ConfigError(
            f"the Python docs are missing ({missing[0]}): apt-get install python3.11-doc, or pass --no-docs"
        )
    return paths


def write_corpus(benchmark: str, folder: Path, mbpp_path: Path | None, with_docs: bool = True) -> list[Path]:
    """Writes the benchmark rows into `folder` and returns every path to build from; MBPP comes
    from `mbpp_path`, else $PKG_MBPP_PATH, else the copy packaged with pkg.benchmarks."""
    folder.mkdir(parents=True, exist_ok=True)
    mbpp_all = load_mbpp(mbpp_path, split="all", variant="full")
    if benchmark == "humaneval":
        rows = {"mbpp.jsonl": [(p.text, p.canonical_solution) for p in mbpp_all]}
    elif benchmark == "mbpp":
        held_out = {p.task_id for p in load_mbpp(mbpp_path, split="test", variant="full")}
        rows = {
            "mbpp-other-splits.jsonl": [(p.text, p.canonical_solution) for p in mbpp_all if p.task_id not in held_out],
            "humaneval.jsonl": [(_first_line(p), p.canonical_solution) for p in load_humaneval()],
        }
    else:
        raise ConfigError(f"unknown benchmark {benchmark!r}")
    paths = []
    for name, items in rows.items():
        path = folder / name
        text = _rows(items)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        paths.append(path)
    paths += stdlib_paths()
    if with_docs:
        paths += docs_paths()
    return paths


def _first_line(problem: Problem) -> str:
    """HumanEval's task sentence: the first line of its docstring."""
    inside = problem.prompt.split('"""')[1] if '"""' in problem.prompt else problem.prompt.split("'''")[1]
    return next((line.strip() for line in inside.splitlines() if line.strip()), problem.entry_point)
