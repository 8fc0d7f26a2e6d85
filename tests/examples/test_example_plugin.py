"""The example third-party plugin (examples/avhb-example-plugin), installed
with pip by the test setup, adds a task, a metric and a judge through the
entry point; they appear namespaced and run."""
from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli


def test_example_plugin_is_installed():
    import avhb_example  # noqa: F401  (scripts/test.sh installs it)


def test_example_registers_namespaced_names():
    proc = run_cli("list", "plugins")
    assert proc.returncode == 0, proc.stderr
    assert "example\tavhb-example-plugin 0.1.0\tthird-party" in proc.stdout
    assert "metrics: example/token_f1" in proc.stdout
    assert "judges: example/overlap_judge" in proc.stdout
    tasks = run_cli("list", "tasks").stdout.split("\n")
    assert any(line.startswith("example/capitals\t") for line in tasks)


def test_example_task_metric_and_judge_run(tmp_path):
    out = tmp_path / "run"
    proc = run_cli("--tasks", "example/capitals", "--model", "random,seed=3", "--sample-data",
                   "--judge", "overlap=example/overlap_judge", "--output-dir", str(out), "--no-report")
    assert proc.returncode == 0, proc.stderr
    res = json.loads((out / "results.json").read_text())["results"]["example/capitals"]
    samples = [json.loads(l) for l in (out / "samples" / "example__capitals.jsonl").read_text().splitlines()]
    assert len(samples) == 5 and res["token_f1_n"] == 5
    # hand-check each sample: the random baseline answers one of the options
    for s in samples:
        assert s["response"] in s["doc"]["options"]
        right = s["response"] == s["target"]
        assert s["scores"]["token_f1"] == (1.0 if right else 0.0)
        assert s["judgements"]["overlap"]["value"] == (5 if right else 1)
    assert res["token_f1"] == pytest.approx(sum(s["scores"]["token_f1"] for s in samples) / 5)
    assert res["judge_failures"] == 0
