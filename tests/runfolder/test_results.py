"""Typed results: per-run values of repeats, the flat results.json form
and its one reader, groups from typed task results."""
from __future__ import annotations

from pathlib import Path

import pytest

from avhb.runfolder.results import RunResults, TaskResult, cells_of
from avhb.run.score_phase import summarize
from avhb.score.aggregate import Aggregate, mean_stderr, pooled_mean
from avhb.score.metric import Metric, SampleRecord
from avhb.run.task import Breakdown
from avhb.taskdef.config import TaskConfig


class Right(Metric):
    name = "accuracy"

    async def score(self, record, ctx):  # pragma: no cover - scores are set by the test
        raise NotImplementedError


class _Task:
    name = "t"
    cfg = TaskConfig("t", Path("t.yaml"), "pkg", "bench", {})  # no cluster_key: the summary reads cfg
    breakdown = [Breakdown("kind")]


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


def test_size_weighted_group_stderr_from_pooled_samples_with_a_one_sample_member():
    # task a scored [1, 0, 1]; task b one sample [0]: the group is the mean of the 4 pooled scores
    a, b = mean_stderr([1.0, 0.0, 1.0]), mean_stderr([0.0])
    assert b.stderr is None and b.n == 1
    res = RunResults({"a": TaskResult({"accuracy": a}), "b": TaskResult({"accuracy": b})})
    res.aggregate_groups({"g": {"aggregate": [{"metric": "accuracy", "weight_by_size": True}]}},
                         {"g": ["a", "b"]}.__getitem__)
    pooled = mean_stderr([1.0, 0.0, 1.0, 0.0])  # by hand: mean 0.5, s^2 = 1/3, stderr = sqrt(1/12)
    g = res.groups["g"]["accuracy"]
    assert g.value == pytest.approx(0.5) and g.n == 4
    assert g.stderr == pytest.approx(pooled.stderr) and g.stderr == pytest.approx((1 / 12) ** 0.5)
    flat = res.to_json()["groups"]["g"]
    assert flat["accuracy_stderr"] == pytest.approx(0.288675, abs=1e-6)  # was null before


def test_pooled_mean_equals_the_mean_over_all_samples():
    parts = [[1.0, 0.5, 0.0, 1.0], [0.0, 0.0], [1.0], [0.5, 1.0, 1.0]]
    got = pooled_mean([mean_stderr(p) for p in parts])
    whole = mean_stderr([x for p in parts for x in p])
    assert got.value == pytest.approx(whole.value) and got.stderr == pytest.approx(whole.stderr) and got.n == whole.n
    # a member of two or more samples without a stderr: no stderr (nothing invented)
    assert pooled_mean([Aggregate(0.5, None, 4), Aggregate(1.0, None, 1)]).stderr is None
    assert pooled_mean([Aggregate(1.0, None, 1)]).stderr is None


def test_groups_of_groups_aggregate_their_member_groups_when_asked():
    # subgroup s1 = tasks a, b; subgroup s2 = task c; top-level groups over s1, s2
    res = RunResults({"a": TaskResult({"acc": Aggregate(1.0, 0.0, 2)}), "b": TaskResult({"acc": Aggregate(0.0, 0.0, 2)}),
                      "c": TaskResult({"acc": Aggregate(1.0, 0.0, 4)})})
    mean = [{"metric": "acc", "weight_by_size": False}]
    groups = {"s1": {"aggregate": mean}, "s2": {"aggregate": mean},
              "flat": {"aggregate": mean},
              "nested": {"aggregate": mean, "aggregate_over": "members"},
              "nested_sized": {"aggregate": [{"metric": "acc", "weight_by_size": True}], "aggregate_over": "members"}}
    members = {"s1": ["a", "b"], "s2": ["c"], "flat": ["a", "b", "c"], "nested": ["a", "b", "c"],
               "nested_sized": ["a", "b", "c"]}
    entries = {"s1": [("task", "a"), ("task", "b")], "s2": [("task", "c")],
               **{g: [("group", "s1"), ("group", "s2")] for g in ("flat", "nested", "nested_sized")}}
    res.aggregate_groups(groups, members.__getitem__, entries.__getitem__)
    assert res.groups["s1"]["acc"].value == pytest.approx(0.5)
    assert res.groups["flat"]["acc"].value == pytest.approx((1 + 0 + 1) / 3)  # default: tasks, flattened
    assert res.groups["nested"]["acc"].value == pytest.approx((0.5 + 1.0) / 2)  # the member groups' scores
    assert res.groups["nested"]["acc"].n == 8
    # pooled over the subgroups' units: (2*1 + 2*0 + 4*1) / 8
    assert res.groups["nested_sized"]["acc"].value == pytest.approx(6 / 8)


def test_group_defaults_and_filter_lists_follow_lm_eval():
    """lm-eval's group entries: weight_by_size defaults to true; filter_list
    names the members' metric,filter numbers ("none": the plain metric),
    and without one every filter the members report is combined."""
    res = RunResults({"a": TaskResult({"em,strict": Aggregate(1.0, 0.0, 3), "em,loose": Aggregate(0.0, 0.0, 3)}),
                      "b": TaskResult({"em,strict": Aggregate(0.0, 0.0, 1), "em,loose": Aggregate(1.0, 0.0, 1),
                                       "acc": Aggregate(0.5, 0.1, 2)})})
    groups = {"sized": {"aggregate": [{"metric": "em", "filter_list": "strict"}]},
              "all": {"aggregate": [{"metric": "em", "weight_by_size": False}]},
              "none": {"aggregate": [{"metric": "acc", "filter_list": ["none"]}]}}
    members = {"sized": ["a", "b"], "all": ["a", "b"], "none": ["b"]}
    res.aggregate_groups(groups, members.__getitem__)
    assert res.groups["sized"] == {"em,strict": res.groups["sized"]["em,strict"]}
    assert res.groups["sized"]["em,strict"].value == pytest.approx(3 / 4)  # pooled by size: (3 x 1 + 1 x 0) / 4
    assert res.groups["all"]["em,strict"].value == pytest.approx(0.5) == res.groups["all"]["em,loose"].value
    assert res.groups["none"]["acc"].value == pytest.approx(0.5)


def test_multi_valued_breakdowns():
    class Task(_Task):
        breakdown = [Breakdown("skills", ","), Breakdown("tags"), Breakdown("kind")]

    rows = [({"skills": "Counting, OCR", "tags": ["x", "y"], "kind": "a"}, 1.0),
            ({"skills": "OCR", "tags": ["y"], "kind": "a"}, 0.0),
            ({"skills": " Counting ,Counting", "tags": [], "kind": "b"}, 0.5),
            ({"skills": None, "tags": None}, 1.0)]
    records = []
    for i, (doc, score) in enumerate(rows):
        r = SampleRecord(id=str(i), doc=doc)
        r.scores = {"accuracy": score}
        records.append(r)
    result = summarize(Task(), records, [Right()], _Judges(), repeats=1)
    skills = result.breakdowns["skills"]
    assert set(skills) == {"Counting", "OCR", "(none)"}
    assert skills["Counting"]["accuracy"].value == pytest.approx(0.75) and skills["Counting"]["accuracy"].n == 2
    assert skills["OCR"]["accuracy"].value == pytest.approx(0.5) and skills["OCR"]["accuracy"].n == 2
    tags = result.breakdowns["tags"]
    assert tags["x"]["accuracy"].n == 1 and tags["y"]["accuracy"].n == 2 and tags["(none)"]["accuracy"].n == 2
    assert result.breakdowns["kind"]["(none)"]["accuracy"].n == 1  # a plain field as before
    assert Breakdown("skills", ",").values({"skills": "a, b"}) == ["a", "b"]
    assert Breakdown("skills").values({"skills": "a, b"}) == ["a, b"]  # no separator declared: one value


def test_absent_members_are_left_out_of_a_group_while_not_run_members_keep_it_partial():
    """g = {a, b, c}: c is absent (its data has no samples), so g is the
    size-weighted mean of a and b: (0.5 * 10 + 1.0 * 30) / 40 = 0.875, and
    lists c.  h = {a, d}: d has data but did not run: still partial.
    Both kinds survive the flat form."""
    res = RunResults(tasks={"a": TaskResult({"acc": Aggregate(0.5, 0.1, 10)}, samples=10),
                            "b": TaskResult({"acc": Aggregate(1.0, 0.0, 30)}, samples=30)},
                     absent={"c": "its data (/d) has no samples"})
    groups = {"g": {"aggregate": [{"metric": "acc", "weight_by_size": True}]},
              "h": {"aggregate": [{"metric": "acc", "weight_by_size": True}]}}
    members = {"g": ["a", "b", "c"], "h": ["a", "d"]}
    res.aggregate_groups(groups, members.__getitem__)
    assert res.groups["g"]["acc"].value == pytest.approx(0.875) and res.groups["g"]["acc"].n == 40
    assert res.absent_members == {"g": ["c"]} and res.group_counts["g"]["samples"] == 40
    assert "h" not in res.groups and res.partial_groups == {"h": "1/2 tasks run"}
    flat = res.to_json()
    assert flat["absent_tasks"] == {"c": "its data (/d) has no samples"} and flat["absent_members"] == {"g": ["c"]}
    back = RunResults.from_json(flat)
    assert back.absent == res.absent and back.absent_members == res.absent_members
    assert "absent_tasks" not in back.extra and "absent_members" not in back.extra
    # a member both absent and missing from the run: partial, and the count says so
    res = RunResults(tasks={"a": TaskResult({"acc": Aggregate(0.5, 0.1, 10)})}, absent={"c": "no samples"})
    res.aggregate_groups({"g": groups["g"]}, members.__getitem__)
    assert res.partial_groups == {"g": "1/2 tasks run (1 absent: no samples)"}


def test_a_declared_count_reaches_results_json_through_the_default_aggregate():
    """The plugin-guide metric: score() reports ``token_f1`` and
    ``token_f1_empty`` (1 for an answer with no tokens) and declares
    ``empty`` a count; it keeps the default aggregate.  Three samples, one
    empty, one failed: token_f1 = (0.5 + 0) / 2, token_f1_empty = 1 (a sum,
    an integer column); an undeclared per-sample key stays out."""
    from avhb.score.metric import COUNT

    class TokenF1(Metric):
        """Token overlap F1 between the answer and the reference."""

        name = "token_f1"
        outputs = {"empty": (COUNT, "answers with no tokens")}

        async def score(self, record, ctx):  # pragma: no cover - scores are set by the test
            raise NotImplementedError

    records = []
    for i, (f1, empty) in enumerate([(0.5, 0), (0.0, 1), (None, None)]):
        r = SampleRecord(id=str(i), doc={"kind": "a"}, scores={"token_f1": f1, "token_f1_empty": empty,
                                                               "token_f1_tokens": [1, 2]})
        records.append(r)
    records[2].error = "media: gone"
    result = summarize(_Task(), records, [TokenF1()], _Judges(), repeats=1)
    assert result.metrics["token_f1"].value == pytest.approx(0.25)
    assert result.metrics["token_f1_empty"].value == 1 and result.metrics["token_f1_empty"].n == 2
    assert "token_f1_tokens" not in result.metrics
    flat = RunResults(tasks={"t": result}).to_json()
    assert flat["results"]["t"]["token_f1_empty"] == 1 and flat["metrics"]["t"]["token_f1_empty"]["kind"] == "count"
    assert RunResults.from_json(flat).tasks["t"].count_cells() == {"token_f1_empty": 1}
