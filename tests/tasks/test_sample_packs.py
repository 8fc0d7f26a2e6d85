"""Every pack's ``make_sample.py`` rebuilds the sample pack that is shipped,
through the one shared media module (``avhb.tasks.sample_media``): the same
files, every non-video file byte for byte, and each video with the same
audio and the same pictures: x264's bytes can differ from run to run
(``sample_media.write_video``), so frames are compared decoded, within that
variation (mean absolute difference at most 0.25 of 255; two encodings of
VidPair's rolling ball measured 0.01 and 0.11; the ball one pixel to the
side is about 0.4)."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from avhb.tasks import sample_media as sm

TASKS = Path(sm.__file__).resolve().parent
NEEDS = {"curve": ["espeak-ng"], "anchor": ["espeak-ng"], "have": ["espeak-ng", "ffmpeg"], "vidpair_halluc": [],
         "mmlongcite": []}


def test_every_pack_with_a_sample_script_is_checked():
    assert sorted(p.parent.name for p in TASKS.glob("*/make_sample.py")) == sorted(NEEDS)


def _streams(path: Path) -> dict[str, str]:
    import av

    out: dict[str, hashlib._Hash] = {}
    with av.open(str(path)) as c:
        for packet in c.demux():
            if packet.size:
                out.setdefault(packet.stream.type, hashlib.sha256()).update(bytes(packet))
    return {k: v.hexdigest() for k, v in out.items()}


def _frames(path: Path) -> np.ndarray:
    import av

    with av.open(str(path)) as c:
        return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)]).astype(int)


@pytest.mark.parametrize("pack", sorted(NEEDS))
def test_make_sample_rebuilds_the_shipped_pack(pack, tmp_path):
    missing = [tool for tool in NEEDS[pack] if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{pack}/make_sample.py needs {', '.join(missing)}")
    shipped = TASKS / pack / "sample"
    out = tmp_path / "sample"
    proc = subprocess.run([sys.executable, "-m", f"avhb.tasks.{pack}.make_sample", str(out)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    files = sorted(p.relative_to(shipped).as_posix() for p in shipped.rglob("*") if p.is_file())
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == files
    for rel in files:
        a, b = shipped / rel, out / rel
        if rel.endswith(".mp4"):
            sa, sb = _streams(a), _streams(b)
            assert sa.keys() == sb.keys() and sa.get("audio") == sb.get("audio"), rel
            fa, fb = _frames(a), _frames(b)
            assert fa.shape == fb.shape and np.abs(fa - fb).mean() <= 0.25, rel
        else:
            assert a.read_bytes() == b.read_bytes(), rel


# ---------------------------------------------------------------- the helpers, on hand-computed cases


def test_tone_level_decay_and_fades():
    t = sm.tone(1000, 0.01, level=0.5, rate=4000)  # 40 samples, a quarter period per sample
    assert t.dtype == np.float32 and len(t) == 40
    assert t[1] == pytest.approx(0.5) and t[3] == pytest.approx(-0.5) and t[2] == pytest.approx(0.0, abs=1e-6)
    bell = sm.tone(1000, 0.01, level=0.5, decay=100.0, rate=4000)
    assert bell[1] == pytest.approx(0.5 * np.exp(-100 * 1 / 4000))
    faded = sm.tone(1000, 0.02, level=0.5, fade=0.005, rate=4000)  # 80 samples, 20 of fade at each end
    assert faded[0] == 0.0 and faded[1] == pytest.approx(0.5 * 0.05)  # sin = 1 at samples 1, 41, 77
    assert faded[41] == pytest.approx(0.5) and faded[77] == pytest.approx(0.5 * (0.02 - 77 / 4000) / 0.005)


def test_mix_places_cuts_and_clips():
    one = np.ones(4, np.float32)
    assert sm.mix([(0.0, one * 0.5), (0.5, one * 0.75)], rate=4).tolist() == [0.5, 0.5, 1.0, 1.0, 0.75, 0.75]
    assert sm.mix([(0.5, one)], seconds=1.0, rate=4).tolist() == [0, 0, 1, 1]  # cut at the end
    assert sm.mix([], seconds=0.5, rate=4).tolist() == [0, 0] and len(sm.mix([])) == 0
    assert sm.fit(one, 0.5, rate=4).tolist() == [1, 1] and sm.fit(one, 1.5, rate=4).tolist() == [1, 1, 1, 1, 0, 0]
    assert sm.silence(0.5, rate=4).tolist() == [0, 0]


def test_shapes_are_drawn_in_place_and_cut_at_the_edges():
    img = sm.canvas(5, 4, (1, 2, 3))
    assert img.shape == (4, 5, 3) and img.dtype == np.uint8 and (img == (1, 2, 3)).all()
    sm.rect(img, -2, -1, 2.9, 1, (9, 9, 9))  # x 0..1, y 0 (exclusive ends, floats truncated)
    assert [(y, x) for y in range(4) for x in range(5) if img[y, x, 0] == 9] == [(0, 0), (0, 1)]
    img = sm.canvas(5, 5, (0, 0, 0))
    sm.circle(img, 2, 2, 1, (7, 7, 7))
    assert [(y, x) for y in range(5) for x in range(5) if img[y, x, 0] == 7] == [(1, 2), (2, 1), (2, 2), (2, 3), (3, 2)]


def test_speech_is_espeak_resampled(tmp_path):
    if shutil.which("espeak-ng") is None:
        pytest.skip("needs espeak-ng")
    wave = sm.speech("one two three", voice="en", speed=160)
    assert wave.dtype == np.float32 and 0.5 < len(wave) / sm.RATE < 3 and np.abs(wave).max() > 0.05
    slow = sm.speech("one two three", voice="en", speed=80)
    assert len(slow) > 1.5 * len(wave)
