"""``--model KIND:model=NAME,ARGS`` (the form docs/cluster.md uses) names
the model NAME for every backend, as ``KIND:NAME,ARGS`` does; a spec that
names it both ways is refused in one line."""
from __future__ import annotations

import json

import pytest

from avhb.errors import UserError
from avhb.model.backend import BackendSpec, parse_backend_spec
from tests.conftest import run_cli


@pytest.mark.parametrize("kind", ["vllm", "openai", "litellm", "local", "testpack/echo"])
def test_model_equals_is_the_name_for_every_backend(kind):
    assert parse_backend_spec(f"{kind}:model=/ckpt/run=3,dtype=half") == \
        parse_backend_spec(f"{kind}:/ckpt/run=3,dtype=half") == BackendSpec(kind, "/ckpt/run=3", {"dtype": "half"})
    assert parse_backend_spec(f"{kind}:model=org/m") == BackendSpec(kind, "org/m", {})


def test_a_preset_with_a_model_argument_keeps_both():
    """vllm's ``model`` argument (a checkpoint in place of the preset's,
    docs/cluster.md) is an argument, not the name."""
    assert parse_backend_spec("vllm:Qwen3-VL,model=Qwen/Qwen3-VL-235B-A22B-Instruct,tensor_parallel_size=8") == \
        BackendSpec("vllm", "Qwen3-VL", {"model": "Qwen/Qwen3-VL-235B-A22B-Instruct", "tensor_parallel_size": 8})
    assert parse_backend_spec("vllm:modelx=1").name == "modelx=1"  # only the key "model" is the name


def test_the_name_given_twice_is_refused():
    with pytest.raises(UserError, match=r"names the model twice \(model=/a and model=/b\)"):
        parse_backend_spec("vllm:model=/a,model=/b")
    with pytest.raises(UserError, match="names the model twice"):
        parse_backend_spec("vllm:model=/a", "model=/b")  # --model-args too


def test_the_cli_runs_the_model_named_by_model_equals(testpack, tmp_path):
    out = tmp_path / "run"
    proc = run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo:model=named", "--sample-data",
                   "--output-dir", str(out), "--no-report")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "run.json").read_text())["model"]["name"] == "named"
    twice = run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo:model=a,model=b", "--sample-data",
                    "--output-dir", str(tmp_path / "twice"), "--no-report")
    assert twice.returncode == 2 and "Traceback" not in twice.stderr
    assert [line for line in twice.stderr.splitlines() if line.strip()] == [
        "avhb: error: model spec 'testpack/echo:model=a,model=b' names the model twice (model=a and model=b): "
        "write BACKEND:NAME or BACKEND:model=NAME, not both"]
