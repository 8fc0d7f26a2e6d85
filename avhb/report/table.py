"""The plain-text results table printed at the end of a run.

One row per headline metric, then per diagnostic (marked ``(diag)``), with
value ± stderr and n; counts are columns: the task's ``Samples``,
``Errors`` and ``Judge fail.`` on its first row, each metric's own
``Unparsed`` on its row, any other count in ``Other counts``; counts print
as integers.  Under the table, one line per metric says what it is, then
one line on the model's usage (calls, tokens, cost, p50 / p95 latency:
results.json's ``usage``).
"""
from __future__ import annotations

from typing import Any, Mapping

from avhb.report.numbers import fmt_number
from avhb.runfolder.results import RunResults, TaskResult
from avhb.run.usage import usage_line
from avhb.score.aggregate import Aggregate
from avhb.score.metric import DIAGNOSTIC

HEADER = ("Task", "Metric", "Value", "", "Stderr", "N", "Samples", "Errors", "Judge fail.", "Unparsed",
          "Other counts")
GROUP_HEADER = ("Group", "Metric", "Value", "", "Stderr", "N")
RIGHT = {2, 4, 5, 6, 7, 8, 9}


def metric_counts(result: TaskResult, shown: list[str]) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """(metric -> its own counts by suffix, counts of no shown metric)."""
    counts = result.count_cells()
    own: dict[str, dict[str, int]] = {m: {} for m in shown}
    rest: dict[str, int] = {}
    for key, value in counts.items():
        owner = max((m for m in shown if key.startswith(m + "_")), key=len, default=None)
        if owner is None:
            rest[key] = value
        else:
            own[owner][key[len(owner) + 1:]] = value
    return own, rest


def _other(counts: Mapping[str, int]) -> str:
    shown = [f"{k} {v}" for k, v in counts.items() if v]
    return ", ".join(shown)


def _cell(c: Aggregate) -> tuple[str, str, str, str]:
    return (fmt_number(c.value), "±" if c.stderr is not None else "", fmt_number(c.stderr) if c.stderr is not None
            else "", str(c.n) if c.n is not None else "")


def _task_rows(name: str, r: TaskResult) -> list[tuple[str, ...]]:
    name = f"{name} *" if r.errors else name  # some samples failed outside the model (excluded, counted)
    metrics = r.ordered()
    own, rest = metric_counts(r, list(metrics))
    task_counts = (str(r.samples), str(r.errors), str(r.judge_failures))
    if not metrics:
        return [(name, "-", "-", "", "", "", *task_counts, "", _other(rest))]
    rows: list[tuple[str, ...]] = []
    for i, (metric, c) in enumerate(metrics.items()):
        label = metric + (" (diag)" if r.kind(metric) == DIAGNOSTIC else "")
        mine = dict(own.get(metric, {}))
        unparsed = mine.pop("unparsed", None)
        other = _other({**(rest if i == 0 else {}), **mine})
        rows.append((name if i == 0 else "", label, *_cell(c), *(task_counts if i == 0 else ("", "", "")),
                     "" if unparsed is None else str(unparsed), other))
    return rows


def _render(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: tuple[str, ...]) -> str:
        parts = [r[i].rjust(widths[i]) if i in RIGHT else r[i].ljust(widths[i]) for i in range(len(r))]
        return "| " + " | ".join(parts) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return [line(header), sep, *(line(r) for r in rows)]


def describe_metrics(typed: RunResults) -> list[str]:
    """``metric: description (direction; 95 % CI: method)`` once per metric
    name, headline first, as the first task that describes the metric has
    it: its interval's method (``avhb.score.stats.INTERVAL_LABELS``), none
    when that task's cell has no interval."""
    from avhb.score.stats import INTERVAL_LABELS

    seen: dict[str, str] = {}
    for r in typed.tasks.values():
        for metric, cell in r.ordered().items():
            info = r.info.get(metric)
            if info and info.description and metric not in seen:
                better = {True: "higher is better", False: "lower is better", None: ""}.get(info.higher_is_better, "")
                how = INTERVAL_LABELS.get(cell.ci_method or "") if cell.ci is not None else None
                said = "; ".join(x for x in (better, how and f"95 % CI: {how}") if x)
                seen[metric] = f"{metric}: {info.description}" + (f" ({said})" if said else "")
    return list(seen.values())


def format_results_table(results: RunResults | Mapping[str, Any], notes: list[str] | None = None) -> str:
    """The table (module docstring), then groups, then what each metric
    is, then the run's ``notes`` (what it changed from what was asked).
    ``results``: typed results, or a ``results.json`` document (or its
    ``results`` mapping).  Values show 4 decimals; '-' marks a missing
    value."""
    typed = results if isinstance(results, RunResults) else RunResults.from_json(results)
    rows = [row for name, r in typed.tasks.items() for row in _task_rows(name, r)]
    if rows:
        if not any(row[-1] for row in rows):  # no other counts: no column for them
            rows = [row[:-1] for row in rows]
            lines = _render(rows, HEADER[:-1])
        else:
            lines = _render(rows, HEADER)
    else:
        lines = ["(no task results)"]
    if typed.groups:
        grows: list[tuple[str, ...]] = []
        for name, cells in typed.groups.items():
            if (typed.group_counts.get(name) or {}).get("errors"):
                name = f"{name} *"
            if not cells:
                grows.append((str(name), "-", "-", "", "", ""))
            for i, (metric, c) in enumerate(cells.items()):
                grows.append((str(name) if i == 0 else "", metric, *_cell(c)))
        lines += ["", *_render(grows, GROUP_HEADER)]
    for name, absent in typed.absent_members.items():
        lines.append(f"{name}: aggregated without {len(absent)} member(s) whose data has no samples: "
                     f"{', '.join(absent)}")
    about = describe_metrics(typed)
    if about:
        lines += ["", *about]
    used = usage_line(typed.usage.get("model") or {})
    if used:  # results.json's usage (avhb.run.usage): what the model's calls cost
        lines += ["", used]
    notes = list(notes or [])
    if any(r.errors for r in typed.tasks.values()):
        notes.append("* some samples failed outside the model (missing media, data, hook or backend errors): they "
                     "are excluded from the metrics and counted in Errors (docs/errors.md)")
    if notes:
        lines += ["", "Notes:", *(f"- {n}" for n in notes)]
    return "\n".join(lines)
