"""Offline speech-to-text with faster-whisper (CPU, int8).

``transcribe(audio)`` takes a mono float32 waveform (16 kHz unless ``rate``
says otherwise) or an audio/video file path and returns a :class:`Transcript`:
the full text and its segments ``(start, end, text)`` in seconds.  A loaded
model is kept for the life of the process (one per model name) and used by one
thread at a time.

Definitions:

* ``offset`` is added to every segment time, so a clip cut from a longer file
  at ``segment=(12.0, 20.0)`` reports times in the source's clock.
* The same waveform (by content) is transcribed once per process; a repeat
  returns the remembered transcript with ``seconds=0``.
* A waveform whose peak amplitude is below ``SILENCE_PEAK`` is silence: the
  transcript is empty and the model is not run (Whisper invents words such as
  "Thank you." on silence).
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from avhb import SampleError

from .offline_models import asr_model_name, hub_offline, require, whisper_model

SAMPLE_RATE = 16_000
SILENCE_PEAK = 1e-3
CPU_THREADS = 2

MEMO_SIZE = 256

_lock = threading.Lock()
# Transcripts of recent waveforms (sha1 of the 16 kHz samples, model, language,
# beam): benchmarks ask several questions about one clip.
_memo: OrderedDict[tuple, Transcript] = OrderedDict()


@dataclass
class Transcript:
    """``text``: the segments' texts joined by spaces; ``segments``:
    ``(start_s, end_s, text)``; ``seconds``: wall time spent transcribing."""

    text: str
    segments: list[tuple[float, float, str]] = field(default_factory=list)
    language: str | None = None
    model: str = ""
    seconds: float = 0.0

    def timestamped(self, digits: int = 1) -> str:
        """One line per segment: ``[0.0-2.5] text``."""
        return "\n".join(f"[{s:.{digits}f}-{e:.{digits}f}] {t}" for s, e, t in self.segments)


@lru_cache(maxsize=4)
def load_model(name: str = "whisper-base") -> Any:
    """The faster-whisper model for ``name``, loaded once per process."""
    fw = require("faster_whisper", "speech-to-text")
    files = whisper_model(name)
    with hub_offline():
        return fw.WhisperModel(str(files.path), device="cpu", compute_type="int8", cpu_threads=CPU_THREADS)


def load_audio(path: str | Path, segment: tuple[float, float] | None = None) -> np.ndarray:
    """Decode any audio or video file's first audio track to mono float32 at
    16 kHz, optionally cut to ``segment`` (seconds)."""
    if not Path(path).is_file():
        raise SampleError(f"audio file not found: {path}")
    fw = require("faster_whisper", "speech-to-text")
    try:
        audio = fw.decode_audio(str(path), sampling_rate=SAMPLE_RATE)
    except Exception as exc:  # PyAV raises many types for corrupt or track-less files
        raise SampleError(f"cannot decode audio from {path}: {exc}") from None
    if segment is not None:
        start, end = segment
        audio = audio[max(0, int(start * SAMPLE_RATE)): max(0, int(end * SAMPLE_RATE))]
    return np.ascontiguousarray(audio, dtype=np.float32)


def resample(audio: np.ndarray, rate: int, target: int = SAMPLE_RATE) -> np.ndarray:
    """Mono float32 ``audio`` at ``rate`` Hz -> ``target`` Hz (FFmpeg's
    resampler through PyAV)."""
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim == 2:  # (samples, channels) or (channels, samples): average to mono
        audio = audio.mean(axis=0 if audio.shape[0] < audio.shape[1] else 1)
    if rate == target or audio.size == 0:
        return np.ascontiguousarray(audio)
    import av

    frame = av.AudioFrame.from_ndarray(audio.reshape(1, -1), format="flt", layout="mono")
    frame.sample_rate = rate
    resampler = av.AudioResampler(format="flt", layout="mono", rate=target)
    out = [f.to_ndarray().reshape(-1) for f in resampler.resample(frame)]
    out += [f.to_ndarray().reshape(-1) for f in resampler.resample(None)]
    return np.ascontiguousarray(np.concatenate(out) if out else np.zeros(0, np.float32))


def transcribe(
    audio: np.ndarray | str | Path,
    model: str = "whisper-base",
    *,
    rate: int = SAMPLE_RATE,
    language: str | None = None,
    segment: tuple[float, float] | None = None,
    offset: float | None = None,
    beam_size: int = 1,
) -> Transcript:
    """Transcribe a waveform or a file.

    ``segment`` cuts a file (or waveform) to ``(start, end)`` seconds; segment
    times are then reported from ``segment[0]`` on unless ``offset`` is given.
    ``language`` None lets Whisper detect it (``whisper-tiny.en`` is English only).
    """
    name = asr_model_name(model)
    if isinstance(audio, (str, Path)):
        wave = load_audio(audio, segment)
    else:
        wave = resample(audio, rate)
        if segment is not None:
            wave = wave[max(0, int(segment[0] * SAMPLE_RATE)): max(0, int(segment[1] * SAMPLE_RATE))]
    shift = offset if offset is not None else (segment[0] if segment else 0.0)
    if wave.size == 0 or float(np.max(np.abs(wave))) < SILENCE_PEAK:
        return Transcript("", [], language, name, 0.0)
    if name.endswith(".en"):
        language = "en"
    key = (hashlib.sha1(wave.tobytes()).hexdigest(), name, language, beam_size)
    with _lock:
        hit = _memo.get(key)
        if hit is not None:
            _memo.move_to_end(key)
            return _shifted(hit, shift, seconds=0.0)
        whisper = load_model(name)
        t0 = time.perf_counter()
        segments_iter, info = whisper.transcribe(
            wave, language=language, beam_size=beam_size, condition_on_previous_text=False, vad_filter=False
        )
        segments = [(s.start, s.end, s.text.strip()) for s in segments_iter]
        segments = [s for s in segments if s[2]]
        text = " ".join(t for _, _, t in segments)
        found = Transcript(text, segments, getattr(info, "language", language), name, time.perf_counter() - t0)
        _memo[key] = found
        while len(_memo) > MEMO_SIZE:
            _memo.popitem(last=False)
    return _shifted(found, shift)


def _shifted(tr: Transcript, shift: float, seconds: float | None = None) -> Transcript:
    segments = [(round(s + shift, 3), round(e + shift, 3), t) for s, e, t in tr.segments]
    return Transcript(tr.text, segments, tr.language, tr.model, tr.seconds if seconds is None else seconds)


transcribe.requires = (("faster_whisper", "asr"),)  # type: ignore[attr-defined]  # checked before the first task


def transcribe_part(part: Any, model: str = "whisper-base", language: str | None = None) -> Transcript:
    """Transcribe an :class:`~avhb.model.messages.AudioPart`: its waveform when it
    has one (at ``part.rate``, default 16 kHz; times offset by
    ``part.segment[0]``), else its file cut to ``part.segment``.
    ``language`` (the backend's own setting) wins over the part's (the
    task's ``media.asr_language``); with neither, Whisper detects it."""
    language = language or getattr(part, "language", None)
    if part.array is not None:
        offset = part.segment[0] if part.segment else 0.0
        return transcribe(part.array, model, rate=part.rate or SAMPLE_RATE, language=language, offset=offset)
    if part.path:
        return transcribe(part.path, model, language=language, segment=part.segment)
    raise SampleError("audio part has neither a waveform nor a file path")
