"""Sandbox throughput: small HumanEval-like candidates (a function and a few asserts, some failing)
through `run_many` with the default workers.

The reference design ran a candidate in 2.8 ms; the target is at least 100 candidates/s on 2 cores.

    python bench/bench_sandbox.py [--candidates 1000] [--mode auto]
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import bench_parser, machine, percentile, utc_now, write_result  # noqa: E402

from rerank.sandbox import open_sandbox  # noqa: E402

#: (function, asserts): `{k}` varies the constants per candidate; the last two always fail.
TEMPLATES = [
    (
        "def add(a, b):\n    return a + b\n",
        "assert add({k}, 2) == {k} + 2\nassert add(-{k}, {k}) == 0\n",
    ),
    (
        "def is_palindrome(text):\n    return text == text[::-1]\n",
        "assert is_palindrome('ab' * {k} + 'ba' * {k})\nassert not is_palindrome('abc{k}')\n",
    ),
    (
        "import math\n\ndef primes_below(n):\n"
        "    return [p for p in range(2, n) if all(p % d for d in range(2, math.isqrt(p) + 1))]\n",
        "assert primes_below(20) == [2, 3, 5, 7, 11, 13, 17, 19]\nassert len(primes_below({k} + 100)) > 20\n",
    ),
    (
        "from collections import Counter\n\ndef most_common_char(text):\n"
        "    return Counter(text).most_common(1)[0][0]\n",
        "assert most_common_char('a' * {k} + 'b') == 'a'\n",
    ),
    (
        "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n",
        "assert fib(10) == 55\nassert fib({k} % 30 + 2) > 0\n",
    ),
    (
        "def sort_by_length(words):\n    return sorted(words, key=len)\n",
        "assert sort_by_length(['ccc', 'a', 'bb']) == ['a', 'bb', 'ccc']\n"
        "assert len(sort_by_length(['x'] * {k})) == {k}\n",
    ),
    (
        "def mean(values):\n    return sum(values) / len(values)\n",
        "assert mean([1, 2, 3]) == 2\nassert mean([]) == 0\n",  # ZeroDivisionError
    ),
    (
        "def reverse_words(sentence):\n    return ' '.join(sentence.split())\n",
        "assert reverse_words('hello world {k}') == '{k} world hello'\n",  # AssertionError
    ),
]


def programs(count: int) -> list[str]:
    return [
        function + "\n" + asserts.format(k=index // len(TEMPLATES) + 1)
        for index, (function, asserts) in ((i, TEMPLATES[i % len(TEMPLATES)]) for i in range(count))
    ]


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--mode", default="auto", choices=("auto", "bwrap", "weak"))
    args = parser.parse_args()
    candidates = programs(args.candidates)
    with open_sandbox(mode=args.mode) as sandbox:
        sandbox.run_many(candidates[: 4 * sandbox.workers])  # warm up
        started = time.perf_counter()
        outcomes = sandbox.run_many(candidates)
        seconds = time.perf_counter() - started
    latencies = [o.seconds * 1000 for o in outcomes]
    result = {
        "benchmark": "sandbox run_many throughput (small HumanEval-like candidates)",
        "date": utc_now(),
        "machine": machine(),
        "reference": "2.8 ms per candidate; target at least 100 candidates/s on 2 cores",
        "isolation": sandbox.isolation,
        "workers": sandbox.workers,
        "candidates": len(outcomes),
        "seconds": seconds,
        "candidates_per_s": len(outcomes) / seconds,
        "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
        "outcomes": dict(Counter(f"{o.status}:{o.error_type}" for o in outcomes)),
    }
    print(json.dumps(result, indent=2), flush=True)
    out = write_result(args.out, "sandbox", result)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
