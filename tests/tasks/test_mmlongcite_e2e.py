"""End to end: the MMLongCite sample pack through the CLI, against the
scripted OpenAI-compatible server on 127.0.0.1 as the model AND as an
image-seeing judge.  The judge decides entailment from what it was really
sent: text units from the premise, image units from the pixels of the
attached images (each sample image has a colour band that names it), so a
premise whose image did not arrive is not entailed and the numbers below
would not hold.  Every number is computed by hand in the comments.

Items (unit indices 1-based; see tasks/mmlongcite/make_sample.py):
101 single-source MCQ 8K   "Cloud ... 18% [2]" ok; "four segments [1][4]" ok, [4] unnecessary
                           CR 1, CP 2/3, F1 0.8, cor 1 -> over_citation
102 single-source open 16K "revenue 4,210 [3]" unsupported; "rose from 2020 [1][2]" both necessary
                           CR 1/2, CP 2/3, F1 4/7, cor 1 -> citation_hallucination
103 single-source MCQ 32K  17 pages: over the 1200-token budget -> fails alone (error, not scored)
    HR easy (5 grids)      "value 61 [6]" ok: CR 1, CP 1, F1 1, cor 1 -> correct
    HR hard (2 grids)      "value 16 [7]" unsupported, answer B: all 0 -> joint_failure
201 multi-source MCQ 8K    two cited statements ok, one uncited
                           CR 2/3, CP 1, F1 0.8, cor 1 -> citation_omission
202 multi-source open 16K  "directed by Jean Roux [2]" ok; "born in Lyon [1]" no; answer Lyon
                           CR 1/2, CP 1/2, F1 0.5, cor 0, cites evidence [2] -> comprehension_failure
301 grounding MCQ 8K       "[4][9]" out of range; "the last one" -> answer_matcher D
                           CR 0, CP 0, F1 0, cor 1 -> citation_hallucination
302 grounding open 16K     "Yes, there is a dog." no citation, no final-answer line
                           CR 0, CP 0, F1 0, cor 1 (scorer on the whole reply) -> format_error
401 video MCQ 8K           both statements ok, one citation each: CR 1, CP 1, F1 1, cor 1 -> correct
402 video open 16K         "green cube [1]" unsupported, wrong: all 0, cor 0 -> joint_failure
"""
from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.conftest import ROOT, run_cli
from tests.servers.openai_server import ScriptedServer, unfence

PACK = ROOT / "tasks" / "mmlongcite"
SAMPLE = PACK / "sample"
BAND = (3, 12)  # rows of the colour band read back

MODEL = {
    101: "Cloud grew fastest in 2021, by 18% [2].\nThe report covers four business segments [1][4].\nFinal answer: B",
    102: "Total revenue in 2021 was 4,210 million [3].\nRevenue rose from 2020 [1][2].\nFinal answer: 4,210 million",
    201: "The product launched in 2019 [1].\nSales doubled after the launch [3].\n"
         "So sales started to double in 2019.\nFinal answer: C",
    202: "Film X was directed by Jean Roux [2].\nJean Roux was born in Lyon [1].\nFinal answer: Lyon",
    301: "The fourth image shows a red circle [4][9].\nFinal answer: the last one",
    302: "Yes, there is a dog.",
    401: "A ball appears at 10 seconds [2].\nThen it rolls to the left [3].\nFinal answer: A",
    402: "A green cube enters the scene [1].\nFinal answer: a green cube",
}
HR_REPLY = {5: "Page 6 shows the value 61 [6].\nFinal answer: A",   # easy: 5 grid images
            2: "Page 6 shows the value 16 [7].\nFinal answer: B"}   # hard: 2 grid images
# hypothesis -> unit sets that entail it (any one suffices)
ENTAILS = {
    "Cloud grew fastest in 2021, by 18%.": [{(101, 2)}],
    "The report covers four business segments.": [{(101, 1)}],
    "Total revenue in 2021 was 4,210 million.": [{(102, 1)}],
    "Revenue rose from 2020.": [{(102, 1), (102, 2)}],
    "Page 6 shows the value 61.": [{(103, 6)}],
    "Page 6 shows the value 16.": [],
    "The product launched in 2019.": [{(201, 1)}],
    "Sales doubled after the launch.": [{(201, 3)}],
    "Film X was directed by Jean Roux.": [{(202, 2)}, {(202, 3)}],
    "Jean Roux was born in Lyon.": [],
    "A ball appears at 10 seconds.": [{(401, 2)}],
    "Then it rolls to the left.": [{(401, 3)}],
    "A green cube enters the scene.": [],
}
SCORER = {("4,210 million", "4,210 million"): "yes", ("Lyon", "Paris"): "no",
          ("Yes, there is a dog.", "yes"): "yes", ("a green cube", "a red ball"): "no"}
MATCHER = {"the last one": "D"}


def _rows():
    rows = {}
    for f in sorted((SAMPLE / "data" / "mmlongcite").glob("*.jsonl")):
        for line in f.read_text().splitlines():
            row = json.loads(line)
            rows[row["id"]] = row
    return rows


def _band(arr: np.ndarray) -> np.ndarray:
    return arr[BAND[0]:BAND[1], 5:-5].reshape(-1, 3).mean(axis=0)


def _unit_tables():
    """colour band -> (item, unit) for every image unit; text -> (item, unit)."""
    colours, texts = [], {}
    for rid, row in _rows().items():
        for i, unit in enumerate(row["context"], 1):
            if unit["type"] == "text":
                texts[unit["text"]] = (rid, i)
            else:
                path = SAMPLE / "images" / Path(unit["image"]).relative_to("image")
                colours.append((_band(np.asarray(Image.open(path).convert("RGB"))), (rid, i)))
    return colours, texts


class Judge:
    """The scripted judge's decisions, from what each request really carries."""

    def __init__(self):
        self.colours, self.texts = _unit_tables()
        self.violations: list[str] = []
        self.image_requests = 0
        self.seen_images: list[tuple[int, int]] = []

    def identify(self, url: str) -> tuple[int, int] | None:
        raw = base64.b64decode(url.split(",", 1)[1])
        band = _band(np.asarray(Image.open(io.BytesIO(raw)).convert("RGB")))
        dist, key = min((float(np.abs(c - band).max()), k) for c, k in self.colours)
        return key if dist < 25 else None

    def __call__(self, body: dict) -> str:
        content = body["messages"][-1]["content"]
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        text = unfence("\n".join(p["text"] for p in parts if p["type"] == "text"))  # judges' fields are fenced
        if text.startswith("You check whether a statement"):
            return self.entailment(text, parts)
        if text.startswith("You grade"):
            answer = re.search(r"<<<ANSWER\n(.*)\nANSWER>>>", text, re.S).group(1)
            reference = re.search(r"<<<REFERENCE\n(.*)\nREFERENCE>>>", text, re.S).group(1)
            return SCORER.get((answer, reference), "unknown")
        if text.startswith("You map a model's reply"):
            return MATCHER.get(re.search(r"<<<REPLY\n(.*)\nREPLY>>>", text, re.S).group(1), "Z")
        self.violations.append(f"unknown judge prompt: {text[:80]!r}")
        return "?"

    def entailment(self, text: str, parts: list[dict]) -> str:
        premise = re.search(r"<<<EVIDENCE\n(.*)\nEVIDENCE>>>", text, re.S).group(1)
        hypothesis = re.search(r"<<<STATEMENT\n(.*)\nSTATEMENT>>>", text, re.S).group(1)
        seen: set[tuple[int, int]] = set()
        wanted_images = []
        for para in premise.split("\n\n"):
            m = re.match(r"\[(\d+)\] (.*)$", para, re.S)
            if m.group(2) == f"(image [{m.group(1)}], attached)":
                wanted_images.append(int(m.group(1)))
            elif m.group(2) in self.texts:
                seen.add(self.texts[m.group(2)])
            else:
                self.violations.append(f"unknown text unit {para!r}")
        labels = [parts[k - 1]["text"] for k, p in enumerate(parts) if p["type"] == "image_url"]
        images = [self.identify(p["image_url"]["url"]) for p in parts if p["type"] == "image_url"]
        if images:
            self.image_requests += 1
        for label, key in zip(labels, images):
            if key is None or label != f"[{key[1]}]":
                self.violations.append(f"image labelled {label} is {key}")
            else:
                seen.add(key)
                self.seen_images.append(key)
        # the judge request carries the image of every cited image unit
        if sorted(k[1] for k in images if k) != sorted(wanted_images):
            self.violations.append(f"{hypothesis!r}: premise names images {wanted_images}, request carries {images}")
        if len({k[0] for k in seen}) > 1:
            self.violations.append(f"units of several items in one premise: {seen}")
        return "yes" if any(need <= seen for need in ENTAILS[hypothesis]) else "no"


def _model_reply(body: dict, log: list) -> str:
    content = body["messages"][-1]["content"]
    texts = [p["text"] for p in content if p["type"] == "text"]
    images = sum(p["type"] == "image_url" for p in content)
    question = texts[-1]
    log.append((question.splitlines()[1], images, texts))
    if "value printed on page 6" in question:
        return HR_REPLY[images]
    for rid, row in _rows().items():
        if row["question"][0]["text"].splitlines()[0] in question:
            return MODEL[rid]
    return "no script for this question"


@pytest.fixture
def server():
    judge = Judge()
    model_log: list = []

    def reply(body):
        return judge(body) if body["model"] == "mmlc-judge" else _model_reply(body, model_log)

    with ScriptedServer(reply=reply) as srv:
        srv.judge, srv.model_log = judge, model_log
        yield srv


def _args(srv, out: Path, judge_images: int = 4) -> list[str]:
    judge = f"openai:mmlc-judge,base_url={srv.base_url},images_per_request={judge_images}"
    return ["--tasks", "mmlongcite,mmlongcite_hr_easy,mmlongcite_hr_hard", "--sample-data",
            "--model", f"openai:mmlc-model,base_url={srv.base_url},max_context=1200,tokens_per_frame=100",
            "--judge", f"entailment={judge}", "--judge", f"answer_matcher={judge}", "--judge", f"scorer={judge}",
            "--no-report", "--output-dir", str(out),
            "--max-errors", "50%"]  # the over-budget item fails on purpose (1 of 3 in its task)


def _samples(out: Path, task: str) -> dict:
    return {json.loads(x)["id"]: json.loads(x) for x in (out / "samples" / f"{task}.jsonl").read_text().splitlines()}


def test_sample_pack_end_to_end(tmp_path, server):
    out = tmp_path / "run"
    proc = run_cli(*_args(server, out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    r = res["results"]
    judge = server.judge
    assert judge.violations == []
    assert judge.image_requests >= 8
    assert {(101, 2), (102, 1), (102, 3), (201, 1), (201, 3), (401, 2), (401, 3), (402, 1), (103, 6)} <= \
        set(judge.seen_images)

    # -- single-source: 101 and 102 scored; 103 over budget, failed alone
    s = r["mmlongcite_single_source"]
    assert (s["samples"], s["errors"]) == (3, 1)
    assert s["citation_recall"] == pytest.approx((1 + 0.5) / 2) and s["citation_recall_n"] == 2
    assert s["citation_precision"] == pytest.approx((2 / 3 + 2 / 3) / 2)
    assert s["citation_f1"] == pytest.approx((0.8 + 4 / 7) / 2)
    assert s["citation_f1_of_means"] == pytest.approx(2 * (2 / 3) * 0.75 / (2 / 3 + 0.75))
    assert s["cor"] == pytest.approx(1.0) and s["cor_n"] == 2
    assert (s["taxonomy_errors"], s["taxonomy_correct"]) == (2, 0)
    assert (s["taxonomy_over_citation_count"], s["taxonomy_citation_hallucination_count"]) == (1, 1)
    assert s["taxonomy_over_citation"] == pytest.approx(0.5)
    single = _samples(out, "mmlongcite_single_source")
    assert single["103"]["error"].startswith("media: task mmlongcite_single_source: 17 images x 100 tokens + ")
    assert "> max context 1200" in single["103"]["error"]
    assert single["103"]["scores"] == {} and single["101"]["error"] is None
    assert not any("value printed on page 6" in q and n == 17 for q, n, _ in server.model_log)  # never sent

    # -- multi-source
    m = r["mmlongcite_multi_source"]
    assert m["errors"] == 0
    assert m["citation_recall"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert m["citation_precision"] == pytest.approx((1 + 0.5) / 2)
    assert m["citation_f1"] == pytest.approx((0.8 + 0.5) / 2)
    assert m["cor"] == pytest.approx(0.5)
    assert (m["taxonomy_citation_omission_count"], m["taxonomy_comprehension_failure_count"]) == (1, 1)

    # -- visual grounding: the out-of-range statement is never judged; the matcher maps "the last one"
    g = r["mmlongcite_visual_grounding"]
    assert (g["citation_recall"], g["citation_precision"], g["citation_f1"]) == (0.0, 0.0, 0.0)
    assert g["cor"] == pytest.approx(1.0) and g["cor_unparsed"] == 0
    assert (g["taxonomy_citation_hallucination_count"], g["taxonomy_format_error_count"]) == (1, 1)
    grounding = _samples(out, "mmlongcite_visual_grounding")
    assert grounding["301"]["flags"]["cor"]["by"] == "judge" and grounding["301"]["flags"]["cor"]["letter"] == "D"

    # -- video
    v = r["mmlongcite_video"]
    assert (v["citation_recall"], v["citation_precision"], v["citation_f1"], v["cor"]) == (0.5, 0.5, 0.5, 0.5)
    assert (v["taxonomy_correct"], v["taxonomy_errors"], v["taxonomy_joint_failure"]) == (1, 1, 1.0)

    # -- per bucket (breakdowns)
    b = res["breakdowns"]
    assert b["mmlongcite_single_source"]["length_bucket"]["8K"]["citation_f1"] == pytest.approx(0.8)
    assert b["mmlongcite_single_source"]["length_bucket"]["16K"]["citation_f1"] == pytest.approx(4 / 7)
    assert b["mmlongcite_single_source"]["length_bucket"]["32K"]["citation_f1_n"] == 0  # only the failed 103
    assert b["mmlongcite_multi_source"]["length_bucket"]["16K"]["taxonomy_comprehension_failure_count"] == 1
    assert b["mmlongcite_multi_source"]["dataset"]["slidevqa"]["taxonomy_citation_omission_count"] == 1
    assert b["mmlongcite_video"]["length_bucket"]["8K"]["taxonomy_correct"] == 1
    assert b["mmlongcite_video"]["length_bucket"]["16K"]["taxonomy_joint_failure_count"] == 1
    assert b["mmlongcite_visual_grounding"]["length_bucket"]["16K"]["taxonomy_format_error_count"] == 1
    assert b["mmlongcite_visual_grounding"]["task"]["VG_Single_Needle"]["taxonomy_citation_hallucination_count"] == 1

    # -- the group: four families of two scored answers each
    grp = res["groups"]["mmlongcite"]
    assert grp["citation_f1"] == pytest.approx(((0.8 + 4 / 7) / 2 + 0.65 + 0.0 + 0.5) / 4)
    assert grp["cor"] == pytest.approx((1 + 0.5 + 1 + 0.5) / 4)

    # -- HR: the 17-page item fits as grids; the judge still sees original unit 6 alone
    e, h = r["mmlongcite_hr_easy"], r["mmlongcite_hr_hard"]
    assert (e["errors"], e["citation_f1"], e["cor"], e["taxonomy_correct"]) == (0, 1.0, 1.0, 1)
    assert (h["errors"], h["citation_f1"], h["cor"], h["taxonomy_joint_failure_count"]) == (0, 0.0, 0.0, 1)
    hr_calls = sorted(n for q, n, _ in server.model_log if "value printed on page 6" in q)
    assert hr_calls == [2, 5]
    easy = next(t for q, n, t in server.model_log if n == 5)
    assert easy[1].startswith("Units [1]-[4], one stitched image") and "[17]" in easy

    # -- the model saw numbered units: text as "[i] text", images labelled "[i]" just before them
    first = next(t for q, n, t in server.model_log if "segment grew fastest" in q)
    assert first[:4] == ["Context:", "[1] Annual report 2021, page 4: the company reports four business segments.",
                         "[2]", "[3]"]
    assert first[4].startswith("[4] The board met twice")


def test_text_only_judge_refused_before_any_call(tmp_path, server):
    proc = run_cli(*_args(server, tmp_path / "run", judge_images=0))
    assert proc.returncode == 2
    assert "entailment" in proc.stderr and "sees no images" in proc.stderr
    assert server.count == 0


def test_hr_grids_built_by_the_pack_are_sent(tmp_path, server, isolated_cache):
    """A release without shipped HR rows: avhb builds the grids of the
    hr_datasets rows (101, 102, 103, 202) in its cache, outside the data
    root.  They are the pack's own media, not paths the data named, so media
    confinement lets them through: no sample fails, the model sees the
    grids (103: 5 easy grids, 2 hard), and the numbers are the shipped
    run's (103 easy F1 1; hard joint failure) plus the three other rows
    scored as in their family tasks (101 F1 0.8, 102 4/7, 202 0.5)."""
    import shutil

    release = tmp_path / "release"
    shutil.copytree(SAMPLE, release)
    shutil.rmtree(release / "data" / "mmlongcite-hr")
    out = tmp_path / "run"
    args = _args(server, out)
    args[args.index("--tasks") + 1] = "mmlongcite_hr_easy,mmlongcite_hr_hard"
    args[args.index("--sample-data"):args.index("--sample-data") + 1] = ["--data", f"mmlongcite={release}"]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert server.judge.violations == []
    r = json.loads((out / "results.json").read_text())["results"]
    for task in ("mmlongcite_hr_easy", "mmlongcite_hr_hard"):
        samples = _samples(out, task)
        assert sorted(samples) == ["101", "102", "103", "202"]
        assert [s["error"] for s in samples.values()] == [None] * 4, task
        images = [i["path"] for s in samples.values() for i in s["media"]["images"]]
        assert images and all(Path(p).is_relative_to(isolated_cache / "built" / "mmlongcite-hr") for p in images)
        assert not any(Path(p).is_relative_to(release) for p in images)
    e, h = r["mmlongcite_hr_easy"], r["mmlongcite_hr_hard"]
    assert (e["samples"], e["errors"], h["errors"]) == (4, 0, 0)
    assert e["citation_f1"] == pytest.approx((0.8 + 4 / 7 + 1.0 + 0.5) / 4)
    assert h["citation_f1"] == pytest.approx((0.8 + 4 / 7 + 0.0 + 0.5) / 4)
    assert (e["taxonomy_correct"], h["taxonomy_joint_failure_count"]) == (1, 1)
    assert sorted(n for q, n, _ in server.model_log if "value printed on page 6" in q) == [2, 5]
