"""bench_policies' compute-parity table on candidates laid out as `pkg compare --arms all,norag@4` writes
them: the committed HumanEval candidates of three problems, with four samples that copy four arms'
answers (so each sample's assessment in the real sandbox is known from its arm's), and the committed
model-written tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pkg.evaluation.generate import DEFAULT_ARMS

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "bench" / "results" / "compare-humaneval" / "results.jsonl"
TASKS = ("HumanEval/0", "HumanEval/10", "HumanEval/32")
COPIED = {"norag@4#1": "norag", "norag@4#2": "func-pkg", "norag@4#3": "chunk", "norag@4#4": "json-pkg"}


def _candidates(folder: Path) -> dict[tuple[str, str], dict]:
    """Writes the three problems' committed records and their samples to folder/results.jsonl."""
    committed = [json.loads(line) for line in COMMITTED.read_text().splitlines()]
    records = [r for r in committed if r["task_id"] in TASKS and r["chosen_arm"] is None and "#" not in r["arm"]]
    by_key = {(r["task_id"], r["arm"]): r for r in records}
    samples = [by_key[task, arm] | {"arm": sample} for sample, arm in COPIED.items() for task in TASKS]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records + samples))
    return by_key


@pytest.mark.sandbox
def test_the_parity_pools_hold_the_samples_and_the_arms_they_name(tmp_path: Path) -> None:
    by_key = _candidates(tmp_path)
    command = [sys.executable, str(ROOT / "bench" / "bench_policies.py"), "--benchmarks", "humaneval"]
    command += ["--candidates", str(tmp_path / "results.jsonl"), "--out", str(tmp_path), "--with-codet"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    result = json.loads(next(tmp_path.glob("policies-*.json")).read_text())["benchmarks"]["humaneval"]
    assert result["problems"] == len(TASKS) and "norag@4#1" not in result["arms"]
    for task in TASKS:  # a sample is assessed in the sandbox like the arm whose answer it copies
        own = dict(zip(result["arms"], result["assessments"][task], strict=True))
        assert result["sample_assessments"][task] == [own[arm] for arm in COPIED.values()]
    pools = result["compute_parity"]["pools"]
    assert {pool: rows["arms"] for pool, rows in pools.items()} == {
        "all arms": result["arms"],
        "pkg generate's arms": list(DEFAULT_ARMS),
        "norag@4 samples": list(COPIED),
        "norag + 3 samples": ["norag", "norag@4#1", "norag@4#2", "norag@4#3"],
    }
    for rows in pools.values():
        arms = [COPIED.get(arm, arm) for arm in rows["arms"]]
        assert rows["policies"]["oracle"] == sum(any(by_key[task, arm]["passed"] for arm in arms) for task in TASKS)
    for name, row in result["policies"].items():  # the whole pool is the main table's
        if name not in ("norag", "oracle"):
            assert pools["all arms"]["policies"][name]["passed"] == row["passed"]
    assert result["compute_parity"]["sampled_arm"] == "norag@4"
    report = (tmp_path / "policies.md").read_text()
    assert "## Compute parity on humaneval" in report and "\n- norag@4: its arm's prompts sampled" in report
    assert "cascade+codet" in pools["norag@4 samples"]["policies"]  # with the committed written tests
