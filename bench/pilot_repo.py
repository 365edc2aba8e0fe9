"""The repository benchmark's pilot, read across runs: every (arm, setting) of several `pkg compare --benchmark repo
--pilot` output folders against one baseline (the in-file arm of one folder), per stratum, with the paired difference
of edit similarity, its bootstrap interval and help/hurt counts, so layouts, budgets and `--names` can be chosen.

A folder's name is its setting's label (e.g. `repo-512-all`); its arms appear as `ARM [LABEL]`, with `auto` derived
from a folder's infile and defs replies (as `pkg compare` derives it).

    python bench/pilot_repo.py bench/results/pilot-repo/repo-512-all bench/results/pilot-repo/chat-512-all \
        --baseline repo-512-all --out bench/results/pilot-repo
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from pkg.evaluation.repo import AUTO, BASELINE, DEFS, STRATA, RepoRecord, derive_auto, write_repo_report


def load(folder: Path) -> list[RepoRecord]:
    """A folder's records, with the auto arm derived where it ran infile and defs but not auto."""
    lines = (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
    records = [RepoRecord(**json.loads(line)) for line in lines if line.strip()]
    by_task: dict[str, dict[str, RepoRecord]] = {}
    for record in records:
        by_task.setdefault(record.task_id, {})[record.arm] = record
    derived = [
        derive_auto(arms[BASELINE], arms[DEFS])
        for arms in by_task.values()
        if BASELINE in arms and DEFS in arms and AUTO not in arms
    ]
    return records + derived


def relabelled(folders: list[Path], baseline: str) -> tuple[list[RepoRecord], list[str]]:
    """Every folder's records under `ARM [LABEL]`, the baseline folder's in-file arm under the plain baseline name."""
    records, labels = [], [BASELINE]
    for folder in folders:
        for record in load(folder):
            is_baseline = folder.name == baseline and record.arm == BASELINE
            label = BASELINE if is_baseline else f"{record.arm} [{folder.name}]"
            records.append(dataclasses.replace(record, arm=label))
            if label not in labels:
                labels.append(label)
    return records, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", type=Path, nargs="+", help="pkg compare --pilot output folders")
    parser.add_argument("--baseline", required=True, help="the folder whose in-file arm every row is paired with")
    parser.add_argument("--out", type=Path, required=True, help="where table.md and summary.json go")
    args = parser.parse_args()
    if args.baseline not in {folder.name for folder in args.folders}:
        parser.error(f"--baseline {args.baseline!r} is none of the folders' names")
    records, labels = relabelled(args.folders, args.baseline)
    tasks = {r.task_id for r in records if r.arm == BASELINE}
    incomplete = sorted({r.arm for r in records if r.arm != BASELINE} - _complete(records, tasks))
    notes = [
        f"- baseline: `infile` of {args.baseline}; {len(tasks)} pilot tasks; "
        "rows name their folder (layout-budget-names)",
        *(f"- {label}: fewer tasks than the baseline (a partial run)" for label in incomplete),
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    print(write_repo_report(args.out, records, labels, notes))
    print(f"strata: {', '.join(STRATA)}; wrote {args.out}/table.md, summary.json")


def _complete(records: list[RepoRecord], tasks: set[str]) -> set[str]:
    by_label: dict[str, set[str]] = {}
    for record in records:
        by_label.setdefault(record.arm, set()).add(record.task_id)
    return {label for label, done in by_label.items() if done >= tasks}


if __name__ == "__main__":
    main()
