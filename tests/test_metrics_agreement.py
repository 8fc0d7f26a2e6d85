"""Weighted Cohen's kappa and Krippendorff's alpha."""
import random

import pytest

from avhb.metric import SampleRecord
from avhb.plugins.metrics.agreement import (JudgeAgreement, cohen_kappa, krippendorff_alpha, krippendorff_alpha_stderr,
                                            pairwise_kappa)

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def test_kappa_hand_computed():
    # O = [[1,1],[0,2]], E = [[.5,1.5],[.5,1.5]] -> 1 - 1/2
    assert cohen_kappa([1, 1, 2, 2], [1, 2, 2, 2]) == pytest.approx(0.5)
    assert cohen_kappa([1, 2, 3], [1, 2, 3], "quadratic") == pytest.approx(1.0)
    assert cohen_kappa([3, 3, 3], [3, 3, 3]) is None  # no expected disagreement
    assert cohen_kappa([], []) is None
    # missing ratings drop the item
    assert cohen_kappa([1, 1, None, 2, 2], [1, 2, 5, 2, 2]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        cohen_kappa([1, 6], [1, 2], labels=[1, 2, 3, 4, 5])


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_matches_sklearn(weights):
    rng = random.Random(7)
    for trial in range(20):
        n = rng.randint(5, 60)
        a = [rng.randint(1, 5) for _ in range(n)]
        b = [min(5, max(1, x + rng.choice([-2, -1, 0, 0, 1]))) for x in a]
        labels = [1, 2, 3, 4, 5] if trial % 2 else None
        want = sklearn_metrics.cohen_kappa_score(a, b, weights=weights, labels=labels)
        assert cohen_kappa(a, b, weights, labels) == pytest.approx(want, abs=1e-12)


def test_pairwise_kappa_with_missing():
    rng = random.Random(3)
    n = 40
    ratings = {j: [rng.choice([1, 2, 3, 4, 5, None]) for _ in range(n)] for j in ("g", "x", "c")}
    out = pairwise_kappa(ratings, "linear", [1, 2, 3, 4, 5], iters=200)
    assert set(out) == {("g", "x"), ("g", "c"), ("x", "c")}
    for (p, q), agg in out.items():
        keep = [i for i in range(n) if ratings[p][i] is not None and ratings[q][i] is not None]
        a, b = [ratings[p][i] for i in keep], [ratings[q][i] for i in keep]
        assert agg.n == len(keep)
        assert agg.value == pytest.approx(sklearn_metrics.cohen_kappa_score(a, b, weights="linear", labels=[1, 2, 3, 4, 5]))
        assert agg.stderr is not None and agg.stderr > 0


def test_alpha_hand_computed():
    # units (1,1) and (2,3): o11 = 2, o23 = o32 = 1; n = 4
    data = [[1, 2], [1, 3]]
    assert krippendorff_alpha(data, "interval") == pytest.approx(1 - 3 * 2 / 22)
    assert krippendorff_alpha(data, "nominal") == pytest.approx(1 - 3 * 2 / 10)
    # ordinal: n = (2,1,1); delta(1,2)=(3-1.5)^2, delta(1,3)=(4-1.5)^2, delta(2,3)=(2-1)^2
    d12, d13, d23 = 2.25, 6.25, 1.0
    expected = 2 * (2 * 1 * d12 + 2 * 1 * d13 + 1 * 1 * d23)
    assert krippendorff_alpha(data, "ordinal") == pytest.approx(1 - 3 * 2 * d23 / expected)
    # a unit rated once is not pairable; identical ratings everywhere: undefined
    assert krippendorff_alpha([[1, 2, 5], [1, 3, None]], "interval") == pytest.approx(1 - 3 * 2 / 22)
    assert krippendorff_alpha([[2, 2], [2, 2]], "interval") is None
    assert krippendorff_alpha([[1, None], [None, 2]], "interval") is None


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_krippendorff_package(level):
    kd = pytest.importorskip("krippendorff")
    import numpy as np

    rng = random.Random(11)
    for _ in range(10):
        raters, units = rng.randint(2, 4), rng.randint(5, 40)
        base = [rng.randint(1, 5) for _ in range(units)]
        data = [[None if rng.random() < 0.2 else min(5, max(1, b + rng.choice([-1, 0, 0, 1]))) for b in base]
                for _ in range(raters)]
        arr = np.array([[np.nan if v is None else v for v in row] for row in data], dtype=float)
        want = kd.alpha(reliability_data=arr, level_of_measurement=level)
        assert krippendorff_alpha(data, level) == pytest.approx(want, abs=1e-9)


def test_alpha_stderr():
    rng = random.Random(5)
    data = [[rng.randint(1, 5) for _ in range(30)] for _ in range(3)]
    agg = krippendorff_alpha_stderr(data, "ordinal", iters=200)
    assert agg.value == pytest.approx(krippendorff_alpha(data, "ordinal")) and agg.n == 30 and agg.stderr > 0


def test_judge_agreement_metric():
    rng = random.Random(2)
    records = []
    cols = {"a": [], "b": [], "c": []}
    for i in range(30):
        vals = [rng.randint(1, 5) for _ in range(3)]
        if i == 4:
            vals[2] = None  # one judge's reply never parsed
        for k, v in zip(cols, vals):
            cols[k].append(v)
        r = SampleRecord(id=str(i), doc={})
        r.judgements["halluc"] = {"per_judge": vals}
        records.append(r)
    records.append(SampleRecord(id="err", doc={}, error="x"))
    m = JudgeAgreement(source="halluc", judges=["a", "b", "c"], labels=[1, 2, 3, 4, 5], bootstrap_iters=100)
    agg = m.aggregate(records)
    pair = agg["agreement_kappa_quadratic_a_c"]
    assert pair.n == 29
    assert pair.value == pytest.approx(cohen_kappa(cols["a"], cols["c"], "quadratic", [1, 2, 3, 4, 5]))
    pairs = [cohen_kappa(cols[p], cols[q], "linear", [1, 2, 3, 4, 5]) for p, q in (("a", "b"), ("a", "c"), ("b", "c"))]
    assert agg["agreement_kappa_linear"].value == pytest.approx(sum(pairs) / 3)
    assert agg["agreement_alpha_interval"].value == pytest.approx(krippendorff_alpha(list(cols.values()), "interval"))
    assert {"agreement_alpha_ordinal", "agreement_kappa_linear_b_c"} <= set(agg)
    with pytest.raises(ValueError):
        JudgeAgreement(source="halluc", judges=["a"]).aggregate(records)
