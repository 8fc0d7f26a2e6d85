"""Aggregates with a standard error and a count, for every reported number."""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence


@dataclass
class Aggregate:
    """One reported number: value, standard error and count (``n``: the
    scored units).  ``runs``: the value of each repeat when a task runs
    several (``repeats > 1``); ``run_std`` their sample standard deviation.

    The uncertainty a run adds once the samples are scored
    (``avhb.score.uncertainty``, docs/statistics.md): ``stderr_clustered``
    and ``clusters`` (the cluster-robust standard error and the number of
    clusters, when the task's samples cluster), ``ci`` (the 95 % interval)
    and ``ci_method`` (how it was made: ``avhb.score.stats.INTERVALS``)."""

    value: float | None
    stderr: float | None
    n: int | None
    runs: list[float | None] | None = None
    stderr_clustered: float | None = None
    clusters: int | None = None
    ci: tuple[float, float] | None = None
    ci_method: str | None = None

    @property
    def best_stderr(self) -> float | None:
        """The clustered standard error where there is one, else the plain one."""
        return self.stderr_clustered if self.stderr_clustered is not None else self.stderr

    @property
    def run_std(self) -> float | None:
        xs = [float(v) for v in self.runs or [] if v is not None]
        if len(xs) < 2:
            return None
        m = sum(xs) / len(xs)
        return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def mean_stderr(values: Iterable[float | None]) -> Aggregate:
    """Mean of the non-None values; stderr = sample std / sqrt(n).
    ``values`` is read three times: a list, or a view that reads it again
    (an iterator, which can be read once, is read into a list first)."""
    if iter(values) is values:  # a generator: its second pass would be empty, and the mean 0
        values = list(values)
    # passes over ``values`` (no copy of them: a long task's are a million), summed as sum() sums a list
    n = sum(1 for v in values if v is not None)
    if n == 0:
        return Aggregate(None, None, 0)
    mean = sum(float(v) for v in values if v is not None) / n
    if n == 1:
        return Aggregate(mean, None, 1)
    var = sum((float(v) - mean) ** 2 for v in values if v is not None) / (n - 1)
    return Aggregate(mean, math.sqrt(var / n), n)


def bootstrap_stderr(
    units: Sequence, statistic: Callable[[Sequence], float | None], iters: int = 1000, seed: int = 1234
) -> float | None:
    """Standard error of ``statistic`` by resampling ``units`` with replacement.
    Deterministic for a given seed."""
    n = len(units)
    if n < 2:
        return None
    rng = random.Random(seed)
    stats = []
    for _ in range(iters):
        sample = rng.choices(units, k=n)
        value = statistic(sample)
        if value is not None:
            stats.append(value)
    if len(stats) < 2:
        return None
    m = sum(stats) / len(stats)
    return math.sqrt(sum((s - m) ** 2 for s in stats) / (len(stats) - 1))


def weighted_mean(parts: Sequence[tuple[Aggregate, float]]) -> Aggregate:
    """Combine aggregates with weights; stderr by propagation assuming
    independence: sqrt(sum w_i^2 se_i^2) / sum w_i."""
    usable = [(a, w) for a, w in parts if a.value is not None and w > 0]
    if not usable:
        return Aggregate(None, None, 0)
    total_w = sum(w for _, w in usable)
    value = sum((a.value or 0.0) * w for a, w in usable) / total_w  # usable: each has a value
    if all(a.stderr is not None for a, _ in usable):
        se = math.sqrt(sum((w * (a.stderr or 0.0)) ** 2 for a, w in usable)) / total_w
    else:
        se = None
    return Aggregate(value, se, sum(a.n or 0 for a, _ in usable))


def pooled_mean(parts: Sequence[Aggregate]) -> Aggregate:
    """The mean over the pooled units of several aggregates, each a mean of
    its ``n`` units: value = sum n_i v_i / N (N = sum n_i), and the standard
    error of that mean from the pooled units' sample variance,

        s^2 = [sum (n_i - 1) s_i^2 + sum n_i (v_i - V)^2] / (N - 1),
        s_i^2 = n_i se_i^2,   stderr = sqrt(s^2 / N),

    i.e. the within-part and between-part sums of squares.  Exact when each
    part's stderr is its units' sample std / sqrt(n_i) (a mean metric); a
    part with one unit adds no within term (its stderr may be None).  The
    stderr is None when a part with two or more units has none, or N < 2.
    Parts without a value or with n = 0 are left out."""
    usable = [a for a in parts if a.value is not None and (a.n or 0) > 0]
    if not usable:
        return Aggregate(None, None, 0)
    total = sum(a.n or 0 for a in usable)
    value = sum((a.value or 0.0) * (a.n or 0) for a in usable) / total  # usable: each has a value
    if total < 2 or any((a.n or 0) > 1 and a.stderr is None for a in usable):
        return Aggregate(value, None, total)
    within = sum(((a.n or 0) - 1) * (a.n or 0) * (a.stderr or 0.0) ** 2 for a in usable)
    between = sum((a.n or 0) * ((a.value or 0.0) - value) ** 2 for a in usable)
    return Aggregate(value, math.sqrt((within + between) / (total - 1) / total), total)
