"""``report.html``: the self-contained single-run report.

Sections: header (model, time, completeness), results table with standard
errors and counts, plots (per task family and per breakdown dimension),
judges (roles, failures, agreement), usage (the model's calls per task and
in total, the judges'), sample browser, configuration
and versions. No network resource is referenced; charts are inline SVG.

The page records a digest of what it was made from
(``report/page_digest.py``); ``write_report`` leaves a page whose
digest matches alone, so a finished rerun does not rewrite it.
"""
from __future__ import annotations

from pathlib import Path

from avhb.report.browser import browser_section
from avhb.report.result_charts import breakdown_charts, family_charts
from avhb.report.page_digest import recorded_page_digest, page_digest
from avhb.report.htmlkit import BROWSER_JS, esc, page
from avhb.report.rundata import RunData, load_run
from avhb.runfolder.layout import report_file
from avhb.redact import redact
from avhb.report.usage_section import usage_section
from avhb.report.sections import charts_section, config_section, judges_section, power_section, results_section

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
    undefined = data.typed.undefined_headlines()
    if undefined:  # an empty cell must not be the only trace of a metric no verdict could decide
        items = "".join(f"<li>{esc(u)}</li>" for u in undefined)
        problems += f'<div class="problems"><strong>Headline metrics without a value</strong><ul>{items}</ul></div>'
    notes = data.run.get("notes") if isinstance(data.run.get("notes"), list) else []
    if notes:
        items = "".join(f"<li>{esc(n)}</li>" for n in notes)
        problems += (f'<div class="notes"><strong>What this run changed from what was asked</strong>'
                     f"<ul>{items}</ul></div>")
    nav = ("<nav><a href=\"#results\">Results</a><a href=\"#power\">Power</a><a href=\"#plots\">Plots</a>"
           "<a href=\"#judges\">Judges</a><a href=\"#usage\">Usage</a>"
           "<a href=\"#browser\">Samples</a><a href=\"#config\">Configuration</a></nav>")
    return (f"<header><h1>{esc(data.label)}</h1><div class=\"meta\">{meta} · <code>{esc(data.path.name)}</code>"
            f"</div></header>{nav}<main>{problems}")


def render_report(data: RunData, digest: str | None = None) -> str:
    """The report's HTML text."""
    charts = family_charts(data.typed, data.report_hints) + breakdown_charts(data.typed)
    body = "".join(
        [
            _header(data),
            results_section(data),
            power_section(data),
            charts_section(charts),
            judges_section(data),
            usage_section(data),
            browser_section(data),
            config_section(data),
            "</main>",
        ]
    )
    return page(f"avhb report: {data.label}", body, data=redact(data.results), script=BROWSER_JS,
                digest=digest)


def write_report(run_dir: Path, *, max_samples_per_task: int | None = DEFAULT_MAX_SAMPLES) -> Path:
    """Write ``<run_dir>/report.html`` from whatever the run folder holds
    (atomically: a reader never sees half a report) and return its path.
    A report made from the same inputs is left as it is."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        load_run(run_dir)  # the one message for a missing run folder
    out = report_file(run_dir)
    digest = page_digest(run_dir, max_samples_per_task)
    if recorded_page_digest(out) == digest:
        return out
    data = load_run(run_dir, max_samples_per_task=max_samples_per_task)
    text = render_report(data, digest)
    from avhb.runfolder.folder import write_atomic

    write_atomic(out, lambda fh: fh.write(text))
    return out
