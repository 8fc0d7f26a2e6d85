"""ANCHOR's pack metrics (tasks/anchor/metrics.py) on hand-made records:
the gold facets skip a sample without a gold CoT (not a judge failure,
and a re-score that finds the gold clears the flag), and ``answer_acc``
reads yes/no in any case, sends the configured fields to the configured
role, and counts its judge failures and failed samples."""
from __future__ import annotations

import pytest

from avhb.score.judges import Verdict
from tests.scripted_judges import TableJudges as Judges
from avhb.score.metric import SampleRecord, ScoreContext
from avhb.tasks.anchor.metrics import AnswerAcc, GoldFacet




def _rec(rid, response, **doc):
    return SampleRecord(id=rid, doc={"question": "Why?", "reference_answer": "because", **doc}, target="because",
                        response=response, extracted=response)


async def _score(metric, records, judges):
    ctx = ScoreContext(judges=judges, task="t")
    for r in records:
        if r.error is None:
            r.scores.update(await metric.score(r, ctx))
    return metric.aggregate(records)


async def test_a_gold_facet_skips_samples_without_a_gold_cot():
    judges = Judges({("cot_judge", "good"): 4, ("cot_judge", "bad"): None})
    m = GoldFacet("hallucination")
    rows = [_rec("a", "good", gold_cot="step 1"), _rec("b", "bad", gold_cot="step 1"), _rec("c", "good"),
            _rec("d", "good", gold_cot="")]
    failed = _rec("e", "good", gold_cot="step 1")
    failed.error = "media: missing"
    agg = await _score(m, rows + [failed], judges)
    assert [c[1]["response"] for c in judges.calls] == ["good", "bad"]  # only the samples with a gold CoT
    assert (agg["hallucination"].value, agg["hallucination"].n) == (4.0, 1)
    assert (agg["hallucination_no_gold"].value, agg["hallucination_no_gold"].n) == (2, 4)
    assert (agg["hallucination_judge_failures"].value, agg["hallucination_judge_failures"].n) == (1, 4)
    assert rows[2].meta["hallucination_no_gold"] is True and "hallucination_no_gold" not in rows[0].meta


async def test_a_rescore_that_finds_the_gold_clears_the_flag():
    judges = Judges({("cot_judge", "good"): 5})
    m = GoldFacet("divergence", gold="doc.reasoning")
    r = _rec("a", "good")
    ctx = ScoreContext(judges=judges, task="t")
    assert await m.score(r, ctx) == {"divergence": None} and r.meta["divergence_no_gold"] is True
    r.doc["reasoning"] = "the path"
    assert await m.score(r, ctx) == {"divergence": 5.0} and "divergence_no_gold" not in r.meta


async def test_answer_acc_reads_yes_and_no_and_counts_the_rest():
    judges = Judges({("answer_acc", "right"): "Yes", ("answer_acc", "wrong"): "no",
                     ("answer_acc", "odd"): "maybe"})
    m = AnswerAcc()
    rows = [_rec("a", "right"), _rec("b", "wrong"), _rec("c", "odd"), _rec("d", "silent")]
    failed = _rec("e", "right")
    failed.error = "backend: no answer"
    agg = await _score(m, rows + [failed], judges)
    assert [r.scores["answer_acc"] for r in rows] == [1.0, 0.0, None, None]
    assert [r.meta.get("judge_failures") for r in rows] == [None, None, ["answer_acc"], ["answer_acc"]]
    assert (agg["answer_acc"].value, agg["answer_acc"].n) == (0.5, 2)
    assert (agg["answer_acc_judge_failures"].value, agg["answer_acc_judge_failures"].n) == (2, 4)
    assert (agg["answer_acc_errors"].value, agg["answer_acc_errors"].n) == (1, 5)
    assert judges.calls[0] == ("answer_acc", {"question": "Why?", "response": "right", "reference": "because"})
    assert rows[0].judgements["answer_acc"]["value"] == "Yes"


async def test_answer_acc_role_and_fields_are_options():
    judges = Judges({("final", "B"): "yes"})
    m = AnswerAcc(role="final", fields={"response": "doc.final", "reference": "literal:B"})
    assert m.needs_judges == ("final",) and AnswerAcc().needs_judges == ("answer_acc",)
    r = _rec("a", "long reasoning", final="B")
    assert await m.score(r, ScoreContext(judges=judges, task="t")) == {"answer_acc": 1.0}
    assert judges.calls == [("final", {"response": "B", "reference": "B"})]


@pytest.mark.parametrize("value", [True, 1, "", None])
async def test_answer_acc_values_that_are_not_yes_or_no(value):
    class One:
        async def ask(self, role, fields, option_texts=None):
            return Verdict(value, True, str(value), [value])

    assert await AnswerAcc().score(_rec("a", "x"), ScoreContext(judges=One(), task="t")) == {"answer_acc": None}


async def test_the_counts_are_the_failures_not_the_rest():
    # unequal counts: 1 judge failure of 3 (a count of the parsed replies would say 2), and a facet whose
    # every sample has its gold and a valid rating has 0 judge failures (not 1, not -1)
    judges = Judges({("answer_acc", "right"): "yes", ("answer_acc", "odd"): "maybe", ("cot_judge", "good"): 3})
    agg = await _score(AnswerAcc(), [_rec("a", "right"), _rec("b", "right"), _rec("c", "odd")], judges)
    assert (agg["answer_acc_judge_failures"].value, agg["answer_acc_judge_failures"].n) == (1, 3)
    rows = [_rec("a", "good", gold_cot="step 1"), _rec("b", "good", gold_cot="step 2")]
    agg = await _score(GoldFacet("hallucination"), rows, judges)
    assert (agg["hallucination"].value, agg["hallucination"].n) == (3.0, 2)
    assert (agg["hallucination_judge_failures"].value, agg["hallucination_judge_failures"].n) == (0, 2)
    assert (agg["hallucination_no_gold"].value, agg["hallucination_no_gold"].n) == (0, 2)
