"""Benchmarks: HumanEval and MBPP problems, their harness programs, decontamination."""

from __future__ import annotations

from pathlib import Path

from pkg.benchmarks.base import Problem
from pkg.benchmarks.decontamination import near_duplicates
from pkg.benchmarks.humaneval import load_humaneval
from pkg.benchmarks.mbpp import load_mbpp
from pkg.errors import BenchmarkError

BENCHMARKS = ("humaneval", "mbpp")

__all__ = [
    "BENCHMARKS",
    "Problem",
    "load_benchmark",
    "load_humaneval",
    "load_mbpp",
    "near_duplicates",
]


def load_benchmark(name: str, mbpp_path: Path | None = None) -> list[Problem]:
    """The problems of a benchmark: "humaneval" (all 164) or "mbpp" (the sanitized test split;
    data from `mbpp_path`, else $PKG_MBPP_PATH, else the packaged copy)."""
    if name == "humaneval":
        return load_humaneval()
    if name == "mbpp":
        return load_mbpp(mbpp_path)
    raise BenchmarkError(f"unknown benchmark {name!r}; use {' or '.join(BENCHMARKS)}")
