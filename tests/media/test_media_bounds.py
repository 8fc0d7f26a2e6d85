"""Issue 15, defect 4 (and 13's "got '1e9'"): media numbers are bounded by
what media can hold, read as numbers, and frame indices never iterate over
an impossible count."""
from __future__ import annotations

import random
import signal
import time
from contextlib import contextmanager

import pytest

from avhb.errors import UserError
from avhb.media.indices import _by_frames, _by_times, fps_indices, select_indices
from avhb.media.spec import MediaSpec
from avhb.model.backend import parse_kv


@contextmanager
def deadline(seconds: int):
    """Fail (instead of hanging the suite) when the block runs too long."""
    def boom(*_):
        raise TimeoutError(f"took more than {seconds}s")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_huge_fps_selects_each_frame_once_without_iterating_sample_times():
    with deadline(5):
        start = time.perf_counter()
        assert select_indices(300, 30.0, fps=1e9) == list(range(300))
        assert select_indices(300, 30.0, fps=1e9, segment=(2.0, 3.0)) == list(range(60, 90))
        assert len(select_indices(10_000_000, 30.0, fps=1000.0, max_frames=64)) == 64
        assert time.perf_counter() - start < 2


def test_frame_walk_equals_time_walk():
    rng = random.Random(7)
    for _ in range(2000):
        src = rng.choice([24, 25, 29.97, 30, 60, 1, 0.5])
        count = rng.randint(1, 120)
        fps = src * rng.choice([1, 1.01, 2, 3.3, 10, 0.5])
        a = rng.randint(0, count - 1)
        b = rng.randint(a + 1, count)
        start, end = a / src, b / src - rng.choice([0, 1e-7, 0.2 / src])
        if end <= start:
            continue
        assert _by_frames(a, b, src, fps, start, end) == _by_times(a, b, src, fps, start, end)
        cap = rng.randint(1, 10)
        assert _by_frames(a, b, src, fps, start, end, cap) == _by_times(a, b, src, fps, start, end, cap)


def test_fps_indices_unchanged_on_ordinary_rates():
    assert fps_indices(0, 90, 30.0, 1.0, 0.0, 3.0) == [0, 30, 60]
    assert fps_indices(0, 90, 30.0, 1.0, 0.0, 3.0, include_last=True) == [0, 30, 60, 89]
    assert fps_indices(0, 90, 30.0, 2.0, 0.0, 3.0, max_frames=4) == [11, 33, 56, 78]


def test_exponent_numbers_are_numbers():
    assert parse_kv("fps=1e9,frames=8,t=2E-3,name=1e9x") == {"fps": 1e9, "frames": 8, "t": 0.002, "name": "1e9x"}


@pytest.mark.parametrize("override, message", [
    ({"fps": 1e9}, "--media.fps: must be at most 1000 frames per second, got 1e+09"),
    ({"fps": float("inf")}, "--media.fps: must be at most 1000 frames per second, got inf"),
    ({"fps": float("nan")}, "--media.fps: must be a positive number, got nan"),
    ({"frames": 10**9}, "--media.frames: must be at most 100000, got 1e+09"),
    ({"max_side": 10**6}, "--media.max_side: must be at most 16384"),
    ({"audio_rate": 10**9}, "--media.audio_rate: must be at most 384000 samples per second"),
    ({"chunks": {"seconds": 1e12}}, "--media.chunks.seconds: must be at most 604800 seconds"),
    ({"boxes_key_fps": 1e6}, "--media.boxes_key_fps: must be at most 1000"),
])
def test_media_numbers_are_bounded(override, message):
    with pytest.raises(UserError) as info:
        MediaSpec.from_dict(override, where="--media")
    assert str(info.value) == message or str(info.value).startswith(message)


def test_cli_fps_1e9_is_refused_with_its_value(testpack, tmp_path):
    from tests.conftest import run_cli

    proc = run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data",
                   "--media", "fps=1e9", "--output-dir", str(tmp_path / "run"), timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == "avhb: error: --media.fps: must be at most 1000 frames per second, got 1e+09"
