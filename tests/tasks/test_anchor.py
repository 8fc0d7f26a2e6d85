"""ANCHOR pack: loader, facets (a real judge panel on 127.0.0.1), conciseness,
agreement, difficulty grades, grounding and the ablation arms' request parts,
each on hand-computed cases."""
from __future__ import annotations

import re

import asyncio
import functools
import json
from pathlib import Path

import numpy as np
import pytest

from avhb.errors import UserError
from avhb.media.materialize import MediaPlan, materialize
from avhb.media.spec import MediaSpec
from avhb.model.backend import Capabilities, create_backend
from avhb.model.messages import AudioPart, VideoPart
from avhb.registry import get_registry
from avhb.runfolder.journal import Journal
from avhb.score.judges import Judges, parse_judge_bindings
from avhb.score.metric import SampleRecord, ScoreContext
from avhb.taskdef.index import build_index, load_task
from avhb.taskdef.requests import build_request
from avhb.run.task import Task
from avhb.tasks.anchor import data, difficulty, hooks
from avhb.plugins.metrics.conciseness import count_tokens
from tests.conftest import ROOT
from tests.servers.openai_server import ScriptedServer

SAMPLE = ROOT / "tasks" / "anchor" / "sample"


@functools.lru_cache(maxsize=None)
def task(name: str) -> Task:
    return Task(load_task(build_index(get_registry()), name), get_registry())


def metric(t: Task, name: str):
    return next(m for m in t.metrics() if m.name == name)


# ---------------------------------------------------------------- loader

LINE_A = {"version": "2.0.0", "annotation": {
    "video": {"src": "/data/anchor/clip_a.mp4"}, "keyframeList": [0, 5],
    "objectAnnotationListMap": {
        "0": [{"instance": 0, "labelId": "violin", "score": 0.9, "color": "#FF6B6B", "x": 10, "y": 20, "width": 30, "height": 40}],
        "5": [{"instance": 0, "labelId": "violin", "score": 0.9, "color": "#FF6B6B", "x": 12, "y": 20, "width": 30, "height": 40},
              {"instance": 1, "labelId": "bow", "score": 0.8, "color": "#00FF00", "x": 50, "y": 5, "width": 5, "height": 30}]},
    "actionAnnotationList": [
        {"start": 0, "end": 9.5, "object": 0, "question": "Which instrument is played?", "answer": "violin",
         "gemini_analysis": "1. **Visual Cue:**\n   - **Timeframe:** 00:02-00:09\n   - **Description:** bowing\n"
                            "2. **Audio Cue:**\n   - **Timeframe:** 00:00 – 00:05\n   - **Description:** strings\n\n"
                            "**Final Answer:**\n- A violin."},
        {"start": 3, "end": 5, "question": "", "answer": "skipped"},
        {"start": 4.0, "end": 4.0, "object": 1, "question": "What moves at 00:00?", "answer": "the bow",
         "gemini_analysis": "Final answer: the bow", "human_analysis": "Final Answer: the bow, moving"}]}}
LINE_B = {"videoID": "/data/anchor/clip_b", "QAs": [{"question": "What is said?", "answer": "hello", "start": "2", "end": "7.5"}]}


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "anchor.jsonl").write_text(json.dumps(LINE_A) + "\n\n" + json.dumps(LINE_B) + "\n")
    (tmp_path / "videos").mkdir()
    return tmp_path


def test_loader_both_formats(folder, capsys):
    report = data.read_jsonl(folder / "anchor.jsonl")
    assert [d["sample_id"] for d in report.docs] == ["clip_a:0", "clip_a:2", "clip_b:0"]  # 2 actions + 1 QA
    assert report.empty_questions == 1 and report.lines == 2
    a0, a2, b0 = report.docs
    assert (a0["format"], b0["format"]) == ("A", "B")
    assert a0["video_file"] == "videos/clip_a.mp4" and b0["video_file"] == "videos/clip_b.mp4"  # extension added
    assert (b0["start"], b0["end"]) == (2.0, 7.5)  # float() as upstream
    assert a0["reference_answer"] == "A violin." and b0["reference_answer"] == "hello" and b0["gold_cot"] is None
    # the cue timeframes (en dash too) are the grounding gold; a point mention elsewhere is not read
    assert a0["gold_intervals"] == [[2.0, 9.0], [0.0, 5.0]]
    assert a2["gold_intervals"] is None  # no timeframe and end <= start
    assert b0["gold_intervals"] == [[2.0, 7.5]]
    assert a0["target"] == "violin" and a0["target_boxes"] == {"0": [10.0, 20.0, 30.0, 40.0], "5": [12.0, 20.0, 30.0, 40.0]}
    assert a2["target"] == "bow" and a2["target_boxes"] == {"5": [50.0, 5.0, 5.0, 30.0]}
    assert a0["box_spans"] == [{"label": "bow", "start": 0.5, "end": 0.5}, {"label": "violin", "start": 0.0, "end": 0.5}]
    assert "A violin." in a0["evidence"] and "- violin: 0-0.5 s" in a0["evidence"]
    assert a0["boxes"]["5"][1] == {"x": 50.0, "y": 5.0, "width": 5.0, "height": 30.0, "label": "bow", "color": "#00FF00"}
    # the loader hook says what it skipped and what is missing
    docs = data.load(folder, {"task": "anchor", "dataset_kwargs": {"file": "anchor.jsonl"}})
    err = capsys.readouterr().err
    assert len(docs) == 3 and "1 entries with an empty question skipped" in err and "2 videos missing" in err
    # reference_field swaps the gold CoT
    human = data.load(folder, {"dataset_kwargs": {"file": "anchor.jsonl", "reference_field": "human_analysis"}})
    assert human[1]["gold_cot"] == "Final Answer: the bow, moving" and human[1]["reference_answer"] == "the bow, moving"
    assert human[0]["gold_cot"] is None and human[0]["reference_answer"] == "violin"


def test_loader_segments_in_the_request(folder):
    t = task("anchor")
    spec = MediaSpec.from_dict(t.cfg.get("media"))
    docs = data.load(folder, {"dataset_kwargs": {"file": "anchor.jsonl"}})
    clipped = build_request(t, docs[0], folder, "clip_a:0", spec)
    video = clipped.messages[-1].parts[0]
    assert isinstance(video, VideoPart) and video.segment == (0.0, 9.5) and video.boxes == docs[0]["boxes"]
    audio = clipped.messages[-1].parts[1]
    assert isinstance(audio, AudioPart) and audio.segment == (0.0, 9.5)
    whole = build_request(t, docs[1], folder, "clip_a:2", spec)  # end <= start: the whole video, noted
    assert whole.messages[-1].parts[0].segment is None
    assert any("whole video" in a for a in whole.adaptations)
    text = whole.messages[-1].parts[-1].text
    assert "Question: What moves at 00:00?" in text and text.rstrip().endswith("Final Answer:")
    assert "1. Visual Cue:" in text and "2. Audio Cue:" in text


def test_loader_bad_lines(tmp_path):
    (tmp_path / "anchor.jsonl").write_text('{"videoID": "v.mp4", "QAs": []}\n{"nope": 1}\n')
    with pytest.raises(UserError, match=r"anchor.jsonl:2: neither format A"):
        data.read_jsonl(tmp_path / "anchor.jsonl")
    (tmp_path / "anchor.jsonl").write_text('{"videoID": "v.mp4", "QAs": [{"question": "q"}]}\n{not json\n')
    with pytest.raises(UserError, match=r"anchor.jsonl:2: not JSON"):
        data.read_jsonl(tmp_path / "anchor.jsonl")
    with pytest.raises(UserError, match="ANCHOR data not found"):
        data.load(tmp_path, {"dataset_kwargs": {"file": "other.jsonl"}})


def test_sample_pack_shape():
    total = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert total < 1_000_000
    full = data.load(SAMPLE, {"dataset_kwargs": {"file": "anchor.jsonl"}})
    assert {d["format"] for d in full} == {"A", "B"}
    assert any(d["gold_cot"] is None for d in full) and any(d["start"] is not None and d["end"] <= d["start"] for d in full)
    assert any(d["boxes"] for d in full)
    from avhb.media.probe import probe

    long = [d for d in full if d["sample_id"] == "long_0004:0"][0]
    assert probe(str(SAMPLE / long["video_file"])).duration > 4  # over a lowered socratic_after (chunks of 4 s)
    grounding = data.load(SAMPLE, {"dataset_kwargs": {"file": "anchor_grounding.jsonl"}})
    assert grounding and all(d["target"] and d["target_boxes"] and d["gold_intervals"] for d in grounding)


# ---------------------------------------------------------------- facets


def _judge_reply(ratings: dict[str, str]):
    def reply(body):
        return ratings[body["model"]]
    return reply


def _score(t: Task, names: list[str], records: list[SampleRecord], base_url: str, members: list[str], journal_dir: Path):
    bindings = parse_judge_bindings([f"{role}=openai:{m},base_url={base_url}"
                                     for role in ("answer", "hallucination", "divergence", "answer_acc") for m in members])

    async def go():
        journal = Journal(journal_dir)
        pool = Judges(bindings, journal, create_backend)
        judges = pool.for_task(t.name, t.judge_roles())
        ctx = ScoreContext(judges=judges, task=t.name)
        ms = [metric(t, n) for n in names]
        try:
            for r in records:
                for m in ms if r.error is None else ():  # as the score phase: a failed sample is not scored
                    r.scores.update(await m.score(r, ctx))
        finally:
            journal.close()
            await pool.close()
        out = {}
        for m in ms:
            out.update(m.aggregate(records))
        return out

    return asyncio.run(go())


def _record(i: int, doc: dict) -> SampleRecord:
    return SampleRecord(id=str(i), doc=doc, response=f"reasoning {i}\nFinal Answer: answer {i}", extracted=f"answer {i}")


def test_facet_panel_mean_and_unparsable_member(tmp_path):
    t = task("anchor")
    doc = data.read_jsonl(SAMPLE / "anchor.jsonl").docs[0]
    with ScriptedServer(reply=_judge_reply({"j1": '{"rating": 4}', "j2": '{"rating": 5}\nfine', "j3": "3"})) as srv:
        out = _score(t, ["answer", "hallucination"], [_record(0, doc)], srv.base_url, ["j1", "j2", "j3"],
                     tmp_path / "j1")
    assert out["answer"].value == pytest.approx(4.0) and out["hallucination"].value == pytest.approx(4.0)
    assert out["answer_member_failures"].value == 0
    with ScriptedServer(reply=_judge_reply({"j1": '{"rating": 4}', "j2": '{"rating": 5}', "j3": "I cannot rate this."})) as srv:
        out = _score(t, ["answer"], [_record(0, doc)], srv.base_url, ["j1", "j2", "j3"], tmp_path / "j2")
        asked = [r.body["model"] for r in srv.requests]
    assert out["answer"].value == pytest.approx(4.5)  # the mean of the two that parsed
    assert out["answer_member_failures"].value == 1 and out["answer_judge_failures"].value == 0
    assert asked.count("j3") == 3  # asked, then re-asked twice (retries: 2), then counted


def test_gold_facets_skip_format_b_and_answer_acc(tmp_path):
    t = task("anchor")
    docs = data.read_jsonl(SAMPLE / "anchor.jsonl").docs
    gold, plain = docs[0], next(d for d in docs if d["format"] == "B")
    records = [_record(0, gold), _record(1, plain), SampleRecord(id="x", doc=gold, error="media: file not found")]

    def reply(body):
        prompt = body["messages"][-1]["content"]
        if "Reply with Yes" in prompt:
            return "Yes" if "answer 0" in prompt else "No"
        return '{"rating": 2}'

    with ScriptedServer(reply=reply) as srv:
        out = _score(t, ["hallucination", "divergence", "answer_acc"], records, srv.base_url, ["j1"], tmp_path / "j")
        prompts = [r.body["messages"][-1]["content"] for r in srv.requests]
    assert out["hallucination"].value == 2.0 and out["hallucination"].n == 1
    assert out["hallucination_no_gold"].value == 1 and out["hallucination_judge_failures"].value == 0
    assert out["divergence_no_gold"].value == 1 and out["divergence_errors"].value == 1
    assert out["answer_acc"].value == pytest.approx(0.5) and out["answer_acc"].n == 2
    assert out["answer_acc_errors"].value == 1  # the failed sample is excluded, counted
    halluc = [p for p in prompts if p.startswith("You are checking a model's reasoning about a video for hallucination")]
    assert len(halluc) == 1 and "Annotated objects (bounding boxes)" in halluc[0] and "bell: 0-3.4 s" in halluc[0]
    assert "reasoning 0\nFinal Answer: answer 0" in halluc[0]  # the whole output, not only the final answer
    acc = [p for p in prompts if "Reply with Yes" in p][0]
    # the judge's fields arrive fenced as data (docs/design.md: judge prompts fence their fields)
    assert re.search(r"<<<<data-(\w+)>answer 0</data-\1>>>>", acc)
    assert re.search(r"<<<<data-(\w+)>The red bell rings, at about 00:01\.</data-\1>>>>", acc)


def test_answer_extraction_is_upstreams_first_marker():
    t = task("anchor")
    [flt] = t.filters()
    rec = SampleRecord(id="0", doc={})
    text = "Final answer: the bell\n\nReasoning... Final Answer: the drum"
    assert asyncio.run(flt.apply(text, rec, None)) == "the bell\n\nReasoning... Final Answer: the drum"
    assert data.final_answer(text) == "the bell\n\nReasoning... Final Answer: the drum"
    assert data.final_answer("no marker at all") == "no marker at all"


# ---------------------------------------------------------------- conciseness and agreement


def test_conciseness_cut_points():
    m = metric(task("anchor"), "conciseness")
    texts = ["a" + " a" * (n - 1) for n in (10, 20, 30, 40, 50)]
    assert [count_tokens(x) for x in texts] == [10, 20, 30, 40, 50]
    records = [SampleRecord(id=str(i), doc={}, response=x) for i, x in enumerate(texts)]
    for r in records:
        r.scores.update(asyncio.run(m.score(r, None)))
    assert m.cut_points_for(records) == pytest.approx([18, 26, 34, 42])
    from avhb.plugins.metrics.conciseness import score_against

    assert [score_against(r.scores["conciseness_tokens"], [18, 26, 34, 42]) for r in records] == [5, 4, 3, 2, 1]
    agg = m.aggregate(records)
    assert agg["conciseness"].value == 3.0 and agg["conciseness_tokens"].value == 30.0


def _panel_records(table: list[list[int | None]], source: str) -> list[SampleRecord]:
    out = []
    for i, row in enumerate(table):
        r = SampleRecord(id=str(i), doc={})
        r.judgements[source] = {"per_judge": row}
        out.append(r)
    return out


def test_pack_agreement_uses_upstream_kappa():
    t = task("anchor")
    m = metric(t, "hallucination_agreement")
    assert (m.options["items"], m.options["labels"]) == ("all_rated", "observed")
    rows = [[1, 1], [3, 3], [5, 4]]
    agg = m.aggregate(_panel_records(rows, "hallucination"))
    # upstream (each pair's observed labels {1,3,4,5}): linear 8/11, quadratic 6/7
    assert agg["hallucination_agreement"].value == pytest.approx(8 / 11)
    assert agg["hallucination_agreement_kappa_quadratic"].value == pytest.approx(6 / 7)
    # on the scale 1..5 the same ratings give the 0.8 and 12/13
    from avhb.plugins.metrics.agreement import JudgeAgreement

    scale = JudgeAgreement(name="k", source="hallucination", labels="scale", bootstrap_iters=20).aggregate(
        _panel_records(rows, "hallucination"))
    assert scale["k_kappa_linear"].value == pytest.approx(0.8)
    assert scale["k_kappa_quadratic"].value == pytest.approx(12 / 13)
    # an item one judge did not rate is left out for every pair
    agg = m.aggregate(_panel_records(rows + [[2, None]], "hallucination"))
    assert agg["hallucination_agreement"].value == pytest.approx(8 / 11) and agg["hallucination_agreement"].n == 3


# ---------------------------------------------------------------- difficulty


@pytest.mark.parametrize("n, s, want", [(7, 5, "Difficult"), (10, 1, "Difficult"), (5, 1, "Medium"), (4, 3, "Medium"),
                                        (4, 2, "Easy"), (9, 4, "Medium"), (0, 1, "Easy"), (12, None, "Difficult"),
                                        (6, None, None)])
def test_difficulty_grades(n, s, want):
    assert difficulty.grade(n, s) == want


def test_difficulty_rollouts():
    def line(i, rep, acc, ans, error=None):
        return {"id": i, "repeat": rep, "doc": {"question": "q?"}, "extracted": ans, "error": error,
                "scores": {} if acc is None else {"answer_acc": acc}}

    runs = [[line("a", 1, 0.0, "two"), line("a", 0, 1.0, "three"), line("b", 0, None, "x")],
            [line("a", 0, 0.0, "four"), line("a", 1, None, "three"), line("b", 0, 1.0, "y", error="media")]]
    qs = {q.id: q for q in difficulty.collect(runs, "anchor")}
    a = qs["a"]
    assert [(r.run, r.repeat, r.answer) for r in a.rollouts] == [(0, 0, "three"), (0, 1, "two"), (1, 0, "four"),
                                                                 (1, 1, "three")]
    assert (a.n_mismatch, a.unjudged, a.failed) == (2, 1, 0)
    assert (len(qs["b"].rollouts), qs["b"].failed) == (1, 1)


# ---------------------------------------------------------------- grounding


def test_grounding_reply_scaled_and_scored():
    t = task("anchor_grounding")
    [flt] = t.filters()
    box, temporal = metric(t, "box_iou"), metric(t, "temporal")
    doc = {"gold_intervals": [[4, 8]]}
    rec = SampleRecord(id="0", doc=doc, outputs={"frame_size": [80, 60], "source_size": [160, 120],
                                                 "gold_boxes": {"1": [5, 0, 10, 10]}})
    reply = 'Here you go:\n```json\n{"intervals": [[2, 6]], "boxes": {"1.00": [0, 0, 5, 5]}}\n```'
    rec.extracted = asyncio.run(flt.apply(reply, rec, None))
    assert rec.extracted == {"intervals": [[2, 6]], "boxes": {"1": [0.0, 0.0, 10.0, 10.0]}}  # shown px x 2
    for m in (box, temporal):
        rec.scores.update(asyncio.run(m.score(rec, None)))
    # pred [2,6] vs gold [4,8]: overlap 2 -> P = R = F1 = 0.5; (0,0,10,10) vs (5,0,10,10): 50 / 150
    assert (rec.scores["temporal_precision"], rec.scores["temporal_recall"], rec.scores["temporal_f1"]) == (0.5, 0.5, 0.5)
    assert rec.scores["box_iou"] == pytest.approx(1 / 3)
    bad = SampleRecord(id="1", doc=doc, outputs=rec.outputs)
    bad.extracted = asyncio.run(flt.apply("I think it is at 3 seconds.", bad, None))
    assert bad.extracted is None and "grounding_unparsed" in bad.meta
    failed = SampleRecord(id="2", doc=doc, error="media: file not found")
    for m in (box, temporal):
        bad.scores.update(asyncio.run(m.score(bad, None)))
    aggs = {**box.aggregate([rec, bad, failed]), **temporal.aggregate([rec, bad, failed])}
    # the unparsable reply scores 0 (counted); the failed sample is excluded (errors_count_as_wrong: false)
    assert aggs["box_iou"].value == pytest.approx(1 / 6) and aggs["box_iou_unparsed"].value == 1
    assert aggs["temporal_f1"].value == pytest.approx(0.25) and aggs["temporal_f1"].n == 2
    assert aggs["temporal_f1_of_means"].value == pytest.approx(0.25)


def test_gold_boxes_at_shown_times():
    doc = {"target_boxes": {"10": [0, 0, 10, 10], "14": [4, 0, 10, 10], "20": [8, 0, 10, 10]}}
    got = hooks.gold_boxes_at(doc, [0.5, 1.0, 1.2, 1.7, 2.0, 2.5])
    # 1.2 s = key 12: keys 10 and 14 are equally near -> the earlier (10); 1.7 s = key 17: 14 and 20 tie -> 14;
    # 0.5 s and 2.5 s lie outside the annotated span 1.0-2.0 s
    assert got == {"1": [0, 0, 10, 10], "1.2": [0, 0, 10, 10], "1.7": [4, 0, 10, 10], "2": [8, 0, 10, 10]}
    assert hooks.time_key("2.50") == "2.5" and hooks.time_key(3) == "3" and hooks.time_key("t1") == "t1"


# ---------------------------------------------------------------- ablation arms


ARMS = {"": ("video", "audio", "boxes"), "no_audio": ("video", "boxes"), "no_boxes": ("video", "audio"),
        "no_audio,no_boxes": ("video",), "no_video": ("audio",)}


@pytest.mark.parametrize("arm", list(ARMS))
def test_each_arm_request_parts(arm):
    from avhb.options import parse_ablations

    t = task("anchor_refined")
    spec = MediaSpec.from_dict(t.cfg.get("media"))
    doc = data.load(SAMPLE, {"dataset_kwargs": {"file": "anchor_refined.jsonl"}})[0]  # bell_0001:0, boxes at (60,40)
    request = build_request(t, doc, SAMPLE, doc["sample_id"], spec)
    materialize(request, MediaPlan(spec, parse_ablations(arm), t.name), Capabilities(images=64, audio=True))
    parts = request.messages[-1].parts
    kinds = [p.type for p in parts]
    want = ARMS[arm]
    assert kinds[-1] == "text" and ("video" in kinds) == ("video" in want) and ("audio" in kinds) == ("audio" in want)
    if "audio" in want:
        audio = next(p for p in parts if isinstance(p, AudioPart))
        assert audio.rate == 16000 and len(audio.array) == pytest.approx(3.5 * 16000, abs=1600)
    if "video" in want:
        video = next(p for p in parts if isinstance(p, VideoPart))
        assert len(video.frames) == 18 and video.timestamps[:3] == pytest.approx([0.0, 0.2, 0.4])  # 5 fps
        # upstream's get_standardized_video: every clip is scaled to 512x384 (the source is 160x120)
        assert video.frames[0].shape == (384, 512, 3)
        # the box's top edge (source y = 40, x = 60..99; x 3.2 -> y 128, x 192..317) is drawn in the label
        # colour #FF6B6B, else the red bell / yellow
        edge = video.frames[0][128, 224].astype(int)
        if "boxes" in want:
            assert np.abs(edge - [255, 107, 107]).max() < 40
            assert any("boxes drawn" in a for a in request.adaptations)
        else:
            assert not any("boxes drawn" in a for a in request.adaptations)
            assert np.abs(edge - [240, 210, 40]).max() < 40
    assert all(f"--ablate {a}" in " ".join(request.adaptations) for a in ("no_audio", "no_video") if a in arm)


def test_frame_size_null_keeps_the_source_size():
    """``--media frame_size=null`` (the option to keep the source size): the
    sample pack's 160x120 clip is sent at 160x120, boxes drawn at source
    pixels; the default scales it to upstream's 512x384."""
    from avhb.options import RunOptions, media_plan

    t = task("anchor_refined")
    doc = data.load(SAMPLE, {"dataset_kwargs": {"file": "anchor_refined.jsonl"}})[0]
    shapes = {}
    for label, media in (("default", {}), ("source", {"frame_size": None})):
        plan = media_plan(t, RunOptions([t.name], None, Path("."), media=media))
        request = build_request(t, doc, SAMPLE, doc["sample_id"], plan.spec)
        materialize(request, plan, Capabilities(images=64, audio=True))
        video = next(p for p in request.messages[-1].parts if isinstance(p, VideoPart))
        shapes[label] = video.frames[0].shape
        if label == "source":
            assert np.abs(video.frames[0][40, 70].astype(int) - [255, 107, 107]).max() < 40
    assert shapes == {"default": (384, 512, 3), "source": (120, 160, 3)}
    assert media_plan(t, RunOptions([t.name], None, Path("."), media={"frame_size": None})).spec.to_key() != \
        media_plan(t, RunOptions([t.name], None, Path("."))).spec.to_key()  # part of every request key
