"""Citation recall / precision / F1 by leave-one-out entailment."""
import re

import pytest

from avhb.score.metric import SampleRecord, ScoreContext
from avhb.plugins.metrics.citation import (Citation, citation_indices, parse_statements, parse_yes_no,
                                           score_citations, split_statements)
from tests.scripted_judges import UNPARSED, ScriptedJudges

UNITS = ["u1 text", "u2 text", "u3 text", "u4 text"]
# which unit sets entail which statement
RULES = {
    "Cats purr.": lambda p: "u1" in p,  # unit 1 alone suffices
    "Dogs bark.": lambda p: "u2" in p and "u3" in p,  # needs 2 and 3 together
    "Birds sing.": lambda p: "u1" in p or "u2" in p,  # 1 or 2 each suffice alone
    "Fish swim.": lambda p: True,
}


def entail_judge(fields):
    assert fields["premise"], "the empty set must never reach the judge"
    return "yes" if RULES[fields["hypothesis"]](fields["premise"]) else "no"


def make_entails(judges):
    async def entails(premise, hypothesis):
        v = await judges.ask("entailment", {"premise": premise, "hypothesis": hypothesis})
        return parse_yes_no(v.value) if v.ok else None
    return entails


ANSWER = "Cats purr [1][3]. Dogs bark [2][3]. Birds sing [1][2]. Fish swim."


def test_parse_statements():
    st = parse_statements(ANSWER, 4)
    assert [s.text for s in st] == ["Cats purr.", "Dogs bark.", "Birds sing.", "Fish swim."]
    assert [s.citations for s in st] == [[1, 3], [2, 3], [1, 2], []]
    assert citation_indices("x [1, 3] [2-4] [7\u20138]") == [1, 3, 2, 3, 4, 7, 8]
    assert split_statements("Price is 3.5 dollars [1]. Next. [2]\n- Item two [3]") == [
        "Price is 3.5 dollars [1].", "Next. [2]", "Item two [3]"]
    assert split_statements("A claim [1].\n[2]") == ["A claim [1]. [2]"]
    tagged = parse_statements("<statement>A is B.<cite>[1][2]</cite></statement> filler <statement>C.</statement>", 3)
    assert [(s.text, s.citations) for s in tagged] == [("A is B.", [1, 2]), ("C.", [])]
    dup = parse_statements("Cats purr [1][1][3][4][2].", 4)[0]
    assert dup.citations == [1, 3, 4]  # collapsed, then first 3
    assert parse_statements("Cats purr [1][1][3].", 4, dedup=False)[0].citations == [1, 1, 3]
    oor = parse_statements("Cats purr [1][9].", 4)[0]
    assert oor.out_of_range and oor.citations == [1, 9]
    assert parse_statements("Cats purr [0][1].", 4, out_of_range="drop")[0].citations == [1]
    assert parse_statements("", 4) == [] and parse_statements(None, 4) == []
    assert len(parse_statements("A [1]. B [1]. C [1].", 4, max_statements=2)) == 2


async def test_loo_precision_hand_computed():
    judges = ScriptedJudges({"entailment": entail_judge})
    res = await score_citations(parse_statements(ANSWER, 4), UNITS, make_entails(judges))
    # recalls 1,1,1,0; counted: cats 1/2 (3 unnecessary), dogs 2/2, birds 0/2 (each alone suffices)
    assert res.recall == pytest.approx(0.75)
    assert (res.n_counted, res.n_citations) == (3, 6)
    assert res.precision == pytest.approx(0.5)
    assert res.f1 == pytest.approx(2 * 0.75 * 0.5 / 1.25)
    assert judges.count() == 9  # 3 joint + 6 leave-one-out, none for the uncited statement
    assert {c[1]["premise"] for c in judges.calls} >= {"u1 text\n\nu3 text", "u3 text"}


async def test_alce_precision_hand_computed():
    judges = ScriptedJudges({"entailment": entail_judge})
    res = await score_citations(parse_statements(ANSWER, 4), UNITS, make_entails(judges), precision="alce")
    # cats: 1 alone entails -> counts, 3 not; dogs 2/2; birds 2/2 (each alone entails)
    assert (res.n_counted, res.n_citations) == (5, 6)
    assert res.f1 == pytest.approx(2 * 0.75 * (5 / 6) / (0.75 + 5 / 6))


async def test_single_citation_and_cache():
    judges = ScriptedJudges({"entailment": entail_judge})
    res = await score_citations(parse_statements("Cats purr [1]. Cats purr [1]. Cats purr [2].", 4), UNITS,
                                make_entails(judges))
    # single citation: necessary iff it entails (empty rest entails nothing)
    assert (res.recall, res.precision) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert judges.count() == 2  # identical query asked once; no call for the empty set


async def test_duplicates_and_out_of_range():
    judges = ScriptedJudges({"entailment": entail_judge})
    e = make_entails(judges)
    res = await score_citations(parse_statements("Cats purr [1][1][3].", 4), UNITS, e)
    assert (res.n_counted, res.n_citations) == (1, 2)
    res = await score_citations(parse_statements("Cats purr [1][1][3].", 4, dedup=False), UNITS, e)
    assert (res.n_counted, res.n_citations) == (2, 3)  # both copies of [1] are necessary
    res = await score_citations(parse_statements("Cats purr [1][7]. Dogs bark [2][3].", 4), UNITS, e)
    # out of range: recall 0, nothing in the precision denominator
    assert (res.recall, res.precision, res.n_citations) == (0.5, 1.0, 2)
    assert res.f1 == pytest.approx(2 / 3)
    res = await score_citations(parse_statements("Cats purr [1][7].", 4, out_of_range="drop"), UNITS, e)
    assert (res.recall, res.precision) == (1.0, 1.0)
    res = await score_citations(parse_statements("Cats purr [9].", 4), UNITS, e)
    assert (res.recall, res.precision, res.f1) == (0.0, 0.0, 0.0)


async def test_no_citation_empty_answer_and_judge_failure():
    judges = ScriptedJudges({"entailment": entail_judge})
    e = make_entails(judges)
    res = await score_citations(parse_statements("Fish swim.", 4), UNITS, e)
    assert (res.recall, res.precision, res.f1) == (0.0, 0.0, 0.0) and judges.count() == 0
    res = await score_citations([], UNITS, e)
    assert res.recall is None and res.f1 is None and res.n_statements == 0
    res = await score_citations([], UNITS, e, empty_answer="zero")
    assert (res.recall, res.precision, res.f1) == (0.0, 0.0, 0.0)
    bad = ScriptedJudges({"entailment": ["yes", UNPARSED, "no", "no", "no", "no"]})
    res = await score_citations(parse_statements("Cats purr [1][3]. Dogs bark [2].", 4), UNITS, make_entails(bad))
    assert res.judge_failed and res.recall is None and res.precision is None
    # the parsed statements are kept (a taxonomy must not read "no statement" into a judge failure)
    assert [(d["citations"], d["recall"]) for d in res.statements] == [([1, 3], None), ([2], None)]


async def test_citation_metric():
    judges = ScriptedJudges({"entailment": entail_judge})
    ctx = ScoreContext(judges, "t")
    doc = {"context": [{"type": "text", "text": u} for u in UNITS]}
    records = [SampleRecord(id="0", doc=doc, response=ANSWER),
               SampleRecord(id="1", doc=doc, response=""),
               SampleRecord(id="2", doc=doc, response="Cats purr [5]. Fish swim."),
               SampleRecord(id="3", doc=doc, response=None, error="timeout")]
    m = Citation()
    for r in records[:3]:
        r.scores.update(await m.score(r, ctx))
    assert records[0].scores["citation_f1"] == pytest.approx(0.6)
    assert records[1].scores["citation_f1"] is None
    assert records[0].meta["citation"]["judge_calls"] == 9
    agg = m.aggregate(records)
    # answers: (0.75, 0.5, 0.6), skipped, (0, 0, 0); the failed sample is excluded
    assert agg["citation_recall"].value == pytest.approx(0.375) and agg["citation_recall"].n == 2
    assert agg["citation_precision"].value == pytest.approx(0.25)
    assert agg["citation_f1"].value == pytest.approx(0.3)
    assert agg["citation_no_statements"].value == 1
    assert agg["citation_uncited_statements"].value == 2
    assert agg["citation_out_of_range_statements"].value == 1
    assert agg["citation_judge_failures"].value == 0


def test_parse_yes_no():
    assert parse_yes_no("Yes") is True and parse_yes_no(" no ") is False and parse_yes_no(True) is True
    assert parse_yes_no("maybe") is None and parse_yes_no(None) is None


async def test_image_units_reach_the_judge_as_images(tmp_path):
    """A cited image unit is sent to the entailment judge as an image part
    (path resolved against the data root, labelled with its index), never
    as a placeholder; text units go in the premise as ``[i] text``."""
    from avhb.model.messages import ImagePart
    from avhb.score.judges import JudgeRole

    (tmp_path / "img").mkdir()
    judges = ScriptedJudges({"entailment": lambda f, media: "yes" if media or "u1" in f["premise"] else "no"})
    judges.roles = {"entailment": JudgeRole("entailment", "{{premise}} {{hypothesis}}", media=("image",))}
    ctx = ScoreContext(judges, "t", root=tmp_path)
    doc = {"context": [{"type": "text", "text": "u1 text"}, {"type": "image", "image": "img/2.png"}, "u3 text"]}
    answer = "Cats purr [1][2]. Dogs bark [3]. Birds sing [2]. Fish swim [2][9]. Bees buzz."
    records = [SampleRecord(id="0", doc=doc, response=answer),
               SampleRecord(id="1", doc=doc, response="Cats purr [2].")]
    m = Citation()
    for r in records:
        r.scores.update(await m.score(r, ctx))
    sent = {c[1]["premise"]: media for c, media in zip(judges.calls, judges.media)}
    assert all("<image" not in p for p in sent)
    only_2 = sent["[2] (image [2], attached)"]
    assert len(only_2) == 1 and isinstance(only_2[0], ImagePart)
    assert only_2[0].path == str(tmp_path / "img" / "2.png") and only_2[0].label == "[2]"
    both = sent["[1] u1 text\n\n[2] (image [2], attached)"]
    assert [p.path for p in both] == [str(tmp_path / "img" / "2.png")]
    assert sent["[3] u3 text"] == []
    # [1][2]: both entail jointly; [1] alone entails ("u1"), [2] alone entails (an image was seen): 0/2
    # recall: [1][2] yes, [3] no (text without "u1"), [2] yes, [2][9] out of range, Bees uncited
    assert records[0].scores["citation_recall"] == pytest.approx(2 / 5)
    assert records[0].scores["citation_precision"] == pytest.approx(1 / 4)  # [1][2]: 0/2, [3]: 0/1, [2]: 1/1
    assert records[0].meta["citation"]["nontext_citations"] == 2  # [1][2] and [2]; [2][9] is never judged
    agg = m.aggregate(records)
    assert agg["citation_nontext_citations"].value == 3 and agg["citation_nontext_citations"].n == 2


async def test_role_without_image_media_is_refused():
    from avhb.errors import UserError
    from avhb.score.judges import JudgeRole

    judges = ScriptedJudges({"entailment": lambda f: "yes"})
    judges.roles = {"entailment": JudgeRole("entailment", "{{premise}}")}  # declares no media
    ctx = ScoreContext(judges, "t")
    doc = {"context": ["u1 text", {"type": "image", "image": "img/2.png"}]}
    record = SampleRecord(id="0", doc=doc, response="Cats purr [1].")
    assert (await Citation().score(record, ctx))["citation_recall"] == 1.0  # text only: fine
    record = SampleRecord(id="1", doc=doc, response="Cats purr [2].")
    with pytest.raises(UserError, match=r"media: \[image\]"):
        await Citation().score(record, ctx)
    assert judges.count() == 1


async def test_mmlongcite_hand_computed_case():
    """Units [1] text "A", [2] an image showing B, [3] unrelated.  Answer:
    s1 "A [1][3]", s2 "B" (uncited), s3 "A [7]" (out of range).  The judge:
    {1,3} and {1} entail A, {3} does not.  s1 recall 1, [1] necessary, [3]
    not; CR = 1/3, CP = 1/2, F1 = 2*(1/2)*(1/3)/(1/2+1/3) = 0.4."""
    def judge(fields, media):
        seen = set(re.findall(r"\[(\d+)\]", fields["premise"]))
        if fields["hypothesis"] == "A.":
            return "yes" if "1" in seen else "no"
        return "yes" if "2" in seen and media else "no"

    judges = ScriptedJudges({"entailment": judge})
    ctx = ScoreContext(judges, "t")
    doc = {"context": [{"type": "text", "text": "A"}, {"type": "image", "image": "b.png"},
                       {"type": "text", "text": "unrelated"}]}
    record = SampleRecord(id="0", doc=doc, response="A [1][3].\nB.\nA [7].")
    scores = await Citation().score(record, ctx)
    assert scores["citation_recall"] == pytest.approx(1 / 3)
    assert scores["citation_precision"] == pytest.approx(1 / 2)
    assert scores["citation_f1"] == pytest.approx(0.4)
    details = record.meta["citation"]["statements"]
    assert [d["recall"] for d in details] == [1.0, 0.0, 0.0] and details[0]["counted"] == 1
    assert record.meta["citation"]["uncited"] == 1 and record.meta["citation"]["out_of_range"] == 1
    # the statement "B [2]" is judged on the image of unit 2
    judges2 = ScriptedJudges({"entailment": judge})
    record = SampleRecord(id="1", doc=doc, response="B [2].")
    scores = await Citation().score(record, ScoreContext(judges2, "t"))
    assert scores["citation_recall"] == 1.0 and scores["citation_precision"] == 1.0
    assert [p.path for p in judges2.media[0]] == ["b.png"] and judges2.media[0][0].label == "[2]"


async def test_two_units_each_sufficient_alone_loo_zero_of_two():
    judges = ScriptedJudges({"entailment": entail_judge})
    res = await score_citations(parse_statements("Birds sing [1][2].", 4), UNITS, make_entails(judges))
    assert (res.recall, res.n_counted, res.n_citations, res.precision) == (1.0, 0, 2, 0.0)


def test_citation_markers_edge_cases():
    assert citation_indices("see [a] and [b2]") == []
    assert parse_statements("Cats purr [a].", 4)[0].citations == []
    assert citation_indices("x [2-4]") == [2, 3, 4]
    assert parse_statements("Cats purr [2-4].", 4)[0].citations == [2, 3, 4]


def test_f1_of_means_aggregate():
    m = Citation()
    records = [SampleRecord(id="a", doc={}, scores={"citation_recall": 1.0, "citation_precision": 0.5,
                                                    "citation_f1": 2 / 3}),
               SampleRecord(id="b", doc={}, scores={"citation_recall": 0.0, "citation_precision": 0.0,
                                                    "citation_f1": 0.0}),
               SampleRecord(id="c", doc={}, scores={"citation_recall": None, "citation_precision": None,
                                                    "citation_f1": None}),
               SampleRecord(id="d", doc={}, error="media")]
    agg = m.aggregate(records)
    # the failed sample (d) is excluded (docs/errors.md); c has no scores: means over a and b
    assert agg["citation_f1"].value == pytest.approx((2 / 3) / 2)
    p, r = 0.25, 0.5
    assert agg["citation_f1_of_means"].value == pytest.approx(2 * p * r / (p + r))
    assert agg["citation_f1_of_means"].n == 2 and agg["citation_f1_of_means"].stderr is not None
