"""Conciseness from cl100k_base token counts."""
import os

import pytest

from avhb.metric import SampleRecord, ScoreContext
from avhb.plugins.metrics import conciseness as cc


def test_scores_within_run():
    # p20..p80 of 10..50 (linear) = 18, 26, 34, 42
    assert cc.cut_points([10, 20, 30, 40, 50]) == [18, 26, 34, 42]
    assert cc.conciseness_scores([10, 20, 30, 40, 50]) == [5, 4, 3, 2, 1]
    # cut points fall on values: <= is inclusive
    assert cc.cut_points([1, 2, 3, 4, 5, 6]) == [2, 3, 4, 5]
    assert cc.conciseness_scores([6, 5, 4, 3, 2, 1]) == [1, 2, 3, 4, 5, 5]
    assert cc.conciseness_scores([5, 5, 5, 5]) == [5, 5, 5, 5]  # all tied
    assert cc.conciseness_scores([7]) == [5]
    assert cc.conciseness_scores([]) == []
    with pytest.raises(ValueError):
        cc.cut_points([])


def test_pooled():
    assert cc.pooled_conciseness([[1, 2, 3], [4, 5, 6]]) == [[5, 5, 4], [3, 2, 1]]
    # within each run alone both would get the full 5..1 spread
    assert cc.conciseness_scores([4, 5, 6]) == [5, 3, 1]
    assert cc.pooled_conciseness([[], []]) == [[], []]


def test_token_counts_offline(monkeypatch):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    folder = cc.ensure_tiktoken_cache()
    assert folder and os.path.isdir(folder) and os.environ["TIKTOKEN_CACHE_DIR"] == folder
    assert cc.count_tokens("Hello world") == 2
    assert cc.count_tokens("Hello world, this is a test.") == 8
    assert cc.count_tokens("") == 0
    assert cc.count_tokens("<|endoftext|>") > 1  # special-token text counted as text


async def test_metric():
    m = cc.Conciseness()
    texts = ["a", "a b", "a b c", "a b c d", "a b c d e", None]
    records = [SampleRecord(id=str(i), doc={}, response=t) for i, t in enumerate(texts)]
    records.append(SampleRecord(id="err", doc={}, error="x"))
    for r in records[:-1]:
        r.scores.update(await m.score(r, ScoreContext(None, "t")))
    assert [r.scores["conciseness_tokens"] for r in records[:5]] == [1, 2, 3, 4, 5]
    agg = m.aggregate(records)
    assert agg["conciseness"].value == pytest.approx((5 + 4 + 3 + 2 + 1) / 5)  # cuts 1.8, 2.6, 3.4, 4.2
    assert agg["conciseness_tokens"].value == 3.0 and agg["conciseness_tokens"].n == 5
    assert agg["conciseness_missing"].value == 2
