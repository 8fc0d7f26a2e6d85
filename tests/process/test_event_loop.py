"""The run's event loop (avhb.process.event_loop): uvloop's when installed."""
from __future__ import annotations

import asyncio

import pytest

import avhb
from avhb.model.backend import parse_backend_spec
from avhb.process import event_loop


def test_run_returns_the_coroutines_value_on_uvloop():
    uvloop = pytest.importorskip("uvloop")

    async def which() -> type:
        return type(asyncio.get_running_loop())

    assert issubclass(event_loop.run(which()), uvloop.Loop)


def test_run_falls_back_to_asyncio_without_uvloop(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "uvloop", None)  # an import of uvloop now raises ImportError

    async def which() -> type:
        return type(asyncio.get_running_loop())

    assert not event_loop.run(which()).__module__.startswith("uvloop")


def test_an_evaluation_calls_the_model_on_the_run_loop(testpack, tmp_path, monkeypatch):
    uvloop = pytest.importorskip("uvloop")
    from avhb_testpack.backends import EchoBackend

    loops: list[type] = []
    answer = EchoBackend.generate

    async def generate(self, request):
        loops.append(type(asyncio.get_running_loop()))
        return await answer(self, request)

    monkeypatch.setattr(EchoBackend, "generate", generate)
    avhb.evaluate(avhb.RunOptions(tasks=["testpack/qa_easy"], model=parse_backend_spec("testpack/echo"),
                                  output_dir=tmp_path / "run", sample_data=True, write_report=False))
    assert loops and all(issubclass(t, uvloop.Loop) for t in loops)
