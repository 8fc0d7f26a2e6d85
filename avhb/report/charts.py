"""Which charts a results document calls for (data only, no drawing).

Generic rules, so new task packs get charts without code here:
* one chart per (task, breakdown dimension) in ``results.json["breakdowns"]``:
  a bar per dimension value, a panel per metric;
* one chart per task family: tasks sharing the name prefix before the first
  ``_`` (``curve_ta_IN``, ``curve_ko_KR`` -> family ``curve``), when at least
  two of them have results: a bar per task (labelled by the rest of the
  name), a panel per metric that two or more members report, plus the family's group aggregate if
  ``groups`` has one. Suffixes that all look like locales (``ta_IN``) are
  shown as ``ta-IN`` on a "locale" axis.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from avhb.report.numbers import cell, metric_names
from avhb.report.plots import Chart, Panel, Series

MAX_PANELS = 12
_LOCALE = re.compile(r"^[a-z]{2,3}_[A-Z]{2}$")


def _metrics_union(mappings: list[Mapping[str, Any]], min_count: int = 1) -> list[str]:
    """Metric names in first-seen order that appear in >= ``min_count`` mappings."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for m in mappings:
        for k in metric_names(m):
            seen[k] = seen.get(k, 0) + 1
            if k not in names:
                names.append(k)
    return [k for k in names if seen[k] >= min_count][:MAX_PANELS]


def _panels(labels: list[str], rows: list[Mapping[str, Any]], metrics: list[str]) -> list[Panel]:
    panels = []
    for metric in metrics:
        cells = [cell(r, metric) if metric in r else None for r in rows]
        if all(c is None or c.value is None for c in cells):
            continue
        panels.append(
            Panel(metric, [Series(metric, [c.value if c else None for c in cells],
                                  [c.stderr if c else None for c in cells],
                                  [c.n if c else None for c in cells])])
        )
    return panels


def breakdown_charts(results: Mapping[str, Any]) -> list[Chart]:
    out: list[Chart] = []
    breakdowns = results.get("breakdowns")
    if not isinstance(breakdowns, Mapping):
        return out
    for task, dims in breakdowns.items():
        if not isinstance(dims, Mapping):
            continue
        for dim, values in dims.items():
            if not isinstance(values, Mapping) or not values:
                continue
            labels = [str(v) for v in values]
            rows = [m if isinstance(m, Mapping) else {} for m in values.values()]
            panels = _panels(labels, rows, _metrics_union(rows))
            if panels:
                out.append(Chart(f"{task} by {dim}", labels, panels, axis_label=str(dim)))
    return out


def families(task_names: list[str]) -> dict[str, list[str]]:
    """Family prefix -> member tasks (only families of two or more)."""
    fam: dict[str, list[str]] = {}
    for t in task_names:
        if "_" in t:
            prefix, rest = t.split("_", 1)
            if prefix and rest:
                fam.setdefault(prefix, []).append(t)
    return {k: v for k, v in fam.items() if len(v) >= 2}


def family_charts(results: Mapping[str, Any]) -> list[Chart]:
    out: list[Chart] = []
    tasks = results.get("results")
    if not isinstance(tasks, Mapping):
        return out
    groups = results.get("groups") if isinstance(results.get("groups"), Mapping) else {}
    names = [t for t, m in tasks.items() if isinstance(m, Mapping) and metric_names(m)]
    for prefix, members in families(names).items():
        suffixes = [t.split("_", 1)[1] for t in members]
        localized = all(_LOCALE.match(s) for s in suffixes)
        labels = [s.replace("_", "-") if localized else s for s in suffixes]
        rows = [tasks[t] for t in members]
        group = groups.get(prefix)
        if isinstance(group, Mapping) and metric_names(group):
            labels.append(f"{prefix} (all)")
            rows.append(group)
        # only metrics shared by two or more member tasks are compared
        panels = _panels(labels, rows, _metrics_union([tasks[t] for t in members], min_count=2))
        if panels:
            axis = "locale" if localized else "task"
            out.append(Chart(f"{prefix}: per {axis}", labels, panels, axis_label=axis))
    return out
