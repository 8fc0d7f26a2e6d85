"""write_report on synthetic run folders (no browser needed)."""
import json
import re
from html.parser import HTMLParser

import pytest

from avhb.errors import UserError
from avhb.report.browser import browser_section, fmt_times
from avhb.report.html import write_report
from avhb.report.htmlkit import json_for_script
from avhb.report.rundata import load_run
from report_fixtures import XSS_LABEL, XSS_RESPONSE, make_run


class _Collect(HTMLParser):
    """Collects tags with attributes and the text of <script> elements."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self._in_script: dict | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append((self._in_script, ""))

    def handle_data(self, data):
        if self._in_script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None


def _parse(text: str) -> _Collect:
    p = _Collect()
    p.feed(text)
    return p


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    run = make_run(tmp_path_factory.mktemp("run") / "run1")
    path = write_report(run)
    return run, path, path.read_text(encoding="utf-8")


def test_report_written_with_results_and_charts(full_report):
    run, path, text = full_report
    assert path == run / "report.html"
    assert not list(run.glob(".report.html.*"))  # no temp file left behind
    # results table: value ± stderr and n, hand-computed for curve_ta_IN
    # ratings 2,1,0,2 -> scores 1,.5,0,1: mean .625, se sqrt((.6875/3)/4)=.2394
    row = re.search(r'<tr class="first"><td>curve_ta_IN</td>.*?</tr>', text).group(0)
    assert '<td class="num">0.6250</td><td class="num se">± 0.2394</td><td class="num">4</td>' in row
    assert "<td>curve</td><td>accuracy</td>" in text  # groups table
    # one family chart (curve; vidpair members share no metric) + 2 x 2 breakdown charts
    charts = re.findall(r'<figure class="chart" data-chart="([^"]*)">\s*<svg', text)
    assert charts == ["curve: per locale", "vidpair_binary by category", "vidpair_binary by level",
                      "vidpair_mcq by category", "vidpair_mcq by level"]
    # judges: failures, agreement, usage
    assert "kappa_linear" in text and "judge-a|judge-b" in text and "0.6100" in text
    assert re.search(r"<td>scorer</td><td class=\"num\">12</td><td class=\"num bad\">1</td>", text)
    assert "<dt>cost</dt><dd>0.0123</dd>" in text
    # sample browser: one entry per sample, flags for errors and judge failures
    assert text.count('<details class="sample') == 24
    assert text.count('data-error="1"') == 1 and text.count('data-judgefail="1"') == 1
    assert "0.00s 2.00s 4.00s 6.00s" in text  # frame times
    assert "video -&gt; 3 frames" in text  # adaptation, escaped


def test_report_is_self_contained(full_report):
    _, _, text = full_report
    p = _parse(text)
    for tag, attrs in p.tags:
        assert tag not in ("link", "iframe", "object", "embed", "img", "base"), tag
        for key in ("src", "href", "action", "data"):
            value = attrs.get(key)
            if value is not None and not (tag == "a" and value.startswith("#")):
                pytest.fail(f"<{tag} {key}={value!r}> references a resource")
    assert "@import" not in text and not re.search(r"url\(\s*['\"]?(https?:|//)", text)
    csp = [a for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]["content"]
    # executable scripts: exactly the inline browser script, and it has no src
    code = [(a, s) for a, s in p.scripts if a.get("type") != "application/json"]
    assert len(code) == 1 and "src" not in code[0][0] and "s-query" in code[0][1]


def test_model_text_is_escaped(full_report):
    _, _, text = full_report
    assert XSS_RESPONSE not in text
    assert "&lt;script&gt;document.title=&quot;PWNED-SCRIPT&quot;" in text
    assert "<img" not in text
    # dataset text is escaped too (a question containing markup)
    assert "Is the color cue &lt;b&gt;present&lt;/b&gt;?" in text
    # the secret in model args never reaches the report
    assert "sk-LEAKED-SECRET" not in text and '"api_key": "***"' in text.replace("&quot;", '"')


def test_embedded_json_cannot_close_its_script(tmp_path):
    run = make_run(tmp_path / "hostile", hostile_label=True)
    text = write_report(run).read_text(encoding="utf-8")
    p = _parse(text)
    [(attrs, payload)] = [(a, s) for a, s in p.scripts if a.get("id") == "avhb-data"]
    assert "</" not in payload and "<!--" not in payload
    data = json.loads(payload)
    assert data["model"] == XSS_LABEL  # round-trips exactly
    assert data["results"]["curve_ta_IN"]["accuracy"] == 0.625
    assert f"<h1>{XSS_LABEL}</h1>" not in text and "<h1>&lt;/script&gt;&lt;script&gt;" in text
    # only the two scripts we wrote exist
    assert len(p.scripts) == 2


def test_json_for_script_escapes():
    payload = {"a": "</script><!-- x & y > z", "b": [1, 2.5, None]}
    out = json_for_script(payload)
    assert "<" not in out and ">" not in out and "&" not in out
    assert json.loads(out) == payload


def test_partial_run_in_progress(tmp_path):
    run = make_run(tmp_path / "partial", complete=False)
    text = write_report(run).read_text(encoding="utf-8")
    assert "results for 3 of 5 tasks" in text
    assert re.search(r"<td>vidpair_mcq</td><td colspan=\"10\" class=\"pending\">no results yet "
                     r"\(6 samples logged so far\)</td>", text)
    # the half-written last line is reported, the rest is shown
    assert "samples/vidpair_mcq.jsonl line 7: not JSON (skipped)" in text
    assert text.count('<details class="sample') == 24
    # no breakdown charts without breakdowns; the curve family chart remains
    assert re.findall(r'data-chart="([^"]*)"', text) == ["curve: per locale"]


def test_minimal_folders(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    text = write_report(empty).read_text(encoding="utf-8")
    assert "No results yet." in text and "run.json not found." in text and "No sample logs yet." in text
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "results.json").write_text("{not json")
    (broken / "run.json").write_text("[]")
    text = write_report(broken).read_text(encoding="utf-8")
    assert "results.json: unreadable" in text and "run.json: not a JSON object" in text
    with pytest.raises(UserError, match="no such run folder"):
        write_report(tmp_path / "missing")


def test_sample_cap_keeps_errors(tmp_path):
    run = make_run(tmp_path / "cap")
    data = load_run(run, max_samples_per_task=2)
    mcq = data.samples["vidpair_mcq"]
    assert mcq.total == 6 and mcq.shown == 2
    # sample 4 has the error and is kept; then the first ordinary one
    assert [r["id"] for r in mcq.rows] == ["vidpair_mcq_color_0000", "vidpair_mcq_action_0004"]
    ko = data.samples["curve_ko_KR"]
    assert [r["id"] for r in ko.rows] == ["ko-KR_0000", "ko-KR_0003"]  # 0003: judge failure
    text = browser_section(data)
    assert "vidpair_mcq: 2 of 6 samples included" in text
    assert text.count('<details class="sample') == 10  # 3 curve tasks x 2 + 2 x 2


def test_fmt_times():
    assert fmt_times([0, 1.5, 12.25]) == "0.00s 1.50s 12.25s"
    assert fmt_times([]) == "" and fmt_times(None) == ""


def test_element_ids_unique_and_references_resolve(full_report):
    _, _, text = full_report
    ids = re.findall(r'\bid="([^"]+)"', text)
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes, sorted(dupes)[:5]
    refs = set(re.findall(r'(?:href="#|url\(#)([^")]+)', text))
    assert refs and refs <= set(ids)


def test_a_task_note_is_shown_under_the_results(tmp_path):
    run = make_run(tmp_path / "noted")
    manifest = json.loads((run / "run.json").read_text())
    manifest["tasks"]["vidpair_mcq"]["config"]["report"] = {"note": "this scorer is <ours>"}
    (run / "run.json").write_text(json.dumps(manifest))
    html = write_report(run).read_text()
    assert '<p class="note">vidpair_mcq: this scorer is &lt;ours&gt;</p>' in html


def test_report_caps_huge_texts_and_the_samples_file_keeps_them(tmp_path):
    """Issue 15, defect 13: a 120 MB field made a 126 MB report.html."""
    run = tmp_path / "big"
    (run / "samples").mkdir(parents=True)
    huge = "word " * 2_000_000  # 10 MB
    row = {"id": "s0", "repeat": 0, "doc": {"q": "x"}, "prompt": huge, "response": huge, "target": "t",
           "extracted": huge, "scores": {}, "judgements": {"scorer": {"value": 1, "ok": True, "raw": huge}},
           "error": None}
    (run / "samples" / "t.jsonl").write_text(json.dumps(row) + "\n")
    (run / "results.json").write_text(json.dumps({"results": {"t": {"samples": 1, "errors": 0}}}))
    size = write_report(run).stat().st_size
    assert size < 1_000_000, size
    assert "more characters: the full text is in samples/&lt;task&gt;.jsonl" in (run / "report.html").read_text()
