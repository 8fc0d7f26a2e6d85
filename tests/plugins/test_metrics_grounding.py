"""Temporal and box grounding."""
import pytest

from avhb.errors import UserError

from avhb.score.metric import SampleRecord, ScoreContext
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
               SampleRecord(id="2", doc={}, extracted=[(5, 1)], target=[(0, 10)]),  # invalid prediction: 0
               SampleRecord(id="3", doc={}, error="x")]
    for r in records[:3]:
        r.scores.update(await m.score(r, CTX))
    assert records[2].scores["temporal_f1"] == 0.0 and "temporal_unparsed" in records[2].meta
    agg = m.aggregate(records)
    # a bad answer counts 0; the failed sample is excluded (docs/errors.md)
    assert agg["temporal_precision"].value == pytest.approx(1.5 / 3)
    assert agg["temporal_recall"].value == pytest.approx((1 / 3 + 1) / 3)
    assert agg["temporal_f1"].value == pytest.approx(1.4 / 3) and agg["temporal_f1"].n == 3
    p, r = 1.5 / 3, (1 / 3 + 1) / 3
    assert agg["temporal_f1_of_means"].value == pytest.approx(2 * p * r / (p + r))
    assert agg["temporal_f1_of_means"].stderr is not None and agg["temporal_f1_of_means"].n == 3
    assert agg["temporal_unparsed"].value == 1 and agg["temporal_bad_reference"].value == 0


async def test_temporal_unreadable_answer_scores_zero_bad_reference_excluded():
    m = TemporalGrounding()
    cases = [("I think 3 to 5", [(0, 10)]),   # text: unreadable -> 0
             ([5, 2], [(0, 10)]),             # ends before it starts -> 0
             (None, [(0, 10)]),               # nothing extracted -> 0
             ("35", [(3, 5)]),                # digits are not an interval
             ([float("nan"), 4], [(0, 10)]),  # not finite
             ([], [(0, 10)]),                 # explicit empty answer: a miss, not unparsed
             ([(0, 10)], [(5, 2)]),           # bad reference -> None
             ([(0, 10)], "0-10"),             # bad reference -> None
             ([(0, 10)], None),               # no reference -> None
             ([(0, 10)], [(0, 5)])]           # P = 0.5, R = 1
    records = [SampleRecord(id=str(i), doc={}, extracted=p, target=g) for i, (p, g) in enumerate(cases)]
    for r in records:
        r.scores.update(await m.score(r, CTX))
    assert [r.scores["temporal_f1"] for r in records] == [0.0] * 6 + [None] * 3 + [pytest.approx(2 / 3)]
    assert [("temporal_unparsed" in r.meta, "temporal_bad_reference" in r.meta) for r in records] == (
        [(True, False)] * 5 + [(False, False)] + [(False, True)] * 3 + [(False, False)])
    agg = m.aggregate(records)
    assert agg["temporal_precision"].value == pytest.approx(0.5 / 7) and agg["temporal_precision"].n == 7
    assert agg["temporal_unparsed"].value == 5 and agg["temporal_bad_reference"].value == 3
    # re-scoring clears stale flags
    records[0].extracted = [(0, 10)]
    await m.score(records[0], CTX)
    assert "temporal_unparsed" not in records[0].meta
    assert TemporalGrounding().aggregate(records + [SampleRecord(id="e", doc={}, error="x")])["temporal_f1"].n == 7
    with pytest.raises(UserError, match="errors_count_as_wrong was removed"):
        TemporalGrounding(errors_count_as_wrong=True)


async def test_temporal_iou_metric():
    m = TemporalIoU(pred="doc.pred", gold="doc.gold")
    assert (await m.score(SampleRecord(id="0", doc={"pred": [0, 10], "gold": [5, 15]}), CTX))["temporal_iou"] == pytest.approx(1 / 3)
    assert (await m.score(SampleRecord(id="1", doc={"gold": [5, 15]}), CTX))["temporal_iou"] == 0.0
    assert (await m.score(SampleRecord(id="2", doc={"pred": [0, 1]}), CTX))["temporal_iou"] is None


async def test_temporal_iou_unreadable_and_errors():
    m = TemporalIoU()
    cases = [([0, 10], [5, 15]), ("I think 3 to 5", [0, 10]), ([5, 2], [0, 10]), (None, [0, 10]),
             ([[0, 10]], [[0, 10]]), ([0, 10], [5, 2]), ([0, 10], "soon")]
    records = [SampleRecord(id=str(i), doc={}, extracted=p, target=g) for i, (p, g) in enumerate(cases)]
    for r in records:
        r.scores.update(await m.score(r, CTX))
    assert [r.scores["temporal_iou"] for r in records] == [pytest.approx(1 / 3), 0.0, 0.0, 0.0, 1.0, None, None]
    records.append(SampleRecord(id="e", doc={}, error="x"))
    agg = m.aggregate(records)
    assert agg["temporal_iou"].value == pytest.approx((1 / 3 + 1) / 5) and agg["temporal_iou"].n == 5  # error excluded
    assert agg["temporal_iou_unparsed"].value == 3 and agg["temporal_iou_bad_reference"].value == 2


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


async def test_box_unreadable_prediction_scores_zero_and_errors_count():
    m = BoxIoU()
    gold = (0, 0, 10, 10)
    cases = [((0, 0, 10, 10), gold),
             ("the cat at 0,0", gold),                   # text -> 0, unparsed
             ((0, 0, -5, 10), gold),                     # negative size -> 0, unparsed
             (None, gold),                               # nothing extracted -> 0, unparsed
             ((0, 0, 10, 10), (0, 0, -1, 1)),            # bad reference -> None
             ((0, 0, 10, 10), None),                     # no reference -> None
             ((0, 0, 10, 10), "box")]                    # bad reference -> None
    records = [SampleRecord(id=str(i), doc={}, extracted=p, target=g) for i, (p, g) in enumerate(cases)]
    for r in records:
        r.scores.update(await m.score(r, CTX))
    assert [r.scores["box_iou"] for r in records] == [1.0, 0.0, 0.0, 0.0, None, None, None]
    records.append(SampleRecord(id="e", doc={}, target=gold, error="x"))
    agg = m.aggregate(records)
    assert agg["box_iou"].value == pytest.approx(1 / 4) and agg["box_iou"].n == 4  # the failed sample is excluded
    assert agg["box_iou_at_0.5"].value == pytest.approx(1 / 4)
    assert agg["box_iou_unparsed"].value == 3 and agg["box_iou_bad_reference"].value == 3


async def test_box_multi_pairs_with_bad_member_and_error():
    m = BoxIoU()
    gold = {"0": (0, 0, 10, 10), "1": (0, 0, 4, 4)}
    r1 = SampleRecord(id="a", doc={}, extracted={"0": (0, 0, 10, 10), "1": "oops"}, target=gold)
    r2 = SampleRecord(id="b", doc={}, extracted=[(0, 0, 10, 10)], target=gold)  # list for keyed gold
    for r in (r1, r2):
        r.scores.update(await m.score(r, CTX))
    assert r1.scores["box_iou_pairs"] == [1.0, 0.0] and "box_iou_unparsed" in r1.meta
    assert r2.scores["box_iou_pairs"] == [0.0, 0.0] and "box_iou_unparsed" in r2.meta
    err = SampleRecord(id="e", doc={}, target=gold, error="x")
    agg = m.aggregate([r1, r2, err])
    assert agg["box_iou"].value == pytest.approx(1 / 4) and agg["box_iou"].n == 4  # the failed sample is excluded
    assert agg["box_iou"].stderr is not None and agg["box_iou_unparsed"].value == 2
    # a list prediction with a missing position is a miss, not unreadable
    r3 = SampleRecord(id="c", doc={}, extracted=[(0, 0, 10, 10), None], target=[(0, 0, 10, 10), (0, 0, 4, 4)])
    r3.scores.update(await m.score(r3, CTX))
    assert r3.scores["box_iou_pairs"] == [1.0, 0.0] and "box_iou_unparsed" not in r3.meta
