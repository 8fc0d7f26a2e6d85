"""The sample browser: the samples the report keeps are embedded once, as
data (their samples-file lines, gzip-compressed and base64-encoded when
that pays), and the page's script (``htmlkit.BROWSER_JS``) renders them on
demand: search, a task filter, error and judge-failure filters, pages of
100.  Every model, judge or dataset text reaches the page as text
(``textContent``), never as markup.

A line longer than ``MAX_TEXT`` characters is embedded as a smaller copy
of the row with its long texts already cut (``report_capped``: the script
does not cut them again); the samples file keeps them whole.
"""
from __future__ import annotations

import base64
import gzip
import json
from typing import Any, Mapping

from avhb.report.htmlkit import esc
from avhb.report.rundata import RunData

MAX_DOC_VALUE = 2000  # characters shown per doc field
MAX_TEXT = 20000  # characters shown of a prompt, target, response or judge reply (the samples file keeps all)
COMPRESS_FROM = 32 * 1024  # bytes of sample data from which compressing is tried
CAPPED = "report_capped"  # key of a row whose texts the report already cut


def _text(value: Any) -> str:
    """Display text of an arbitrary JSON value (strings unquoted)."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _short(value: Any, limit: int = MAX_DOC_VALUE) -> str:
    text = _text(value)
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"


def _capped(value: Any) -> str:
    """Long texts cut for the report; the samples file has them whole."""
    text = _text(value)
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"… [{len(text) - MAX_TEXT} more characters: the full text is in samples/<task>.jsonl]"


def fmt_times(timestamps: Any) -> str:
    """Frame times in seconds, e.g. '0.00s 1.50s 3.00s' (the script writes them the same way)."""
    if not isinstance(timestamps, list) or not timestamps:
        return ""
    return " ".join(f"{t:.2f}s" if type(t) in (int, float) else str(t) for t in timestamps)


def capped_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The fields the browser shows, long texts cut (for a line over MAX_TEXT characters)."""
    out: dict[str, Any] = {k: row.get(k) for k in ("id", "repeat", "prompt_hash", "scores", "media")}
    for k in ("error", "prompt", "target", "response", "extracted"):
        if row.get(k) is not None:
            out[k] = _capped(row[k])
    doc = row.get("doc")
    if isinstance(doc, dict):
        out["doc"] = {k: _short(v) for k, v in doc.items()}
    adaptations = row.get("adaptations")
    if adaptations:
        out["adaptations"] = [_capped(a) for a in adaptations] if isinstance(adaptations, list) else _capped(adaptations)
    judgements = row.get("judgements")
    if isinstance(judgements, dict):
        out["judgements"] = {
            role: ({**v, "raw": _capped(v["raw"])} if isinstance(v, dict) and v.get("raw") else v)
            for role, v in judgements.items()}
    out[CAPPED] = True
    return out


def samples_json(data: RunData, order: list[str]) -> str:
    """``{"tasks": [...], "rows": [[row, ...] per task]}``: each row its
    samples-file line as written (no re-encoding), or its capped copy."""
    groups = []
    for task in order:
        ts = data.samples[task]
        lines = ts.lines if len(ts.lines) == len(ts.rows) else [json.dumps(r, ensure_ascii=False) for r in ts.rows]
        rows = [line if len(line) <= MAX_TEXT else json.dumps(capped_row(row), ensure_ascii=False, default=str)
                for line, row in zip(lines, ts.rows)]
        groups.append("[" + ",".join(rows) + "]")
    return '{"tasks":' + json.dumps(order, ensure_ascii=False) + ',"rows":[' + ",".join(groups) + "]}"


def embed(text: str) -> tuple[str, str]:
    """``(encoding, script text)`` for JSON ``text`` inside ``<script
    type="application/json">``: ``gzip+base64`` when that is smaller, else
    the JSON with ``<``, ``>`` and ``&`` escaped (they only occur inside its
    strings, where ``\\u003c`` reads back the same)."""
    raw = text.encode("utf-8")
    if len(raw) >= COMPRESS_FROM:
        packed = base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")
        if len(packed) < 0.75 * len(raw):
            return "gzip+base64", packed
    return "json", text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def browser_section(data: RunData) -> str:
    if not data.samples:
        return '<section id="browser"><h2>Samples</h2><p class="pending">No sample logs yet.</p></section>'
    notes: list[str] = []
    order = [t for t in data.task_names if t in data.samples]
    for task in order:
        ts = data.samples[task]
        if ts.shown < ts.total:
            notes.append(f"{task}: {ts.shown} of {ts.total} samples included (all with errors or judge failures "
                         f"kept); the full log is samples/{task}.jsonl")
    options = "".join(f'<option value="{esc(t)}">{esc(t)}</option>' for t in order)
    note_html = "".join(f'<p class="muted">{esc(n)}</p>' for n in notes)
    controls = (
        '<div class="controls">'
        '<input type="search" id="s-query" placeholder="Search id, question, response, verdict…">'
        f'<select id="s-task"><option value="">all tasks</option>{options}</select>'
        '<label><input type="checkbox" id="s-errors"> errors only</label>'
        '<label><input type="checkbox" id="s-judge"> judge failures only</label>'
        '<span id="s-count" class="muted">loading samples…</span></div>'
    )
    pager = ('<div class="pager"><button type="button" id="s-prev" hidden>‹ Previous</button>'
             '<span id="s-page" class="muted"></span><button type="button" id="s-next" hidden>Next ›</button></div>')
    encoding, payload = embed(samples_json(data, order))
    return (f'<section id="browser"><h2>Samples</h2>{note_html}{controls}<div id="samples"></div>{pager}'
            f'<noscript><p class="pending">The sample browser needs JavaScript; the samples are in '
            f'samples/&lt;task&gt;.jsonl.</p></noscript>'
            f'<script type="application/json" id="avhb-samples" data-encoding="{encoding}">{payload}</script>'
            "</section>")
