"""The plain-text results table printed at the end of a run."""
from __future__ import annotations

from typing import Any, Mapping

from avhb.report.numbers import fmt_number
from avhb.run.results import RunResults
from avhb.score.aggregate import Aggregate

HEADER = ("Task", "Metric", "Value", "", "Stderr", "N")


def _rows(cells_by_name: Mapping[str, Mapping[str, Aggregate]], samples: Mapping[str, int],
          errors: Mapping[str, int] | None = None) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for name, cells in cells_by_name.items():
        label = f"{name} *" if (errors or {}).get(name) else str(name)
        if not cells:
            rows.append((label, "-", "-", "", "", str(samples.get(name, 0))))
        for i, (metric, c) in enumerate(cells.items()):
            rows.append(
                (
                    label if i == 0 else "",
                    metric,
                    fmt_number(c.value),
                    "±" if c.stderr is not None else "",
                    fmt_number(c.stderr) if c.stderr is not None else "",
                    str(c.n) if c.n is not None else "",
                )
            )
    return rows


def _render(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = {2, 4, 5}

    def line(r: tuple[str, ...]) -> str:
        parts = [r[i].rjust(widths[i]) if i in right else r[i].ljust(widths[i]) for i in range(len(r))]
        return "| " + " | ".join(parts) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return [line(header), sep, *(line(r) for r in rows)]


def format_results_table(results: RunResults | Mapping[str, Any]) -> str:
    """Table of task, metric, value ± stderr and n, one row per metric,
    then groups (if any), then one note line per task with errors or judge
    failures.  A task or group with errors is marked ``*``. ``results``: typed results, or a ``results.json`` document
    (or its ``results`` mapping). Values show 4 decimals; '-' marks a
    missing value."""
    typed = results if isinstance(results, RunResults) else RunResults.from_json(results)
    tasks = {name: r.metrics for name, r in typed.tasks.items()}
    samples = {name: r.samples for name, r in typed.tasks.items()}
    errors = {name: r.errors for name, r in typed.tasks.items()}
    lines = _render(_rows(tasks, samples, errors), HEADER) if tasks else ["(no task results)"]
    if typed.groups:
        group_errors = {g: c.get("errors", 0) for g, c in typed.group_counts.items()}
        lines += ["", *_render(_rows(typed.groups, {}, group_errors), ("Group",) + HEADER[1:])]
    notes = []
    for name, r in typed.tasks.items():
        if r.errors or r.judge_failures:
            notes.append(f"{name}: {r.errors} errors, {r.judge_failures} judge failures of {r.samples} samples")
    if any(errors.values()):
        notes.append("* some samples failed outside the model (missing media, data, hook or backend errors): they "
                     "are excluded from the metrics and counted in errors (docs/errors.md)")
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)
