"""Multi-step samples (driver hooks) through the CLI against a real
OpenAI-compatible server on 127.0.0.1: the trajectory log, a SIGKILL between
steps resumed without re-sending step one, and ``avhb score`` replaying every
step with zero calls."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from tests.conftest import run_cli
from tests.servers.openai_server import Fault, ScriptedServer

KEY = {"OPENAI_API_KEY": "sk-test-multistep"}


def reply(body: dict) -> str:
    last = body["messages"][-1]["content"]
    text = last if isinstance(last, str) else " ".join(p.get("text", "") for p in last)
    if text.startswith("STEP1"):
        return "noted " + text.split()[-1]
    m = re.search(r"ANSWER: (\S+)", text)
    return m.group(1) if m else "?"


def steps_sent(srv: ScriptedServer) -> Counter:
    out: Counter = Counter()
    for r in srv.requests:
        if r.path.endswith("/chat/completions"):
            last = r.body["messages"][-1]["content"]
            text = last if isinstance(last, str) else " ".join(p.get("text", "") for p in last)
            out[(text.split()[0], text.split()[-1])] += 1
    return out


def _samples(out: Path) -> list[dict]:
    return [json.loads(l) for l in (out / "samples" / "testpack__two_step.jsonl").read_text().splitlines()]


def test_two_step_driver_logs_its_trajectory_and_score_replays_with_zero_calls(testpack, tmp_path):
    with ScriptedServer(reply=reply) as srv:
        out = tmp_path / "run"
        proc = run_cli("--tasks", "testpack/two_step", "--model", f"openai:m,base_url={srv.base_url}", "--sample-data",
                       "--output-dir", str(out), "--no-report", env=KEY)
        assert proc.returncode == 0, proc.stderr
        assert srv.count == 8  # 4 samples x 2 steps
        res = json.loads((out / "results.json").read_text())["results"]["testpack/two_step"]
        assert res["exact"] == 1.0 and res["exact_n"] == 4
        line = _samples(out)[1]
        assert line["response"] == "a1" and line["outputs"] == {"note": "noted 1"}
        assert [(s["step"], s.get("kind")) for s in line["trajectory"]] == [("one", "model"), ("note", None), ("two", "model")]
        assert line["trajectory"][0]["response"] == "noted 1" and line["trajectory"][1]["text"] == "noted 1"
        # step two carried the whole conversation: step one's turn and its answer
        second = [r.body for r in srv.requests if "STEP2" in json.dumps(r.body)][0]
        assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
        first_results = json.loads((out / "results.json").read_text())["results"]
        proc = run_cli("score", str(out), env=KEY)
        assert proc.returncode == 0, proc.stderr
        assert srv.count == 8  # zero calls: every step replayed from the journal
        assert json.loads((out / "results.json").read_text())["results"] == first_results


def test_killed_between_steps_resumes_without_resending_step_one(testpack, tmp_path):
    """Step two hangs in the first run; the run is SIGKILLed once every step
    one is journaled; the resumed run sends only the step twos."""
    hanging = {"on": True}

    def fault(index, body):
        text = json.dumps(body)
        if hanging["on"] and "STEP2" in text:
            return Fault(sleep=30.0)
        return None

    with ScriptedServer(reply=reply, fault=fault) as srv:
        out = tmp_path / "run"
        cmd = ["--tasks", "testpack/two_step", "--model", f"openai:m,base_url={srv.base_url},timeout=60",
               "--sample-data", "--output-dir", str(out), "--no-report"]
        victim = subprocess.Popen([sys.executable, "-m", "avhb.cli", *cmd], env=dict(os.environ, **KEY),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        journal = out / "journal" / "responses.jsonl"
        deadline = time.time() + 60
        while time.time() < deadline:
            lines = journal.read_text().splitlines() if journal.exists() else []
            if sum('"step": "one"' in l for l in lines) == 4:
                time.sleep(0.5)  # the step twos are sent (and hang at the server)
                break
            time.sleep(0.05)
        else:
            victim.kill()
            raise AssertionError("step one never finished")
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        before = steps_sent(srv)
        assert sum(v for (s, _), v in before.items() if s == "STEP1") == 4
        assert not (out / "results.json").exists()
        assert not any('"step": "two"' in l for l in journal.read_text().splitlines())
        hanging["on"] = False
        proc = run_cli(*cmd, env=KEY)
        assert proc.returncode == 0, proc.stderr
        after = steps_sent(srv)
        assert {k: v for k, v in after.items() if k[0] == "STEP1"} == {k: v for k, v in before.items() if k[0] == "STEP1"}
        assert all(after[("STEP1", f"{i}")] == 1 for i in range(4))  # step one was sent once per sample, ever
        res = json.loads((out / "results.json").read_text())["results"]["testpack/two_step"]
        assert res["exact"] == 1.0 and res["errors"] == 0
