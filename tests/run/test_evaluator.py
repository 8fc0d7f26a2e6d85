"""End-to-end runs of the evaluator through the CLI with the test plugin:
results shape, groups, breakdowns, judges, resume after SIGKILL, re-scoring
without calls, user errors."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli


def _results(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


def _samples(run: Path, task: str) -> list[dict]:
    path = run / "samples" / f"{task.replace('/', '__')}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_run_writes_folder_with_results_groups_and_breakdowns(testpack, tmp_path):
    out = tmp_path / "run"
    proc = run_cli("--tasks", "testpack/qa_all", "--model", "testpack/echo", "--sample-data",
                   "--output-dir", str(out), "--no-report")
    assert proc.returncode == 0, proc.stderr
    res = _results(out)
    easy, hard = res["results"]["testpack/qa_easy"], res["results"]["testpack/qa_hard"]
    assert easy["exact"] == 1.0 and easy["exact_n"] == 6 and easy["samples"] == 6
    assert hard["exact"] == pytest.approx(1 / 3) and hard["exact_stderr"] == pytest.approx(1 / 3)
    # group weighted by size: (6*1 + 3*(1/3)) / 9
    assert res["groups"]["testpack/qa_all"]["exact"] == pytest.approx(7 / 9)
    assert res["breakdowns"]["testpack/qa_easy"]["kind"]["x"]["exact_n"] == 3
    assert "testpack/qa_hard" in proc.stdout and "0.3333" in proc.stdout  # the printed table
    run = json.loads((out / "run.json").read_text())
    assert run["plugins"]["testpack"] == "avhb-testpack 0.1"
    assert run["model"]["kind"] == "testpack/echo"
    assert set(run["tasks"]) == {"testpack/qa_easy", "testpack/qa_hard"}
    line = _samples(out, "testpack/qa_hard")[1]
    assert line["id"] == "h1" and line["response"] == "?" and line["scores"] == {"exact": 0.0}
    assert "ANSWER" in line["prompt"] and line["prompt_hash"]


def test_limit_samples_and_predict_only(testpack, tmp_path):
    out = tmp_path / "run"
    proc = run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data", "--samples", "e1,e3",
                   "--predict-only", "--output-dir", str(out), "--no-report")
    assert proc.returncode == 0, proc.stderr
    lines = _samples(out, "testpack/qa_easy")
    assert [l["id"] for l in lines] == ["e1", "e3"] and all(l["scores"] == {} for l in lines)
    assert "exact" not in _results(out)["results"]["testpack/qa_easy"]


def test_predict_only_binds_no_metric_judge(testpack, tmp_path):
    """--predict-only computes no metric, so a metric's judge role is not
    bound: a judge that could not be built (no API key) does not stop it,
    and run.json names no judge panel (Task.bound_roles)."""
    out = tmp_path / "run"
    proc = run_cli("--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--sample-data", "--predict-only",
                   "--judge", "scorer=openai:gpt-4.1-mini", "--output-dir", str(out), "--no-report",
                   unset=("OPENAI_API_KEY",))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "run.json").read_text())["judge_panels"] == {}
    assert all(l["scores"] == {} for l in _samples(out, "testpack/qa_judged"))


def test_judged_task_and_rescoring_makes_no_calls(testpack, tmp_path):
    out, calls = tmp_path / "run", tmp_path / "calls.txt"
    judge = f"scorer=testpack/keyword,calls={calls}"
    proc = run_cli("--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--sample-data",
                   "--judge", judge, "--output-dir", str(out), "--no-report")
    assert proc.returncode == 0, proc.stderr
    first = _results(out)["results"]["testpack/qa_judged"]
    assert first["Judged"] == 1.0 and first["judge_failures"] == 0
    n_calls = calls.read_text().count("judge")
    assert n_calls == 6
    proc = run_cli("score", str(out))
    assert proc.returncode == 0, proc.stderr
    assert calls.read_text().count("judge") == n_calls  # zero new judge calls
    assert _results(out)["results"]["testpack/qa_judged"] == first


def test_unparsable_judge_is_counted_not_guessed(testpack, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"id": "a", "q": "q1", "a": "NONSENSE"}, {"id": "b", "q": "q2", "a": "yes"}]
    (data / "easy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    proc = run_cli("--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--data", f"testpack/qa={data}",
                   "--output-dir", str(out), "--no-report")
    assert proc.returncode == 0, proc.stderr
    res = _results(out)["results"]["testpack/qa_judged"]
    assert res["judge_failures"] == 1 and res["Judged_n"] == 1 and res["Judged"] == 1.0
    bad = _samples(out, "testpack/qa_judged")[0]
    assert bad["judgements"]["scorer"]["ok"] is False and bad["scores"]["Judged"] is None


def test_backend_error_is_recorded_and_run_goes_on(testpack, tmp_path):
    out = tmp_path / "run"
    common = ["--tasks", "testpack/qa_easy", "--model", "testpack/echo,fail_on=question 2", "--sample-data",
              "--output-dir", str(out), "--no-report"]
    proc = run_cli(*common, "--max-errors", "20%")
    assert proc.returncode == 0, proc.stderr
    res = _results(out)["results"]["testpack/qa_easy"]
    # the failed sample is excluded and counted, not scored as wrong (docs/errors.md)
    assert res["errors"] == 1 and res["exact"] == 1.0 and res["exact_n"] == 5
    assert _samples(out, "testpack/qa_easy")[2]["error"] == "scripted failure"
    assert "testpack/qa_easy *" in proc.stdout  # the table marks a task with errors
    # the default error budget (5%) is exceeded by 1 of 6: exit 1, saying so, results kept
    proc = run_cli(*common)
    assert proc.returncode == 1
    assert "1 of 6 samples failed (16.7% > --max-errors 5%)" in proc.stderr and "re-running" in proc.stderr
    assert _results(out)["results"]["testpack/qa_easy"]["exact_n"] == 5 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--tasks", "nope"], "unknown task or group 'nope'"),
    (["--tasks", "testpack/qa_easy", "--data", "junk"], "--data 'junk': expected NAME=PATH"),
    (["--tasks", "testpack/qa_easy"], "avhb prepare testpack/qa_easy"),
    (["--tasks", "testpack/qa_easy", "--sample-data", "--ablate", "no_smell"], "unknown switch"),
    (["--tasks", "testpack/qa_easy", "--sample-data", "--model", "nosuch:thing"], "unknown backend 'nosuch'"),
    # issue 15, defect 13: a bad generation setting fails the command, not every sample
    (["--tasks", "testpack/qa_easy", "--sample-data", "--gen-kwargs", "max_tokens=lots"],
     "--gen-kwargs max_tokens='lots': must be a whole number >= 1"),
    (["--tasks", "testpack/qa_easy", "--sample-data", "--gen-kwargs", "temperature=-1"],
     "--gen-kwargs temperature=-1: must be a number >= 0"),
    (["--tasks", "testpack/qa_easy", "--sample-data", "--max-errors", "lots"], "--max-errors 'lots': give a share"),
    # argparse's own errors are one line too
    (["--tasks", "testpack/qa_easy", "--seed", "x"], "argument --seed: 'x': an integer, or four integers or None"),
    (["--tasks", ",", "--sample-data"], "--tasks names no task"),
])
def test_user_errors_exit_2_with_one_line(testpack, tmp_path, args, message):
    proc = run_cli(*args, "--output-dir", str(tmp_path / "run"))
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def _wait_for_lines(path: Path, n: int, timeout: float = 60) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {n} lines")


def test_resume_after_sigkill_matches_uninterrupted_run(testpack, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"id": f"s{i}", "q": f"question {i}", "a": f"a{i % 7}", "kind": "k"} for i in range(60)]
    (data / "easy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    hard = [dict(r, id=f"h{i}", q=f"hard {i}") for i, r in enumerate(rows[:20])]
    (data / "hard.jsonl").write_text("".join(json.dumps(r) + "\n" for r in hard))
    common = ["--tasks", "testpack/qa_all", "--data", f"testpack/qa={data}", "--no-report"]

    ref = tmp_path / "ref"
    proc = run_cli(*common, "--model", "testpack/echo", "--output-dir", str(ref))
    assert proc.returncode == 0, proc.stderr

    out, calls = tmp_path / "killed", tmp_path / "calls.txt"
    model = f"testpack/echo,delay=0.02,concurrency=2,calls={calls}"
    env = dict(os.environ)
    victim = subprocess.Popen([sys.executable, "-m", "avhb.cli", *common, "--model", model, "--output-dir", str(out)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_lines(calls, 25)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    assert not (out / "results.json").exists() or "testpack/qa_hard" not in _results(out)["results"]
    sent_before = len(calls.read_text().splitlines())
    journal_lines = (out / "journal" / "responses.jsonl").read_text().splitlines()

    proc = run_cli(*common, "--model", model, "--output-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    total = len(calls.read_text().splitlines())
    # every sample finished before the kill is not re-sent; at most the in-flight ones (concurrency 2) repeat
    assert total - sent_before == 80 - len([l for l in journal_lines if l.strip().endswith("}")])
    assert total <= 80 + 2
    assert _results(out)["results"] == _results(ref)["results"]
    assert _results(out)["groups"] == _results(ref)["groups"]
    for task in ("testpack/qa_easy", "testpack/qa_hard"):
        strip = lambda rows: [{k: v for k, v in r.items() if k != "prompt_hash"} for r in rows]
        assert strip(_samples(out, task)) == strip(_samples(ref, task))


def test_torn_journal_line_is_skipped(tmp_path):
    from avhb.runfolder.journal import Journal

    j = Journal(tmp_path)
    j.put("responses", "k1", {"response": "a"})
    j.close()
    with open(tmp_path / "responses.jsonl", "ab") as fh:
        fh.write(b'{"key": "k2", "respo')  # killed mid-write
    j2 = Journal(tmp_path)
    assert j2.get("responses", "k1")["response"] == "a" and j2.get("responses", "k2") is None
    j2.put("responses", "k3", {"response": "c"})
    j2.close()
    assert Journal(tmp_path).get("responses", "k3")["response"] == "c"


def test_score_uses_the_recorded_backend_identity_and_refuses_unfinished_runs(testpack, tmp_path):
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({"question 1": "ans1", "question 2": "wrong"}))
    out = tmp_path / "run"
    common = ["--tasks", "testpack/qa_easy", "--sample-data", "--output-dir", str(out), "--no-report"]
    proc = run_cli(*common, "--model", f"scripted,replies={replies}", "--max-errors", "100%")
    assert proc.returncode == 0, proc.stderr
    before = _results(out)["results"]["testpack/qa_easy"]
    assert before["errors"] == 4  # unmatched prompts are recorded errors, not guesses
    # the scripted backend's identity includes a hash of its replies file: score must reuse the recorded one
    proc = run_cli("score", str(out))
    assert proc.returncode == 0, proc.stderr
    assert _results(out)["results"]["testpack/qa_easy"] == before
    # an unfinished run (a journal line lost) is refused, and its samples are left alone
    samples_before = (out / "samples" / "testpack__qa_easy.jsonl").read_text()
    journal = out / "journal" / "responses.jsonl"
    lines = journal.read_text().splitlines()
    ok_lines = [l for l in lines if '"error": null' in l]
    journal.write_text("\n".join(l for l in lines if l != ok_lines[0]) + "\n")
    proc = run_cli("score", str(out))
    assert proc.returncode == 2 and "not in" in proc.stderr and "resume it" in proc.stderr
    assert (out / "samples" / "testpack__qa_easy.jsonl").read_text() == samples_before


def test_metric_needing_an_undeclared_judge_role_fails_before_any_call(testpack, tmp_path):
    calls = tmp_path / "calls.txt"
    task_dir = testpack / "avhb_testpack" / "tasks" / "qa"
    bad = task_dir / "needs_judge.yaml"
    bad.write_text("include: _base.yaml\ntask: qa_needs_judge\ndataset_kwargs:\n  data_files: easy.jsonl\n"
                   "metric_list:\n  - metric: judge_012\n")
    try:
        proc = run_cli("--tasks", "testpack/qa_needs_judge", "--model", f"testpack/echo,calls={calls}", "--sample-data",
                       "--output-dir", str(tmp_path / "run"), "--no-report")
    finally:
        bad.unlink()
    assert proc.returncode == 2
    assert "metric 'judge_012' needs judge role(s) scorer" in proc.stderr
    assert not calls.exists()  # no model call was made


def test_partial_group_is_not_scored(testpack, tmp_path):
    out = tmp_path / "run"
    proc = run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data", "--output-dir", str(out),
                   "--no-report")
    assert proc.returncode == 0, proc.stderr
    res = _results(out)
    assert res["groups"] == {} and res["partial_groups"] == {"testpack/qa_all": "1/2 tasks run"}


@pytest.mark.parametrize("flag, message", [
    (["--data", "qaa=/tmp"], "--data qaa=...: no task of this run is named, tagged or grouped 'qaa'"),
    (["--judge", "scorr=testpack/keyword"], "--judge scorr=...: no task of this run declares judge role 'scorr'"),
    (["--limit", "-1"], "--limit -1: must be 0 or more"),
    (["--repeats", "0"], "--repeats 0: must be 1 or more"),
])
def test_names_that_match_nothing_are_errors(testpack, tmp_path, flag, message):
    proc = run_cli("--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--sample-data", *flag,
                   "--output-dir", str(tmp_path / "run"))
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


@pytest.mark.parametrize("flags, message", [
    # the bare spelling of a plugin's (namespaced) pack name: said before any data is looked for
    (["--data", "qa=DATA"], "--data qa=...: no task of this run is named, tagged or grouped 'qa'; "
                            "did you mean testpack/qa?"),
    # the Hub dataset id instead of the pack's name
    (["--data", "avhb-test/qa=DATA"], "grouped 'avhb-test/qa'; did you mean testpack/qa?"),
    # a name that matches, but that every task it names shadows with another --data entry: its path is ignored
    (["--data", "testpack/qa=DATA", "--data", "testpack/qa_all=DATA"],
     "--data testpack/qa_all=...: ignored: every task it names reads --data testpack/qa=... first"),
])
def test_data_names_that_no_task_reads_are_errors(testpack, tmp_path, flags, message):
    data = tmp_path / "data"
    data.mkdir()
    (data / "easy.jsonl").write_text(json.dumps({"id": "z", "q": "q", "a": "ans"}) + "\n")
    (data / "hard.jsonl").write_text(json.dumps({"id": "y", "q": "q", "a": "ans"}) + "\n")
    proc = run_cli("--tasks", "testpack/qa_all", "--model", "testpack/echo",
                   *[f.replace("DATA", str(data)) for f in flags], "--output-dir", str(tmp_path / "run"))
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_data_flag_accepts_a_group_name(testpack, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "easy.jsonl").write_text(json.dumps({"id": "z", "q": "q", "a": "ans"}) + "\n")
    (data / "hard.jsonl").write_text(json.dumps({"id": "y", "q": "q", "a": "ans"}) + "\n")
    out = tmp_path / "run"
    proc = run_cli("--tasks", "testpack/qa_all", "--model", "testpack/echo", "--data", f"testpack/qa_all={data}",
                   "--output-dir", str(out), "--no-report")
    assert proc.returncode == 0, proc.stderr
    assert _results(out)["results"]["testpack/qa_easy"]["samples"] == 1


def test_failed_responses_are_retried_on_resume(testpack, tmp_path):
    out, calls = tmp_path / "run", tmp_path / "calls.txt"
    common = ["--tasks", "testpack/qa_easy", "--sample-data", "--output-dir", str(out), "--no-report",
              "--max-errors", "100%"]
    proc = run_cli(*common, "--model", f"testpack/echo,calls={calls},fail_on=question 2")
    assert proc.returncode == 0 and _results(out)["results"]["testpack/qa_easy"]["errors"] == 1
    assert len(calls.read_text().splitlines()) == 6
    # the same model (same identity) again: only the failed sample is re-sent
    proc = run_cli(*common, "--model", f"testpack/echo,calls={calls},fail_on=question 2")
    assert proc.returncode == 0
    assert calls.read_text().splitlines()[6:] == ["e2"]


def test_a_finished_task_is_kept_until_a_pack_file_it_reads_changes(testpack_copy, tmp_path):
    """The same command on a finished run keeps the task (its fingerprint in
    run.json is unchanged); editing the judge's prompt file, which lives in a
    subfolder of the pack, runs it again (a new fingerprint)."""
    folder = testpack_copy / "avhb_testpack" / "tasks" / "qa"
    (folder / "prompts").mkdir()
    prompt = folder / "prompts" / "scorer.txt"
    prompt.write_text("Question: {{question}}\nReference: {{reference}}\nResponse: {{response}}\nScore 0, 1 or 2.")
    (folder / "prompted.yaml").write_text(
        "include: _base.yaml\ntask: qa_prompted\ndataset_kwargs:\n  data_files: easy.jsonl\n"
        "metric_list:\n  - function: hooks.Judged\njudges:\n  scorer:\n    default: testpack/keyword\n"
        "    prompt_file: prompts/scorer.txt\n    parser: score_0_2\n")
    out = tmp_path / "run"
    command = ("--tasks", "testpack/qa_prompted", "--model", "testpack/echo", "--sample-data", "--no-report",
               "--output-dir", str(out))

    def fingerprint() -> str:
        proc = run_cli(*command)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads((out / "run.json").read_text())["finished"]["testpack/qa_prompted"]["fingerprint"]

    first = fingerprint()
    assert fingerprint() == first
    prompt.write_text(prompt.read_text() + "\nAnswer with the digit only.")
    os.utime(prompt, (time.time() + 5, time.time() + 5))
    assert fingerprint() != first
