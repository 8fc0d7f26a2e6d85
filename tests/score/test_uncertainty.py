"""A task's numbers with their uncertainty (avhb.score.uncertainty, as the
summary of a run computes them) and their place in results.json: the new
keys beside the old ones, read back by RunResults.from_json; lmms-eval's
cluster_key / score_key over a process_results dict; a sample's repeats as
its cluster; groups; rates without per-sample scores; the power block."""
import json
import math

import pytest
from statsmodels.stats.proportion import proportion_confint

from avhb.runfolder.results import RunResults, TaskResult
from avhb.score.aggregate import Aggregate, mean_stderr, pooled_mean
from avhb.score.aggregations import Aggregation
from avhb.score.clusters import ClusterKey
from avhb.score.metric import DIAGNOSTIC, HEADLINE, MetricInfo, SampleRecord
from avhb.score.process_results import ProcessResults, Reported
from avhb.score.stats import NORMAL, WILSON, WILSON_EFFECTIVE, cluster_se, effective_n, mde, wilson
from avhb.score.uncertainty import Power, add_uncertainty, group_uncertainty, power_of

# 12 questions on 4 videos: video v0 all right, v1 all wrong, v2 and v3 mixed
SCORES = [1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 0, 1]
VIDEOS = [i // 3 for i in range(12)]


def _records(scores=SCORES, videos=VIDEOS, name="acc", repeats=1):
    out = []
    for i, (x, v) in enumerate(zip(scores, videos)):
        for k in range(repeats):
            out.append(SampleRecord(id=f"q{i}", doc={"video": f"v{v}", "question": f"question {i}"}, repeat=k,
                                    scores={name: float(x) if x is not None else None}))
    return out


def _cells(records, name="acc"):
    return {name: mean_stderr([r.scores[name] for r in records if r.error is None])}


def test_clustered_stderr_clusters_and_a_wilson_interval_at_the_effective_size():
    records = _records()
    cells = _cells(records)
    plain = Aggregate(cells["acc"].value, cells["acc"].stderr, cells["acc"].n)
    _, missing = add_uncertainty(cells, records, ClusterKey("video"))
    acc = cells["acc"]
    assert (acc.value, acc.stderr, acc.n) == (plain.value, plain.stderr, plain.n)  # the old numbers unchanged
    se, g = cluster_se([float(x) for x in SCORES], VIDEOS)
    assert acc.stderr_clustered == pytest.approx(se) and acc.clusters == g == 4 and acc.stderr_clustered > acc.stderr
    n_eff = acc.value * (1 - acc.value) / se ** 2
    assert acc.ci == pytest.approx(proportion_confint(acc.value * n_eff, n_eff, method="wilson"))
    assert acc.ci_method == WILSON_EFFECTIVE and missing.count == 0


def test_without_clusters_a_rate_gets_wilson_k_of_n_and_other_scores_their_own_interval():
    records = _records()
    for r, rating in zip(records, [0.5, 1.0, 0.0] * 4):
        r.scores = {**r.scores, "rating": rating, "tokens": 40.0 + 10 * rating}
    cells = {m: mean_stderr([r.scores[m] for r in records]) for m in ("acc", "rating", "tokens")}
    add_uncertainty(cells, records, ClusterKey())
    assert cells["acc"].ci == pytest.approx(proportion_confint(7, 12, method="wilson")) and cells["acc"].ci_method == WILSON
    rating = cells["rating"]  # scores in [0, 1], not 0/1: Wilson at the effective size of the plain stderr
    assert rating.ci_method == WILSON_EFFECTIVE
    assert rating.ci == pytest.approx(wilson(0.5, effective_n(0.5, rating.stderr, 12)))
    tokens = cells["tokens"]
    assert tokens.ci_method == NORMAL and tokens.ci == pytest.approx((45 - 1.959964 * tokens.stderr,
                                                                      45 + 1.959964 * tokens.stderr), rel=1e-6)
    assert all(c.stderr_clustered is None and c.clusters is None for c in cells.values())


def test_results_json_gains_new_keys_only_and_reads_them_back():
    records = _records()
    clustered, plain = _cells(records), _cells(records)
    add_uncertainty(clustered, records, ClusterKey("video"))
    add_uncertainty(plain, records, ClusterKey())
    info = {"acc": MetricInfo(HEADLINE, True, "accuracy")}
    results = RunResults({"clustered": TaskResult(clustered, samples=12, info=info),
                          "plain": TaskResult(plain, samples=12, info=info)})
    doc = json.loads(json.dumps(results.to_json()))
    old = {"acc", "acc_stderr", "acc_n", "samples", "errors", "judge_failures"}
    assert set(doc["results"]["plain"]) == old | {"acc_ci"}
    assert set(doc["results"]["clustered"]) == old | {"acc_ci", "acc_stderr_clustered", "acc_clusters"}
    assert doc["results"]["clustered"]["acc_clusters"] == 4
    assert doc["metrics"]["clustered"]["acc"] == {"kind": "headline", "higher_is_better": True,
                                                  "description": "accuracy", "interval": WILSON_EFFECTIVE}
    back = RunResults.from_json(doc)
    assert back.tasks["clustered"].metrics == clustered and back.tasks["plain"].metrics == plain
    assert list(back.tasks["clustered"].metrics) == ["acc"]  # the companions are not metrics


def test_lmms_eval_cluster_key_and_score_key_in_a_process_results_dict():
    def hook(doc, results):  # lmms-eval's convention: the score and the cluster inside the metric's dict
        return {"perception": {"correct": doc["right"], "videoID": doc["vid"], "question_id": doc["qid"]}}

    def percent(items):  # an lmms-eval aggregation: a percentage
        return 100 * sum(x["correct"] for x in items) / len(items)

    metric = ProcessResults(hook, lambda r: [r.response],
                            [Reported("perception", Aggregation("utils.percent", percent))], "utils.process")
    records = []
    for i, (x, v) in enumerate(zip(SCORES, VIDEOS)):
        r = SampleRecord(id=str(i), doc={"right": x, "vid": f"vid{v}", "qid": i}, response="A")
        r.scores = {"perception": hook(r.doc, [])["perception"]}
        records.append(r)
    cells = metric.aggregate(records)
    assert cells["perception"].value == pytest.approx(700 / 12) and cells["perception"].stderr is None
    key = ClusterKey.of({"cluster_key": "videoID", "score_key": "correct"})
    add_uncertainty(cells, records, key)
    se, g = cluster_se([float(x) for x in SCORES], VIDEOS)
    cell = cells["perception"]
    assert cell.clusters == 4 and cell.stderr_clustered == pytest.approx(100 * se)  # on the value's scale
    lo, hi = wilson(7 / 12, effective_n(7 / 12, se, 4))
    assert cell.ci == pytest.approx((100 * lo, 100 * hi))


def test_a_number_that_is_not_its_samples_mean_gets_no_clustered_stderr():
    records = _records()
    cells = {"acc": Aggregate(0.9, 0.05, 12)}  # a pair statistic: not the mean of the per-sample scores
    add_uncertainty(cells, records, ClusterKey("video"))
    assert cells["acc"].stderr_clustered is None and cells["acc"].clusters is None
    assert cells["acc"].ci_method == NORMAL and cells["acc"].ci == pytest.approx((0.9 - 0.098, 0.9 + 0.098), abs=1e-3)
    rate = {"vAcc": Aggregate(0.98, 0.02, 50)}  # declared a rate (Metric.rate): stays inside [0, 1]
    add_uncertainty(rate, records, ClusterKey("video"), rates=frozenset({"vAcc"}))
    assert rate["vAcc"].ci_method == WILSON_EFFECTIVE and rate["vAcc"].ci[1] < 1.0
    assert rate["vAcc"].ci == pytest.approx(wilson(0.98, effective_n(0.98, 0.02, 50)))


def test_repeats_cluster_by_sample_and_say_what_more_repeats_would_do():
    # 12 items x 3 repeats; the repeats of an item agree more than items do
    scores = [1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0]
    records = _records(scores, list(range(12)), repeats=3)
    for r in records:
        if r.id in ("q2", "q4") and r.repeat == 1:
            r.scores = {"acc": 1.0 - r.scores["acc"]}
    cells = _cells(records)
    key = ClusterKey.of({}, repeats=3)
    scores_read, _ = add_uncertainty(cells, records, key, items=True)
    acc = cells["acc"]
    assert acc.clusters == 12 and acc.stderr_clustered > acc.stderr  # 36 records, 12 independent items
    power = power_of(cells, scores_read, {"acc": MetricInfo(HEADLINE)}, repeats=3)["acc"]
    assert power.unit == "points" and power.n == 36 and power.clusters == 12
    assert power.mde == pytest.approx(mde(math.sqrt(2) * acc.stderr_clustered))
    assert power.repeats is not None and power.repeats.items == 12 and power.repeats.repeats == 3
    assert power.mde_at(3) == pytest.approx(power.mde)
    assert power.mde_at(1) > power.mde_at(3) > power.mde_at(math.inf)
    back = Power.from_json(json.loads(json.dumps(power.to_json())))
    assert back.mde == pytest.approx(power.mde) and back.mde_at(1) == pytest.approx(power.mde_at(1))
    assert set(power.to_json()["repeats"]["mde_at"]) == {"1", "3", "6", "inf"}


def test_power_is_stated_for_headline_numbers_only():
    records = _records()
    cells = {**_cells(records), "acc_diag": Aggregate(0.5, 0.1, 12)}
    scores_read, _ = add_uncertainty(cells, records, ClusterKey("video"))
    power = power_of(cells, scores_read, {"acc": MetricInfo(HEADLINE), "acc_diag": MetricInfo(DIAGNOSTIC)}, 1)
    assert list(power) == ["acc"] and power["acc"].repeats is None and power["acc"].clusters == 4


def test_samples_without_the_cluster_field_are_said_and_each_is_its_own_cluster():
    records = _records()
    for r in records[:3]:
        r.doc = {"question": "no video here"}
    cells = _cells(records)
    _, missing = add_uncertainty(cells, records, ClusterKey("video"))
    assert missing.count == 3 and missing.scored == 12 and cells["acc"].clusters == 3 + 3
    said = missing.message("t", ClusterKey("video"))
    assert said == ("task t: cluster_key 'video' not found in 3 of its 12 scored samples (first: sample 'q0'): each of "
                    "them is its own cluster")
    for r in records:
        r.doc = {"question": "x"}
    _, none = add_uncertainty(_cells(records), records, ClusterKey("vidoe"))
    assert "in none of its 12 scored samples" in none.message("t", ClusterKey("vidoe"))
    assert "(its fields: question)" in none.message("t", ClusterKey("vidoe"))


def test_a_template_cluster_key_and_its_fields():
    key = ClusterKey.of({"cluster_key": "{{ pair_id | default(id, true) }}"})
    assert key.fields == ("id", "pair_id")
    r = SampleRecord(id="1", doc={"id": "color_0001", "pair_id": ""})
    assert key.of_record(r, "acc") == "color_0001"
    with pytest.raises(Exception, match="cluster_key"):
        ClusterKey.of({"cluster_key": "{{ x.__class__ }}"}, where="t.yaml")
    with pytest.raises(Exception, match="cluster_key must be"):
        ClusterKey.of({"cluster_key": 3}, where="t.yaml")


def test_a_group_combines_its_members_clustered_stderr_as_it_combines_the_plain_one():
    members = []
    for shift in (0, 1):
        records = _records(SCORES[shift:] + SCORES[:shift])
        cells = _cells(records)
        add_uncertainty(cells, records, ClusterKey("video"))
        members.append(cells["acc"])
    cell = pooled_mean(members)
    group_uncertainty(cell, members, by_size=True)
    swapped = pooled_mean([Aggregate(a.value, a.stderr_clustered, a.n) for a in members])
    assert cell.stderr_clustered == pytest.approx(swapped.stderr) and cell.clusters == 8
    assert cell.ci_method == WILSON_EFFECTIVE and 0 < cell.ci[0] < cell.value < cell.ci[1] < 1
    # with every sample its own cluster the group's clustered stderr is its plain one
    singles = []
    for shift in (0, 1):
        records = _records(SCORES[shift:] + SCORES[:shift], list(range(12)))
        cells = _cells(records)
        add_uncertainty(cells, records, ClusterKey("video"))
        singles.append(cells["acc"])
    cell = pooled_mean(singles)
    group_uncertainty(cell, singles, by_size=True)
    assert cell.stderr_clustered == pytest.approx(cell.stderr)


def test_groups_in_results_json_carry_the_clustered_keys():
    tasks = {}
    for name, shift in (("a", 0), ("b", 1)):
        records = _records(SCORES[shift:] + SCORES[:shift])
        cells = _cells(records)
        add_uncertainty(cells, records, ClusterKey("video"))
        tasks[name] = TaskResult(cells, samples=12, info={"acc": MetricInfo(HEADLINE)})
    results = RunResults(tasks)
    results.aggregate_groups({"g": {"aggregate": [{"metric": "acc"}]}}, lambda g: ["a", "b"])
    flat = results.to_json()["groups"]["g"]
    assert flat["acc_clusters"] == 8 and flat["acc_stderr_clustered"] > flat["acc_stderr"] > 0
    assert len(flat["acc_ci"]) == 2
