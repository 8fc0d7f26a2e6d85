"""Issue 15: the short version of benchmarks/faults.py — 3 SIGKILL trials
(during generation, judging and the final writes) and one 20 % fault storm
on a judged run through the real OpenAI-compatible backend: nothing lost,
nothing duplicated, results identical to a clean run, and the calls re-sent
after a kill are exactly the ones in flight."""
from __future__ import annotations

from benchmarks.faults import measure, table


def test_kills_and_a_storm_change_nothing(tmp_path):
    trials, info = measure(samples=120, kills=3, kinds=("503",), workdir=tmp_path)
    report = table(trials, info)
    print(report)
    assert [t.phase for t in trials[:3]] == ["generation", "judging", "writes"]
    for t in trials:
        assert t.ok, report
    assert trials[-1].faults > 0, report  # the storm really failed requests
