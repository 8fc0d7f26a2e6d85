"""lm-eval's built-in filters and aggregations, pinned on hand-computed
cases (issue 24, item 3)."""
from __future__ import annotations

import math

import pytest

from avhb.errors import UserError
from avhb.plugins.metrics.filters import Custom, MajorityVote, Map, Regex, RemoveWhitespace, TakeFirst, TakeFirstK, \
    Uppercase
from avhb.score.aggregations import Aggregation
from avhb.score.metric import SampleRecord, ScoreContext

CTX = ScoreContext(None, "t")


def rec() -> SampleRecord:
    return SampleRecord(id="1", doc={"q": "x"})


async def test_lm_eval_regex_defaults_and_options():
    r = rec()
    gsm = Regex()  # lm-eval's default pattern: the number after "####"
    assert await gsm.apply("so 3 + 4 = 7\n#### 7", r, CTX) == "7"
    assert await gsm.apply("#### -1,234.5 apples", r, CTX) == "-1,234.5"
    assert await gsm.apply("no marker 7", r, CTX) == "[invalid]" and r.meta["filter_misses"] == ["regex"]
    last = Regex(regex_pattern=r"(-?[$0-9.,]{2,})|(-?[0-9]+)", group_select=-1)
    # two groups: findall gives tuples; the last match's first non-empty group, stripped
    assert await last.apply("first 12, then 7, finally 9", r, CTX) == "9"
    assert await last.apply("costs $4.50 now", r, CTX) == "$4.50"
    assert await Regex(regex_pattern=r"answer: (\w+)", fallback="none").apply("nothing", r, CTX) == "none"
    assert await Regex(regex_pattern=r"is ( \w+ )").apply("it is  B  ok", r, CTX) == "B"  # stripped
    assert await Regex(regex_pattern=r"\d").apply(None, r, CTX) is None  # a failed sample's None passes through
    with pytest.raises(IndexError):  # a group_select past the matches fails the sample (lm-eval fails too)
        await Regex(regex_pattern=r"\d", group_select=3).apply("1 2", r, CTX)


async def test_selections_over_repeats():
    r = rec()
    answers = ["b", "a", "a", "b", "c"]
    assert await TakeFirst().apply_all(answers, r, CTX) == "b"
    assert await TakeFirstK(k=2).apply_all(answers, r, CTX) == ["b", "a"]
    assert await MajorityVote().apply_all(answers, r, CTX) == ["b"]  # a tie (2 x b, 2 x a): the one seen first
    assert await MajorityVote().apply_all(["x", "y", "y"], r, CTX) == ["y"]
    with pytest.raises(UserError, match="k=9 needs at least 9 answers per sample, got 5"):
        await TakeFirstK(k=9).apply_all(answers, r, CTX)
    with pytest.raises(ValueError):
        TakeFirstK(k=0)
    # a per-answer filter maps over the repeats, then works on the single value a selection left
    up = Uppercase()
    assert await up.apply_all(["a", "b"], r, CTX) == ["A", "B"]
    assert await up.apply_all("a", r, CTX) == "A"
    assert await RemoveWhitespace().apply_all([" a\n", "b "], r, CTX) == ["a", "b"]


async def test_map_and_custom():
    r = rec()
    m = Map(mapping_dict={"A": 0, "B": 1}, default_value=-1)
    assert await m.apply_all(["A", "B", "Z"], r, CTX) == [0, 1, -1]
    assert await m.apply(["unhashable"], r, CTX) == -1
    seen = []

    def fn(resps, docs):
        seen.append((resps, docs))
        return [[x * 2 for x in resp] for resp in resps]

    assert await Custom(filter_fn=fn).apply_all(["a", "b"], r, CTX) == ["aa", "bb"]
    assert seen == [([["a", "b"]], [{"q": "x"}])]
    with pytest.raises(ValueError, match="filter_fn must be a function"):
        Custom(filter_fn="utils.fn")


def test_named_aggregations_by_hand():
    def value(name, values):
        return Aggregation.named(name).aggregate(values).value

    assert value("median", [5, 1, 3, 2]) == 3  # sorted [1, 2, 3, 5][4 // 2]: lm-eval's upper median
    assert value("median", [5, 1, 3]) == 3
    assert math.isclose(value("perplexity", [-1.0, -3.0]), math.exp(2.0))
    assert math.isclose(value("weighted_perplexity", [(-4.0, 2), (-2.0, 1)]), math.exp(6.0 / 3))
    assert math.isclose(value("bits_per_byte", [(-4.0, 2), (-2.0, 4)]), 1.0 / math.log(2))
    # f1 of class 1: tp 2, fp 1, fn 1 -> 4 / 6
    assert math.isclose(value("f1", [(1, 1), (1, 1), (0, 1), (1, 0), (0, 0)]), 4 / 6)
    with pytest.raises(UserError, match="lm-eval's f1 is binary"):
        value("f1", [(0, 2), (1, 1)])
    assert math.isclose(value("brier_score", [(0, [1.0, 0.0]), (1, [0.5, 0.5])]), (0.0 + 0.5) / 2)
    assert value("bypass", [1, 2]) == 999
    assert math.isnan(value("nanmean", [math.nan])) and value("nanmean", [1.0, math.nan, 3.0]) == 2.0
    mean = Aggregation.named("mean").aggregate([1.0, 0.0, 1.0, None])
    assert mean.value == 2 / 3 and mean.n == 3 and math.isclose(mean.stderr, math.sqrt((1 / 3) / 3))
    assert Aggregation.named("median").aggregate([1, 2]).stderr is None  # lm-eval bootstraps these; avhb: none
    with pytest.raises(UserError, match="unknown aggregation 'mode'"):
        Aggregation.named("mode")
    hook = Aggregation("utils.total", lambda values: {"not": "a number"})
    with pytest.raises(UserError, match="aggregation utils.total returned dict"):
        hook.aggregate([1])


def test_matthews_corrcoef_agrees_with_scikit_learn():
    sklearn = pytest.importorskip("sklearn.metrics")
    cases = [
        [(0, 0), (1, 1), (2, 2), (0, 1), (1, 2), (2, 0), (0, 0), (1, 0)],
        [(1, 1), (1, 0), (0, 0), (0, 0), (1, 1)],
        [(0, 0), (0, 0)],  # undefined (one class): 0
    ]
    for items in cases:
        golds, preds = zip(*items)
        ours = Aggregation.named("matthews_corrcoef").aggregate(items).value
        assert math.isclose(ours, sklearn.matthews_corrcoef(golds, preds), abs_tol=1e-12), items
    items = [(1, 1), (1, 1), (0, 1), (1, 0), (0, 0)]
    assert math.isclose(Aggregation.named("f1").aggregate(items).value, sklearn.f1_score(*zip(*items)), abs_tol=1e-12)
