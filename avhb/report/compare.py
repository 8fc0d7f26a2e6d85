"""Comparison of several runs, like a paper's main table: one row per run
(model), one column per (task or group, metric).

Significance rule: a cell differs from the baseline run's cell (the first
run unless told otherwise) when |a − b| > sqrt(se_a² + se_b²); it is marked
▲ (higher) or ▼ (lower). Without both standard errors no mark is made.
Whether a difference is better or worse reads the metric's direction
(``higher_is_better`` in results.json ``metrics``): the HTML colours a
lower ``fp_rate`` as better, a higher one as worse, and leaves a metric
with no direction uncoloured (marked, not judged).
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avhb.atomic import write_atomic
from avhb.errors import UserError
from avhb.report.htmlkit import esc, page
from avhb.report.numbers import fmt_cell
from avhb.score.aggregate import Aggregate
from avhb.score.metric import DIAGNOSTIC, HEADLINE
from avhb.report.svg_charts import Chart, Panel, Series, render_svg
from avhb.report.rundata import load_run

COMPARE_NAME = "compare.html"  # default file name, in the current folder (never inside a run folder)
UP, DOWN = "▲", "▼"


@dataclass(frozen=True)
class Column:
    task: str
    metric: str
    group: bool = False  # a group aggregate rather than a task

    @property
    def title(self) -> str:
        return f"{self.task} / {self.metric}"


@dataclass
class ComparisonTable:
    labels: list[str]  # one per run, unique
    run_dirs: list[Path]
    columns: list[Column]
    cells: list[list[Aggregate | None]]  # [run][column]; None = the run lacks it
    baseline: int = 0
    runs_meta: list[dict] = field(default_factory=list)
    differences: list[tuple[str, list[str]]] = field(default_factory=list)  # setting -> value per run
    directions: list[bool | None] = field(default_factory=list)  # per column: higher is better (None: neither)

    def mark(self, row: int, col: int) -> int:
        """+1 / -1 when the cell is significantly above / below the baseline's
        (see module docstring), else 0 (also for the baseline itself)."""
        if row == self.baseline:
            return 0
        a, b = self.cells[row][col], self.cells[self.baseline][col]
        if a is None or b is None:
            return 0
        d = differs(a, b)
        if not d:
            return 0
        assert a.value is not None and b.value is not None  # differs: both have one
        return 1 if a.value > b.value else -1

    def judged(self, row: int, col: int) -> int:
        """+1 / -1 when the cell is significantly better / worse than the
        baseline's by its metric's direction; 0 when not significant or the
        metric has no direction."""
        better = self.directions[col] if col < len(self.directions) else None
        m = self.mark(row, col)
        if not m or better is None:
            return 0
        return m if better else -m

    def delta(self, row: int, col: int) -> float | None:
        """This run's value minus the baseline run's (None when either is missing)."""
        a, b = self.cells[row][col], self.cells[self.baseline][col]
        if a is None or b is None or a.value is None or b.value is None:
            return None
        return a.value - b.value

    def cell_text(self, row: int, col: int) -> str:
        c = self.cells[row][col]
        if c is None or c.value is None:
            return "-"
        m = self.mark(row, col)
        return fmt_cell(c) + (f" {UP}" if m > 0 else f" {DOWN}" if m < 0 else "")

    def to_markdown(self) -> str:
        return to_markdown(self)

    def to_csv(self) -> str:
        return to_csv(self)

    def to_html(self) -> str:
        return to_html(self)

    def write_html(self, output: Path | None = None) -> Path:
        return write_html(self, output)


def differs(a: Aggregate, b: Aggregate) -> bool | None:
    """|a − b| > sqrt(se_a² + se_b²); None when a value or a stderr is missing."""
    if a.value is None or b.value is None or a.stderr is None or b.stderr is None:
        return None
    return abs(a.value - b.value) > math.sqrt(a.stderr**2 + b.stderr**2)


def _unique_labels(labels: list[str], dirs: list[Path]) -> list[str]:
    out = []
    for label, d in zip(labels, dirs):
        out.append(f"{label} ({d.name})" if labels.count(label) > 1 else label)
    return out


def _short_urls(text: str) -> str:
    """``base_url=http://127.0.0.1:8000/v1`` -> ``base_url=127.0.0.1:8000``
    (a label names the server, the differences table keeps the whole URL)."""
    import re

    return re.sub(r"\b[a-z][a-z0-9+.-]*://([^/\s,]+)[^\s,]*", r"\1", text)


def _kv(mapping: Any) -> str:
    if not isinstance(mapping, dict) or not mapping:
        return "-"
    return ", ".join(f"{k}={v}" for k, v in sorted(mapping.items()))


def settings_of(run: dict) -> dict[str, str]:
    """What a run was asked to do, one string per setting (secrets redacted):
    model, model args, ablations, media overrides, generation settings,
    limit, seed, repeats, version, each judge role's panel, and per task its
    hash and data."""
    from avhb.redact import redact

    run = redact(run) if isinstance(run, dict) else {}
    model = given if isinstance(given := run.get("model"), dict) else {}
    out = {
        "model": f"{model.get('kind', '?')}:{model.get('name', '?')}",
        "model args": _kv(model.get("args")),
        "ablations": ", ".join(run.get("ablations") or []) or "-",
        "media overrides": _kv(run.get("media")),
        "gen kwargs": _kv(run.get("gen_kwargs")),
        "limit": str(run.get("limit")) if run.get("limit") is not None else "-",
        "seed": str(run.get("seed", "-")),
        "repeats": str(run.get("repeats")) if run.get("repeats") is not None else "-",
        "avhb version": str(run.get("avhb_version", "-")),
    }
    judges = given if isinstance(given := run.get("judges"), dict) else {}
    for role, panel in sorted(judges.items()):
        out[f"judge: {role}"] = ", ".join(map(str, panel)) if isinstance(panel, list) else str(panel)
    tasks = given if isinstance(given := run.get("tasks"), dict) else {}
    for name, info in tasks.items():
        info = info if isinstance(info, dict) else {}
        out[f"task hash: {name}"] = str(info.get("hash", "-"))
        data = given if isinstance(given := info.get("data"), dict) else {}
        if data:
            out[f"data: {name}"] = f"{data.get('kind', '?')} {data.get('revision') or ''}".strip()
    return out


# settings that name a run in its label when they differ (short form)
_LABELLED = ("model", "ablations", "media overrides", "gen kwargs", "model args", "limit", "repeats", "seed")


def differences(runs: list[dict]) -> list[tuple[str, list[str]]]:
    """The settings whose values are not the same in every run."""
    settings = [settings_of(r) for r in runs]
    keys = list(dict.fromkeys(k for s in settings for k in s))
    return [(k, [s.get(k, "-") for s in settings]) for k in keys if len({s.get(k, "-") for s in settings}) > 1]


def distinguishing_labels(base: list[str], diffs: list[tuple[str, list[str]]]) -> list[str]:
    """Each run's label: its model (when the models differ, or as the base),
    plus the short form of every other labelled setting that differs."""
    labels = []
    for i, label in enumerate(base):
        parts = [label]
        for key, values in diffs:
            if key in _LABELLED and key != "model" and values[i] != "-":
                parts.append(_short_urls(values[i]) if key in ("media overrides", "gen kwargs", "model args")
                             else f"{key.replace('ablations', 'ablate')} {values[i]}")
            elif key in _LABELLED and key != "model":
                parts.append(f"no {key}")
        labels.append(" · ".join(parts))
    return labels


def compare_runs(run_dirs: list[Path], baseline: int = 0) -> ComparisonTable:
    """Read each run's results.json (samples are not read) and align them."""
    if not run_dirs:
        raise UserError("compare: no run folders given")
    runs = [load_run(Path(d), with_samples=False) for d in run_dirs]
    if not 0 <= baseline < len(runs):
        raise UserError(f"compare: baseline index {baseline} out of range (1..{len(runs)} runs)")
    def blocks(run, group: bool):
        return run.typed.groups if group else {n: r.metrics for n, r in run.typed.tasks.items()}

    def kind(run, name: str, metric: str, group: bool) -> str:
        result = None if group else run.typed.tasks.get(name)
        return result.kind(metric) if result is not None else HEADLINE

    columns: list[Column] = []
    for is_group in (False, True):
        for wanted in (HEADLINE, DIAGNOSTIC):  # headline columns first; counts are not columns
            for run in runs:
                for name, cells_of_task in blocks(run, is_group).items():
                    for metric in cells_of_task:
                        col = Column(str(name), metric, is_group)
                        if kind(run, str(name), metric, is_group) == wanted and col not in columns:
                            columns.append(col)
    cells: list[list[Aggregate | None]] = []
    for run in runs:
        row: list[Aggregate | None] = []
        for col in columns:
            row.append(blocks(run, col.group).get(col.task, {}).get(col.metric))
        cells.append(row)
    meta = []
    for run in runs:
        counts = {name: {**r.counts(), **r.count_cells()} for name, r in run.typed.tasks.items()}
        model = given if isinstance(given := run.run.get("model"), dict) else {}
        meta.append({"created": run.run.get("created", ""), "avhb_version": run.run.get("avhb_version", ""),
                     "model": f"{model.get('kind', '')} {model.get('name', '')}".strip(),
                     "problems": run.problems, "counts": counts})
    dirs = [r.path for r in runs]
    diffs = differences([r.run for r in runs])
    labels = distinguishing_labels([_short_urls(r.label) for r in runs], diffs)
    directions = [_direction(runs, col) for col in columns]
    return ComparisonTable(_unique_labels(labels, dirs), dirs, columns, cells, baseline, meta, diffs, directions)


def _direction(runs: list, col: Column) -> bool | None:
    """Whether higher is better for a column: the first run whose results
    say so for the task's metric (a group column: any member task's)."""
    for run in runs:
        tasks = run.typed.tasks
        results = [tasks[col.task]] if not col.group and col.task in tasks else list(tasks.values()) if col.group else []
        for result in results:
            info = result.info.get(col.metric)
            if info is not None:
                return info.higher_is_better
    return None


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(table: ComparisonTable) -> str:
    """GitHub-flavoured Markdown table, then (with two runs or more) the
    same columns as differences from the baseline run (Δ), plus a legend."""
    head = "| Model | " + " | ".join(_md(c.title) for c in table.columns) + " |"
    sep = "|---|" + "|".join("---:" for _ in table.columns) + "|"
    rows = [
        "| " + _md(label) + " | " + " | ".join(table.cell_text(r, c) for c in range(len(table.columns))) + " |"
        for r, label in enumerate(table.labels)
    ]
    lines = [head, sep, *rows]
    others = [r for r in range(len(table.labels)) if r != table.baseline]
    if others:
        base = _md(table.labels[table.baseline])
        lines += ["", f"| Δ vs {base} | " + " | ".join(_md(c.title) for c in table.columns) + " |", sep]
        for r in others:
            deltas = [table.delta(r, c) for c in range(len(table.columns))]
            lines.append("| " + _md(table.labels[r]) + " | "
                         + " | ".join("-" if d is None else f"{d:+.4f}" for d in deltas) + " |")
    legend = (f"\nValue ± standard error. {UP}/{DOWN}: above/below {_md(table.labels[table.baseline])} "
              "by more than the combined standard error sqrt(se_a² + se_b²).")
    diff = ""
    if table.differences:
        dh = "| Setting | " + " | ".join(_md(label) for label in table.labels) + " |"
        ds = "|---|" + "|".join("---" for _ in table.labels) + "|"
        drows = ["| " + _md(k) + " | " + " | ".join(_md(v) for v in vals) + " |" for k, vals in table.differences]
        diff = "\nDifferences between the runs:\n\n" + "\n".join([dh, ds, *drows]) + "\n"
    return "\n".join(lines) + "\n" + legend + "\n" + diff


def to_csv(table: ComparisonTable) -> str:
    """One row per run; per column: value, stderr, n and the mark vs the
    baseline (1, -1, 0; empty when the run lacks the column)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = ["model", "run_dir"]
    for c in table.columns:
        header += [c.title, f"{c.title} stderr", f"{c.title} n", f"{c.title} vs baseline"]
    w.writerow(header)
    for r, label in enumerate(table.labels):
        row: list[object] = [label, str(table.run_dirs[r])]
        for i, cell in enumerate(table.cells[r]):
            if cell is None:
                row += ["", "", "", ""]
            else:
                row += ["" if cell.value is None else repr(cell.value), "" if cell.stderr is None else repr(cell.stderr),
                        "" if cell.n is None else cell.n, table.mark(r, i)]
        w.writerow(row)
    return buf.getvalue()


def _charts(table: ComparisonTable) -> list[Chart]:
    """One chart per metric name: a bar group per task, a bar per run."""
    by_metric: dict[str, list[int]] = {}
    for i, c in enumerate(table.columns):
        by_metric.setdefault(c.metric, []).append(i)
    charts = []
    for metric, idxs in by_metric.items():
        series = []
        for r, label in enumerate(table.labels):
            cs = [table.cells[r][i] for i in idxs]
            series.append(Series(label, [c.value if c else None for c in cs], [c.stderr if c else None for c in cs],
                                 [c.n if c else None for c in cs]))
        labels = [table.columns[i].task + (" (group)" if table.columns[i].group else "") for i in idxs]
        charts.append(Chart(metric, labels, [Panel("", series)], axis_label="task"))
    return charts


def to_html(table: ComparisonTable) -> str:
    """The self-contained comparison page: table, one chart per metric, runs."""
    head = "<tr><th>Model</th>" + "".join(
        f"<th>{esc(c.task)}{' (group)' if c.group else ''}<br><span class=\"muted\">{esc(c.metric)}</span></th>"
        for c in table.columns) + "</tr>"
    rows = []
    for r, label in enumerate(table.labels):
        tds = []
        for i in range(len(table.columns)):
            judged = table.judged(r, i)
            cls = ("num sig-better" if judged > 0 else "num sig-worse" if judged < 0
                   else "num sig-changed" if table.mark(r, i) else "num")
            tds.append(f'<td class="{cls}">{esc(table.cell_text(r, i))}</td>')
        base = " <span class=\"muted\">(baseline)</span>" if r == table.baseline else ""
        rows.append(f"<tr><td>{esc(label)}{base}</td>{''.join(tds)}</tr>")
    runs = "".join(
        f"<tr><td>{esc(label)}</td><td><code>{esc(d)}</code></td><td>{esc(m.get('model', ''))}</td>"
        f"<td>{esc(m.get('created', ''))}</td><td>{esc(m.get('avhb_version', ''))}</td></tr>"
        for label, d, m in zip(table.labels, table.run_dirs, table.runs_meta or [{}] * len(table.labels))
    )
    figs = "".join(f'<figure class="chart">{render_svg(c, max_cols=1, id_prefix=f"c{k}-")}<figcaption>{esc(c.title)}: ± 1 standard '
                   "error</figcaption></figure>" for k, c in enumerate(_charts(table)))
    if table.differences:
        dhead = "<tr><th>Setting</th>" + "".join(f"<th>{esc(label)}</th>" for label in table.labels) + "</tr>"
        drows = "".join(f"<tr><td>{esc(k)}</td>" + "".join(f"<td><code>{esc(v)}</code></td>" for v in vals) + "</tr>"
                        for k, vals in table.differences)
        diff_html = (f'<section id="differences"><h2>What differs between the runs</h2><div class="scroll">'
                     f'<table id="differences-table">{dhead}{drows}</table></div></section>')
    else:
        diff_html = ('<section id="differences"><h2>What differs between the runs</h2><p class="muted">The runs were '
                     "asked for the same settings (model, arguments, ablations, media, generation, task versions, "
                     "data).</p></section>")
    crow = []
    for label, m in zip(table.labels, table.runs_meta or [{}] * len(table.labels)):
        for task, counts in (m.get("counts") or {}).items():
            other = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()
                              if k not in ("samples", "errors", "judge_failures") and v)
            crow.append(f"<tr><td>{esc(label)}</td><td>{esc(task)}</td>"
                        + "".join(f'<td class="num">{esc(counts.get(k, ""))}</td>'
                                  for k in ("samples", "errors", "judge_failures"))
                        + f'<td class="muted">{esc(other)}</td></tr>')
    counts_html = (f'<section id="counts"><h2>Counts</h2><table id="counts-table"><tr><th>Run</th><th>Task</th>'
                   f"<th>Samples</th><th>Errors</th><th>Judge failures</th><th>Other counts</th></tr>{''.join(crow)}"
                   "</table></section>") if crow else ""
    body = (
        f"<header><h1>avhb comparison: {len(table.labels)} runs</h1></header><main>{diff_html}"
        f'<section id="results"><h2>Results</h2><div class="scroll"><table id="compare-table">{head}{"".join(rows)}</table></div>'
        f'<p class="muted">Value ± standard error. {UP}/{DOWN}: above/below the baseline '
        f"({esc(table.labels[table.baseline])}) by more than sqrt(se_a² + se_b²); no mark without both "
        "standard errors. Green: better, red: worse, by the metric's direction (a lower false-positive rate is "
        "better); uncoloured when neither way is better.</p></section>"
        f'{counts_html}<section id="plots"><h2>Plots</h2><div class="charts">{figs}</div></section>'
        f'<section id="runs"><h2>Runs</h2><table><tr><th>Label</th><th>Folder</th><th>Model</th><th>Created</th>'
        f"<th>avhb</th></tr>{runs}</table></section></main>"
    )
    data = {"labels": table.labels, "columns": [c.title for c in table.columns],
            "differences": [[k, v] for k, v in table.differences]}
    return page("avhb comparison", body, data=data)


def write_html(table: ComparisonTable, output: Path | None = None) -> Path:
    """Write the comparison report to ``output`` (default ``compare.html``
    in the current folder: a comparison belongs to no one run, and a run
    folder is written only by its own run) and return its path."""
    out = Path(output) if output is not None else Path.cwd() / COMPARE_NAME
    html = to_html(table)
    write_atomic(out, lambda fh: fh.write(html))
    return out
