"""The media layer: probe, sample frames, load audio, chunk long videos, draw
boxes, stitch grids, encode for backends, cache, and check frame budgets.

Its package-level names are public API (``from avhb.media import probe``);
the modules inside are not.  Names are exported lazily, so ``import
avhb.media`` imports neither PyAV, decord, Pillow nor torch.
"""
from __future__ import annotations

import importlib
from typing import Any

# Bound now, not lazily: ``probe`` is also a submodule's name, and importing
# ``avhb.media.probe`` would otherwise leave the module here in its place.
from avhb.media.probe import MediaInfo, probe  # noqa: F401

_EXPORTS = {
    "MediaInfo": "probe", "probe": "probe",
    "FrameSpec": "frames", "FrameSample": "frames", "sample_frames": "frames",
    "select_indices": "indices",
    "load_audio": "audio",
    "chunk_bounds": "chunks",
    "Box": "boxes", "draw_boxes": "boxes", "boxes_for_indices": "boxes", "nearest_key": "boxes",
    "make_grid": "grid", "grid_shape": "grid",
    "image_data_url": "encode", "image_bytes": "encode", "wav_bytes": "encode",
    "wav_data_url": "encode", "video_array": "encode", "vllm_video": "encode",
    "vllm_audio": "encode",
    "MediaCache": "cache", "fingerprint": "fingerprints", "default_cache_dir": "cache",
    "cached_sample_frames": "cache", "cached_load_audio": "cache",
    "check_budget": "budget",
    "MediaSpec": "spec", "ChunkSpec": "spec",
    "fit_size": "resize",
    "read_image": "materialize",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'avhb.media' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"avhb.media.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
