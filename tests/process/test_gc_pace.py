"""The collector's pace during a run (avhb.process.gc_pace): raised while the
run's calls are made, the caller's thresholds back afterwards."""
from __future__ import annotations

import gc

import avhb
from avhb.model.backend import parse_backend_spec
from avhb.process.gc_pace import YOUNG_THRESHOLD, run_pace


def test_run_pace_raises_the_young_threshold_and_restores_the_callers():
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with run_pace():
            assert gc.get_threshold() == (YOUNG_THRESHOLD, 20, 20)
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(200_000, 50, 5)  # a caller's higher thresholds are kept, not lowered
        with run_pace():
            assert gc.get_threshold() == (200_000, 50, 20)
        assert gc.get_threshold() == (200_000, 50, 5)
    finally:
        gc.set_threshold(*before)


def test_run_pace_leaves_a_disabled_threshold_disabled_and_restores_after_a_failure():
    before = gc.get_threshold()
    try:
        gc.set_threshold(0, 10, 10)
        with run_pace():
            assert gc.get_threshold()[0] == 0
        gc.set_threshold(700, 10, 10)
        try:
            with run_pace():
                raise RuntimeError("a failed run")
        except RuntimeError:
            pass
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_an_evaluation_calls_the_model_at_the_run_pace_and_restores_it(testpack, tmp_path, monkeypatch):
    from avhb_testpack.backends import EchoBackend

    seen: list[tuple[int, int, int]] = []
    answer = EchoBackend.generate

    async def generate(self, request):
        seen.append(gc.get_threshold())
        return await answer(self, request)

    monkeypatch.setattr(EchoBackend, "generate", generate)
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        avhb.evaluate(avhb.RunOptions(tasks=["testpack/qa_easy"], model=parse_backend_spec("testpack/echo"),
                                      output_dir=tmp_path / "run", sample_data=True, write_report=False))
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)
    assert seen and all(t[0] == YOUNG_THRESHOLD for t in seen)
