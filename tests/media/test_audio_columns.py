"""Audio columns of a ``datasets`` dataset decoded by avhb (PyAV), not
torchcodec: the waveform a hook reads equals what ``datasets``' own
decoded feature gives (checked against soundfile on PCM, and against
datasets 5 + torchcodec in lmms-eval's venv), decoded only when a hook
reads it, from real encoded audio (espeak-ng speech and tones as WAV, FLAC
and MP3)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from avhb.data import media_columns
from avhb.data.media_columns import AudioDecoder, DatasetRows
from avhb.data.sources import DataSource
from avhb.errors import SampleError
from avhb.media import audio as audio_mod
from avhb.media.audio import decode_waveform
from avhb.registry import get_registry
from avhb.run.task import Task
from avhb.taskdef.config import TaskConfig
from avhb.taskdef.include_path import add_include_path, package_of
from tests.fixtures.make_test_media import make_audio_file, speech_track, tone_track

ROOT = Path(__file__).resolve().parents[2]
LMMS_PY = Path(os.environ.get("AVHB_LMMS_VENV", ROOT / ".venv-lmms")) / "bin" / "python"


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> dict[str, Path]:
    """Real encoded audio: speech (espeak-ng) and tones, mono and stereo,
    as 16-bit WAV, 24-bit FLAC and MP3 at 22,050 and 44,100 Hz."""
    folder = tmp_path_factory.mktemp("clips")
    speech = speech_track("the quick brown fox jumps over the lazy dog", 22050)
    tones = tone_track(1.5, 44100, [(0.1, 0.7, 440.0), (0.8, 1.4, 1000.0)])
    out = {}
    for name, wave, rate, channels in [("speech.wav", speech, 22050, 1), ("speech2.flac", speech, 22050, 2),
                                       ("tones.flac", tones, 44100, 1), ("speech.mp3", speech, 22050, 1),
                                       ("tones2.mp3", tones, 44100, 2)]:
        out[name] = Path(make_audio_file(str(folder / name), wave, rate, channels))
    # a stereo file whose channels differ (the mean of the channels is what a mono array is)
    import soundfile as sf

    both = np.stack([speech, tone_track(len(speech) / 22050, 22050, [(0.0, 1.0, 300.0)])], axis=1)
    sf.write(str(folder / "mixed.wav"), both, 22050, subtype="PCM_16")
    out["mixed.wav"] = folder / "mixed.wav"
    return out


def write_parquet(folder: Path, clips: dict[str, Path], audio_feature: dict, split: str = "test") -> Path:
    """``folder/data/<split>-00000-of-00001.parquet`` as the Hub stores an
    audio dataset: the audio bytes embedded, the features in the file's
    ``huggingface`` metadata (written with pyarrow: datasets itself needs
    torchcodec to encode audio)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = sorted(clips)
    table = pa.table({
        "audio": pa.array([{"bytes": clips[n].read_bytes(), "path": n} for n in names],
                          type=pa.struct({"bytes": pa.binary(), "path": pa.string()})),
        "name": names, "answer": [n.split(".")[0] for n in names]})
    features = {"audio": {"_type": "Audio", **audio_feature},
                "name": {"dtype": "string", "_type": "Value"}, "answer": {"dtype": "string", "_type": "Value"}}
    table = table.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    (folder / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "data" / f"{split}-00000-of-00001.parquet")
    return folder


def _task(tmp_path: Path, **config) -> Task:
    cfg = TaskConfig("aq", tmp_path / "aq.yaml", "", "", {"task": "aq", "test_split": "test",
                                                        "doc_to_text": "{{name}}", "doc_to_target": "answer",
                                                        **config})
    return Task(cfg, get_registry())


@pytest.fixture(autouse=True)
def _caches(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    monkeypatch.setenv("AVHB_CACHE_DIR", str(tmp_path / "avhb-cache"))


# ------------------------------------------------------------ the decoder


def test_pcm_decodes_as_soundfile_reads_it(clips):
    """WAV and FLAC at their own rate: soundfile's float32 samples, every
    channel, bit for bit (from the bytes and from the path)."""
    import soundfile as sf

    for name in ("speech.wav", "speech2.flac", "tones.flac", "mixed.wav"):
        ref, rate = sf.read(str(clips[name]), dtype="float32", always_2d=True)
        for source in (clips[name].read_bytes(), str(clips[name])):
            wave, got_rate = decode_waveform(source)
            assert got_rate == rate and wave.dtype == np.float32
            np.testing.assert_array_equal(wave, ref.T)


def test_resampling_keeps_the_pitch_and_the_duration(clips):
    """A 44.1 kHz MP3 at 16 kHz: the same length in seconds, its tones
    where they were."""
    wave, rate = decode_waveform(clips["tones2.mp3"].read_bytes(), rate=16000, channels=1)
    assert rate == 16000 and wave.shape[0] == 1
    assert abs(wave.shape[1] / 16000 - 1.5) < 0.06  # MP3 pads at most a frame
    for start, end, freq in [(0.1, 0.7, 440.0), (0.8, 1.4, 1000.0)]:
        span = wave[0, int(start * 16000) + 800:int(end * 16000) - 800]
        spectrum = np.abs(np.fft.rfft(span))
        assert abs(np.argmax(spectrum) * 16000 / len(span) - freq) < 5


def test_bad_audio_names_the_value():
    with pytest.raises(SampleError, match=r"clip\.wav: cannot open audio"):
        decode_waveform(b"not audio at all" * 10, name="clip.wav")
    with pytest.raises(SampleError, match="empty audio"):
        decode_waveform(b"", name="clip.wav")


def test_a_decoder_value_reads_as_datasets_gives_it(clips):
    """``["array"]`` mono float32 (the channels' mean), ``["sampling_rate"]``
    the feature's rate, ``["path"]``, ``get_all_samples()`` every channel."""
    import soundfile as sf

    value = AudioDecoder("mixed.wav", clips["mixed.wav"].read_bytes())
    ref, rate = sf.read(str(clips["mixed.wav"]), dtype="float32", always_2d=True)
    np.testing.assert_array_equal(value["array"], ref.T.mean(axis=0))
    assert value["sampling_rate"] == rate == value.metadata.sample_rate and value["path"] == "mixed.wav"
    assert value.get_all_samples().data.shape == (2, len(ref)) and value.metadata.num_channels == 2
    resampled = AudioDecoder("mixed.wav", clips["mixed.wav"].read_bytes(), sampling_rate=16000)
    assert resampled["sampling_rate"] == 16000 and resampled["array"].ndim == 1
    assert resampled["array"].dtype == np.float32
    assert set(value.keys()) == {"path", "array", "sampling_rate"} and "array" in value
    with pytest.raises(KeyError):
        value["bytes"]


# ------------------------------------------------- against datasets itself

_ORACLE = textwrap.dedent("""
    import json, sys
    import numpy as np
    import datasets
    folder, out = sys.argv[1], sys.argv[2]
    ds = datasets.load_dataset(folder, split="test", cache_dir=out + ".cache")
    arrays = {}
    for row in ds:
        a = row["audio"]
        arrays[row["name"] + "/array"] = a["array"]
        arrays[row["name"] + "/rate"] = np.array(a["sampling_rate"])
        arrays[row["name"] + "/all"] = a.get_all_samples().data.numpy()
    np.savez(out, **arrays)
""")


@pytest.mark.slow  # lmms-eval's venv (datasets 5 with torchcodec): about 12 s each
@pytest.mark.skipif(not LMMS_PY.exists(), reason=f"no datasets with torchcodec: {LMMS_PY} (scripts/peer_envs.sh lmms)")
@pytest.mark.parametrize("feature", [{}, {"sampling_rate": 16000}, {"sampling_rate": 8000, "num_channels": 1},
                                     {"num_channels": 2}], ids=["native", "16k", "8k-mono", "stereo"])
def test_equal_to_datasets_own_decode(clips, tmp_path, feature):
    """The waveform, rate and channels avhb gives each row are the ones
    datasets 5 gives through torchcodec (lmms-eval's venv), bit for bit."""
    folder = write_parquet(tmp_path / "ds", clips, feature)
    script = tmp_path / "oracle.py"
    script.write_text(_ORACLE)
    proc = subprocess.run([str(LMMS_PY), str(script), str(folder), str(tmp_path / "oracle")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    want = np.load(tmp_path / "oracle.npz")
    docs = _task(tmp_path).load_docs(DataSource(folder, "local"))
    assert len(docs) == len(clips)
    for doc in docs:
        got = doc["audio"]
        assert got["sampling_rate"] == int(want[doc["name"] + "/rate"])
        np.testing.assert_array_equal(got["array"], want[doc["name"] + "/array"])
        np.testing.assert_array_equal(got.get_all_samples().data, want[doc["name"] + "/all"])


# --------------------------------------------------------- load_docs, lazily


def test_load_docs_reads_an_audio_column_without_torchcodec(clips, tmp_path):
    """A Hub-layout parquet with an ``Audio(sampling_rate=16000)`` feature:
    the rows arrive, each audio value decoded to 16 kHz mono float32 (the
    datasets decode needs torchcodec, which this Python lacks)."""
    folder = write_parquet(tmp_path / "ds", clips, {"sampling_rate": 16000})
    docs = _task(tmp_path).load_docs(DataSource(folder, "local"))
    assert isinstance(docs, DatasetRows) and len(docs) == len(clips)
    for doc in docs:
        wave = doc["audio"]["array"]
        assert doc["audio"]["sampling_rate"] == 16000 and wave.dtype == np.float32 and wave.ndim == 1
        ref, _ = decode_waveform(clips[doc["name"]].read_bytes(), rate=16000)
        np.testing.assert_array_equal(wave, ref.mean(axis=0))
    assert [d["name"] for d in docs[1:3]] == sorted(clips)[1:3] and docs[-1]["name"] == sorted(clips)[-1]


def test_nothing_is_decoded_until_a_hook_reads_the_array(clips, tmp_path, monkeypatch):
    """Loading, iterating and reading every other field decodes nothing;
    reading one row's array decodes that row once."""
    calls: list = []
    real = audio_mod.decode_waveform

    def counting(source, *args, **kwargs):
        calls.append(kwargs.get("name") or args[-1:])
        return real(source, *args, **kwargs)

    monkeypatch.setattr(audio_mod, "decode_waveform", counting)
    folder = write_parquet(tmp_path / "ds", clips, {"sampling_rate": 16000})
    task = _task(tmp_path)
    docs = task.load_docs(DataSource(folder, "local"))
    assert [task.target(d) for d in docs] == [n.split(".")[0] for n in sorted(clips)]
    assert [d["audio"]["sampling_rate"] for d in docs] == [16000] * len(clips)  # the feature's rate: no decode
    assert calls == []
    docs[2]["audio"]["array"]
    assert len(calls) == 1


def test_process_docs_gets_a_dataset_whose_rows_decode(clips, tmp_path):
    """A process_docs hook gets the datasets.Dataset (lm-eval passes one):
    its filter reads a decoded waveform; what it returns reads lazily too."""
    (tmp_path / "hooks.py").write_text(textwrap.dedent("""
        def long_clips(dataset):
            return dataset.filter(lambda doc: len(doc["audio"]["array"]) > 16000 * 1.6)
    """))
    folder = write_parquet(tmp_path / "ds", clips, {"sampling_rate": 16000})
    (tmp_path / "aq.yaml").write_text("task: aq\n")
    task = _task(tmp_path, process_docs={"function": "hooks.long_clips"})
    task.cfg.package = package_of(add_include_path(tmp_path))  # its hooks import as an --include_path folder's
    docs = task.load_docs(DataSource(folder, "local"))
    assert isinstance(docs, DatasetRows)
    assert sorted(d["name"] for d in docs) == ["mixed.wav", "speech.mp3", "speech.wav", "speech2.flac"]
    assert all(d["audio"]["array"].dtype == np.float32 for d in docs)


def test_a_list_of_audio_values_decodes_each(clips, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    struct = pa.struct({"bytes": pa.binary(), "path": pa.string()})
    table = pa.table({"clips": pa.array([[{"bytes": clips["speech.wav"].read_bytes(), "path": "a.wav"},
                                          {"bytes": clips["tones.flac"].read_bytes(), "path": "b.flac"}]],
                                        type=pa.list_(struct)), "answer": ["x"]})
    features = {"clips": {"_type": "List", "feature": {"_type": "Audio", "sampling_rate": 8000}},
                "answer": {"dtype": "string", "_type": "Value"}}
    table = table.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    (tmp_path / "ds" / "data").mkdir(parents=True)
    pq.write_table(table, tmp_path / "ds" / "data" / "test-00000-of-00001.parquet")
    doc = _task(tmp_path).load_docs(DataSource(tmp_path / "ds", "local"))[0]
    assert [a["path"] for a in doc["clips"]] == ["a.wav", "b.flac"]
    assert [a["sampling_rate"] for a in doc["clips"]] == [8000, 8000]
    assert abs(len(doc["clips"][1]["array"]) - 1.5 * 8000) <= 1


def test_a_video_column_is_a_file_on_this_machine(tmp_path):
    """A ``Video`` column (embedded bytes) loads without torchcodec; its
    value names a file holding those bytes, which avhb's probe reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.fixtures.make_test_media import make_video

    clip = Path(make_video(str(tmp_path / "v.mp4"), 1.0, 10, (64, 48)))
    table = pa.table({"video": pa.array([{"bytes": clip.read_bytes(), "path": "v.mp4"}],
                                        type=pa.struct({"bytes": pa.binary(), "path": pa.string()})),
                      "answer": ["x"]})
    features = {"video": {"_type": "Video"}, "answer": {"dtype": "string", "_type": "Value"}}
    table = table.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    (tmp_path / "ds" / "data").mkdir(parents=True)
    pq.write_table(table, tmp_path / "ds" / "data" / "test-00000-of-00001.parquet")
    value = _task(tmp_path).load_docs(DataSource(tmp_path / "ds", "local"))[0]["video"]
    assert Path(value.path).read_bytes() == clip.read_bytes() and value["path"] == value.path
    assert value.metadata.frame_count == 10 and (value.metadata.width, value.metadata.height) == (64, 48)


def test_the_samples_file_names_the_audio_not_its_bytes(clips):
    """A run's samples line shows the value by its path (the doc's other
    fields as they are), never its bytes or the decoded samples."""
    from avhb.runfolder.folder import _default

    text = json.dumps({"audio": AudioDecoder("speech.wav", clips["speech.wav"].read_bytes(), 16000)},
                      default=_default)
    assert text == '{"audio": "<AudioDecoder speech.wav, sampling_rate=16000>"}'


def test_a_dataset_without_media_is_left_to_datasets(tmp_path):
    import datasets

    plain = datasets.Dataset.from_dict({"q": ["a", "b"]})
    assert media_columns.undecoded(plain) is plain
    docs = _task(tmp_path).load_docs(DataSource(_jsonl(tmp_path), "local"))
    assert docs[0] == {"name": "n", "answer": "a"}


def _jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"name": "n", "answer": "a"}) + "\n")
    return path


def test_pcm_bytes_in_memory(clips):
    """Bytes given as memoryview/bytearray decode as bytes do."""
    data = clips["speech.wav"].read_bytes()
    a, _ = decode_waveform(bytearray(data))
    b, _ = decode_waveform(io.BytesIO(data).getvalue())
    np.testing.assert_array_equal(a, b)
