"""Comparison of several runs, like a paper's main table: one row per run
(model), one column per (task or group, metric), and each run tested
against the baseline run (the first unless told otherwise).

The test (``avhb.report.paired``, ``avhb.score.stats``): a metric whose
value is the mean of its samples' scores is compared on the samples both
runs scored (same task, sample id and repeat): the mean difference, its
paired standard error (cluster-robust when the task's samples cluster), a
95 % interval and a p-value from McNemar's exact test (0/1 scores,
independent pairs) or a paired t test; any other number (a pair or corpus
statistic, a group) by a z test on the two standard errors.  The p-values
of one run's tests against the baseline are Holm-adjusted together; a cell
is marked ▲ (higher) or ▼ (lower) when its adjusted p-value is below 0.05.
Whether a difference is better or worse reads the metric's direction
(``higher_is_better`` in results.json ``metrics``): the HTML colours a
lower ``fp_rate`` as better, a higher one as worse, and leaves a metric
with no direction uncoloured (marked, not judged).

Every test is also in :attr:`ComparisonTable.comparison` (the
``comparison`` document: ``avhb report A B --output cmp.json``) with what
was paired and left out and the difference it could detect (80 % power).
"""
from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avhb.atomic import write_atomic
from avhb.errors import UserError
from avhb.report.htmlkit import esc, page
from avhb.report.numbers import fmt_cell
from avhb.report.paired import (Pairing, TaskLines, compare_metric, group_lines, lmms_cells, lmms_task_of,
                                read_lmms_samples, read_samples_file)
from avhb.runfolder.layout import samples_path
from avhb.runfolder.results import RunResults, TaskResult
from avhb.score.aggregate import Aggregate
from avhb.score.clusters import ClusterKey
from avhb.score.metric import DIAGNOSTIC, HEADLINE
from avhb.score.stats import ALPHA, POWER, TESTS, UNPAIRED_Z, holm
from avhb.report.svg_charts import Chart, Panel, Series, render_svg
from avhb.report.rundata import RunData, load_run

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
    pairings: list[list[Pairing | None]] = field(default_factory=list)  # [run][column]; None: the baseline, or absent
    adjusted: list[list[float | None]] = field(default_factory=list)  # [run][column]: Holm-adjusted p-values
    notes: list[str] = field(default_factory=list)  # what the reader must know (samples left out, ...)

    def pairing(self, row: int, col: int) -> Pairing | None:
        return self.pairings[row][col] if row < len(self.pairings) and col < len(self.pairings[row]) else None

    def p_holm(self, row: int, col: int) -> float | None:
        return self.adjusted[row][col] if row < len(self.adjusted) and col < len(self.adjusted[row]) else None

    def family(self, row: int) -> int:
        """How many tests the run's p-values were adjusted over."""
        return sum(p is not None for p in self.adjusted[row]) if row < len(self.adjusted) else 0

    def mark(self, row: int, col: int) -> int:
        """+1 / -1 when the cell is significantly above / below the
        baseline's (Holm-adjusted p < 0.05; module docstring), else 0 (also
        for the baseline itself and a cell without a test)."""
        q = self.p_holm(row, col)
        pairing = self.pairing(row, col)
        if q is None or q >= ALPHA or pairing is None or pairing.test is None:
            return 0
        d = pairing.test.difference
        return 0 if d == 0 else (1 if d > 0 else -1)

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

    @property
    def comparison(self) -> dict[str, Any]:
        """The ``comparison`` document: every test of every run against the
        baseline (JSON-able)."""
        return comparison_document(self)


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


def compare_runs(run_dirs: list[Path], baseline: int = 0, lmms_baseline: Path | None = None) -> ComparisonTable:
    """Read each run's results.json and its samples, align the runs and
    test each against the baseline (module docstring).  ``lmms_baseline``:
    an lmms-eval samples file (``<date>_samples_<task>.jsonl``) that is the
    baseline instead, as the first row."""
    if not run_dirs:
        raise UserError("compare: no run folders given")
    runs = [load_run(Path(d), with_samples=False) for d in run_dirs]
    if lmms_baseline is not None:
        runs.insert(0, lmms_run(Path(lmms_baseline), runs))
        baseline = 0
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
    labels = _unique_labels(distinguishing_labels([_short_urls(r.label) for r in runs], diffs), dirs)
    directions = [_direction(runs, col) for col in columns]
    table = ComparisonTable(labels, dirs, columns, cells, baseline, meta, diffs, directions)
    _test(table, runs)
    return table


def _test(table: ComparisonTable, runs: list[RunData]) -> None:
    """Every run's tests against the baseline, their Holm adjustment and
    the notes on what was left out."""
    base = runs[table.baseline]
    table.pairings = [[None] * len(table.columns) for _ in runs]
    by_task: dict[str, list[int]] = {}
    for i, col in enumerate(table.columns):
        if not col.group:
            by_task.setdefault(col.task, []).append(i)
    for row, run in enumerate(runs):
        if row == table.baseline:
            continue
        for i, col in enumerate(table.columns):
            if col.group:
                members = base.typed.group_members.get(col.task)
                same = members is not None and run.typed.group_members.get(col.task) == members
                lines = (_group(run, members, col.metric), _group(base, members, col.metric)) if same else (None, None)
                key = _key(base, members[0]) if same and members else ClusterKey()
                table.pairings[row][i] = compare_metric(col.metric, table.cells[row][i], table.cells[table.baseline][i],
                                                        lines[0], lines[1], key, key)
    for task, idxs in by_task.items():  # one task's samples at a time: each file read once
        base_lines = _lines(base, task) if task in base.typed.tasks else None
        base_key = _key(base, task)
        for row, run in enumerate(runs):
            if row == table.baseline or task not in run.typed.tasks:
                continue
            run_lines = _lines(run, task) if base_lines is not None else None
            run_key = _key(run, task)
            for i in idxs:
                table.pairings[row][i] = compare_metric(table.columns[i].metric, table.cells[row][i],
                                                        table.cells[table.baseline][i], run_lines, base_lines,
                                                        run_key, base_key)
            left = [(table.columns[i].metric, p) for i in idxs if (p := table.pairings[row][i]) is not None
                    and p.test is not None and (p.left_out_run or p.left_out_base)]
            if left:
                metric, p = left[0]
                table.notes.append(
                    f"{table.labels[row]} vs {table.labels[table.baseline]}, {task}: compared on the {p.paired} samples "
                    f"both scored ({metric}); left out {p.left_out_run} scored only by {table.labels[row]} and "
                    f"{p.left_out_base} only by {table.labels[table.baseline]}")
    table.adjusted = []
    for row in range(len(runs)):
        ps = [p.test.p if p is not None and p.test is not None else None for p in table.pairings[row]]
        table.adjusted.append(holm(ps))


def _lines(run: RunData, task: str) -> TaskLines | None:
    """The run's scored samples of ``task`` (None when it has no samples file)."""
    if isinstance(run, LmmsRun):
        return read_lmms_samples(run.path, run.metrics) if task == run.task else None
    path = samples_path(run.path, task)
    return read_samples_file(path) if path.is_file() else None


def _group(run: RunData, members: list[str] | None, metric: str) -> TaskLines | None:
    """A group's member tasks' scored samples in one set (None when a member has no samples file)."""
    parts = []
    for task in members or []:
        lines = _lines(run, task)
        if lines is None:
            return None
        parts.append((task, lines, _key(run, task)))
    return group_lines(parts, metric) if parts else None


def _key(run: RunData, task: str) -> ClusterKey:
    """What the run's samples of ``task`` cluster by (its recorded config and repeats)."""
    tasks = given if isinstance(given := run.run.get("tasks"), dict) else {}
    info = given if isinstance(given := tasks.get(task), dict) else {}
    config = given if isinstance(given := info.get("config"), dict) else {}
    repeats = run.run.get("repeats") or config.get("repeats") or 1
    if not isinstance(repeats, int):
        repeats = 1
    return ClusterKey.of(config, repeats, where=f"{run.path}: run.json task {task}")


def lmms_run(path: Path, runs: list[RunData]) -> RunData:
    """An lmms-eval samples file as a baseline run: its task from the file
    name, its numbers the means of its samples' scores for the metrics the
    other runs report on that task."""
    if not path.is_file():
        raise UserError(f"--baseline {path}: no such run folder or file")
    task = lmms_task_of(path)
    if task is None:
        raise UserError(f"--baseline {path}: not a run folder nor an lmms-eval samples file "
                        "(<date>_samples_<task>.jsonl, written by lmms-eval --log_samples)")
    holders = [r for r in runs if task in r.typed.tasks]
    if not holders:
        known = sorted({t for r in runs for t in r.typed.tasks})
        raise UserError(f"--baseline {path}: its task {task!r} is in none of the runs compared "
                        f"(their tasks: {', '.join(known)[:300]})")
    result = holders[0].typed.tasks[task]
    metrics = list(result.ordered())
    key = _key(holders[0], task)
    lines = read_lmms_samples(path, metrics)
    if not lines.lines:
        raise UserError(f"{path}: no sample lines")
    cells = lmms_cells(lines, metrics, key)
    if not cells:
        raise UserError(f"{path}: no line scores {', '.join(sorted({m.partition(',')[0] for m in metrics}))} "
                        f"(the metrics the runs report on {task}; a dict score is read at score_key {key.score_key!r})")
    typed = RunResults({task: TaskResult(cells, samples=lines.total, errors=lines.failed,
                                         info={m: result.info[m] for m in cells if m in result.info})})
    config = (((holders[0].run.get("tasks") or {}).get(task) or {}).get("config") or {})
    run = {"model": {"kind": "lmms-eval", "name": path.stem},
           "tasks": {task: {"config": {k: v for k, v in config.items() if k in ("cluster_key", "score_key")}}}}
    note = f"lmms-eval samples file: {path.name}; its numbers are the means of its samples' scores"
    return LmmsRun(path, run, typed.to_json(), {}, [note], task=task, metrics=list(cells))


@dataclass
class LmmsRun(RunData):
    """An lmms-eval samples file standing in for a run (:func:`lmms_run`)."""

    task: str = ""
    metrics: list[str] = field(default_factory=list)


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


def _fmt_p(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def _fmt_d(x: float | None) -> str:
    return "-" if x is None else f"{x:+.4f}"


def _fmt_mde(pairing: Pairing) -> str:
    """The difference the test would detect with 80 % power: in points for
    scores in [0, 1] (100 x the difference), else in the metric's units."""
    m = pairing.mde
    if m is None:
        return "-"
    if pairing.bounded and pairing.scale == 1.0:
        return f"{100 * m:.1f} points"
    return f"{m:.4f}"


def tests_of(table: ComparisonTable, row: int) -> list[tuple[Column, Pairing, float | None]]:
    """The run's tests against the baseline, in column order (columns the
    two runs do not share are left out)."""
    out = []
    for i, col in enumerate(table.columns):
        p = table.pairing(row, i)
        if p is not None and (p.test is not None or p.why != "not in both runs"):
            out.append((col, p, table.p_holm(row, i)))
    return out


def _cells(col: Column, p: Pairing, q: float | None) -> list[str]:
    t = p.test
    left = f"{p.left_out_run} / {p.left_out_base}" if t is not None and t.method != UNPAIRED_Z else "-"
    pairs = str(p.paired) if t is not None and t.method != UNPAIRED_Z else "-"
    return [col.title + (" (group)" if col.group else ""),
            _fmt_d(t.difference if t else None),
            "-" if t is None or t.ci is None else f"[{t.ci[0]:+.4f}, {t.ci[1]:+.4f}]",
            _fmt_p(t.p if t else None), _fmt_p(q),
            (t.method if t else f"none: {p.why}"), pairs, left,
            "-" if t is None or t.clusters is None else str(t.clusters),
            _fmt_mde(p) if t is not None else "-"]


TEST_HEADER = ["Task / metric", "Δ", "95 % CI", "p", "p (Holm)", "Test", "Pairs", "Left out (run / baseline)",
               "Clusters", "MDE (80 % power)"]


def legend(table: ComparisonTable) -> list[str]:
    """What the marks, tests and numbers mean (one line each)."""
    base = table.labels[table.baseline]
    lines = [f"Value ± standard error. {UP}/{DOWN}: above/below {base} with a Holm-adjusted p-value under {ALPHA:g} "
             "(the p-values of each run's tests against the baseline adjusted together; the family's size is in its "
             "table's title)."]
    used = sorted({p.test.method for row in table.pairings for p in row if p is not None and p.test is not None})
    lines += [f"{m}: {TESTS[m]}" for m in used]
    lines.append(f"Δ = run − baseline on the samples both scored (same task, sample id and repeat); MDE: the true "
                 f"difference the test would detect with {POWER:.0%} power at α = {ALPHA:g}, from the observed "
                 "paired standard error (and clusters): a difference under it would usually go unseen.")
    return lines


def to_markdown(table: ComparisonTable) -> str:
    """GitHub-flavoured Markdown: the runs' values with their marks, then one
    table of tests per run against the baseline, the legend, the notes and
    the settings that differ."""
    head = "| Model | " + " | ".join(_md(c.title) for c in table.columns) + " |"
    sep = "|---|" + "|".join("---:" for _ in table.columns) + "|"
    rows = [
        "| " + _md(label) + " | " + " | ".join(table.cell_text(r, c) for c in range(len(table.columns))) + " |"
        for r, label in enumerate(table.labels)
    ]
    lines = [head, sep, *rows]
    base = _md(table.labels[table.baseline])
    for r in range(len(table.labels)):
        if r == table.baseline:
            continue
        tests = tests_of(table, r)
        if not tests:
            continue
        lines += ["", f"{_md(table.labels[r])} vs {base} ({table.family(r)} tests, Holm-adjusted):", "",
                  "| " + " | ".join(TEST_HEADER) + " |", "|---|" + "|".join("---:" for _ in TEST_HEADER[1:]) + "|"]
        lines += ["| " + " | ".join(_md(x) for x in _cells(col, p, q)) + " |" for col, p, q in tests]
    out = "\n".join(lines) + "\n\n" + "\n".join(_md(x) for x in legend(table)) + "\n"
    if table.notes:
        out += "\nNotes:\n" + "".join(f"- {_md(n)}\n" for n in table.notes)
    if table.differences:
        dh = "| Setting | " + " | ".join(_md(label) for label in table.labels) + " |"
        ds = "|---|" + "|".join("---" for _ in table.labels) + "|"
        drows = ["| " + _md(k) + " | " + " | ".join(_md(v) for v in vals) + " |" for k, vals in table.differences]
        out += "\nDifferences between the runs:\n\n" + "\n".join([dh, ds, *drows]) + "\n"
    return out


def to_csv(table: ComparisonTable) -> str:
    """One row per run; per column: value, stderr, n, the mark vs the
    baseline (1, -1, 0), and the test: Δ, Holm-adjusted p, the test's
    name, pairs and samples left out (run / baseline); empty where the
    run lacks the column or there is no test (the baseline's own row)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = ["model", "run_dir"]
    for c in table.columns:
        header += [c.title, f"{c.title} stderr", f"{c.title} n", f"{c.title} vs baseline", f"{c.title} delta",
                   f"{c.title} p_holm", f"{c.title} test", f"{c.title} paired", f"{c.title} left out"]
    w.writerow(header)
    for r, label in enumerate(table.labels):
        row: list[object] = [label, str(table.run_dirs[r])]
        for i, cell in enumerate(table.cells[r]):
            if cell is None:
                row += [""] * 9
                continue
            row += ["" if cell.value is None else repr(cell.value), "" if cell.stderr is None else repr(cell.stderr),
                    "" if cell.n is None else cell.n, table.mark(r, i)]
            p = table.pairing(r, i)
            t = p.test if p is not None else None
            if p is None or t is None:
                row += ["", "", "", "", ""]
            else:
                q = table.p_holm(r, i)
                paired = t.method != UNPAIRED_Z
                row += [repr(t.difference), "" if q is None else repr(q), t.method, p.paired if paired else "",
                        f"{p.left_out_run}/{p.left_out_base}" if paired else ""]
        w.writerow(row)
    return buf.getvalue()


def _finite(x: float | None) -> float | None:
    return x if x is None or math.isfinite(x) else None


def comparison_document(table: ComparisonTable) -> dict[str, Any]:
    """The tests as one JSON document (``ComparisonTable.comparison``)."""
    tests = []
    for r in range(len(table.labels)):
        if r == table.baseline:
            continue
        for col, p, q in tests_of(table, r):
            t = p.test
            entry: dict[str, Any] = {"run": table.labels[r], "task": col.task, "metric": col.metric, "group": col.group}
            if t is None:
                entry.update(test=None, why=p.why)
            else:
                paired = t.method != UNPAIRED_Z
                entry.update(test=t.method, difference=_finite(t.difference), stderr=_finite(t.stderr),
                             ci=None if t.ci is None else [_finite(t.ci[0]), _finite(t.ci[1])], p=_finite(t.p),
                             p_holm=_finite(q), significant=q is not None and q < ALPHA,
                             paired=p.paired if paired else None,
                             left_out={"run": p.left_out_run, "baseline": p.left_out_base} if paired else None,
                             clusters=t.clusters, clustered_by=p.clusters_by or None, df=_finite(t.df),
                             correlation=_finite(t.correlation), discordant=list(t.discordant) if t.discordant else None,
                             mde=_finite(t.mde), unit="points" if p.bounded and p.scale == 1.0 else "value")
            tests.append(entry)
    return {"baseline": table.labels[table.baseline], "runs": [{"label": label, "path": str(d)}
                                                               for label, d in zip(table.labels, table.run_dirs)],
            "alpha": ALPHA, "power": POWER,
            "adjustment": "holm, over each run's tests against the baseline",
            "tests": tests, "notes": list(table.notes), "legend": legend(table)}


def write_comparison(table: ComparisonTable, output: Path) -> Path:
    """The ``comparison`` document as JSON at ``output``."""
    text = json.dumps(table.comparison, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_atomic(Path(output), lambda fh: fh.write(text))
    return Path(output)


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
        f"({esc(table.labels[table.baseline])}) with a Holm-adjusted p-value under {ALPHA:g} (the tests are below). "
        "Green: better, red: worse, by the metric's direction (a lower false-positive rate is "
        "better); uncoloured when neither way is better.</p></section>"
        f"{_tests_html(table)}"
        f'{counts_html}<section id="plots"><h2>Plots</h2><div class="charts">{figs}</div></section>'
        f'<section id="runs"><h2>Runs</h2><table><tr><th>Label</th><th>Folder</th><th>Model</th><th>Created</th>'
        f"<th>avhb</th></tr>{runs}</table></section></main>"
    )
    data = {"labels": table.labels, "columns": [c.title for c in table.columns],
            "differences": [[k, v] for k, v in table.differences], "comparison": table.comparison}
    return page("avhb comparison", body, data=data)


def _tests_html(table: ComparisonTable) -> str:
    """One table of tests per run against the baseline, the legend and the notes."""
    parts = []
    for r in range(len(table.labels)):
        if r == table.baseline:
            continue
        tests = tests_of(table, r)
        if not tests:
            continue
        head = "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in TEST_HEADER) + "</tr>"
        body = []
        for col, p, q in tests:
            cells = _cells(col, p, q)
            sig = q is not None and q < ALPHA
            mark = ""
            if sig and p.test is not None and p.test.difference:
                mark = f" {UP}" if p.test.difference > 0 else f" {DOWN}"
            tds = [f"<td>{esc(cells[0])}</td>", f'<td class="num{" sig-changed" if sig else ""}">{esc(cells[1])}'
                   f"{mark}</td>"] + [f'<td class="num">{esc(c)}</td>' for c in cells[2:5]] + \
                  [f"<td>{esc(cells[5])}</td>"] + [f'<td class="num">{esc(c)}</td>' for c in cells[6:]]
            body.append(f'<tr class="{"sig" if sig else "nosig"}">{"".join(tds)}</tr>')
        parts.append(f"<h3>{esc(table.labels[r])} vs {esc(table.labels[table.baseline])} "
                     f'<span class="muted">({table.family(r)} tests, Holm-adjusted)</span></h3>'
                     f'<div class="scroll"><table class="tests" id="tests-{r}">{head}{"".join(body)}</table></div>')
    if not parts:
        return ""
    about = "".join(f"<li>{esc(line)}</li>" for line in legend(table)[1:])
    notes = "".join(f"<li>{esc(n)}</li>" for n in table.notes)
    return ('<section id="tests"><h2>Tests against the baseline</h2>' + "".join(parts)
            + f'<ul class="muted legend">{about}</ul>'
            + (f'<div class="notes"><strong>Samples left out</strong><ul>{notes}</ul></div>' if notes else "")
            + "</section>")


def write_html(table: ComparisonTable, output: Path | None = None) -> Path:
    """Write the comparison report to ``output`` (default ``compare.html``
    in the current folder: a comparison belongs to no one run, and a run
    folder is written only by its own run) and return its path."""
    out = Path(output) if output is not None else Path.cwd() / COMPARE_NAME
    html = to_html(table)
    write_atomic(out, lambda fh: fh.write(html))
    return out
