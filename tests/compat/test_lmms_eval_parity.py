"""Differential test against lmms-eval itself (issue 24, "Must show"): the
corpus tests/compat/lmms_corpus (10 task files of our own in lmms-eval's
layout: PIL images and image paths from doc_to_visual, two images, a video,
audio, a field as the visual, a text-only task, doc_to_messages in
lmms-eval's chat form, lmms_eval_specific_kwargs with a default and a
per-model entry, process_results with !function and mean aggregations)
is run by lmms-eval 0.7.3's OpenAI-compatible model (``--model openai``,
4 frames a video) and by avhb (``openai``, ``--media frames=4``) against
one logging local server.  Then:

* the messages are the same: roles, and per message the parts in order,
  every text part equal, images and frames counted (frames: 4 each), still
  images as PNG with the same pixels (both send a PIL image as PNG), audio
  in the same place; max tokens and temperature equal;
* the scores are equal to 1e-9.

Where they differ on purpose (said in the README): avhb sends the audio
itself (``input_audio``) where lmms-eval 0.7.3 sends its local path as an
``audio_url`` no server can open; avhb sends a seed; lmms-eval's video
frames are resized by qwen_vl_utils (avhb keeps the source size).
"""
from __future__ import annotations

import base64
import io
import json
import math
import os
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.compat.corpus_data import make_lmms_data
from tests.compat.fake_model import serve
from tests.compat.tools import read_log as _log, run_tool as _run

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).with_name("lmms_corpus")
VENV = Path(os.environ.get("AVHB_LMMS_VENV", ROOT / ".venv-lmms"))
NS = "lmms_corpus"
FRAMES = 4

pytestmark = [pytest.mark.slow,  # lmms-eval runs in its own venv: most of a minute before the first test
              pytest.mark.skipif(not (VENV / "bin" / "lmms-eval").exists(),
                                 reason=f"lmms-eval is not installed in {VENV}: run scripts/peer_envs.sh lmms")]


def _tasks() -> list[str]:
    import yaml

    out = []
    for path in sorted(CORPUS.glob("*.yaml")):
        if not path.name.startswith("_"):
            out.append(yaml.safe_load(path.read_text().replace("!function", ""))["task"])
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    work = tmp_path_factory.mktemp("lmms-parity")
    shutil.copytree(CORPUS, work / NS, ignore=shutil.ignore_patterns("__pycache__"))
    make_lmms_data(work / NS)
    tasks = _tasks()
    log = work / "requests.jsonl"
    server = serve(str(log))
    out: dict[str, dict] = {}
    with server:
        env = dict(os.environ, HF_HOME=str(work / "hf"), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1",
                   OPENAI_API_KEY="none", FORCE_QWENVL_VIDEO_READER="decord")
        env.pop("PYTHONPATH", None)
        _run([str(VENV / "bin" / "lmms-eval"), "eval", "--model", "openai", "--model_args",
              f"model_version=fake,base_url={server.base_url},max_frames_num={FRAMES},num_concurrent=1",
              "--tasks", ",".join(tasks), "--include_path", NS, "--output_path", "lmms_out", "--log_samples"],
             work, env)
        before = len(_log(log))
        (results,) = (work / "lmms_out").rglob("*_results.json")
        out["lmms"] = {"requests": _log(log)[:before], "results": json.loads(results.read_text())}
        _run([sys.executable, "-m", "avhb.cli", "--tasks", ",".join(f"{NS}/{t}" for t in tasks), "--include_path", NS,
              "--model", f"openai:fake,base_url={server.base_url},audio=true", "--media", f"frames={FRAMES}",
              "--output_path", "avhb_out", "--no_report"], work, dict(os.environ, HF_HOME=str(work / "hf")))
        out["avhb"] = {"requests": _log(log)[before:],
                       "results": json.loads((work / "avhb_out" / "results.json").read_text())}
    out["tasks"] = tasks
    return out


def _pixels(url: str):
    import numpy as np
    from PIL import Image

    raw = base64.b64decode(url.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(raw)).convert("RGB"), dtype=np.int16)


def _shape(body: dict) -> tuple[str, list]:
    """(a key of the request's structure and text, its still images' URLs)."""
    images = []
    messages = []
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, str):
            messages.append((m["role"], [("text", content)]))
            continue
        parts = []
        for p in content:
            if p["type"] == "text":
                parts.append(("text", p["text"]))
            elif p["type"] == "image_url":
                parts.append(("image",))
                images.append(p["image_url"]["url"])
            elif p["type"] in ("input_audio", "audio_url"):
                parts.append(("audio",))
            else:
                parts.append((p["type"],))
        messages.append((m["role"], parts))
    key = json.dumps({"messages": messages, "max_tokens": body.get("max_tokens"),
                      "temperature": float(body.get("temperature", -1))})
    return key, images


def _chat(requests: list[dict]) -> list[dict]:
    return [r["body"] for r in requests if r["path"].endswith("/chat/completions")]


def test_same_messages(runs):
    lmms, avhb = _chat(runs["lmms"]["requests"]), _chat(runs["avhb"]["requests"])
    assert len(lmms) == len(avhb) == 5 * len(runs["tasks"])
    theirs, ours = Counter(_shape(b)[0] for b in lmms), Counter(_shape(b)[0] for b in avhb)
    assert theirs == ours, (list(theirs - ours)[:1], list(ours - theirs)[:1])
    # the video's frames: 4 images before the text, both
    videos = [k for k in theirs if "Watch the clip." in k]
    assert videos and all(json.loads(k)["messages"][0][1][:FRAMES] == [["image"]] * FRAMES for k in videos)
    # still images: PNG, the same size and the same pixels; two docs with the same text (the same hint) are
    # told apart by their pictures' sizes
    import numpy as np

    def stills(bodies):
        out: dict[str, list] = {}
        for b in bodies:
            key, images = _shape(b)
            if "Watch the clip." not in key and images:
                pixels = [_pixels(u) for u in images]
                out.setdefault(key + repr([p.shape for p in pixels]), []).append(pixels)
        return out

    theirs_stills, ours_stills = stills(lmms), stills(avhb)
    not_png = [(_shape(b)[0][:160], u[:30]) for b in avhb for u in _shape(b)[1]
               if "Watch the clip." not in _shape(b)[0] and not u.startswith("data:image/png;base64,")]
    assert not not_png, not_png[:3]
    assert sorted(theirs_stills) == sorted(ours_stills)
    compared = 0
    for key, groups in theirs_stills.items():
        for a_group, c_group in zip(groups, ours_stills[key]):
            for a, c in zip(a_group, c_group):
                assert np.array_equal(a, c), key[:120]
                compared += 1
    assert compared >= 30
    # the differences on purpose: avhb sends the audio itself, lmms-eval 0.7.3 its local path
    audio_theirs = [p for b in lmms for m in b["messages"] if isinstance(m["content"], list) for p in m["content"]
                    if p["type"] == "audio_url"]
    audio_ours = [p for b in avhb for m in b["messages"] if isinstance(m["content"], list) for p in m["content"]
                  if p["type"] == "input_audio"]
    assert len(audio_theirs) == len(audio_ours) == 5
    assert audio_theirs[0]["audio_url"]["url"].endswith("tone.wav") and audio_ours[0]["input_audio"]["format"] == "wav"


def test_same_scores(runs):
    theirs, ours = runs["lmms"]["results"]["results"], runs["avhb"]["results"]["results"]
    compared = 0
    for task in runs["tasks"]:
        for key, value in theirs[task].items():
            if "," not in key or "_stderr" in key or not isinstance(value, (int, float)):
                continue
            metric = key.split(",", 1)[0]
            mine = ours[f"{NS}/{task}"][metric]
            assert math.isclose(float(value), mine, abs_tol=1e-9), (task, key, value, mine)
            compared += 1
    assert compared >= 11
    values = {round(float(v), 6) for t in runs["tasks"] for k, v in theirs[t].items()
              if "," in k and "_stderr" not in k and isinstance(v, (int, float))}
    assert len(values) > 3  # not all the same number
