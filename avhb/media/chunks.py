"""Long videos as a lazy sequence of fixed-length chunks of sampled frames."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from avhb.media.decoders import open_reader
from avhb.media.frames import FrameSpec, check_numbers, choose_indices, decode_indices


@dataclass
class Chunk:
    """Frames of ``[start, end)`` seconds, with their source indices and times."""

    start: float
    end: float
    frames: list[np.ndarray]
    timestamps: list[float]
    indices: list[int]


def iter_chunks(path: str, seconds: float = 120, fps: float = 0.5,
                size: tuple[int, int] | None = (512, 384),
                decoder: str = "auto") -> Iterator[Chunk]:
    """Yield chunk ``k`` = ``[k * seconds, min((k + 1) * seconds, duration))``
    for k = 0, 1, ... (duration = frame count / source fps), each sampled at
    ``fps`` with the rules of ``indices.py`` and resized to exactly ``size``
    = (width, height) (``None`` keeps the source size).

    Lazy: one decoder stays open and moves forward; each chunk is decoded
    only when asked for, so memory holds one chunk at a time.
    """
    path = str(path)
    if not seconds > 0:
        raise ValueError(f"chunk length must be positive, got {seconds}")
    spec = FrameSpec(fps=fps)
    reader = open_reader(path, decoder)
    try:
        check_numbers(path, spec)
        duration = reader.count / reader.fps
        n_chunks = max(1, math.ceil(duration / seconds - 1e-9))
        for k in range(n_chunks):
            start = k * seconds
            end = min((k + 1) * seconds, duration)
            if math.ceil(start * reader.fps - 1e-6) >= reader.count:
                break
            indices = choose_indices(path, reader, spec, segment=(start, end))
            frames = decode_indices(reader, indices, tuple(size) if size else None)
            yield Chunk(start=start, end=end, frames=frames,
                        timestamps=[i / reader.fps for i in indices], indices=indices)
    finally:
        reader.close()
