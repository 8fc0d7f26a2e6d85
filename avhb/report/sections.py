"""Sections of the single-run report: results, charts, judges, configuration.
Every value taken from the run folder goes through ``esc``."""
from __future__ import annotations

from typing import Any, Mapping

from avhb.redact import redact
from avhb.report.count_columns import count_columns_note
from avhb.report.htmlkit import esc, num_td, pretty_json, uncertainty_td
from avhb.report.numbers import fmt_number
from avhb.runfolder.results import TaskResult
from avhb.score.aggregate import Aggregate
from avhb.score.metric import DIAGNOSTIC
from avhb.score.stats import ALPHA, INTERVALS, POWER
from avhb.report.svg_charts import Chart, render_svg
from avhb.report.rundata import RunData

def _kv(pairs: list[tuple[str, Any]]) -> str:
    items = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in pairs)
    return f'<dl class="kv">{items}</dl>'


def _counts_tds(values: list[str | int | None], bad_from: int = 1) -> str:
    out = []
    for i, v in enumerate(values):
        bad = i >= bad_from and isinstance(v, int) and v > 0
        out.append(f'<td class="num{" bad" if bad else ""}">{esc("" if v is None else v)}</td>')
    return "".join(out)


def _task_rows(name: str, result: TaskResult) -> list[str]:
    """Headline rows, then diagnostics; the task's counts on its first row,
    each metric's own counts on its row."""
    from avhb.report.table import metric_counts

    metrics = result.ordered()
    own, rest = metric_counts(result, list(metrics))
    task_counts = [result.samples, result.errors, result.judge_failures]
    if not metrics:
        return [f'<tr class="first"><td>{esc(name)}</td><td class="muted">no metric</td>'
                f'<td class="num">-</td><td></td><td></td><td></td><td></td><td></td>'
                f"{_counts_tds([*task_counts, None])}<td>{esc(_other(rest))}</td></tr>"]
    rows = []
    for i, (metric, agg) in enumerate(metrics.items()):
        info = result.info.get(metric)
        diag = result.kind(metric) == DIAGNOSTIC
        mine = dict(own.get(metric, {}))
        unparsed = mine.pop("unparsed", None)
        other = _other({**(rest if i == 0 else {}), **mine})
        about = esc(info.description) if info and info.description else ""
        arrow = {True: " ↑", False: " ↓", None: ""}.get(info.higher_is_better if info else None, "")
        cls = ' class="first"' if i == 0 else (' class="diag"' if diag else "")
        label = esc(metric) + (' <span class="tag">diagnostic</span>' if diag else "")
        rows.append(f"<tr{cls}><td>{esc(name) if i == 0 else ''}</td><td>{label}</td>{num_td(agg)}{uncertainty_td(agg)}"
                    f'<td class="about">{about}<span class="muted">{arrow}</span></td>'
                    f"{_counts_tds([*(task_counts if i == 0 else [None] * 3), unparsed])}"
                    f'<td class="muted">{esc(other)}</td></tr>')
    return rows


def _other(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items() if v)


def _group_rows(name: str, cells: Mapping[str, Aggregate]) -> list[str]:
    if not cells:
        return [f'<tr class="first"><td>{esc(name)}</td><td class="muted">no metric</td>'
                f'<td class="num">-</td><td></td><td></td><td></td><td></td></tr>']
    return [f'<tr{" class=first" if i == 0 else ""}><td>{esc(name) if i == 0 else ""}</td><td>{esc(metric)}</td>'
            f"{num_td(agg)}{uncertainty_td(agg)}</tr>" for i, (metric, agg) in enumerate(cells.items())]


def results_section(data: RunData) -> str:
    results = data.typed.tasks
    head = ("<tr><th>Task</th><th>Metric</th><th>Value</th><th>Stderr</th><th>n</th><th>95 % CI</th>"
            "<th>Clustered stderr</th><th>What it is</th>"
            "<th>Samples</th><th>Errors</th><th>Judge failures</th><th>Unparsed</th><th>Other counts</th></tr>")
    rows: list[str] = []
    for task in data.task_names:
        result = results.get(task)
        if result is not None:
            rows += _task_rows(task, result)
        else:
            seen = data.samples.get(task)
            so_far = f" ({seen.total} samples logged so far)" if seen else ""
            rows.append(f'<tr class="first"><td>{esc(task)}</td><td colspan="12" class="pending">'
                        f"no results yet{esc(so_far)}</td></tr>")
    out = ['<section id="results"><h2>Results</h2>']
    if rows:
        out.append(f'<table id="results-table">{head}{"".join(rows)}</table>')
    else:
        out.append('<p class="pending">No results yet.</p>')
    groups = data.typed.groups
    if groups:
        grows: list[str] = []
        for g, cells in groups.items():
            grows += _group_rows(str(g), cells)
        out.append("<h3>Groups</h3><table id=\"groups-table\"><tr><th>Group</th><th>Metric</th><th>Value</th>"
                   f"<th>Stderr</th><th>n</th><th>95 % CI</th><th>Clustered stderr</th></tr>{''.join(grows)}</table>")
    for g, absent in data.typed.absent_members.items():  # members skipped for want of data, not unfinished
        out.append(f'<p class="note">{esc(g)}: aggregated without {len(absent)} member(s) whose data has no samples: '
                   f'{esc(", ".join(absent))}</p>')
    notes = [(t, hint["note"]) for t, hint in data.report_hints.items()
             if isinstance(hint.get("note"), str) and t in data.task_names]
    for task, note in notes:  # e.g. which scorer is the harness's own, not the paper's
        out.append(f'<p class="note">{esc(task)}: {esc(note)}</p>')
    out.append('<p class="muted">Headline metrics first, diagnostics after them; value ± standard error; n = units '
               "the metric counted; ↑/↓: higher/lower is better. Counts are columns (integers), never bars. "
               "95 % CI: " + "; ".join(f"{k}: {v}" for k, v in INTERVALS.items()) + " (a cell's title names its "
               "method). Clustered stderr: cluster-robust, over the clusters the task's samples form (its "
               "cluster_key, or a sample's repeats), with the small-sample factor G/(G − 1) "
               "(docs/statistics.md).</p>")
    out.append(count_columns_note(data))
    out.append("</section>")
    return "".join(out)


def _points(value: float, unit: str) -> str:
    return f"{100 * value:.1f} points" if unit == "points" else fmt_number(value)


def power_section(data: RunData) -> str:
    """Per task and headline metric, the smallest difference a comparison on
    these samples would usually see (80 % power, α = 0.05), and what
    ``--repeats`` would change."""
    items = []
    for task, result in data.typed.tasks.items():
        for metric, p in result.power.items():
            units = f"{p.n} samples" + (f" in {p.clusters} clusters" if p.clusters is not None else "")
            line = (f"<li><strong>{esc(task)} / {esc(metric)}</strong>: with these {esc(units)}, a difference under "
                    f"{esc(_points(p.mde, p.unit))} would usually go unseen.")
            r = p.repeats
            if r is not None:
                ks = sorted({1.0, r.repeats, 2 * r.repeats})
                at = ", ".join(f"{k:g}: {_points(m, p.unit)}" for k in ks if (m := p.mde_at(k)) is not None)
                inf = p.mde_at(float("inf"))
                line += (f' <span class="muted">Repeats: {r.repeats:g} per sample; the within-sample part is '
                         f"{100 * r.within_share:.0f} % of this estimate's variance. With K repeats the difference "
                         f"would be {esc(at)}; with unlimited repeats {esc(_points(inf or 0.0, p.unit))} (the "
                         "across-sample part does not shrink).</span>")
            items.append(line + "</li>")
    if not items:
        return ('<section id="power"><h2>Power</h2><p class="muted">No headline number with a standard error (and '
                "its power, which results.json records from this version on).</p></section>")
    return ('<section id="power"><h2>Power</h2><ul class="power">' + "".join(items) + "</ul>"
            f'<p class="muted">The minimum detectable difference at {POWER:.0%} power and α = {ALPHA:g} (two-sided) '
            "against another model scored on the same samples with the same variance, from this run's standard "
            "error (clustered where the samples cluster) and assuming the two models uncorrelated: a correlation ρ "
            "between them narrows it by sqrt(1 − ρ) (<code>avhb report A B</code> uses the observed one). "
            "Points: 100 × a difference of a metric whose scores lie in [0, 1].</p></section>")


def charts_section(charts: list[Chart]) -> str:
    if not charts:
        return ""
    figs = "".join(
        f'<figure class="chart" data-chart="{esc(c.title)}">{render_svg(c, id_prefix=f"c{k}-")}'
        f"<figcaption>{esc(c.title)}: bars = value, whiskers = ± 1 standard error, n = count</figcaption></figure>"
        for k, c in enumerate(charts)
    )
    return f'<section id="plots"><h2>Plots</h2><div class="charts">{figs}</div></section>'


def _role_counts(data: RunData) -> dict[str, list[int]]:
    """role -> [verdicts, failures] over the loaded samples."""
    out: dict[str, list[int]] = {}
    for ts in data.samples.values():
        for row in ts.rows:
            judgements = row.get("judgements")
            if not isinstance(judgements, dict):
                continue
            for key, verdict in judgements.items():
                role = verdict.get("role") if isinstance(verdict, dict) and verdict.get("role") else key
                c = out.setdefault(str(role), [0, 0])
                c[0] += 1
                if not (isinstance(verdict, dict) and verdict.get("ok") is True):
                    c[1] += 1
    return out


def judges_section(data: RunData) -> str:
    parts: list[str] = []
    judges = data.run.get("judges")
    if isinstance(judges, Mapping) and judges:
        rows = "".join(
            f"<tr><td>{esc(role)}</td><td>{esc(', '.join(map(str, b)) if isinstance(b, list) else b)}</td></tr>"
            for role, b in redact(dict(judges)).items()
        )
        parts.append(f"<h3>Roles</h3><table><tr><th>Role</th><th>Backends</th></tr>{rows}</table>")
    failures = list(data.typed.tasks.items())
    if failures:
        rows = "".join(
            f'<tr><td>{esc(t)}</td><td class="num{" bad" if r.judge_failures else ""}">'
            f'{esc(r.judge_failures)}</td><td class="num">{esc(r.samples)}</td></tr>'
            for t, r in failures
        )
        parts.append("<h3>Judge failures per task</h3><table id=\"judge-failures\"><tr><th>Task</th>"
                     f"<th>Judge failures</th><th>Samples</th></tr>{rows}</table>")
    roles = _role_counts(data)
    if roles:
        rows = "".join(
            f'<tr><td>{esc(r)}</td><td class="num">{v}</td><td class="num{" bad" if f else ""}">{f}</td></tr>'
            for r, (v, f) in roles.items()
        )
        parts.append("<h3>Verdicts per role (samples shown below)</h3><table><tr><th>Role</th><th>Verdicts</th>"
                     f"<th>Unparsable</th></tr>{rows}</table>")
    agreement = data.results.get("agreement")
    if isinstance(agreement, Mapping) and agreement:
        agreement_rows = []
        for task, by_role in agreement.items():
            if not isinstance(by_role, Mapping):
                continue
            for role, stats in by_role.items():
                if not isinstance(stats, Mapping):
                    continue
                for stat, value in stats.items():
                    if isinstance(value, Mapping):
                        for pair, v in value.items():
                            agreement_rows.append((task, role, stat, pair, v))
                    else:
                        agreement_rows.append((task, role, stat, "", value))
        body = "".join(
            f"<tr><td>{esc(t)}</td><td>{esc(r)}</td><td>{esc(s)}</td><td>{esc(p)}</td>"
            f'<td class="num">{esc(fmt_number(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)}</td></tr>'
            for t, r, s, p, v in agreement_rows
        )
        parts.append("<h3>Agreement</h3><table id=\"agreement\"><tr><th>Task</th><th>Role</th><th>Statistic</th>"
                     f"<th>Pair</th><th>Value</th></tr>{body}</table>")
    if not parts:
        return ""
    return '<section id="judges"><h2>Judges</h2>' + "".join(parts) + "</section>"


def config_section(data: RunData) -> str:
    run = redact(data.run)
    if not run:
        return '<section id="config"><h2>Configuration</h2><p class="pending">run.json not found.</p></section>'
    pairs: list[tuple[str, Any]] = []
    cmd = run.get("command")
    if cmd:
        pairs.append(("command", f"<code>{esc(' '.join(map(str, cmd)) if isinstance(cmd, list) else cmd)}</code>"))
    for key in ("created", "avhb_version", "seed", "limit"):
        if key in run:
            pairs.append((key, esc("none" if run[key] is None else run[key])))
    model = run.get("model")
    if isinstance(model, Mapping):
        for key in ("kind", "name", "sees_pixels"):
            if key in model:
                pairs.append((f"model {key}", esc(model[key])))
        for key in ("args", "capabilities"):
            if model.get(key):
                pairs.append((f"model {key}", f"<pre>{esc(pretty_json(model[key]))}</pre>"))
    notes = run.get("notes")
    if notes:
        items = "".join(f"<li>{esc(n)}</li>" for n in (notes if isinstance(notes, list) else [notes]))
        pairs.append(("notes", f"<ul>{items}</ul>"))
    out = ['<section id="config"><h2>Configuration and versions</h2>', _kv(pairs)]
    tasks = run.get("tasks")
    if isinstance(tasks, Mapping) and tasks:
        out.append("<h3>Tasks</h3>")
        for task, spec in tasks.items():
            spec = spec if isinstance(spec, Mapping) else {}
            out.append(f"<details><summary>{esc(task)} <span class=\"muted\">hash {esc(spec.get('hash', '?'))}"
                       f"</span></summary><pre>{esc(pretty_json(spec.get('config', {})))}</pre></details>")
    for key, title in (("plugins", "Plugins"), ("versions", "Versions")):
        block = run.get(key)
        if isinstance(block, Mapping) and block:
            rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in block.items())
            out.append(f"<h3>{title}</h3><table>{rows}</table>")
    out.append("</section>")
    return "".join(out)
