"""lm-eval's ``custom_dataset``: the hook makes the task's data, called as
lm-eval 0.4.13's ``ConfigurableTask.download`` calls it,
``custom_dataset(**metadata, **dataset_kwargs)``, over any
``dataset_path`` (ruler's tasks set ``dataset_path: ""``), its result a
mapping of split -> rows; ``avhb prepare`` has nothing to fetch."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from avhb.data.sources import resolve_source
from avhb.errors import UserError
from avhb.registry import get_registry
from avhb.run.task import Task
from avhb.taskdef import include_path as include
from avhb.taskdef.config import resolve_file
from tests.conftest import run_cli

HOOK = '''
import json

CALLS = []


def make(**kwargs):
    CALLS.append(kwargs)
    rows = [{"question": f"{kwargs['prefix']}{i}", "answer": f"a{i}", "kwargs": json.dumps(kwargs, sort_keys=True)}
            for i in range(kwargs["n"])]
    return {"test": rows, "train": rows[:1]}


def a_list(**kwargs):
    return [{"question": "q"}]
'''

TASK = """
task: {name}
dataset_path: ""
custom_dataset: !function utils.{hook}
dataset_kwargs: {{n: 3}}
metadata: {metadata}
test_split: {split}
doc_to_text: "{{{{question}}}}"
doc_to_target: answer
metric_list:
  - metric: exact_match
"""


def _folder(tmp_path: Path, hook: str = "make", split: str = "test",
            metadata: str = "{version: 1.0, prefix: q}") -> Path:
    folder = tmp_path / "synth"
    folder.mkdir(exist_ok=True)
    (folder / "utils.py").write_text(HOOK)
    (folder / "synth.yaml").write_text(TASK.format(name="synth", hook=hook, split=split, metadata=metadata))
    return folder


@pytest.fixture(autouse=True)
def _forget_include_paths():
    yield
    include.clear()


def _task(folder: Path) -> Task:
    namespace = include.add_include_path(folder)
    (cfg,), _ = resolve_file(folder / "synth.yaml", folder, include.package_of(namespace), namespace)
    return Task(cfg, get_registry())


def test_the_hook_is_called_with_metadata_and_dataset_kwargs_and_its_split_read(tmp_path):
    task = _task(_folder(tmp_path))
    source = resolve_source(task.cfg, {}, sample_data=False)
    assert source.kind == "custom"
    docs = task.load_docs(source)
    assert [d["question"] for d in docs] == ["q0", "q1", "q2"]
    assert json.loads(docs[0]["kwargs"]) == {"version": 1.0, "prefix": "q", "n": 3}
    assert [d["question"] for d in task.load_docs(source, "train")] == ["q0"]
    assert len(task.hook("utils.make").__globals__["CALLS"]) == 1  # one call for both splits


def test_lmms_evals_list_metadata_is_passed_as_its_union(tmp_path):
    task = _task(_folder(tmp_path, metadata="[{version: 0.0}, {prefix: x}]"))
    docs = task.load_docs(resolve_source(task.cfg, {}, sample_data=False))
    assert json.loads(docs[0]["kwargs"]) == {"version": 0.0, "prefix": "x", "n": 3}


@pytest.mark.parametrize("hook, split, metadata, said", [
    ("a_list", "test", "{prefix: q}", "custom_dataset hook utils.a_list returned list, not a mapping of split -> rows"),
    ("make", "validation", "{prefix: q}", "split 'validation' is not in what its custom_dataset hook utils.make made "
                                          "(splits: test, train)"),
    ("make", "test", "{prefix: q, n: 2}", "custom_dataset hook utils.make: n set in both metadata and dataset_kwargs"),
])
def test_what_the_hook_cannot_give_is_one_line(tmp_path, hook, split, metadata, said):
    task = _task(_folder(tmp_path, hook, split, metadata))
    with pytest.raises(UserError) as err:
        task.load_docs(resolve_source(task.cfg, {}, sample_data=False))
    assert said in str(err.value)


def test_a_run_reads_the_hooks_data_and_prepare_fetches_nothing(tmp_path):
    folder = _folder(tmp_path)
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({"q0": "a0", "q1": "a1", "q2": "wrong"}))
    env = {"HF_HOME": str(tmp_path / "hf"), "AVHB_CACHE_DIR": str(tmp_path / "cache"),
           "AVHB_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"}
    proc = run_cli("--tasks", "synth/synth", "--include_path", str(folder), "--model", "scripted", "--model_args",
                   f"replies={replies}", "--no_report", "--output_path", str(tmp_path / "out"), env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "out" / "results.json").read_text())["results"]["synth/synth"]
    assert result["exact_match"] == pytest.approx(2 / 3)
    source = json.loads((tmp_path / "out" / "run.json").read_text())["tasks"]["synth/synth"]["data"]
    assert source["kind"] == "custom"
    prep = run_cli("prepare", "synth/synth", "--include_path", str(folder), env=env)
    assert prep.returncode == 0, prep.stderr
    assert "synth/synth: no preparation needed: its custom_dataset hook utils.make makes the data" in prep.stdout
    assert not (tmp_path / "data").exists()
