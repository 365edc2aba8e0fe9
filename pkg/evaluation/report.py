"""The comparison's outputs: per-problem JSONL, a pass@1 table (Markdown and CSV) with error types,
context tokens, help/hurt counts against NoRAG and how often answers took their context over, and a
bar chart."""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from pkg.errors import BenchmarkError
from pkg.evaluation.arms import DERIVED
from pkg.evaluation.run import Record

BASELINE = "norag"


@dataclass(frozen=True)
class ArmSummary:
    """One row of the table."""

    arm: str
    problems: int
    passed: int
    context_tokens: float
    prompt_tokens: float
    generation_seconds: float | None  # mean per problem; None for arms that pick among others' replies
    helped: int | None
    hurt: int | None
    reused: int | None  # retrieval arms: answers that took their context over (pkg.evaluation.reuse)
    reused_passed: int | None  # of those, how many passed
    reused_baseline: int | None  # on the same problems, how many NoRAG passed
    errors: dict[str, int]

    @property
    def pass_at_1(self) -> float:
        return 100.0 * self.passed / self.problems if self.problems else 0.0


def summarise(records: Sequence[Record], arms: Sequence[str]) -> list[ArmSummary]:
    """A summary per arm, in the order of `arms`; help/hurt only when NoRAG is among them."""
    by_arm: dict[str, list[Record]] = {arm: [] for arm in arms}
    for record in records:
        by_arm.setdefault(record.arm, []).append(record)
    baseline = {r.task_id: r.passed for r in by_arm.get(BASELINE, [])}
    rows = []
    for arm in arms:
        group = by_arm[arm]
        n = len(group) or 1
        helped = hurt = None
        if baseline and arm != BASELINE:
            helped = sum(1 for r in group if r.passed and not baseline.get(r.task_id, False))
            hurt = sum(1 for r in group if not r.passed and baseline.get(r.task_id, False))
        reusing = [r for r in group if r.reuses_context]
        retrieving = any(r.reuses_context is not None for r in group)
        rows.append(
            ArmSummary(
                arm=arm,
                problems=len(group),
                passed=sum(r.passed for r in group),
                context_tokens=sum(r.context_tokens for r in group) / n,
                prompt_tokens=sum(r.prompt_tokens for r in group) / n,
                generation_seconds=None if arm in DERIVED else sum(r.generation_seconds for r in group) / n,
                helped=helped,
                hurt=hurt,
                reused=len(reusing) if retrieving else None,
                reused_passed=sum(r.passed for r in reusing) if retrieving else None,
                reused_baseline=sum(baseline.get(r.task_id, False) for r in reusing)
                if retrieving and baseline
                else None,
                errors=dict(Counter(r.error_type or "Unknown" for r in group if not r.passed).most_common()),
            )
        )
    return rows


def _error_columns(rows: Sequence[ArmSummary]) -> list[str]:
    totals: Counter[str] = Counter()
    for row in rows:
        totals.update(row.errors)
    return [name for name, _ in totals.most_common()]


def _cells(row: ArmSummary, errors: Sequence[str]) -> list[str]:
    dash = "–"
    return [
        row.arm,
        f"{row.pass_at_1:.1f}",
        f"{row.passed}/{row.problems}",
        f"{row.context_tokens:.0f}",
        f"{row.prompt_tokens:.0f}",
        dash if row.generation_seconds is None else f"{row.generation_seconds:.1f}",
        dash if row.helped is None else str(row.helped),
        dash if row.hurt is None else str(row.hurt),
        dash if row.reused is None else str(row.reused),
        _reused_outcome(row),
        *[str(row.errors.get(name, 0)) for name in errors],
    ]


def _reused_outcome(row: ArmSummary) -> str:
    if row.reused_passed is None:
        return "–"
    return f"{row.reused_passed} ({row.reused_baseline})" if row.reused_baseline is not None else str(row.reused_passed)


HEADER = [
    "arm",
    "pass@1 %",
    "passed",
    "context tokens",
    "prompt tokens",
    "generation s",
    "helped",
    "hurt",
    "reused context",
    "passed if reused (norag)",
]


def markdown_table(rows: Sequence[ArmSummary]) -> str:
    errors = _error_columns(rows)
    header = HEADER + errors
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cells(row, errors)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_report(
    out_dir: Path,
    records: Sequence[Record],
    arms: Sequence[str],
    title: str,
    notes: Sequence[str] = (),
) -> list[ArmSummary]:
    """Writes results.jsonl, table.md, table.csv, summary.json and pass_at_1.png into `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "results.jsonl").open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(asdict(record), ensure_ascii=False) + "\n")
    rows = summarise(records, arms)
    (out_dir / "table.md").write_text(_table_page(title, notes, rows), encoding="utf-8")
    errors = _error_columns(rows)
    with (out_dir / "table.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER + errors)
        writer.writerows(_cells(row, errors) for row in rows)
    summary = [asdict(row) | {"pass_at_1": row.pass_at_1} for row in rows]
    (out_dir / "summary.json").write_text(json.dumps({"title": title, "notes": list(notes), "arms": summary}, indent=2))
    _bar_chart(out_dir / "pass_at_1.png", rows, title)
    return rows


def _table_page(title: str, notes: Sequence[str], rows: Sequence[ArmSummary]) -> str:
    """table.md: the title, the notes, the table."""
    return "\n".join([f"# {title}", "", *notes, "" if notes else "", markdown_table(rows)])


def render_saved(out_dir: Path) -> str:
    """The table.md of a finished comparison in `out_dir`, made again from its per-problem results.jsonl,
    with the title, notes and arm order of its summary.json: no model, sandbox or database is needed.
    Raises BenchmarkError when the folder holds no comparison's results."""
    try:
        summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
        with (out_dir / "results.jsonl").open(encoding="utf-8") as handle:
            records = [Record(**json.loads(line)) for line in handle if line.strip()]
        arms = [row["arm"] for row in summary["arms"]]
        title, notes = summary["title"], summary["notes"]
    except OSError as exc:
        raise BenchmarkError(f"no comparison results in {out_dir}: {exc.strerror}: {exc.filename}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise BenchmarkError(f"{out_dir} does not hold the results of `pkg compare` (humaneval, mbpp): {exc}") from None
    return _table_page(title, notes, summarise(records, arms))


def _bar_chart(path: Path, rows: Sequence[ArmSummary], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(figsize=(max(6.0, 0.9 * len(rows) + 2), 4.0), dpi=120)
    values = [row.pass_at_1 for row in rows]
    colours = ["#9e9e9e" if row.arm == BASELINE else "#3f7fbf" for row in rows]
    bars = axes.bar([row.arm for row in rows], values, color=colours)
    axes.bar_label(bars, labels=[f"{v:.1f}" for v in values], fontsize=8)
    axes.set_ylabel("pass@1 (%)")
    axes.set_ylim(0, 100)
    axes.set_title(title, fontsize=10)
    axes.tick_params(axis="x", labelrotation=30, labelsize=8)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
