"""Generic unit / pair accuracy and macro F1."""
import random

import pytest

from avhb.score.metric import SampleRecord
from avhb.plugins.metrics.pairs import MacroF1, PairAccuracy, UnitAccuracy, macro_f1, unit_accuracy

# (unit, correct) with None = unknown answer
MEMBERS = [("u1", True), ("u1", True),  # right
           ("u2", True), ("u2", False),  # wrong
           ("u3", True), ("u3", None),  # right if unknowns are excluded
           ("u4", None), ("u4", None),  # nothing known
           ("u5", True)]  # a pair with one side missing


def run(**kw):
    return unit_accuracy(MEMBERS, lambda m: m[0], lambda m: m[1], **kw)


def test_unit_accuracy_options():
    s = run()
    assert (s.correct, s.total, s.excluded_units, s.unknown_members) == (3, 4, 1, 3)  # u5 scored: no size given
    s = run(expected_size=2)
    assert (s.correct, s.total, s.excluded_units, s.incomplete_units) == (2, 3, 1, 1)
    assert s.aggregate().value == pytest.approx(2 / 3)
    s = run(expected_size=2, incomplete="wrong")
    assert (s.correct, s.total) == (2, 4)
    s = run(expected_size=2, incomplete="score")
    assert (s.correct, s.total) == (3, 4)
    s = run(unknown="wrong", expected_size=2)
    assert (s.correct, s.total, s.excluded_units) == (1, 4, 0)  # u4 (all unknown) is wrong
    assert unit_accuracy([], lambda m: m, lambda m: True).aggregate().value is None
    with pytest.raises(ValueError):
        run(unknown="maybe")


def test_macro_f1_hand_computed():
    golds, preds = ["A", "A", "B", "C"], ["A", "B", "B", None]
    # A: 2/3, B: 2/3, C: 0 (missed)
    assert macro_f1(preds, golds) == pytest.approx(4 / 9)
    assert macro_f1(preds, golds, unknown="exclude") == pytest.approx(2 / 3)
    assert macro_f1(["A", "B"], ["A", "B"]) == 1.0
    assert macro_f1([], []) is None


def test_macro_f1_matches_sklearn():
    skm = pytest.importorskip("sklearn.metrics")
    rng = random.Random(4)
    for _ in range(20):
        n = rng.randint(3, 50)
        golds = [rng.choice("ABCD") for _ in range(n)]
        preds = [g if rng.random() < 0.5 else rng.choice("ABCDE") for g in golds]
        assert macro_f1(preds, golds) == pytest.approx(skm.f1_score(golds, preds, average="macro"))
        preds_u = [None if rng.random() < 0.2 else p for p in preds]
        labels = sorted(set(golds) | {p for p in preds_u if p})
        want = skm.f1_score(golds, ["?" if p is None else p for p in preds_u], labels=labels, average="macro", zero_division=0)
        assert macro_f1(preds_u, golds) == pytest.approx(want)


def rec(i, doc, extracted, target, error=None):
    return SampleRecord(id=str(i), doc=doc, extracted=extracted, target=target, error=error)


def test_unit_and_pair_metrics():
    records = [rec(0, {"id": "v1", "g": "pos"}, "Yes", "yes"), rec(1, {"id": "v1", "g": "pos"}, "no", "no"),
               rec(2, {"id": "v2", "g": "pos"}, "yes", "no"), rec(3, {"id": "v2", "g": "pos"}, "no", "no"),
               rec(4, {"id": "v3", "g": "pos"}, None, "yes"), rec(5, {"id": "v3", "g": "pos"}, "yes", "yes"),
               rec(6, {"id": "v4", "g": "pos"}, "yes", "yes"),
               rec(7, {"id": "v5", "g": "pos"}, None, "yes", error="timeout"), rec(8, {"id": "v5", "g": "pos"}, None, "no"),
               rec(9, {"g": "pos"}, "yes", "yes")]  # no id: in no unit
    agg = PairAccuracy(key=["doc.id", "doc.g"]).aggregate(records)
    assert agg["pair_accuracy"].value == pytest.approx(2 / 3) and agg["pair_accuracy"].n == 3
    # v5 has a failed member: excluded and counted, never scored (docs/errors.md)
    assert agg["pair_accuracy_incomplete_units"].value == 1 and agg["pair_accuracy_excluded_units"].value == 0
    assert agg["pair_accuracy_error_units"].value == 1 and agg["pair_accuracy_error_units"].n == 5
    assert agg["pair_accuracy_unknown_members"].value == 1
    agg = UnitAccuracy(key="doc.id", unknown="wrong").aggregate(records)
    assert agg["unit_accuracy"].value == pytest.approx(2 / 4)  # v1, v4 right; v5 (failed member) excluded
    scored = [rec(i, {"id": f"u{i // 2}"}, None, None) for i in range(4)]
    for r, s in zip(scored, [1.0, 1.0, 1.0, 0.0]):
        r.scores["exact_match"] = s
    assert UnitAccuracy(key=["doc.id"], correct="scores.exact_match").aggregate(scored)["unit_accuracy"].value == 0.5
    with pytest.raises(ValueError):
        UnitAccuracy().aggregate(records)


def test_macro_f1_metric():
    records = [rec(0, {}, "A", "A"), rec(1, {}, "b", "A"), rec(2, {}, "B", "B"), rec(3, {}, None, "C"),
               rec(4, {}, "A", "C", error="x")]
    agg = MacroF1(bootstrap_iters=200).aggregate(records)
    # the failed record is dropped (docs/errors.md); computed on lower-cased labels
    want = macro_f1(["a", "b", "b", None], ["a", "a", "b", "c"])
    assert agg["macro_f1"].value == pytest.approx(want) and agg["macro_f1"].n == 4
    assert agg["macro_f1_unknown"].value == 1 and agg["macro_f1"].stderr > 0
