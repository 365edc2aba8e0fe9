"""Two bench_search results paired on their queries: a lever's run against its baseline's.

Each side is a result file and one of its runs, `embedder/mode` (e.g. `tuned:63049598175f9255/hybrid`);
both must have ranked the same queries. Writes the paired differences of recall@1, recall@10 and
MRR@10 with bootstrap 95% intervals and help/hurt counts (bench_search.paired) to --out.

    python bench/pair_search.py LEVER.json EMBEDDER/MODE BASELINE.json EMBEDDER/MODE [--name NAME]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_search import paired  # noqa: E402
from bench.harness import bench_parser, utc_now, write_result  # noqa: E402


def read_result(path: Path) -> dict:
    """A bench_search result file, or one line and exit 1 when it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"cannot read the result {path}: {exc}") from None


def ranks_of(result: dict, run: str) -> list[int | None]:
    """The ranks of one run (`embedder/mode`) of a bench_search result."""
    embedder, _, mode = run.rpartition("/")
    try:
        return result["embedders"][embedder]["modes"][mode]["ranks"]
    except KeyError:
        raise SystemExit(f"no run {run!r} with ranks in the result (runs: {', '.join(result['embedders'])})") from None


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("lever", type=Path)
    parser.add_argument("lever_run")
    parser.add_argument("baseline", type=Path)
    parser.add_argument("baseline_run")
    parser.add_argument("--name", default="lever", help="what the lever is, in the result's file name")
    args = parser.parse_args()
    lever, baseline = read_result(args.lever), read_result(args.baseline)
    if lever.get("queries_ranked") != baseline.get("queries_ranked"):
        raise SystemExit("the two results did not rank the same queries")
    result = {
        "when": utc_now(),
        "lever": {"result": args.lever.name, "run": args.lever_run},
        "baseline": {"result": args.baseline.name, "run": args.baseline_run},
        "queries": len(lever["queries_ranked"]),
        "paired": paired(ranks_of(lever, args.lever_run), ranks_of(baseline, args.baseline_run)),
    }
    print(write_result(args.out, f"search-paired-{args.name}", result))


if __name__ == "__main__":
    main()
