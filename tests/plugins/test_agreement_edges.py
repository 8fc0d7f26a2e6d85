"""plugins/metrics/agreement.py: the documented edges that the comparisons
with scikit-learn, statsmodels and krippendorff in test_metrics_agreement.py
do not reach (found by mutation testing, benchmarks/mutation.py): refused
inputs, NaN as missing, the ``items`` and ``labels`` choices, the counts
``n`` and the bootstrap standard errors (against a reference resampling)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from avhb.plugins.metrics.agreement import (JudgeAgreement, cohen_kappa, fleiss_kappa, fleiss_kappa_counts,
                                            fleiss_kappa_stderr, krippendorff_alpha, krippendorff_alpha_stderr,
                                            mean_pairwise_kappa, pairwise_kappa)
from avhb.score.metric import SampleRecord

NAN = float("nan")


def _reference_bootstrap(n, statistic, iters, seed=1234):
    rng = random.Random(seed)
    stats = [statistic(rng.choices(range(n), k=n)) for _ in range(iters)]
    stats = [s for s in stats if s is not None]
    return float(np.std(stats, ddof=1)) if len(stats) > 1 else None


def test_refused_inputs():
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa([1, 2], [1, 2], "cubic")
    with pytest.raises(ValueError, match="length"):
        cohen_kappa([1, 2], [1])
    with pytest.raises(ValueError, match="length"):
        pairwise_kappa({"a": [1, 2], "b": [1]})
    with pytest.raises(ValueError, match="not among the labels"):
        pairwise_kappa({"a": [1, 6], "b": [1, 2]}, labels=[1, 2, 3])
    with pytest.raises(ValueError, match="items"):
        pairwise_kappa({"a": [1, 2], "b": [1, 2]}, items="some")
    with pytest.raises(ValueError, match="labels"):
        mean_pairwise_kappa({"a": [1, 2], "b": [1, 2]}, labels="scale")
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha([[1, 2], [2, 1]], "ratio")
    with pytest.raises(ValueError, match="same units"):
        krippendorff_alpha([[1, 2], [2]])
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa_counts([[2, 0], [1, 2]])
    with pytest.raises(ValueError, match="same items"):
        fleiss_kappa([[1, 2], [1]])


def test_nan_is_a_missing_rating_everywhere():
    a, b = [1, 1, NAN, 2, 2], [1, 2, 5, 2, NAN]
    assert cohen_kappa(a, b) == cohen_kappa([1, 1, 2], [1, 2, 2])
    assert pairwise_kappa({"a": a, "b": b}, iters=10)[("a", "b")].n == 3
    assert krippendorff_alpha([[1, NAN, 2], [1, 3, 3]], "interval") == krippendorff_alpha([[1, 2], [1, 3]], "interval")
    assert fleiss_kappa([[1, 1, 2, NAN], [1, 2, 2, 1]]) == pytest.approx(1 / 3)


def test_observed_labels_give_each_pair_its_own_scale():
    # the module docstring's example: linear kappa 0.8 on the scale 1..5, 8/11 on the observed {1, 3, 4, 5}
    a, b = [1, 3, 5], [1, 3, 4]
    assert cohen_kappa(a, b, "linear", [1, 2, 3, 4, 5]) == pytest.approx(0.8)
    assert cohen_kappa(a, b, "linear", "observed") == pytest.approx(8 / 11) == cohen_kappa(a, b, "linear")
    ratings = {"a": a, "b": b, "c": [2, 2, 2]}
    pairs = pairwise_kappa(ratings, "linear", "observed", iters=10)
    assert pairs[("a", "b")].value == pytest.approx(8 / 11)
    # a pair's kappa on the whole panel's labels {1, 2, 3, 4, 5} is the scale's
    assert pairwise_kappa(ratings, "linear", None, iters=10)[("a", "b")].value == pytest.approx(0.8)
    assert pairs[("a", "c")].value == pytest.approx(0.0)  # c is constant: no agreement beyond chance


def test_all_rated_keeps_only_the_items_every_rater_rated():
    ratings = {"a": [1, 2, 3, 1, None], "b": [1, 2, 2, None, 3], "c": [1, 3, 3, 2, 3]}
    pw = pairwise_kappa(ratings, "linear", [1, 2, 3], iters=10)
    al = pairwise_kappa(ratings, "linear", [1, 2, 3], iters=10, items="all_rated")
    assert [pw[p].n for p in pw] == [3, 4, 4] and [al[p].n for p in al] == [3, 3, 3]
    assert al[("b", "c")].value == pytest.approx(cohen_kappa([1, 2, 2], [1, 3, 3], "linear", [1, 2, 3]))
    # n of the mean: items rated by at least two raters (pairwise), by all (all_rated)
    assert mean_pairwise_kappa(ratings, "linear", [1, 2, 3], iters=10).n == 5
    assert mean_pairwise_kappa(ratings, "linear", [1, 2, 3], iters=10, items="all_rated").n == 3
    only_one = {"a": [1, None, 2], "b": [None, 2, 2], "c": [None, None, 1]}
    assert mean_pairwise_kappa(only_one, "linear", [1, 2], iters=10).n == 1  # item 3: two ratings


def test_bootstrap_stderrs_match_a_reference_resampling():
    rng = random.Random(4)
    ratings = {k: [rng.randint(1, 4) for _ in range(12)] for k in "abc"}
    ratings["c"][3] = None
    labels = [1, 2, 3, 4]
    pair = pairwise_kappa(ratings, "quadratic", labels, iters=150)[("a", "c")]
    scored = [i for i in range(12) if ratings["c"][i] is not None]
    want = _reference_bootstrap(len(scored), lambda idx: cohen_kappa(
        [ratings["a"][scored[i]] for i in idx], [ratings["c"][scored[i]] for i in idx], "quadratic", labels), 150)
    assert pair.stderr == pytest.approx(want, rel=1e-9)

    def mean_kappa(idx):
        ks = [cohen_kappa([ratings[p][i] for i in idx], [ratings[q][i] for i in idx], "quadratic", labels)
              for p, q in (("a", "b"), ("a", "c"), ("b", "c"))]
        ks = [k for k in ks if k is not None]
        return sum(ks) / len(ks) if ks else None

    assert mean_pairwise_kappa(ratings, "quadratic", labels, iters=150).stderr == pytest.approx(
        _reference_bootstrap(12, mean_kappa, 150), rel=1e-9)

    data = [ratings["a"], ratings["b"]]
    alpha = krippendorff_alpha_stderr(data, "interval", iters=150)
    assert alpha.stderr == pytest.approx(_reference_bootstrap(
        12, lambda idx: krippendorff_alpha([[row[i] for i in idx] for row in data], "interval"), 150), rel=1e-9)
    fk = fleiss_kappa_stderr(data, iters=150)
    assert fk.n == 12 and fk.stderr == pytest.approx(_reference_bootstrap(
        12, lambda idx: fleiss_kappa([[row[i] for i in idx] for row in data]), 150), rel=1e-9)


def test_fleiss_edges():
    assert fleiss_kappa_counts([]) is None and fleiss_kappa_counts([1, 2]) is None  # not an items x categories table
    assert fleiss_kappa_counts([[1, 0], [0, 1]]) is None  # one rater per item
    # two raters is enough: items (1,1), (2,2): P-bar 1, p = (.5, .5) -> 1
    assert fleiss_kappa_counts([[2, 0], [0, 2]]) == pytest.approx(1.0)
    assert fleiss_kappa([[1, 2, 3]]) is None and fleiss_kappa([]) is None  # fewer than two raters
    assert fleiss_kappa_stderr([[1, 2, 3]]).n == 0 and fleiss_kappa_stderr([[1, 2, 3]]).value is None


def test_alpha_edges():
    # alpha never sees a unit rated once; here no unit is pairable
    assert krippendorff_alpha_stderr([[1, None], [None, 2]], "nominal").n == 0
    # perfect agreement on varied values: alpha 1
    assert krippendorff_alpha([[1, 2, 3], [1, 2, 3]], "ordinal") == pytest.approx(1.0)
    # three raters on one unit: m_u - 1 = 2 in the coincidences; (1, 1, 2) and (2, 2, 2) by hand
    # o11 = 2/2, o12 = o21 = 2/2, o22 = 6/2; n_c = (2, 4), n = 6; nominal: sum o delta = o12 + o21 = 2,
    # sum n_c n_k delta = 2 * 2 * 4 = 16 -> alpha = 1 - 5 * 2 / 16
    assert krippendorff_alpha([[1, 2], [1, 2], [2, 2]], "nominal") == pytest.approx(1 - 5 * 2 / 16)


def _records(rows):
    out = []
    for i, vals in enumerate(rows):
        r = SampleRecord(id=str(i), doc={})
        r.judgements["likert"] = {"per_judge": vals}
        out.append(r)
    return out


def test_metric_labels_options_and_judge_names():
    # the module docstring's raters [1, 3, 5] and [1, 3, 4]: 0.8 on the scale 1..5, 8/11 on {1, 3, 4, 5}
    recs = _records([[1, 1], [3, 3], [5, 4]])
    scale = JudgeAgreement(source="likert", labels="scale", bootstrap_iters=10).aggregate(recs)  # default 1..5
    assert scale["agreement_kappa_linear_j0_j1"].value == pytest.approx(0.8)
    assert scale["agreement_kappa_quadratic"].value == pytest.approx(12 / 13)
    assert JudgeAgreement(source="likert", labels="scale", scale=[1, 5],
                          bootstrap_iters=10).aggregate(recs)["agreement"].value == pytest.approx(0.8)
    # a scale 2..5 leaves rating 1 out: refused
    with pytest.raises(ValueError, match="not among the labels"):
        JudgeAgreement(source="likert", labels="scale", scale=[2, 5], bootstrap_iters=10).aggregate(recs)
    assert JudgeAgreement(source="likert", bootstrap_iters=10).aggregate(recs)["agreement"].value == pytest.approx(8 / 11)
    listed = JudgeAgreement(source="likert", labels=[1, 2, 3, 4, 5], bootstrap_iters=10).aggregate(recs)
    assert listed["agreement"].value == pytest.approx(0.8)
    observed = JudgeAgreement(source="likert", labels="observed", bootstrap_iters=10).aggregate(recs)
    assert observed["agreement"].value == pytest.approx(8 / 11)
    with pytest.raises(ValueError, match="labels must be"):
        JudgeAgreement(source="likert", labels="all").aggregate(recs)
    # a judge missing from a row (a shorter per_judge list) is a missing rating
    short = _records([[1, 3, 2], [3, 3], [5, 4, 4], [2, 2, 2]])
    out = JudgeAgreement(source="likert", judges=["x", "y", "z"], bootstrap_iters=10).aggregate(short)
    assert out["agreement_kappa_linear_x_z"].n == 3 and out["agreement_fleiss"].n == 3
    # fewer than two judges: nothing to report
    assert JudgeAgreement(source="likert", bootstrap_iters=10).aggregate(_records([[1], [2]])) == {}
    assert JudgeAgreement(source="likert", bootstrap_iters=10).aggregate([]) == {}


def test_metric_reports_every_output_and_skips_failed_samples():
    recs = _records([[1, 2], [2, 2], [3, 3], [1, 1]])
    failed = SampleRecord(id="f", doc={}, error="timeout")
    failed.judgements["likert"] = {"per_judge": [5, 1]}
    out = JudgeAgreement(source="likert", bootstrap_iters=10).aggregate(recs + [failed])
    assert set(out) == {"agreement", "agreement_kappa_linear_j0_j1", "agreement_kappa_linear",
                        "agreement_kappa_quadratic_j0_j1", "agreement_kappa_quadratic", "agreement_fleiss",
                        "agreement_alpha_ordinal", "agreement_alpha_interval", "agreement_skipped_pairs"}
    assert out["agreement_skipped_pairs"].value == 0  # the one pair rated 4 items together
    assert out["agreement_kappa_linear"].n == 4
    assert out["agreement_kappa_quadratic"].value == pytest.approx(
        cohen_kappa([1, 2, 3, 1], [2, 2, 3, 1], "quadratic", [1, 2, 3]))
    assert out["agreement_alpha_ordinal"].value == pytest.approx(krippendorff_alpha([[1, 2, 3, 1], [2, 2, 3, 1]], "ordinal"))
    assert not math.isnan(out["agreement_fleiss"].value)


def test_default_bootstrap_draws_are_a_thousand_with_seed_1234():
    """Every agreement stderr in a results.json uses these defaults: a
    re-scored run must reproduce them."""
    ratings = {"a": [1, 2, 3, 1, 2, 3], "b": [1, 2, 2, 1, 3, 3]}
    labels = [1, 2, 3]
    pair = lambda idx: cohen_kappa([ratings["a"][i] for i in idx], [ratings["b"][i] for i in idx], "linear", labels)  # noqa: E731
    want = _reference_bootstrap(6, pair, 1000)
    assert pairwise_kappa(ratings, "linear", labels)[("a", "b")].stderr == pytest.approx(want, rel=1e-9)
    assert mean_pairwise_kappa(ratings, "linear", labels).stderr == pytest.approx(want, rel=1e-9)
    data = [ratings["a"], ratings["b"]]
    assert krippendorff_alpha_stderr(data, "interval").stderr == pytest.approx(_reference_bootstrap(
        6, lambda idx: krippendorff_alpha([[row[i] for i in idx] for row in data], "interval"), 1000), rel=1e-9)
    assert fleiss_kappa_stderr(data).stderr == pytest.approx(_reference_bootstrap(
        6, lambda idx: fleiss_kappa([[row[i] for i in idx] for row in data]), 1000), rel=1e-9)
    out = JudgeAgreement(source="likert", labels=labels).aggregate(_records([list(p) for p in zip(*data)]))
    assert out["agreement"].stderr == pytest.approx(want, rel=1e-9)


def test_single_unit_and_single_item_tables():
    # one pairable unit (1, 2): o12 = o21 = 1, n_c = (1, 1), n = 2; nominal: 1 - 1 * 2 / 2 = 0
    assert krippendorff_alpha([[1], [2]], "nominal") == pytest.approx(0.0)
    # one item: (1, 1) split -> P = 0, P_e = .5 -> kappa -1; all in one category -> undefined
    assert fleiss_kappa_counts([[1, 1]]) == pytest.approx(-1.0)
    assert fleiss_kappa_counts([[2, 0]]) is None
    assert fleiss_kappa_counts(np.zeros((0, 3))) is None  # no items


def test_the_default_scale_is_one_to_five():
    for off_scale in (0, 6):
        recs = _records([[1, 1], [3, 3], [off_scale, 4]])
        with pytest.raises(ValueError, match="not among the labels"):
            JudgeAgreement(source="likert", labels="scale", bootstrap_iters=10).aggregate(recs)
