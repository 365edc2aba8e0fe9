"""The README's results table quotes the committed comparisons: every figure it gives must be the
pass@1 that the run's `summary.json` recorded, so the prose cannot drift from the data."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
RESULTS = ROOT / "bench" / "results"
COLUMNS = {"HumanEval (164)": "compare-humaneval", "MBPP sanitized test (257)": "compare-mbpp"}


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip("|").split("|")]


def readme_results() -> list[tuple[str, str, str]]:
    """(arm, results folder, cell) for every cell of the README's committed-results table."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| arm | HumanEval"))
    header = _cells(lines[start])
    cells = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        row = _cells(line)
        cells += [(row[0], COLUMNS[name], cell) for name, cell in zip(header[1:], row[1:], strict=True)]
    return cells


@cache
def recorded(folder: str) -> dict[str, float]:
    summary = json.loads((RESULTS / folder / "summary.json").read_text())
    return {arm["arm"]: arm["pass_at_1"] for arm in summary["arms"]}


@pytest.mark.parametrize(("arm", "folder", "cell"), readme_results())
def test_readme_figure_matches_summary(arm: str, folder: str, cell: str) -> None:
    figures = recorded(folder)
    if not cell[0].isdigit():
        assert arm not in figures, f"{arm} has a {folder} result but the README says {cell!r}"
        return
    assert arm in figures, f"the README quotes {arm} on {folder}, which has no such arm"
    assert cell == f"{figures[arm]:.1f}"


def test_table_covers_every_arm() -> None:
    quoted = {arm for arm, _, _ in readme_results()}
    for folder in COLUMNS.values():
        assert set(recorded(folder)) <= quoted
