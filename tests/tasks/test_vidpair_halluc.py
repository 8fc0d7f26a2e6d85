"""VidPair-Halluc unit tests: extraction rules, the release loader on its
layout variants, pair/group scoring (default and upstream-compatible) on
hand-computed cases."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from avhb.errors import SampleError, UserError
from avhb.score.judges import Verdict
from avhb.score.metric import SampleRecord, ScoreContext
from avhb.tasks.vidpair_halluc import hooks, metrics, scoring
from avhb.tasks.vidpair_halluc.extract import (extract_yes_no, extract_yes_no_avhb, first_letter, letter_sequence,
                                               valid_clip, valid_for_pairing)
from avhb.tasks.vidpair_halluc.release import parse_json_fields, video_file
from avhb.tasks.vidpair_halluc.scoring import BinaryItem
from tests.conftest import ROOT

SAMPLE = ROOT / "tasks" / "vidpair_halluc" / "sample"


# ---------------------------------------------------------------- extraction

@pytest.mark.parametrize("reply, expected", [
    ("Yes", "yes"), ("  NO.", "no"), ("yes, but no", "yes"), ("Nope", "no"),
    ("I don't know", "no"),      # substring rule, no word boundary
    ("I see her eyes", "yes"),   # "eyes" contains "yes"
    ("The answer is yes", "yes"), ("Maybe", "unknown"), ("", "unknown"), ("error", "unknown"),
    ("video not found", "unknown"), ("无法处理", "unknown"), (None, "unknown"), (1, "unknown"),
    ("It cannot be seen", "no"),  # "cannot" contains "no"
])
def test_extract_yes_no(reply, expected):
    assert extract_yes_no(reply) == expected


@pytest.mark.parametrize("reply, expected", [
    ("Yes", "yes"), ("**No.**", "no"), ("No, it is black.", "no"), ("The answer is yes.", "yes"),
    ("I am not sure", "unknown"), ("It is unknown", "unknown"), ("I cannot tell", "unknown"),
    ("I don't know", "unknown"), ("Maybe yes", "unknown"), ("Yes and no", "unknown"),
    ("No doubt, it is red", "unknown"), ("I see her eyes", "unknown"), ("Nope", "unknown"),
    ("It cannot be seen", "unknown"), ("", "unknown"), ("error", "unknown"), (None, "unknown"),
])
def test_extract_yes_no_avhb_reads_a_hedge_as_unknown(reply, expected):
    """avhb mode: a hedge is not an answer (upstream's substring rule reads
    "I am not sure", "It is unknown", "I cannot tell" as no)."""
    assert extract_yes_no_avhb(reply) == expected


def test_validity_rules():
    # videoqa.py: the short list only; "Maybe" and "error" are valid for pairing
    assert valid_for_pairing("Maybe") and valid_for_pairing("error")
    assert not valid_for_pairing(" Video not found ") and not valid_for_pairing(None)
    # clipqa.py: must contain yes/no and not be in the long list
    assert valid_clip("yes") and valid_clip("I don't know") and not valid_clip("Maybe")
    assert not valid_clip("inference failed") and not valid_clip(None)


def test_mcq_upstream_extraction():
    assert first_letter("The answer is B") == "T"
    assert first_letter(" (c) red") == "C"
    assert first_letter("42") == "42" and first_letter(None) is None
    assert letter_sequence(" a b\tc ") == "ABC"


# ---------------------------------------------------------------- loader

def _copy_sample(tmp_path: Path) -> Path:
    root = tmp_path / "release"
    shutil.copytree(SAMPLE, root)
    return root


def test_video_file_resolution(tmp_path):
    assert video_file(tmp_path, "VidPair-Halluc/a_0001/a_0001_0.mp4") == tmp_path / "VidPair-Halluc/a_0001/a_0001_0.mp4"
    assert video_file(tmp_path, "a_0001/a_0001_0.mp4") == tmp_path / "VidPair-Halluc/a_0001/a_0001_0.mp4"


def test_json_string_fields():
    row = {"choices_json": '["red", "blue"]', "option_map_json": "{not json", "mask_flags_json": "",
           "question": "q"}
    out = parse_json_fields(row)
    assert out["choices"] == ["red", "blue"]
    assert out["option_map"] == "{not json"  # kept raw on a JSON error
    assert "mask_flags" not in out  # empty string: not parsed
    assert "choices" not in parse_json_fields({"choices_json": ["already", "a list"]})  # only a str is parsed
    assert row["choices_json"] == '["red", "blue"]'  # input untouched


def test_load_sample_pack():
    binary = hooks.load(SAMPLE, {"dataset_name": "binary", "dataset_kwargs": {"level": "all"}})
    assert len(binary) == 16
    d = binary[0]
    assert d["video_file"] == str(SAMPLE / "VidPair-Halluc/color_0001/color_0001_0.mp4")
    assert d["prompt"] == "Is the ball on the table red?\nAnswer with yes or no."
    mcq = hooks.load(SAMPLE, {"dataset_name": "multiple_choice", "dataset_kwargs": {"level": "spatial"}})
    assert [m["qa_id"] for m in mcq] == ["multiple_choice_00007", "multiple_choice_00008"]
    assert mcq[1]["mask_flags"] == [1, 0, 1] and mcq[1]["option_map"]["B"] == "a black screen"
    assert hooks.choices(mcq[1]) == ["a green square", "a black screen", "a red ball", "two squares"]
    assert len(hooks.load(SAMPLE, {"dataset_name": "open_ended", "dataset_kwargs": {"level": "temporal"}})) == 2


def test_load_bare_paths_and_inferred_keys(tmp_path):
    """pairs.json with bare paths, rows without the INFERRED keys, an empty
    repo_video_path (fallback video_path), only all_qa.jsonl present."""
    root = _copy_sample(tmp_path)
    pairs = json.loads((root / "pairs/pairs.json").read_text())
    for p in pairs:
        for k in ("positive_video", "adversarial_video"):
            p[k] = p[k].removeprefix("VidPair-Halluc/")
        for k in ("id", "category", "level"):
            p.pop(k)
    (root / "pairs/pairs.json").write_text(json.dumps(pairs))
    (root / "metadata.csv").unlink()
    rows = [json.loads(x) for x in (root / "qa/hf/all_qa.jsonl").read_text().splitlines()]
    for r in rows:
        for k in ("qa_id", "id", "pair_id", "qa_group", "video_role", "file_name", "category", "level"):
            r.pop(k)
        r["repo_video_path"] = ""
    (root / "qa/hf/all_qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("binary", "multiple_choice", "open_ended"):
        (root / f"qa/hf/{name}.jsonl").unlink()

    docs = hooks.load(root, {"dataset_name": "binary", "dataset_kwargs": {"level": "all"}})
    assert len(docs) == 16
    t = docs[9]  # pos question on the reversed video of the temporal pair
    assert t["video_file"] == str(root / "VidPair-Halluc/sequence_0003/T_sequence_0003_0.mp4")
    assert (t["qa_id"], t["id"], t["pair_id"], t["video_role"]) == ("binary_00010", "sequence_0003", "pair_0003", "adversarial")
    assert (t["qa_group"], t["file_name"], t["category"], t["level"]) == ("binary_qa_pos", "T_sequence_0003_0.mp4", "sequence", "temporal")
    m = hooks.load(root, {"dataset_name": "binary", "dataset_kwargs": {"level": "spatial"}})
    assert [d["file_name"] for d in m] == ["object_0004_0.mp4", "M_object_0004_101.mp4"] * 2
    assert m[1]["level"] == "spatial" and m[1]["category"] == "object"


def test_load_errors(tmp_path):
    with pytest.raises(UserError, match="level 'temporall'"):
        hooks.load(SAMPLE, {"dataset_name": "binary", "dataset_kwargs": {"level": "temporall"}})
    with pytest.raises(UserError, match="qa/hf/binary.jsonl"):
        hooks.load(tmp_path, {"dataset_name": "binary"})
    root = _copy_sample(tmp_path)
    (root / "qa/hf/binary.jsonl").write_text('{"question": "ok"}\n{broken\n')
    with pytest.raises(UserError, match=r"binary.jsonl:2"):
        hooks.load(root, {"dataset_name": "binary"})


def test_missing_video_is_a_sample_error(tmp_path):
    root = _copy_sample(tmp_path)
    docs = hooks.load(root, {"dataset_name": "binary"})
    assert hooks.messages(docs[0], {})[0].parts[0].path == docs[0]["video_file"]
    Path(docs[0]["video_file"]).unlink()
    with pytest.raises(SampleError, match="video file missing"):
        hooks.messages(docs[0], {})


# ---------------------------------------------------------------- binary scoring

def _pair(sample, replies, golds=("yes", "no", "no", "yes"), files=("v_0.mp4", "v_1.mp4"), groups=("binary_qa_pos", "binary_qa_neg"), level="video"):
    """Four rows: group0 on both files, then group1 on both files."""
    layout = [(groups[0], files[0]), (groups[0], files[1]), (groups[1], files[0]), (groups[1], files[1])]
    return [BinaryItem(sample, g, f, gold, r, level) for (g, f), gold, r in zip(layout, golds, replies)]


def test_tally_hand_cases():
    t = scoring.tally_sample(_pair("s", ["yes", "no", "no", "yes"]))
    assert (t.vp_right, t.vp_total, t.qp_right, t.qp_total, t.total_qa, t.fp) == (2, 2, 2, 2, 4, 0)
    # one side wrong (an FP on the adversarial video): pos unit wrong, file-1 unit wrong
    t = scoring.tally_sample(_pair("s", ["yes", "yes", "no", "yes"]))
    assert (t.vp_right, t.vp_total, t.qp_right, t.qp_total, t.fp, t.model_yes) == (1, 2, 1, 2, 1, 3)
    # unknown on file 0 of the pos question: excluded; the pos unit is right on its answered member
    t = scoring.tally_sample(_pair("s", ["Maybe", "no", "no", "yes"]))
    assert (t.vp_right, t.vp_total, t.qp_right, t.qp_total, t.total_qa, t.unknown) == (2, 2, 1, 1, 3, 1)
    assert (t.gt_yes_all, t.gt_yes_answered) == (2, 1)
    # the same under unknown="wrong": every unit counts, the unknown makes two of them wrong
    t = scoring.tally_sample(_pair("s", ["Maybe", "no", "no", "yes"]), unknown="wrong")
    assert (t.vp_right, t.vp_total, t.qp_right, t.qp_total, t.total_qa) == (1, 2, 1, 2, 4)


def test_skip_rules():
    # fewer than two replies valid for pairing -> the whole sample is skipped
    t = scoring.tally_sample(_pair("s", ["yes", "", "unknown", None]))
    assert t.skipped == 1 and t.total_qa == 0 and t.vp_total == 0 and t.gt_yes_all == 0
    # "Maybe" counts as valid for pairing, so this one is scored (on its single yes/no answer)
    t = scoring.tally_sample(_pair("s", ["yes", "Maybe", "", None]))
    assert t.skipped == 0 and (t.vp_total, t.qp_total, t.total_qa) == (1, 0, 1) and t.missing == 1
    # a single gold file: skipped (video level) ...
    same = _pair("s", ["yes", "no", "no", "yes"], files=("v_0.mp4", "v_0.mp4"))
    assert scoring.tally_sample(same).skipped == 1
    # ... but upstream's temporal script has no gold-file check
    same_t = [BinaryItem(i.sample, i.group, i.file, i.gold, i.reply, "temporal") for i in same]
    assert scoring.tally_sample(same_t, mode="upstream").skipped == 0
    # unknown="wrong" never skips
    assert scoring.tally_sample(_pair("s", ["yes", "", "unknown", None]), unknown="wrong").skipped == 0


def test_binary_stats_and_gt_yes_scope():
    items = (_pair("a", ["yes", "no", "no", "yes"]) + _pair("b", ["yes", "yes", "no", "yes"])
             + _pair("c", ["Maybe", "no", "I don't know", "yes"]))
    ts = scoring.tally_binary(items)
    assert scoring.binary_stat(ts, "vAcc").value == pytest.approx(5 / 6)
    assert scoring.binary_stat(ts, "qAcc").value == pytest.approx(4 / 5)
    w = scoring.binary_stat(ts, "wAcc")
    assert (w.value, w.n) == (pytest.approx(9 / 11), 11) and w.stderr > 0
    # avhb mode: "I don't know" is a hedge (unknown), so 10 answers, 6 yes; gold yes: 6 over all rows,
    # 5 over answered rows; FP 1
    assert scoring.binary_stat(ts, "yes_diff").value == pytest.approx(0.0)
    assert scoring.binary_stat(ts, "yes_diff", gt_yes="answered").value == pytest.approx(1 / 10)
    assert scoring.binary_stat(ts, "fp_rate").value == pytest.approx(1 / 10)
    # upstream's substring rule reads it as "no" (right here): 11 answers
    up = scoring.tally_binary(items, mode="upstream")
    assert scoring.binary_stat(up, "wAcc").value == pytest.approx(9 / 11)
    assert scoring.binary_stat(up, "yes_diff").value == pytest.approx((6 - 6) / 11)
    assert scoring.binary_stat(up, "fp_rate").value == pytest.approx(1 / 11)
    # deterministic bootstrap
    assert scoring.binary_stat(ts, "wAcc").stderr == w.stderr
    assert scoring.binary_stat([], "wAcc").value is None


def test_upstream_clip_level_rules():
    """clipqa.py: invalid replies dropped before extraction, raw gold strings,
    gt_yes over answered rows, question pairs over >= 2 answered groups."""
    groups = ("binary_qa_0", "binary_qa_1")
    items = _pair("m", ["yes", "no", "Maybe", "yes"], groups=groups, level="spatial")
    up = scoring.tally_sample(items, mode="upstream")
    assert (up.vp_right, up.vp_total, up.qp_total, up.total_qa, up.gt_yes_all) == (2, 2, 1, 3, 2)
    # a raw gold "Yes" never equals the extracted "yes" upstream; avhb's default normalises it
    cap = _pair("m", ["yes", "no", "no", "yes"], golds=("Yes", "no", "no", "yes"), groups=groups, level="spatial")
    assert scoring.tally_sample(cap, mode="upstream").vp_right == 1
    assert scoring.tally_sample(cap).vp_right == 2


# ---------------------------------------------------------------- metric classes

class FakeJudges:
    """Scripted verdicts by (role, response); records every call."""

    def __init__(self, table):
        self.table, self.calls = table, []

    async def ask(self, role, fields, option_texts=None):
        self.calls.append((role, fields["response"]))
        value = self.table.get((role, fields["response"]))
        return Verdict(value, value is not None, str(value), [value])


def _records(split, replies, errors=()):
    docs = hooks.load(SAMPLE, {"dataset_name": split})
    out = []
    for d in docs:
        r = SampleRecord(id=d["qa_id"], doc=d, target=d["answer"])
        if d["qa_id"] in errors:
            r.error = "media: missing"
        else:
            r.response = r.extracted = replies[d["qa_id"]]
        out.append(r)
    return out


async def _score(metric_list, records, judges):
    ctx = ScoreContext(judges=judges, task="t")
    for r in records:
        if r.error is None:
            for m in metric_list:
                r.scores.update(await m.score(r, ctx))
    out = {}
    for m in metric_list:
        out.update({k: v for k, v in m.aggregate(records).items()})
    return out


MCQ = {"multiple_choice_00001": "A", "multiple_choice_00002": "The answer is (B).",
       "multiple_choice_00003": "A", "multiple_choice_00004": "A", "multiple_choice_00005": "B",
       "multiple_choice_00006": "B", "multiple_choice_00007": "a green square", "multiple_choice_00008": "I am not sure"}


async def test_mcq_default_and_upstream_modes():
    judges = FakeJudges({("answer_matcher", "a green square"): "A", ("answer_matcher", "I am not sure"): "Z"})
    default = [metrics.mcq_f1("mcq_f1"), metrics.mcq_pair_acc("mcq_pair_acc"), metrics.mcq_macro_f1("mcq_macro_f1")]
    upstream = [metrics.mcq_f1("up_f1", mode="upstream"), metrics.mcq_pair_acc("up_pair", mode="upstream")]
    records = _records("multiple_choice", MCQ)
    res = await _score(default + upstream, records, judges)
    assert res["mcq_f1"].value == pytest.approx(5 / 8) and res["mcq_f1_unparsed"].value == 1
    assert res["mcq_pair_acc"].value == pytest.approx(1 / 4)
    assert res["mcq_macro_f1"].value == pytest.approx((0.75 + 4 / 7) / 2)
    assert sorted(judges.calls) == [("answer_matcher", "I am not sure"), ("answer_matcher", "a green square")]
    # upstream: first alphabetic character ("The answer is (B)." -> T).  Video-level samples pair by
    # file-name prefix, so the temporal pair (sequence_0003_0 / T_sequence_0003_0) is skipped whole;
    # the spatial pair goes through the clip-level script (whole reply as a sequence, both wrong,
    # "_101.mp4" never pairs).  Counted rows: pair1 (A right, T wrong), pair2 (A right, A wrong),
    # pair4 (2 wrong) -> 2/6; pairs: _0/_1 of pair1 and pair2, both wrong.
    assert res["up_f1"].value == pytest.approx(2 / 6) and res["up_f1"].n == 6
    assert res["up_f1_skipped_samples"].value == 1  # the temporal sample
    assert res["mcq_f1_skipped_samples"].value == 0
    assert (res["up_pair"].value, res["up_pair"].n) == (0.0, 2)


async def test_mcq_unknown_exclude_and_missing():
    judges = FakeJudges({("answer_matcher", "a green square"): "A"})  # the other reply: judge failure
    m = metrics.mcq_f1("f1", unknown="exclude")
    records = _records("multiple_choice", MCQ, errors={"multiple_choice_00003"})
    res = await _score([m], records, judges)
    # rows counted: 8 - 1 failed - 1 unparsed = 6; right: 1, 2, 6, 7 -> 4/6
    assert res["f1"].value == pytest.approx(4 / 6) and res["f1"].n == 6
    assert res["f1_missing"].value == 1 and res["f1_unparsed"].value == 1


def test_upstream_f1_is_accuracy_and_macro_f1():
    ts = [scoring.McqTally(rows=4, right=3)]
    assert scoring.upstream_f1(ts) == pytest.approx(0.75)
    assert scoring.upstream_f1([scoring.McqTally(rows=3, right=0)]) == 0.0
    # gold A A B, pred A B None: F1_A = 2/(2+0+1), F1_B = 0/(0+1+1)
    assert scoring.macro_f1([("A", "A"), ("B", "A"), (None, "B")]) == pytest.approx((2 / 3 + 0) / 2)


async def test_binary_metrics_unknown_wrong_option():
    replies = {f"binary_{i:05d}": r for i, r in enumerate(
        ["Yes", "No", "No", "Yes", "yes", "Yes.", "no", "yes", "Maybe.", "No", "I don't know", "yes",
         "No.", "no", "Yes", "yes"], 1)}
    ms = [metrics.vAcc("vAcc", unknown="wrong"), metrics.qAcc("qAcc", unknown="wrong"),
          metrics.wAcc("wAcc", unknown="wrong"), metrics.yes_diff("yes_diff", unknown="wrong"),
          metrics.unknown("unknown", unknown="wrong")]
    res = await _score(ms, _records("binary", replies), FakeJudges({}))
    # pair3's unknowns ("Maybe.", and the hedge "I don't know", which upstream's substring rule would
    # read as a right "no") now make both its video-pair units and its file-0 question-pair unit wrong
    assert res["vAcc"].value == pytest.approx(3 / 8) and res["qAcc"].value == pytest.approx(5 / 8)
    assert res["wAcc"].value == pytest.approx(8 / 16)
    assert res["yes_diff"].value == pytest.approx((8 - 8) / 16) and res["yes_diff"].n == 16
    assert res["unknown"].value == 2


async def test_hedges_are_unknown_in_avhb_mode_and_no_upstream():
    """Pairs 1 and 2 of the sample pack (rows: pos question on the positive
    video, gold yes; on the adversarial video, no; neg question on the
    positive video, no; on the adversarial video, yes).
    P1: "Yes" (right), "Yes, it is." (FP), "I am not sure.", "No." (wrong);
    P2: "It is unknown.", "No" (right), "I cannot tell", "yes" (right).
    avhb: the three hedges are unknown: 5 answers, 3 yes, 4 gold yes
    (all rows), 1 FP -> yes_diff (3 - 4) / 5 = -0.2, fp_rate 1/5, unknown 3.
    upstream (``_upstream`` tasks): the substring rule reads each hedge as
    "no" (all three contain "no"): 8 answers -> yes_diff (3 - 4) / 8,
    fp_rate 1/8, unknown 0."""
    replies = {f"binary_{i:05d}": r for i, r in enumerate(
        ["Yes", "Yes, it is.", "I am not sure.", "No.", "It is unknown.", "No", "I cannot tell", "yes"], 1)}
    records = [r for r in _records("binary", {**{f"binary_{i:05d}": "" for i in range(1, 17)}, **replies})
               if r.id in replies]
    for mode, want in (("avhb", (-0.2, 5, 0.2, 3)), ("upstream", (-0.125, 8, 0.125, 0))):
        for r in records:
            r.scores, r.meta = {}, {}
        ms = [metrics.yes_diff("yes_diff", mode=mode), metrics.fp_rate("fp_rate", mode=mode),
              metrics.unknown("unknown", mode=mode)]
        res = await _score(ms, records, FakeJudges({}))
        got = (res["yes_diff"].value, res["yes_diff"].n, res["fp_rate"].value, res["unknown"].value)
        assert got == (pytest.approx(want[0]), want[1], pytest.approx(want[2]), want[3]), mode
        assert (res["yes_diff_model_yes"].value, res["yes_diff_gt_yes"].value, res["fp_rate_fp"].value) == (3, 4, 1)
        hedge = next(r for r in records if r.id == "binary_00003")
        assert hedge.meta["yes_no"] == ("unknown" if mode == "avhb" else "no")


async def test_open_score_scales_and_errors():
    docs = hooks.load(SAMPLE, {"dataset_name": "open_ended"})[:4]
    records = [SampleRecord(id=d["qa_id"], doc=d, target=d["answer"], response=f"r{i}", extracted=f"r{i}")
               for i, d in enumerate(docs)]
    records[3].error, records[3].response = "media: missing", None
    judges = FakeJudges({("scorer", "r0"): 2, ("scorer", "r1"): 1, ("scorer", "r2"): None})
    res = await _score([metrics.open_score("open_score")], records, judges)
    # r2: judge failure, excluded; the failed sample is excluded too (never scored 0)
    assert res["open_score"].value == pytest.approx((1 + 0.5) / 2)
    judges5 = FakeJudges({("scorer", "r0"): 5, ("scorer", "r1"): 3, ("scorer", "r2"): 1})
    for r in records:
        r.scores = {}
    res = await _score([metrics.open_score("open_score", scale=5)], records, judges5)
    assert res["open_score"].value == pytest.approx((1 + 0.5 + 0) / 3)
    with pytest.raises(UserError, match="option 'errors' was removed"):
        metrics.open_score("open_score", errors="wrong")
    with pytest.raises(ValueError):
        metrics.open_score("x", scale=3)


# ---------------------------------------------------------------- review fixes

def _rewrite_rows(path: Path, edit) -> None:
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    for r in rows:
        edit(r)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_binary_row_without_pos_neg_group_is_a_user_error(tmp_path):
    root = _copy_sample(tmp_path)

    def drop_group(r):
        if r["qa_id"] == "binary_00003":
            r.pop("qa_group")
            r["question_id"] = "color_0001_q2"  # no _pos/_neg suffix to infer it from
    _rewrite_rows(root / "qa/hf/binary.jsonl", drop_group)
    with pytest.raises(UserError, match=r"binary\.jsonl: binary row 'binary_00003' has no pos/neg qa_group"):
        hooks.load(root, {"dataset_name": "binary"})
    # the metric refuses such a row too (docs from another loader), instead of skipping every sample
    docs = hooks.load(SAMPLE, {"dataset_name": "binary"})
    records = [SampleRecord(id=d["qa_id"], doc=dict(d), target=d["answer"], response="yes") for d in docs]
    records[0].doc["qa_group"] = None
    with pytest.raises(UserError, match="binary_00001"):
        metrics.wAcc("wAcc").aggregate(records)


def test_pair_level_wins_over_metadata_and_mixed_levels_warn_once(tmp_path, capsys):
    root = _copy_sample(tmp_path)
    _rewrite_rows(root / "qa/hf/binary.jsonl", lambda r: r.pop("level"))
    meta = (root / "metadata.csv").read_text().splitlines()
    # metadata says "temporal" for color_0001_0.mp4; its pair entry says "video"
    meta = [line.replace(",color,video,", ",color,temporal,") if line.startswith("color_0001_0,") else line for line in meta]
    (root / "metadata.csv").write_text("\n".join(meta) + "\n")
    docs = hooks.load(root, {"dataset_name": "binary"})
    assert {d["level"] for d in docs if d["pair_id"] == "pair_0001"} == {"video"}
    assert "different levels" not in capsys.readouterr().err
    # a row's own level still wins; a pair split over two levels is warned about, once
    _rewrite_rows(root / "qa/hf/binary.jsonl",
                  lambda r: r.update(level="spatial") if r["qa_id"] in ("binary_00001", "binary_00005") else None)
    docs = hooks.load(root, {"dataset_name": "binary"})
    err = capsys.readouterr().err
    assert err.count("different levels") == 1 and "2 pair(s)" in err and "pair_0001: spatial, video" in err
    assert [d["level"] for d in docs[:2]] == ["spatial", "video"]


def _mcq(pair, gold, pred, answered=True):
    return scoring.McqItem(pair=pair, sample=pair, file=f"{pair}.mp4", level="video", gold=gold, pred=pred,
                           answered=answered)


def test_mcq_pair_accuracy_needs_both_members():
    items = [_mcq("p1", "A", "A"), _mcq("p1", "B", None),  # one right, one unreadable
             _mcq("p2", "A", "A"), _mcq("p2", "B", "C"),  # a full pair, wrong
             _mcq("p3", "A", "A")]  # the other side cut by --limit
    excl = scoring.tally_mcq(items, unknown="exclude")
    agg = scoring.mcq_stat(excl, "pair_acc")
    assert (agg.value, agg.n) == (0.0, 1)  # p2 only; p1 is not a right pair on its surviving row
    assert [t.incomplete_pairs for t in excl] == [1, 0, 1]
    wrong = scoring.tally_mcq(items, unknown="wrong")
    agg = scoring.mcq_stat(wrong, "pair_acc")
    assert (agg.value, agg.n) == (0.0, 2)  # p1 wrong (its unknown member), p2 wrong; p3 incomplete
    assert sum(t.incomplete_pairs for t in wrong) == 1
    assert scoring.mcq_stat(scoring.tally_mcq([_mcq("p", "A", "A"), _mcq("p", "B", "B")]), "pair_acc").value == 1.0


async def test_mcq_pair_acc_reports_incomplete_pairs():
    judges = FakeJudges({("answer_matcher", "a green square"): "A"})
    records = [r for r in _records("multiple_choice", MCQ) if r.id != "multiple_choice_00004"]  # cut one side
    m = metrics.mcq_pair_acc("pa", unknown="exclude")
    res = await _score([m], records, judges)
    # pair1 right; pair2 cut (its surviving row is right, but it is no pair); pair3 B/B for A/B: wrong;
    # pair4: "a green square" -> A right, the other reply unparsed and excluded: incomplete
    assert (res["pa"].value, res["pa"].n) == (0.5, 2)
    assert res["pa_incomplete_pairs"].value == 2 and res["pa_incomplete_pairs"].n == 4


def test_sequence_golds_need_option_letters():
    from avhb.tasks.vidpair_halluc.extract import is_sequence_answer
    assert is_sequence_answer("CAB", "ABCD") and is_sequence_answer(" b a ", {"A": "x", "B": "y"})
    assert not is_sequence_answer("red", "ABCD") and not is_sequence_answer("No", "ABCD")
    assert not is_sequence_answer("A", "ABCD") and not is_sequence_answer("ABX", "ABC")
    colours = {"A": "red", "B": "blue", "C": "green"}
    assert scoring.gold_key("red", colours) == "A"  # the option text, not a sequence "RED"
    assert scoring.gold_key("b", colours) == "B" and scoring.gold_key("C A", colours) == "CA"
    assert scoring.gold_key("No", {"A": "Yes", "B": "No"}) == "B"
    assert scoring.gold_key("D", {}) == "D"
    with pytest.raises(SampleError, match="names no option"):
        scoring.gold_key("purple", colours)  # never its first letter "P"
    with pytest.raises(SampleError):
        scoring.gold_key("red", {})


async def test_mcq_text_gold_is_scored_by_its_option_and_a_bad_gold_fails_the_sample():
    doc = {"qa_id": "q1", "pair_id": "p", "level": "video", "file_name": "v_0.mp4", "question": "Colour?",
           "option_map": {"A": "red", "B": "blue"}}
    m = metrics.mcq_f1("f1")
    rec = SampleRecord(id="q1", doc=doc, target="red", response="A", extracted="A")
    got = await m.score(rec, ScoreContext(judges=FakeJudges({}), task="t"))
    assert got["mcq_correct"] == 1.0 and rec.meta["mcq"]["robust"]["gold"] == "A"
    bad = SampleRecord(id="q2", doc=dict(doc, qa_id="q2"), target="purple", response="A", extracted="A")
    with pytest.raises(SampleError, match="purple"):
        await m.score(bad, ScoreContext(judges=FakeJudges({}), task="t"))


def test_upstream_mode_rejects_conflicting_options():
    with pytest.raises(UserError, match="unknown: wrong"):
        metrics.vAcc("vAcc", mode="upstream", unknown="wrong")
    with pytest.raises(UserError, match="gt_yes: answered"):
        metrics.yes_diff("yes_diff", mode="upstream", gt_yes="answered")
    with pytest.raises(UserError, match="unknown: wrong"):
        metrics.mcq_f1("f1", mode="upstream", unknown="wrong")
    with pytest.raises(UserError):
        scoring.tally_sample(_pair("s", ["yes", "no", "no", "yes"]), mode="upstream", unknown="wrong")
    # the defaults and the YAML's gt_yes: all stay valid
    metrics.yes_diff("yes_diff", mode="upstream", gt_yes="all")
    metrics.mcq_f1("f1", mode="upstream")


async def test_binary_count_keys_carry_the_metric_name():
    replies = {f"binary_{i:05d}": "yes" for i in range(1, 17)}
    ms = [metrics.yes_diff("yd"), metrics.fp_rate("fpr"), metrics.unknown("unk")]
    res = await _score(ms, _records("binary", replies), FakeJudges({}))
    assert {"yd_model_yes", "yd_gt_yes", "fpr_fp", "unk_missing", "unk_skipped_pairs"} <= set(res)
    assert not {"model_yes", "gt_yes", "fp", "missing", "skipped_pairs"} & set(res)
    assert res["yd_model_yes"].value == 16 and res["fpr_fp"].value == 8


class _Roles(FakeJudges):
    def __init__(self, table, parser="score_0_2", parser_options=None):
        from avhb.score.judges import JudgeRole
        super().__init__(table)
        self.roles = {"scorer": JudgeRole("scorer", "p", parser, dict(parser_options or {}))}


async def test_open_score_checks_values_and_parser():
    docs = hooks.load(SAMPLE, {"dataset_name": "open_ended"})[:5]
    records = [SampleRecord(id=d["qa_id"], doc=d, target=d["answer"], response=f"r{i}", extracted=f"r{i}")
               for i, d in enumerate(docs)]
    # True is not a rating; 3 is off the 0-2 scale; 1.5 is a panel mean (judges 1 and 2): valid
    table = {("scorer", "r0"): 2, ("scorer", "r1"): True, ("scorer", "r2"): 3, ("scorer", "r3"): 1.5,
             ("scorer", "r4"): -1}
    res = await _score([metrics.open_score("os")], records, _Roles(table))
    assert res["os"].value == pytest.approx((1 + 0.75) / 2) and res["os"].n == 2
    assert res["os_judge_failures"].value == 3 and res["os_judge_failures"].n == 5
    assert records[1].meta["judge_failures"] == ["os"]
    # scale 5: 5 -> 1, 3 -> 0.5; 0 is off the 1-5 scale
    for r in records:
        r.scores, r.meta = {}, {}
    table5 = {("scorer", "r0"): 5, ("scorer", "r1"): 3, ("scorer", "r2"): 0, ("scorer", "r3"): None,
              ("scorer", "r4"): 4.5}
    res = await _score([metrics.open_score("os", scale=5)], records, _Roles(table5, "rating_json"))
    assert res["os"].value == pytest.approx((1 + 0.5 + 0.875) / 3) and res["os_judge_failures"].value == 2
    # a parser on another scale is a user error, before any judge call
    judges = _Roles(table, "yes_no")
    with pytest.raises(UserError, match="score_0_2"):
        await metrics.open_score("os").score(records[0], ScoreContext(judges=judges, task="t"))
    assert judges.calls == []
    with pytest.raises(UserError, match="1-5"):
        await metrics.open_score("os", scale=5).score(records[0], ScoreContext(judges=_Roles(table), task="t"))
    with pytest.raises(UserError):
        await metrics.open_score("os", scale=5).score(
            records[0], ScoreContext(judges=_Roles(table, "integer", {"min": 0, "max": 10}), task="t"))
    await metrics.open_score("os", scale=5).score(
        records[0], ScoreContext(judges=_Roles(table5, "integer", {"min": 1, "max": 5}), task="t"))
