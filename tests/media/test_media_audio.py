"""Audio loading: tone spans at exact times, rates, channels, files, speech."""
import numpy as np
import pytest

from avhb.errors import SampleError
from avhb.media import load_audio, probe


def rms(x):
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if len(x) else 0.0


def dominant_hz(x, rate):
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.fft.rfftfreq(len(x), 1 / rate)[np.argmax(spec)])


def onsets(y, rate, offset=0.0, thr=0.1):
    nz = np.flatnonzero(np.abs(y) > thr)
    return offset + nz[0] / rate, offset + nz[-1] / rate


@pytest.mark.parametrize("which", ["tones", "tones_stereo", "wav", "flac", "m4a"])
def test_tone_spans_and_frequencies(media, which):
    path = getattr(media, which)
    y = load_audio(path, rate=16000)
    assert y.dtype == np.float32 and y.ndim == 1
    assert len(y) >= 4 * 16000 - 10
    s = lambda a, b: y[int(a * 16000):int(b * 16000)]  # noqa: E731
    assert rms(s(0.1, 0.9)) < 0.005 and rms(s(2.1, 2.9)) < 0.005  # silence
    assert rms(s(1.1, 1.9)) > 0.2 and rms(s(3.1, 3.4)) > 0.2
    assert dominant_hz(s(1.1, 1.9), 16000) == pytest.approx(440, abs=2)
    assert dominant_hz(s(3.1, 3.4), 16000) == pytest.approx(880, abs=4)
    first, last = onsets(y, 16000)
    assert first == pytest.approx(1.0, abs=0.005) and last == pytest.approx(3.5, abs=0.005)


def test_mono_amplitude_and_stereo_downmix(media):
    mono = load_audio(media.tones, 16000)
    assert np.abs(mono[16000:32000]).max() == pytest.approx(0.5, abs=0.05)
    # identical L and R mixed down by libswresample's matrix: (L + R) / sqrt(2)
    stereo = load_audio(media.tones_stereo, 16000)
    assert np.abs(stereo[16000:32000]).max() == pytest.approx(0.5 * np.sqrt(2), abs=0.05)


@pytest.mark.parametrize("rate", [8000, 16000, 24000, 48000])
def test_rates_and_segments(media, rate):
    y = load_audio(media.tones, rate=rate, segment=(0.5, 2.5))
    assert len(y) == 2 * rate
    first, last = onsets(y, rate, offset=0.5)
    assert first == pytest.approx(1.0, abs=0.005) and last == pytest.approx(2.0, abs=0.005)
    y = load_audio(media.tones, rate=rate, segment=(3.25, 10.0))  # end clipped to the media
    info = probe(media.tones)
    assert len(y) == round((info.duration - 3.25) * rate)
    assert onsets(y, rate, offset=3.25)[1] == pytest.approx(3.5, abs=0.005)


def test_speech_span(media):
    y = load_audio(media.speech, 16000)
    a, b = media.speech_span
    first, last = onsets(y, 16000, thr=0.02)
    assert first == pytest.approx(a, abs=0.01) and last == pytest.approx(b, abs=0.02)
    assert rms(y[:int(0.9 * 16000)]) < 0.002
    assert rms(y[int(a * 16000):int(b * 16000)]) > 0.02


def test_missing_audio_track(media):
    with pytest.raises(SampleError) as ei:
        load_audio(media.silent)
    assert str(ei.value) == f"{media.silent}: no audio track (this sample needs audio)"
    z = load_audio(media.silent, 16000, on_missing="silence")
    assert z.dtype == np.float32 and len(z) == 3 * 16000 and not z.any()
    z = load_audio(media.silent, 8000, segment=(1.0, 2.5), on_missing="silence")
    assert len(z) == 12000 and not z.any()


@pytest.mark.parametrize("which, reason", [
    ("missing", "file not found"), ("empty", "empty file"), ("garbage", "corrupt"),
    ("truncated", "corrupt or truncated")])
def test_bad_files(media, which, reason):
    path = getattr(media, which)
    with pytest.raises(SampleError, match=reason) as ei:
        load_audio(path)
    assert str(ei.value).startswith(path + ": ")


def test_bad_segments(media):
    with pytest.raises(SampleError, match="past the end"):
        load_audio(media.tones, segment=(5.0, 6.0))
    with pytest.raises(SampleError, match="not after"):
        load_audio(media.tones, segment=(2.0, 1.0))
    with pytest.raises(SampleError, match="past the end"):
        load_audio(media.silent, segment=(9.0, 10.0), on_missing="silence")
