"""Issue 15, defect 9: one error policy.  A sample that failed outside the
model is excluded from every metric and counted in ``errors`` per task,
per breakdown value and per group; the table marks tasks with errors."""
from __future__ import annotations

import json

import pytest

from avhb.runfolder.results import RunResults
from tests.conftest import run_cli


def test_failed_samples_are_excluded_and_counted_everywhere(testpack, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    easy = [{"id": f"e{i}", "q": f"easy {i}", "a": f"a{i}", "kind": "x" if i < 3 else "y"} for i in range(6)]
    hard = [{"id": f"h{i}", "q": f"hard {i}", "a": f"a{i}", "kind": "x", "know": i != 0} for i in range(3)]
    (data / "easy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in easy))
    (data / "hard.jsonl").write_text("".join(json.dumps(r) + "\n" for r in hard))
    out = tmp_path / "run"
    # the backend fails the prompt of "easy 1" (a failure outside the model)
    proc = run_cli("--tasks", "testpack/qa_all", "--model", "testpack/echo,fail_on=easy 1", "--data", f"testpack/qa={data}",
                   "--output-dir", str(out), "--no-report", "--max-errors", "100%")
    assert proc.returncode == 0, proc.stderr
    res = json.loads((out / "results.json").read_text())
    e = res["results"]["testpack/qa_easy"]
    assert e["errors"] == 1 and e["samples"] == 6
    assert e["exact"] == 1.0 and e["exact_n"] == 5  # never scored 0
    bx = res["breakdowns"]["testpack/qa_easy"]["kind"]["x"]
    by = res["breakdowns"]["testpack/qa_easy"]["kind"]["y"]
    assert (bx["samples"], bx["errors"], bx["exact_n"], bx["exact"]) == (3, 1, 2, 1.0)
    assert (by["samples"], by["errors"], by["exact_n"]) == (3, 0, 3)
    h = res["results"]["testpack/qa_hard"]
    assert h["errors"] == 0 and h["exact"] == pytest.approx(2 / 3)  # an unusable answer ("?") is still wrong
    g = res["groups"]["testpack/qa_all"]
    assert g["errors"] == 1 and g["samples"] == 9
    assert g["exact"] == pytest.approx((5 * 1.0 + 3 * 2 / 3) / 8)  # weighted by scored samples
    table = proc.stdout
    assert "testpack/qa_easy *" in table and "testpack/qa_hard *" not in table and "testpack/qa_all *" in table
    assert "excluded from the metrics" in table
    # the reader keeps the counts (the report and `avhb report` use it)
    typed = RunResults.from_json(res)
    assert typed.tasks["testpack/qa_easy"].breakdown_counts["kind"]["x"] == {"samples": 3, "errors": 1}
    assert typed.group_counts["testpack/qa_all"] == {"samples": 9, "errors": 1}
    assert RunResults.from_json(typed.to_json()).to_json() == typed.to_json()


# ---------------------------------------------------------------- issue 23, item 7: a judge that never answers

KEY = "sk-test-judge-0123456789"  # redacted from every message, so not a short string that occurs in them

def _scorer(body: dict) -> str:
    """The qa_judged scorer: 2 when the reference is in the response."""
    import re

    text = re.sub(r"</?data-[0-9a-f]+>", "", next(m["content"] for m in body["messages"] if m["role"] == "user"))
    ref = re.search(r"Reference: (\S+)", text).group(1)
    resp = re.search(r"Response: (.*)\nScore", text, re.S).group(1)
    return "2" if ref in resp else "0"


def _judged(out):
    return json.loads((out / "results.json").read_text())["results"]["testpack/qa_judged"]


@pytest.mark.parametrize("status,message", [
    (400, "Invalid value for 'messages'."), (401, "Incorrect API key provided."), (404, "The model does not exist."),
    (422, "Unprocessable request."),
])
def test_a_judge_answering_every_call_with_an_error_fails_the_run_naming_it(testpack, tmp_path, status, message):
    from tests.servers.openai_server import Fault, ScriptedServer

    body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": None}})
    with ScriptedServer(fault=lambda i, b: Fault(status=status, body=body)) as srv:
        out = tmp_path / "run"
        args = ("--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--sample-data", "--judge",
                f"scorer=openai:dead-judge,base_url={srv.base_url}", "--output-dir", str(out), "--no-report")
        proc = run_cli(*args, env={"OPENAI_API_KEY": KEY})
        assert proc.returncode == 1, proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("avhb: error: 6 of 6 samples failed (100.0% > --max-errors 5%)"), last
        assert "judge openai:dead-judge did not answer 6 questions (last: " in last and f"HTTP {status}: {message})" in last
        res = _judged(out)
        assert res["errors"] == 6 and res["judge_failures"] == 0 and res["Judged"] is None  # failed, not wrong
        assert "avhb: warning: testpack/qa_judged: Judged undefined: every sample failed (6 errors)" in proc.stderr
        lines = [json.loads(x) for x in (out / "samples" / "testpack__qa_judged.jsonl").read_text().splitlines()]
        assert all("judge openai:dead-judge (role scorer) did not answer: " in x["error"] and f"HTTP {status}" in x["error"]
                   for x in lines)
        # resumable: the failed judge calls are journaled as failures, so a re-run asks again
        srv.set_fault(None)
        srv.set_reply(_scorer)
        sent = srv.count
        again = run_cli(*args, env={"OPENAI_API_KEY": KEY})
        assert again.returncode == 0, again.stderr
        assert srv.count == sent + 6
        res = _judged(out)
        assert res["errors"] == 0 and res["Judged"] == 1.0 and res["Judged_n"] == 6


def test_a_judge_that_stops_answering_opens_its_breaker(testpack, tmp_path):
    from tests.servers.openai_server import Fault, ScriptedServer

    data = tmp_path / "data"
    data.mkdir()
    (data / "easy.jsonl").write_text("".join(json.dumps({"id": f"e{i}", "q": f"q {i}", "a": f"a{i}"}) + "\n"
                                             for i in range(40)))
    body = json.dumps({"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}})
    with ScriptedServer(fault=lambda i, b: Fault(status=401, body=body, sleep=0.6)) as srv:
        out = tmp_path / "run"
        proc = run_cli("--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--data", f"testpack/qa={data}",
                       "--judge", f"scorer=openai:dead-judge,base_url={srv.base_url},concurrency=1",
                       "--output-dir", str(out), "--no-report", env={"OPENAI_API_KEY": KEY})
        assert proc.returncode == 1, proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        assert f"stopped sending to openai:dead-judge at {srv.base_url}" in last, last
        assert "HTTP 401: Incorrect API key provided.)" in last and "samples not attempted" in last
        assert 10 <= srv.count < 40  # it stopped asking
    res = _judged(out)
    assert res["errors"] == 40 and res["Judged"] is None


def test_every_verdict_unparsable_is_counted_and_said(testpack, tmp_path):
    from tests.servers.openai_server import ScriptedServer

    with ScriptedServer(reply=lambda body: "I would rather not say.") as srv:
        out = tmp_path / "run"
        proc = run_cli("--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--sample-data", "--judge",
                       f"scorer=openai:shy,base_url={srv.base_url}", "--output-dir", str(out),
                       env={"OPENAI_API_KEY": KEY})
        assert srv.count == 12  # each asked, re-asked once (retries: 1), then counted
    assert proc.returncode == 0, proc.stderr  # the judge answered: its replies are judge failures, not errors
    res = _judged(out)
    assert res["judge_failures"] == 6 and res["errors"] == 0 and res["Judged"] is None
    line = "testpack/qa_judged: Judged undefined: no judge verdict could be read (6 judge failures)"
    assert f"avhb: warning: {line}" in proc.stderr
    report = (out / "report.html").read_text()
    assert "Headline metrics without a value" in report and line in report
