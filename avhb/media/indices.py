"""Which source frames to sample: pure functions over frame counts.

Definitions (frame ``i`` of a stream at ``src_fps`` is shown at ``i / src_fps``
seconds after the stream's first frame):

* **Segment** ``(start, end)`` seconds selects the frames shown in
  ``[start, end)``: indices ``a = ceil(start * src_fps)`` to
  ``b = min(count, ceil(end * src_fps))`` exclusive.  A negative start counts
  as 0; an end past the video is clipped to it; a start at or past the last
  frame, or ``end <= start``, is an error.  No segment means ``[0, count)``.
* **Uniform N** (``include_last=False``): the centres of N equal bins over
  the ``M = b - a`` frames, ``a + floor((k + 1/2) * M / N)``, k = 0..N-1.
  With ``include_last=True`` (and N >= 2): evenly spaced from the first to
  the last frame inclusive, ``a + floor(k * (M - 1) / (N - 1) + 1/2)``.
  When ``N >= M`` every frame of the segment is taken once (no repeats).
* **fps F**: sample times ``t_k = start + k / F`` for ``t_k < end``; each
  takes the frame shown at that time, ``floor(t_k * src_fps)``, repeats
  dropped.  ``include_last=True`` appends the segment's last frame if it is
  not already there.  If more than ``max_frames`` result, the uniform rule
  with N = ``max_frames`` (and the same ``include_last``) is used instead.
"""
from __future__ import annotations

import math

_EPS = 1e-6


class SelectionError(ValueError):
    """The request cannot select any frame (reason in the message)."""


def segment_range(count: int, src_fps: float, segment: tuple[float, float] | None) -> tuple[int, int]:
    """Frame range ``[a, b)`` shown during ``segment`` (see module docstring)."""
    if count <= 0:
        raise SelectionError("the video has no frames")
    if segment is None:
        return 0, count
    start, end = float(segment[0]), float(segment[1])
    if not (math.isfinite(start) and math.isfinite(end)):
        raise SelectionError(f"segment {segment!r} is not finite")
    if end <= start:
        raise SelectionError(f"segment end {end:g}s is not after its start {start:g}s")
    if src_fps <= 0:
        raise SelectionError(f"source frame rate is {src_fps:g}")
    start = max(0.0, start)
    a = math.ceil(start * src_fps - _EPS)
    b = min(count, math.ceil(end * src_fps - _EPS))
    if a >= count:
        raise SelectionError(
            f"segment starts at {start:g}s, past the end of the video "
            f"({count} frames, {count / src_fps:.3f}s)")
    if b <= a:
        raise SelectionError(f"segment {start:g}s-{end:g}s contains no frame")
    return a, b


def uniform_indices(a: int, b: int, n: int, include_last: bool = False) -> list[int]:
    """N frames spread over ``[a, b)`` (bin centres, or endpoints inclusive)."""
    m = b - a
    if n <= 0:
        raise SelectionError(f"frame count must be positive, got {n}")
    if n >= m:
        return list(range(a, b))
    if include_last and n >= 2:
        return [a + math.floor(k * (m - 1) / (n - 1) + 0.5) for k in range(n)]
    return [a + math.floor((k + 0.5) * m / n) for k in range(n)]


def fps_indices(a: int, b: int, src_fps: float, fps: float, start: float,
                end: float, include_last: bool = False, max_frames: int | None = None) -> list[int]:
    """Frames at ``fps`` per second over the segment ``[start, end)`` = ``[a, b)``."""
    if fps <= 0 or not math.isfinite(fps):
        raise SelectionError(f"sampling fps must be > 0, got {fps:g}")
    if src_fps <= 0:
        raise SelectionError(f"source frame rate is {src_fps:g}")
    out: list[int] = []
    k = 0
    while True:
        t = start + k / fps
        if t >= end - _EPS:
            break
        idx = min(b - 1, max(a, math.floor(t * src_fps + _EPS)))
        if not out or idx != out[-1]:
            out.append(idx)
        k += 1
    if include_last and out[-1] != b - 1:
        out.append(b - 1)
    if max_frames is not None and len(out) > max_frames:
        return uniform_indices(a, b, max_frames, include_last)
    return out


def select_indices(count: int, src_fps: float, *, frames: int | None = None,
                   fps: float | None = None, max_frames: int | None = None,
                   segment: tuple[float, float] | None = None,
                   include_last: bool = False) -> list[int]:
    """The sorted, distinct frame indices a frame spec selects."""
    a, b = segment_range(count, src_fps, segment)
    if frames is not None:
        n = frames if max_frames is None else min(frames, max_frames)
        return uniform_indices(a, b, n, include_last)
    if fps is None:
        raise SelectionError("neither frames nor fps given")
    start = a / src_fps if segment is None else max(0.0, float(segment[0]))
    end = b / src_fps if segment is None else min(float(segment[1]), count / src_fps)
    return fps_indices(a, b, src_fps, fps, start, end, include_last, max_frames)
