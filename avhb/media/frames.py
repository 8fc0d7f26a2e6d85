"""Sample frames from a video: which frames (``indices.py``), decoded by a
bounded-memory reader (``decoders.py``), resized keeping aspect ratio.

Frame index ``i`` is the ``i``-th frame of the first video stream in
presentation order; its timestamp is ``i / source_fps`` seconds from the
stream's first frame.  The index rules are documented in ``indices.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from avhb.media._open import fail
from avhb.media.decoders import open_reader, resolve_decoder
from avhb.media.indices import SelectionError, select_indices
from avhb.media.resize import fit_size, resize

Decoder = Literal["auto", "decord", "pyav"]


@dataclass(frozen=True)
class FrameSpec:
    """How to sample frames.  Exactly one of ``frames`` (uniform N) and
    ``fps`` (with optional ``max_frames`` cap) must be set.  ``segment`` is
    ``(start, end)`` seconds; ``max_side`` / ``max_pixels`` bound the output
    size (aspect kept, never upscaled)."""

    frames: int | None = None
    fps: float | None = None
    max_frames: int | None = None
    segment: tuple[float, float] | None = None
    include_last: bool = False
    max_side: int | None = None
    max_pixels: int | None = None
    decoder: Decoder = "auto"
    size: tuple[int, int] | None = None  # exact output (width, height), e.g. long-video chunks; overrides max_*

    def __post_init__(self) -> None:
        if (self.frames is None) == (self.fps is None):
            raise ValueError("FrameSpec needs exactly one of frames= or fps=")
        resolve_decoder(self.decoder)
        if self.segment is not None:
            if len(self.segment) != 2:
                raise ValueError(f"segment must be (start, end), got {self.segment!r}")
            object.__setattr__(self, "segment", (float(self.segment[0]), float(self.segment[1])))

    def cache_params(self) -> dict[str, Any]:
        """The fields that determine the output (the decoder resolved)."""
        return {"frames": self.frames, "fps": self.fps, "max_frames": self.max_frames,
                "segment": list(self.segment) if self.segment else None,
                "include_last": self.include_last, "max_side": self.max_side,
                "max_pixels": self.max_pixels, "decoder": resolve_decoder(self.decoder),
                **({"size": list(self.size)} if self.size else {})}


@dataclass
class FrameSample:
    """Sampled frames (RGB uint8, H x W x 3) with their source frame indices
    and timestamps (seconds); ``source_fps`` and ``decoder`` as used."""

    frames: list[np.ndarray]
    indices: list[int]
    timestamps: list[float]
    source_fps: float
    decoder: str
    source_frame_count: int = 0
    source_size: tuple[int, int] = (0, 0)  # (width, height) before resizing


def check_numbers(path: str, spec: FrameSpec) -> None:
    if spec.frames is not None and spec.frames <= 0:
        raise fail(path, f"frames must be positive, got {spec.frames}")
    if spec.fps is not None and not spec.fps > 0:
        raise fail(path, f"sampling fps must be > 0, got {spec.fps}")
    if spec.max_frames is not None and spec.max_frames <= 0:
        raise fail(path, f"max_frames must be positive, got {spec.max_frames}")
    for name in ("max_side", "max_pixels"):
        value = getattr(spec, name)
        if value is not None and value <= 0:
            raise fail(path, f"{name} must be positive, got {value}")


def choose_indices(path: str, reader, spec: FrameSpec,
                   segment: tuple[float, float] | None = None) -> list[int]:
    """The indices ``spec`` selects on ``reader``'s video (SampleError if none)."""
    try:
        return select_indices(reader.count, reader.fps, frames=spec.frames, fps=spec.fps,
                              max_frames=spec.max_frames,
                              segment=segment if segment is not None else spec.segment,
                              include_last=spec.include_last)
    except SelectionError as exc:
        raise fail(path, str(exc)) from exc


def decode_indices(reader, indices: list[int], size: tuple[int, int] | None) -> list[np.ndarray]:
    """Decode ``indices`` with ``reader``, resizing each frame to ``size``
    as soon as it is decoded."""
    out = []
    for _, frame in reader.read(indices):
        out.append(resize(frame, size) if size is not None else frame)
    return out


def sample_frames(path: str, spec: FrameSpec) -> FrameSample:
    """Decode the frames ``spec`` selects from the video at ``path``.

    Raises ``SampleError`` (naming the file and the reason) for a missing,
    empty, corrupt or truncated file, an unknown codec, a file without
    video, a segment past the end, or a non-positive fps/frame count.
    """
    path = str(path)
    check_numbers(path, spec)
    reader = open_reader(path, spec.decoder)
    try:
        indices = choose_indices(path, reader, spec)
        size = (spec.size[0], spec.size[1]) if spec.size else fit_size(reader.width, reader.height, spec.max_side, spec.max_pixels)
        frames = decode_indices(reader, indices, size)
    finally:
        reader.close()
    return FrameSample(frames=frames, indices=indices,
                       timestamps=[i / reader.fps for i in indices],
                       source_fps=reader.fps, decoder=reader.name,
                       source_frame_count=reader.count,
                       source_size=(reader.width, reader.height))
