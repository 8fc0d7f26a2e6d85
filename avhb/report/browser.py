"""The sample browser: one collapsible entry per logged sample, rendered
server-side with every model/judge/dataset text HTML-escaped; a small inline
script (``htmlkit.BROWSER_JS``) adds search, a task filter and error filters."""
from __future__ import annotations

import json
from typing import Any, Mapping

from avhb.report.htmlkit import esc
from avhb.report.rundata import RunData

MAX_DOC_VALUE = 2000  # characters shown per doc field
MAX_TEXT = 20000  # characters shown of a prompt, target, response or judge reply (the samples file keeps all)


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
    """Frame times in seconds, e.g. '0.00s 1.50s 3.00s'."""
    if not isinstance(timestamps, list) or not timestamps:
        return ""
    return " ".join(f"{t:.2f}s" if type(t) in (int, float) else str(t) for t in timestamps)


def _score_text(scores: Any) -> str:
    if not isinstance(scores, dict):
        return ""
    parts = []
    for k, v in scores.items():
        if isinstance(v, float):
            v = f"{v:.3g}"
        parts.append(f"{k}={'–' if v is None else v}")
    return " · ".join(parts)


def _judge_failed(row: Mapping[str, Any]) -> bool:
    j = row.get("judgements")
    return isinstance(j, dict) and any(not (isinstance(v, dict) and v.get("ok") is True) for v in j.values())


def _field(name: str, body: str) -> str:
    return f"<dt>{esc(name)}</dt><dd>{body}</dd>"


def _video_text(video: Any) -> str:
    if isinstance(video, str):
        return f"video <code>{esc(video)}</code>"
    if not isinstance(video, dict):
        return ""
    parts = [f"video <code>{esc(video.get('path', '?'))}</code>"]
    if video.get("sent") is False:
        parts.append("<span class=\"bad\">not sent</span>")
    frames = video.get("frame_indices")
    if isinstance(frames, list) and frames:
        parts.append(f"{len(frames)} frames")
    times = fmt_times(video.get("timestamps"))
    if times:
        parts.append(f"at {esc(times)}")
    return " ".join(parts)


def _images_text(images: Any) -> str:
    if not isinstance(images, list) or not images:
        return ""
    sizes = []
    for im in images:
        if not isinstance(im, dict):
            continue
        size = im.get("size") or im.get("source_size")
        text = f"{size[0]}x{size[1]}" if isinstance(size, list) and len(size) == 2 else "?"
        if im.get("source_size") and im.get("size") and im["source_size"] != im["size"]:
            text += f" (from {im['source_size'][0]}x{im['source_size'][1]})"
        if im.get("sent") is False:
            text += " not sent"
        name = im.get("label") or (str(im.get("path") or "").rsplit("/", 1)[-1])
        sizes.append(f"<code>{esc(name)}</code> {esc(text)}")
    return f"{len(images)} image{'s' if len(images) != 1 else ''}: " + ", ".join(sizes)


def _media(media: Any) -> str:
    """What a sample sent: video (frames and their times), images (and
    their sizes), audio."""
    if not isinstance(media, dict):
        return ""
    parts = []
    videos = media.get("video")
    for video in videos if isinstance(videos, list) else [videos]:
        text = _video_text(video)
        if text:
            parts.append(text)
    frames = media.get("frame_indices")  # the older flat form
    if isinstance(frames, list) and frames:
        parts.append(f"{len(frames)} frames")
    times = fmt_times(media.get("timestamps"))
    if times:
        parts.append(f"at {esc(times)}")
    images = _images_text(media.get("images"))
    if images:
        parts.append(images)
    audio = media.get("audio")
    if isinstance(audio, dict):
        parts.append(f"audio {esc(audio.get('seconds', '?'))} s at {esc(audio.get('rate', '?'))} Hz")
    elif audio:
        parts.append(f"audio {esc(_text(audio))}")
    return "; ".join(parts)


def _judgements(judgements: Any) -> str:
    if not isinstance(judgements, dict) or not judgements:
        return ""
    rows = []
    for role, v in judgements.items():
        v = v if isinstance(v, dict) else {"value": v}
        ok = v.get("ok") is True
        status = '<span class="good">ok</span>' if ok else '<span class="bad">unparsable</span>'
        raw = v.get("raw")
        raw_html = f"<pre>{esc(_capped(raw))}</pre>" if raw else ""
        rows.append(f"<tr><td>{esc(role)}</td><td>{esc(_text(v.get('value')))}</td><td>{status}</td>"
                    f"<td>{raw_html}</td></tr>")
    return f"<table><tr><th>Role</th><th>Verdict</th><th>Parsed</th><th>Raw reply</th></tr>{''.join(rows)}</table>"


def sample_html(task: str, row: Mapping[str, Any]) -> str:
    error = row.get("error")
    jfail = _judge_failed(row)
    sid = _text(row.get("id", "?"))
    repeat = row.get("repeat")
    badges = []
    if error:
        badges.append('<span class="badge bad">error</span>')
    if jfail:
        badges.append('<span class="badge bad">judge failure</span>')
    head = (f'<span class="badge">{esc(task)}</span><span class="sid">{esc(sid)}'
            f'{esc(f" #{repeat}") if isinstance(repeat, int) and repeat else ""}</span>'
            f'<span class="muted">{esc(_score_text(row.get("scores")))}</span>{"".join(badges)}')
    fields = []
    if error:
        fields.append(_field("error", f'<pre class="bad">{esc(_capped(error))}</pre>'))
    doc = row.get("doc")
    if isinstance(doc, dict) and doc:
        q = doc.get("question")
        if q is not None:
            fields.append(_field("question", f"<pre>{esc(_short(q))}</pre>"))
        rest = "".join(f"<dt>{esc(k)}</dt><dd>{esc(_short(v))}</dd>" for k, v in doc.items() if k != "question")
        if rest:
            fields.append(_field("doc", f'<details><summary>fields</summary><dl class="kv">{rest}</dl></details>'))
    if row.get("prompt"):
        fields.append(_field("prompt", f"<details><summary>text sent</summary><pre>{esc(_capped(row['prompt']))}</pre>"
                                       f"</details>"))
    media = _media(row.get("media"))
    if media:
        fields.append(_field("media", media))
    adaptations = row.get("adaptations")
    if adaptations:
        fields.append(_field("adaptations", esc("; ".join(map(_text, adaptations)) if isinstance(adaptations, list)
                                                 else _text(adaptations))))
    fields.append(_field("target", f"<pre>{esc(_capped(row.get('target')))}</pre>"))
    fields.append(_field("response", f"<pre>{esc(_capped(row.get('response')))}</pre>"))
    fields.append(_field("extracted", f"<pre>{esc(_capped(row.get('extracted')))}</pre>"))
    scores = row.get("scores")
    if isinstance(scores, dict) and scores:
        fields.append(_field("scores", esc(_score_text(scores))))
    judged = _judgements(row.get("judgements"))
    if judged:
        fields.append(_field("judgements", judged))
    if row.get("prompt_hash"):
        fields.append(_field("prompt hash", f"<code>{esc(row['prompt_hash'])}</code>"))
    cls = "sample err" if error or jfail else "sample"
    return (f'<details class="{cls}" data-task="{esc(task)}" data-error="{1 if error else 0}" '
            f'data-judgefail="{1 if jfail else 0}"><summary>{head}</summary>'
            f'<div class="body"><dl class="kv">{"".join(fields)}</dl></div></details>')


def browser_section(data: RunData) -> str:
    if not data.samples:
        return '<section id="browser"><h2>Samples</h2><p class="pending">No sample logs yet.</p></section>'
    entries: list[str] = []
    notes: list[str] = []
    order = [t for t in data.task_names if t in data.samples]
    for task in order:
        ts = data.samples[task]
        entries += [sample_html(task, row) for row in ts.rows]
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
        '<span id="s-count" class="muted"></span></div>'
    )
    return (f'<section id="browser"><h2>Samples</h2>{note_html}{controls}<div id="samples">{"".join(entries)}</div>'
            '<button type="button" id="s-more" hidden>Show more</button></section>')
