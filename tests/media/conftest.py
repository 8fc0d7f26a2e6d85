"""Session-wide test media with known content (see tests/fixtures/make_test_media.py)."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fixtures"))

import make_test_media as mtm  # noqa: E402

RATE = 16000
TONES = [(1.0, 2.0, 440.0), (3.0, 3.5, 880.0)]


@dataclass
class Media:
    dir: str
    tones: str  # 4 s, 25 fps, 160x120, keyint 25, 16 kHz mono AAC tones
    tones_stereo: str  # same video, 44.1 kHz stereo tones
    silent: str  # 3 s, 30 fps, no audio
    long: str  # 40 s, 30 fps, 160x120, keyint 50, no audio
    speech: str  # 4 s, 24 fps, espeak "hello world" from 1.0 s
    speech_span: tuple[float, float]
    wav: str
    flac: str
    m4a: str
    empty: str
    garbage: str
    truncated: str  # moov at the end, cut: cannot open
    truncated_faststart: str  # moov first, data cut at 50 %
    unknown_codec: str
    missing: str


@pytest.fixture(scope="session")
def media(tmp_path_factory) -> Media:
    d = str(tmp_path_factory.mktemp("media"))
    p = lambda name: os.path.join(d, name)  # noqa: E731
    tones = mtm.tone_track(4.0, RATE, TONES)
    mtm.make_video(p("tones.mp4"), 4.0, 25, (160, 120), audio=tones, audio_rate=RATE, keyint=25)
    mtm.make_video(p("tones_stereo.mp4"), 4.0, 25, (160, 120),
                   audio=mtm.tone_track(4.0, 44100, TONES), audio_rate=44100, audio_channels=2)
    mtm.make_video(p("silent.mp4"), 3.0, 30, (160, 120))
    mtm.make_video(p("long.mp4"), 40.0, 30, (160, 120), keyint=50)
    speech = mtm.speech_track("hello world", RATE)
    nz = np.flatnonzero(np.abs(speech) > 0.02)
    span = (1.0 + nz[0] / RATE, 1.0 + nz[-1] / RATE)
    track = mtm.place(np.zeros(4 * RATE, np.float32), speech, 1.0, RATE)
    mtm.make_video(p("speech.mp4"), 4.0, 24, (160, 120), audio=track, audio_rate=RATE)
    mtm.make_audio_file(p("tones.wav"), tones, RATE)
    mtm.make_audio_file(p("tones.flac"), mtm.tone_track(4.0, 22050, TONES), 22050, channels=2)
    mtm.make_audio_file(p("tones.m4a"), mtm.tone_track(4.0, 48000, TONES), 48000)
    open(p("empty.mp4"), "wb").close()
    with open(p("garbage.mp4"), "wb") as f:
        f.write(np.random.default_rng(0).integers(0, 256, 20000, dtype=np.uint8).tobytes())
    mtm.truncate_copy(p("long.mp4"), p("truncated.mp4"), 0.5)
    mtm.make_video(p("faststart.mp4"), 10.0, 30, (160, 120), keyint=30, faststart=True)
    mtm.truncate_copy(p("faststart.mp4"), p("truncated_faststart.mp4"), 0.5)
    mtm.unknown_codec_copy(p("silent.mp4"), p("unknown_codec.mp4"))
    return Media(dir=d, tones=p("tones.mp4"), tones_stereo=p("tones_stereo.mp4"),
                 silent=p("silent.mp4"), long=p("long.mp4"), speech=p("speech.mp4"),
                 speech_span=span, wav=p("tones.wav"), flac=p("tones.flac"), m4a=p("tones.m4a"),
                 empty=p("empty.mp4"), garbage=p("garbage.mp4"), truncated=p("truncated.mp4"),
                 truncated_faststart=p("truncated_faststart.mp4"),
                 unknown_codec=p("unknown_codec.mp4"), missing=p("does_not_exist.mp4"))


@pytest.fixture(scope="session")
def decode_index():
    return mtm.decode_index


@pytest.fixture(scope="session")
def fixtures_module():
    return mtm
