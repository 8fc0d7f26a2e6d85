"""Likert facets and the 0/1/2 scorer."""
import math

import pytest

from avhb.errors import UserError

from avhb.score.metric import SampleRecord, ScoreContext
from avhb.plugins.metrics.likert import Judge012, LikertFacet, likert_mean, score_012, valid_rating
from tests.scripted_judges import UNPARSED, FakeVerdict, ScriptedJudges


def rec(i, response="out", extracted=None, error=None):
    return SampleRecord(id=str(i), doc={"question": f"q{i}"}, target=f"ref{i}", response=response,
                        extracted=extracted, error=error)


def test_valid_rating():
    assert valid_rating(3, 1, 5) == 3.0
    assert valid_rating(3.5, 1, 5) == 3.5
    assert valid_rating(3.5, 0, 2, integer=True) is None
    assert valid_rating(0, 1, 5) is None
    assert valid_rating(True, 0, 2) is None
    assert valid_rating("4", 1, 5) is None


def test_pure_functions():
    agg, bad = likert_mean([5, 4, None, 9, 3.5])
    assert bad == 2 and agg.n == 3 and agg.value == pytest.approx(12.5 / 3)
    assert agg.stderr == pytest.approx(math.sqrt((7 / 12) / 3))
    agg, bad = score_012([2, 1, 0, None, 2])
    assert (agg.value, agg.n, bad) == (pytest.approx(0.625), 4, 1)
    agg, bad = score_012([2, 1, 0, None, 2], failures_as_zero=True)
    assert (agg.value, agg.n, bad) == (pytest.approx(0.5), 5, 1)
    agg, bad = score_012([])
    assert (agg.value, agg.n, bad) == (None, 0, 0)


async def test_likert_facet_excludes_and_counts_failures():
    panel = FakeVerdict(3.5, ok=True, per_judge=[3, 4])
    judges = ScriptedJudges({"halluc_judge": [5, 4, UNPARSED, 9, panel]})
    ctx = ScoreContext(judges, "t")
    m = LikertFacet(name="hallucination", role="halluc_judge")
    assert m.needs_judges == ("halluc_judge",)
    records = [rec(i) for i in range(5)] + [rec(5, response=None, error="boom")]
    records[1].extracted = "short"
    for r in records[:5]:
        r.scores.update(await m.score(r, ctx))
    assert [r.scores["hallucination"] for r in records[:5]] == [5.0, 4.0, None, None, 3.5]
    assert judges.calls[0][1] == {"question": "q0", "reference": "ref0", "response": "out"}  # extracted -> response
    assert judges.calls[1][1]["response"] == "short"
    assert records[4].judgements["hallucination"]["per_judge"] == [3, 4]
    assert records[2].meta["judge_failures"] == ["hallucination"]
    agg = m.aggregate(records)
    assert agg["hallucination"].value == pytest.approx(12.5 / 3) and agg["hallucination"].n == 3
    assert agg["hallucination"].stderr == pytest.approx(math.sqrt((7 / 12) / 3))
    assert agg["hallucination_judge_failures"].value == 2
    assert agg["hallucination_errors"].value == 1


async def test_likert_custom_fields_and_scale():
    judges = ScriptedJudges({"cot_judge": lambda f: 0})
    m = LikertFacet(name="div", fields={"gold": "doc.question", "answer": "response", "k": "literal:x"}, scale=[0, 10])
    r = rec(0)
    assert (await m.score(r, ScoreContext(judges, "t")))["div"] == 0.0
    assert judges.calls[0] == ("cot_judge", {"gold": "q0", "answer": "out", "k": "x"})


async def test_judge_012():
    judges = ScriptedJudges({"scorer": [2, 1, 0, UNPARSED, 2]})
    ctx = ScoreContext(judges, "t")
    records = [rec(i) for i in range(5)]
    m = Judge012()
    for r in records:
        r.scores.update(await m.score(r, ctx))
    assert [r.scores["judge_012"] for r in records] == [1.0, 0.5, 0.0, None, 1.0]
    agg = m.aggregate(records)
    assert agg["judge_012"].value == pytest.approx(0.625) and agg["judge_012"].n == 4
    assert agg["judge_012_judge_failures"].value == 1
    assert Judge012(failures_as_zero=True).aggregate(records)["judge_012"].value == pytest.approx(0.5)
    with_err = records + [rec(9, response=None, error="x")]
    agg = m.aggregate(with_err)  # a failed sample is excluded and counted, never scored 0 (docs/errors.md)
    assert agg["judge_012"].value == pytest.approx(0.625) and agg["judge_012"].n == 4
    assert agg["judge_012_errors"].value == 1
    with pytest.raises(UserError, match="errors_count_as_wrong was removed"):
        Judge012(errors_count_as_wrong=True)


async def test_judge_012_rejects_off_scale():
    judges = ScriptedJudges({"scorer": [3, 1.5, "2"]})
    m = Judge012()
    for i in range(3):
        assert (await m.score(rec(i), ScoreContext(judges, "t")))["judge_012"] is None


async def test_judge_012_accepts_panel_average():
    # a panel of two judges giving 1 and 2 returns 1.5: a valid score of 0.75
    judges = ScriptedJudges({"scorer": [FakeVerdict(1.5, per_judge=[1, 2]), 2, 1.5,
                                        FakeVerdict(2.5, per_judge=[2, 3]), FakeVerdict(0.5, per_judge=[1, 0])]})
    ctx = ScoreContext(judges, "t")
    m = Judge012()
    records = [rec(i) for i in range(5)]
    for r in records:
        r.scores.update(await m.score(r, ctx))
    # single-judge 1.5 is still rejected; a panel value off [0, 2] too
    assert [r.scores["judge_012"] for r in records] == [0.75, 1.0, None, None, 0.25]
    assert records[0].scores["judge_012_raw"] == 1.5
    agg = m.aggregate(records)
    assert agg["judge_012"].value == pytest.approx((0.75 + 1.0 + 0.25) / 3) and agg["judge_012"].n == 3
    assert agg["judge_012_judge_failures"].value == 2
    agg = Judge012(failures_as_zero=True).aggregate(records)
    assert agg["judge_012"].value == pytest.approx(2.0 / 5) and agg["judge_012"].n == 5
    agg, bad = score_012([1.5, 2, None], integer=False)
    assert (agg.value, bad) == (pytest.approx(0.875), 1)
    assert score_012([1.5], integer=True)[1] == 1


async def test_likert_panel_values_and_single_judge_integers():
    judges = ScriptedJudges({"cot_judge": [3.5, FakeVerdict(3.5, per_judge=[3, 4]), FakeVerdict(1.5, per_judge=[1, 2, 1.5]),
                                           FakeVerdict(5.5, per_judge=[5, 6]), 4]})
    ctx = ScoreContext(judges, "t")
    m = LikertFacet()
    got = [(await m.score(rec(i), ctx))["likert"] for i in range(5)]
    assert got == [None, 3.5, 1.5, None, 4.0]
    loose = LikertFacet(integer=False)
    judges = ScriptedJudges({"cot_judge": [3.5]})
    assert (await loose.score(rec(0), ScoreContext(judges, "t")))["likert"] == 3.5


async def test_member_failures_counted():
    script = [FakeVerdict(4.0, per_judge=[4, None, 4]), FakeVerdict(3.0, per_judge=[3, 3, 3]),
              FakeVerdict(None, ok=False, per_judge=[None, None, None]), FakeVerdict(2.0, per_judge=[None, 2, None])]
    for cls, role, values in ((LikertFacet, "cot_judge", script), (Judge012, "scorer", None)):
        if values is None:
            values = [FakeVerdict(2.0, per_judge=[2, None, 2]), FakeVerdict(1.0, per_judge=[1, 1, 1]),
                      FakeVerdict(None, ok=False, per_judge=[None, None, None]), FakeVerdict(0.0, per_judge=[None, 0, None])]
        judges = ScriptedJudges({role: list(values)})
        m = cls()
        records = [rec(i) for i in range(4)] + [rec(9, response=None, error="x")]
        for r in records[:4]:
            r.scores.update(await m.score(r, ScoreContext(judges, "t")))
        agg = m.aggregate(records)
        assert agg[f"{m.name}_member_failures"].value == 1 + 3 + 2 and agg[f"{m.name}_member_failures"].n == 4
        assert agg[f"{m.name}_judge_failures"].value == 1
        assert agg[m.name].n == 3  # the failed sample is excluded by both
