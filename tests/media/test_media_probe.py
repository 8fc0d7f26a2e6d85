import pytest

from avhb.errors import SampleError
from avhb.media import probe


def test_probe_video_with_audio(media):
    info = probe(media.tones)
    assert (info.duration, info.fps, info.frame_count) == (pytest.approx(4.0), 25.0, 100)
    assert (info.width, info.height, info.video_codec) == (160, 120, "h264")
    assert info.has_audio and info.audio_rate == 16000 and info.audio_channels == 1
    assert info.audio_codec == "aac"


def test_probe_stereo_silent_and_audio_only(media):
    assert probe(media.tones_stereo).audio_channels == 2
    assert probe(media.tones_stereo).audio_rate == 44100
    s = probe(media.silent)
    assert not s.has_audio and s.audio_rate is None and s.frame_count == 90
    w = probe(media.wav)
    assert not w.has_video and w.has_audio and w.duration == pytest.approx(4.0)
    assert w.frame_count == 0 and w.video_codec is None


def test_probe_unknown_codec_reports_none(media):
    info = probe(media.unknown_codec)
    assert info.has_video and info.video_codec is None


@pytest.mark.parametrize("which, reason", [
    ("missing", "file not found"), ("empty", "empty file"), ("garbage", "corrupt"),
    ("truncated", "corrupt or truncated")])
def test_probe_bad_files(media, which, reason):
    path = getattr(media, which)
    with pytest.raises(SampleError, match=reason) as ei:
        probe(path)
    assert str(ei.value).startswith(path + ": ")
