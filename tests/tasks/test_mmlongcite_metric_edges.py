"""MMLongCite's ``cor`` and taxonomy (tasks/mmlongcite/metrics.py) on
hand-made records, each case one its mutation run left open: the answer
read when the final answer is empty, the gold from the data when the
target is unset, the matcher's judgement logged, an answer with one
citation score undecided, the format error read from ``cor``'s own
record, and each answer's error flag."""
from __future__ import annotations


from tests.scripted_judges import TableJudges as Judges
from avhb.score.metric import SampleRecord, ScoreContext
from avhb.tasks.mmlongcite import metrics




def test_the_statements_answer_when_the_final_answer_is_empty():
    r = SampleRecord(id="a", doc={}, response="ignored", extracted="Paris is the capital [1].")
    r.meta["final_answer"] = ""
    assert metrics.answer_text(r) == "Paris is the capital."
    r.meta["final_answer"] = "Paris"
    assert metrics.answer_text(r) == "Paris"
    r.meta["final_answer"], r.extracted = None, {"not": "text"}
    assert metrics.answer_text(r) == ""
    plain = SampleRecord(id="b", doc={}, response="Lyon [2] is south.")
    assert metrics.answer_text(plain) == "Lyon is south."


def test_the_judges_it_needs():
    assert metrics.cor().needs_judges == ("answer_matcher", "scorer")
    assert metrics.cor("cor", matcher_role="m", scorer_role="s").needs_judges == ("m", "s")


async def test_the_gold_is_the_target_else_the_datas_ground_truth():
    judges = Judges({("scorer", "Paris"): "yes"})
    ctx = ScoreContext(judges=judges, task="t")
    with_target = SampleRecord(id="a", doc={"ground_truth": "Lyon", "question_text": "Capital?"}, target="Paris",
                               response="Final answer: Paris")
    without = SampleRecord(id="b", doc={"ground_truth": " Marseille "}, target=None, response="Final answer: Paris")
    assert (await metrics.cor().score(with_target, ctx)) == {"cor": 1.0}
    await metrics.cor().score(without, ctx)
    assert [f["reference"] for _, f in judges.calls] == ["Paris", "Marseille"]
    assert judges.calls[0][1]["question"] == "Capital?"
    assert with_target.judgements["cor"]["value"] == "yes"


async def test_an_mcq_answer_logs_the_matchers_judgement_only_when_asked():
    doc = {"mcq": True, "options": {"A": "red", "B": "blue"}, "question_text": "Colour? A. red B. blue"}
    judges = Judges({("answer_matcher", "it is bluish"): "B"})
    ctx = ScoreContext(judges=judges, task="t")
    by_rule = SampleRecord(id="a", doc=doc, target="B", response="Final answer: B")
    by_judge = SampleRecord(id="b", doc=doc, target="B", response="Final answer: it is bluish")
    assert await metrics.cor().score(by_rule, ctx) == {"cor": 1.0} and "cor" not in by_rule.judgements
    assert await metrics.cor().score(by_judge, ctx) == {"cor": 1.0}
    assert by_judge.judgements["cor"]["value"] == "B" and by_judge.meta["cor"]["by"] == "judge"


STATEMENT = {"citations": [1], "recall": 1, "out_of_range": False}


def test_one_undecided_citation_score_leaves_the_answer_unlabelled():
    assert metrics.classify(1.0, None, 0.5, [STATEMENT], False, None) is None
    assert metrics.classify(1.0, 0.5, None, [STATEMENT], False, None) is None
    assert metrics.classify(None, 1.0, 1.0, [STATEMENT], False, None) is None
    assert metrics.classify(1.0, 1.0, 1.0, [STATEMENT], False, None) == "correct"


async def _taxonomy(cor, recall, precision, statements, cor_meta):
    r = SampleRecord(id="a", doc={}, response="x")
    r.scores = {"cor": cor, "citation_recall": recall, "citation_precision": precision}
    r.meta = {"citation": {"statements": statements}, "cor": cor_meta}
    got = await metrics.taxonomy().score(r, ScoreContext(judges=Judges({}), task="t"))
    return got, r.meta["taxonomy"]


async def test_an_answer_cor_could_not_read_is_a_format_error():
    got, label = await _taxonomy(0.0, 1.0, 1.0, [STATEMENT], {"unparsed": True})
    assert (got, label) == ({"taxonomy_error": 1.0}, "format_error")
    got, label = await _taxonomy(0.0, 1.0, 1.0, [STATEMENT], {"unparsed": False})
    assert label == "comprehension_failure"


async def test_each_answer_says_whether_it_is_an_error():
    assert await _taxonomy(1.0, 1.0, 1.0, [STATEMENT], {}) == ({"taxonomy_error": 0.0}, "correct")
    assert await _taxonomy(1.0, 1.0, 0.5, [STATEMENT], {}) == ({"taxonomy_error": 1.0}, "over_citation")
    assert await _taxonomy(1.0, None, 1.0, [STATEMENT], {}) == ({"taxonomy_error": None}, None)
