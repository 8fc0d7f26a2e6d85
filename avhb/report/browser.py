"""The sample browser: the samples the report keeps are embedded once, as
data (their samples-file lines, gzip-compressed and base64-encoded when
that pays), and the page's script (``htmlkit.BROWSER_JS``) renders them on
demand: search, a task filter, error and judge-failure filters, pages of
100.  Every model, judge or dataset text reaches the page as text
(``textContent``), never as markup.

A card shows the sample's fields, its ``outputs``, its judgements (the
metric, the judge role that gave the verdict, the verdict, whether it
parsed, the raw reply) and, for a sample of more than one step, its
trajectory: one row per step with its name (``turn2.edge4`` is grouped under
``turn2``), its ``kind`` (``model``, ``judge`` or what the driver logged),
the role (``model``, or the judge's role), the step's ``prompt`` and
``response`` (or ``error``), the verdict (``value`` and ``ok``), and every
other key the driver logged under Details (a list of flat mappings as a
table).

A line longer than ``MAX_TEXT`` characters is embedded as a smaller copy
of the row with its long texts already cut (``report_capped``: the script
does not cut them again); the samples file keeps them whole.  In that
copy a multi-step sample's trajectory (``trajectory``: its steps, each a
mapping such as ``{step, kind, role, prompt, response, value, ok, ...}``)
keeps every text cut to ``MAX_STEP_TEXT`` characters, every list to
``MAX_STEP_ITEMS`` items, and at most ``MAX_TRAJECTORY`` characters of
steps: the first and the last ones, with one ``{"report_omitted": n}``
step where ``n`` steps were left out; the script says so where it shows it.
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
MAX_STEP_TEXT = 2000  # characters shown of each text inside a trajectory step
MAX_STEP_ITEMS = 50  # items shown of each list inside a trajectory step
MAX_TRAJECTORY = 20000  # characters (as JSON) of trajectory steps embedded for one sample
OMITTED = "report_omitted"  # key of the step standing for the steps left out


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


def _bounded(value: Any) -> Any:
    """A trajectory step's value with its texts cut to MAX_STEP_TEXT and
    its lists to MAX_STEP_ITEMS (the cut said in place)."""
    if isinstance(value, str):
        return _short(value, MAX_STEP_TEXT)
    if isinstance(value, dict):
        return {str(k): _bounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        kept = [_bounded(v) for v in value[:MAX_STEP_ITEMS]]
        if len(value) > MAX_STEP_ITEMS:
            kept.append(f"… [{len(value) - MAX_STEP_ITEMS} more items]")
        return kept
    return value


def capped_trajectory(steps: Any) -> list[Any]:
    """The trajectory the report embeds for a capped row (module docstring):
    each step bounded, the first steps while they fill half of
    MAX_TRAJECTORY, the last ones in the rest, one OMITTED step between."""
    if not isinstance(steps, list):
        return [_bounded(steps)]
    bounded = [_bounded(s) for s in steps]
    sizes = [len(json.dumps(s, ensure_ascii=False, default=str)) for s in bounded]
    if sum(sizes) <= MAX_TRAJECTORY:
        return bounded
    head, used = 0, 0
    while head < len(bounded) and used + sizes[head] <= MAX_TRAJECTORY // 2:
        used += sizes[head]
        head += 1
    tail = len(bounded)
    while tail > head and used + sizes[tail - 1] <= MAX_TRAJECTORY:
        used += sizes[tail - 1]
        tail -= 1
    return [*bounded[:head], {OMITTED: tail - head}, *bounded[tail:]]


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
    if row.get("trajectory"):
        out["trajectory"] = capped_trajectory(row["trajectory"])
    if isinstance(row.get("outputs"), dict):
        out["outputs"] = {k: _short(v) for k, v in row["outputs"].items()}
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
