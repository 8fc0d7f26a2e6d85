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


# ---------------------------------------------------------------- issue 23, item 6: settings a model refuses

def _journal_lines(out, kind="judges"):
    return [json.loads(line) for line in (out / "journal" / f"{kind}.jsonl").read_text().splitlines() if line.strip()]


def test_a_judge_that_refuses_temperature_is_adapted_once_said_once_and_replays(testpack, tmp_path):
    from tests.servers.openai_server import refuse_settings

    # "reasoner-x" matches no known rule: the server's own 400s (OpenAI's error objects) are read once
    with ScriptedServer(reply=judge_reply, fault=refuse_settings("reasoner")) as srv:
        out = tmp_path / "run"
        args = ("--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--sample-data", "--judge",
                f"scorer=openai:reasoner-x,base_url={srv.base_url},concurrency=1", "--output-dir", str(out), "--no-report")
        proc = run_cli(*args, env={"OPENAI_API_KEY": "x"})
        assert proc.returncode == 0, proc.stderr
        res = _results(out)
        assert res["Judged"] == 1.0 and res["Judged_n"] == 5 and res["judge_failures"] == 1 and res["errors"] == 0
        refused = [r for r in srv.requests if r.status == 400]
        sent = [r for r in srv.requests if r.status == 200]
        assert [r.body.get("temperature") for r in refused] == [0.0, 0.0]  # max_tokens first, then temperature: once each
        assert "max_tokens" in refused[0].body and "max_completion_tokens" in refused[1].body
        assert len(sent) == 7 and all("temperature" not in r.body and r.body["max_completion_tokens"] == 256
                                      for r in sent)
        notes = [line for line in proc.stderr.splitlines() if line.startswith("avhb: note: judge openai:reasoner-x")]
        assert len(notes) == 2, proc.stderr  # said once per setting, not once per call
        assert any("temperature=0.0 not sent" in n and "Only the default (1) value" not in n and "refused it" in n
                   for n in notes)
        run = json.loads((out / "run.json").read_text())
        assert sum("judge openai:reasoner-x: temperature=0.0 not sent" in n for n in run["notes"]) == 1
        entries = _journal_lines(out)
        assert len(entries) == 7 and all(any("temperature=0.0 not sent" in a for a in e["adaptations"]) for e in entries)
        # the key is the request as asked: a resume and `avhb score` replay the adapted answers, no call
        calls = srv.count
        again = run_cli(*args, env={"OPENAI_API_KEY": "x"})
        assert again.returncode == 0, again.stderr
        rescored = run_cli("score", str(out), env={"OPENAI_API_KEY": "x"})
        assert rescored.returncode == 0, rescored.stderr
        assert srv.count == calls and _results(out) == res
        assert "judge openai:reasoner-x: temperature=0.0 not sent" in rescored.stderr  # said again from the journal


def test_a_known_reasoning_model_is_adapted_before_any_refusal(testpack, tmp_path):
    from tests.servers.openai_server import refuse_settings

    with ScriptedServer(reply=judge_reply, fault=refuse_settings(r"^o\d|^gpt-5")) as srv:
        out = tmp_path / "run"
        proc = run_cli("--tasks", "testpack/qa_judged", "--model", "testpack/echo", "--sample-data",
                       "--judge", f"scorer=openai:o3-mini,base_url={srv.base_url}", "--output-dir", str(out),
                       "--no-report", env={"OPENAI_API_KEY": "x"})
        assert proc.returncode == 0, proc.stderr
        assert _results(out)["Judged"] == 1.0
        assert srv.count == 7 and all(r.status == 200 for r in srv.requests)  # no request refused
        assert "OpenAI reasoning models accept only the default, 1" in proc.stderr


# ---------------------------------------------------------------- issue 23, item 4: option texts reach the parser

def _mc_pack(tmp_path, model_reply: str):
    pack = tmp_path / "mctasks"
    pack.mkdir()
    (pack / "mc.yaml").write_text(
        "task: mc\ndoc_id: id\ndoc_to_text: \"{{question}}\"\ndoc_to_target: answer\n"
        "metric_list:\n  - metric: choice_accuracy\n"
        "judges:\n  answer_matcher:\n"
        "    prompt: \"Question: {{question}}\\nOptions:\\n{{options}}\\nReply: {{response}}\\nWhich option?\"\n"
        "    parser: letter\n    parser_options: {none: Z}\n    retries: 1\n")
    data = tmp_path / "mc.jsonl"
    data.write_text(json.dumps({"id": "m0", "question": "Does the level rise?",
                                "options": ["increase", "decrease", "unchanged"], "answer": "B"}) + "\n")
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({"level rise": model_reply}))
    return pack, data, replies


@pytest.mark.parametrize("second,score,failures", [("(B) decrease", 1.0, 0), ("(A) decrease", 0.0, 1)])
def test_a_matcher_letter_that_names_another_option_is_re_asked(tmp_path, second, score, failures):
    # the model hedges, the rules find no option, the answer_matcher judge replies "(A) decrease" where
    # decrease is B: letter and text disagree, so the reply is unparsable and re-asked (main read it as A)
    pack, data, replies = _mc_pack(tmp_path, "It might go either way, up or down, hard to say.")

    def matcher(body):
        return "(A) decrease" if len(body["messages"]) <= 2 else second

    with ScriptedServer(reply=matcher) as srv:
        out = tmp_path / "run"
        proc = run_cli("--tasks", "mctasks/mc", "--include_path", str(pack), "--data", f"mctasks/mc={data}",
                       "--model", f"scripted,replies={replies}", "--judge",
                       f"answer_matcher=openai:m,base_url={srv.base_url}", "--output-dir", str(out), "--no-report",
                       env={"OPENAI_API_KEY": "x"})
        assert proc.returncode == 0, proc.stderr
        assert srv.count == 2  # the first reply was refused and re-asked with the format hint
        assert "Reply with the option letter only" in srv.requests[1].body["messages"][-1]["content"]
    res = json.loads((out / "results.json").read_text())["results"]["mctasks/mc"]
    assert res["choice_accuracy"] == score and res["choice_accuracy_judge_failures"] == failures
