"""What the results table's count columns mean, said under the table:
the standard columns (Samples, Errors, Judge failures, Unparsed, Other
counts), Samples as documents × repeats with this run's numbers, and each
count metric the run reports, by the description its metric declares."""
from __future__ import annotations

from typing import Any, Mapping

from avhb.report.htmlkit import esc
from avhb.report.rundata import RunData
from avhb.score.metric import COUNT


def task_repeats(run: Mapping[str, Any], task: str) -> int | None:
    """The repeats a task ran with, as run.json records them: the run's
    ``repeats`` (``--repeats``), else the task's YAML ``repeats``, else 1;
    None when run.json does not describe the task."""
    tasks = run.get("tasks")
    spec = tasks.get(task) if isinstance(tasks, Mapping) else None
    if not isinstance(spec, Mapping):
        return None
    given = run.get("repeats")
    if not isinstance(given, int) or isinstance(given, bool):
        config = spec.get("config")
        given = config.get("repeats", 1) if isinstance(config, Mapping) else 1
    return given if isinstance(given, int) and not isinstance(given, bool) and given > 0 else None


def _samples_here(data: RunData) -> str:
    """``task 6 = 2 documents × 3 repeats`` for each task whose numbers divide."""
    out = []
    for task, result in data.typed.tasks.items():
        r = task_repeats(data.run, task)
        if r is not None and result.samples % r == 0:
            docs = result.samples // r
            out.append(f"{task} {result.samples} = {docs} document{'s' if docs != 1 else ''} × {r} "
                       f"repeat{'s' if r != 1 else ''}")
    return "; ".join(out)


def _count_metrics(data: RunData) -> dict[str, str]:
    """count metric -> its declared description, once per name, in table order."""
    out: dict[str, str] = {}
    for result in data.typed.tasks.values():
        for metric in result.metrics:
            info = result.info.get(metric)
            if info is not None and info.kind == COUNT and metric not in out:
                out[metric] = info.description
    return out


def count_columns_note(data: RunData) -> str:
    """The explanation under the results table (empty without task results)."""
    if not data.typed.tasks:
        return ""
    here = _samples_here(data)
    items = [
        ("Samples", "the (document, repeat) pairs the task ran: Samples = documents × repeats, each document "
                    "asked once per repeat" + (f". Here: {here}" if here else "")),
        ("Errors", "samples that failed outside the model (missing or unreadable media, data or hook errors, a "
                   "backend or judge that never answered): excluded from every metric and counted here, never "
                   "scored as wrong (docs/errors.md)"),
        ("Judge failures", "judge replies that never parsed after the role's retries: the verdict is left out of "
                           "its metric and counted, never guessed"),
        ("Unparsed", "model replies the metric could read no answer from: scored by the metric's own rule "
                     "(usually wrong) and counted"),
        ("Other counts", "the task's count metrics (integers, no standard error); a metric's own counts "
                         "(name_suffix) stand on its row as the suffix, the task's on its first row"),
    ]
    body = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items)
    counts = _count_metrics(data)
    if counts:
        rows = "".join(f"<li><code>{esc(m)}</code>: {esc(d) if d else '<span class=muted>(no description)</span>'}"
                       f"</li>" for m, d in counts.items())
        body += f'<dt>Count metrics</dt><dd><ul class="counts">{rows}</ul></dd>'
    return f'<h3>Count columns</h3><dl class="kv" id="count-columns">{body}</dl>'
