"""Metrics from Hugging Face ``evaluate`` (plugins/metrics/hf_evaluate.py) and
the core's fallback to them for metric names avhb does not register
(``Task.metrics``), on local metric modules these tests write."""
from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from avhb.errors import UserError
from avhb.plugins.metrics.choice import ExactMatch
from avhb.plugins.metrics.hf_evaluate import EvaluateMetric
from avhb.registry import get_registry
from avhb.score.aggregate import bootstrap_stderr, mean_stderr
from avhb.score.metric import SampleRecord
from avhb.run.task import Task
from tests.plugins.hf_metric_modules import token_f1, write_modules

PAIRS = [("the cat sat", "the cat sat on the mat"), ("a dog", "the dog"), ("", "hello world"),
         ("Blue sky", "blue sky")]


@pytest.fixture
def modules(tmp_path) -> Path:
    write_modules(tmp_path)
    return tmp_path


def records(pairs, errors=()) -> list[SampleRecord]:
    out = []
    for i, (pred, ref) in enumerate(pairs):
        r = SampleRecord(id=f"s{i}", doc={}, target=ref, response=pred, extracted=pred)
        if i in errors:
            r.error, r.response, r.extracted = "media: missing file", None, None
        out.append(r)
    return out


def task_with(entries: list[dict], pack_dir: Path) -> Task:
    cfg = SimpleNamespace(name="t", pack_dir=pack_dir, get=lambda key, default=None: entries if key == "metric_list"
                          else default)
    return Task(cfg, get_registry())


def test_corpus_level_value_key_names_and_bootstrap_stderr(modules):
    metric = EvaluateMetric(module="metrics/token_f1.py", base_dir=str(modules), bootstrap_iters=200)
    assert metric.name == "token_f1"
    out = metric.aggregate(records(PAIRS))
    # totals: tp 5, predicted tokens 7, reference tokens 12 -> P 5/7, R 5/12, F1 10/19
    assert set(out) == {"token_f1_precision", "token_f1_recall", "token_f1_f1"}  # the string "note" is no number
    assert math.isclose(out["token_f1_f1"].value, 10 / 19) and math.isclose(out["token_f1_recall"].value, 5 / 12)
    assert out["token_f1_f1"].n == 4
    # corpus level, not the mean of per-sample F1s (0.4167)
    assert abs(out["token_f1_f1"].value - sum(token_f1([p])["f1"] for p in PAIRS) / 4) > 0.1
    # the stderr is avhb's bootstrap over samples of the same definition, same seed and resamples
    for key in ("precision", "recall", "f1"):
        expected = bootstrap_stderr(list(range(4)), lambda idx, key=key: token_f1([PAIRS[i] for i in idx])[key],
                                    iters=200)
        assert math.isclose(out[f"token_f1_{key}"].stderr, expected, rel_tol=1e-12), key


def test_compute_kwargs_keys_and_rename(modules):
    metric = EvaluateMetric(name="tf1", module="metrics/token_f1.py", base_dir=str(modules), keys="f1",
                            lowercase=True, bootstrap_iters=0)
    out = metric.aggregate(records(PAIRS))
    # lowercase: the last pair matches fully -> tp 6, P 6/7, R 6/12
    p, r = 6 / 7, 6 / 12
    assert list(out) == ["tf1"] and math.isclose(out["tf1"].value, 2 * p * r / (p + r))
    assert out["tf1"].stderr is None  # bootstrap_iters: 0
    with pytest.raises(UserError, match="no number named rouge9"):
        EvaluateMetric(module="metrics/token_f1.py", base_dir=str(modules), keys=["rouge9"]).aggregate(records(PAIRS))


def test_exact_match_from_a_local_module_agrees_with_avhbs(modules):
    pairs = [("Paris", "paris"), ("Rome", "Rome"), ("lyon", "Lyon"), ("Oslo", "Bergen"), ("b", "B"), ("x", "x")]
    recs = records(pairs)
    ours = ExactMatch(ignore_case=True)
    for r in recs:
        r.scores.update(asyncio_run(ours.score(r, None)))
    avhb = mean_stderr([r.scores["exact_match"] for r in recs])
    hf = EvaluateMetric(name="hf_exact_match", module="metrics/exact_match", base_dir=str(modules),
                        ignore_case=True, bootstrap_iters=1000).aggregate(recs)["hf_exact_match"]
    assert avhb.value == hf.value == 5 / 6 and hf.n == avhb.n == 6
    # a bootstrap stderr of a mean estimates the same thing as the sample stderr (here 0.167 vs ~0.15)
    assert abs(hf.stderr - avhb.stderr) < 0.25 * avhb.stderr
    # without ignore_case (the Hub module's default, and avhb's as lm-eval's) the case-only matches fail: 2 of 6
    strict = EvaluateMetric(module="metrics/exact_match", base_dir=str(modules)).aggregate(recs)
    ours_strict = ExactMatch()
    assert strict["exact_match"].value == 2 / 6 == sum(asyncio_run(ours_strict.score(r, None))["exact_match"]
                                                       for r in recs) / 6


def asyncio_run(coro):
    import asyncio

    return asyncio.run(coro)


def test_failed_samples_are_left_out_and_none_answers_are_empty(modules):
    recs = records(PAIRS, errors={0})
    recs[1].extracted = None  # a filter found nothing: the raw response is used
    recs[3].extracted, recs[3].response = None, None
    out = EvaluateMetric(module="metrics/token_f1.py", base_dir=str(modules)).aggregate(recs)
    expected = token_f1([PAIRS[1], PAIRS[2], ("", PAIRS[3][1])])
    assert out["token_f1_f1"].n == 3 and math.isclose(out["token_f1_f1"].value, expected["f1"])
    empty = EvaluateMetric(module="metrics/token_f1.py", base_dir=str(modules)).aggregate(records(PAIRS, {0, 1, 2, 3}))
    assert {k: (a.value, a.n) for k, a in empty.items()} == {"token_f1": (None, 0)}


def test_task_fallback_resolves_unknown_and_explicit_names_through_the_registry(modules):
    task = task_with([{"metric": "exact_match"},
                      {"metric": "evaluate/metrics/exact_match", "name": "hf_em", "ignore_case": True},
                      {"metric": "metrics/token_f1.py", "higher_is_better": False},
                      {"metric": "evaluate", "module": "metrics/token_f1.py", "keys": ["recall"]}], modules)
    em, hf_em, tf1, explicit = task.metrics()
    assert type(em) is ExactMatch
    assert isinstance(hf_em, EvaluateMetric) and hf_em.name == "hf_em" and hf_em.compute_kwargs == {"ignore_case": True}
    assert isinstance(tf1, EvaluateMetric) and tf1.name == "token_f1" and tf1.higher_is_better is False
    assert explicit.name == "token_f1" and explicit.keys == ["recall"]
    assert get_registry().entries["metrics"]["evaluate"] == "avhb.plugins.metrics.hf_evaluate:EvaluateMetric"


def test_offline_and_not_cached_is_one_line_naming_the_metric_and_avhb_prepare(modules, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError) as info:
        task_with([{"metric": "avhb_no_such_metric_xyz"}], modules).metrics()
    msg = str(info.value)
    assert "\n" not in msg and "avhb_no_such_metric_xyz" in msg and "avhb prepare TASK" in msg
    assert "not an avhb metric (known: " in msg and "exact_match" in msg  # a typo reads as one, too
    with pytest.raises(UserError) as info:
        task_with([{"metric": "evaluate/avhb_no_such_metric_xyz"}], modules).metrics()
    assert "not an avhb metric" not in str(info.value) and "HF_HUB_OFFLINE" in str(info.value)
    with pytest.raises(UserError, match=r"evaluate/metrics/nope.py.*no such file|no such file"):
        task_with([{"metric": "evaluate/metrics/nope.py"}], modules).metrics()


def test_bad_options_and_compute_failures_name_the_metric(modules):
    with pytest.raises(UserError, match="bootstrap_iters"):
        EvaluateMetric(module="metrics/token_f1.py", base_dir=str(modules), bootstrap_iters=-1)
    with pytest.raises(UserError, match="task .t.: metric evaluate: metric evaluate needs module"):
        task_with([{"metric": "evaluate"}], modules).metrics()
    bad = EvaluateMetric(module="metrics/token_f1.py", base_dir=str(modules), no_such_option=3)
    with pytest.raises(UserError, match=r"metric 'token_f1': evaluate's compute\(\) on 4 samples failed: TypeError"):
        bad.aggregate(records(PAIRS))
    broken = modules / "metrics" / "broken.py"
    broken.write_text("import evaluate\nraise RuntimeError('boom at import')\n")
    with pytest.raises(UserError, match="could not be loaded.*boom at import"):
        EvaluateMetric(module=str(broken))


def test_lm_evals_hf_evaluate_switch_takes_the_name_from_evaluate(modules):
    """lm-eval's ``hf_evaluate: true``: the name is an evaluate module even
    where avhb registers a metric of that name."""
    (ours,), (theirs,) = (task_with([e], modules).metrics() for e in (
        {"metric": "exact_match"}, {"metric": "metrics/exact_match", "hf_evaluate": True}))
    assert type(ours) is ExactMatch
    assert isinstance(theirs, EvaluateMetric) and theirs.compute_kwargs == {}
