"""What a researcher sees first: the quick-start run's report and a
two-run comparison, made by the real CLI (the quick-start's four tasks on
their sample packs, with the offline ``random`` backend standing in for
``local`` so the test takes seconds), opened in headless Chromium;
screenshots are kept in tests/artifacts/."""
import json
import re
import shutil

import pytest

from tests.conftest import run_cli
from test_report_chromium import ARTIFACTS, _render

pytestmark = pytest.mark.slow

QUICK = ["--tasks", "vidpair_binary,vidpair_mcq,curve_ta_IN,curve_ko_KR", "--judge", "*=random", "--sample-data"]


def test_quick_start_report_and_comparison_in_chromium(tmp_path):
    a, b = tmp_path / "quickstart", tmp_path / "quickstart_noaudio"
    first = run_cli(*QUICK, "--model", "random,seed=0", "--output-dir", str(a))
    assert first.returncode == 0, first.stderr
    # the printed table leads with headline metrics, counts as columns, and says what changed
    assert "| Samples | Errors | Judge fail." in first.stdout
    assert "- vidpair_binary: video not sent to random — the backend sees no pixels" in first.stdout
    second = run_cli(*QUICK, "--model", "random,seed=0", "--ablate", "no_audio", "--output-dir", str(b))
    assert second.returncode == 0, second.stderr

    shot = tmp_path / "quickstart.png"
    dom = _render(a / "report.html", tmp_path, shot)
    # first thing under the header: what the run changed, then the results with headline metrics first
    assert dom.index('class="notes"') < dom.index('id="results-table"')
    assert "video not sent to random" in dom
    table = re.search(r'<table id="results-table">.*?</table>', dom, re.S).group(0)
    first_rows = re.findall(r'<tr class="first"><td>([^<]+)</td><td>([^<]+)</td>', table)
    assert ("vidpair_binary", "wAcc") in first_rows and ("curve_ta_IN", "accuracy") in first_rows
    assert "unparsed" not in " ".join(m for _, m in first_rows)  # counts are columns, not metric rows
    charts = re.findall(r'data-chart="([^"]*)"', dom)
    assert charts and not any("unknown" in c or "_fp" in c for c in charts)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "quickstart_report.png")

    out = tmp_path / "compare.html"
    cmp = run_cli("report", str(a), str(b), "--output", str(out))
    assert cmp.returncode == 0, cmp.stderr
    shot = tmp_path / "compare.png"
    dom = _render(out, tmp_path, shot)
    diff = re.search(r'<table id="differences-table">.*?</table>', dom, re.S).group(0)
    assert "<td>ablations</td>" in diff and "no_audio" in diff
    assert "random:seed=0 · ablate no_audio" in dom or "ablate no_audio" in dom
    assert dom.index('id="differences"') < dom.index('id="compare-table"')
    shutil.copy(shot, ARTIFACTS / "compare_report.png")
    assert json.loads((b / "run.json").read_text())["ablations"] == ["no_audio"]
