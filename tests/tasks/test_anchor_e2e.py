"""End to end: the ANCHOR sample pack through the CLI, against one scripted
OpenAI-compatible server on 127.0.0.1 playing the model (``alpha``, ``beta``)
and a panel of three judges (``j1``, ``j2``, ``j3``; ``j1`` alone answers
``answer_acc``, ``jd`` rates dispersion).  Every number asserted is computed
by hand in the comments.

Samples (sample pack order) and their tags: s1 bell_0001:0, s2 bell_0001:2
(end <= start: whole video), s3 drum_0002:0, s4 speech_0003:0 and s5
speech_0003:1 (format B: no gold CoT, so no hallucination / divergence),
s6 long_0004:0 (10 s: Socratic with ``--media 'chunks={seconds: 4}'``,
chunks 0-4, 4-8, 8-10 s + synthesis).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from avhb.plugins.metrics.conciseness import count_tokens
from tests.conftest import run_cli
from tests.servers.openai_server import ScriptedServer

KEY = {"OPENAI_API_KEY": "sk-test-anchor-e2e"}
QUESTIONS = {
    "What object makes the ringing sound, and when is it heard?": "s1",
    "What does the speaker ask for?": "s2",
    "How many times is the blue drum hit while it slides across?": "s3",
    "Which animal does the speaker mention?": "s4",
    "What shape is on screen while the speaker talks?": "s5",
    "What happens right after the beep?": "s6",
}
# response length in cl100k_base tokens: alpha 20..70, beta 25..75
TOKENS = {"alpha": dict(zip(["s1", "s2", "s3", "s4", "s5", "s6"], [20, 30, 40, 50, 60, 70])),
          "beta": dict(zip(["s1", "s2", "s3", "s4", "s5", "s6"], [25, 35, 45, 55, 65, 75]))}
RIGHT = {"alpha": {"s1", "s2", "s4", "s6"}, "beta": {"s1", "s2", "s3", "s6"}}
# repeats (of 8) answered wrong in the difficulty runs
WRONG_REPEATS = {("alpha", "s3"): {0, 1, 2, 3, 4, 5}, ("beta", "s3"): {0, 1, 2, 3, 4},
                 ("alpha", "s2"): {0, 1, 2}, ("beta", "s2"): {0, 1, 2, 3}}
BAD = "I am unsure."  # not {"rating": k}: unparsable, re-asked twice, then counted
# (role, model, sample) -> ratings of (j1, j2, j3)
RATINGS = {
    ("answer", "alpha", "s1"): (5, 5, 5), ("answer", "alpha", "s2"): (5, 5, 4), ("answer", "alpha", "s3"): (1, 1, BAD),
    ("answer", "alpha", "s4"): (1, 1, 1), ("answer", "alpha", "s5"): (5, 5, 5), ("answer", "alpha", "s6"): (1, 1, 1),
    ("hallucination", "alpha", "s1"): (4, 5, 3), ("hallucination", "alpha", "s2"): (2, 2, 2),
    ("hallucination", "alpha", "s3"): (5, 4, BAD), ("hallucination", "alpha", "s6"): (3, 3, 3),
    ("divergence", "alpha", "s1"): (3, 3, 3), ("divergence", "alpha", "s2"): (4, 5, 5),
    ("divergence", "alpha", "s3"): (1, 1, 2), ("divergence", "alpha", "s6"): (BAD, BAD, BAD),
    ("hallucination", "beta", "s1"): (3, 3, 2), ("hallucination", "beta", "s2"): (1, 1, 1),
    ("hallucination", "beta", "s3"): (2, 2, 2), ("hallucination", "beta", "s6"): (1, 3, 1),
}
DISPERSION = {"s3": 2, "s2": 1}
GROUNDING = {  # shown frames are 80x60 (--media max_side=80): boxes in those pixels
    "bell": '{"intervals": [[0, 2]], "boxes": {"0": [30, 20, 20, 20], "1.0": [30, 20, 20, 20], "2": [35, 20, 20, 20]}}',
    "drum": 'Sure.\n```json\n{"intervals": [[1, 4]], "boxes": {"1": [19.3, 20, 20, 20]}}\n```',
    "sun": "The sun is at the top of the picture.",
}


def text_of(body: dict, roles: tuple[str, ...] = ("system", "user", "assistant")) -> str:
    out = []
    for m in body["messages"]:
        if m["role"] not in roles:
            continue
        c = m["content"]
        out.append(c if isinstance(c, str) else "\n".join(p.get("text", "") for p in c if p.get("type") == "text"))
    return "\n".join(out)


def padded(tag: str, final: str, tokens: int) -> str:
    """A structured answer of exactly ``tokens`` cl100k_base tokens."""
    for pad in range(200):
        text = f"[{tag}]" + " a" * pad + f"\nFinal Answer: [{tag}] {final}"
        if count_tokens(text) == tokens:
            return text
    raise AssertionError(f"cannot pad {tag} to {tokens} tokens")


def model_reply(model: str, body: dict) -> str:
    text = text_of(body)
    if "Locate the target" in text:
        return GROUNDING[re.search(r'Locate the target "(\w+)"', text).group(1)]
    m = re.search(r"This is part (\d) of (\d)", text)
    if m:
        return f"NOTE{m.group(1)}: the picture and the sound in part {m.group(1)}"
    sample = next(tag for q, tag in QUESTIONS.items() if q in text)
    repeat = int(body.get("seed", 1234)) - 1234
    if repeat or "difficulty" in body["model"]:
        wrong = repeat in WRONG_REPEATS.get((model, sample), set())
        return padded(f"{model}:{sample}:r{repeat}", "WRONG" if wrong else "RIGHT", 30)
    return padded(f"{model}:{sample}", "RIGHT" if sample in RIGHT[model] else "WRONG", TOKENS[model][sample])


def judge_reply(judge: str, body: dict) -> str:
    text = text_of(body, ("user", "assistant"))  # the system line is the judges' fence note
    if text.startswith("Several models answered"):
        return '{"rating": %d}' % DISPERSION["s3" if "drum" in text else "s2"]
    tag = re.search(r"\[(alpha|beta):(s\d)", text)
    model, sample = tag.group(1), tag.group(2)
    if text.startswith("Decide whether"):
        return "Yes" if "RIGHT" in text else "No"
    role = ("answer" if text.startswith("You are grading") else "hallucination" if "for hallucination" in text[:80]
            else "divergence")
    value = RATINGS.get((role, model, sample), (4, 4, 4) if model == "beta" else (3, 3, 3))[int(judge[1]) - 1]
    return value if value == BAD else '{"rating": %d}\nbecause' % value


def reply(body: dict) -> str:
    name = body["model"]
    if name.startswith("j"):
        return judge_reply(name, body)
    return model_reply(name.split("-")[0], body)


def _judges(url: str, roles=("answer", "hallucination", "divergence")) -> list[str]:
    flags = [f"--judge={role}=openai:{j},base_url={url}" for role in roles for j in ("j1", "j2", "j3")]
    return flags + [f"--judge=answer_acc=openai:j1,base_url={url}"]


def _run(out: Path, url: str, model: str, *extra: str) -> dict:
    proc = run_cli("--tasks", "anchor,anchor_grounding", "--sample-data", "--model",
                   f"openai:{model},base_url={url},audio=true", *_judges(url), "--media",
                   "chunks={seconds: 4},max_side=80", "--output-dir", str(out), "--no-report", *extra, env=KEY)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((out / "results.json").read_text())


def test_anchor_sample_pack_end_to_end(tmp_path):
    with ScriptedServer(reply=reply) as srv:
        a, b = tmp_path / "alpha", tmp_path / "beta"
        res = _run(a, srv.base_url, "alpha")
        _run(b, srv.base_url, "beta")
        r = res["results"]["anchor"]

        # answer: s1 5, s2 14/3, s3 (1, 1, unparsable) -> 1, s4 1, s5 5, s6 1 -> 53/18
        assert r["answer"] == pytest.approx(53 / 18) and r["answer_n"] == 6
        assert r["answer_member_failures"] == 1 and r["answer_judge_failures"] == 0
        # hallucination over the 4 gold-CoT samples: 4, 2, (5+4)/2, 3 -> 13.5/4
        assert r["hallucination"] == pytest.approx(3.375) and r["hallucination_n"] == 4
        assert r["hallucination_no_gold"] == 2 and r["hallucination_member_failures"] == 1
        # divergence: 3, 14/3, 4/3; s6's three judges all unparsable -> excluded, counted
        assert r["divergence"] == pytest.approx(3.0) and r["divergence_n"] == 3
        assert r["divergence_judge_failures"] == 1 and r["divergence_member_failures"] == 3
        assert r["judge_failures"] == 1 and r["errors"] == 0 and r["samples"] == 6
        # conciseness within the run: counts 20..70, cuts (linear) 30, 40, 50, 60 -> 5,5,4,3,2,1
        assert r["conciseness"] == pytest.approx(20 / 6) and r["conciseness_tokens"] == pytest.approx(45.0)
        # answer_acc (j1 alone): right on s1, s2, s4, s6
        assert r["answer_acc"] == pytest.approx(4 / 6) and r["answer_acc_n"] == 6

        # kappa, upstream's definition (items every judge rated, each pair's observed labels).
        # answer: all-rated items s1 s2 s4 s5 s6; j1 = j2 = [5,5,1,5,1] (kappa 1), j3 = [5,4,1,5,1].
        # j1~j3 on labels {1,4,5}: sum w*O = 1; rows (1: 2, 5: 3), cols (1: 2, 4: 1, 5: 2):
        # sum w*E = (2*(0+1+4) + 3*(4+1+0))/5 = 5 -> 0.8 (quadratic: (2*9 + 3*9)/5 = 9 -> 8/9).
        assert r["answer_agreement"] == pytest.approx((1 + 0.8 + 0.8) / 3)
        assert r["answer_agreement_kappa_quadratic"] == pytest.approx((1 + 8 / 9 + 8 / 9) / 3)
        assert r["answer_agreement_n"] == 5
        # hallucination: all-rated s1 s2 s6; j1 [4,2,3], j2 [5,2,3], j3 [3,2,3].  j1~j2 (labels {2,3,4,5}):
        # 1 - 1/(11/3) = 8/11; j1~j3 (labels {2,3,4}) and j2~j3 (labels {2,3,5}, so 5 sits next to 3):
        # 1 - 1/(7/3) = 4/7 each -> mean 48/77
        assert r["hallucination_agreement"] == pytest.approx(48 / 77)
        assert r["hallucination_agreement_kappa_linear_j0_j2"] == pytest.approx(4 / 7)

        # Socratic: s6 read as three 4 s chunks + a synthesis without media
        lines = {json.loads(x)["id"]: json.loads(x) for x in (a / "samples" / "anchor.jsonl").read_text().splitlines()}
        long = lines["long_0004:0"]
        assert [s["step"] for s in long["trajectory"]] == ["socratic", "chunk1", "chunk2", "chunk3", "synthesis"]
        assert long["trajectory"][0]["chunks"] == [[0.0, 4.0], [4.0, 8.0], [8.0, 10.0]]
        assert long["response"].endswith("[alpha:s6] RIGHT")
        assert [s["step"] for s in lines["bell_0001:0"]["trajectory"]] == [None]  # a short clip: one call
        bodies = [r.body for r in srv.requests if r.body["model"] == "alpha"]
        chunk3 = next(x for x in bodies if "This is part 3 of 3" in text_of(x))
        assert "Your notes on part 2:\nNOTE2" in text_of(chunk3)
        synthesis = next(x for x in bodies if "You have now watched all 3 parts" in text_of(x))
        assert all(f"NOTE{k}" in text_of(synthesis) for k in (1, 2, 3))
        assert isinstance(synthesis["messages"][-1]["content"], str)  # no media

        # grounding (shown 80x60 = source / 2).  bell: gold [0,3] (cues 0-3 and 1-2 s merged), pred [0,2]:
        # P 1, R 2/3, F1 0.8; boxes at 0, 1, 2, 3 s: IoU 1, 1, 0.6 ((70..100 x 40) / 2000), 0 (missing).
        # drum: pred [1,4] vs [0,3]: P = R = F1 = 2/3; box at 1 s exact (1), at 0, 2, 3 s missing.
        # sun: no JSON -> unparsed, 0 on every count and each of its 4 gold boxes.
        g = res["results"]["anchor_grounding"]
        assert g["box_iou"] == pytest.approx(3.6 / 12) and g["box_iou_n"] == 12
        assert g["box_iou_at_0.5"] == pytest.approx(4 / 12)
        assert g["temporal_precision"] == pytest.approx(5 / 9) and g["temporal_recall"] == pytest.approx(4 / 9)
        assert g["temporal_f1"] == pytest.approx((0.8 + 2 / 3) / 3)
        assert g["temporal_f1_of_means"] == pytest.approx(2 * (5 / 9) * (4 / 9) / (5 / 9 + 4 / 9))
        assert g["temporal_unparsed"] == 1 and g["box_iou_unparsed"] == 1 and g["errors"] == 0

        # conciseness pooled over both runs: counts 20, 25, ..., 75 -> cuts 31, 42, 53, 64:
        # alpha 5,5,4,3,2,1 -> 20/6; beta (25..75) 5,4,3,2,1,1 -> 16/6.  Re-scoring makes no call.
        calls = srv.count
        proc = run_cli("score", str(a), "--no-report", "--pool", str(b), env=KEY)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert srv.count == calls and not (a / "report.html").exists()
        pooled = json.loads((a / "pooled.json").read_text())["results"]["anchor"]
        values = {label.split(" ")[0]: cells for label, cells in pooled.items()}
        assert values["openai:alpha"]["conciseness_pooled"] == pytest.approx(20 / 6)
        assert values["openai:beta"]["conciseness_pooled"] == pytest.approx(16 / 6)
        assert json.loads((a / "results.json").read_text())["results"]["anchor"] == r

        # anchor-compare alpha beta: both right on s1, s2, s6 (s4 beta wrong, s3 alpha wrong).
        # hallucination gaps (A - B): s1 4 - 8/3 = 4/3, s2 2 - 1 = 1.0 (not > 1.0), s6 3 - 5/3 = 4/3
        proc = run_cli("anchor-compare", str(a), str(b), env=KEY)
        assert proc.returncode == 0, proc.stderr[-3000:]
        cmp = json.loads((a / "anchor_compare" / "beta.json").read_text())["tasks"]["anchor"]
        assert cmp["both_right"] == 3 and cmp["rated"] == 3
        assert (cmp["lower_by_1"], cmp["lower_by_1.5"]) == (2, 0)
        # s1: (4,5,3) vs (3,3,2): every judge lower; s6: (3,3,3) vs (1,3,1): j2 is not
        assert cmp["all_judges_agree"] == 1 and cmp["all_judges_agree_share"] == pytest.approx(0.5)
        assert srv.count == calls


@pytest.mark.slow  # 16 rollouts per question through the CLI: about 45 s
def test_anchor_difficulty_over_16_rollouts(tmp_path):
    with ScriptedServer(reply=reply) as srv:
        runs = []
        for model in ("alpha", "beta"):
            out = tmp_path / model
            proc = run_cli("--tasks", "anchor", "--sample-data", "--samples", "drum_0002:0,bell_0001:2",
                           "--repeats", "8", "--model", f"openai:{model}-difficulty,base_url={srv.base_url},audio=true",
                           *_judges(srv.base_url), "--output-dir", str(out),
                           "--no-report", env=KEY)
            assert proc.returncode == 0, proc.stderr[-3000:]
            runs.append(out)
        cmd = ["anchor-difficulty", *map(str, runs), f"--judge=dispersion=openai:jd,base_url={srv.base_url}"]
        proc = run_cli(*cmd, env=KEY)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "warning" not in proc.stderr  # 16 rollouts each: the paper's count
        graded = {json.loads(x)["id"]: json.loads(x) for x in
                  (runs[0] / "difficulty" / "anchor.jsonl").read_text().splitlines()}
        drum, bell = graded["drum_0002:0"], graded["bell_0001:2"]
        # drum: alpha wrong on 6 of 8, beta on 5 -> n_mismatch 11 >= 10: Difficult; s_sim 2 -> Easy; max Difficult
        assert (drum["rollouts"], drum["n_mismatch"], drum["s_sim"]) == (16, 11, 2.0)
        assert (drum["d_disagree"], drum["d_score"], drum["difficulty"]) == ("Difficult", "Easy", "Difficult")
        # bell:2: 3 + 4 = 7 -> Medium; s_sim 1 -> Easy; max Medium
        assert (bell["n_mismatch"], bell["s_sim"], bell["difficulty"]) == (7, 1.0, "Medium")
        assert [a["answer"] for a in drum["answers"]][:2] == ["[alpha:s3:r0] WRONG", "[alpha:s3:r1] WRONG"]
        summary = json.loads((runs[0] / "difficulty" / "summary.json").read_text())["tasks"]["anchor"]
        assert (summary["Easy"], summary["Medium"], summary["Difficult"]) == (0, 1, 1)
        assert summary["share_difficult"] == 0.5 and summary["rollouts"] == {"16": 2}
        dispersion = [r.body for r in srv.requests if r.body["model"] == "jd"]
        assert len(dispersion) == 2 and "The 16 final answers" in text_of(dispersion[0])
        # the judge calls are journaled in the first run: a second grading makes none
        calls = srv.count
        proc = run_cli(*cmd, env=KEY)
        assert proc.returncode == 0 and srv.count == calls
        # one run alone: 8 rollouts per question, graded with a warning (the thresholds assume 16)
        proc = run_cli("anchor-difficulty", str(runs[0]), f"--judge=dispersion=openai:jd,base_url={srv.base_url}",
                       env=KEY)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "anchor: 8 rollouts: 2 questions; the paper grades 16" in proc.stderr
        alone = {json.loads(x)["id"]: json.loads(x) for x in
                 (runs[0] / "difficulty" / "anchor.jsonl").read_text().splitlines()}
        assert (alone["drum_0002:0"]["n_mismatch"], alone["drum_0002:0"]["difficulty"]) == (6, "Medium")
