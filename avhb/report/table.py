"""The plain-text results table printed at the end of a run."""
from __future__ import annotations

from typing import Any, Mapping

from avhb.report.numbers import cell, count, fmt_number, metric_names

HEADER = ("Task", "Metric", "Value", "", "Stderr", "N")


def _task_mapping(results: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """Accept a whole ``results.json`` document (with ``results`` and
    ``groups``) or a bare ``{task: {metric: ...}}`` mapping."""
    inner = results.get("results")
    if isinstance(inner, Mapping) and all(isinstance(v, Mapping) for v in inner.values()):
        groups = results.get("groups")
        return inner, groups if isinstance(groups, Mapping) else {}
    return results, {}


def _rows(mapping: Mapping[str, Any]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for name, metrics in mapping.items():
        if not isinstance(metrics, Mapping):
            continue
        names = metric_names(metrics)
        if not names:
            rows.append((str(name), "-", "-", "", "", str(count(metrics, "samples") or 0)))
        for i, metric in enumerate(names):
            c = cell(metrics, metric)
            rows.append(
                (
                    str(name) if i == 0 else "",
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


def format_results_table(results: Mapping[str, Any]) -> str:
    """Table of task, metric, value ± stderr and n, one row per metric,
    then groups (if any), then one note line per task with errors or judge
    failures. ``results`` is a ``results.json`` document or its ``results``
    mapping. Values show 4 decimals; '-' marks a missing value."""
    tasks, groups = _task_mapping(results)
    lines = _render(_rows(tasks), HEADER) if tasks else ["(no task results)"]
    if groups:
        lines += ["", *_render(_rows(groups), ("Group",) + HEADER[1:])]
    notes = []
    for name, metrics in tasks.items():
        errors = count(metrics, "errors") or 0
        failures = count(metrics, "judge_failures") or 0
        if errors or failures:
            samples = count(metrics, "samples")
            of = f" of {samples} samples" if samples is not None else ""
            notes.append(f"{name}: {errors} errors, {failures} judge failures{of}")
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)
