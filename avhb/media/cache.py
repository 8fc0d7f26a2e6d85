"""Content-addressed on-disk cache of sampled frames and audio.

Location: ``avhb.paths.media_cache_dir()`` (``<cache>/media``, where ``<cache>`` is
``$AVHB_CACHE_DIR`` or ``~/.cache/avhb``).  Entries are
``<root>/<kind>/<key[:2]>/<key>.npz`` (NumPy archives, no pickle), shared
by every run and model on the machine.

Key = BLAKE2b-256 of a JSON document holding the entry kind (``frames`` or
``audio``), a format version, the sampling parameters and the file's
content fingerprint (:func:`avhb.media.fingerprints.fingerprint`: SHA-256 of
the whole file, computed once per file and cached by its stat, the same
fingerprint the call keys hold).  It ignores the path and modification
time, so moved or re-downloaded copies hit.

Writers write through :func:`avhb.atomic.write_atomic` (a temporary file, then a rename)
into place, so concurrent writers of one key never expose a partial entry
(the last one wins; all write the same content).  A corrupt entry is
treated as a miss.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from avhb.atomic import write_atomic
from avhb.media.fingerprints import fingerprint

if TYPE_CHECKING:
    from avhb.media.audio import OnMissing

FORMAT_VERSION = 2  # 2: whole-file fingerprints (1: size + three 1 MiB blocks)


def default_cache_dir() -> str:
    """:func:`avhb.paths.media_cache_dir` (``<cache>/media``)."""
    from avhb.paths import media_cache_dir

    return str(media_cache_dir())


@dataclass
class MediaCache:
    """An on-disk cache rooted at ``root`` (default :func:`default_cache_dir`)."""

    root: str | None = None

    def __post_init__(self) -> None:
        if self.root is None:
            self.root = default_cache_dir()

    def key(self, kind: str, path: str, params: dict[str, Any]) -> str:
        doc = {"kind": kind, "v": FORMAT_VERSION, "file": fingerprint(path), "params": params}
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return hashlib.blake2b(text.encode(), digest_size=32).hexdigest()

    def entry_path(self, kind: str, key: str) -> str:
        assert self.root is not None  # set by __post_init__
        return os.path.join(self.root, kind, key[:2], key + ".npz")

    def load(self, kind: str, key: str) -> dict[str, np.ndarray] | None:
        """The arrays stored under ``key``, or None on a miss or a corrupt entry."""
        p = self.entry_path(kind, key)
        try:
            with np.load(p, allow_pickle=False) as z:
                return {name: z[name] for name in z.files}
        except FileNotFoundError:
            return None
        except (OSError, ValueError, EOFError, KeyError):
            return None  # corrupt or unreadable: recompute (and overwrite)

    def store(self, kind: str, key: str, arrays: dict[str, np.ndarray]) -> str:
        """Atomically write ``arrays`` under ``key``; returns the entry path."""
        p = self.entry_path(kind, key)
        # numpy's stub: a key could be its allow_pickle flag
        write_atomic(p, lambda f: np.savez(f, **arrays), binary=True, durable=False)  # type: ignore[arg-type, unused-ignore]
        return p


def cached_sample_frames(path: str, spec, cache: MediaCache | None = None):
    """:func:`avhb.media.frames.sample_frames` through the cache."""
    from avhb.media.frames import FrameSample, sample_frames

    path = str(path)
    cache = cache or MediaCache()
    key = cache.key("frames", path, spec.cache_params())
    hit = cache.load("frames", key)
    if hit is not None:
        frames = hit["frames"]
        return FrameSample(frames=list(frames), indices=[int(i) for i in hit["indices"]],
                           timestamps=[float(t) for t in hit["timestamps"]],
                           source_fps=float(hit["source_fps"]), decoder=str(hit["decoder"]),
                           source_frame_count=int(hit["source_frame_count"]),
                           source_size=(int(hit["source_size"][0]), int(hit["source_size"][1])))
    sample = sample_frames(path, spec)
    cache.store("frames", key, {
        "frames": np.stack(sample.frames),
        "indices": np.asarray(sample.indices, np.int64),
        "timestamps": np.asarray(sample.timestamps, np.float64),
        "source_fps": np.asarray(sample.source_fps, np.float64),
        "decoder": np.asarray(sample.decoder),
        "source_frame_count": np.asarray(sample.source_frame_count, np.int64),
        "source_size": np.asarray(sample.source_size, np.int64),
    })
    return sample


def cached_load_audio(path: str, rate: int = 16000, segment: tuple[float, float] | None = None,
                      on_missing: OnMissing = "error", cache: MediaCache | None = None) -> np.ndarray:
    """:func:`avhb.media.audio.load_audio` through the cache."""
    from avhb.media.audio import load_audio

    path = str(path)
    cache = cache or MediaCache()
    params = {"rate": int(rate), "segment": [float(x) for x in segment] if segment else None,
              "on_missing": on_missing}
    key = cache.key("audio", path, params)
    hit = cache.load("audio", key)
    if hit is not None:
        return hit["audio"]
    audio = load_audio(path, rate, segment, on_missing)
    cache.store("audio", key, {"audio": audio})
    return audio
