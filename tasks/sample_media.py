"""Synthetic media for the packs' sample data, shared by every pack's
``make_sample.py``: speech (espeak-ng), tones and their mixes, frames drawn
with numpy, pictures with text (Pillow), and H.264 video with an optional
AAC track (PyAV).  The same bytes each run for a given espeak-ng, FFmpeg
and Pillow, except video (``write_video``).

Waves are mono float32 at ``RATE`` (16 kHz) unless ``rate`` says otherwise;
frames and canvases are RGB uint8 arrays of shape (height, width, 3).
"""
from __future__ import annotations

import subprocess
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Iterable

import numpy as np

RATE = 16000

# ---------------------------------------------------------------- sounds


def speech(text: str, voice: str = "en", speed: int = 160, rate: int = RATE) -> np.ndarray:
    """``text`` spoken by espeak-ng (``voice``, ``speed`` words per minute),
    resampled linearly from espeak's own rate (enough for a test clip)."""
    import soundfile as sf

    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "speech.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(wav), text], check=True,
                       capture_output=True)
        data, native = sf.read(wav, dtype="float32", always_2d=True)
    mono = data.mean(axis=1)
    if native != rate:
        t_new = np.arange(int(len(mono) * rate / native)) / rate
        mono = np.interp(t_new, np.arange(len(mono)) / native, mono).astype(np.float32)
    return mono.astype(np.float32)


def fit(wave: np.ndarray, seconds: float, rate: int = RATE) -> np.ndarray:
    """``wave`` padded with silence or cut to ``seconds``."""
    n = int(seconds * rate)
    return np.pad(wave, (0, max(0, n - len(wave))))[:n].astype(np.float32)


def tone(freq: float, seconds: float, level: float = 0.4, decay: float = 0.0, fade: float = 0.0,
         rate: int = RATE) -> np.ndarray:
    """A sine at ``freq`` Hz: ``level`` peak, an exponential ``decay`` (1/s,
    a bell) and linear fades of ``fade`` seconds at both ends (no clicks)."""
    t = np.arange(int(seconds * rate)) / rate
    envelope = np.minimum(1.0, np.minimum(t, seconds - t) / fade) if fade else 1.0
    return (level * envelope * np.sin(2 * np.pi * freq * t) * np.exp(-decay * t)).astype(np.float32)


def silence(seconds: float, rate: int = RATE) -> np.ndarray:
    return np.zeros(int(seconds * rate), np.float32)


def mix(events: Iterable[tuple[float, np.ndarray]], seconds: float | None = None, rate: int = RATE) -> np.ndarray:
    """Sounds added at their start times (seconds), clipped to [-1, 1]; the
    result lasts ``seconds`` (sounds cut there) or, without it, until the
    last sound ends."""
    placed = [(int(at * rate), sound) for at, sound in events]  # (first sample, sound)
    n = int(seconds * rate) if seconds is not None else max((i + len(s) for i, s in placed), default=0)
    out = np.zeros(n, np.float32)
    for i, sound in placed:
        j = min(n, i + len(sound))
        out[i:j] += sound[: j - i]
    return np.clip(out, -1, 1)


# ---------------------------------------------------------------- pictures


def canvas(width: int, height: int, color: tuple[int, int, int]) -> np.ndarray:
    """A frame of one colour."""
    img = np.empty((height, width, 3), np.uint8)
    img[:] = color
    return img


def circle(img: np.ndarray, cx: float, cy: float, r: float, color: tuple[int, int, int]) -> None:
    """A filled circle, drawn in place."""
    yy, xx = np.ogrid[:img.shape[0], :img.shape[1]]
    img[(xx - cx) ** 2 + (yy - cy) ** 2 <= r * r] = color


def rect(img: np.ndarray, x0: float, y0: float, x1: float, y1: float, color: tuple[int, int, int]) -> None:
    """A filled rectangle from (x0, y0) to (x1, y1), exclusive, cut at the frame's edges; in place."""
    img[max(0, int(y0)):max(0, int(y1)), max(0, int(x0)):max(0, int(x1))] = color


def font(size: int):
    """Pillow's default font at ``size`` pixels (a bitmap font before Pillow 10.1)."""
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1
        return ImageFont.load_default()


def picture(size: tuple[int, int], color: tuple[int, int, int]):
    """A Pillow image of one colour (``size`` = (width, height)) and its ``ImageDraw``."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, color)
    return img, ImageDraw.Draw(img)


# ---------------------------------------------------------------- video


def write_video(path: Path, frames: Iterable[np.ndarray], fps: int, audio: np.ndarray | None = None, *,
                rate: int = RATE, crf: int = 30, preset: str = "veryslow", threads: int | None = None) -> None:
    """H.264 (yuv420p) at ``fps`` with, when ``audio`` is given, a mono AAC
    track at ``rate`` (24 kbit/s); ``crf``, ``preset`` and ``threads`` are
    x264's.  The bytes of a clip with motion can differ from one run to the
    next (x264 as PyAV ships it, one thread or several; decoded, two such
    files differ by a mean of about 0.1 of 255): a pack's tests read the
    pictures, never the bytes."""
    import av

    frames = list(frames)
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w", format="mp4") as out:
        options = {"crf": str(crf), "preset": preset, **({"threads": str(threads)} if threads else {})}
        vs = out.add_stream("libx264", rate=fps, options=options)
        vs.height, vs.width = frames[0].shape[:2]
        vs.pix_fmt = "yuv420p"
        if audio is not None:  # every stream before the first packet
            as_ = out.add_stream("aac", rate=rate, layout="mono")
            as_.bit_rate = 24000
        _encode(out, vs, (_video_frame(img, i, fps) for i, img in enumerate(frames)))
        if audio is not None:
            _encode(out, as_, (_audio_frame(audio[i:i + 1024], i, rate) for i in range(0, len(audio), 1024)))


def _encode(out, stream, frames) -> None:
    """Every frame through ``stream``'s encoder into ``out``, then the encoder's rest."""
    for frame in list(frames) + [None]:
        for packet in stream.encode(frame):
            out.mux(packet)


def _video_frame(img: np.ndarray, index: int, fps: int):
    import av

    frame = av.VideoFrame.from_ndarray(img, format="rgb24")
    frame.pts, frame.time_base = index, Fraction(1, fps)
    return frame


def _audio_frame(chunk: np.ndarray, start: int, rate: int):
    import av

    frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="fltp", layout="mono")
    frame.sample_rate, frame.pts, frame.time_base = rate, start, Fraction(1, rate)
    return frame
