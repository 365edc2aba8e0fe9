"""The README's results table quotes the committed comparisons: every figure it gives must be the
pass@1 that the run's `summary.json` recorded, so the prose cannot drift from the data."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from pkg.evaluation.report import render_saved
from tests.conftest import run_cli

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


def test_the_committed_tables_are_made_again_from_their_results_alone() -> None:
    for folder in COLUMNS.values():
        assert render_saved(RESULTS / folder) == (RESULTS / folder / "table.md").read_text()


@pytest.mark.cli
def test_pkg_report_shows_the_committed_comparison_without_a_model(tmp_path: Path) -> None:
    """`make demo` shows the committed HumanEval comparison beside its own tiny live run."""
    folder = RESULTS / "compare-humaneval"
    done = run_cli("report", str(folder))
    assert (done.returncode, done.stdout) == (0, (folder / "table.md").read_text())
    assert "generator: llama:qwen2.5-coder-1.5b" in done.stdout and "| reranked | 81.1 | 133/164 |" in done.stdout
    probe = (
        "import sys; from pkg.cli import cli; cli.main(['report', sys.argv[1]], standalone_mode=False); "
        "print(sorted(m for m in ('llama_cpp', 'sentence_transformers', 'torch') if m in sys.modules), file=sys.stderr)"
    )
    loaded = subprocess.run([sys.executable, "-c", probe, str(folder)], capture_output=True, text=True, timeout=600)
    assert loaded.stderr == "[]\n"
    repo = run_cli("report", str(RESULTS / "compare-repo-v1"))
    assert repo.returncode == 1 and repo.stderr.startswith(
        f"pkg: {RESULTS / 'compare-repo-v1'} does not hold the results"
    )
    assert len(repo.stderr.splitlines()) == 1
    missing = run_cli("report", str(tmp_path))
    assert (missing.returncode, missing.stderr.splitlines()) == (
        1,
        [f"pkg: no comparison results in {tmp_path}: No such file or directory: {tmp_path / 'summary.json'}"],
    )
