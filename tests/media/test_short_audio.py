"""A video whose own audio track ends well before its picture (13 s of video,
3 s of sound) is said: :func:`avhb.media.probe.short_audio` on real encoded
files (H.264 + AAC mp4 written by PyAV; Matroska and WebM remuxed by
ffmpeg, whose audio length is only in a DURATION tag), and the adaptation
line ``materialize`` adds to the request."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from avhb.media.materialize import MediaPlan, materialize
from avhb.media.probe import probe, short_audio
from avhb.media.spec import MediaSpec
from avhb.model.backend import Capabilities
from avhb.model.messages import AudioPart, Message, Request, TextPart, VideoPart

from make_test_media import make_audio_file, make_video, tone_track  # tests/media/conftest.py puts it on the path

RATE = 16000


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("short_audio")
    tone = tone_track(3.0, RATE, [(0.0, 3.0, 440.0)])
    full = tone_track(4.0, RATE, [(0.0, 4.0, 440.0)])
    return {"short": make_video(str(folder / "short.mp4"), 13.0, 10, audio=tone),
            "full": make_video(str(folder / "full.mp4"), 4.0, 10, audio=full),
            "mute": make_video(str(folder / "mute.mp4"), 4.0, 10),
            "m4a": make_audio_file(str(folder / "tone.m4a"), tone, RATE),
            "folder": folder}


def test_a_13s_video_with_3s_of_sound_is_said(clips):
    info = probe(clips["short"])
    assert info.has_video and info.duration == pytest.approx(13.0, abs=0.05)
    assert info.audio_duration == pytest.approx(3.0, abs=0.05)
    assert short_audio(info) == ("audio track shorter than its video: short.mp4 has sound to 3.0s of its 13.0s "
                                 "picture; the rest is silent")


def test_a_segment_is_judged_by_what_it_spans(clips):
    info = probe(clips["short"])
    assert short_audio(info, (0.5, 2.5)) is None  # all of it has sound
    assert short_audio(info, (2.0, 8.0)) == ("audio track shorter than its video: short.mp4 has sound to 3.0s of its "
                                             "13.0s picture (segment 2-8s: 1.0s of 6.0s heard); the rest is silent")
    assert short_audio(info, (2.5, 3.2)) is None  # 0.2 s short: under a second
    assert short_audio(info, (20.0, 30.0)) is None  # past the end: nothing spanned


def test_tracks_of_the_same_length_no_picture_or_no_sound_say_nothing(clips):
    full = probe(clips["full"])
    assert full.audio_duration is not None and abs(full.audio_duration - full.duration) < 0.2  # AAC padding
    assert short_audio(full) is None
    assert short_audio(probe(clips["mute"])) is None  # no audio track
    assert short_audio(probe(clips["m4a"])) is None  # no picture


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg command")
@pytest.mark.parametrize("suffix,codecs", [("mkv", ["-c", "copy"]),
                                           ("webm", ["-c:v", "libvpx-vp9", "-b:v", "50k", "-c:a", "libopus"])])
def test_matroska_and_webm_give_the_length_in_a_tag(clips, suffix, codecs):
    out = str(clips["folder"] / f"short.{suffix}")
    subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", clips["short"], *codecs, out], check=True)
    info = probe(out)
    assert info.audio_duration == pytest.approx(3.0, abs=0.1)
    line = short_audio(info)
    assert line is not None and line.startswith(f"audio track shorter than its video: short.{suffix} has sound to 3.")


def _request(path: str, segment=None) -> Request:
    return Request(messages=[Message("user", [VideoPart(path=path, segment=segment),
                                              AudioPart(path=path, segment=segment), TextPart("What is heard?")])])


def test_materialize_adds_the_line_to_the_requests_adaptations(clips):
    plan = MediaPlan(MediaSpec.from_dict({"frames": 2}), (), "t")
    caps = Capabilities(images=8, video=True, audio=True, max_context=100_000)
    short = _request(clips["short"])
    log = materialize(short, plan, caps)
    assert log["audio"]["seconds"] == pytest.approx(3.0, abs=0.05)  # what the model hears
    assert [a for a in short.adaptations if a.startswith("audio track shorter")] == [
        short_audio(probe(clips["short"]))]
    full = _request(clips["full"])
    materialize(full, plan, caps)
    assert not [a for a in full.adaptations if a.startswith("audio track")]
