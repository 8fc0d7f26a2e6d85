"""Temporal and box grounding."""
import pytest

from avhb.metric import SampleRecord, ScoreContext
from avhb.plugins.metrics.grounding import (BoxIoU, TemporalGrounding, TemporalIoU, box_iou, box_pairs, cover,
                                            interval_iou, length, merge, overlap, share_at_least, temporal_prf)

CTX = ScoreContext(None, "t")


def test_interval_iou():
    assert interval_iou((0, 10), (5, 15)) == pytest.approx(5 / 15)
    assert interval_iou({"start": 0, "end": 4}, [0, 4]) == 1.0
    assert interval_iou((0, 1), (2, 3)) == 0.0
    assert interval_iou((0, 1), (1, 2)) == 0.0  # touching
    assert interval_iou((3, 3), (3, 3)) == 1.0  # identical points
    assert interval_iou((3, 3), (4, 4)) == 0.0
    assert interval_iou((3, 3), (0, 10)) == 0.0  # point vs span
    with pytest.raises(ValueError):
        interval_iou((5, 1), (0, 2))


def test_union_helpers():
    assert merge([(4, 10), (0, 6), (12, 12), (10, 11)]) == [(0, 11)]
    assert length([(0, 6), (4, 10)]) == 10
    assert overlap([(0, 6), (4, 10)], [(5, 20)]) == 5
    assert overlap([(0, 2), (4, 6)], [(1, 5)]) == 2
    assert cover([], [(0, 1)]) is None


def test_temporal_prf():
    assert temporal_prf([(0, 10)], [(5, 20)]) == pytest.approx((0.5, 1 / 3, 0.4))
    # overlapping predictions are not counted twice
    assert temporal_prf([(0, 6), (4, 10)], [(5, 20)]) == pytest.approx((0.5, 1 / 3, 0.4))
    assert temporal_prf((0, 10), (0, 10)) == (1.0, 1.0, 1.0)
    assert temporal_prf([(0, 2), (8, 10)], [(0, 10)]) == pytest.approx((1.0, 0.4, 2 * 0.4 / 1.4))
    # zero-length cases
    assert temporal_prf([(7, 7)], [(5, 20)]) == (1.0, 0.0, 0.0)  # instant inside gold
    assert temporal_prf([(30, 30)], [(5, 20)]) == (0.0, 0.0, 0.0)
    assert temporal_prf([(5, 10)], [(7, 7)]) == (0.0, 1.0, 0.0)  # gold instant covered
    assert temporal_prf([(7, 7)], [(7, 7)]) == (1.0, 1.0, 1.0)
    assert temporal_prf([(20, 20)], [(5, 20)]) == (1.0, 0.0, 0.0)  # closed interval boundary
    assert temporal_prf([], [(5, 20)]) == (0.0, 0.0, 0.0)  # no prediction: a miss
    assert temporal_prf(None, [(5, 20)]) == (0.0, 0.0, 0.0)
    assert temporal_prf([(0, 1)], []) is None  # no gold: not scorable


def test_box_iou():
    assert box_iou((0, 0, 10, 10), (5, 5, 10, 10)) == pytest.approx(25 / 175)
    assert box_iou({"x": 0, "y": 0, "width": 10, "height": 10}, {"x": 0, "y": 0, "w": 10, "h": 10}) == 1.0
    assert box_iou((0, 0, 10, 10), (10, 0, 5, 5)) == 0.0
    assert box_iou((0, 0, 10, 10), (2, 2, 2, 2)) == pytest.approx(4 / 100)
    assert box_iou((1, 1, 0, 0), (1, 1, 0, 0)) == 1.0  # degenerate identical
    assert box_iou((1, 1, 0, 0), (2, 2, 0, 0)) == 0.0
    assert box_iou((1, 1, 0, 0), (0, 0, 5, 5)) == 0.0
    with pytest.raises(ValueError):
        box_iou((0, 0, -1, 2), (0, 0, 1, 1))
    assert share_at_least([0.5, 0.49, 0.9]) == pytest.approx(2 / 3)
    assert share_at_least([]) is None


def test_box_pairs():
    gold = {"0": (0, 0, 10, 10), "5": (0, 0, 10, 10)}
    assert box_pairs({0: (0, 0, 10, 10)}, gold) == [1.0, 0.0]  # frame 5 unpredicted
    assert box_pairs([(0, 0, 10, 10)], [(0, 0, 10, 10), (0, 0, 1, 1)]) == [1.0, 0.0]
    assert box_pairs((5, 5, 10, 10), (0, 0, 10, 10)) == [pytest.approx(25 / 175)]
    assert box_pairs(None, (0, 0, 10, 10)) == [0.0]


async def test_temporal_metric():
    m = TemporalGrounding()
    records = [SampleRecord(id="0", doc={}, extracted=[(0, 10)], target=[(5, 20)]),
               SampleRecord(id="1", doc={}, extracted=[(0, 10)], target=[(0, 10)]),
               SampleRecord(id="2", doc={}, extracted=[(5, 1)], target=[(0, 10)]),  # invalid
               SampleRecord(id="3", doc={}, error="x")]
    for r in records[:3]:
        r.scores.update(await m.score(r, CTX))
    assert records[2].scores["temporal_f1"] is None and "temporal_invalid" in records[2].meta
    agg = m.aggregate(records)
    assert agg["temporal_precision"].value == pytest.approx(1.5 / 3)  # error counts 0
    assert agg["temporal_recall"].value == pytest.approx((1 / 3 + 1) / 3)
    assert agg["temporal_f1"].value == pytest.approx(1.4 / 3)
    p, r = 0.5, (1 / 3 + 1) / 3
    assert agg["temporal_f1_of_means"].value == pytest.approx(2 * p * r / (p + r))
    assert agg["temporal_f1_of_means"].stderr is not None and agg["temporal_f1_of_means"].n == 3
    assert agg["temporal_invalid"].value == 1


async def test_temporal_iou_metric():
    m = TemporalIoU(pred="doc.pred", gold="doc.gold")
    assert (await m.score(SampleRecord(id="0", doc={"pred": [0, 10], "gold": [5, 15]}), CTX))["temporal_iou"] == pytest.approx(1 / 3)
    assert (await m.score(SampleRecord(id="1", doc={"gold": [5, 15]}), CTX))["temporal_iou"] == 0.0
    assert (await m.score(SampleRecord(id="2", doc={"pred": [0, 1]}), CTX))["temporal_iou"] is None


async def test_box_metric():
    m = BoxIoU()
    one = [SampleRecord(id=str(i), doc={}, extracted=p, target=(0, 0, 10, 10))
           for i, p in enumerate([(0, 0, 10, 10), (5, 5, 10, 10), None])]
    for r in one:
        r.scores.update(await m.score(r, CTX))
    agg = m.aggregate(one)
    assert agg["box_iou"].value == pytest.approx((1 + 1 / 7) / 3) and agg["box_iou"].n == 3
    assert agg["box_iou_at_0.5"].value == pytest.approx(1 / 3)
    multi = SampleRecord(id="m", doc={}, extracted={"0": (0, 0, 10, 10)}, target={"0": (0, 0, 10, 10), "1": (0, 0, 4, 4)})
    multi.scores.update(await m.score(multi, CTX))
    agg = m.aggregate(one + [multi])
    assert agg["box_iou"].value == pytest.approx((2 + 1 / 7) / 5) and agg["box_iou"].n == 5
    assert agg["box_iou_at_0.5"].value == pytest.approx(2 / 5) and agg["box_iou"].stderr is not None
