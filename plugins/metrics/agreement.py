"""Inter-judge agreement: weighted Cohen's kappa per judge pair, Fleiss'
kappa and Krippendorff's alpha.

Definitions
-----------
Cohen's kappa of raters a, b over the items both rated, with categories
``labels`` (sorted; default the sorted union of observed values): O = the
K×K confusion matrix, E = outer(row sums, column sums) / n, weights on
category *positions* i, j: none ``1[i≠j]``, linear ``|i−j|``, quadratic
``(i−j)²``; kappa = 1 − Σ w·O / Σ w·E (as scikit-learn's
``cohen_kappa_score``).  Undefined (None) when Σ w·E = 0 or no item was
rated by both.  Pass the full scale as ``labels`` (e.g. 1..5) so an unused
category still counts in the weights.

Fleiss' kappa over the items rated by *every* rater (m >= 2 raters, N
such items; items with a missing rating are left out): n_ij = number of
raters who put item i in category j; P_i = (Σ_j n_ij² − m) / (m(m − 1));
P̄ = mean_i P_i; p_j = Σ_i n_ij / (N·m); P̄_e = Σ_j p_j²;
kappa = (P̄ − P̄_e) / (1 − P̄_e) (Fleiss 1971, as statsmodels'
``fleiss_kappa``).  Unweighted (categories are nominal).  Undefined (None)
when N = 0 or P̄_e = 1 (every rating in one category).

Krippendorff's alpha over a raters × units table with missing ratings
(None or NaN): units with fewer than 2 ratings are dropped; coincidences
o_ck = Σ_u (number of ordered pairs of ratings (c, k) from different raters
in u) / (m_u − 1); n_c = Σ_k o_ck, n = Σ_c n_c;
alpha = 1 − (n − 1)·Σ o_ck δ²_ck / Σ n_c n_k δ²_ck, with
δ²_ck = (c − k)² (interval), (Σ_{g=c..k} n_g − (n_c + n_k)/2)² over the
sorted values (ordinal), 1[c≠k] (nominal).  Undefined (None) when the
expected disagreement is 0.

Two choices change kappa on the same ratings (options of
:class:`JudgeAgreement` and of the kappa functions):

* **items** — ``pairwise`` (default): each pair of raters over the items
  both rated; ``all_rated``: only the items *every* rater rated, the same
  items for every pair (ANCHOR's ``likert_score_analysis.py`` aligns the
  judges on the intersection of their items first).
* **labels** (the categories the weights are laid on) — a list: that fixed
  scale; ``scale``: the integers of the ``scale`` option, default 1..5;
  ``observed``: each pair's own observed values on its items (what
  scikit-learn's ``cohen_kappa_score`` does without ``labels``, so
  upstream's numbers); unset: the values observed over the whole panel,
  fixed for every pair.  Weights sit on label *positions*: ratings 1, 3, 4,
  5 observed alone put 3 and 4 one step apart but 1 and 3 one step apart
  too, so ``observed`` and ``scale`` differ whenever a value of the scale
  goes unused.  E.g. raters [1, 3, 5] and [1, 3, 4]: linear kappa 0.8 on
  the scale 1..5, 8/11 on the observed labels {1, 3, 4, 5}.

A pair scored on fewer than ``MIN_PAIR_ITEMS`` (2) items is **skipped**:
its kappa is undefined (None), not the 0.0 that one item gives whenever the
two ratings differ (ANCHOR's upstream script skips such a pair).  Pairs
whose kappa is undefined (skipped, or no variation: Σ w·E = 0) are left out
of the mean (upstream's mean would turn NaN) and counted in
``<name>_skipped_pairs``.

Standard errors are bootstrapped over items.

Private to avhb: a pack imports what it builds on from ``avhb.plugins.metrics``
(its package-level names); importing this module from outside avhb is
deprecated (it still works, but its layout may change).
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Mapping, Sequence

import numpy as np

from avhb import COUNT, DIAGNOSTIC, Aggregate, Metric, SampleRecord, ScoreContext, bootstrap_stderr
from avhb.score.metric_helpers import count


WEIGHTS = (None, "linear", "quadratic")
LEVELS = ("nominal", "ordinal", "interval")
ITEMS = ("pairwise", "all_rated")
OBSERVED = "observed"  # labels: each pair's own observed values
MIN_PAIR_ITEMS = 2  # a pair rated together on fewer items is skipped (module docstring)


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _weights(k: int, weights: str | None) -> np.ndarray:
    idx = np.arange(k)
    diff = np.abs(idx[:, None] - idx[None, :]).astype(float)
    if weights is None:
        return (diff > 0).astype(float)
    if weights == "linear":
        return diff
    if weights == "quadratic":
        return diff ** 2
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', not {weights!r}")


def _kappa_from_codes(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> float | None:
    k = w.shape[0]
    if a.size == 0:
        return None
    conf = np.bincount(a * k + b, minlength=k * k).reshape(k, k).astype(float)
    expected = np.outer(conf.sum(axis=1), conf.sum(axis=0)) / conf.sum()
    denom = float((w * expected).sum())
    if denom == 0:
        return None
    return 1.0 - float((w * conf).sum()) / denom


def _codes(a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any] | None) -> tuple[np.ndarray, np.ndarray, int]:
    if len(a) != len(b):
        raise ValueError("rating lists differ in length")
    both = [(x, y) for x, y in zip(a, b) if not _missing(x) and not _missing(y)]
    labs = sorted(set(labels)) if labels is not None else sorted({v for p in both for v in p})
    index = {v: i for i, v in enumerate(labs)}
    try:
        ca = np.array([index[x] for x, _ in both], dtype=int)
        cb = np.array([index[y] for _, y in both], dtype=int)
    except KeyError as exc:
        raise ValueError(f"rating {exc.args[0]!r} is not among the labels {labs}") from None
    return ca, cb, len(labs)


def cohen_kappa(a: Sequence[Any], b: Sequence[Any], weights: str | None = None,
                labels: Sequence[Any] | str | None = None) -> float | None:
    """Weighted Cohen's kappa over items rated by both (see module
    docstring); ``labels`` None or ``"observed"``: the pair's own values."""
    ca, cb, k = _codes(a, b, None if labels == OBSERVED else labels)
    return _kappa_from_codes(ca, cb, _weights(max(k, 1), weights))


def _code_matrix(ratings: Mapping[str, Sequence[Any]], labels: Sequence[Any] | None) -> tuple[np.ndarray, int]:
    """raters × items matrix of label positions, -1 where missing."""
    cols = list(ratings.values())
    if len({len(c) for c in cols}) > 1:
        raise ValueError("rating lists differ in length")
    labs = sorted(set(labels)) if labels is not None else sorted({v for c in cols for v in c if not _missing(v)})
    index = {v: i for i, v in enumerate(labs)}
    try:
        codes = np.array([[-1 if _missing(v) else index[v] for v in c] for c in cols], dtype=int).reshape(len(cols), -1)
    except KeyError as exc:
        raise ValueError(f"rating {exc.args[0]!r} is not among the labels {labs}") from None
    return codes, max(len(labs), 1)


class _Weights:
    """Weight matrices by number of categories (``observed`` labels give
    each pair, and each bootstrap draw, its own count)."""

    def __init__(self, weights: str | None, k: int, observed: bool):
        self.weights, self.k, self.observed = weights, k, observed
        self._cache: dict[int, np.ndarray] = {}

    def kappa(self, a: np.ndarray, b: np.ndarray) -> float | None:
        k = self.k
        if self.observed and a.size:
            present = np.unique(np.concatenate([a, b]))
            a, b, k = np.searchsorted(present, a), np.searchsorted(present, b), len(present)
        if k not in self._cache:
            self._cache[k] = _weights(max(k, 1), self.weights)
        return _kappa_from_codes(a, b, self._cache[k])


def _pair_kappa(codes: np.ndarray, i: int, j: int, w: _Weights, idx: np.ndarray | None = None) -> float | None:
    a, b = (codes[i], codes[j]) if idx is None else (codes[i, idx], codes[j, idx])
    both = (a >= 0) & (b >= 0)
    if int(both.sum()) < MIN_PAIR_ITEMS:
        return None
    return w.kappa(a[both], b[both])


def _mean_pairs(codes: np.ndarray, w: _Weights, idx: np.ndarray | None = None) -> float | None:
    pairs = (_pair_kappa(codes, i, j, w, idx) for i, j in itertools.combinations(range(codes.shape[0]), 2))
    ks = [k for k in pairs if k is not None]
    return sum(ks) / len(ks) if ks else None


def _prepared(ratings: Mapping[str, Sequence[Any]], weights: str | None, labels: Sequence[Any] | str | None,
              items: str) -> tuple[np.ndarray, _Weights]:
    """The raters x items code matrix (-1 = missing; only the items every
    rater rated under ``items="all_rated"``) and the weights."""
    if items not in ITEMS:
        raise ValueError(f"items must be one of {ITEMS}, not {items!r}")
    observed = labels == OBSERVED
    if isinstance(labels, str) and not observed:
        raise ValueError(f"labels must be a list of categories, {OBSERVED!r} or None, not {labels!r}")
    codes, k = _code_matrix(ratings, None if observed else labels)
    if items == "all_rated":
        codes = codes[:, (codes >= 0).all(axis=0)]
    return codes, _Weights(weights, k, observed)


def pairwise_kappa(ratings: Mapping[str, Sequence[Any]], weights: str | None = "linear",
                   labels: Sequence[Any] | str | None = None, iters: int = 1000,
                   items: str = "pairwise") -> dict[tuple[str, str], Aggregate]:
    """Kappa with a bootstrap standard error (over items) for each pair of
    raters; ``n`` = the items the pair is scored on.  ``labels``: a list, or
    ``"observed"`` (each pair's own values); None = the values observed
    across all raters.  ``items``: ``pairwise`` or ``all_rated`` (module
    docstring)."""
    codes, w = _prepared(ratings, weights, labels, items)
    names = list(ratings)
    out = {}
    for i, j in itertools.combinations(range(len(names)), 2):
        scored = np.flatnonzero((codes[i] >= 0) & (codes[j] >= 0)).tolist()

        def stat(sample: Sequence[int], i: int = i, j: int = j) -> float | None:
            return _pair_kappa(codes, i, j, w, np.asarray(sample, dtype=int))

        out[(names[i], names[j])] = Aggregate(_pair_kappa(codes, i, j, w), bootstrap_stderr(scored, stat, iters=iters),
                                              len(scored))
    return out


def mean_pairwise_kappa(ratings: Mapping[str, Sequence[Any]], weights: str | None = "linear",
                        labels: Sequence[Any] | str | None = None, iters: int = 1000,
                        items: str = "pairwise") -> Aggregate:
    """Mean of the defined pairwise kappas, bootstrap stderr over items;
    ``n`` = items rated by at least two raters (``pairwise``) or by all
    (``all_rated``)."""
    codes, w = _prepared(ratings, weights, labels, items)
    scored = np.flatnonzero((codes >= 0).sum(axis=0) >= 2).tolist()

    def stat(sample: Sequence[int]) -> float | None:
        return _mean_pairs(codes, w, np.asarray(sample, dtype=int))

    return Aggregate(_mean_pairs(codes, w), bootstrap_stderr(scored, stat, iters=iters), len(scored))


def _value_counts(data: Sequence[Sequence[Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and the units × values count matrix of the
    pairable units (>= 2 ratings)."""
    n_raters = len(data)
    n_units = len(data[0]) if n_raters else 0
    if any(len(row) != n_units for row in data):
        raise ValueError("every rater row must cover the same units")
    columns = [[float(data[r][u]) for r in range(n_raters) if not _missing(data[r][u])] for u in range(n_units)]
    columns = [c for c in columns if len(c) >= 2]
    values = np.array(sorted({v for c in columns for v in c}), dtype=float)
    index = {v: i for i, v in enumerate(values.tolist())}
    counts = np.zeros((len(columns), len(values)))
    for u, col in enumerate(columns):
        for v in col:
            counts[u, index[v]] += 1
    return values, counts


def _alpha_from_counts(values: np.ndarray, counts: np.ndarray, level: str) -> float | None:
    if counts.shape[0] == 0:
        return None
    m = counts.sum(axis=1)
    scaled = counts / (m - 1)[:, None]
    o = counts.T @ scaled - np.diag(scaled.sum(axis=0))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if level == "interval":
        delta = (values[:, None] - values[None, :]) ** 2
    elif level == "nominal":
        delta = (values[:, None] != values[None, :]).astype(float)
    elif level == "ordinal":
        cum = np.concatenate([[0.0], np.cumsum(n_c)])
        i = np.arange(len(values))
        lo, hi = np.minimum(i[:, None], i[None, :]), np.maximum(i[:, None], i[None, :])
        delta = (cum[hi + 1] - cum[lo] - (n_c[:, None] + n_c[None, :]) / 2) ** 2
    else:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    expected = float((np.outer(n_c, n_c) * delta).sum())
    if expected == 0:
        return None
    return 1.0 - float((n - 1) * (o * delta).sum()) / expected


def krippendorff_alpha(data: Sequence[Sequence[Any]], level: str = "interval") -> float | None:
    """Alpha of a raters × units table (None/NaN = missing)."""
    values, counts = _value_counts(data)
    return _alpha_from_counts(values, counts, level)


def krippendorff_alpha_stderr(data: Sequence[Sequence[Any]], level: str = "interval", iters: int = 1000) -> Aggregate:
    """Alpha with a bootstrap standard error over units; ``n`` = pairable units."""
    values, counts = _value_counts(data)
    rows = list(range(counts.shape[0]))

    def stat(sample: Sequence[int]) -> float | None:
        sub = counts[np.asarray(sample, dtype=int)]
        keep = sub.sum(axis=0) > 0
        return _alpha_from_counts(values[keep], sub[:, keep], level)

    return Aggregate(_alpha_from_counts(values, counts, level), bootstrap_stderr(rows, stat, iters=iters), len(rows))


def fleiss_kappa_counts(table: Any) -> float | None:
    """Fleiss' kappa of an items × categories count table in which every
    row sums to the same number of raters m >= 2."""
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or t.shape[0] == 0:
        return None
    m = t.sum(axis=1)
    if not np.all(m == m[0]):
        raise ValueError("every item needs the same number of ratings")
    m0 = float(m[0])
    if m0 < 2:
        return None
    p_i = ((t ** 2).sum(axis=1) - m0) / (m0 * (m0 - 1))
    p_j = t.sum(axis=0) / (t.shape[0] * m0)
    p_bar, p_e = float(p_i.mean()), float((p_j ** 2).sum())
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def _fleiss_table(data: Sequence[Sequence[Any]]) -> np.ndarray:
    """items × categories counts of the items every rater rated."""
    n_raters = len(data)
    n_items = len(data[0]) if n_raters else 0
    if any(len(row) != n_items for row in data):
        raise ValueError("every rater row must cover the same items")
    items = [[data[r][u] for r in range(n_raters)] for u in range(n_items)]
    items = [col for col in items if not any(_missing(v) for v in col)]
    labs = sorted({v for col in items for v in col})
    index = {v: i for i, v in enumerate(labs)}
    table = np.zeros((len(items), len(labs)))
    for u, col in enumerate(items):
        for v in col:
            table[u, index[v]] += 1
    return table


def fleiss_kappa(data: Sequence[Sequence[Any]]) -> float | None:
    """Fleiss' kappa of a raters × items table (None/NaN = missing; items
    with a missing rating are left out)."""
    if len(data) < 2:
        return None
    return fleiss_kappa_counts(_fleiss_table(data))


def fleiss_kappa_stderr(data: Sequence[Sequence[Any]], iters: int = 1000) -> Aggregate:
    """Fleiss' kappa with a bootstrap standard error over items; ``n`` =
    items rated by every rater."""
    if len(data) < 2:
        return Aggregate(None, None, 0)
    table = _fleiss_table(data)
    rows = list(range(table.shape[0]))

    def stat(sample: Sequence[int]) -> float | None:
        return fleiss_kappa_counts(table[np.asarray(sample, dtype=int)])

    return Aggregate(fleiss_kappa_counts(table), bootstrap_stderr(rows, stat, iters=iters), len(rows))


class JudgeAgreement(Metric):
    """Agreement of a judge panel's members on another metric's ratings.

    Reads ``record.judgements[<source>]["per_judge"]`` (the members' values,
    in panel order) written by a judged metric such as ``likert``.
    Options: ``source`` (required), ``judges`` (member names; default j0,
    j1, ...), ``items`` (``pairwise``, default, or ``all_rated``),
    ``labels`` (a category list; ``scale`` = the integers of ``scale``,
    default [1, 5]; ``observed`` = each pair's own values; default the
    values observed over the whole panel), ``bootstrap_iters`` (1000).
    ANCHOR's upstream definition is ``items: all_rated, labels: observed``
    (module docstring).  Reports, for
    linear and quadratic weights, the kappa of each pair
    ``<name>_kappa_<w>_<a>_<b>`` and their mean ``<name>_kappa_<w>``;
    Fleiss' kappa ``<name>_fleiss`` (upstream's analysis script reports it
    next to quadratic Cohen's kappa); ``<name>_alpha_ordinal`` and
    ``<name>_alpha_interval``; ``<name>_skipped_pairs`` (pairs left out
    of the kappa mean: fewer than 2 items rated together, or no variation);
    and the headline ``<name>`` = the mean
    pairwise *linear*-weighted kappa (the paper's figure; the same value as
    ``<name>_kappa_linear``).
    """
    reads = frozenset({"judgements"})  # what aggregate() reads (Metric.reads)

    name = "agreement"
    description = "mean pairwise Cohen's kappa (linear weights) of the judge panel on another metric's ratings"
    accepts = {"source": "the judged metric whose per-member ratings are compared (required)",
               "judges": "names of the panel members (default j0, j1, ...)",
               "items": "pairwise (each pair on the items both rated) or all_rated (the items every judge rated)",
               "labels": "the kappa categories: a list, scale or observed",
               "scale": "[low, high] for labels: scale (default [1, 5])",
               "bootstrap_iters": "resamples for the standard errors (1000)"}
    kind = DIAGNOSTIC  # how far judges agree says how far a judged score can be trusted
    outputs = {"kappa_*": DIAGNOSTIC, "fleiss": DIAGNOSTIC, "alpha_*": DIAGNOSTIC,
               "skipped_pairs": (COUNT, "judge pairs left out of the kappa mean (fewer than 2 items rated together, "
                                        "or no variation)")}

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        return {}

    def table(self, records: Sequence[SampleRecord]) -> dict[str, list[Any]]:
        source = self.options["source"]
        rows = [list((r.judgements.get(source) or {}).get("per_judge") or []) for r in records if r.error is None]
        width = max((len(x) for x in rows), default=0)
        names = list(self.options.get("judges") or [f"j{i}" for i in range(width)])
        if width > len(names):
            raise ValueError(f"{self.name}: {width} judges rated but only {len(names)} names given")
        return {name: [row[i] if i < len(row) else None for row in rows] for i, name in enumerate(names)}

    def _labels(self, ratings: dict[str, list[Any]]) -> list[Any] | str:
        labels = self.options.get("labels")
        if labels is None:  # fixed for every pair and every bootstrap draw
            return sorted({v for col in ratings.values() for v in col if not _missing(v)})
        if labels == "scale":
            low, high = (int(x) for x in self.options.get("scale", (1, 5)))
            return list(range(low, high + 1))
        if labels == OBSERVED or isinstance(labels, list):
            return labels
        raise ValueError(f"{self.name}: labels must be a list, 'scale' or 'observed', not {labels!r}")

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ratings = self.table(records)
        iters = int(self.options.get("bootstrap_iters", 1000))
        items = str(self.options.get("items", "pairwise"))
        labels = self._labels(ratings)
        out: dict[str, Aggregate] = {}
        if len(ratings) < 2:
            return out
        for w in ("linear", "quadratic"):
            pairs = pairwise_kappa(ratings, w, labels, iters, items)
            for (a, b), agg in pairs.items():
                out[f"{self.name}_kappa_{w}_{a}_{b}"] = agg
            out[f"{self.name}_kappa_{w}"] = mean_pairwise_kappa(ratings, w, labels, iters, items)
            if w == "linear":  # the same pairs are undefined under either weighting (module docstring)
                skipped = sum(agg.value is None for agg in pairs.values())
                out[f"{self.name}_skipped_pairs"] = count(skipped, len(pairs))
        data = list(ratings.values())
        out[f"{self.name}_fleiss"] = fleiss_kappa_stderr(data, iters)
        for level in ("ordinal", "interval"):
            out[f"{self.name}_alpha_{level}"] = krippendorff_alpha_stderr(data, level, iters)
        return {self.name: out[f"{self.name}_kappa_linear"], **out}
