"""plugins/metrics/citation.py: the documented rules that the hand-computed
cases in test_metrics_citation.py do not reach (found by mutation testing,
benchmarks/mutation.py): range limits, marker stripping, statement
splitting, in-range bounds, ALCE's single-citation rule, the entailment
labels, unit kinds and the premise's parts, and the metric's counts."""
from __future__ import annotations

import pytest

from avhb.model.messages import AudioPart, ImagePart, VideoPart
from avhb.plugins.metrics.citation import (Citation, build_premise, citation_indices, f1_of_means, f1_score,
                                           join_units, parse_statements, parse_yes_no, score_citations,
                                           split_statements, strip_citations, unit_kind, unit_text)
from tests.scripted_judges import ScriptedJudges
from avhb.score.metric import SampleRecord, ScoreContext


def test_citation_ranges_expand_up_to_a_hundred_and_otherwise_keep_their_ends():
    assert citation_indices("[1-101]") == list(range(1, 102))  # a span of exactly 100
    assert citation_indices("[1-102]") == [1, 102]
    assert citation_indices("[5-3]") == [5, 3]  # reversed: its two ends
    assert citation_indices("[4-3]") == [4, 3]
    assert citation_indices("[4-4]") == [4]
    assert citation_indices("[ 2 , 4\u20135 ]") == [2, 4, 5]


def test_strip_citations_removes_markers_cite_tags_and_the_space_before_punctuation():
    assert strip_citations("Cats purr [1] .") == "Cats purr."
    assert strip_citations("<cite>[1][2]</cite> A  is\tB [3] ; and C [4]!") == "A is B; and C!"
    assert strip_citations("猫叫 [1] 。") == "猫叫。"


def test_split_statements_rules():
    # empty tagged statements are dropped; text outside the tags is ignored
    assert split_statements("x <statement> </statement><statement>A [1].</statement> y") == ["A [1]."]
    # list markers, full-width punctuation, a fragment of citations only joins the sentence before it
    assert split_statements("1) One [1]. Two!\n\u2022 猫叫。 狗吠？[2]\n* [3]") == [
        "One [1].", "Two!", "猫叫。", "狗吠？[2] [3]"]
    assert split_statements("猫叫。狗吠。") == ["猫叫。狗吠。"]  # a full stop splits only before a space or the end
    # a citations-only line with nothing before it stays its own fragment, then is dropped (no words)
    assert split_statements("[1].\nCats purr.") == ["Cats purr."]
    assert split_statements("   \n\n") == []
    assert split_statements("A [1].\n\nB [2].\n \nC.") == ["A [1].", "B [2].", "C."]  # blank lines between


def test_in_range_bounds_and_the_number_of_citations_kept():
    assert not parse_statements("A [4].", 4)[0].out_of_range  # the last unit is in range
    assert parse_statements("A [5].", 4)[0].out_of_range
    assert parse_statements("A [0][1].", 4)[0].out_of_range  # indices are 1-based
    assert not parse_statements("A [1][900].", None)[0].out_of_range  # no unit count: no upper bound
    st = parse_statements("A [3][1][2][4].", 4, max_citations=2)[0]
    assert st.citations == [3, 1] and st.raw_citations == [3, 1, 2, 4]
    dropped = parse_statements("A [0][2][2][9].", 4, out_of_range="drop")[0]
    assert dropped.citations == [2] and not dropped.out_of_range
    assert parse_statements("A [1]. B [2]. C [3].", 4, max_statements=None)[2].citations == [3]
    with pytest.raises(ValueError, match="out_of_range"):
        parse_statements("A [1].", 4, out_of_range="keep")


async def _score(answer, rules, precision="loo", n_units=3):
    judges = ScriptedJudges({"entailment": lambda f: "yes" if rules(f["premise"], f["hypothesis"]) else "no"})

    async def entails(premise, hypothesis):
        v = await judges.ask("entailment", {"premise": premise, "hypothesis": hypothesis})
        return parse_yes_no(v.value) if v.ok else None

    units = [f"u{i}" for i in range(1, n_units + 1)]
    return await score_citations(parse_statements(answer, n_units), units, entails, precision), judges


async def test_alce_single_citation_counts_iff_it_entails():
    res, _ = await _score("A [2].", lambda p, h: "u2" in p, "alce")
    assert (res.n_counted, res.n_citations, res.precision) == (1, 1, 1.0)
    res, _ = await _score("A [2].", lambda p, h: False, "alce")
    assert (res.n_counted, res.n_citations, res.recall) == (0, 1, 0.0)
    # a repeated single index (dedup off) is still one unit: counts without a leave-one-out query
    judges = ScriptedJudges({"entailment": lambda f: "yes" if "u2" in f["premise"] else "no"})

    async def entails(premise, hypothesis):
        return parse_yes_no((await judges.ask("entailment", {"premise": premise, "hypothesis": hypothesis})).value)

    st = parse_statements("A [2][2].", 3, dedup=False)
    res = await score_citations(st, ["u1", "u2", "u3"], entails, "alce")
    assert (res.n_counted, res.n_citations) == (2, 2) and judges.count() == 1


async def test_alce_counts_a_citation_that_is_needed_though_not_sufficient_alone():
    # {1, 2} entails, neither alone; without either it fails: both necessary under both definitions
    both = lambda p, h: "u1" in p and "u2" in p  # noqa: E731
    for precision in ("loo", "alce"):
        res, _ = await _score("A [1][2].", both, precision)
        assert (res.n_counted, res.n_citations) == (2, 2)
    # {1, 2, 3}: 1 suffices alone; 2 and 3 add nothing -> ALCE counts 1 only, like LOO
    one = lambda p, h: "u1" in p  # noqa: E731
    res, judges = await _score("A [1][2][3].", one, "alce")
    assert (res.n_counted, res.n_citations) == (1, 3)
    # ALCE asks the leave-one-out query only for citations that do not entail alone
    premises = [c[1]["premise"] for c in judges.calls]
    assert "u1\n\nu2" in premises and "u1\n\nu3" in premises and "u2\n\nu3" not in premises


async def test_statements_built_directly_are_in_range_by_default_and_counts_of_unscored_answers():
    from avhb.plugins.metrics.citation import Statement

    async def yes(premise, hypothesis):
        return True

    res = await score_citations([Statement("A.", [1])], ["u1"], yes)
    assert (res.recall, res.precision, res.n_citations, res.n_counted) == (1.0, 1.0, 1, 1)
    empty = await score_citations([], ["u1"], yes, empty_answer="zero")
    assert (empty.n_statements, empty.n_citations, empty.n_counted) == (0, 0, 0)

    async def fails(premise, hypothesis):
        return None

    failed = await score_citations([Statement("A.", [1])], ["u1"], fails)
    assert failed.judge_failed and (failed.n_statements, failed.n_citations, failed.n_counted) == (1, 0, 0)


async def test_precision_must_be_loo_or_alce():
    with pytest.raises(ValueError, match="precision"):
        await score_citations([], [], None, precision="both")


def test_entailment_labels():
    for yes in ("yes", "TRUE", "1", "entailed", " Entailment "):
        assert parse_yes_no(yes) is True
    for no in ("No", "false", "0", "not entailed", "not_entailment", False):
        assert parse_yes_no(no) is False
    for other in ("", "partially", "2", None):
        assert parse_yes_no(other) is None
    assert parse_yes_no(1) is True and parse_yes_no(0) is False  # the judge value may be a number


def test_unit_kind_and_text():
    assert unit_kind("plain") == "text" and unit_text("plain") == "plain"
    assert unit_kind({"type": "image", "image": "a.png"}) == "image"
    assert unit_kind({"type": "image", "image": None, "text": "caption"}) == "text"  # the named kind is absent
    assert unit_kind({"video": "v.mp4"}) == "video" and unit_kind({"audio": "a.wav", "image": None}) == "audio"
    assert unit_kind({"image": "a.png", "video": "v.mp4"}) == "image"  # the first of image, video, audio
    assert unit_kind({"type": "table", "text": None}) == "text" and unit_kind(7) == "text"
    assert unit_kind({"type": "table", "table": "t.csv", "text": "rows"}) == "text"  # not a media kind
    assert unit_kind({"type": "image", "image": "a.png", "text": "caption"}) == "image"  # the named kind first
    assert unit_text({"type": "text", "text": 12}) == "12"
    assert unit_text({"type": "video", "video": "v.mp4"}) == "<video: v.mp4>"
    assert unit_text({"note": "x"}) == "{'note': 'x'}" and unit_text(3) == "3"


def test_premise_parts_for_each_media_kind_in_index_order():
    units = [{"type": "audio", "audio": "a.wav"}, "text two", {"video": "v.mp4"}, {"image": "i.png"},
             {"type": "image", "image": "j.png"}]
    p = build_premise(units, (5, 1, 3, 2, 4), media_path=lambda s: "/root/" + s)
    assert p.text == ("[1] (audio [1], attached)\n\n[2] text two\n\n[3] (video [3], attached)\n\n"
                      "[4] (image [4], attached)\n\n[5] (image [5], attached)")
    assert [type(m) for m in p.media] == [AudioPart, VideoPart, ImagePart, ImagePart]
    assert [m.path for m in p.media] == ["/root/a.wav", "/root/v.mp4", "/root/i.png", "/root/j.png"]
    assert p.media[2].label == "[4]" and p.kinds == ("audio", "video", "image")
    assert build_premise(["t1", "t2"], (2,)).media == [] and build_premise(["t1", "t2"], (2,)).kinds == ()
    assert join_units(["a", "b", "c"], (3, 1)) == "a\n\nc"


def test_f1_helpers():
    assert f1_score(0.0, 0.0) == 0.0 and f1_score(0.5, 1.0) == pytest.approx(2 / 3)
    assert f1_of_means([]) is None
    assert f1_of_means([(1.0, 0.5), (0.0, 0.5)]) == pytest.approx(2 * 0.5 * 0.5 / 1.0)


async def test_metric_options_units_extracted_and_counts():
    judges = ScriptedJudges({"verify": lambda f: "yes" if "alpha" in f["premise"] else "no"})
    ctx = ScoreContext(judges, "t")
    m = Citation(role="verify", units="doc.passages", max_citations=1, max_statements=2)
    assert m.needs_judges == ("verify",)
    doc = {"passages": ["alpha", "beta"], "context": ["ignored"]}
    # the extracted answer is scored, not the raw response; the third statement is past max_statements
    r = SampleRecord(id="0", doc=doc, response="Nothing [2].", extracted="A [1][2]. B [2]. C [1].")
    scores = await m.score(r, ctx)
    assert scores == {"citation_recall": 0.5, "citation_precision": 0.5, "citation_f1": 0.5}
    meta = r.meta["citation"]
    assert (meta["n_statements"], meta["n_citations"], meta["n_counted"], meta["judge_calls"]) == (2, 2, 1, 2)
    assert [s["citations"] for s in meta["statements"]] == [[1], [2]]
    # citation_units in the sample's meta come before doc.context when no units option is set
    r2 = SampleRecord(id="1", doc={"context": ["beta"]}, response="A [1].", meta={"citation_units": ["alpha"]})
    assert (await Citation(role="verify").score(r2, ctx))["citation_recall"] == 1.0
    # a statement with in-range citations judged on a non-text unit counts; one out of range does not
    r3 = SampleRecord(id="2", doc={"context": ["alpha", {"type": "image", "image": "x.png"}]},
                      response="A [2]. B [1]. C [2][5].")
    judges.roles = {}
    await Citation(role="verify").score(r3, ctx)
    assert r3.meta["citation"]["nontext_citations"] == 1 and r3.meta["citation"]["out_of_range"] == 1


async def test_metric_judge_failures_are_counted_and_excluded():
    judges = ScriptedJudges({"entailment": ["yes", None, "no"]})
    ctx = ScoreContext(judges, "t")
    m = Citation()
    bad = SampleRecord(id="0", doc={"context": ["u1", "u2"]}, response="A [1][2].")
    assert await m.score(bad, ctx) == {"citation_recall": None, "citation_precision": None, "citation_f1": None}
    assert bad.meta["judge_failures"] == ["citation"] and bad.meta["citation"]["judge_failed"]
    ok = SampleRecord(id="1", doc={}, response="", scores={"citation_recall": 0.0, "citation_precision": 0.0,
                                                         "citation_f1": 0.0},
                      meta={"citation": {"n_statements": 0}})
    agg = m.aggregate([bad, ok])
    assert agg["citation_judge_failures"].value == 1 and agg["citation_judge_failures"].n == 2
    assert agg["citation_no_statements"].value == 1
    assert agg["citation_recall"].n == 1 and agg["citation_f1_of_means"].n == 1
    # a usable sample the metric left no notes on: no statements, nothing uncited, out of range or non-text
    bare = SampleRecord(id="2", doc={}, scores={"citation_recall": 1.0, "citation_precision": 1.0, "citation_f1": 1.0})
    agg = m.aggregate([bare])
    assert [agg[f"citation_{k}"].value for k in ("no_statements", "uncited_statements", "out_of_range_statements",
                                                  "nontext_citations", "judge_failures")] == [1, 0, 0, 0, 0]


async def test_metric_keeps_three_citations_by_default():
    judges = ScriptedJudges({"entailment": lambda f: "yes"})
    r = SampleRecord(id="0", doc={"context": ["u1", "u2", "u3", "u4"]}, response="A [1][2][3][4].")
    await Citation().score(r, ScoreContext(judges, "t"))
    assert r.meta["citation"]["statements"][0]["citations"] == [1, 2, 3]
    dup = SampleRecord(id="1", doc={"context": ["u1", "u2"]}, response="A [1][1][2].")
    await Citation().score(dup, ScoreContext(judges, "t"))
    assert dup.meta["citation"]["statements"][0]["citations"] == [1, 2]  # duplicates collapsed by default


def test_f1_of_means_takes_only_samples_with_both_values():
    recs = [SampleRecord(id="a", doc={}, scores={"citation_recall": 1.0, "citation_precision": 0.5, "citation_f1": 0.6}),
            SampleRecord(id="b", doc={}, scores={"citation_recall": 0.5, "citation_precision": None, "citation_f1": None})]
    agg = Citation().aggregate(recs)
    assert agg["citation_f1_of_means"].n == 1 and agg["citation_f1_of_means"].value == pytest.approx(2 / 3)
