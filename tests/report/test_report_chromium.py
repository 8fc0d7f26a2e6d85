"""The single-run report rendered by headless Chromium: table, charts and
the sample browser script work, hostile text stays text, and a screenshot
is kept in tests/artifacts/report.png."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from avhb.report.html import write_report
from report_fixtures import embedded_samples, make_run, write_big_run

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium binary on PATH (Debian: apt-get install -y chromium)")


def _render(page: Path, tmp: Path, screenshot: Path | None = None, query: str = "", height: int = 2200) -> str:
    """The page's DOM after its script ran; ``screenshot``: a PNG of the
    top ``height`` pixels (headless Chromium shoots the window, from the top)."""
    cmd = [_chromium(), *FLAGS, f"--user-data-dir={tmp / 'profile'}", f"--window-size=1280,{height}",
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
    # the browser script ran (it writes the match count) and rendered every sample from the embedded data
    assert '<span id="s-count" class="muted">24 of 24 samples match</span>' in dom
    assert len(re.findall(r'<details class="sample', dom)) == 24
    assert "0.00s 2.00s 4.00s 6.00s" in dom and "video -&gt; 3 frames (backend takes images only)" in dom
    # a sample's details: question, target, response and the judge's verdict table, the unparsable one flagged
    ko = _sample(dom, "ko-KR_0003")
    assert ko.startswith('<details class="sample err" data-task="curve_ko_KR"')
    assert "Question 3 about the festival in ko_KR?" in ko and "Answer 3" in ko and "Model answer 3" in ko
    assert '<span class="badge bad">judge failure</span>' in ko
    # judgements: the metric, then the judge role that gave the verdict
    assert re.search(r'<td>accuracy</td><td class="role">scorer</td><td class="verdict">null</td>'
                     r'<td><span class="bad">unparsable</span></td><td><pre>I cannot decide.</pre></td>', ko)
    ta = _sample(dom, "ta-IN_0000")
    assert re.search(r'<td class="verdict">2</td><td><span class="good">ok</span></td><td><pre>Rating: 2</pre>', ta)
    assert "accuracy=1" in ta
    # the hostile response is shown as text, and none of its code ran
    assert "&lt;script&gt;document.title=\"PWNED-SCRIPT\"" in dom
    assert "data-pwned" not in re.search(r"<body[^>]*>", dom).group(0)
    assert "<title>PWNED" not in dom and "<img" not in dom
    # screenshot kept as an artefact
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "report.png")


def _sample(dom: str, sid: str) -> str:
    """One rendered sample's HTML, up to the next sample."""
    start = re.search(rf'<details class="sample[^"]*" data-task="[^"]*" data-id="{sid}"', dom).start()
    end = dom.find('<details class="sample', start + 1)
    return dom[start:end if end > 0 else len(dom)]


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
    shown = re.findall(r'<details class="sample[^"]*" data-task="([^"]*)" data-id="[^"]*" data-error="(\d)"', dom)
    assert shown == [("vidpair_mcq", "1")]
    assert "video file missing: VidPair-Halluc/action_0002" in dom  # the one match is opened, its error shown
    dom = _render(page, tmp_path, query="?q=FESTIVAL%20ko-kr")  # words ANDed, case-insensitive
    assert '<span id="s-count" class="muted">4 of 24 samples match</span>' in dom
    dom = _render(page, tmp_path, query="?task=curve_ta_IN&judge=1")
    assert '<span id="s-count" class="muted">0 of 24 samples match</span>' in dom


def _ids(dom: str) -> list[str]:
    return re.findall(r'<details class="sample[^"]*" data-task="[^"]*" data-id="([^"]*)"', dom)


def test_search_and_paging_over_compressed_samples(tmp_path):
    """2,500 samples: the page embeds them compressed, decompresses them in
    the browser, and shows them 100 at a time; search and the page number
    come from the URL as a link would give them."""
    page = write_report(write_big_run(tmp_path / "big", 2500))
    assert embedded_samples(page.read_text())[0] == "gzip+base64"
    dom = _render(page, tmp_path)
    assert '<span id="s-count" class="muted">2500 of 2500 samples match (showing 1–100)</span>' in dom
    assert '<span id="s-page" class="muted">page 1 of 25</span>' in dom
    assert _ids(dom) == [f"s{i:05d}" for i in range(100)]
    assert re.search(r'<button type="button" id="s-prev" hidden="">', dom)
    assert re.search(r'<button type="button" id="s-next">', dom)
    # the hostile response of sample 3 is text, and did not run
    assert "&lt;script&gt;document.title=\"PWNED-SCRIPT\"" in dom and "data-pwned" not in re.search(r"<body[^>]*>", dom).group(0)
    last = _render(page, tmp_path, query="?page=25")
    assert _ids(last) == [f"s{i:05d}" for i in range(2400, 2500)] and "page 25 of 25" in last
    assert re.search(r'<button type="button" id="s-next" hidden="">', last)
    # judge failures only: every 7th sample, paged too
    failures = _render(page, tmp_path, query="?judge=1&page=2")
    assert "358 of 2500 samples match (showing 101–200)" in failures
    assert _ids(failures)[:2] == ["s00700", "s00707"]
    # search reaches the sample's texts (here its judge's raw reply), one match opens with its verdict
    one = _render(page, tmp_path, query="?q=%22idea%20about%201400%22".replace("%22", ""))
    assert '<span id="s-count" class="muted">1 of 2500 samples match</span>' in one
    assert re.search(r'<details class="sample err" data-task="big_task" data-id="s01400" data-error="0" '
                     r'data-judgefail="1" open="">', one)
    assert "<pre>no idea about 1400</pre>" in one and "Question number 1400 about clip 9?" in one
