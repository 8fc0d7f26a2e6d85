"""The media layer: probe, sample frames, load audio, chunk long videos, draw
boxes, stitch grids, encode for backends, cache, and check frame budgets.

Its package-level names are public API (``from avhb.media import probe``);
the modules inside are not.  Names are exported lazily, so ``import
avhb.media`` imports neither PyAV, decord, Pillow nor torch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from avhb.lazy_exports import lazy_exports

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

if TYPE_CHECKING:  # the same names for a type checker, which does not run __getattr__ (tests/test_types.py
    # holds them equal to _EXPORTS)
    from avhb.media.frames import FrameSpec as FrameSpec, FrameSample as FrameSample, sample_frames as sample_frames
    from avhb.media.indices import select_indices as select_indices
    from avhb.media.audio import load_audio as load_audio
    from avhb.media.chunks import chunk_bounds as chunk_bounds
    from avhb.media.boxes import (
        Box as Box, draw_boxes as draw_boxes, boxes_for_indices as boxes_for_indices, nearest_key as nearest_key)
    from avhb.media.grid import make_grid as make_grid, grid_shape as grid_shape
    from avhb.media.encode import (
        image_data_url as image_data_url, image_bytes as image_bytes, wav_bytes as wav_bytes,
        wav_data_url as wav_data_url, video_array as video_array, vllm_video as vllm_video, vllm_audio as vllm_audio)
    from avhb.media.cache import (
        MediaCache as MediaCache, default_cache_dir as default_cache_dir, cached_sample_frames as cached_sample_frames,
        cached_load_audio as cached_load_audio)
    from avhb.media.fingerprints import fingerprint as fingerprint
    from avhb.media.budget import check_budget as check_budget
    from avhb.media.spec import MediaSpec as MediaSpec, ChunkSpec as ChunkSpec
    from avhb.media.resize import fit_size as fit_size
    from avhb.media.materialize import read_image as read_image


if not TYPE_CHECKING:  # hidden from a type checker, so a name missing above is an error, not Any
    __getattr__ = lazy_exports(globals(), _EXPORTS, prefix="avhb.media.")


def __dir__() -> list[str]:
    return __all__
