"""VidPair-Halluc's metric classes (tasks/vidpair_halluc/metrics.py) on
hand-made rows, each case one its mutation run left open: what each
sample's scores and meta say, which text is read, how rows pair (by
``pair_id``, upstream by ``id``), the default bootstrap, the counts' n,
the MCQ extraction's judge log and gold for failed rows, and the open
score's judge fields and failed samples."""
from __future__ import annotations

import pytest

from avhb.errors import UserError
from avhb.score.judges import Verdict
from avhb.score.metric import SampleRecord, ScoreContext
from avhb.tasks.vidpair_halluc import metrics


class Judges:
    """Scripted verdicts by (role, response); keeps every call's fields."""

    def __init__(self, table, per_judge=None):
        self.table, self.per_judge, self.calls = table, per_judge, []

    async def ask(self, role, fields, option_texts=None):
        self.calls.append((role, dict(fields)))
        value = self.table.get((role, fields["response"]))
        return Verdict(value, value is not None, f"raw {value}", self.per_judge if self.per_judge is not None
                       else [value])


def _row(qa_id, group, file, answer, reply, *, sid="s1", pair="p1", level="video", error=None, extracted=None, **doc):
    d = {"qa_id": qa_id, "qa_group": group, "file_name": file, "id": sid, "pair_id": pair, "level": level,
         "answer": answer, **doc}
    r = SampleRecord(id=qa_id, doc=d, target=answer)
    if error:
        r.error = error
    else:
        r.response = reply
        r.extracted = reply if extracted is None else extracted
    return r


def _binary_pair(replies, sid=("s1", "s1", "s1", "s1"), pair="p1", golds=("yes", "no", "no", "yes")):
    layout = [("binary_qa_pos", "v_0.mp4"), ("binary_qa_pos", "v_1.mp4"), ("binary_qa_neg", "v_0.mp4"),
              ("binary_qa_neg", "v_1.mp4")]
    return [_row(f"q{i}", g, f, gold, reply, sid=s, pair=pair)
            for i, ((g, f), gold, reply, s) in enumerate(zip(layout, golds, replies, sid))]


async def _score(metric_list, records, judges=None):
    ctx = ScoreContext(judges=judges or Judges({}), task="t")
    for r in records:
        if r.error is None:
            for m in metric_list:
                r.scores.update(await m.score(r, ctx))
    out = {}
    for m in metric_list:
        out.update(m.aggregate(records))
    return out


async def test_each_binary_sample_says_right_wrong_or_unknown():
    right, wrong, hedge = (_row("a", "binary_qa_pos", "v_0.mp4", "yes", "Yes."),
                           _row("b", "binary_qa_pos", "v_1.mp4", "no", "Yes"),
                           _row("c", "binary_qa_neg", "v_0.mp4", "no", "I am not sure"))
    m = metrics.vAcc("vAcc")
    ctx = ScoreContext(judges=Judges({}), task="t")
    assert await m.score(right, ctx) == {"binary_correct": 1.0, "binary_unknown": 0.0}
    assert await m.score(wrong, ctx) == {"binary_correct": 0.0, "binary_unknown": 0.0}
    assert await m.score(hedge, ctx) == {"binary_correct": None, "binary_unknown": 1.0}
    assert (right.meta, wrong.meta) == ({"yes_no": "yes"}, {"yes_no": "yes"})
    assert hedge.meta == {"yes_no": "unknown", "unknown": True}


async def test_the_filtered_answer_is_read_when_a_filter_made_one():
    ctx = ScoreContext(judges=Judges({}), task="t")
    filtered = _row("a", "binary_qa_pos", "v_0.mp4", "yes", "No, wait: yes", extracted="yes")
    assert (await metrics.vAcc("v").score(filtered, ctx))["binary_correct"] == 1.0
    unfiltered = _row("b", "binary_qa_pos", "v_0.mp4", "yes", "Yes")
    unfiltered.extracted = ["not", "a", "string"]  # a filter that made no text: the raw reply
    assert (await metrics.vAcc("v").score(unfiltered, ctx))["binary_correct"] == 1.0
    assert metrics._reply(_row("c", "binary_qa_pos", "v_0.mp4", "yes", None, error="media: missing")) is None


async def test_rows_pair_by_pair_id_and_upstream_by_id():
    # one pair (pair_id p1) whose two videos carry ids of their own
    rows = lambda: _binary_pair(["yes", "no", "no", "no"], sid=("s1", "s2", "s1", "s2"))
    avhb = await _score([metrics.vAcc("vAcc"), metrics.unknown("unknown")], rows())
    assert (avhb["vAcc"].value, avhb["vAcc"].n, avhb["unknown_skipped_pairs"].value) == (0.5, 2, 0)
    up = await _score([metrics.vAcc("vAcc", mode="upstream"), metrics.unknown("unknown", mode="upstream")], rows())
    assert up["vAcc"].value is None and up["unknown_skipped_pairs"].value == 2  # each id has one video: skipped
    # without a pair_id, the id pairs
    no_pair = _binary_pair(["yes", "no", "no", "no"], pair=None)
    assert (await _score([metrics.vAcc("vAcc")], no_pair))["vAcc"].value == 0.5


def test_a_binary_row_without_a_group_names_itself():
    row = _row("q1", None, "v_0.mp4", "yes", "Yes")
    with pytest.raises(UserError, match=r"binary row 'q1' has no qa_group"):
        metrics.vAcc("v").aggregate([row])
    del row.doc["qa_id"]
    row.id = "sample-7"
    with pytest.raises(UserError, match=r"binary row 'sample-7' has no qa_group"):
        metrics.vAcc("v").aggregate([row])


def test_group_keys_keep_a_pair_in_one_shard():
    row = _row("q1", "binary_qa_pos", "v_0.mp4", "yes", "Yes", sid="s1", pair="p1", level="temporal")
    bare = _row("q2", "binary_qa_pos", "v_0.mp4", "yes", "Yes", sid="s2", pair=None, level="video")
    for cls in (metrics.vAcc, metrics.mcq_f1):
        assert cls("m").group_key(row) == ("temporal", "p1") and cls("m").group_key(bare) == ("video", "s2")
        assert cls("m", mode="upstream").group_key(row) == ("temporal", "s1")
    assert metrics.open_score("o").group_key(row) == ("temporal", "p1")
    assert metrics.open_score("o").group_key(bare) == ("video", "s2")


async def test_the_default_bootstrap_is_a_thousand_resamples():
    rows = lambda: (_binary_pair(["yes", "no", "no", "yes"]) + _binary_pair(["yes", "yes", "no", "no"], pair="p2")
                    + _binary_pair(["no", "no", "yes", "yes"], pair="p3"))
    for cls in (metrics.vAcc, metrics.wAcc):
        default, explicit = (await _score([cls("m")], rows()))["m"], (await _score([cls("m", bootstrap_iters=1000)], rows()))["m"]
        other = (await _score([cls("m", bootstrap_iters=999)], rows()))["m"]
        assert default.stderr == explicit.stderr != other.stderr and default.stderr > 0


async def test_gt_yes_answered_is_kept_in_avhb_mode():
    rows = lambda: _binary_pair(["yes", "no", "Maybe", "yes"])  # the hedge's gold is no; 3 answers, 2 yes
    all_rows = (await _score([metrics.yes_diff("d")], rows()))
    answered = (await _score([metrics.yes_diff("d", gt_yes="answered")], rows()))
    assert all_rows["d"].value == pytest.approx((2 - 2) / 3) and all_rows["d_gt_yes"].value == 2
    assert answered["d"].value == pytest.approx((2 - 2) / 3) and answered["d_gt_yes"].value == 2
    hedged_yes = lambda: _binary_pair(["Maybe", "no", "no", "yes"])  # now the hedge's gold is yes
    assert (await _score([metrics.yes_diff("d")], hedged_yes()))["d_gt_yes"].value == 2
    assert (await _score([metrics.yes_diff("d", gt_yes="answered")], hedged_yes()))["d_gt_yes"].value == 1


def test_lower_is_better_for_the_bias_and_error_counts():
    assert (metrics.YesDiff.higher_is_better, metrics.FPRate.higher_is_better,
            metrics.UnknownCount.higher_is_better) == (False, False, False)
    assert metrics.VAcc.higher_is_better and metrics.McqF1.higher_is_better


async def test_unknowns_are_counted_over_the_rows_with_a_reply():
    rows = _binary_pair(["yes", "Maybe", "no", "yes"])
    rows[3] = _row("q3", "binary_qa_neg", "v_1.mp4", "yes", None, error="media: missing")
    got = await _score([metrics.unknown("unknown")], rows)
    assert (got["unknown"].value, got["unknown"].n) == (1, 3)
    assert (got["unknown_missing"].value, got["unknown_missing"].n) == (1, 4)


def test_clip_order_replies_as_letter_sequences():
    letters = {"A", "B", "C"}
    assert metrics.robust_sequence("C, A -> B.", letters) == "CAB"
    assert metrics.robust_sequence(" c|a/b ", letters) == "CAB"
    assert metrics.robust_sequence("C A D", letters) is None  # D is no option
    assert metrics.robust_sequence("", letters) is None and metrics.robust_sequence(None, letters) is None
    assert metrics.robust_sequence(" - , ", letters) is None  # nothing left


def test_options_from_the_map_the_choices_or_the_question():
    assert metrics.mcq_options({"option_map": {"A": "red", "B": "blue"}, "choices": ["x", "y"]}) == {"A": "red", "B": "blue"}
    assert metrics.mcq_options({"choices": ["red", "blue"]}) == {"A": "red", "B": "blue"}
    assert metrics.mcq_options({"question": "Which colour?\nA. red\nB. blue"}) == {"A": "red", "B": "blue"}
    assert metrics.mcq_options({"question": None}) == {}


def _mcq(qa_id, file, answer, reply, **kw):
    kw.setdefault("question", "What colour is the ball?\nA. red\nB. blue\nC. green")
    return _row(qa_id, "multiple_qa", file, answer, reply, **kw)


async def test_an_mcq_row_resolved_by_the_judge_logs_its_judgement():
    judges = Judges({("answer_matcher", "the ball looks bluish"): "B"})
    ctx = ScoreContext(judges=judges, task="t")
    m = metrics.mcq_f1("f1")
    by_rule, by_judge, never = (_mcq("a", "v_0.mp4", "A", "A"), _mcq("b", "v_1.mp4", "B", "the ball looks bluish"),
                                _mcq("c", "v_0.mp4", "A", "no idea at all"))
    assert await m.score(by_rule, ctx) == {"mcq_correct": 1.0, "mcq_unparsed": 0.0}
    assert await m.score(by_judge, ctx) == {"mcq_correct": 1.0, "mcq_unparsed": 0.0}
    assert await m.score(never, ctx) == {"mcq_correct": 0.0, "mcq_unparsed": 1.0}
    assert "answer_matcher" not in by_rule.judgements and "unparsed" not in by_rule.meta
    assert by_judge.judgements["answer_matcher"]["value"] == "B" and "unparsed" not in by_judge.meta
    assert never.meta["unparsed"] is True and never.meta["mcq"]["robust"]["judge_failed"] is True
    [(_, fields), _] = judges.calls
    assert fields["question"] == "What colour is the ball?\nA. red\nB. blue\nC. green"


async def test_a_wrong_letter_is_wrong_not_unparsed():
    ctx = ScoreContext(judges=Judges({}), task="t")
    assert await metrics.mcq_f1("f1").score(_mcq("a", "v_0.mp4", "A", "C"), ctx) == {"mcq_correct": 0.0,
                                                                                        "mcq_unparsed": 0.0}


async def test_upstream_spatial_golds_are_sequences():
    ctx = ScoreContext(judges=Judges({}), task="t")
    m = metrics.mcq_f1("f1", mode="upstream")
    spatial = _mcq("a", "m_0.mp4", "CAB", "CAB", level="spatial")
    assert (await m.extract(spatial, ctx))["gold"] == "CAB" and (await m.score(spatial, ctx))["mcq_correct"] == 1.0
    video = _mcq("b", "v_0.mp4", "B. blue", "Blue", level="video")
    assert (await m.extract(video, ctx)) == {"pred": "B", "gold": "B", "by": "upstream"}


async def test_mcq_pairs_are_the_rows_of_one_pair_id():
    rows = [_mcq("a", "v_0.mp4", "A", "A", sid="s1"), _mcq("b", "v_1.mp4", "B", "B", sid="s2")]
    got = await _score([metrics.mcq_pair_acc("pair")], rows)
    assert (got["pair"].value, got["pair"].n, got["pair_incomplete_pairs"].value) == (1.0, 1, 0)


def test_a_failed_rows_gold_by_mode():
    failed = _mcq("a", "v_0.mp4", "blue", None, error="media: missing")  # the gold names option B by its text
    [item] = metrics.mcq_f1("f1").items([failed])
    assert (item.gold, item.pred, item.answered) == ("B", None, False)
    [up] = metrics.mcq_f1("f1", mode="upstream").items([failed])
    assert up.gold == "blue"
    bad = _mcq("b", "v_1.mp4", "purple", None, error="media: missing")  # names no option
    [item] = metrics.mcq_f1("f1").items([bad])
    assert item.gold is None
    got = metrics.mcq_f1("f1").aggregate([failed, bad])
    assert got["f1_missing"].value == 2 and got["f1"].value is None


def test_the_scale_parser_message_names_what_the_task_declares():
    role = type("Role", (), {"parser": "yes_no", "parser_options": {}})()
    with pytest.raises(UserError) as info:
        metrics.check_scale_parser("open_score", 2, role)
    assert str(info.value) == ("open_score: scale 2 needs the scorer judge's parser to rate on 0-2 (parser: score_0_2)"
                               "; the task declares parser 'yes_no'")
    role.parser_options = {"min": 0, "max": 10}
    role.parser = "integer"
    with pytest.raises(UserError, match=r"declares parser 'integer' \{'min': 0, 'max': 10\}$"):
        metrics.check_scale_parser("open_score", 5, role)


def test_the_removed_errors_option_names_the_metric():
    with pytest.raises(UserError, match=r"^open_description: option 'errors' was removed"):
        metrics.open_score("open_description", errors="wrong")


async def test_the_open_score_judge_sees_question_reference_and_reply():
    judges = Judges({("scorer", "a red ball"): 2}, per_judge=[2, 2])
    row = _row("o1", "open_qa", "v_0.mp4", "A red ball on a table.", "a red ball", question="Describe it.")
    got = await _score([metrics.open_score("open")], [row], judges)
    assert judges.calls == [("scorer", {"question": "Describe it.", "reference": "A red ball on a table.",
                                        "response": "a red ball"})]
    assert row.judgements["scorer"] == {"value": 2, "ok": True, "raw": "raw 2", "per_judge": [2, 2]}
    assert got["open"].value == 1.0


async def test_a_failed_open_sample_first_does_not_hide_the_others():
    judges = Judges({("scorer", "r1"): 1, ("scorer", "r2"): 2})
    rows = [_row("o0", "open_qa", "v_0.mp4", "ref", None, error="media: missing", pair="p0"),
            _row("o1", "open_qa", "v_0.mp4", "ref", "r1", pair="p1"),
            _row("o2", "open_qa", "v_1.mp4", "ref", "r2", pair="p2", sid="s9")]
    got = await _score([metrics.open_score("open")], rows, judges)
    assert (got["open"].value, got["open"].n) == (pytest.approx(0.75), 2)
    assert (got["open_judge_failures"].value, got["open_judge_failures"].n) == (0, 2)


# ---------------------------------------------------------------- scoring.py: the pure functions

import dataclasses  # noqa: E402
import random  # noqa: E402

from avhb.errors import SampleError  # noqa: E402
from avhb.tasks.vidpair_halluc import scoring  # noqa: E402
from avhb.tasks.vidpair_halluc.scoring import BinaryItem, McqItem  # noqa: E402


def _items(sample, rows, level="video"):
    """rows: (group, file, gold, reply)."""
    return [BinaryItem(sample, g, f, gold, reply, level) for g, f, gold, reply in rows]


def test_items_are_values():
    item = BinaryItem("s", "binary_qa_pos", "v_0.mp4", "yes", "Yes")
    mcq = McqItem("p", "s", "v_0.mp4", "video", "A", "A", True)
    for obj, field in ((item, "reply"), (mcq, "pred")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, "changed")


def test_the_upstream_clip_skip_rule_needs_two_valid_replies():
    two = _items("m", [("binary_qa_0", "m_0.mp4", "yes", "yes"), ("binary_qa_0", "m_1.mp4", "no", "no"),
                       ("binary_qa_1", "m_0.mp4", "no", "Maybe"), ("binary_qa_1", "m_1.mp4", "yes", "inference failed")],
                 level="spatial")
    t = scoring.tally_sample(two, mode="upstream")
    assert (t.skipped, t.vp_total, t.vp_right) == (0, 1, 1)
    one = [dataclasses.replace(it, reply="Maybe") if it.reply == "no" else it for it in two]
    assert scoring.tally_sample(one, mode="upstream").skipped == 1


def test_a_clip_sample_with_one_group_is_skipped():
    rows = _items("m", [("binary_qa_0", "m_0.mp4", "yes", "yes"), ("binary_qa_0", "m_1.mp4", "no", "no")],
                  level="spatial")
    assert scoring.tally_sample(rows).skipped == 1 and scoring.tally_sample(rows, mode="upstream").skipped == 0
    two = rows + _items("m", [("binary_qa_1", "m_0.mp4", "no", "no")], level="spatial")
    assert scoring.tally_sample(two).skipped == 0


def test_only_upstream_temporal_samples_skip_the_gold_file_check():
    one_file = _items("t", [("binary_qa_pos", "T_x_0.mp4", "yes", "yes"), ("binary_qa_neg", "T_x_0.mp4", "no", "no")],
                      level="temporal")
    assert scoring.tally_sample(one_file).skipped == 1  # avhb: two gold files needed at every level
    assert scoring.tally_sample(one_file, mode="upstream").skipped == 0
    single = one_file[:1]  # a sample of one row: skipped (fewer than two replies), never an error
    assert scoring.tally_sample(single, mode="upstream").skipped == 1


def test_a_group_whose_rows_all_failed_is_no_unit():
    rows = _items("s", [("binary_qa_pos", "v_0.mp4", "yes", "yes"), ("binary_qa_pos", "v_1.mp4", "no", "no"),
                        ("binary_qa_neg", "v_0.mp4", "no", None), ("binary_qa_neg", "v_1.mp4", "yes", None)])
    t = scoring.tally_sample(rows, unknown="wrong")
    assert (t.vp_total, t.vp_right, t.qp_total, t.missing) == (1, 1, 0, 2)


def test_three_groups_and_three_files_are_units_of_their_own():
    # groups 0 and 1 right on every file, group 2 wrong on file 2; files 0 and 1 right, file 2 wrong
    rows = [(f"binary_qa_{g}", f"m_{f}.mp4", "yes", "yes" if (g, f) != (2, 2) else "no")
            for g in range(3) for f in range(3)]
    t = scoring.tally_sample(_items("m", rows, level="spatial"))
    assert (t.vp_total, t.vp_right, t.qp_total, t.qp_right) == (3, 2, 3, 2)


def test_a_file_asked_one_question_is_no_question_pair():
    rows = _items("s", [("binary_qa_pos", "v_0.mp4", "yes", "yes"), ("binary_qa_pos", "v_1.mp4", "no", "no"),
                        ("binary_qa_neg", "v_1.mp4", "yes", "yes")])
    for unknown in ("exclude", "wrong"):
        t = scoring.tally_sample(rows, unknown=unknown)
        assert (t.qp_total, t.qp_right) == (1, 1), unknown  # file 1 only, though file 0 comes first


def _reference_se(values, statistic, iters=1000, seed=1234):
    """A bootstrap written out: resample with replacement, the sample std of the statistic."""
    rng = random.Random(seed)
    stats = [s for s in (statistic(rng.choices(values, k=len(values))) for _ in range(iters)) if s is not None]
    m = sum(stats) / len(stats)
    return (sum((s - m) ** 2 for s in stats) / (len(stats) - 1)) ** 0.5


def test_the_binary_stderr_resamples_whole_samples():
    ts = [scoring.BinaryTally(vp_right=r, vp_total=2, qp_right=q, qp_total=2, total_qa=4, model_yes=y, gt_yes_all=2,
                              fp=fp) for r, q, y, fp in ((2, 2, 2, 0), (1, 1, 3, 1), (0, 1, 1, 0), (2, 1, 2, 0))]
    wacc = lambda sub: sum(t.vp_right + t.qp_right for t in sub) / sum(t.vp_total + t.qp_total for t in sub)
    got = scoring.binary_stat(ts, "wAcc")
    assert got.value == pytest.approx(10 / 16) and got.stderr == pytest.approx(_reference_se(ts, wacc))
    assert scoring.binary_stat(ts, "wAcc", iters=999).stderr != got.stderr
    ydiff = lambda sub: (sum(t.model_yes for t in sub) - sum(t.gt_yes_all for t in sub)) / sum(t.total_qa for t in sub)
    assert scoring.binary_stat(ts, "yes_diff").stderr == pytest.approx(_reference_se(ts, ydiff))


def _mcq_items(rows):
    """rows: (pair, sample, file, level, gold, pred)."""
    return [McqItem(p, s, f, lvl, g, pred, True) for p, s, f, lvl, g, pred in rows]


def test_the_mcq_stderr_resamples_pairs():
    ts = [scoring.McqTally(rows=2, right=r, pairs=1, pairs_right=int(r == 2)) for r in (2, 1, 0, 2, 1)]
    acc = lambda sub: sum(t.right for t in sub) / sum(t.rows for t in sub)
    got = scoring.mcq_stat(ts, "acc")
    assert got.value == pytest.approx(0.6) and got.stderr == pytest.approx(_reference_se(ts, acc))
    assert scoring.mcq_stat(ts, "acc", iters=999).stderr != got.stderr
    assert scoring.mcq_stat([scoring.McqTally()], "acc").stderr is None


def test_the_open_stderr_resamples_pairs():
    units = {"p1": [1.0, 0.5], "p2": [0.0, None], "p3": [None], "p4": [1.0, 1.0]}
    groups = [[1.0, 0.5], [0.0], [1.0, 1.0]]
    mean = lambda gs: sum(sum(g) for g in gs) / sum(len(g) for g in gs)
    got = scoring.clustered_mean(units)
    assert (got.value, got.n) == (pytest.approx(3.5 / 5), 5)
    assert got.stderr == pytest.approx(_reference_se(groups, mean))
    assert scoring.clustered_mean(units, iters=999).stderr != got.stderr
    assert scoring.clustered_mean({"p": [None]}).stderr is None


def test_a_gold_naming_no_option_says_which_exist():
    with pytest.raises(SampleError, match=r"names no option \(no options found\)"):
        scoring.gold_key("purple", {})
    with pytest.raises(SampleError, match=r"names no option \(A, B\)"):
        scoring.gold_key("purple", {"A": "red", "B": "blue"})


def test_upstreams_video_level_pairing_by_file_name_prefix():
    paired = scoring._video_level_paired
    assert paired(["color_0001_0.mp4", "color_0001_1.mp4"])
    assert not paired(["a_b_0.mp4", "a_c_1.mp4"])  # the prefix is all but the last part
    assert not paired(["clip_0.mp4", "clip_1.mp4"])  # names of two parts have no prefix upstream
    assert not paired(["a_b_z.avi", "a_b_x_0.mp4", "a_b_y_1.mp4"])  # only mp4 names give prefixes
    assert not paired(["x_y_0.mp4"])


def test_upstream_mcq_tallies():
    rows = _mcq_items([("p", "s", "c_01_0.mp4", "video", "B", "B"), ("p", "s", "c_01_1.mp4", "video", "A. red", "A")])
    [t] = scoring.tally_mcq(rows, mode="upstream")
    assert (t.rows, t.right, t.pairs, t.pairs_right, t.skipped) == (2, 2, 1, 1, 0)
    wrong_first = _mcq_items([("p", "s", "c_01_0.mp4", "video", "B", "C"), ("p", "s", "c_01_1.mp4", "video", "A", "A")])
    [t] = scoring.tally_mcq(wrong_first, mode="upstream")
    assert (t.right, t.pairs, t.pairs_right) == (1, 1, 0)
    spatial = _mcq_items([("p", "m", "m_0.mp4", "spatial", "c a b", "CAB")])
    [t] = scoring.tally_mcq(spatial, mode="upstream")
    assert (t.rows, t.right, t.skipped) == (1, 1, 0)


def test_mcq_units_are_samples_upstream_and_pairs_otherwise():
    rows = _mcq_items([("p1", "s1", "c_01_0.mp4", "video", "A", "A"), ("p1", "s2", "c_01_1.mp4", "video", "B", "B"),
                       ("p2", "s1", "c_01_2.mp4", "video", "A", "A")])
    avhb = scoring.tally_mcq(rows)
    assert [(t.rows, t.pairs) for t in avhb] == [(2, 1), (1, 0)]
    up = scoring.tally_mcq(rows, mode="upstream")
    assert [(t.rows, t.pairs) for t in up] == [(2, 1), (0, 0)]  # s1: _0 and _2 pair upstream; s2 alone: skipped
    assert [t.skipped for t in up] == [0, 1]


def _mcq_pairs():
    # four pairs (two rows each, one per video) with 2, 1, 0 and 2 right answers
    answers = [("A", "A", "B", "B"), ("A", "A", "B", "C"), ("A", "C", "B", "A"), ("A", "A", "B", "B")]
    return [row for i, (g0, r0, g1, r1) in enumerate(answers)
            for row in (_mcq(f"a{i}", "v_0.mp4", g0, r0, sid=f"s{i}", pair=f"p{i}"),
                        _mcq(f"b{i}", "v_1.mp4", g1, r1, sid=f"s{i}", pair=f"p{i}"))]


async def test_the_mcq_and_open_default_bootstrap_is_a_thousand_resamples():
    for cls in (metrics.mcq_f1, metrics.mcq_pair_acc):
        default = (await _score([cls("m")], _mcq_pairs()))["m"]
        explicit = (await _score([cls("m", bootstrap_iters=1000)], _mcq_pairs()))["m"]
        other = (await _score([cls("m", bootstrap_iters=999)], _mcq_pairs()))["m"]
        assert default.stderr == explicit.stderr != other.stderr and default.stderr > 0
    judges = Judges({("scorer", "r0"): 0, ("scorer", "r1"): 1, ("scorer", "r2"): 2})
    rows = lambda: [_row(f"o{i}", "open_qa", "v_0.mp4", "ref", f"r{i % 3}", pair=f"p{i}") for i in range(6)]
    default = (await _score([metrics.open_score("o")], rows(), judges))["o"]
    explicit = (await _score([metrics.open_score("o", bootstrap_iters=1000)], rows(), judges))["o"]
    other = (await _score([metrics.open_score("o", bootstrap_iters=999)], rows(), judges))["o"]
    assert default.stderr == explicit.stderr != other.stderr and default.stderr > 0


async def test_the_open_stderr_clusters_by_pair_id_else_by_id():
    judges = Judges({("scorer", "r0"): 0, ("scorer", "r1"): 1, ("scorer", "r2"): 2})
    replies = ["r0", "r0", "r2", "r2", "r1", "r2"]  # 0, 0, 1, 1, 0.5, 1 on the 0-2 scale
    per_row = scoring.clustered_mean({i: [v] for i, v in enumerate([0.0, 0.0, 1.0, 1.0, 0.5, 1.0])})
    by_pair = scoring.clustered_mean({"p0": [0.0, 0.0], "p1": [1.0, 1.0], "p2": [0.5, 1.0]})
    assert by_pair.stderr != per_row.stderr  # the cases below tell a clustered stderr from a per-row one
    # three pairs, each of two rows with ids of their own
    paired = [_row(f"o{i}", "open_qa", f"v_{i % 2}.mp4", "ref", reply, sid=f"s{i}", pair=f"p{i // 2}")
              for i, reply in enumerate(replies)]
    got = (await _score([metrics.open_score("o")], paired, judges))["o"]
    assert (got.value, got.n, got.stderr) == (pytest.approx(3.5 / 6), 6, pytest.approx(by_pair.stderr))
    # no pair_id: the id pairs
    by_id = [_row(f"o{i}", "open_qa", f"v_{i % 2}.mp4", "ref", reply, sid=f"s{i // 2}", pair=None)
             for i, reply in enumerate(replies)]
    got = (await _score([metrics.open_score("o")], by_id, judges))["o"]
    assert got.stderr == pytest.approx(by_pair.stderr)


def test_a_failed_mcq_row_is_missing_not_unparsed():
    # unequal counts: 2 parsed, 1 unparsed, 1 failed (no reply)
    items = [McqItem("p", "s", f"v_{i}.mp4", "video", gold, pred, answered)
             for i, (gold, pred, answered) in enumerate([("A", "A", True), ("B", "B", True), ("C", None, True),
                                                         ("D", None, False)])]
    t = scoring.tally_mcq_default(items)
    assert (t.unparsed, t.missing, t.rows, t.right) == (1, 1, 3, 2)


def test_an_upstream_mcq_tally_counts_its_failed_rows_and_no_incomplete_pairs():
    rows = _mcq_items([("p", "s", "c_01_0.mp4", "video", "B", "B"), ("p", "s", "c_01_1.mp4", "video", "A", "A")])
    rows.append(McqItem("p", "s", "c_01_2.mp4", "video", "C", None, False))  # a failed sample: no reply
    [t] = scoring.tally_mcq(rows, mode="upstream")
    assert (t.rows, t.right, t.pairs, t.missing, t.unparsed, t.incomplete_pairs) == (2, 2, 1, 1, 0, 0)
    [skipped] = scoring.tally_mcq(_mcq_items([("p", "s", "x_0.mp4", "video", "A", "A")]), mode="upstream")
    assert (skipped.skipped, skipped.missing, skipped.incomplete_pairs) == (1, 0, 0)
