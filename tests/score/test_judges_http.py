"""Judges bound to a real OpenAI-compatible server on 127.0.0.1: panels,
re-asks, failures counted, and re-scoring a run with zero judge calls."""
from __future__ import annotations

import json
import re

import pytest

from tests.conftest import run_cli
from tests.servers.openai_server import ScriptedServer


def judge_reply(body: dict) -> str:
    """Scores 2 when the reference appears in the response, else 0; replies
    nonsense for the reference 'ans3' (an unparsable judge); for the model
    name 'strict' it gives 1 instead of 2 (a disagreeing panel member)."""
    first = next(m["content"] for m in body["messages"] if m["role"] == "user")  # fenced fields: see judges.py
    first = re.sub(r"</?data-[0-9a-f]+>", "", first)
    ref = re.search(r"Reference: (\S+)", first).group(1)
    resp = re.search(r"Response: (.*)\nScore", first, re.S).group(1).strip()
    if ref == "ans3":
        return "I would rather not say."
    hit = ref.lower() in resp.lower()
    if body["model"] == "strict" and hit:
        return "1"
    return "2" if hit else "0"


def _results(out):
    return json.loads((out / "results.json").read_text())["results"]["testpack/qa_judged"]


def test_rescoring_makes_zero_judge_calls(testpack, tmp_path):
    with ScriptedServer(reply=judge_reply) as srv:
        out = tmp_path / "run"
        judge = f"scorer=openai:lenient,base_url={srv.base_url}"
        proc = run_cli("--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--sample-data",
                       "--judge", judge, "--output-dir", str(out), "--no-report", env={"OPENAI_API_KEY": "sk-test-123456789"})
        assert proc.returncode == 0, proc.stderr
        first = _results(out)
        calls = srv.count
        # 6 samples; 'ans3' is asked 1 + 1 re-ask (retries: 1), then counted as a failure
        assert calls == 5 + 2
        assert first["judge_failures"] == 1 and first["Judged_n"] == 5 and first["Judged"] == 1.0
        proc = run_cli("score", str(out), env={"OPENAI_API_KEY": "sk-test-123456789"})
        assert proc.returncode == 0, proc.stderr
        assert srv.count == calls  # zero judge calls
        assert _results(out) == first
        # the key never reaches the run folder
        for path in out.rglob("*"):
            if path.is_file():
                assert "sk-test-123456789" not in path.read_text(errors="replace")
        assert json.loads((out / "results.json").read_text())["judge_usage"]["calls"] == 0  # the re-score's usage


def test_panel_mean_of_two_judges(testpack, tmp_path):
    with ScriptedServer(reply=judge_reply) as srv:
        out = tmp_path / "run"
        proc = run_cli("--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--sample-data",
                       "--judge", f"scorer=openai:lenient,base_url={srv.base_url}",
                       "--judge", f"scorer=openai:strict,base_url={srv.base_url}",
                       "--output-dir", str(out), "--no-report", env={"OPENAI_API_KEY": "x"})
        assert proc.returncode == 0, proc.stderr
        res = _results(out)
        # each parsable sample: mean(2, 1) = 1.5 -> 0.75
        assert res["Judged"] == pytest.approx(0.75) and res["Judged_n"] == 5 and res["judge_failures"] == 1
        line = json.loads((out / "samples" / "testpack__qa_judged.jsonl").read_text().splitlines()[0])
        assert line["judgements"]["scorer"]["value"] == 1.5
        run = json.loads((out / "run.json").read_text())
        assert run["judges"]["scorer"] == ["openai:lenient", "openai:strict"]
