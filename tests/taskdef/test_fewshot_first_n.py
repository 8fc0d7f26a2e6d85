"""``fewshot_config.fewshot_indices`` with the ``first_n`` sampler
(avhb/taskdef/fewshot.py): the first n of the whole pool, the indices not
applied, as lm-eval 0.4.13 draws them (its ``FirstNSampler`` reads the
pool it was built with, and the task builds it as ``sampler_cls(docs,
rnd=None)``: no indices).  Checked by hand, and against lm-eval's own
task in its venv when that is installed."""
from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from avhb.taskdef.fewshot import Sampler

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("AVHB_LMEVAL_VENV", ROOT / ".venv-lmeval"))
TRAIN = [{"q": f"tq{i}", "a": f"ta{i}"} for i in range(6)]
TEST = [{"q": f"q{i}", "a": f"a{i}"} for i in range(3)]


def test_first_n_takes_the_pools_first_n_whatever_the_indices():
    assert Sampler("first_n", TRAIN, 0, indices=[4, 5]).draw(2, None) == TRAIN[:2]
    assert Sampler("first_n", TRAIN, 0, indices=[4, 5]).draw(2, TRAIN[0]) == TRAIN[1:3]  # the evaluated doc left out
    assert Sampler("first_n", TRAIN, 0, indices=[3]).draw(4, None) == TRAIN[:4]  # more than the indices name


@pytest.mark.slow  # lm-eval's venv builds its own prompts
@pytest.mark.skipif(not (VENV / "bin" / "python").exists(), reason=f"lm-eval is not installed in {VENV}")
def test_lm_evals_first_n_task_prompts_are_the_same(tmp_path):
    for name, rows in (("train", TRAIN), ("test", TEST)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    script = textwrap.dedent(f"""
        import json
        from lm_eval.api.task import ConfigurableTask
        cfg = {{"task": "t", "dataset_path": "json", "dataset_kwargs": {{"data_files": {{
                   "train": "{tmp_path / 'train.jsonl'}", "test": "{tmp_path / 'test.jsonl'}"}}}},
               "test_split": "test", "fewshot_split": "train", "output_type": "generate_until",
               "doc_to_text": "{{{{q}}}}", "doc_to_target": "{{{{a}}}}", "num_fewshot": 2,
               "fewshot_config": {{"sampler": "first_n", "fewshot_indices": [4, 5]}}}}
        task = ConfigurableTask(config=cfg)
        print("PROMPTS=" + json.dumps([task.fewshot_context(doc, 2) for doc in task.test_docs()]))
        """)
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    proc = subprocess.run([str(VENV / "bin" / "python"), "-c", script], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = json.loads(proc.stdout.split("PROMPTS=", 1)[1])
    sampler = Sampler("first_n", TRAIN, 1234, indices=[4, 5])
    ours = ["\n\n".join([f"{d['q']} {d['a']}" for d in sampler.draw(2, None)] + [doc["q"]]) for doc in TEST]
    assert theirs == ours
