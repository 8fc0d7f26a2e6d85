"""``report.html``: the self-contained single-run report.

Sections: header (model, time, completeness), results table with standard
errors and counts, plots (per task family and per breakdown dimension),
judges (roles, failures, agreement, usage), sample browser, configuration
and versions. No network resource is referenced; charts are inline SVG.

The page records a fingerprint of what it was made from (``<meta
name="avhb-inputs">``): run.json and results.json (their bytes), each
samples file (name, size, mtime), the sample cap and the report code.
``write_report`` leaves a page whose fingerprint matches alone, so a
finished rerun does not rewrite it.  The secret values redaction removes
are not part of the fingerprint (a hash of them in the page could be
checked against guesses).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from avhb.report.browser import browser_section
from avhb.report.charts import breakdown_charts, family_charts
from avhb.report.htmlkit import BROWSER_JS, esc, page
from avhb.report.rundata import RunData, load_run
from avhb.redact import redact
from avhb.report.sections import charts_section, config_section, judges_section, results_section

REPORT_NAME = "report.html"
DEFAULT_MAX_SAMPLES = 5000  # per task; samples with errors/judge failures are always kept


def _header(data: RunData) -> str:
    created = data.run.get("created", "")
    version = data.run.get("avhb_version", "")
    planned = data.task_names
    done = [t for t in planned if t in data.task_results]
    status = "complete" if planned and len(done) == len(planned) else f"results for {len(done)} of {len(planned)} tasks"
    meta = " · ".join(x for x in (esc(created), f"avhb {esc(version)}" if version else "", esc(status)) if x)
    problems = ""
    if data.problems:
        items = "".join(f"<li>{esc(p)}</li>" for p in data.problems[:50])
        more = f"<li>… {len(data.problems) - 50} more</li>" if len(data.problems) > 50 else ""
        problems = f'<div class="problems"><strong>Problems reading this run</strong><ul>{items}{more}</ul></div>'
    notes = data.run.get("notes") if isinstance(data.run.get("notes"), list) else []
    if notes:
        items = "".join(f"<li>{esc(n)}</li>" for n in notes)
        problems += (f'<div class="notes"><strong>What this run changed from what was asked</strong>'
                     f"<ul>{items}</ul></div>")
    nav = ("<nav><a href=\"#results\">Results</a><a href=\"#plots\">Plots</a><a href=\"#judges\">Judges</a>"
           "<a href=\"#browser\">Samples</a><a href=\"#config\">Configuration</a></nav>")
    return (f"<header><h1>{esc(data.label)}</h1><div class=\"meta\">{meta} · <code>{esc(data.path.name)}</code>"
            f"</div></header>{nav}<main>{problems}")


def render_report(data: RunData, fingerprint: str | None = None) -> str:
    """The report's HTML text."""
    charts = family_charts(data.typed, data.report_hints) + breakdown_charts(data.typed)
    body = "".join(
        [
            _header(data),
            results_section(data),
            charts_section(charts),
            judges_section(data),
            browser_section(data),
            config_section(data),
            "</main>",
        ]
    )
    return page(f"avhb report: {data.label}", body, data=redact(data.results), script=BROWSER_JS,
                fingerprint=fingerprint)


_REPORT_CODE = [os.path.join(os.path.dirname(os.path.abspath(__file__)), f) for f in sorted(
    os.listdir(os.path.dirname(os.path.abspath(__file__)))) if f.endswith(".py")]
_REPORT_CODE.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "redact.py"))
_FINGERPRINT = re.compile(rb'<meta name="avhb-inputs" content="([0-9a-f]{64})">')


def inputs_fingerprint(run_dir: Path, max_samples_per_task: int | None) -> str:
    """What the report shows is made of: run.json and results.json (bytes),
    the samples files (name, size, mtime), the cap, the report code."""
    from avhb import __version__

    h = hashlib.sha256(f"report-v1|{__version__}|{max_samples_per_task}".encode())
    for path in _REPORT_CODE:
        try:
            st = os.stat(path)
            h.update(f"|{os.path.basename(path)}:{st.st_mtime_ns}:{st.st_size}".encode())
        except OSError:
            h.update(b"|-")
    for name in ("run.json", "results.json"):
        try:
            raw = (run_dir / name).read_bytes()
        except OSError:
            h.update(f"|{name}:-".encode())
            continue
        if name == "run.json":
            raw = _without_stamp(raw)
        h.update(f"|{name}:".encode() + hashlib.sha256(raw).digest())
    try:
        entries = sorted((e.name, e.stat()) for e in os.scandir(run_dir / "samples") if e.name.endswith(".jsonl"))
    except OSError:
        entries = []
    for name, st in entries:
        h.update(f"|samples/{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


_NOT_SHOWN = ("updated",)  # run.json keys the report never shows (stamped at every write)


def _without_stamp(raw: bytes) -> bytes:
    """run.json's bytes for the fingerprint: the keys the report never shows
    left out (a rerun stamps ``updated``), the rest in its written order."""
    try:
        info = json.loads(raw)
    except ValueError:
        return raw
    if not isinstance(info, dict):
        return raw
    return json.dumps({k: v for k, v in info.items() if k not in _NOT_SHOWN}, sort_keys=False).encode()


def current_fingerprint(report: Path) -> str | None:
    """The fingerprint recorded in an existing report (None: none, or no report)."""
    try:
        with open(report, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    found = _FINGERPRINT.search(head)
    return found.group(1).decode() if found else None


def write_report(run_dir: Path, *, max_samples_per_task: int | None = DEFAULT_MAX_SAMPLES) -> Path:
    """Write ``<run_dir>/report.html`` from whatever the run folder holds
    (atomically: a reader never sees half a report) and return its path.
    A report made from the same inputs is left as it is."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        load_run(run_dir)  # the one message for a missing run folder
    out = run_dir / REPORT_NAME
    fingerprint = inputs_fingerprint(run_dir, max_samples_per_task)
    if current_fingerprint(out) == fingerprint:
        return out
    data = load_run(run_dir, max_samples_per_task=max_samples_per_task)
    text = render_report(data, fingerprint)
    from avhb.run.folder import write_atomic

    write_atomic(out, lambda fh: fh.write(text))
    return out
