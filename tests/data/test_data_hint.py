"""The ``--data NAME=PATH`` a "not on this machine" message offers is one
that works: passed back as given, the run reads PATH (a folder task named
``gsm8k/gsm8k`` given as the folder itself, and one given as its parent
folder)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli

ROWS = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(3)]


def _task(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "gsm8k.yaml").write_text(json.dumps({
        "task": "gsm8k", "dataset_path": "org/gsm8k-copy", "test_split": "test", "doc_to_text": "{{question}}",
        "doc_to_target": "answer", "metric_list": [{"metric": "exact_match"}]}))


@pytest.mark.parametrize("layout", ["the task folder", "its parent folder"])
def test_the_hinted_data_name_is_read(tmp_path, layout):
    parent = tmp_path / "tasks"
    _task(parent / "gsm8k")
    include = parent / "gsm8k" if layout == "the task folder" else parent
    task = "gsm8k/gsm8k" if layout == "the task folder" else "tasks/gsm8k"
    data = tmp_path / "copy" / "test.jsonl"
    data.parent.mkdir()
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({r["question"]: r["answer"] for r in ROWS}))
    env = {"HF_HOME": str(tmp_path / "hf"), "AVHB_CACHE_DIR": str(tmp_path / "cache"),
           "AVHB_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"}
    args = ("--tasks", task, "--include_path", str(include), "--model", "scripted", "--model_args",
            f"replies={replies}", "--no_report")
    proc = run_cli(*args, "--output_path", str(tmp_path / "r0"), env=env)
    assert proc.returncode == 2
    hinted = re.search(r"--data (\S+)=PATH", proc.stderr)
    assert hinted, proc.stderr
    proc = run_cli(*args, "--output_path", str(tmp_path / "r1"), "--data", f"{hinted[1]}={data}", env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "r1" / "results.json").read_text())["results"][task]
    assert result["exact_match"] == 1.0
    source = json.loads((tmp_path / "r1" / "run.json").read_text())["tasks"][task]["data"]
    assert source["kind"] == "local" and source["root"] == str(data)
