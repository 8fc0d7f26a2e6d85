"""Weighted Cohen's kappa and Krippendorff's alpha."""
import random

import pytest

from avhb.score.metric import SampleRecord
from avhb.plugins.metrics.agreement import (JudgeAgreement, cohen_kappa, fleiss_kappa, fleiss_kappa_counts,
                                            fleiss_kappa_stderr, krippendorff_alpha, krippendorff_alpha_stderr,
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
    # headline = mean pairwise linear-weighted kappa (the paper's figure)
    assert next(iter(agg)) == "agreement" and agg["agreement"] == agg["agreement_kappa_linear"]
    complete = [i for i in range(30) if i != 4]
    assert agg["agreement_fleiss"].n == 29
    assert agg["agreement_fleiss"].value == pytest.approx(fleiss_kappa([[cols[k][i] for i in complete] for k in cols]))
    assert agg["agreement_fleiss"].stderr is not None
    with pytest.raises(ValueError):
        JudgeAgreement(source="halluc", judges=["a"]).aggregate(records)


# Fleiss (1971) as worked on the Wikipedia "Fleiss' kappa" page: 10 items,
# 14 raters, 5 categories; P-bar = 0.378, P-bar_e = 0.2128 -> kappa 0.210.
FLEISS_TABLE = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def test_fleiss_textbook_example():
    p_bar = (sum(sum(c * c for c in row) - 14 for row in FLEISS_TABLE) / (14 * 13)) / 10
    p_e = sum((sum(row[j] for row in FLEISS_TABLE) / 140) ** 2 for j in range(5))
    assert p_bar == pytest.approx(0.378, abs=5e-4) and p_e == pytest.approx(0.2128, abs=5e-5)
    assert fleiss_kappa_counts(FLEISS_TABLE) == pytest.approx((p_bar - p_e) / (1 - p_e))
    assert fleiss_kappa_counts(FLEISS_TABLE) == pytest.approx(0.20993, abs=5e-5)
    # the same table as raters x items ratings
    data = [[None] * 10 for _ in range(14)]
    for i, row in enumerate(FLEISS_TABLE):
        labels = [c + 1 for c, n in enumerate(row) for _ in range(n)]
        for r, v in enumerate(labels):
            data[r][i] = v
    assert fleiss_kappa(data) == pytest.approx(0.20993, abs=5e-5)


def test_fleiss_hand_computed_and_edges():
    # items (1,1), (1,2), (2,2): P_i = 1, 0, 1 -> P-bar 2/3; p = (.5, .5) -> P_e .5; kappa 1/3
    assert fleiss_kappa([[1, 1, 2], [1, 2, 2]]) == pytest.approx(1 / 3)
    # an item with a missing rating is left out
    assert fleiss_kappa([[1, 1, 2, 5], [1, 2, 2, None]]) == pytest.approx(1 / 3)
    assert fleiss_kappa([[3, 3], [3, 3]]) is None  # one category: undefined
    assert fleiss_kappa([[1, None], [None, 2]]) is None  # no complete item
    assert fleiss_kappa([[1, 2]]) is None  # one rater
    assert fleiss_kappa([["yes", "no", "yes"], ["yes", "no", "no"], ["yes", "yes", "no"]]) is not None
    with pytest.raises(ValueError):
        fleiss_kappa_counts([[2, 0], [1, 2]])
    agg = fleiss_kappa_stderr([[1, 1, 2, 2, 1], [1, 2, 2, 2, 1], [1, 1, 2, 1, 1]], iters=200)
    assert agg.n == 5 and agg.stderr is not None and agg.stderr > 0


def test_fleiss_matches_statsmodels():
    irr = pytest.importorskip("statsmodels.stats.inter_rater")
    import numpy as np

    rng = random.Random(13)
    for _ in range(20):
        raters, items = rng.randint(2, 5), rng.randint(5, 50)
        base = [rng.randint(1, 5) for _ in range(items)]
        data = [[min(5, max(1, b + rng.choice([-1, 0, 0, 1]))) for b in base] for _ in range(raters)]
        table, _ = irr.aggregate_raters(np.array(data).T)
        assert fleiss_kappa(data) == pytest.approx(irr.fleiss_kappa(table, method="fleiss"), abs=1e-12)


def test_kappa_scale_vs_observed_labels():
    # [1,3,5] vs [1,3,4]: O has one off-diagonal cell (5 vs 4).  On the scale
    # 1..5 (positions 0..4): sum w*O = 1; E = 1/3 per (row in {0,2,4}, col in
    # {0,2,3}): linear sum |i-j| = 15 -> 5, quadratic 39 -> 13.
    a, b = [1, 3, 5], [1, 3, 4]
    assert cohen_kappa(a, b, "linear", [1, 2, 3, 4, 5]) == pytest.approx(0.8)
    assert cohen_kappa(a, b, "quadratic", [1, 2, 3, 4, 5]) == pytest.approx(12 / 13)
    # observed labels {1,3,4,5} (positions 0..3, rows {0,1,3}, cols {0,1,2}):
    # linear sum 11 -> 11/3, quadratic 21 -> 7
    assert cohen_kappa(a, b, "linear") == pytest.approx(8 / 11)
    assert cohen_kappa(a, b, "linear", "observed") == pytest.approx(8 / 11)
    assert cohen_kappa(a, b, "quadratic") == pytest.approx(6 / 7)
    for labels, lin, quad in (([1, 2, 3, 4, 5], 0.8, 12 / 13), ("observed", 8 / 11, 6 / 7)):
        assert pairwise_kappa({"x": a, "y": b}, "linear", labels, iters=20)[("x", "y")].value == pytest.approx(lin)
        assert pairwise_kappa({"x": a, "y": b}, "quadratic", labels, iters=20)[("x", "y")].value == pytest.approx(quad)


# Three judges, eight items; j1 skipped item 7 and j2 item 6, so items 0-5
# are the ones every judge rated.  ANCHOR's upstream (likert_score_analysis.py)
# keeps those six for every pair: j0~j1 = j0~j2 = 19/28 (sum w*O = 3,
# sum w*E = 28/3), j1~j2 = 1 -> mean 11/14 = 0.786.  avhb's pairwise default
# scores each pair on the items it shares (7, 7, 6): 8/11, 8/11, 1 -> 9/11 =
# 0.818.  Every value 1..5 is used, so the label choice does not move it.
THREE = {"j0": [3, 1, 3, 5, 2, 1, 1, 1], "j1": [3, 1, 4, 5, 3, 2, 1, None], "j2": [3, 1, 4, 5, 3, 2, None, 1]}


def _records(table):
    names = list(table)
    out = []
    for i in range(len(table[names[0]])):
        r = SampleRecord(id=str(i), doc={})
        r.judgements["halluc"] = {"per_judge": [table[n][i] for n in names]}
        out.append(r)
    return out


def test_three_judge_kappa_under_both_definitions():
    upstream = JudgeAgreement(source="halluc", judges=list(THREE), items="all_rated", labels="observed",
                              bootstrap_iters=50).aggregate(_records(THREE))
    assert upstream["agreement"].value == pytest.approx(11 / 14) and round(upstream["agreement"].value, 3) == 0.786
    assert upstream["agreement"].n == 6
    assert upstream["agreement_kappa_linear_j0_j1"].value == pytest.approx(19 / 28)
    assert upstream["agreement_kappa_linear_j0_j1"].n == 6
    assert upstream["agreement_kappa_linear_j1_j2"].value == pytest.approx(1.0)
    assert upstream["agreement_kappa_quadratic"].value == pytest.approx(21 / 23)
    ours = JudgeAgreement(source="halluc", judges=list(THREE), labels="scale", bootstrap_iters=50).aggregate(
        _records(THREE))
    assert ours["agreement"].value == pytest.approx(9 / 11) and round(ours["agreement"].value, 3) == 0.818
    assert ours["agreement_kappa_linear_j0_j1"].value == pytest.approx(8 / 11)
    assert ours["agreement_kappa_linear_j0_j1"].n == 7 and ours["agreement"].n == 8
    assert ours["agreement_kappa_quadratic"].value == pytest.approx(183 / 197)
    # the default (labels observed over the panel) is unchanged: here the same as the scale
    default = JudgeAgreement(source="halluc", judges=list(THREE), bootstrap_iters=50).aggregate(_records(THREE))
    assert default["agreement"].value == pytest.approx(9 / 11)
    # Fleiss' kappa always uses the items every judge rated
    assert upstream["agreement_fleiss"].value == pytest.approx(ours["agreement_fleiss"].value)
    assert upstream["agreement_fleiss"].n == 6


def test_agreement_labels_change_the_kappa_and_bad_options_fail():
    table = {"a": [1, 3, 5, 1, 3], "b": [1, 3, 4, 1, 3]}
    scale = JudgeAgreement(source="halluc", labels="scale", bootstrap_iters=20).aggregate(_records(table))
    observed = JudgeAgreement(source="halluc", labels="observed", bootstrap_iters=20).aggregate(_records(table))
    assert scale["agreement"].value == pytest.approx(cohen_kappa(table["a"], table["b"], "linear", [1, 2, 3, 4, 5]))
    assert observed["agreement"].value == pytest.approx(cohen_kappa(table["a"], table["b"], "linear"))
    assert scale["agreement"].value != pytest.approx(observed["agreement"].value)
    narrow = JudgeAgreement(source="halluc", labels="scale", scale=[1, 7], bootstrap_iters=20).aggregate(_records(table))
    assert narrow["agreement"].value == pytest.approx(cohen_kappa(table["a"], table["b"], "linear", list(range(1, 8))))
    with pytest.raises(ValueError):
        JudgeAgreement(source="halluc", labels="panel").aggregate(_records(table))
    with pytest.raises(ValueError):
        JudgeAgreement(source="halluc", items="some").aggregate(_records(table))


# Items rated (j0, j1, j2): i0 (3, 4, 2), i1 (5, 5, -), i2 (1, -, 1).
# Pairwise, labels 1..5: j0~j1 on i0, i1 = (3,4), (5,5): sum w*O = 1,
# sum w*E = 2 -> 1/2; j0~j2 on i0, i2 = (3,2), (1,1): likewise 1/2; j1~j2
# share i0 alone, whose one differing pair would give kappa 0.0: skipped.
# Mean 1/2 (a silent 0.0 made it 1/3).  All-rated: i0 alone for every
# pair -> every pair skipped, no kappa at all (was 0.0).
SPARSE = {"j0": [3, 5, 1], "j1": [4, 5, None], "j2": [2, None, 1]}


def test_a_pair_with_fewer_than_two_items_is_skipped_and_counted():
    ours = JudgeAgreement(source="halluc", judges=list(SPARSE), labels="scale", bootstrap_iters=20).aggregate(
        _records(SPARSE))
    assert ours["agreement_kappa_linear_j0_j1"].value == pytest.approx(0.5)
    assert ours["agreement_kappa_linear_j0_j2"].value == pytest.approx(0.5)
    assert ours["agreement_kappa_linear_j1_j2"].value is None and ours["agreement_kappa_linear_j1_j2"].n == 1
    assert ours["agreement_kappa_quadratic_j1_j2"].value is None
    assert ours["agreement"].value == pytest.approx(0.5)
    assert ours["agreement_skipped_pairs"].value == 1 and ours["agreement_skipped_pairs"].n == 3
    upstream = JudgeAgreement(source="halluc", judges=list(SPARSE), items="all_rated", labels="observed",
                              bootstrap_iters=20).aggregate(_records(SPARSE))
    assert all(upstream[f"agreement_kappa_linear_{p}"].value is None for p in ("j0_j1", "j0_j2", "j1_j2"))
    assert upstream["agreement"].value is None and upstream["agreement_kappa_quadratic"].value is None
    assert upstream["agreement_skipped_pairs"].value == 3
    # a count: written as an integer column, described
    m = JudgeAgreement(source="halluc")
    assert m.describe("agreement_skipped_pairs").kind == "count"
    # no variation is skipped (and counted) too
    flat = JudgeAgreement(source="halluc", bootstrap_iters=20).aggregate(_records({"a": [3, 3], "b": [3, 3]}))
    assert flat["agreement"].value is None and flat["agreement_skipped_pairs"].value == 1
