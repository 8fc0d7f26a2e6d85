"""HAVE-Bench's scores (tasks/have/metrics.py) on hand-made records: what
the open-answer judge is sent and how each of its replies scores, the MCQ
path through the choice metric (the question is ``query``, the matcher
role an option), every count's numerator and n, failed samples left out,
the mean of the run means with runs that scored nothing, and the
interaction walks' counts."""
from __future__ import annotations

import pytest

from tests.scripted_judges import TableJudges as Judges
from avhb.score.metric import SampleRecord, ScoreContext
from avhb.tasks.have.metrics import InteractionScore, StaticScore, mean_of_runs




def _ctx(table):
    judges = Judges(table)
    return judges, ScoreContext(judges=judges, task="t")


def _open(rid, response, target="a cat", query="What is it?", repeat=0):
    return SampleRecord(id=rid, doc={"answer_type": "open", "query": query}, target=target, response=response,
                        repeat=repeat)


async def test_the_open_answer_judge_and_each_of_its_replies():
    judges, ctx = _ctx({("scorer", "cat"): "yes", ("scorer", "dog"): "no", ("scorer", "cow"): "maybe"})
    m = StaticScore()
    yes, no, odd, silent = _open("a", "cat"), _open("b", "dog"), _open("c", "cow"), _open("d", "eel")
    assert [await m.score(r, ctx) for r in (yes, no, odd, silent)] == [
        {"score": 1.0}, {"score": 0.0}, {"score": None}, {"score": None}]
    assert judges.calls[0] == ("scorer", {"question": "What is it?", "reference": "a cat", "response": "cat"})
    assert [r.meta.get("judge_failed") for r in (yes, no, odd, silent)] == [None, None, True, True]
    assert yes.judgements["score"]["value"] == "yes"


async def test_missing_fields_are_sent_empty_and_the_roles_are_options():
    judges, ctx = _ctx({("grader", ""): "no"})
    m = StaticScore(scorer="grader", matcher="picker")
    assert m.needs_judges == ("picker", "grader") and StaticScore().needs_judges == ("answer_matcher", "scorer")
    r = _open("a", None, target=None, query=None)
    assert await m.score(r, ctx) == {"score": 0.0}
    assert judges.calls == [("grader", {"question": "", "reference": "", "response": ""})]
    assert r.judgements["score"]["role"] == "grader"


async def test_mcq_items_go_through_the_choice_metric():
    doc = {"answer_type": "mcq", "query": "Which one?\nA. red\nB. blue", "options": ["red", "blue"]}
    judges, ctx = _ctx({("picker", "the second colour"): "B"})
    m = StaticScore(matcher="picker")
    right = SampleRecord(id="a", doc=doc, target="B", response="B")
    judged = SampleRecord(id="b", doc=doc, target="A", response="the second colour")
    lost = SampleRecord(id="c", doc=doc, target="A", response="no idea")
    assert [await m.score(r, ctx) for r in (right, judged, lost)] == [{"score": 1.0}, {"score": 0.0}, {"score": 0.0}]
    for r, v in zip((right, judged, lost), (1.0, 0.0, 0.0)):
        r.scores["score"] = v
    assert judges.calls[0][0] == "picker" and judges.calls[0][1]["question"] == "Which one?\nA. red\nB. blue"
    assert lost.meta["unparsed"] is True and lost.meta["choice"]["judge_failed"] is True
    agg = m.aggregate([right, judged, lost])
    assert (agg["score_unparsed"].value, agg["score_unparsed"].n) == (1, 3)
    assert (agg["score_judge_failures"].value, agg["score_excluded"].value) == (1, 0)


def test_the_counts_and_failed_samples():
    rows = []
    for rid, value, meta in (("a", 1.0, {}), ("b", None, {"judge_failed": True}), ("c", 0.0, {"unparsed": True}),
                             ("d", 0.0, {"choice": {"judge_failed": True}, "unparsed": True})):
        r = SampleRecord(id=rid, doc={}, repeat=0)
        r.scores["score"], r.meta = value, meta
        rows.append(r)
    failed = SampleRecord(id="e", doc={}, repeat=0)
    failed.error, failed.meta = "media: missing", {"judge_failed": True, "unparsed": True}
    agg = StaticScore().aggregate(rows + [failed])
    assert (agg["score"].value, agg["score"].n) == (pytest.approx(1 / 3), 3)
    assert (agg["score_pooled"].value, agg["score_pooled"].n) == (pytest.approx(1 / 3), 3)
    assert [(agg[k].value, agg[k].n) for k in ("score_unparsed", "score_excluded", "score_judge_failures")] == [
        (2, 4), (1, 4), (2, 4)]


def _scored(table):
    out = []
    for item, values in table.items():
        for k, v in enumerate(values):
            r = SampleRecord(id=item, doc={}, repeat=k)
            r.scores["score"] = v
            out.append(r)
    return out


def test_the_mean_of_runs_leaves_out_runs_that_scored_nothing():
    # run 0: a=1, b=0 -> 0.5; run 1: nothing scored; run 2: a=1 -> 1.0
    agg = mean_of_runs(_scored({"a": [1.0, None, 1.0], "b": [0.0, None, None]}), "score")
    assert (agg.value, agg.n) == (pytest.approx(0.75), 3)
    assert agg.stderr == pytest.approx(0.5)  # item means 1 and 0: stderr of two values 1 and 0
    assert mean_of_runs(_scored({"a": [None, None]}), "score") == mean_of_runs([], "score")
    empty = mean_of_runs([], "score")
    assert (empty.value, empty.stderr, empty.n) == (None, None, 0)
    # unequal run sizes: the mean of the means, not the pooled mean
    agg = mean_of_runs(_scored({"a": [1.0, 0.0], "b": [1.0, None], "c": [1.0, None]}), "score")
    assert agg.value == pytest.approx((1.0 + 0.0) / 2) and agg.n == 4


async def test_an_interaction_walk_scores_success_or_is_excluded():
    m = InteractionScore()
    ctx = ScoreContext(judges=Judges({}), task="t")
    walk = lambda **outputs: SampleRecord(id="w", doc={}, outputs=outputs)
    assert await m.score(walk(outcome="success", success=True), ctx) == {"score": 1.0}
    assert await m.score(walk(outcome="fail_node", success=False), ctx) == {"score": 0.0}
    assert await m.score(walk(outcome="turn_limit"), ctx) == {"score": 0.0}
    assert await m.score(walk(outcome="excluded", success=True), ctx) == {"score": None}


def test_the_interaction_counts_are_over_the_scored_walks():
    rows = []
    for rid, value, outputs in (
            ("a", 1.0, {"outcome": "success", "turns": 3, "ambiguous_steps": 2}),
            ("b", 0.0, {"outcome": "turn_limit", "turns": 10, "ambiguous_steps": None}),
            ("c", 0.0, {"outcome": "fail_node", "turns": 5, "ambiguous_steps": 1, "skipped_learn": True}),
            ("d", None, {"outcome": "excluded", "turns": 7, "ambiguous_steps": 4, "skipped_learn": True})):
        r = SampleRecord(id=rid, doc={}, outputs=outputs)
        r.scores["score"] = value
        rows.append(r)
    failed = SampleRecord(id="e", doc={}, outputs={"outcome": "turn_limit", "turns": 1})
    failed.error = "backend: no answer"
    agg = InteractionScore().aggregate(rows + [failed])
    assert (agg["score"].value, agg["score"].n) == (pytest.approx(1 / 3), 3)
    assert (agg["score_excluded"].value, agg["score_excluded"].n) == (1, 4)
    assert (agg["mean_turns"].value, agg["mean_turns"].n) == (pytest.approx(6.0), 3)
    assert [(agg[k].value, agg[k].n) for k in ("ambiguous_steps", "turn_limit", "fail_node", "skipped_learn")] == [
        (3, 3), (1, 3), (1, 3), (1, 3)]
