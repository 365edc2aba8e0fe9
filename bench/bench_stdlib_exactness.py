"""Python extraction against `ast` on the whole standard library: every module `ast` parses.

Reads each module as a build does, extracts it (`ingest.extract`, which takes functions from `ast`
where it parses the file) and compares functions (qualname, span) and their blocks at any depth with
`ast`'s (the reference of tests/test_python_extraction.py). Mismatching files must be 0. Reports
files, functions, blocks, mismatches and the extraction time; writes JSON to bench/results/.

    python bench/bench_stdlib_exactness.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).parent), str(ROOT)]
from harness import bench_parser, machine, utc_now, write_result  # noqa: E402

from ingest.extract import extract  # noqa: E402
from pkg.code.functions import iter_blocks  # noqa: E402
from tests.test_python_extraction import STDLIB, matches_ast, whole_stdlib  # noqa: E402


def main() -> None:
    args = bench_parser(__doc__).parse_args()
    started = time.perf_counter()
    files = functions = blocks = 0
    extract_s = 0.0
    mismatching: list[str] = []
    for path, source, tree in whole_stdlib():
        extract_started = time.perf_counter()
        extraction = extract(source, "python")
        extract_s += time.perf_counter() - extract_started
        files += 1
        functions += len(extraction.functions)
        blocks += sum(1 for function in extraction.functions for _ in iter_blocks(function.blocks))
        if not matches_ast(tree, source, extraction):
            mismatching.append(str(path.relative_to(STDLIB)))
    result = {
        "date": utc_now(),
        "machine": machine(),
        "stdlib": str(STDLIB),
        "files": files,
        "functions": functions,
        "blocks": blocks,
        "mismatching_files": len(mismatching),
        "mismatches": mismatching,
        "extract_s": extract_s,
        "functions_per_s": functions / extract_s,
        "seconds": time.perf_counter() - started,  # reading, ast's reference and the comparison too
    }
    out = write_result(args.out, "stdlib-exactness", result)
    print(json.dumps(result, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
