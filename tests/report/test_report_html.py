"""write_report on synthetic run folders (no browser needed)."""
import json
import os
import re
from html.parser import HTMLParser

import pytest

from avhb.errors import UserError
from avhb.report.browser import MAX_STEP_TEXT, MAX_TEXT, MAX_TRAJECTORY, OMITTED, browser_section, embed, fmt_times
from avhb.report.html import write_report
from avhb.report.htmlkit import json_for_script
from avhb.report.rundata import load_run, read_samples
from report_fixtures import (XSS_LABEL, XSS_RESPONSE, embedded_rows, embedded_samples, make_run, write_big_run,
                             write_long_walk)


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
    assert '<section id="usage">' in text and '<a href="#usage">Usage</a>' in text
    # sample browser: every sample embedded once as data (rendered by the page's script), none as HTML
    rows = embedded_rows(text)
    assert len(rows) == 24 and '<details class="sample' not in text
    assert sum(bool(r["error"]) for _, r in rows) == 1
    assert sum(any(not j["ok"] for j in r["judgements"].values()) for _, r in rows) == 1
    assert [t for t, _ in rows[:4]] == ["curve_ta_IN"] * 4  # tasks in results order
    mcq = [r for t, r in rows if t == "vidpair_mcq"]
    assert mcq[0]["adaptations"] == ["video -> 3 frames (backend takes images only)"]


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
    assert XSS_RESPONSE not in text and "<img" not in text and "<b>" not in text
    # model and dataset text travel as JSON data with every <, > and & escaped, and read back exactly
    assert "\\u003cscript\\u003edocument.title=" in text
    rows = dict((r["id"], r) for _, r in embedded_rows(text))
    assert rows["vidpair_mcq_action_0001"]["response"] == XSS_RESPONSE
    assert rows["vidpair_mcq_color_0000"]["doc"]["question"] == "Is the color cue <b>present</b>?"
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
    [(attrs, samples)] = [(a, s) for a, s in p.scripts if a.get("id") == "avhb-samples"]
    assert "</" not in samples and "<!--" not in samples
    # only the three scripts we wrote exist (two of them inert data)
    assert len(p.scripts) == 3


def test_json_for_script_escapes():
    payload = {"a": "</script><!-- x & y > z", "b": [1, 2.5, None]}
    out = json_for_script(payload)
    assert "<" not in out and ">" not in out and "&" not in out
    assert json.loads(out) == payload


def test_partial_run_in_progress(tmp_path):
    run = make_run(tmp_path / "partial", complete=False)
    text = write_report(run).read_text(encoding="utf-8")
    assert "results for 3 of 5 tasks" in text
    assert re.search(r"<td>vidpair_mcq</td><td colspan=\"12\" class=\"pending\">no results yet "
                     r"\(6 samples logged so far\)</td>", text)
    # the half-written last line is reported, the rest is shown
    assert "samples/vidpair_mcq.jsonl line 7: not JSON (skipped)" in text
    assert len(embedded_rows(text)) == 24
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


def test_lines_that_are_not_samples_and_an_unreadable_file_are_listed(tmp_path):
    """The report lists each bad line of a samples file (avhb.runfolder.samples'
    policy) and shows the rest; a samples file it cannot read is one problem."""
    run = tmp_path / "run"
    (run / "samples").mkdir(parents=True)
    good = [json.dumps({"id": f"s{i}", "response": "r", "error": None}) + "\n" for i in range(3)]
    (run / "samples" / "t.jsonl").write_bytes(
        (good[0] + "[1, 2]\n" + good[1] + '"text"\n').encode() + b'{"id": "\xff"}\n' + (good[2] + "{torn").encode())
    (run / "samples" / "gone.jsonl").mkdir()  # in samples/, under a samples file's name, but no file
    data = load_run(run)
    assert [r["id"] for r in data.samples["t"].rows] == ["s0", "s1", "s2"] and data.samples["t"].total == 3
    assert data.problems == ["samples/gone.jsonl: unreadable (Is a directory)",
                             "samples/t.jsonl line 2: not an object (skipped)",
                             "samples/t.jsonl line 4: not an object (skipped)",
                             "samples/t.jsonl line 5: not UTF-8 (skipped)",
                             "samples/t.jsonl line 7: not JSON (skipped)"]
    text = write_report(run).read_text(encoding="utf-8")
    assert "samples/t.jsonl line 5: not UTF-8 (skipped)" in text and "samples/gone.jsonl: unreadable" in text


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
    assert len(embedded_rows(text)) == 10  # 3 curve tasks x 2 + 2 x 2


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
    [(_, shown)] = embedded_rows((run / "report.html").read_text())
    assert shown["report_capped"] is True and len(shown["response"]) < MAX_TEXT + 100
    assert shown["response"].endswith("more characters: the full text is in samples/<task>.jsonl]")
    assert shown["judgements"]["scorer"]["raw"].startswith("word word") and shown["judgements"]["scorer"]["ok"] is True


def test_samples_past_the_cap_that_need_attention_are_found_without_parsing_the_rest(tmp_path, monkeypatch):
    """Past the cap, lines are scanned for an ``error`` or ``ok`` key that
    is not null / true, whatever the JSON spacing; only those are parsed."""
    from avhb.runfolder import samples

    parsed: list[str] = []
    real_loads = samples.json.loads
    monkeypatch.setattr(samples.json, "loads", lambda text: parsed.append(text) or real_loads(text))
    path = tmp_path / "t.jsonl"
    rows = [{"id": f"o{i}", "error": None, "judgements": {"j": {"ok": True}}} for i in range(3)]
    rows += [
        {"id": "compact-error", "error": "boom", "judgements": {}},  # written without spaces below
        {"id": "failed-verdict", "error": None, "judgements": {"j": {"ok": False, "value": None}}},
        {"id": "doc-has-error-key", "doc": {"error": "not a sample error"}, "error": None, "judgements": {}},
        {"id": "ordinary", "error": None, "judgements": {"j": {"ok": True}}},
    ]
    text = "".join(json.dumps(r, separators=(",", ":") if r["id"] == "compact-error" else None) + "\n" for r in rows)
    path.write_text(text + '{"id": "half-writ')  # a line still being written
    problems: list[str] = []
    kept = read_samples(path, 2, problems)
    assert [r["id"] for r in kept.rows] == ["compact-error", "failed-verdict"]  # flagged rows fill the cap first
    assert kept.total == 7 and kept.shown == 2
    assert problems == ["samples/t.jsonl line 8: not JSON (skipped)"]
    assert [real_loads(line)["id"] for line in kept.lines] == ["compact-error", "failed-verdict"]
    # parsed: the two lines before the cap was full, the three with a non-null error or non-true ok, the broken one
    assert [real_loads(t)["id"] for t in parsed[:-1]] == ["o0", "o1", "compact-error", "failed-verdict",
                                                           "doc-has-error-key"]
    parsed.clear()
    everything = read_samples(path, None, [])
    assert everything.total == 7 and len(everything.rows) == 7


def test_sample_data_is_compressed_when_that_pays(tmp_path):
    small = json.dumps({"a": "<b> & </script>"})
    assert embed(small) == ("json", small.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))
    assert json.loads(embed(small)[1]) == json.loads(small)
    run = write_big_run(tmp_path / "big", 3000)
    text = write_report(run).read_text()
    encoding, data = embedded_samples(text)
    assert encoding == "gzip+base64" and data["tasks"] == ["big_task"] and len(data["rows"][0]) == 3000
    assert data["rows"][0][3]["response"] == XSS_RESPONSE
    raw = (run / "samples" / "big_task.jsonl").stat().st_size
    assert os.path.getsize(run / "report.html") < raw / 3


def _stamp(path):
    st = path.stat()
    return st.st_mtime_ns, st.st_ino, path.read_bytes()


def test_the_report_is_not_rewritten_when_nothing_it_shows_changed(tmp_path):
    run = make_run(tmp_path / "run")
    report = write_report(run)
    first = _stamp(report)
    assert 'name="avhb-inputs"' in report.read_text()[:2000]
    assert _stamp(write_report(run)) == first  # same inputs: the page is left alone
    # run.json rewritten with the same bytes (a finished rerun): still the same page
    (run / "run.json").write_bytes((run / "run.json").read_bytes())
    assert _stamp(write_report(run)) == first
    manifest = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**manifest, "updated": "2030-01-01T00:00:00+00:00"}, indent=2))
    assert _stamp(write_report(run)) == first  # a stamp the page does not show
    # each input that changes what the page shows makes a new page
    results = json.loads((run / "results.json").read_text())
    results["results"]["curve_ta_IN"]["accuracy"] = 0.5
    (run / "results.json").write_text(json.dumps(results))
    second = _stamp(write_report(run))
    assert second != first and "0.5000" in report.read_text()
    with open(run / "samples" / "curve_de_DE.jsonl", "a") as fh:
        fh.write(json.dumps({"id": "late", "error": "arrived later", "judgements": {}}) + "\n")
    third = _stamp(write_report(run))
    assert third != second and any(r["id"] == "late" for _, r in embedded_rows(report.read_text()))
    assert _stamp(write_report(run, max_samples_per_task=1)) != third
    report.unlink()
    assert write_report(run).is_file()


def test_a_finished_rerun_leaves_report_html_untouched(tmp_path):
    """The default command twice over one run folder: the second finds every
    task finished and the report current, and does not rewrite it."""
    from tests.conftest import run_cli

    out = tmp_path / "run"
    cmd = ["--tasks", "vidpair_binary", "--model", "random,seed=0", "--sample-data", "--output-dir", str(out)]
    first = run_cli(*cmd)
    assert first.returncode == 0, first.stderr
    before = _stamp(out / "report.html")
    again = run_cli(*cmd)
    assert again.returncode == 0, again.stderr
    assert "finished earlier with the same settings" in again.stderr
    assert _stamp(out / "report.html") == before


def test_results_table_shows_the_interval_the_clustered_stderr_and_the_power(tmp_path):
    from paired_fixtures import lines_of, write_run

    docs = [{"video": f"v{i // 4}"} for i in range(40)]  # 10 videos of 4 questions
    acc = [float(i % 3 == 0 or i < 8) for i in range(40)]
    run = write_run(tmp_path / "r", "m", {"qa": lines_of({"acc": acc}, docs)}, configs={"qa": {"cluster_key": "video"}})
    flat = json.loads((run / "results.json").read_text())
    cell, power = flat["results"]["qa"], flat["power"]["qa"]["acc"]
    text = write_report(run).read_text()
    row = re.search(r'<tr class="first"><td>qa</td>.*?</tr>', text).group(0)
    assert f'>[{cell["acc_ci"][0]:.4f}, {cell["acc_ci"][1]:.4f}]</td>' in row
    assert f'± {cell["acc_stderr_clustered"]:.4f} (10 clusters)' in row
    assert 'title="Wilson score interval at the effective sample size' in row
    section = re.search(r'<section id="power">.*?</section>', text, re.S).group(0)
    assert (f"qa / acc</strong>: with these 40 samples in 10 clusters, a difference under "
            f"{100 * power['mde']:.1f} points would usually go unseen.") in section
    assert "Repeats" not in section
    # with repeats, what more of them would change
    lines = [{**line, "id": f"q{i // 3}", "repeat": i % 3} for i, line in enumerate(lines_of({"acc": acc[:36]}))]
    again = write_run(tmp_path / "k", "m", {"qa": lines}, repeats=3)
    section = re.search(r'<section id="power">.*?</section>', write_report(again).read_text(), re.S).group(0)
    assert "in 12 clusters" in section and "Repeats: 3 per sample" in section
    assert "with unlimited repeats" in section and "(the across-sample part does not shrink)" in section


def _usage_rows(text: str) -> dict[str, list[str]]:
    """The usage table's rows: 'model/<task>' or 'judges' -> its cells' texts."""
    table = re.search(r'<table id="usage-table">.*?</table>', text, re.S).group(0)
    out = {}
    for attrs, body in re.findall(r"<tr ([^>]*data-usage[^>]*)>(.*?)</tr>", table, re.S):
        who = re.search(r'data-usage="(\w+)"', attrs).group(1)
        task = re.search(r'data-task="([^"]*)"', attrs)
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)]
        out[f"{who}/{task.group(1)}" if task else who] = cells
    return out


def test_usage_shows_the_model_per_task_and_in_total_beside_the_judges(full_report):
    _, _, text = full_report
    rows = _usage_rows(text)
    assert list(rows) == ["model/curve_ta_IN", "model/curve_ko_KR", "model/curve_de_DE", "model/vidpair_binary",
                          "model/vidpair_mcq", "model/total", "judges"]
    # who, task, calls, failed, from the journal, prompt, completion, cost, p50, p95, latencies
    assert rows["model/curve_ta_IN"] == ["model", "curve_ta_IN", "4", "0", "-", "4,000", "28", "0.0084",
                                         "0.81s", "2.41s", "4"]
    assert rows["model/vidpair_binary"][8:] == ["4.2ms", "7.1ms", "6"]  # under 10 ms: milliseconds, not 0.00s
    assert rows["model/vidpair_mcq"][3] == "1" and rows["model/vidpair_mcq"][8:] == ["9.87s", "14.5s", "6"]
    # a task whose calls recorded no latency and no price: said, not shown as 0
    assert rows["model/curve_de_DE"][7:] == ["unknown", "not recorded"]
    assert rows["model/total"] == ["model", "total", "23", "1", "-", "23,000", "161", "0.0399", "1.23s", "14.5s", "20"]
    assert rows["judges"] == ["judges (every role)", "all tasks", "24", "-", "-", "9,000", "240", "0.0123",
                              "not recorded"]
    assert re.search(r'<td class="num bad">1</td>', re.search(r'data-task="vidpair_mcq".*?</tr>', text).group(0))


def test_a_run_without_model_usage_still_renders_its_usage(tmp_path):
    """results.json written before usage.model was recorded: the judges' row,
    and a line saying where the model's usage would come from."""
    run = make_run(tmp_path / "old", model_usage=False)
    text = write_report(run).read_text()
    assert list(_usage_rows(text)) == ["judges"]
    section = re.search(r'<section id="usage">.*?</section>', text, re.S).group(0)
    assert "The model's usage is not in this run's results.json" in section and "avhb score RUN_DIR" in section
    results = json.loads((run / "results.json").read_text())
    del results["judge_usage"]
    (run / "results.json").write_text(json.dumps(results))
    text = write_report(run).read_text()
    assert 'id="usage-table"' not in text and "The model's usage is not in this run's results.json" in text


def test_count_columns_are_explained_under_the_results(tmp_path):
    """Samples = documents × repeats with the run's numbers (the run's
    --repeats, else the task's YAML), and each count metric by the
    description its metric declares."""
    run = make_run(tmp_path / "counts")
    manifest = json.loads((run / "run.json").read_text())
    manifest["tasks"]["vidpair_binary"]["config"]["repeats"] = 3
    (run / "run.json").write_text(json.dumps(manifest))
    results = json.loads((run / "results.json").read_text())
    results["results"]["vidpair_binary"].update(ambiguous_steps=4.0, ambiguous_steps_n=6, vAcc_unparsed=2.0)
    results["metrics"] = {"vidpair_binary": {
        "vAcc": {"kind": "headline", "higher_is_better": True, "description": "video accuracy"},
        "ambiguous_steps": {"kind": "count", "higher_is_better": False,
                            "description": "turns where more than one <edge> fired"},
        "vAcc_unparsed": {"kind": "count", "higher_is_better": False, "description": "replies with no yes/no"}}}
    (run / "results.json").write_text(json.dumps(results))
    text = write_report(run).read_text()
    note = re.search(r'<dl class="kv" id="count-columns">.*?</dl>', text, re.S).group(0)
    section = re.search(r'<section id="results">.*?</section>', text, re.S).group(0)
    assert note in section and section.index('id="results-table"') < section.index(note)
    assert "<dt>Samples</dt>" in note and "Samples = documents × repeats" in note
    assert "curve_ta_IN 4 = 4 documents × 1 repeat;" in note and "vidpair_binary 6 = 2 documents × 3 repeats" in note
    for column in ("Errors", "Judge failures", "Unparsed", "Other counts"):
        assert f"<dt>{column}</dt>" in note
    assert "<li><code>ambiguous_steps</code>: turns where more than one &lt;edge&gt; fired</li>" in note
    assert "<li><code>vAcc_unparsed</code>: replies with no yes/no</li>" in note
    # the --repeats of the run wins over the task's YAML
    manifest["repeats"] = 2
    (run / "run.json").write_text(json.dumps(manifest))
    assert "vidpair_binary 6 = 3 documents × 2 repeats" in write_report(run).read_text()


def test_a_long_trajectory_is_embedded_bounded_and_says_what_it_left_out(tmp_path):
    """A 400-step trajectory of long replies: the page keeps the first and
    the last steps (each text cut to MAX_STEP_TEXT), one step saying how
    many were left out; the samples file keeps them all."""
    run = write_long_walk(tmp_path / "walk")
    steps = json.loads((run / "samples" / "walk.jsonl").read_text())["trajectory"]
    page = write_report(run)
    [(_, shown)] = embedded_rows(page.read_text())
    embedded = shown["trajectory"]
    assert len(json.dumps(embedded)) <= MAX_TRAJECTORY + 200
    omitted = [s for s in embedded if OMITTED in s]
    assert len(omitted) == 1 and omitted[0][OMITTED] == len(steps) - (len(embedded) - 1) > 0
    assert embedded[0]["step"] == "turn0" and embedded[-1]["step"] == "turn199"  # first and last kept
    first = embedded[0]["response"]
    assert first.startswith("reply 0 xxx") and len(first) < MAX_STEP_TEXT + 50
    assert first.endswith(f"… [{len('reply 0 ') + 5000 - MAX_STEP_TEXT} more characters]")
    edges = embedded[-1]["edges"]
    assert edges[0] == {"edge": 0, "to": "n0", "verdict": "no"} and edges[-1] == "… [30 more items]"
    assert shown["outputs"]["turns"] == "200"
    assert page.stat().st_size < 300_000
    assert len(json.loads((run / "samples" / "walk.jsonl").read_text())["trajectory"]) == 400
