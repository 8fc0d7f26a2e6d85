"""A task's numbers with their uncertainty, once its samples are scored:
the cluster-robust standard error and the number of clusters
(``Aggregate.stderr_clustered``, ``.clusters``), the 95 % interval
(``.ci``, ``.ci_method``) and, per headline metric, the power of a
comparison on these samples (:class:`Power`).  Formulas: ``avhb.score.stats``
and docs/statistics.md.

Which numbers get what:

* A number whose value is the mean of its samples' scores under its own
  name (``record.scores[name]``: a number, or a dict's ``score_key``;
  checked: the mean of those scores equals the value, over as many samples
  as its ``n``; or 100 times the mean, a percentage as lmms-eval's
  aggregations report) gets the clustered standard error when the samples
  cluster (:mod:`avhb.score.clusters`), and an interval from its scores:
  0/1 scores without clusters Wilson's (k of n); scores in [0, 1]
  otherwise Wilson's at the effective size p(1 − p) / se²; other scores
  value ± 1.96 se.  The standard error is the clustered one where there is
  one.
* Any other number with a standard error (a pair or corpus statistic that
  computes its own, such as a bootstrap over pairs) gets value ± 1.96 se,
  or, when its metric declares it a rate (``Metric.rate``: a share of
  units in [0, 1]), Wilson's interval at the effective size p(1 − p) / se².
* Counts get nothing.

One pass over the records reads the scores (and, when the samples
cluster, each record's cluster): no list of values is held, only each
cluster's (and with repeats each item's) running sums.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Hashable, Mapping, Sequence

from avhb.score.aggregate import Aggregate, pooled_mean, weighted_mean
from avhb.score.clusters import NUMBER_TYPES, MISSING, ClusterKey
from avhb.score.metric import COUNT, HEADLINE, MetricInfo, SampleRecord, usable_scores
from avhb.score.stats import (NORMAL, WILSON, WILSON_EFFECTIVE, ClusterSums, RepeatsEffect, effective_n, mde,
                              normal_interval, wilson, within_item_variance)


@dataclass
class _Scores:
    """One metric's per-sample scores, summed as they are read."""

    n: int = 0
    total: float = 0.0
    lo: float = math.inf
    hi: float = -math.inf
    binary: bool = True
    sums: ClusterSums | None = None
    items: dict[Hashable, list[float]] | None = None  # sample -> [count, sum, sum of squares] (repeats)

    def add(self, x: float, cluster: Hashable = None, item: Hashable = None) -> None:
        self.n += 1
        self.total += x
        if x < self.lo:
            self.lo = x
        if x > self.hi:
            self.hi = x
        if x != 0.0 and x != 1.0:
            self.binary = False
        if self.sums is not None:
            self.sums.add(x, cluster)
        if self.items is not None:
            cell = self.items.get(item)
            if cell is None:
                self.items[item] = [1.0, x, x * x]
            else:
                cell[0] += 1.0
                cell[1] += x
                cell[2] += x * x

    @property
    def mean(self) -> float:
        return self.total / self.n

    @property
    def bounded(self) -> bool:
        """Every score in [0, 1]."""
        return self.n > 0 and self.lo >= 0.0 and self.hi <= 1.0

    def scale_of(self, agg: Aggregate) -> float | None:
        """1 when ``agg`` is the mean of these scores over its ``n``, 100 when
        it is that mean in percent; None otherwise."""
        if not self.n or agg.value is None or agg.n != self.n:
            return None
        for scale in (1.0, 100.0):
            if math.isclose(scale * self.mean, agg.value, rel_tol=1e-9, abs_tol=1e-12):
                return scale
        return None


@dataclass
class Missing:
    """Scored records whose cluster the key did not find (each is then its
    own cluster)."""

    count: int = 0
    scored: int = 0
    first: str | None = None
    fields: list[str] = field(default_factory=list)  # of the first such sample

    def message(self, task: str, key: ClusterKey) -> str | None:
        """The one warning line, or None when every record had its cluster."""
        if not self.count:
            return None
        where = f"in {self.count} of its {self.scored} scored samples" if self.count < self.scored \
            else f"in none of its {self.scored} scored samples"
        fields = f" (its fields: {', '.join(self.fields)[:200]})" if self.count == self.scored and self.fields else ""
        return (f"task {task}: {key.describe} not found {where} (first: sample {self.first!r}){fields}: each of "
                "them is its own cluster")


_UNSET: Any = object()


def gather(records: Sequence[SampleRecord], names: Sequence[str], key: ClusterKey,
           items: bool = False) -> tuple[dict[str, _Scores], Missing]:
    """Each metric's per-sample scores over the records that did not fail;
    with clusters their sums per cluster, with ``items`` per sample."""
    out = {name: _Scores(sums=ClusterSums() if key.active else None, items={} if items else None) for name in names}
    missing = Missing()
    if not key.active and not items:  # scores alone: read from the columns of a long task, no record built
        for scores in usable_scores(records):
            for name, acc in out.items():
                x = key.score(scores.get(name))
                if x is not None:
                    acc.add(x)
        return out, missing
    for r in records:
        if r.error is not None:
            continue
        shared: Any = _UNSET  # the record's cluster by its document, found once for all its metrics
        counted = scored = False
        for name, acc in out.items():
            value = r.scores.get(name)
            x = key.score(value)
            if x is None:
                continue
            scored = True
            cluster: Hashable = None
            if key.active:
                if key.spec is not None and value.__class__ not in NUMBER_TYPES and isinstance(value, Mapping) \
                        and key.spec in value:
                    cluster = key.of_line(r.id, r.doc, value)
                else:
                    if shared is _UNSET:
                        shared = key.of_line(r.id, r.doc, None)
                    cluster = shared
                if cluster is MISSING:
                    if not counted:
                        missing.count += 1
                        counted = True
                        if missing.first is None:
                            missing.first, missing.fields = str(r.id), sorted(map(str, r.doc))
                    cluster = ("missing", str(r.id))
            acc.add(x, cluster, r.id)
        missing.scored += scored
    return out, missing


def describe(agg: Aggregate, scores: _Scores | None, key: ClusterKey, rate: bool = False) -> None:
    """Set ``agg``'s clustered standard error, clusters and interval from
    its scores (module docstring); ``rate``: its metric declares it a share
    of units in [0, 1]."""
    scale = scores.scale_of(agg) if scores is not None else None
    if scores is None or scale is None:
        se = agg.stderr
        if agg.value is not None and se is not None:
            if rate and 0.0 <= agg.value <= 1.0:
                lo, hi = wilson(agg.value, effective_n(agg.value, se, float(agg.n or 1)))
                agg.ci, agg.ci_method = (lo, hi), WILSON_EFFECTIVE
            else:
                agg.ci, agg.ci_method = normal_interval(agg.value, se), NORMAL
        return
    assert agg.value is not None  # scale_of: a value
    if scores.sums is not None:
        agg.stderr_clustered = scores.sums.stderr(scale)
        agg.clusters = scores.sums.count
    se = agg.best_stderr
    if scores.bounded:
        p = scores.mean
        if scores.binary and not key.active:
            lo, hi = wilson(p, scores.n)
            method = WILSON
        else:
            fallback = float(agg.clusters or scores.n)
            lo, hi = wilson(p, effective_n(p, None if se is None else se / scale, fallback))
            method = WILSON_EFFECTIVE
        agg.ci, agg.ci_method = (scale * lo, scale * hi), method
    elif se is not None:
        agg.ci, agg.ci_method = normal_interval(agg.value, se), NORMAL


def add_uncertainty(cells: Mapping[str, Aggregate], records: Sequence[SampleRecord], key: ClusterKey,
                    info: Mapping[str, MetricInfo] | None = None, items: bool = False,
                    rates: frozenset[str] = frozenset()) -> tuple[dict[str, _Scores], Missing]:
    """:func:`describe` every number of ``cells`` but the counts (``info``:
    their kinds; ``rates``: the numbers their metric declares rates) over
    ``records``; the scores read are returned (for :func:`power_of`) with
    the records whose cluster was not found."""
    names = [k for k in cells if info is None or k not in info or info[k].kind != COUNT]
    scores, missing = gather(records, names, key, items)
    for name in names:
        describe(cells[name], scores.get(name), key, name in rates)
    return scores, missing


# ------------------------------------------------------------ power


@dataclass
class Power:
    """How large a difference a comparison on this run's samples would see:
    ``mde``, the minimum detectable difference at 80 % power and α = 0.05
    against another model scored on the same samples with the same
    variance and uncorrelated with this one (a correlation ρ between the two
    narrows it by sqrt(1 − ρ); ``avhb report A B`` uses the observed one),
    from ``stderr`` (clustered where the samples cluster) over ``n``
    samples (``clusters``).  ``unit``: "points" when the metric's scores
    lie in [0, 1] (the report shows 100 × the difference), else "value".
    ``repeats`` (with ``--repeats`` > 1): what more or fewer repeats
    would do (:class:`avhb.score.stats.RepeatsEffect`)."""

    n: int
    clusters: int | None
    stderr: float
    unit: str
    repeats: RepeatsEffect | None = None

    @property
    def mde(self) -> float:
        return float(mde(math.sqrt(2.0) * self.stderr) or 0.0)

    def mde_at(self, k: float) -> float | None:
        """The minimum detectable difference with ``k`` repeats per sample."""
        if self.repeats is None:
            return None
        return float(mde(math.sqrt(2.0) * self.repeats.se_at(k)) or 0.0)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "clusters": self.clusters, "stderr": self.stderr, "mde": self.mde,
                               "unit": self.unit, "alpha": 0.05, "power": 0.8}
        if self.repeats is not None:
            r = self.repeats
            ks = sorted({1.0, r.repeats, 2 * r.repeats})
            out["repeats"] = {"repeats": r.repeats, "items": r.items, "within_variance": r.within,
                              "within_share": r.within_share,
                              "mde_at": {**{_k(k): self.mde_at(k) for k in ks}, "inf": self.mde_at(math.inf)}}
        return out

    @classmethod
    def from_json(cls, d: Any) -> "Power | None":
        if not isinstance(d, Mapping):
            return None
        n, se = d.get("n"), d.get("stderr")
        if not isinstance(n, int) or not isinstance(se, (int, float)):
            return None
        clusters = d.get("clusters") if isinstance(d.get("clusters"), int) else None
        reps = d.get("repeats")
        effect = None
        if isinstance(reps, Mapping) and all(isinstance(reps.get(k), (int, float))
                                             for k in ("repeats", "items", "within_variance")):
            effect = RepeatsEffect(float(reps["repeats"]), int(reps["items"]), float(reps["within_variance"]),
                                   float(se))
        return cls(n, clusters, float(se), str(d.get("unit") or "value"), effect)


def _k(k: float) -> str:
    return str(int(k)) if float(k).is_integer() else f"{k:g}"


def power_of(cells: Mapping[str, Aggregate], scores: Mapping[str, _Scores], info: Mapping[str, MetricInfo],
             repeats: int, rates: frozenset[str] = frozenset()) -> dict[str, Power]:
    """A :class:`Power` per headline number with a standard error
    (``rates``: the numbers their metric declares shares in [0, 1])."""
    out: dict[str, Power] = {}
    for name, agg in cells.items():
        kind = info[name].kind if name in info else HEADLINE
        se = agg.best_stderr
        if kind != HEADLINE or se is None or agg.value is None or not agg.n:
            continue
        s = scores.get(name)
        scale = s.scale_of(agg) if s is not None else None
        bounded = (s is not None and scale == 1.0 and s.bounded) or (name in rates and 0.0 <= agg.value <= 1.0)
        unit = "points" if bounded else "value"
        effect = None
        if repeats > 1 and s is not None and scale is not None and s.items:
            within, used = within_item_variance((c, t, q) for c, t, q in s.items.values())
            if within is not None and used:
                effect = RepeatsEffect(s.n / len(s.items), len(s.items), within * scale * scale, se)
        out[name] = Power(agg.n, agg.clusters if agg.stderr_clustered is not None else None, se, unit, effect)
    return out


# ------------------------------------------------------------ groups


def group_uncertainty(cell: Aggregate, parts: Sequence[Aggregate], by_size: bool) -> None:
    """A group's clustered standard error and interval from its members'
    (``parts``, the aggregates it combined): the same combination as the
    group's plain standard error (``pooled_mean`` when weighted by size,
    else ``weighted_mean``) with each member's clustered standard error in
    place of its plain one (a member without clusters brings its plain one:
    each of its samples a cluster); clusters summed.  Only when a member
    has clusters.  The interval: Wilson's at the effective size when every
    member's is a Wilson interval (scores in [0, 1]), else value ± 1.96 se."""
    if cell.value is None:
        return
    if any(a.stderr_clustered is not None for a in parts):
        swapped = [Aggregate(a.value, a.best_stderr, a.n) for a in parts]
        combined = pooled_mean(swapped) if by_size else weighted_mean([(a, 1.0) for a in swapped])
        cell.stderr_clustered = combined.stderr
        cell.clusters = sum((a.clusters if a.clusters is not None else (a.n or 0)) for a in parts)
    se = cell.best_stderr
    if parts and all(a.ci_method in (WILSON, WILSON_EFFECTIVE) for a in parts) and 0.0 <= cell.value <= 1.0:
        lo, hi = wilson(cell.value, effective_n(cell.value, se, float(cell.clusters or cell.n or 1)))
        cell.ci, cell.ci_method = (lo, hi), WILSON_EFFECTIVE
    elif se is not None:
        cell.ci, cell.ci_method = normal_interval(cell.value, se), NORMAL
