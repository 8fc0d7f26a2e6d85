"""The report's "Usage" section: what the run's calls cost.

One table: the model under test per task and in total (results.json's
``usage["model"]``, :mod:`avhb.run.usage`: calls, failed calls, prompt and
completion tokens, cost, p50 / p95 latency), then the judges in total
(``judge_usage``: calls, calls answered from the journal, tokens, cost).  A
results.json without the model's usage (written before it was recorded)
still renders: the section says so and shows the judges' row alone.
"""
from __future__ import annotations

from typing import Any, Mapping

from avhb.report.htmlkit import esc
from avhb.report.rundata import RunData
from avhb.run.usage import fmt_seconds

_HEAD = ("<tr><th>Who</th><th>Task</th><th>Calls</th><th>Failed</th><th>From the journal</th>"
         "<th>Prompt tokens</th><th>Completion tokens</th><th>Cost (USD)</th><th>Latency p50</th>"
         "<th>Latency p95</th><th>Latencies</th></tr>")


def _int_td(value: Any, bad: bool = False) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return '<td class="num muted">-</td>'
    flag = " bad" if bad and value > 0 else ""
    return f'<td class="num{flag}">{int(value):,}</td>'


def _cost_td(value: Any, priced: bool) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and priced:
        return f'<td class="num">{value:.4f}</td>'
    return '<td class="num muted" title="no prices known for this backend">unknown</td>'


def _latency_tds(latency: Any) -> str:
    if not isinstance(latency, Mapping) or not isinstance(latency.get("p50"), (int, float)):
        return '<td class="num muted" colspan="3">not recorded</td>'
    return (f'<td class="num latency">{esc(fmt_seconds(latency.get("p50")))}</td>'
            f'<td class="num latency">{esc(fmt_seconds(latency.get("p95")))}</td>{_int_td(latency.get("n"))}')


def _model_row(task: str, cell: Mapping[str, Any], css: str) -> str:
    return (f'<tr class="{css}" data-usage="model" data-task="{esc(task)}"><td>model</td><td>{esc(task)}</td>'
            f'{_int_td(cell.get("calls"))}{_int_td(cell.get("failed"), bad=True)}<td class="num muted">-</td>'
            f'{_int_td(cell.get("prompt_tokens"))}{_int_td(cell.get("completion_tokens"))}'
            f'{_cost_td(cell.get("cost_usd"), True)}{_latency_tds(cell.get("latency_s"))}</tr>')


def _judge_row(usage: Mapping[str, Any]) -> str:
    cost = usage.get("cost")
    return ('<tr class="first" data-usage="judges"><td>judges (every role)</td><td>all tasks</td>'
            f'{_int_td(usage.get("calls"))}<td class="num muted">-</td>{_int_td(usage.get("cached"))}'
            f'{_int_td(usage.get("prompt_tokens"))}{_int_td(usage.get("completion_tokens"))}'
            f'{_cost_td(cost, isinstance(cost, (int, float)) and cost > 0)}'
            '<td class="num muted" colspan="3">not recorded</td></tr>')


def usage_section(data: RunData) -> str:
    usage = data.typed.usage
    model = usage.get("model") if isinstance(usage, Mapping) else None
    judges = data.typed.judge_usage
    rows: list[str] = []
    notes: list[str] = []
    if isinstance(model, Mapping) and isinstance(model.get("total"), Mapping):
        tasks = given if isinstance(given := model.get("tasks"), Mapping) else {}
        for i, (task, cell) in enumerate(tasks.items()):
            if isinstance(cell, Mapping):
                rows.append(_model_row(str(task), cell, "first" if i == 0 else ""))
        rows.append(_model_row("total", model["total"], "total"))
    else:
        notes.append("The model's usage is not in this run's results.json (a run written before avhb recorded it); "
                     "<code>avhb score RUN_DIR</code> adds it from the journal without calling the model.")
    if judges:
        rows.append(_judge_row(judges))
    if not rows and not notes:
        return ""
    table = f'<table id="usage-table">{_HEAD}{"".join(rows)}</table>' if rows else ""
    about = ('<p class="muted">Model: the calls the results rest on (journal/responses.jsonl: the newest entry of '
             "each call, every step of a multi-step sample, calls answered from the journal on a resume "
             "included); Failed: calls that ended in an error. Latency: seconds from a call's first attempt to "
             "its answer, retries included, by nearest rank over the calls that recorded one (Latencies). "
             "Judges: every role's calls over the run, From the journal: those answered without a new call. "
             "Cost unknown: the backend has no prices, so 0 would not mean free.</p>")
    return ('<section id="usage"><h2>Usage</h2>' + "".join(f'<p class="note">{n}</p>' for n in notes)
            + table + about + "</section>")
