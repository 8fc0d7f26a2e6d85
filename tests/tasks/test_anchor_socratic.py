"""ANCHOR's Socratic mode through the CLI against a real OpenAI-compatible
server on 127.0.0.1: a 300 s clip is read as chunks [0,120), [120,240),
[240,300) at 0.5 fps, each turn carrying the previous turn's notes, then a
synthesis turn without media; a run SIGKILLed during chunk 3 resumes
without re-sending chunks 1 and 2."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from tests.conftest import run_cli
from tests.fixtures.make_test_media import make_video, tone_track
from tests.servers.openai_server import Fault, ScriptedServer

KEY = {"OPENAI_API_KEY": "sk-test-socratic"}
QUESTION = "How many tones are heard, and when?"


def texts(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "\n".join(p["text"] for p in content if p["type"] == "text")


def reply(body: dict) -> str:
    text = texts(body)
    m = re.search(r"This is part (\d) of (\d)", text)
    if m:
        return f"NOTE{m.group(1)}: a tone in part {m.group(1)}"
    if "You have now watched all" in text:
        return "1. Visual Cue:\n   - Timeframe: 00:00-05:00\n\nFinal Answer: three tones"
    return "unexpected"


def turn(body: dict) -> str:
    text = texts(body)
    m = re.search(r"This is part (\d) of \d", text)
    return f"chunk{m.group(1)}" if m else "synthesis" if "You have now watched all" in text else "other"


@pytest.fixture
def long_clip(tmp_path):
    root = tmp_path / "data"
    (root / "videos").mkdir(parents=True)
    audio = tone_track(300, 8000, [(10, 12, 440.0), (130, 132, 660.0), (250, 252, 880.0)])
    make_video(str(root / "videos" / "long300.mp4"), seconds=300, fps=1, size=(32, 24), audio=audio,
               audio_rate=8000, keyint=10)
    line = {"videoID": "/data/anchor/long300.mp4", "QAs": [{"question": QUESTION, "answer": "three"}]}
    (root / "anchor.jsonl").write_text(json.dumps(line) + "\n")
    return root


def test_socratic_turns_notes_and_resume(long_clip, tmp_path):
    hanging = {"on": True}

    def fault(index, body):
        return Fault(sleep=30.0) if hanging["on"] and turn(body) == "chunk3" else None

    with ScriptedServer(reply=reply, fault=fault) as srv:
        out = tmp_path / "run"
        cmd = ["--tasks", "anchor", "--data", f"anchor={long_clip}", "--model",
               f"openai:omni,base_url={srv.base_url},audio=true,timeout=60", "--media", "audio_rate=8000",
               "--predict-only", "--output-dir", str(out), "--no-report"]
        victim = subprocess.Popen([sys.executable, "-m", "avhb.cli", *cmd], env=dict(os.environ, **KEY),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        journal = out / "journal" / "responses.jsonl"
        deadline = time.time() + 120
        while time.time() < deadline:
            lines = journal.read_text().splitlines() if journal.exists() else []
            if any('"step": "chunk2"' in line for line in lines) and srv.count == 3:
                break  # chunk 2 is journaled; chunk 3 was sent and hangs at the server
            time.sleep(0.05)
        else:
            victim.kill()
            raise AssertionError("chunk 3 was never sent")
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        # three requests received; the server logs a request once it answers, so the hung chunk 3 is not logged yet
        assert srv.count == 3 and Counter(turn(r.body) for r in srv.requests) == {"chunk1": 1, "chunk2": 1}
        hanging["on"] = False
        proc = run_cli(*cmd, env=KEY)
        assert proc.returncode == 0, proc.stderr[-3000:]
        bodies = {turn(r.body): r.body for r in srv.requests}
        # resumed: chunks 1 and 2 never re-sent; the killed chunk 3 asked again; one synthesis
        assert srv.count == 5
        sent = Counter(turn(r.body) for r in srv.requests)
        assert (sent["chunk1"], sent["chunk2"], sent["synthesis"]) == (1, 1, 1) and sent["chunk3"] >= 1

    def frames(body):
        parts = body["messages"][-1]["content"]
        labels = [float(re.match(r"Frame at ([\d.]+)s:", p["text"]).group(1)) for p in parts
                  if p["type"] == "text" and p["text"].startswith("Frame at")]
        kinds = Counter(p["type"] for p in parts)
        return labels, kinds

    for k, (a, b) in enumerate([(0, 120), (120, 240), (240, 300)], 1):
        labels, kinds = frames(bodies[f"chunk{k}"])
        assert labels == [float(t) for t in range(a, b, 2)]  # 0.5 fps within the chunk
        assert kinds["image_url"] == len(labels) and kinds["input_audio"] == 1  # the chunk's frames and audio
        text = texts(bodies[f"chunk{k}"])
        assert f"This is part {k} of 3" in text and QUESTION in text and "Do not give a final answer" in text
        assert "512x384" in text
    assert "Your notes on part" not in texts(bodies["chunk1"])
    assert "Your notes on part 1:\nNOTE1: a tone in part 1" in texts(bodies["chunk2"])
    chunk3 = texts(bodies["chunk3"])
    assert "Your notes on part 2:\nNOTE2" in chunk3 and "NOTE1" not in chunk3  # only turn k-1's notes
    assert "00:00-02:00" in texts(bodies["chunk1"]) and "04:00-05:00" in chunk3
    synthesis = bodies["synthesis"]
    assert isinstance(synthesis["messages"][-1]["content"], str)  # no media at all
    final = texts(synthesis)
    assert all(f"Part {k} (" in final and f"NOTE{k}" in final for k in (1, 2, 3)) and QUESTION in final
    assert final.rstrip().endswith("Final Answer:")
    [line] = [json.loads(x) for x in (out / "samples" / "anchor.jsonl").read_text().splitlines()]
    assert line["response"].endswith("Final Answer: three tones") and line["outputs"] == {"socratic_turns": 4}
    steps = [s["step"] for s in line["trajectory"]]
    assert steps == ["socratic", "chunk1", "chunk2", "chunk3", "synthesis"]
    assert line["trajectory"][0]["chunks"] == [[0.0, 120.0], [120.0, 240.0], [240.0, 300.0]]
    assert line["trajectory"][2]["response"] == "NOTE2: a tone in part 2"
