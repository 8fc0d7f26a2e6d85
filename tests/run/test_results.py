"""Typed results: per-run values of repeats, the flat results.json form
and its one reader, groups from typed task results."""
from __future__ import annotations

import pytest

from avhb.run.results import RunResults, TaskResult, cells_of
from avhb.run.scoring import summarize
from avhb.score.aggregate import Aggregate
from avhb.score.metric import Metric, SampleRecord


class Right(Metric):
    name = "accuracy"

    async def score(self, record, ctx):  # pragma: no cover - scores are set by the test
        raise NotImplementedError


class _Task:
    breakdown = ["kind"]


class _Judges:
    failures: dict = {}


def test_repeats_report_the_mean_and_each_runs_value_with_their_spread():
    # 4 samples x 3 repeats; run 0 gets 2/4 right, run 1 3/4, run 2 4/4
    right = {0: 2, 1: 3, 2: 4}
    records = []
    for rep in range(3):
        for i in range(4):
            r = SampleRecord(id=f"s{i}", doc={"kind": "a" if i < 2 else "b"}, repeat=rep)
            r.scores = {"accuracy": 1.0 if i < right[rep] else 0.0}
            records.append(r)
    result = summarize(_Task(), records, [Right()], _Judges(), repeats=3)
    acc = result.metrics["accuracy"]
    assert acc.value == pytest.approx(0.75) and acc.n == 12
    assert acc.runs == [0.5, 0.75, 1.0] and acc.run_std == pytest.approx(0.25)
    flat = RunResults({"t": result}).to_json()["results"]["t"]
    assert flat["accuracy"] == pytest.approx(0.75) and flat["accuracy_runs"] == [0.5, 0.75, 1.0]
    assert flat["accuracy_run_std"] == pytest.approx(0.25) and flat["samples"] == 12
    # breakdowns have their own cells (no per-run values there)
    assert result.breakdowns["kind"]["a"]["accuracy"].value == pytest.approx(1.0)
    # one repeat: no per-run keys
    single = summarize(_Task(), [r for r in records if r.repeat == 0], [Right()], _Judges(), repeats=1)
    assert "accuracy_runs" not in RunResults({"t": single}).to_json()["results"]["t"]


def test_flat_form_round_trips_and_companions_are_not_metrics():
    res = RunResults({"t": TaskResult({"acc": Aggregate(0.5, 0.1, 10, [0.4, 0.6]), "f1": Aggregate(None, None, 0)},
                                      samples=10, errors=1, judge_failures=2,
                                      breakdowns={"kind": {"x": {"acc": Aggregate(1.0, None, 1)}}})},
                     groups={"g": {"acc": Aggregate(0.5, 0.1, 10)}}, partial_groups={"h": "1/2 tasks run"},
                     model="m", judge_usage={"calls": 3})
    data = res.to_json()
    back = RunResults.from_json(data)
    assert back.to_json() == data
    assert list(back.tasks["t"].metrics) == ["acc", "f1"] and back.tasks["t"].errors == 1
    assert back.tasks["t"].metrics["acc"].run_std == pytest.approx(0.1414, abs=1e-4)
    assert set(cells_of({"acc": 1.0, "acc_n": 3, "acc_stderr": None, "samples": 3})) == {"acc"}
    # a bare {task: {...}} mapping reads as the results block
    assert RunResults.from_json({"t": {"acc": 1.0, "acc_n": 2}}).tasks["t"].metrics["acc"].n == 2


def test_groups_weighted_by_size_from_typed_results():
    res = RunResults({"a": TaskResult({"acc": Aggregate(1.0, None, 6)}), "b": TaskResult({"acc": Aggregate(1 / 3, 0.3, 3)})})
    groups = {"g": {"aggregate": [{"metric": "acc", "weight_by_size": True}]},
              "p": {"aggregate": [{"metric": "acc"}]}}
    members = {"g": ["a", "b"], "p": ["a", "c"]}
    res.aggregate_groups(groups, members.__getitem__)
    assert res.groups["g"]["acc"].value == pytest.approx(7 / 9) and res.groups["g"]["acc"].n == 9
    assert "p" not in res.groups and res.partial_groups["p"] == "1/2 tasks run"
