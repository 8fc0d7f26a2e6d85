"""Which charts a results document calls for (data only, no drawing).

Generic rules, so new task packs get charts without code here:
* one chart per (task, breakdown dimension) in ``results.json["breakdowns"]``:
  a bar per dimension value, a panel per metric;
* one chart per task family, when at least two of its tasks have results:
  a bar per task, a panel per metric that two or more members report, plus
  the family's group aggregate if ``groups`` has one.  A task's YAML may say
  how it is drawn (``report: {family: curve, label: ta-IN, axis: locale}``,
  read from run.json); otherwise its family is the name prefix before the
  first ``_`` (``vidpair_binary`` -> ``vidpair``), its label the rest of the
  name, and the axis "task".

Only headline and diagnostic metrics are drawn (counts are table columns,
never bars), headline panels first; a diagnostic panel whose values are all
zero or missing, and any panel with no value at all, is not drawn.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from avhb.report.svg_charts import Chart, Panel, Series
from avhb.runfolder.results import RunResults, TaskResult
from avhb.score.aggregate import Aggregate
from avhb.score.metric import COUNT, DIAGNOSTIC, HEADLINE

MAX_PANELS = 12


def _metrics_union(mappings: Sequence[Mapping[str, Aggregate]], min_count: int = 1) -> list[str]:
    """Metric names in first-seen order that appear in >= ``min_count`` mappings."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for m in mappings:
        for k in m:
            seen[k] = seen.get(k, 0) + 1
            if k not in names:
                names.append(k)
    return [k for k in names if seen[k] >= min_count]


def _drawable(metrics: list[str], kinds: Sequence[TaskResult]) -> list[str]:
    """``metrics`` without counts, headline first (kinds read from the tasks)."""
    def kind(m: str) -> str:
        return next((r.kind(m) for r in kinds if m in r.info), HEADLINE)

    order = {HEADLINE: 0, DIAGNOSTIC: 1}
    return sorted((m for m in metrics if kind(m) != COUNT), key=lambda m: order.get(kind(m), 1))[:MAX_PANELS]


def _panels(labels: list[str], rows: Sequence[Mapping[str, Aggregate]], metrics: list[str],
            kinds: Sequence[TaskResult] = ()) -> list[Panel]:
    panels = []
    for metric in metrics:
        cells = [r.get(metric) for r in rows]
        if all(c is None or c.value is None for c in cells):
            continue
        diagnostic = any(r.kind(metric) == DIAGNOSTIC for r in kinds if metric in r.info)
        if diagnostic and all(c is None or c.value is None or c.value == 0 for c in cells):
            continue
        panels.append(
            Panel(metric, [Series(metric, [c.value if c else None for c in cells],
                                  [c.stderr if c else None for c in cells],
                                  [c.n if c else None for c in cells])])
        )
    return panels


def breakdown_charts(results: RunResults) -> list[Chart]:
    out: list[Chart] = []
    for task, result in results.tasks.items():
        for dim, values in result.breakdowns.items():
            if not values:
                continue
            labels = [str(v) for v in values]
            rows = list(values.values())
            panels = _panels(labels, rows, _drawable(_metrics_union(rows), [result]), [result])
            if panels:
                out.append(Chart(f"{task} by {dim}", labels, panels, axis_label=str(dim)))
    return out


def families(task_names: list[str], hints: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, list[str]]:
    """Family -> member tasks (only families of two or more): the task's
    ``report.family`` hint, else its name prefix."""
    hints = hints or {}
    fam: dict[str, list[str]] = {}
    for t in task_names:
        family = (hints.get(t) or {}).get("family")
        if not family and "_" in t:
            prefix, rest = t.split("_", 1)
            family = prefix if prefix and rest else None
        if family:
            fam.setdefault(str(family), []).append(t)
    return {k: v for k, v in fam.items() if len(v) >= 2}


def family_charts(results: RunResults, hints: Mapping[str, Mapping[str, Any]] | None = None) -> list[Chart]:
    """``hints``: task -> its YAML ``report`` block (family, label, axis)."""
    hints = hints or {}
    out: list[Chart] = []
    tasks = {name: r.metrics for name, r in results.tasks.items()}
    names = [t for t, m in tasks.items() if m]
    for family, members in families(names, hints).items():
        labels = [str((hints.get(t) or {}).get("label") or (t.split("_", 1)[1] if "_" in t else t)) for t in members]
        axes = {(hints.get(t) or {}).get("axis") for t in members}
        axis = str(axes.pop()) if len(axes) == 1 and None not in axes else "task"
        rows = [tasks[t] for t in members]
        group = results.groups.get(family)
        if group:
            labels.append(f"{family} (all)")
            rows.append(group)
        # only metrics shared by two or more member tasks are compared
        kinds = [results.tasks[t] for t in members]
        panels = _panels(labels, rows, _drawable(_metrics_union([tasks[t] for t in members], min_count=2), kinds),
                         kinds)
        if panels:
            out.append(Chart(f"{family}: per {axis}", labels, panels, axis_label=axis))
    return out
