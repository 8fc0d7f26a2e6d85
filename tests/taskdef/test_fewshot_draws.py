"""The few-shot draw's edges (avhb/taskdef/fewshot.py), each a case its
mutation run left open, the expected draws made by hand with
``random.Random`` as lm-eval's sampler makes them: zero examples draw
nothing (and use no randomness), first_n may take the whole pool, a pool
whose copies of the evaluated doc leave too few is drawn again without
them, and settings given only a count exclude nothing."""
from __future__ import annotations

import random

from avhb.taskdef.fewshot import FewshotSettings, Sampler, examples_for

POOL = [{"q": f"p{i}"} for i in range(6)]


def test_zero_examples_draw_nothing_and_use_no_randomness():
    sampler = Sampler("default", POOL, seed=11)
    assert sampler.draw(0, POOL[0]) == [] and sampler.draw(-1, None) == []
    assert sampler.draw(2, None) == random.Random(11).sample(POOL, 2)  # the generator untouched
    assert Sampler("default", [], seed=1).draw(0, None) == []  # no pool is needed for none


def test_first_n_may_take_the_whole_pool():
    assert Sampler("first_n", POOL, 0).draw(6, None) == POOL
    assert Sampler("first_n", POOL, 0).draw(5, POOL[2]) == [d for d in POOL if d != POOL[2]]


def test_too_few_left_beside_the_evaluated_docs_copies_is_drawn_again_without_them():
    evaluated, others = {"q": "e"}, [{"q": "x"}, {"q": "y"}]
    pool = [evaluated, evaluated, evaluated, *others]
    for seed in range(100):
        rnd = random.Random(seed)
        first = [d for d in rnd.sample(pool, 3) if d != evaluated][:2]
        if len(first) < 2:  # this seed's first draw holds two or three copies
            expected = rnd.sample(others, 2)
            break
    else:
        raise AssertionError("no seed below 100 draws two copies first")
    got = Sampler("default", pool, seed).draw(2, evaluated)
    assert got == expected and evaluated not in got


def test_settings_given_only_a_count_exclude_nothing():
    assert examples_for(POOL[:2], POOL, FewshotSettings(), 0) == [[], []]
    rnd = random.Random(5)
    assert examples_for(POOL[:3], POOL, FewshotSettings(num=2), 5) == [rnd.sample(POOL, 2) for _ in range(3)]
