"""End to end: HAVE-Bench through the CLI against the scripted
OpenAI-compatible server on 127.0.0.1, for the model (``openai:m``) and every
judge (``openai:judge``); every number below is computed by hand.

The server tells requests apart as a person would: judges by their prompt
(the criterion and the reply between the markers), the model's static
requests by the picture they carry (a thumbnail matched against the sample
pack's images: the spoken instruction is all that differs otherwise), the
model's interaction turns by the scenario's intro and the turn count.
"""
from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.conftest import ROOT, run_cli
from tests.servers.openai_server import Fault, ScriptedServer

SAMPLE = ROOT / "tasks" / "have" / "sample"
KEY = {"OPENAI_API_KEY": "sk-test-have"}


# ---------------------------------------------------------------- reading requests

def texts(content) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [p["text"] for p in content if p.get("type") == "text"]


def media(content) -> list[str]:
    """The media of one message, in order: image data URLs and audio data."""
    if isinstance(content, str):
        return []
    out = []
    for p in content:
        if p.get("type") == "image_url":
            out.append(p["image_url"]["url"])
        elif p.get("type") == "input_audio":
            out.append("audio:" + p["input_audio"]["data"])
    return out


def between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def judge_prompt(body: dict) -> str:
    first_user = next(m for m in body["messages"] if m["role"] == "user")
    return texts(first_user["content"])[0]


def signature(img: Image.Image) -> np.ndarray:
    return np.asarray(img.convert("L").resize((16, 12), Image.BILINEAR), dtype=float)


def _sample_signatures() -> dict[str, np.ndarray]:
    out = {}
    for line in (SAMPLE / "items.jsonl").read_text().splitlines():
        item = json.loads(line)
        if item["level"] != "interaction":
            out[item["id"]] = signature(Image.open(SAMPLE / item["images"][0]))
    return out


SIGNATURES = _sample_signatures()


def static_item(body: dict) -> str:
    """The sample-pack item whose picture this request carries."""
    url = next(u for m in body["messages"] for u in media(m["content"]) if u.startswith("data:image"))
    sig = signature(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
    return min(SIGNATURES, key=lambda k: float(np.abs(SIGNATURES[k] - sig).mean()))


def cli(out: Path, srv: ScriptedServer, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    model = f"openai:m,base_url={srv.base_url},audio=true"
    judge = f"openai:judge,base_url={srv.base_url},audio=true"
    return run_cli(*args, "--model", model, "--judge", f"*={judge}", "--output-dir", str(out), "--no-report",
                   env=KEY, timeout=timeout)


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def samples(out: Path, task: str) -> list[dict]:
    return [json.loads(line) for line in (out / "samples" / f"{task}.jsonl").read_text().splitlines()]


def model_requests(srv: ScriptedServer) -> list[dict]:
    return [r.body for r in srv.completions() if r.body.get("model") == "m"]


# ---------------------------------------------------------------- static tasks

STATIC = {  # item -> the model's reply (every repeat)
    "rec_0001": "B",                       # right (rules)
    "rec_0002": "The triangle is green.",  # no letter: the matcher maps it to C (right)
    "txt_0001": "(A)",                     # wrong
    "txt_0002": "Summer Fair",             # open: the scorer says yes
    "cmm_0001": "I cannot tell.",          # the matcher says Z: unparsed, scored 0, counted
    "cmm_0002": "B",                       # right
    "agv_0001": "The dog on the left.",    # open: yes
    "agv_0002": "The lamp.",               # open: the scorer never answers yes/no: excluded, counted
    "math_0001": "19",                     # open: yes
    "math_0002": "C",                      # right
    "mdr_0001": "A",                       # wrong
    "mdr_0002": "4 amperes",               # open: no
    "dis_0001": "C",                       # right
    "dis_0002": "Parts came late from the supplier.",  # open: yes
}
MATCHER = {"The triangle is green.": "C", "I cannot tell.": "Z"}
SCORER = {"Summer Fair": "Yes", "The dog on the left.": "Yes", "The lamp.": "Maybe, it depends",
          "19": "Yes", "4 amperes": "No", "Parts came late from the supplier.": "Yes"}


def static_reply(body: dict) -> str:
    if body["model"] == "judge":
        prompt = judge_prompt(body)
        if "Which option does the reply choose?" in prompt:
            return MATCHER[between(prompt, "<<<REPLY\n", "\nREPLY>>>")]
        return SCORER[between(prompt, "<<<ANSWER\n", "\nANSWER>>>")]
    return STATIC[static_item(body)]


def test_static_sample_pack_end_to_end_and_score_replays(tmp_path):
    with ScriptedServer(reply=static_reply) as srv:
        out = tmp_path / "run"
        proc = cli(out, srv, "--tasks", "have_perception,have_reasoning,have_instructed_recognition_ti", "--sample-data")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert len(model_requests(srv)) == (14 + 2) * 3  # 14 items (and the 2 TI ones) x 3 repeats, one call each
        res = results(out)
        r = res["results"]
        expect = {"have_instructed_recognition": (1.0, 6), "have_text_rich_qa": (0.5, 6),
                  "have_cross_modal_matching": (0.5, 6), "have_audio_grounded_vqa": (1.0, 3),
                  "have_math": (1.0, 6), "have_multidisciplinary_reasoning": (0.0, 6),
                  "have_discourse_reasoning": (1.0, 6)}
        for task, (score, n) in expect.items():
            assert (r[task]["score"], r[task]["score_n"]) == (pytest.approx(score), n), task
            assert r[task]["errors"] == 0 and r[task]["samples"] == 6
            assert r[task]["score_runs"] == [pytest.approx(score)] * 3 and r[task]["score_run_std"] == 0.0
        assert r["have_cross_modal_matching"]["score_unparsed"] == 3
        assert r["have_audio_grounded_vqa"]["score_excluded"] == 3
        assert r["have_audio_grounded_vqa"]["score_judge_failures"] == 3
        assert r["have_instructed_recognition"]["score_unparsed"] == 0
        g = res["groups"]
        assert g["have_perception"]["score"] == pytest.approx((1.0 + 0.5 + 0.5 + 1.0) / 4)
        assert g["have_reasoning"]["score"] == pytest.approx(2 / 3)
        assert g["have_aai"]["score"] == pytest.approx((1.0 + 0.5 + 1.0 + 0.0) / 4)
        assert g["have_aac"]["score"] == pytest.approx((0.5 + 1.0 + 1.0) / 3)
        assert res["partial_groups"]["have"] == "7/10 tasks run"
        voice = res["breakdowns"]["have_multidisciplinary_reasoning"]["voice"]
        assert voice["human"]["score"] == 0.0 and voice["tts"]["score"] == 0.0
        kinds = res["breakdowns"]["have_text_rich_qa"]["answer_type"]
        assert kinds["mcq"]["score"] == 0.0 and kinds["open"]["score"] == 1.0
        line = next(s for s in samples(out, "have_instructed_recognition") if s["id"] == "rec_0002")
        assert line["judgements"]["score"]["value"] == "C" and line["scores"]["score"] == 1.0
        # SI: the picture and the spoken instruction, not its text; TI: the text and no audio
        contents = [b["messages"][0]["content"] for b in model_requests(srv) if static_item(b) == "rec_0001"]
        si, ti = (next(c for c in contents if len(c) == n) for n in (3, 2))
        assert [p["type"] for p in si] == ["image_url", "input_audio", "text"] and "animal" not in si[2]["text"]
        assert [p["type"] for p in ti] == ["image_url", "text"]
        assert ti[1]["text"].startswith("Which animal is named on the sign?\nA. cat\nB. owl")
        assert r["have_instructed_recognition_ti"]["score"] == 1.0

        calls = srv.count
        proc = run_cli("score", str(out), env=KEY)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert srv.count == calls  # avhb score: no model call, no judge call
        assert results(out)["results"] == r


# ---------------------------------------------------------------- interaction on the sample pack

SCENARIO = {"walking through a town": "nav", "rule puzzle": "puzzle", "reference tune": "music"}
TURNS = {
    "nav": ["I move forward.", "Turn right."],                              # n0 -> n1 -> n2 (goal): 2 turns
    "puzzle": ["Solve the puzzle now."],                                    # menu -> trap (fail), Learn skipped
    "music": ["Make it faster.", "Louder and slower.", "Louder.", "Now faster."],
    # slow_soft -> fast_soft; both edges fire (ambiguous): the first declared, back to slow_soft;
    # -> slow_loud -> fast_loud (goal) at turn 4 = max_turns
}
KEYWORDS = {"moves forward": "forward", "turns right.": "right", "turns left": "left", "turns around": "around",
            "learn the rule": "learn", "solve the puzzle now": "solve", "ready to continue": "continue",
            "enters the code 6": "6", "a faster tempo": "faster", "a slower tempo": "slower",
            "louder playing": "louder", "softer playing": "softer"}


def edge_verdict(prompt: str) -> str:
    criterion = between(prompt, "Success criterion:\n", "\n\n").lower()
    reply = between(prompt, "<<<REPLY\n", "\nREPLY>>>").lower()
    words = [w for key, w in KEYWORDS.items() if key in criterion]
    assert words, criterion
    return "Yes" if any(re.search(rf"\b{w}\b", reply) for w in words) else "No"


def scenario_reply(body: dict) -> str:
    if body["model"] == "judge":
        return edge_verdict(judge_prompt(body))
    intro = " ".join(texts(body["messages"][0]["content"]))
    scenario = next(v for k, v in SCENARIO.items() if k in intro)
    turn = sum(m["role"] == "user" for m in body["messages"])
    return TURNS[scenario][turn - 1]


def test_interaction_sample_pack_end_to_end(tmp_path):
    with ScriptedServer(reply=scenario_reply) as srv:
        out = tmp_path / "run"
        proc = cli(out, srv, "--tasks", "have_interaction", "--sample-data")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert len(model_requests(srv)) == (2 + 1 + 4) * 3
        res = results(out)
        nav, puzzle, music = (res["results"][f"have_{t}"] for t in ("navigation", "puzzle", "music_reproduction"))
        assert (nav["score"], nav["score_n"], nav["mean_turns"]) == (1.0, 3, 2.0)
        assert (puzzle["score"], puzzle["fail_node"], puzzle["skipped_learn"], puzzle["mean_turns"]) == (0.0, 3, 3, 1.0)
        assert (music["score"], music["ambiguous_steps"], music["mean_turns"], music["turn_limit"]) == (1.0, 3, 4.0, 0)
        assert all(t["score_excluded"] == 0 and t["errors"] == 0 for t in (nav, puzzle, music))
        assert res["groups"]["have_interaction"]["score"] == pytest.approx(2 / 3)

        line = samples(out, "have_music_reproduction")[0]
        assert line["outputs"]["path"] == ["slow_soft", "fast_soft", "slow_soft", "slow_loud", "fast_loud"]
        moves = [s for s in line["trajectory"] if s.get("kind") == "transition"]
        assert [m["to"] for m in moves] == ["fast_soft", "slow_soft", "slow_loud", "fast_loud"]
        assert moves[1] == {"step": "turn2", "kind": "transition", "node": "fast_soft",
                            "edges": [{"edge": 4, "to": "slow_soft", "verdict": "yes"},
                                      {"edge": 5, "to": "fast_loud", "verdict": "yes"}],
                            "fired": [4, 5], "to": "slow_soft", "ambiguous": True}
        replies = [s["response"] for s in line["trajectory"] if s.get("kind") == "model"]
        assert replies == TURNS["music"]
        assert sum(s.get("kind") == "judge" for s in line["trajectory"]) == 4 * 2
        # memory: turn 3 still carries turn 1's intro (the reference tune) as the first message's media
        turns = sorted((b for b in model_requests(srv) if "reference tune" in texts(b["messages"][0]["content"])[0]),
                       key=lambda b: len(b["messages"]))
        first, third = turns[0], next(b for b in turns if sum(m["role"] == "user" for m in b["messages"]) == 3)
        intro_audio = media(first["messages"][0]["content"])[0]
        assert intro_audio.startswith("audio:") and media(third["messages"][0]["content"])[0] == intro_audio
        # the edge judge heard the node's audio
        judged = [r.body for r in srv.completions() if r.body["model"] == "judge"]
        assert all(any(u.startswith("audio:") for u in media(b["messages"][0]["content"]))
                   for b in judged if "This is the current version." in judge_prompt(b))

        calls = srv.count
        proc = run_cli("score", str(out), env=KEY)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert srv.count == calls
        assert results(out)["results"] == res["results"]


# ---------------------------------------------------------------- the driver on hand-made graphs

def puzzle_data(tmp_path: Path) -> Path:
    """Four copies of the sample puzzle (intro with a picture and speech) and
    one with a dangling edge."""
    root = tmp_path / "data"
    shutil.copytree(SAMPLE / "images", root / "images")
    shutil.copytree(SAMPLE / "audio", root / "audio")
    base = next(json.loads(l) for l in (SAMPLE / "items.jsonl").read_text().splitlines() if '"puz_0001"' in l)
    rows = []
    for name in ("p1", "p2", "p3", "p4", "p5"):
        item = json.loads(json.dumps(base))
        item["id"] = name
        item["intro"] = {"text": f"Game {name}. At each screen, say what you do.",
                         "images": ["images/nav_0001_map.png"], "audio": "audio/nav_0001_directions.mp3"}
        rows.append(item)
    rows[4]["edges"].append({"from": "solve", "to": "nowhere", "criterion": "x"})
    (root / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


GAMES = {"p1": ["I want to learn the rule.", "Continue.", "The code is 6."],  # menu -> learn -> solve -> solved
         "p2": ["Let me solve it."],                                            # menu -> trap: fail node
         "p3": ["Hmm."] * 6,                                                   # nothing fires until max_turns (6)
         "p4": ["Banana."]}                                                    # the judge never says yes/no


def game_reply(body: dict) -> str:
    if body["model"] == "judge":
        prompt = judge_prompt(body)
        if "banana" in prompt.lower():
            return "I am not sure."
        return edge_verdict(prompt)
    game = re.search(r"Game (p\d)\.", texts(body["messages"][0]["content"])[0]).group(1)
    turn = sum(m["role"] == "user" for m in body["messages"])
    return GAMES[game][turn - 1]


def test_driver_success_fail_node_turn_limit_and_exclusion(tmp_path):
    data = puzzle_data(tmp_path)
    with ScriptedServer(reply=game_reply) as srv:
        out = tmp_path / "run"
        proc = cli(out, srv, "--tasks", "have_puzzle", "--data", f"have={data}", "--repeats", "1")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "1 of 5 items" in proc.stderr and "dangling" in proc.stderr
        r = results(out)["results"]["have_puzzle"]
        assert r["score"] == pytest.approx(1 / 3) and r["score_n"] == 3  # 1 of 3 scored
        assert r["score_excluded"] == 1 and r["errors"] == 1 and r["samples"] == 5
        assert r["mean_turns"] == pytest.approx((3 + 1 + 6) / 3)
        assert (r["turn_limit"], r["fail_node"], r["skipped_learn"], r["ambiguous_steps"]) == (1, 1, 1, 0)
        assert r["judge_failures"] == 1
        lines = {s["id"]: s for s in samples(out, "have_puzzle")}
        assert lines["p1"]["outputs"]["path"] == ["menu", "learn", "solve", "solved"]
        assert (lines["p1"]["outputs"]["turns"], lines["p1"]["outputs"]["outcome"]) == (3, "goal")
        assert lines["p2"]["outputs"]["outcome"] == "fail_node" and lines["p2"]["outputs"]["skipped_learn"] is True
        assert lines["p3"]["outputs"]["outcome"] == "turn_limit" and lines["p3"]["outputs"]["path"] == ["menu"]
        assert lines["p4"]["outputs"]["outcome"] == "excluded" and lines["p4"]["scores"]["score"] is None
        assert "gave no yes/no verdict on edge 0 (menu -> learn)" in lines["p4"]["outputs"]["excluded"]
        assert lines["p5"]["error"].endswith("item 'p5': edge 4 (solve -> nowhere) is dangling: no node 'nowhere'")
        # calls: p1 3 turns, p2 1, p3 6, p4 1 (then excluded), p5 none
        assert Counter(re.search(r"Game (p\d)", texts(b["messages"][0]["content"])[0]).group(1)
                       for b in model_requests(srv)) == {"p1": 3, "p2": 1, "p3": 6, "p4": 1}
        # memory: p1's turn-3 request still holds the intro's picture and speech from turn 1
        p1 = sorted((b for b in model_requests(srv) if "Game p1." in texts(b["messages"][0]["content"])[0]),
                    key=lambda b: len(b["messages"]))
        assert [m["role"] for m in p1[2]["messages"]] == ["user", "assistant", "user", "assistant", "user"]
        intro = media(p1[0]["messages"][0]["content"])[:2]
        assert intro[0].startswith("data:image") and intro[1].startswith("audio:")
        assert media(p1[2]["messages"][0]["content"])[:2] == intro
        assert not any(u in media(p1[2]["messages"][2]["content"]) for u in intro)  # shown once


def test_killed_mid_trajectory_resumes_without_resending_a_finished_step(tmp_path):
    """Every turn-2 model request hangs in the first run, which is SIGKILLed
    once they are in flight; the resumed run re-sends no turn-1 request and
    no turn-1 verdict; ``avhb score`` then makes no call at all."""
    data = puzzle_data(tmp_path)
    hang = {"on": True}
    hanging: list[int] = []

    def fault(index, body):
        turn2 = body.get("model") == "m" and sum(m["role"] == "user" for m in body["messages"]) == 2
        if hang["on"] and turn2:
            hanging.append(index)
            return Fault(sleep=30.0)
        return None

    with ScriptedServer(reply=game_reply, fault=fault) as srv:
        out = tmp_path / "run"
        model = f"openai:m,base_url={srv.base_url},audio=true,timeout=60"
        judge = f"openai:judge,base_url={srv.base_url},audio=true"
        cmd = ["--tasks", "have_puzzle", "--data", f"have={data}", "--repeats", "1", "--model", model,
               "--judge", f"*={judge}", "--output-dir", str(out), "--no-report"]
        victim = subprocess.Popen([sys.executable, "-m", "avhb.cli", *cmd], env=dict(os.environ, **KEY),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        verdicts = out / "journal" / "judges.jsonl"
        deadline = time.time() + 90
        while time.time() < deadline:
            # p1 and p3 wait at turn 2; the turn-1 verdicts are journaled: 2 edges each for p1-p3, 3 tries for p4
            lines = verdicts.read_text().count("\n") if verdicts.exists() else 0
            if len(hanging) == 2 and lines == 9:
                time.sleep(0.3)
                break
            time.sleep(0.05)
        else:
            victim.kill()
            raise AssertionError("turn 2 was never reached")
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        assert not (out / "results.json").exists()
        hang["on"] = False
        proc = run_cli(*cmd, env=KEY)
        assert proc.returncode == 0, proc.stderr[-3000:]
        # no finished step was sent again: each model turn 1 once, each verdict asked once (one journal line each)
        first_turns = Counter(texts(r.body["messages"][0]["content"])[0][:8] for r in srv.completions()
                              if r.body["model"] == "m" and len(r.body["messages"]) == 1)
        assert first_turns == {f"Game p{k}.": 1 for k in range(1, 5)}
        for kind in ("responses", "judges"):
            keys = Counter(json.loads(l)["key"] for l in (out / "journal" / f"{kind}.jsonl").read_text().splitlines())
            assert set(keys.values()) == {1}, kind
        assert sum(r.body["model"] == "judge" for r in srv.completions()) == \
            len((out / "journal" / "judges.jsonl").read_text().splitlines())
        r = results(out)["results"]["have_puzzle"]
        assert r["score"] == pytest.approx(1 / 3) and r["score_excluded"] == 1 and r["errors"] == 1

        calls = srv.count
        proc = run_cli("score", str(out), env=KEY)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert srv.count == calls
        assert results(out)["results"]["have_puzzle"] == r


def test_each_instance_replays_its_own_verdict(tmp_path):
    """Two instances ask the edge judge the very same question at the same
    time and a sampling judge answers them differently: each instance keeps
    its own verdict, live and when ``avhb score`` replays the journal."""
    data = puzzle_data(tmp_path)
    rows = [json.loads(l) for l in (data / "items.jsonl").read_text().splitlines()][:2]
    for row, name in zip(rows, ("q1", "q2")):
        row["id"], row["intro"]["text"] = name, f"Game {name}. At each screen, say what you do."
    (data / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    script = ["I want to learn the rule.", "Continue.", "The code is 6.", "Hmm.", "Hmm.", "Hmm."]
    asked = Counter()

    def reply(body: dict) -> str:
        if body["model"] == "m":
            return script[sum(m["role"] == "user" for m in body["messages"]) - 1]
        prompt = judge_prompt(body)
        if "learn the rule." in prompt and "<<<REPLY\nI want to learn" in prompt:
            asked["learn"] += 1
            return "Yes" if asked["learn"] == 1 else "No"  # a judge that samples: the second time, no
        return edge_verdict(prompt)

    def slow(index, body):  # keeps both askers in flight together
        return Fault(sleep=0.5) if body["model"] == "judge" and "<<<REPLY\nI want to learn" in judge_prompt(body) else None

    with ScriptedServer(reply=reply, fault=slow) as srv:
        out = tmp_path / "run"
        proc = cli(out, srv, "--tasks", "have_puzzle", "--data", f"have={data}", "--repeats", "1")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert asked["learn"] >= 2
        first = results(out)["results"]["have_puzzle"]
        assert first["score"] == 0.5 and first["turn_limit"] == 1  # one moved on to Learn, one stayed
        paths = sorted(s["outputs"]["path"] for s in samples(out, "have_puzzle"))
        assert paths == [["menu"], ["menu", "learn", "solve", "solved"]]
        calls = srv.count
        proc = run_cli("score", str(out), env=KEY)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert srv.count == calls
        assert results(out)["results"]["have_puzzle"] == first
        assert sorted(s["outputs"]["path"] for s in samples(out, "have_puzzle")) == paths


# ---------------------------------------------------------------- repeats

def test_three_repeats_report_their_spread(tmp_path):
    """Four MCQ items; repeat k answers the first 2 + k right: runs 0.50,
    0.75, 1.00 -> 0.75, run std 0.25."""
    root = tmp_path / "data"
    shutil.copytree(SAMPLE / "images", root / "images")
    shutil.copytree(SAMPLE / "audio", root / "audio")
    base = next(json.loads(l) for l in (SAMPLE / "items.jsonl").read_text().splitlines() if '"rec_0001"' in l)
    rows = [dict(base, id=f"r{k}", options=[f"cat{k}", f"owl{k}", f"fox{k}", f"dog{k}"]) for k in range(4)]
    (root / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def reply(body: dict) -> str:
        k = int(re.search(r"A\. cat(\d)", texts(body["messages"][0]["content"])[0]).group(1))
        repeat = body["seed"] - 1234
        return "B" if k < 2 + repeat else "D"

    with ScriptedServer(reply=reply) as srv:
        out = tmp_path / "run"
        proc = cli(out, srv, "--tasks", "have_instructed_recognition", "--data", f"have={root}")
        assert proc.returncode == 0, proc.stderr[-3000:]
        r = results(out)["results"]["have_instructed_recognition"]
        assert r["score_runs"] == [0.5, 0.75, 1.0]
        assert r["score"] == pytest.approx(0.75) and r["score_n"] == 12
        assert r["score_run_std"] == pytest.approx(0.25)


# ---------------------------------------------------------------- the ASR ablation

@pytest.mark.slow
def test_audio_as_transcript_sends_whisper_text(tmp_path):
    pytest.importorskip("faster_whisper")
    with ScriptedServer(reply=static_reply) as srv:
        out = tmp_path / "run"
        proc = cli(out, srv, "--tasks", "have_instructed_recognition", "--sample-data", "--repeats", "1",
                   "--samples", "rec_0001", "--ablate", "audio_as_transcript", timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        content = model_requests(srv)[0]["messages"][0]["content"]
        assert [p["type"] for p in content] == ["image_url", "text", "text"]
        spoken = content[1]["text"]
        # whisper-base hears espeak's "Which animal is named on the sign?" only roughly: its words are not pinned
        assert spoken.startswith("Audio transcript: ") and len(spoken.split()) >= 5
        line = samples(out, "have_instructed_recognition")[0]
        assert any("transcript" in a for a in line["adaptations"])
