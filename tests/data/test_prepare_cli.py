"""`avhb prepare TASK` against a local fake Hub, then a run that reads only
the prepared snapshot (no --data, no --sample-data)."""
from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.servers.hub_server import FakeHub


def test_prepare_then_run_offline(testpack, tmp_path):
    hub = FakeHub()
    sample = testpack / "avhb_testpack" / "tasks" / "qa" / "sample"
    hub.publish("avhb-test/qa", sample)
    env = {"AVHB_DATA_DIR": str(tmp_path / "data"), "HF_HOME": str(tmp_path / "hf"), "HF_TOKEN": ""}
    env_offline = dict(env, HF_HUB_OFFLINE="1")
    # before prepare: the run explains how to get the data
    proc = run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--output-dir", str(tmp_path / "r0"),
                   env=env_offline)
    assert proc.returncode == 2 and "avhb prepare testpack/qa_easy" in proc.stderr
    with hub.serve() as url:
        online = dict(env, HF_ENDPOINT=url)
        offline_vars = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
        proc = run_cli("prepare", "testpack/qa_all", env=online, unset=offline_vars)
        assert proc.returncode == 0, proc.stderr
        first = len(hub.downloads())
        assert first == 2  # easy.jsonl and hard.jsonl, once for both tasks
        proc = run_cli("prepare", "testpack/qa_easy", env=online, unset=offline_vars)
        assert proc.returncode == 0 and len(hub.downloads()) == first  # complete: nothing re-fetched
    # the hub is gone: the run reads the prepared snapshot only
    out = tmp_path / "run"
    proc = run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--output-dir", str(out), "--no-report",
                   env=env_offline)
    assert proc.returncode == 0, proc.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["tasks"]["testpack/qa_easy"]["data"]["kind"] == "hub"
    assert json.loads((out / "results.json").read_text())["results"]["testpack/qa_easy"]["exact"] == 1.0
