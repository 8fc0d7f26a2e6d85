"""compare.html rendered by headless Chromium: a significant and a
non-significant difference side by side, the tests' table with what was
paired and left out, and the legend naming each test; the screenshot is
kept in tests/artifacts/compare_paired.png."""
import re
import shutil

import pytest

from tests.conftest import run_cli
from paired_fixtures import lines_of, write_run
from test_report_chromium import ARTIFACTS, _render
from test_report_paired import N, _columns

pytestmark = pytest.mark.slow


def test_compare_html_shows_the_tests_and_the_pairing_in_chromium(tmp_path):
    base, run = _columns()
    docs = [{"video": f"v{i // 8}"} for i in range(N)]
    a = write_run(tmp_path / "a", "model-a", {"qa": lines_of(base, docs)}, configs={"qa": {"cluster_key": "video"}})
    keep = {m: col[:180] for m, col in run.items()}  # b scored 180 of a's 200 samples
    b = write_run(tmp_path / "b", "model-b", {"qa": lines_of(keep, docs[:180])}, configs={"qa": {"cluster_key": "video"}})
    out = tmp_path / "compare.html"
    proc = run_cli("report", str(a), str(b), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    shot = tmp_path / "compare.png"
    dom = _render(out, tmp_path, shot)
    results = re.search(r'<table id="compare-table">.*?</table>', dom, re.S).group(0)
    row_b = re.search(r"<tr><td>model-b</td>.*?</tr>", results, re.S).group(0)
    cells = re.findall(r'<td class="([^"]*)">([^<]*)</td>', row_b)
    by_metric = dict(zip(["acc", "stable", "rating"], cells))
    assert by_metric["acc"][0] == "num sig-better" and by_metric["acc"][1].endswith("▲")  # significant, better
    assert by_metric["stable"][0] == "num" and "▲" not in by_metric["stable"][1] and "▼" not in by_metric["stable"][1]
    tests = re.search(r'<table class="tests" id="tests-1">.*?</table>', dom, re.S).group(0)
    acc = re.search(r'<tr class="sig"><td>qa / acc</td>.*?</tr>', tests, re.S).group(0)
    stable = re.search(r'<tr class="nosig"><td>qa / stable</td>.*?</tr>', tests, re.S).group(0)
    for row in (acc, stable):
        tds = re.findall(r"<td[^>]*>([^<]*)</td>", row)
        assert tds[5] == "cluster_paired_t" and tds[6] == "180" and tds[7] == "0 / 20" and tds[8] == "23"
    assert "model-b vs model-a" in dom and "(3 tests, Holm-adjusted)" in dom
    assert "compared on the 180 samples both scored" in dom and "left out 0 scored only by model-b and 20 only" in dom
    assert "cluster_paired_t: paired t test with the cluster-robust se of the differences" in dom
    assert dom.index('id="compare-table"') < dom.index('id="tests"')
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "compare_paired.png")
