"""Conciseness from cl100k_base token counts."""
import os

import pytest

from avhb.score.metric import SampleRecord, ScoreContext
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


async def test_breakdown_cells_use_the_whole_runs_cut_points():
    texts = ["a", "a b", "a b c", "a b c d", "a b c d e"]
    records = [SampleRecord(id=str(i), doc={"cat": "short" if i < 3 else "long"}, response=t)
               for i, t in enumerate(texts)]
    m = cc.Conciseness()
    for r in records:
        r.scores.update(await m.score(r, ScoreContext(None, "t")))
    long_cell = [r for r in records if r.doc["cat"] == "long"]
    # alone, the cell [4, 5] has cuts 4.2, 4.4, 4.6, 4.8 -> scores 5, 1
    assert cc.Conciseness().aggregate(long_cell)["conciseness"].value == pytest.approx(3.0)
    assert m.aggregate(records)["conciseness"].value == pytest.approx(3.0)  # 5, 4, 3, 2, 1
    # after the whole run: cuts 1.8, 2.6, 3.4, 4.2 -> scores 2, 1
    agg = m.aggregate(long_cell)
    assert agg["conciseness"].value == pytest.approx(1.5) and agg["conciseness"].n == 2
    assert m.aggregate([r for r in records if r.doc["cat"] == "short"])["conciseness"].value == pytest.approx(4.0)
    assert m.cut_points_for(records) == pytest.approx([1.8, 2.6, 3.4, 4.2])
    # records that are not part of the remembered run get their own cut points,
    # and a smaller foreign list does not replace the remembered run
    other = [SampleRecord(id="x", doc={}, response="a b c d e f g h"), SampleRecord(id="y", doc={}, response="a")]
    for r in other:
        r.scores.update(await m.score(r, ScoreContext(None, "t")))
    assert m.aggregate(other)["conciseness"].value == pytest.approx((1 + 5) / 2)
    assert m.aggregate(long_cell)["conciseness"].value == pytest.approx(1.5)
    # same id but a different output (another run) is not a subset
    changed = SampleRecord(id="4", doc={}, response="a b c d e f", scores={"conciseness_tokens": 6})
    assert m.aggregate([records[3], changed])["conciseness"].value == pytest.approx(3.0)
