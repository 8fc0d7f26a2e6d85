"""End to end: the VidPair-Halluc sample pack through the CLI with a
scripted model and scripted judges; every number is computed by hand below.

The 16 binary rows of the sample pack, four per pair, in file order:
pos question on the positive video (gold yes), pos question on the
adversarial video (no), neg question on the positive video (no), neg
question on the adversarial video (yes).
"""
from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

SAMPLE = ROOT / "tasks" / "vidpair_halluc" / "sample"

BINARY = {
    # pair_0001 color (video level): all right
    "binary_00001": "Yes", "binary_00002": "No", "binary_00003": "No", "binary_00004": "Yes, it is blue.",
    # pair_0002 number (video level): the pos question wrong on the adversarial video (an FP)
    "binary_00005": "yes", "binary_00006": "Yes.", "binary_00007": "no", "binary_00008": "yes",
    # pair_0003 sequence (temporal): two unknowns: "Maybe." and the hedge "I don't know" (upstream's
    # substring rule would read it as "no", the *_upstream tasks do)
    "binary_00009": "Maybe.", "binary_00010": "No", "binary_00011": "I don't know", "binary_00012": "yes",
    # pair_0004 object (spatial): wrong on the positive video both times (one FN, one FP)
    "binary_00013": "No.", "binary_00014": "no", "binary_00015": "Yes", "binary_00016": "yes",
}
MCQ = {
    "multiple_choice_00001": "A", "multiple_choice_00002": "The answer is (B).",   # pair 1: both right
    "multiple_choice_00003": "A", "multiple_choice_00004": "A",                    # pair 2: adversarial wrong
    "multiple_choice_00005": "B", "multiple_choice_00006": "B",                    # pair 3: positive wrong
    "multiple_choice_00007": "a green square",   # no letter: the answer_matcher judge maps it to A (right)
    "multiple_choice_00008": "I am not sure",    # the judge says Z: unparsed, scored wrong
}
OPEN = {
    "open_ended_00001": "A red ball sits on a table.", "open_ended_00002": "A blue ball on a table.",
    "open_ended_00003": "Some squares.", "open_ended_00004": "A red ball.",
    "open_ended_00005": "A ball rolls left to right.", "open_ended_00006": "NONSENSE",
    "open_ended_00007": "A ball and a square.", "open_ended_00008": "A ball, a black gap, a ball.",
}
JUDGE = {
    "answer_matcher": {"a green square": "A", "I am not sure": "Z"},
    "scorer": {"A red ball sits on a table.": "2", "A blue ball on a table.": "2", "Some squares.": "1",
               "A red ball.": "0", "A ball rolls left to right.": "2", "NONSENSE": "I cannot decide",
               "A ball and a square.": "0", "A ball, a black gap, a ball.": "1"},
}

PLUGIN = '''
import json
from avhb.model.backend import Backend, Capabilities
from avhb.hookspecs import hookimpl
from avhb.model.messages import Response, VideoPart


class Replay(Backend):
    """Model: the reply for request.fields["sample_id"]; judge: the reply
    for (role, response).  Records the video paths it was sent."""

    capabilities = Capabilities(images=32, video=True, sees_pixels=True, max_context=1 << 20)
    concurrency = 4

    def __init__(self, spec):
        super().__init__(spec)
        with open(spec.args["replies"]) as fh:
            self.table = json.load(fh)

    async def generate(self, request):
        f = request.fields
        if "role" in f:
            reply = self.table["judges"][f["role"]].get(f.get("response"))
        else:
            videos = [p for m in request.messages for p in m.parts if isinstance(p, VideoPart)]
            if not videos or not videos[0].frames:
                return Response(text="", error="no decoded frames were sent")
            reply = self.table["model"].get(f.get("sample_id"))
        if reply is None:
            return Response(text="", error=f"no scripted reply for {f}")
        return Response(text=reply)


@hookimpl
def avhb_backends():
    return {"replay": "vp_replay:Replay"}
'''


@pytest.fixture
def replay(tmp_path, monkeypatch):
    """A throwaway plugin (``vptest/replay``) installed as a distribution on PYTHONPATH."""
    site = tmp_path / "site"
    (site / "vp_replay-0.1.dist-info").mkdir(parents=True)
    (site / "vp_replay.py").write_text(textwrap.dedent(PLUGIN))
    (site / "vp_replay-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: vp-replay\nVersion: 0.1\n")
    (site / "vp_replay-0.1.dist-info" / "entry_points.txt").write_text("[avhb]\nvptest = vp_replay\n")
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({"model": {**BINARY, **MCQ, **OPEN}, "judges": JUDGE}))
    monkeypatch.setenv("PYTHONPATH", str(site))
    spec = f"vptest/replay,replies={replies}"
    return ["--model", spec, "--judge", f"answer_matcher={spec}", "--judge", f"scorer={spec}"]


def _run(tmp_path: Path, replay: list[str], *extra: str) -> dict:
    out = tmp_path / "run"
    proc = run_cli("--tasks", "vidpair_halluc", *replay, *extra, "--no-report", "--output-dir", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    results["_out"] = out
    return results


def test_sample_pack_end_to_end(tmp_path, replay):
    res = _run(tmp_path, replay, "--sample-data")
    b = res["results"]["vidpair_binary"]
    # video-pair units: pair1 2/2, pair2 1/2, pair3 2/2 (right + unknown = right), pair4 0/2
    assert b["vAcc"] == pytest.approx(5 / 8) and b["vAcc_n"] == 8
    # question-pair units: pair1 2/2, pair2 1/2, pair3 1/1 (the unknown one excluded), pair4 1/2
    assert b["qAcc"] == pytest.approx(5 / 7) and b["qAcc_n"] == 7
    assert b["wAcc"] == pytest.approx(10 / 15) and b["wAcc_n"] == 15
    # 14 yes/no answers (the two hedges are not answers), 8 of them yes; 8 gold yes in the scored pairs (all rows)
    assert b["yes_diff"] == pytest.approx(0.0) and b["yes_diff_n"] == 14
    assert (b["yes_diff_model_yes"], b["yes_diff_gt_yes"]) == (8, 8)
    assert b["fp_rate"] == pytest.approx(2 / 14) and b["fp_rate_fp"] == 2
    assert (b["unknown"], b["unknown_missing"], b["unknown_skipped_pairs"]) == (2, 0, 0)
    # every count key carries its metric's name (no bare "fp", "missing", ...)
    assert not {"model_yes", "gt_yes", "fp", "missing", "skipped_pairs"} & set(b)
    assert b["errors"] == 0 and b["samples"] == 16
    for key in ("vAcc", "qAcc", "wAcc", "yes_diff", "fp_rate"):
        assert b[f"{key}_stderr"] is not None and b[f"{key}_stderr"] > 0

    levels = res["breakdowns"]["vidpair_binary"]["level"]
    assert levels["video"]["wAcc"] == pytest.approx(6 / 8)
    assert levels["temporal"]["vAcc"] == pytest.approx(1.0) and levels["temporal"]["qAcc_n"] == 1
    assert levels["temporal"]["yes_diff"] == pytest.approx((1 - 2) / 2)
    assert levels["spatial"]["wAcc"] == pytest.approx(1 / 4) and levels["spatial"]["fp_rate"] == pytest.approx(1 / 4)
    cats = res["breakdowns"]["vidpair_binary"]["category"]
    assert set(cats) == {"color", "number", "sequence", "object"}
    assert cats["color"]["wAcc"] == 1.0 and cats["number"]["vAcc"] == pytest.approx(0.5)

    m = res["results"]["vidpair_mcq"]
    assert m["mcq_f1"] == pytest.approx(5 / 8) and m["mcq_f1_n"] == 8  # upstream F1 = accuracy
    assert m["mcq_pair_acc"] == pytest.approx(1 / 4) and m["mcq_pair_acc_n"] == 4
    assert m["mcq_pair_acc_incomplete_pairs"] == 0
    # macro F1 over A, B: F1_A = 2*3/(2*3+1+1) = 0.75, F1_B = 2*2/(2*2+1+2) = 4/7
    assert m["mcq_macro_f1"] == pytest.approx((0.75 + 4 / 7) / 2)
    assert m["mcq_f1_unparsed"] == 1 and m["judge_failures"] == 0

    o = res["results"]["vidpair_open"]
    # 0-2 ratings / 2 of the 7 parsed replies; one judge reply never parsed (counted, excluded)
    assert o["open_score"] == pytest.approx((1 + 1 + 0.5 + 0 + 1 + 0 + 0.5) / 7) and o["open_score_n"] == 7
    assert o["judge_failures"] == 1 and o["open_score_judge_failures"] == 1

    g = res["groups"]["vidpair_halluc"]
    assert g["wAcc"] == pytest.approx(10 / 15) and g["mcq_f1"] == pytest.approx(5 / 8)

    lines = [json.loads(x) for x in (res["_out"] / "samples" / "vidpair_binary.jsonl").read_text().splitlines()]
    nine = next(x for x in lines if x["id"] == "binary_00009")
    assert nine["scores"]["binary_unknown"] == 1.0 and nine["scores"]["binary_correct"] is None
    assert len(nine["media"]["video"]["frame_indices"]) == 16  # the backend was sent decoded frames


def test_missing_video_fails_its_samples_only(tmp_path, replay):
    data = tmp_path / "release"
    shutil.copytree(SAMPLE, data)
    (data / "VidPair-Halluc" / "object_0004" / "M_object_0004_101.mp4").unlink()
    res = _run(tmp_path, replay, "--data", f"vidpair_halluc={data}", "--max-errors", "100%")
    b = res["results"]["vidpair_binary"]
    assert b["errors"] == 2 and b["unknown_missing"] == 2
    # pair4 keeps its two answers on the positive video (both wrong): vp 0/2; qp on it wrong, the other excluded
    assert b["vAcc"] == pytest.approx(5 / 8)
    assert b["qAcc"] == pytest.approx(4 / 6)
    assert b["wAcc"] == pytest.approx(9 / 14)
    # 12 answers, 7 yes, 7 gold yes (all rows of the scored pairs but the failed ones: docs/errors.md), 2 FP
    assert b["yes_diff"] == pytest.approx((7 - 7) / 12)
    assert b["fp_rate"] == pytest.approx(2 / 12)
    m = res["results"]["vidpair_mcq"]
    assert m["errors"] == 1 and m["mcq_f1_missing"] == 1 and m["mcq_f1_unparsed"] == 0
    assert m["mcq_f1"] == pytest.approx(5 / 7) and m["mcq_f1_n"] == 7  # the failed row is not an answer
    o = res["results"]["vidpair_open"]
    # the failed sample is excluded (it is never scored 0), the other six parsed ratings remain
    assert o["errors"] == 1 and o["open_score"] == pytest.approx((1 + 1 + 0.5 + 0 + 1 + 0) / 6)
    assert o["open_score_n"] == 6
    lines = [json.loads(x) for x in (res["_out"] / "samples" / "vidpair_binary.jsonl").read_text().splitlines()]
    failed = [x for x in lines if x.get("error")]
    assert sorted(x["id"] for x in failed) == ["binary_00014", "binary_00016"]
    assert all("video file missing" in x["error"] for x in failed)


def test_category_classes_on_the_sample_pack_by_hand(tmp_path, replay):
    """The paper's temporal / spatial classes of the categories: sequence is
    temporal; color, number and object are spatial (the level axis differs:
    object is at the spatial *level*, color and number at the video level)."""
    out = tmp_path / "run"
    proc = run_cli("--tasks", "vidpair_binary,vidpair_halluc_class_temporal,vidpair_halluc_class_spatial", *replay,
                   "--sample-data", "--no-report", "--output-dir", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    classes = res["breakdowns"]["vidpair_binary"]["category_class"]
    assert set(classes) == {"temporal", "spatial"}
    t, s = classes["temporal"], classes["spatial"]
    # temporal = pair3 (sequence): vp 2/2 (right + unknown = right), qp 1/1 -> wAcc 3/3; 2 answers, 1 yes, 2 gold yes
    assert (t["vAcc"], t["qAcc"], t["wAcc"], t["wAcc_n"]) == (1.0, 1.0, 1.0, 3)
    assert t["yes_diff"] == pytest.approx((1 - 2) / 2) and t["fp_rate"] == 0.0
    # spatial = pairs 1, 2, 4: vp 2/2 + 1/2 + 0/2, qp 2/2 + 1/2 + 1/2 -> wAcc 7/12; 12 answers, 7 yes, 6 gold yes, 2 FP
    assert s["vAcc"] == pytest.approx(3 / 6) and s["qAcc"] == pytest.approx(4 / 6)
    assert s["wAcc"] == pytest.approx(7 / 12) and s["wAcc_n"] == 12
    assert s["yes_diff"] == pytest.approx((7 - 6) / 12) and s["fp_rate"] == pytest.approx(2 / 12)
    # the class tasks hold only their class's rows and agree with the breakdown
    r = res["results"]
    assert r["vidpair_binary_class_temporal"]["samples"] == 4 and r["vidpair_binary_class_spatial"]["samples"] == 12
    assert r["vidpair_binary_class_spatial"]["wAcc"] == pytest.approx(7 / 12)
    # MCQ: temporal pair3 1/2 right, its pair wrong; spatial 4/6 right (pair4's A via the judge), pairs 1/3
    assert r["vidpair_mcq_class_temporal"]["mcq_f1"] == pytest.approx(0.5)
    assert r["vidpair_mcq_class_temporal"]["mcq_pair_acc"] == 0.0
    assert r["vidpair_mcq_class_spatial"]["mcq_f1"] == pytest.approx(4 / 6)
    assert r["vidpair_mcq_class_spatial"]["mcq_pair_acc"] == pytest.approx(1 / 3)
    # open: temporal pair3 [2/2; the unparsed one excluded]; spatial (1 + 1 + 0.5 + 0 + 0 + 0.5) / 6
    assert r["vidpair_open_class_temporal"]["open_score"] == 1.0 and r["vidpair_open_class_temporal"]["open_score_n"] == 1
    assert r["vidpair_open_class_spatial"]["open_score"] == pytest.approx(3 / 6)
    g_t, g_s = res["groups"]["vidpair_halluc_class_temporal"], res["groups"]["vidpair_halluc_class_spatial"]
    assert g_t["wAcc"] == 1.0 and g_t["mcq_f1"] == pytest.approx(0.5) and g_t["open_score"] == 1.0
    assert g_s["wAcc"] == pytest.approx(7 / 12) and g_s["mcq_f1"] == pytest.approx(4 / 6)
    lines = [json.loads(x) for x in (out / "samples" / "vidpair_binary.jsonl").read_text().splitlines()]
    assert {x["id"]: x["doc"]["category_class"] for x in lines}["binary_00009"] == "temporal"
