"""Choice parsing, exact match, choice accuracy and the extraction filters."""
import pytest

from avhb.errors import SampleError
from avhb.score.metric import SampleRecord, ScoreContext
from avhb.plugins.metrics.choice import (ChoiceAccuracy, ExactMatch, exact_match, inline_options,
                                         options_from, parse_choice, resolve_choice)
from avhb.plugins.metrics.filters import ChoiceLetter, FinalAnswer, Lowercase, Regex, Strip, final_answer
from avhb.plugins.metrics.testing import UNPARSED, ScriptedJudges

OPTS = {"A": "red car", "B": "blue car", "C": "green bus", "D": "yellow taxi"}


@pytest.mark.parametrize("reply,expected", [
    ("(B)", "B"),
    ("B", "B"),
    ("B.", "B"),
    ("The answer is (A), not (C)", "C"),  # last bracketed occurrence wins
    ("(C) is wrong, so (A)", "A"),
    ("I think B is right but C", "C"),  # bare letters, last wins
    ("(D) and then B", "D"),  # bracket form found first: bare letters not looked at
    ("b", None),  # case-sensitive like upstream
    ("I believe that the correct one is clearly the blue car", "B"),  # > 5 tokens: option text
    ("the blue car", None),  # <= 5 tokens: no content matching
    ("not the red car at all, it is the blue car after all", "B"),
    ("None of these options look right to me at all", None),  # nothing: no random guess
    ("", None),
    (None, None),
])
def test_parse_choice(reply, expected):
    assert parse_choice(reply, OPTS) == expected


def test_parse_choice_tie_goes_to_earlier_option():
    # "red" and "red wine" both start at the same position
    assert parse_choice("I would definitely pick the red wine here", {"A": "red", "B": "red wine"}) == "A"


def test_options_forms():
    assert options_from(["x", "y"]) == {"A": "x", "B": "y"}
    assert options_from('{"A": "x", "B": "y"}') == {"A": "x", "B": "y"}
    assert options_from('["x", "y"]') == {"A": "x", "B": "y"}
    assert options_from("") == {}
    q = "Which grew fastest?\n(A). Retail\n(B). Cloud\n(C). Devices\n(D). Services\nChoose the letter."
    assert inline_options(q) == {"A": "Retail", "B": "Cloud", "C": "Devices", "D": "Services"}
    assert inline_options("Q?\nA. one\nC. three") == {}  # not consecutive from A
    assert inline_options("A cat sat.") == {}


def test_exact_match():
    assert exact_match("  Paris ", "paris") == 1.0
    assert exact_match("Paris", "paris", ignore_case=False) == 0.0
    assert exact_match("paris!", "Paris", ignore_punctuation=True) == 1.0
    assert exact_match("paris!", "Paris") == 0.0
    assert exact_match("Lyon", ["Paris", "lyon"]) == 1.0
    assert exact_match(None, "x") == 0.0
    assert exact_match("", "") == 1.0


async def test_resolve_choice_uses_judge_only_when_rules_fail():
    judges = ScriptedJudges({"answer_matcher": ["b", "Z", UNPARSED]})
    ctx = ScoreContext(judges, "t")
    r = await resolve_choice("(A)", OPTS, "q", ctx)
    assert (r.letter, r.by, judges.count()) == ("A", "rules", 0)
    r = await resolve_choice("it is the bluish one", OPTS, "q?", ctx)
    assert (r.letter, r.by, r.judge_failed) == ("B", "judge", False)
    assert judges.calls[0] == ("answer_matcher", {"question": "q?", "options": "A. red car\nB. blue car\nC. green bus\nD. yellow taxi",
                                                  "response": "it is the bluish one"})
    r = await resolve_choice("no idea", OPTS, "q", ctx)  # judge says Z (none)
    assert (r.letter, r.judge_failed) == (None, False)
    r = await resolve_choice("no idea", OPTS, "q", ctx)  # judge reply never parsed
    assert (r.letter, r.judge_failed) == (None, True)
    r = await resolve_choice("   ", OPTS, "q", ctx)  # blank: judge not asked
    assert r.letter is None and judges.count() == 3
    r = await resolve_choice("no idea", OPTS, "q", ctx, use_judge=False)
    assert r.letter is None and judges.count() == 3


def rec(i, response, target="B", doc=None, error=None):
    return SampleRecord(id=str(i), doc=doc if doc is not None else {"question": "Which?", "options": list(OPTS.values())},
                        target=target, response=response, error=error)


async def test_choice_accuracy_metric():
    judges = ScriptedJudges({"answer_matcher": ["B", None, "Z"]})
    ctx = ScoreContext(judges, "t")
    m = ChoiceAccuracy()
    records = [rec(0, "(B)"), rec(1, "(A)"), rec(2, "something bluish"), rec(3, "hmm"), rec(4, "dunno"),
               rec(5, None, error="timeout")]
    for r in records[:5]:
        r.scores.update(await m.score(r, ctx))
    assert [r.scores["choice_accuracy"] for r in records[:5]] == [1.0, 0.0, 1.0, 0.0, 0.0]
    assert [bool(r.meta.get("unparsed")) for r in records[:5]] == [False, False, False, True, True]
    assert records[2].meta["choice"] == {"letter": "B", "by": "judge", "judge_failed": False}
    assert records[3].meta["choice"]["judge_failed"] is True
    agg = m.aggregate(records)
    # the failed sample is excluded (docs/errors.md), not a wrong answer
    assert agg["choice_accuracy"].value == pytest.approx(2 / 5) and agg["choice_accuracy"].n == 5
    assert agg["choice_accuracy_unparsed"].value == 2 and agg["choice_accuracy_unparsed"].n == 5
    assert agg["choice_accuracy_judge_failures"].value == 1


async def test_choice_accuracy_targets_and_inline_options():
    ctx = ScoreContext(ScriptedJudges({}), "t")
    m = ChoiceAccuracy()
    doc = {"question": [{"type": "text", "text": "Pick\n(A). Retail\n(B). Cloud"}]}
    r = rec(0, "The answer is (B).", target="b", doc=doc)
    assert (await m.score(r, ctx))["choice_accuracy"] == 1.0
    r = rec(1, "(A)", target="Retail", doc={"question": "q", "options": '{"A": "Retail", "B": "Cloud"}'})
    assert (await m.score(r, ctx))["choice_accuracy"] == 1.0
    with pytest.raises(SampleError):
        await m.score(rec(2, "(A)", target="E"), ctx)
    with pytest.raises(SampleError):
        await m.score(rec(3, "(A)", doc={"question": "no options"}), ctx)


async def test_exact_match_metric_uses_extracted():
    m = ExactMatch(ignore_punctuation=True)
    r = SampleRecord(id="1", doc={}, target="Violin", response="Final Answer: violin.", extracted="violin.")
    assert (await m.score(r, ScoreContext(None, "t")))["exact_match"] == 1.0


async def test_simple_filters():
    r = SampleRecord(id="1", doc={})
    ctx = ScoreContext(None, "t")
    assert await Strip().apply("  x \n", r, ctx) == "x"
    assert await Lowercase().apply("AbC", r, ctx) == "abc"
    assert await Strip().apply(None, r, ctx) is None
    f = Regex(pattern=r"answer is (\w+)")
    assert await f.apply("answer is A, no, answer is B", r, ctx) == "A"
    assert await Regex(pattern=r"answer is (\w+)", select="last").apply("answer is A, no, answer is B", r, ctx) == "B"
    assert await Regex(pattern=r"\d+").apply("take 42 now", r, ctx) == "42"  # no group: whole match
    assert await Regex(pattern="ANSWER (x)", ignore_case=True).apply("answer x", r, ctx) == "x"
    assert await f.apply("nothing here", r, ctx) is None and r.meta["filter_misses"] == ["regex"]
    with pytest.raises(ValueError):
        Regex()


async def test_final_answer_filter():
    gold = ("1. **Visual Cue:**\n   - **Timeframe:** 00:00-00:09\n2. **Audio Cue:** solo strings\n\n"
            "**Final Answer:**\n- violin")
    assert final_answer(gold) == "violin"
    assert final_answer("final answer - a trophy") == "a trophy"
    assert final_answer("FINAL ANSWER:42") == "42"
    assert final_answer("Final answer: x. On reflection, Final Answer: y") == "y"
    assert final_answer("Final answer: x. On reflection, Final Answer: y", "first") == "x. On reflection, Final Answer: y"
    assert final_answer("no marker") is None
    r = SampleRecord(id="1", doc={})
    ctx = ScoreContext(None, "t")
    assert await FinalAnswer().apply(" just text ", r, ctx) == "just text" and r.meta["final_answer_missing"]
    assert await FinalAnswer(fallback="none").apply("just text", r, ctx) is None


async def test_choice_letter_filter_then_accuracy_asks_judge_once():
    judges = ScriptedJudges({"answer_matcher": ["C", UNPARSED]})
    ctx = ScoreContext(judges, "t")
    flt, m = ChoiceLetter(), ChoiceAccuracy()
    r = rec(0, "the green one", target="C")
    r.extracted = await flt.apply(r.response, r, ctx)
    assert r.extracted == "C"
    assert (await m.score(r, ctx))["choice_accuracy"] == 1.0
    assert judges.count() == 1
    r2 = rec(1, "hmm", target="C")
    r2.extracted = await flt.apply(r2.response, r2, ctx)
    assert r2.extracted is None and r2.meta["unparsed"]
    assert (await m.score(r2, ctx))["choice_accuracy"] == 0.0
    assert judges.count() == 2
    assert m.aggregate([r, r2])["choice_accuracy_judge_failures"].value == 1


def test_needs_judges_and_registry():
    from avhb.plugins.metrics.registry import FILTERS, METRICS
    from avhb.registry import import_path
    from avhb.score.metric import Filter, Metric

    assert ChoiceAccuracy().needs_judges == ("answer_matcher",)
    assert ChoiceAccuracy(use_judge=False).needs_judges == ()
    for name, path in METRICS.items():
        cls = import_path(path)
        assert issubclass(cls, Metric) and cls.name == name
    for name, path in FILTERS.items():
        cls = import_path(path)
        assert issubclass(cls, Filter) and cls.name == name
