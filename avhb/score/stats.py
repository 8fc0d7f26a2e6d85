"""The estimators behind every interval and test avhb reports
(docs/statistics.md has the formulas and their sources).

* :func:`cluster_se` — the cluster-robust standard error of a mean
  (Miller 2024, arXiv 2411.00640, eq. 4) with the small-sample factor
  ``G / (G - 1)`` (CR1, statsmodels' ``cov_type="cluster"``): with every
  sample its own cluster it equals the plain ``s / sqrt(n)``;
* :func:`wilson` — the Wilson score interval of a rate (stays inside
  [0, 1]); :func:`normal_interval` — ``value ± z · se``;
* :func:`paired_test` — two runs' scores on the same samples: McNemar's
  exact test for 0/1 scores (independent pairs), else a paired t test on
  the differences (clustered: the cluster-robust standard error of the
  differences, ``G - 1`` degrees of freedom);
* :func:`unpaired_test` — two aggregates without per-sample scores: a z
  test on their standard errors;
* :func:`holm` — Holm's step-down adjustment of a family of p-values;
* :func:`mde` — the minimum detectable difference of a two-sided test at
  a given power, ``(z_{1-α/2} + z_{power}) · se_diff``.

Quantiles of the normal distribution come from the standard library
(``statistics.NormalDist``); the t distribution and the exact binomial
test from scipy, imported when a test is made (never at import: a run,
``avhb list`` and the report's tables do not load it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Hashable, Iterable, Sequence

ALPHA = 0.05  # two-sided level of every interval and test
POWER = 0.80  # the power minimum detectable differences are stated at
_NORMAL = NormalDist()


def z_quantile(p: float) -> float:
    """The standard normal quantile (``z_quantile(0.975)`` = 1.95996...)."""
    return _NORMAL.inv_cdf(p)


Z95 = z_quantile(1 - ALPHA / 2)


# ------------------------------------------------------------ standard errors


@dataclass
class ClusterSums:
    """What the cluster-robust standard error of a mean needs, gathered in
    one pass without holding the values: the count, the sum, and per
    cluster its count and sum."""

    n: int = 0
    total: float = 0.0
    clusters: dict[Hashable, list[float]] | None = None  # cluster -> [count, sum]

    def add(self, value: float, cluster: Hashable) -> None:
        self.n += 1
        self.total += value
        if self.clusters is None:
            self.clusters = {}
        cell = self.clusters.get(cluster)
        if cell is None:
            self.clusters[cluster] = [1.0, value]
        else:
            cell[0] += 1.0
            cell[1] += value

    @property
    def count(self) -> int:
        """Clusters seen."""
        return len(self.clusters or {})

    def stderr(self, scale: float = 1.0) -> float | None:
        """sqrt(G / (G - 1) · Σ_c (Σ_{i∈c} (x_i − x̄))²) / n, times
        ``scale``; None with fewer than two clusters."""
        g = self.count
        if g < 2 or self.n == 0:
            return None
        mean = self.total / self.n
        squares = math.fsum((s - c * mean) ** 2 for c, s in (self.clusters or {}).values())
        return scale * math.sqrt(g / (g - 1) * squares) / self.n


def cluster_se(values: Sequence[float], clusters: Sequence[Hashable]) -> tuple[float | None, int]:
    """(cluster-robust standard error of the mean of ``values``, number of
    clusters): :class:`ClusterSums` over the two sequences."""
    if len(values) != len(clusters):
        raise ValueError(f"cluster_se: {len(values)} values but {len(clusters)} cluster ids")
    sums = ClusterSums()
    for x, c in zip(values, clusters):
        sums.add(float(x), c)
    return sums.stderr(), sums.count


def plain_se(values: Sequence[float]) -> float | None:
    """The sample standard deviation over sqrt(n) (None below two values)."""
    n = len(values)
    if n < 2:
        return None
    mean = math.fsum(values) / n
    return math.sqrt(math.fsum((x - mean) ** 2 for x in values) / (n - 1) / n)


# ------------------------------------------------------------ intervals

WILSON = "wilson"  # a 0/1 rate without clusters: Wilson's interval of k successes in n
WILSON_EFFECTIVE = "wilson_effective_n"  # values in [0, 1]: Wilson at n_eff = p(1 - p) / se²
NORMAL = "normal"  # value ± z · se
INTERVALS = {
    WILSON: "Wilson score interval (a 0/1 rate: k of n)",
    WILSON_EFFECTIVE: "Wilson score interval at the effective sample size p(1 − p) / se² (scores in [0, 1]; "
                      "se clustered where there are clusters)",
    NORMAL: "value ± 1.96 × standard error (clustered where there are clusters)",
}
INTERVAL_LABELS = {  # the same, in the few words a metric's printed description ends with
    WILSON: "Wilson",
    WILSON_EFFECTIVE: "Wilson at the effective n",
    NORMAL: "± 1.96 se",
}


def wilson(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``p`` observed over ``n``
    (``n`` may be an effective, non-integer size); inside [0, 1]."""
    if n <= 0:
        raise ValueError("wilson: n must be positive")
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n + z2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def normal_interval(value: float, se: float, z: float = Z95) -> tuple[float, float]:
    return value - z * se, value + z * se


def effective_n(p: float, se: float | None, fallback: float) -> float:
    """p(1 − p) / se²: the sample size whose binomial variance is the
    observed one (``fallback`` when p is 0 or 1, or se is 0 or unknown)."""
    if se is None or se <= 0 or not 0 < p < 1:
        return fallback
    return p * (1 - p) / (se * se)


# ------------------------------------------------------------ tests

MCNEMAR = "mcnemar_exact"
PAIRED_T = "paired_t"
CLUSTER_PAIRED_T = "cluster_paired_t"
UNPAIRED_Z = "unpaired_z"
TESTS = {
    MCNEMAR: "McNemar's exact test (binomial on the discordant pairs); interval: difference ± 1.96 × paired se",
    PAIRED_T: "paired t test on the per-sample differences (n − 1 df)",
    CLUSTER_PAIRED_T: "paired t test with the cluster-robust se of the differences (G − 1 df)",
    UNPAIRED_Z: "z test on the two runs' standard errors (no per-sample scores to pair)",
}


@dataclass(frozen=True)
class Difference:
    """One comparison of a run against the baseline on one metric:
    ``difference`` = run − baseline."""

    method: str
    difference: float
    stderr: float | None
    ci: tuple[float, float] | None
    p: float | None
    n: int | None = None  # pairs
    clusters: int | None = None
    discordant: tuple[int, int] | None = None  # McNemar: (run 1 & baseline 0, run 0 & baseline 1)
    correlation: float | None = None  # of the two runs' per-sample scores
    df: float | None = None

    @property
    def mde(self) -> float | None:
        """The difference this comparison would detect with 80 % power."""
        return mde(self.stderr)


def mde(se: float | None, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """(z_{1-α/2} + z_{power}) · se: the true difference a two-sided test at
    level ``alpha`` detects with probability ``power`` (normal approximation)."""
    if se is None:
        return None
    return (z_quantile(1 - alpha / 2) + z_quantile(power)) * se


def predicted_power(difference: float, se: float, alpha: float = ALPHA) -> float:
    """The probability a two-sided test at ``alpha`` rejects when the true
    difference is ``difference`` and its estimate has standard error ``se``."""
    z = z_quantile(1 - alpha / 2)
    shift = abs(difference) / se
    return _NORMAL.cdf(shift - z) + _NORMAL.cdf(-shift - z)


def _correlation(a: Any, b: Any) -> float | None:
    """Pearson's correlation of two numpy arrays; None when either is constant."""
    da, db = a - a.mean(), b - b.mean()
    saa, sbb = float(da @ da), float(db @ db)
    if saa <= 0 or sbb <= 0:
        return None
    return float(da @ db) / math.sqrt(saa * sbb)


def paired_test(run: Sequence[float], baseline: Sequence[float], clusters: Sequence[Hashable] | None = None,
                alpha: float = ALPHA) -> Difference | None:
    """Compare two runs' scores on the same samples (``run[i]`` and
    ``baseline[i]`` score sample i; ``clusters[i]`` its cluster, or None:
    the pairs are independent).  0/1 scores without clusters: McNemar's
    exact test; otherwise a paired t test on the differences, with the
    cluster-robust standard error (:func:`cluster_se`'s formula) and G − 1
    degrees of freedom when clustered.  None with fewer than two pairs (or
    two clusters).  Computed over numpy arrays (a comparison reads every
    sample of both runs)."""
    import numpy as np
    from scipy import stats as sps  # the t distribution and the exact binomial test

    n = len(run)
    if n != len(baseline) or (clusters is not None and len(clusters) != n):
        raise ValueError("paired_test: the runs' scores (and the clusters) must be the same length")
    if n < 2:
        return None
    a, b = np.asarray(run, dtype=float), np.asarray(baseline, dtype=float)
    diffs = a - b
    d = float(diffs.mean())
    rho = _correlation(a, b)
    if clusters is None and bool(np.all((a == 0) | (a == 1))) and bool(np.all((b == 0) | (b == 1))):
        up, down = int(np.count_nonzero(diffs == 1.0)), int(np.count_nonzero(diffs == -1.0))
        # the exact binomial test of up successes in up + down at 1/2, two-sided: symmetric, so twice the
        # smaller tail (scipy's binomtest gives the same number, more slowly)
        p = 1.0 if up + down == 0 else float(2 * sps.binom.cdf(min(up, down), up + down, 0.5))
        se = float(diffs.std(ddof=1) / math.sqrt(n))
        z = z_quantile(1 - alpha / 2)
        return Difference(MCNEMAR, d, se, (d - z * se, d + z * se), min(p, 1.0), n, None, (up, down), rho)
    g: int | None
    if clusters is None:
        se, g, df, method = float(diffs.std(ddof=1) / math.sqrt(n)), None, float(n - 1), PAIRED_T
    else:
        index: dict[Hashable, int] = {}
        ids = np.fromiter((index.setdefault(c, len(index)) for c in clusters), dtype=np.int64, count=n)
        g = len(index)
        if g < 2:
            return None
        sums = np.bincount(ids, weights=diffs - d, minlength=g)
        se = math.sqrt(g / (g - 1) * float(np.dot(sums, sums))) / n
        df, method = float(g - 1), CLUSTER_PAIRED_T
    if se == 0.0:
        p = 1.0 if d == 0.0 else 0.0
    else:
        p = float(2 * sps.t.sf(abs(d / se), df))
    q = float(sps.t.ppf(1 - alpha / 2, df))
    return Difference(method, d, se, (d - q * se, d + q * se), p, n, g, None, rho, df)


def unpaired_test(run_value: float, run_se: float | None, base_value: float, base_se: float | None,
                  alpha: float = ALPHA) -> Difference | None:
    """Two aggregates compared through their standard errors alone (no
    per-sample scores): z = (a − b) / sqrt(se_a² + se_b²).  Runs scored on
    the same samples are usually positively correlated, so this is
    conservative there.  None without both standard errors."""
    if run_se is None or base_se is None:
        return None
    d = run_value - base_value
    se = math.sqrt(run_se ** 2 + base_se ** 2)
    if se == 0.0:
        p = 1.0 if d == 0.0 else 0.0
    else:
        p = 2 * _NORMAL.cdf(-abs(d) / se)
    z = z_quantile(1 - alpha / 2)
    return Difference(UNPAIRED_Z, d, se, (d - z * se, d + z * se), p)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (None entries are left out of the
    family and stay None): the i-th smallest of m becomes
    max_{j<=i} min(1, (m − j + 1) p_(j))."""
    present = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(present)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


# ------------------------------------------------------------ repeats


@dataclass(frozen=True)
class RepeatsEffect:
    """How ``--repeats`` moves a mean's standard error (Miller 2024, §4:
    resampling each item K times shrinks the within-item part of the
    variance by K; the across-item part does not move).

    ``within`` is the mean within-item variance of the scores (over items
    scored at least twice), ``repeats`` the mean scored repeats per item,
    ``items`` the items; the estimate's variance now is ``se²``, of which
    ``within / (repeats · items)`` is the within-item part."""

    repeats: float
    items: int
    within: float
    se: float

    @property
    def within_share(self) -> float:
        """The within-item part's share of the estimate's variance now."""
        if self.se <= 0:
            return 0.0
        return min(1.0, self.within / (self.repeats * self.items) / (self.se * self.se))

    def se_at(self, k: float) -> float:
        """The standard error with ``k`` repeats per item (``math.inf``: the
        across-item part alone)."""
        across = max(self.se * self.se - self.within / (self.repeats * self.items), 0.0)
        part = 0.0 if math.isinf(k) else self.within / (k * self.items)
        return math.sqrt(across + part)


def within_item_variance(items: Iterable[tuple[float, float, float]]) -> tuple[float | None, int]:
    """(the mean within-item sample variance, items used) from each item's
    (count, sum, sum of squares) of its repeats' scores; items scored once
    are left out.  None when none was scored twice."""
    total, used = 0.0, 0
    for count, s, ss in items:
        if count >= 2:
            total += max(ss - s * s / count, 0.0) / (count - 1)
            used += 1
    return (total / used if used else None), used


def as_float(value: Any) -> float | None:
    """A per-sample score as a number (a bool as 0/1); None for anything else."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        x = float(value)
        return None if math.isnan(x) else x
    return None
