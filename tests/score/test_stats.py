"""Each estimator of avhb.score.stats against an independent implementation:
the cluster-robust standard error against statsmodels' OLS on a constant
(cov_type="cluster", its G/(G-1) correction), Wilson against
statsmodels' proportion_confint, McNemar against scipy's binomtest on the
discordant pairs (and statsmodels' mcnemar), the paired t against
scipy's ttest_rel, the clustered paired t against statsmodels' t
inference, Holm against statsmodels' multipletests, the minimum detectable
difference against statsmodels' NormalIndPower."""
import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_confint

from avhb.score.stats import (CLUSTER_PAIRED_T, MCNEMAR, PAIRED_T, UNPAIRED_Z, ClusterSums, RepeatsEffect,
                              cluster_se, effective_n, holm, mde, paired_test, plain_se, predicted_power,
                              unpaired_test, wilson, within_item_variance)


def _statsmodels_cluster(y, groups, use_t=False):
    return sm.OLS(np.asarray(y, float), np.ones((len(y), 1))).fit(
        cov_type="cluster", cov_kwds={"groups": np.asarray(groups)}, use_t=use_t)


@pytest.mark.parametrize("seed", range(6))
def test_cluster_se_is_statsmodels_cluster_robust_with_its_correction(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    groups = rng.integers(0, int(rng.integers(3, 40)), size=n)  # unequal cluster sizes
    y = rng.normal(size=n) + rng.normal(size=groups.max() + 1)[groups]
    if seed % 2:
        y = (y > 0).astype(float)  # a 0/1 metric
    se, g = cluster_se(list(y), list(groups))
    fit = _statsmodels_cluster(y, groups)
    assert g == len(set(groups.tolist()))
    assert se == pytest.approx(float(fit.bse[0]), rel=1e-10)
    # the one-pass sums give the same number, read in any order
    sums = ClusterSums()
    for i in rng.permutation(n):
        sums.add(float(y[i]), int(groups[i]))
    assert sums.stderr() == pytest.approx(se, rel=1e-10) and sums.count == g


def test_singleton_clusters_give_the_plain_standard_error():
    y = [0.0, 1.0, 1.0, 0.5, 0.25, 1.0, 0.0]
    se, g = cluster_se(y, list(range(len(y))))
    assert g == len(y) and se == pytest.approx(plain_se(y), rel=1e-12)
    assert se == pytest.approx(float(np.std(y, ddof=1) / math.sqrt(len(y))), rel=1e-12)


def test_cluster_se_needs_two_clusters_and_matching_lengths():
    assert cluster_se([1.0, 0.0, 1.0], ["a", "a", "a"]) == (None, 1)
    with pytest.raises(ValueError):
        cluster_se([1.0, 0.0], ["a"])


@pytest.mark.parametrize("k,n", [(0, 5), (5, 5), (1, 3), (17, 40), (299, 300), (0, 1000), (412, 1000)])
def test_wilson_is_statsmodels_proportion_confint(k, n):
    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    ours = wilson(k / n, n)
    assert ours == pytest.approx((lo, hi), abs=1e-12)
    assert 0.0 <= ours[0] <= ours[1] <= 1.0


def test_wilson_at_an_effective_size():
    p, se = 0.8, 0.05  # a clustered rate: the variance of 64 independent samples
    n_eff = effective_n(p, se, fallback=300)
    assert n_eff == pytest.approx(64.0)
    assert wilson(p, n_eff) == pytest.approx(proportion_confint(p * n_eff, n_eff, method="wilson"), abs=1e-12)
    assert effective_n(1.0, 0.0, fallback=12) == 12 and effective_n(0.3, None, fallback=7) == 7


def _binary_pairs(seed, n=300):
    rng = np.random.default_rng(seed)
    base = rng.random(n) < 0.6
    fixes = 0.05 * seed  # the run gets more wrong answers right than the other way (seed 0: as many)
    run = np.where(rng.random(n) < 0.1 + np.where(base, 0.0, fixes), ~base, base)
    return run.astype(float).tolist(), base.astype(float).tolist()


@pytest.mark.parametrize("seed", range(5))
def test_mcnemar_is_the_exact_binomial_test_on_the_discordant_pairs(seed):
    run, base = _binary_pairs(seed)
    t = paired_test(run, base)
    up = sum(1 for a, b in zip(run, base) if a == 1 and b == 0)
    down = sum(1 for a, b in zip(run, base) if a == 0 and b == 1)
    assert t.method == MCNEMAR and t.discordant == (up, down)
    assert t.p == pytest.approx(sps.binomtest(up, up + down, 0.5).pvalue, rel=1e-12)
    table = [[sum(1 for a, b in zip(run, base) if a == i and b == j) for j in (1, 0)] for i in (1, 0)]
    assert t.p == pytest.approx(sm_mcnemar(table, exact=True).pvalue, rel=1e-9)
    assert t.difference == pytest.approx((up - down) / len(run))


def test_mcnemar_without_discordant_pairs_is_p_one():
    t = paired_test([1.0, 0.0, 1.0], [1.0, 0.0, 1.0])
    assert t.method == MCNEMAR and t.p == 1.0 and t.difference == 0.0


@pytest.mark.parametrize("seed", range(5))
def test_paired_t_is_scipy_ttest_rel(seed):
    rng = np.random.default_rng(seed)
    base = rng.random(120)
    run = np.clip(base + rng.normal(0.03, 0.2, size=120), 0, 1)
    t = paired_test(run.tolist(), base.tolist())
    ref = sps.ttest_rel(run, base)
    assert t.method == PAIRED_T and t.df == 119
    assert t.p == pytest.approx(ref.pvalue, rel=1e-9)
    assert t.difference / t.stderr == pytest.approx(ref.statistic, rel=1e-10)
    ci = ref.confidence_interval(0.95)
    assert t.ci == pytest.approx((ci.low, ci.high), rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_clustered_paired_t_is_statsmodels_t_inference_on_the_differences(seed):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 25, size=200)
    shared = rng.normal(size=25)[groups]
    base = (shared + rng.normal(size=200) > 0).astype(float)
    run = (shared + 0.3 + rng.normal(size=200) > 0).astype(float)  # 0/1, but clustered: no McNemar
    t = paired_test(run.tolist(), base.tolist(), groups.tolist())
    fit = _statsmodels_cluster(run - base, groups, use_t=True)
    assert t.method == CLUSTER_PAIRED_T and t.clusters == len(set(groups.tolist())) == t.df + 1
    assert t.stderr == pytest.approx(float(fit.bse[0]), rel=1e-10)
    assert t.p == pytest.approx(float(fit.pvalues[0]), rel=1e-9)
    assert t.ci == pytest.approx(tuple(fit.conf_int()[0]), rel=1e-9)


def test_paired_test_edges():
    assert paired_test([1.0], [0.0]) is None  # one pair
    assert paired_test([1.0, 0.0], [1.0, 0.0], ["a", "a"]) is None  # one cluster
    same = paired_test([1.5, 2.5, 3.5], [1.0, 2.0, 3.0])  # every difference 0.5: no spread
    assert same.method == PAIRED_T and same.stderr == 0.0 and same.p == 0.0
    assert paired_test([1.5, 2.5], [1.5, 2.5]).p == 1.0
    with pytest.raises(ValueError):
        paired_test([1.0, 0.0], [1.0])


def test_unpaired_z():
    t = unpaired_test(0.55, 0.03, 0.50, 0.04)
    assert t.method == UNPAIRED_Z and t.stderr == pytest.approx(0.05)
    assert t.p == pytest.approx(2 * sps.norm.sf(1.0), rel=1e-12)
    assert unpaired_test(0.5, None, 0.4, 0.1) is None


@pytest.mark.parametrize("seed", range(3))
def test_holm_is_statsmodels_multipletests(seed):
    ps = np.random.default_rng(seed).random(12) ** 3
    ours = holm(list(ps))
    assert ours == pytest.approx(list(multipletests(ps, method="holm")[1]), rel=1e-12)
    with_gaps = holm([0.01, None, 0.04, None, 0.03])
    ref = multipletests([0.01, 0.04, 0.03], method="holm")[1]
    assert with_gaps[1] is None and with_gaps[3] is None
    assert [with_gaps[0], with_gaps[2], with_gaps[4]] == pytest.approx(list(ref))


def test_mde_is_the_difference_a_z_test_detects_at_80_percent():
    sd, n = 0.48, 300
    es = NormalIndPower().solve_power(effect_size=None, nobs1=n, alpha=0.05, power=0.8, ratio=0)
    assert mde(sd / math.sqrt(n)) == pytest.approx(es * sd, rel=1e-3)  # statsmodels counts the other tail too
    assert predicted_power(mde(0.02), 0.02) == pytest.approx(0.8, abs=1e-3)


def test_repeats_effect_splits_within_and_across_item_variance():
    rng = np.random.default_rng(3)
    items, k = 400, 4
    ability = rng.random(items)
    scores = (rng.random((items, k)) < ability[:, None]).astype(float)
    within, used = within_item_variance((k, row.sum(), (row ** 2).sum()) for row in scores)
    assert used == items and within == pytest.approx(float(np.var(scores, axis=1, ddof=1).mean()), rel=1e-12)
    se = float(np.std(scores.mean(axis=1), ddof=1) / math.sqrt(items))  # the item-level standard error
    effect = RepeatsEffect(k, items, within, se)
    assert effect.se_at(k) == pytest.approx(se)
    assert effect.se_at(1) > effect.se_at(k) > effect.se_at(math.inf) > 0
    across = se ** 2 - within / (k * items)
    assert effect.se_at(math.inf) == pytest.approx(math.sqrt(across))
    assert effect.within_share == pytest.approx(within / (k * items) / se ** 2)


def test_scipy_is_loaded_by_a_comparison_only():
    """A run's summary, the report and `avhb list` never import scipy (its
    import costs a run time and memory); `paired_test` does, when called."""
    import subprocess
    import sys

    code = ("import sys; import avhb.score.stats, avhb.score.uncertainty, avhb.run.score_phase, avhb.runfolder.results, "
            "avhb.report.html, avhb.report.compare; from avhb.cli import main; main(['list', 'tasks']); "
            "print('SCIPY', 'scipy' in sys.modules); avhb.score.stats.paired_test([1.0, 0.0], [0.0, 0.0]); "
            "print('AFTER', 'scipy' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "SCIPY False" in proc.stdout and "AFTER True" in proc.stdout, proc.stdout[-500:] + proc.stderr[-500:]
