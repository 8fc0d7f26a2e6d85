import multiprocessing as mp
import os
import shutil

import numpy as np
import pytest

from avhb.errors import SampleError
from avhb.media import (FrameSpec, MediaCache, cached_load_audio, cached_sample_frames,
                        default_cache_dir, fingerprint, load_audio)


def entries(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs)


def test_default_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("AVHB_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == str(tmp_path / "c" / "media")  # one cache root: media under it
    assert MediaCache().root == str(tmp_path / "c" / "media")
    monkeypatch.delenv("AVHB_CACHE_DIR")
    assert default_cache_dir().endswith(os.path.join(".cache", "avhb", "media"))


def test_fingerprint_ignores_path_and_mtime_but_sees_content(media, tmp_path):
    copy = str(tmp_path / "copy.mp4")
    shutil.copy(media.long, copy)
    os.utime(copy, (1, 1))
    assert fingerprint(copy) == fingerprint(media.long)
    data = bytearray(open(copy, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(copy, "wb").write(bytes(data))
    assert fingerprint(copy) != fingerprint(media.long)
    with pytest.raises(SampleError, match="file not found"):
        fingerprint(media.missing)


def test_frames_hit_equals_miss(media, tmp_path, decode_index, monkeypatch):
    cache = MediaCache(str(tmp_path / "c"))
    spec = FrameSpec(frames=5, max_side=80, decoder="pyav")
    first = cached_sample_frames(media.long, spec, cache)
    assert len(entries(cache.root)) == 1 and entries(cache.root)[0].endswith(".npz")

    def boom(*a, **k):
        raise AssertionError("decoded on a cache hit")

    monkeypatch.setattr("avhb.media.frames.sample_frames", boom)
    second = cached_sample_frames(media.long, spec, cache)
    assert second.indices == first.indices and second.timestamps == first.timestamps
    assert second.source_fps == first.source_fps and second.decoder == "pyav"
    assert second.source_size == (160, 120) and second.source_frame_count == 1200
    assert all((a == b).all() for a, b in zip(first.frames, second.frames))
    assert [decode_index(f) for f in second.frames] == second.indices
    monkeypatch.undo()
    # other parameters are another entry
    cached_sample_frames(media.long, FrameSpec(frames=6, max_side=80, decoder="pyav"), cache)
    assert len(entries(cache.root)) == 2


def test_audio_cached_and_errors_not_cached(media, tmp_path):
    cache = MediaCache(str(tmp_path / "c"))
    a = cached_load_audio(media.tones, 16000, (0.5, 2.5), cache=cache)
    b = cached_load_audio(media.tones, 16000, (0.5, 2.5), cache=cache)
    assert (a == b).all() and (a == load_audio(media.tones, 16000, (0.5, 2.5))).all()
    assert len(entries(cache.root)) == 1
    with pytest.raises(SampleError):
        cached_load_audio(media.silent, cache=cache)
    assert len(entries(cache.root)) == 1


def test_corrupt_entry_is_a_miss(media, tmp_path):
    cache = MediaCache(str(tmp_path / "c"))
    spec = FrameSpec(frames=2, decoder="pyav")
    cached_sample_frames(media.long, spec, cache)
    (entry,) = entries(cache.root)
    with open(os.path.join(cache.root, entry), "wb") as f:
        f.write(b"not an npz")
    again = cached_sample_frames(media.long, spec, cache)
    assert again.indices == [300, 900]
    with np.load(os.path.join(cache.root, entry), allow_pickle=False) as z:
        assert z["frames"].shape == (2, 120, 160, 3)


def _writer(root, path, n, barrier):
    from avhb.media import FrameSpec, MediaCache, cached_sample_frames

    barrier.wait()
    for _ in range(n):
        cache = MediaCache(root)
        key = cache.key("frames", path, FrameSpec(frames=4, decoder="pyav").cache_params())
        cache.store("frames", key, {"frames": np.full((4, 120, 160, 3), 7, np.uint8),
                                    "n": np.asarray(n)})
        got = cache.load("frames", key)
        assert got is not None and got["frames"].shape == (4, 120, 160, 3)
    cached_sample_frames(path, FrameSpec(frames=3, decoder="pyav"), MediaCache(root))


def test_two_processes_writing_the_same_key(media, tmp_path):
    root = str(tmp_path / "c")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(root, media.long, 20, barrier)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    names = entries(root)
    assert len(names) == 2 and not [n for n in names if n.endswith(".tmp")]  # no temp file of write_atomic left
    s = cached_sample_frames(media.long, FrameSpec(frames=3, decoder="pyav"), MediaCache(root))
    assert s.indices == [200, 600, 1000]
