"""avhb/score/aggregate.py on hand-computed cases: every reported number's
value, standard error and count, including the edges (no units, one unit,
missing values, zero weights, parts without a standard error)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from avhb.score.aggregate import Aggregate, bootstrap_stderr, mean_stderr, pooled_mean, weighted_mean


def test_mean_stderr_by_hand():
    # mean 2.5; sample variance (1.5^2 + 0.5^2 + 0.5^2 + 1.5^2) / 3 = 5/3; stderr sqrt(5/3 / 4)
    agg = mean_stderr([1, 2, None, 3, 4])
    assert (agg.value, agg.n) == (2.5, 4) and agg.stderr == pytest.approx(math.sqrt(5 / 12))
    two = mean_stderr([0.0, 1.0])  # the smallest sample with a stderr: s^2 = 0.5, stderr = 0.5
    assert (two.value, two.stderr, two.n) == (0.5, pytest.approx(0.5), 2)
    assert mean_stderr([0.25]) == Aggregate(0.25, None, 1)
    assert mean_stderr([]) == Aggregate(None, None, 0) == mean_stderr([None, None])
    assert isinstance(mean_stderr([True, False]).value, float)


def test_run_std_is_the_sample_std_of_the_defined_runs():
    assert Aggregate(0.5, None, 4, runs=[1.0, 3.0]).run_std == pytest.approx(math.sqrt(2))
    assert Aggregate(0.5, None, 4, runs=[1.0, None, 3.0]).run_std == pytest.approx(math.sqrt(2))
    # three runs: mean 2, squares 1 + 0 + 1 over n - 1 = 2 -> 1
    assert Aggregate(0.5, None, 4, runs=[1.0, 2.0, 3.0]).run_std == pytest.approx(1.0)
    assert Aggregate(0.5, None, 4, runs=[1.0]).run_std is None
    assert Aggregate(0.5, None, 4, runs=[1.0, None]).run_std is None
    assert Aggregate(0.5, None, 4).run_std is None


def _reference_bootstrap(units, statistic, iters=1000, seed=1234):
    rng = random.Random(seed)
    stats = [statistic(rng.choices(units, k=len(units))) for _ in range(iters)]
    stats = [s for s in stats if s is not None]
    return float(np.std(stats, ddof=1))


def test_bootstrap_stderr_matches_a_reference_resampling():
    """The defaults (1000 draws, seed 1234) are part of every published
    stderr: a resumed or re-scored run must reproduce them exactly."""
    units = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    got = bootstrap_stderr(units, mean)
    assert got == pytest.approx(_reference_bootstrap(units, mean), rel=1e-12)
    assert got == bootstrap_stderr(units, mean)  # deterministic
    assert bootstrap_stderr(units, mean, iters=200, seed=7) == pytest.approx(
        _reference_bootstrap(units, mean, iters=200, seed=7), rel=1e-12)
    # close to the analytic stderr of a mean (bootstrap uses the biased variance: sqrt(p(1-p)/n))
    assert got == pytest.approx(math.sqrt(5 / 7 * 2 / 7 / 7), rel=0.1)


def test_bootstrap_stderr_edges():
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    assert bootstrap_stderr([], mean) is None and bootstrap_stderr([1.0], mean) is None
    two = bootstrap_stderr([0.0, 1.0], mean)  # two units are enough
    assert two == pytest.approx(_reference_bootstrap([0.0, 1.0], mean), rel=1e-12) and two > 0
    assert bootstrap_stderr([0.0, 1.0, 1.0], lambda xs: None) is None  # the statistic is never defined
    # defined on the draws holding a 0 only: the stderr of those draws alone
    some = lambda xs: mean(xs) if 0.0 in xs else None  # noqa: E731
    assert bootstrap_stderr([0.0, 1.0, 1.0], some) == pytest.approx(
        _reference_bootstrap([0.0, 1.0, 1.0], some), rel=1e-12)
    # one defined draw in 1000 is not enough for a standard deviation
    first = [True]

    def once(xs):
        if first[0]:
            first[0] = False
            return 1.0
        return None

    assert bootstrap_stderr([0.0, 1.0], once) is None
    # two defined draws are: their sample standard deviation
    calls = [0]

    def twice(xs):
        calls[0] += 1
        return float(calls[0]) if calls[0] <= 2 else None

    assert bootstrap_stderr([0.0, 1.0], twice) == pytest.approx(math.sqrt(0.5))


def test_weighted_mean_by_hand():
    a, b = Aggregate(0.5, 0.1, 10), Aggregate(1.0, 0.2, 5)
    got = weighted_mean([(a, 1.0), (b, 3.0)])
    # (0.5 * 1 + 1.0 * 3) / 4; stderr sqrt((1 * 0.1)^2 + (3 * 0.2)^2) / 4; n 10 + 5
    assert got.value == pytest.approx(0.875) and got.stderr == pytest.approx(math.sqrt(0.37) / 4) and got.n == 15
    # a part with weight 0 (or below), or without a value, is left out, with its n
    same = weighted_mean([(a, 1.0), (b, 3.0), (Aggregate(0.0, 0.1, 7), 0.0), (Aggregate(0.0, 0.1, 9), -1.0),
                          (Aggregate(None, None, 0), 2.0)])
    assert (same.value, same.n) == (pytest.approx(0.875), 15) and same.stderr == pytest.approx(got.stderr)
    # one part without a stderr: the combined value stands, its stderr is unknown
    partial = weighted_mean([(a, 1.0), (Aggregate(1.0, None, 1), 1.0)])
    assert partial == Aggregate(pytest.approx(0.75), None, 11)
    assert weighted_mean([(Aggregate(1.0, None, None), 2.0)]) == Aggregate(1.0, None, 0)
    assert weighted_mean([]) == Aggregate(None, None, 0) == weighted_mean([(a, 0.0)])


def test_pooled_mean_by_hand_and_its_edges():
    # parts [1, 0, 1] and [0]: the pooled units [1, 0, 1, 0]: mean 0.5, s^2 = 1/3, stderr sqrt(1/12)
    got = pooled_mean([mean_stderr([1.0, 0.0, 1.0]), mean_stderr([0.0])])
    assert (got.value, got.n) == (0.5, 4) and got.stderr == pytest.approx(math.sqrt(1 / 12))
    # parts of unequal size with within- and between-part spread equal the whole sample
    parts = [[0.2, 0.4, 0.9], [0.1, 0.7], [0.3, 0.3, 0.8, 1.0]]
    whole = mean_stderr([x for p in parts for x in p])
    pooled = pooled_mean([mean_stderr(p) for p in parts])
    assert pooled.value == pytest.approx(whole.value) and pooled.stderr == pytest.approx(whole.stderr)
    assert pooled.n == 9
    # two one-unit parts: N = 2, no within term, between: s^2 = (0.5^2 + 0.5^2) / 1
    two = pooled_mean([Aggregate(1.0, None, 1), Aggregate(0.0, None, 1)])
    assert (two.value, two.n) == (0.5, 2) and two.stderr == pytest.approx(math.sqrt(0.5 / 2))
    # one unit in all: no stderr; a part of 2+ units without a stderr: none either
    assert pooled_mean([Aggregate(0.7, None, 1)]) == Aggregate(0.7, None, 1)
    assert pooled_mean([Aggregate(1.0, None, 2), Aggregate(0.0, None, 1)]) == Aggregate(pytest.approx(2 / 3), None, 3)
    # parts without a value or with no units are left out
    kept = pooled_mean([mean_stderr([1.0, 0.0, 1.0]), mean_stderr([0.0]), Aggregate(None, None, 0),
                        Aggregate(0.9, 0.1, 0), Aggregate(0.9, 0.1, None)])
    assert kept == got
    assert pooled_mean([]) == Aggregate(None, None, 0) == pooled_mean([Aggregate(None, None, 5)])
    assert pooled_mean([Aggregate(0.9, 0.1, 0)]) == Aggregate(None, None, 0)  # a value over no units: nothing
    assert pooled_mean([Aggregate(0.9, 0.1, None)]) == Aggregate(None, None, 0)


def test_mean_stderr_of_a_generator_equals_its_list():
    """mean_stderr reads its values in three passes: a generator (one pass
    only) must give the list's numbers, not a mean of 0 from an empty pass."""
    values = [1.0, 0.0, None, 1.0, 1.0]
    want = mean_stderr(values)
    got = mean_stderr(v for v in values)
    assert (got.value, got.stderr, got.n) == (want.value, want.stderr, want.n) == (0.75, pytest.approx(0.25), 4)
