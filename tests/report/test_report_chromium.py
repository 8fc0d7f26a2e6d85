"""The single-run report rendered by headless Chromium: table, charts and
the sample browser script work, hostile text stays text, and a screenshot
is kept in tests/artifacts/report.png."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from avhb.report.html import write_report
from report_fixtures import make_run

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium binary on PATH (Debian: apt-get install -y chromium)")


def _render(page: Path, tmp: Path, screenshot: Path | None = None, query: str = "") -> str:
    cmd = [_chromium(), *FLAGS, f"--user-data-dir={tmp / 'profile'}", "--window-size=1280,2200",
           "--virtual-time-budget=3000", "--dump-dom"]
    if screenshot is not None:
        cmd.append(f"--screenshot={screenshot}")
    proc = subprocess.run([*cmd, page.as_uri() + query], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_report_renders_in_chromium(tmp_path):
    run = make_run(tmp_path / "run")
    shot = tmp_path / "report.png"
    dom = _render(write_report(run), tmp_path, shot)
    # the results table rendered with value ± stderr and n
    assert '<table id="results-table">' in dom
    row = re.search(r'<tr class="first"><td>curve_ta_IN</td>.*?</tr>', dom).group(0)
    assert "0.6250" in row and "± 0.2394" in row
    # plots: one figure per chart, each holding an svg with drawn paths
    figures = re.findall(r'<figure class="chart" data-chart="[^"]*">\s*<svg.*?</svg>', dom, re.S)
    assert len(figures) == 5 and all("<path" in f for f in figures)
    # the browser script ran (it writes the match count)
    assert '<span id="s-count" class="muted">24 of 24 samples match</span>' in dom
    # the hostile response is shown as text, and none of its code ran
    assert "&lt;script&gt;document.title=\"PWNED-SCRIPT\"" in dom
    assert "data-pwned" not in re.search(r"<body[^>]*>", dom).group(0)
    assert "<title>PWNED" not in dom and "<img" not in dom
    # screenshot kept as an artefact
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "report.png")


def test_hostile_model_label_does_not_run(tmp_path):
    run = make_run(tmp_path / "run", hostile_label=True)
    dom = _render(write_report(run), tmp_path)
    assert "data-pwned" not in re.search(r"<body[^>]*>", dom).group(0)
    assert "<h1>&lt;/script&gt;&lt;script&gt;" in dom
    assert "24 of 24 samples match" in dom  # the page's own script still works


def test_sample_filters_preset_from_url(tmp_path):
    run = make_run(tmp_path / "run")
    page = write_report(run)
    dom = _render(page, tmp_path, query="?errors=1")
    assert '<span id="s-count" class="muted">1 of 24 samples match</span>' in dom
    shown = re.findall(r'<details class="sample[^"]*" data-task="([^"]*)" data-error="(\d)"[^>]*?(hidden="")?>', dom)
    assert [(t, e) for t, e, h in shown if not h] == [("vidpair_mcq", "1")]
    dom = _render(page, tmp_path, query="?q=FESTIVAL%20ko-kr")  # words ANDed, case-insensitive
    assert '<span id="s-count" class="muted">4 of 24 samples match</span>' in dom
    dom = _render(page, tmp_path, query="?task=curve_ta_IN&judge=1")
    assert '<span id="s-count" class="muted">0 of 24 samples match</span>' in dom
