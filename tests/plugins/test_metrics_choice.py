"""Choice parsing, exact match, choice accuracy and the extraction filters."""
import pytest

from avhb.errors import SampleError, UserError
from avhb.score.metric import SampleRecord, ScoreContext
from avhb.plugins.metrics.choice import (ChoiceAccuracy, ExactMatch, exact_match, inline_options, options_from,
                                         parse_choice, parse_choice_detail, parse_choice_mmmu, resolve_choice)
from avhb.plugins.metrics.filters import ChoiceLetter, FinalAnswer, Lowercase, Regex, Strip, final_answer
from tests.scripted_judges import UNPARSED, ScriptedJudges

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
    # the hedges the default parser refuses: MMMU commits to the last letter, or to the article
    ("A or B", "B"), ("A and B", "B"), ("A B C D", "D"), ("I think it's (B), not (A)", "A"),
    ("A square that is blue.", "A"),
    ("", None),
    (None, None),
])
def test_parse_choice_mmmu(reply, expected):
    assert parse_choice_mmmu(reply, OPTS) == expected


def test_parse_choice_mmmu_tie_goes_to_earlier_option():
    # "red" and "red wine" both start at the same position
    assert parse_choice_mmmu("I would definitely pick the red wine here", {"A": "red", "B": "red wine"}) == "A"


@pytest.mark.parametrize("reply,candidates", [
    # hedged or several candidates: no letter (the judge decides, or the reply is unparsed)
    ("A or B", ["A", "B"]),
    ("A and B", ["A", "B"]),
    ("A B C D", ["A", "B", "C", "D"]),
    ("I think it's (B), not (A)", ["B", "A"]),
    ("The answer is (A), not (C)", ["A", "C"]),
    ("(C) is wrong, so (A)", ["C", "A"]),
    ("I think B is right but C", ["B", "C"]),
    ("not the red car at all, it is the blue car after all", ["A", "B"]),  # two option texts
    # "A" as the English article, followed by words that are not option A's text: no candidate
    ("A square that is blue.", []),
    ("b", []),  # lower case is not a letter mention
    ("the blue car", []),  # <= 5 tokens: no content matching (as MMMU)
    ("None of these options look right to me at all", []),
    ("", []),
    (None, []),
])
def test_parse_choice_refuses_hedges(reply, candidates):
    got = parse_choice_detail(reply, OPTS)
    assert got.letter is None and got.candidates == candidates
    assert got.ambiguous == (len(candidates) > 1)
    assert parse_choice(reply, OPTS) is None


@pytest.mark.parametrize("reply,expected", [
    ("(B)", "B"), ("Answer: B", "B"), ("**B**", "B"), ("[B]", "B"), ("答案是B", "B"), ("B. blue", "B"),
    ("B", "B"), ("B.", "B"), ("（Ｂ）", "B"),  # full width
    ("The answer is (B).", "B"), ("Option D, the yellow taxi", "D"),
    ("A red car", "A"),  # "A" followed by option A's own text
    ("A is correct", "A"), ("A seems right", "A"),  # "A" followed by a verb: the option
    ("A cat sits there. The answer is D.", "D"),  # the article does not count, D does
    ("I'm sure it's C", "C"),  # the pronoun is no candidate (nor is it an option here)
    ("I believe that the correct one is clearly the blue car", "B"),  # one option text, > 5 tokens
])
def test_parse_choice_reads_unambiguous_letters(reply, expected):
    assert parse_choice(reply, OPTS) == expected


def test_parse_choice_option_text_inside_a_longer_one_does_not_count():
    opts = {"A": "red", "B": "red wine"}
    assert parse_choice("I would definitely pick the red wine here", opts) == "B"
    assert parse_choice_detail("I would definitely pick red, not red wine", opts).candidates == ["A", "B"]
    # the pronoun "I" is not option I; "I is" names it
    nine = {chr(ord("A") + i): f"opt {i}" for i in range(9)}
    assert parse_choice("I think the answer is (C)", nine) == "C"
    assert parse_choice_detail("I is right, or C", nine).candidates == ["I", "C"]  # in order of mention


def test_options_forms():
    assert options_from(["x", "y"]) == {"A": "x", "B": "y"}
    assert options_from('{"A": "x", "B": "y"}') == {"A": "x", "B": "y"}
    assert options_from('["x", "y"]') == {"A": "x", "B": "y"}
    assert options_from("") == {}
    q = "Which grew fastest?\n(A). Retail\n(B). Cloud\n(C). Devices\n(D). Services\nChoose the letter."
    assert inline_options(q) == {"A": "Retail", "B": "Cloud", "C": "Devices", "D": "Services"}
    assert inline_options("Q?\nA. one\nC. three") == {}  # not consecutive from A
    assert inline_options("A cat sat.") == {}


def test_exact_match_is_lm_evals():
    """lm-eval's exact_match: case-sensitive by default, white space kept,
    removals in lm-eval's order (patterns, case, punctuation, digits)."""
    assert exact_match("Paris", "Paris") == 1.0
    assert exact_match("Paris", "paris") == 0.0  # case-sensitive unless asked
    assert exact_match("Paris", "paris", ignore_case=True) == 1.0
    assert exact_match(" Paris", "Paris", ignore_case=True) == 0.0  # white space is kept (a filter strips it)
    assert exact_match("paris!", "Paris", ignore_case=True, ignore_punctuation=True) == 1.0
    assert exact_match("paris!", "Paris", ignore_case=True) == 0.0
    assert exact_match("Lyon", ["Paris", "lyon"], ignore_case=True) == 1.0
    assert exact_match("Lyon", ["Paris", "lyon"]) == 0.0
    assert exact_match(None, "x") == 0.0 and exact_match("x", None) == 0.0
    assert exact_match("", "") == 1.0
    assert exact_match(4, "4") == 1.0  # compared as text, as lm-eval casts the target to the answer's type
    # regexes_to_ignore run first, on both sides, before case folding: "The " only goes when it is capitalised
    assert exact_match("The answer: 42", "answer: 42", regexes_to_ignore=["The ", r"\.$"]) == 1.0
    assert exact_match("the answer: 42.", "answer: 42", regexes_to_ignore=["The ", r"\.$"], ignore_case=True) == 0.0
    assert exact_match("42 apples", "7 apples", ignore_numbers=True) == 1.0
    # punctuation removal is ASCII only, as string.punctuation
    assert exact_match("«yes»", "yes", ignore_punctuation=True) == 0.0


def test_exact_match_metric_refuses_options_it_does_not_take():
    with pytest.raises(UserError, match=r"unknown option 'ignore_spaces'; did you mean 'ignore_case'\? \(its options: "
                                        r"ignore_case, ignore_numbers, ignore_punctuation, regexes_to_ignore\)"):
        ExactMatch(ignore_spaces=True)
    with pytest.raises(ValueError, match="regexes_to_ignore must be a list"):
        ExactMatch(regexes_to_ignore="x")


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


async def test_hedged_reply_goes_to_the_judge_or_is_unparsed():
    judges = ScriptedJudges({"answer_matcher": ["B"]})
    ctx = ScoreContext(judges, "t")
    r = await resolve_choice("A or B", OPTS, "q", ctx)
    assert (r.letter, r.by, r.ambiguous, judges.count()) == ("B", "judge", ["A", "B"], 1)
    assert r.as_meta()["ambiguous"] == ["A", "B"]
    r = await resolve_choice("A or B", OPTS, "q", ctx, use_judge=False)  # no judge bound: unparsed
    assert (r.letter, r.by, r.ambiguous) == (None, None, ["A", "B"])
    r = await resolve_choice("A or B", OPTS, "q", ctx, use_judge=False, parser="mmmu")  # MMMU's rule commits
    assert (r.letter, r.by) == ("B", "rules")
    assert judges.count() == 1
    with pytest.raises(ValueError, match="single, mmmu"):
        ChoiceAccuracy(parser="first")
    with pytest.raises(ValueError):
        ChoiceLetter(parser="guess")


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
    m = ExactMatch(ignore_punctuation=True, ignore_case=True)
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
    with pytest.raises(ValueError, match="group need 'pattern'"):
        Regex(group=1)  # avhb's options without avhb's pattern
    with pytest.raises(ValueError, match="not both"):
        Regex(pattern="x", regex_pattern="y")
    with pytest.raises(ValueError, match="unknown option"):
        Regex(patern="x")


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
