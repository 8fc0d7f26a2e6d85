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
  The work is bounded by the segment's frame count, however large F is:
  when there are more sample times than frames, each frame is tested
  directly (it is taken iff the first sample time at or after its start
  falls in it), which gives the same indices.
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
    span = end - _EPS - start
    times = max(0, math.ceil(span * fps)) if span > 0 else 0  # sample times t_k < end - eps (approximately)
    cap = None if max_frames is None else max_frames + 1  # past max_frames the uniform rule applies anyway
    out = _by_times(a, b, src_fps, fps, start, end, cap) if times <= 2 * (b - a) + 2 else \
        _by_frames(a, b, src_fps, fps, start, end, cap)
    if not out:
        raise SelectionError(f"no sample time falls in the segment {start:g}s-{end:g}s")
    if include_last and out[-1] != b - 1:
        out.append(b - 1)
    if max_frames is not None and len(out) > max_frames:
        return uniform_indices(a, b, max_frames, include_last)
    return out


def _frame_of(t: float, a: int, b: int, src_fps: float) -> int:
    return min(b - 1, max(a, math.floor(t * src_fps + _EPS)))


def _by_times(a: int, b: int, src_fps: float, fps: float, start: float, end: float,
              cap: int | None = None) -> list[int]:
    """Walk the sample times (fewer than about twice the frames); stop
    once ``cap`` frames are found."""
    out: list[int] = []
    k = 0
    while cap is None or len(out) < cap:
        t = start + k / fps
        if t >= end - _EPS:
            break
        idx = _frame_of(t, a, b, src_fps)
        if not out or idx != out[-1]:
            out.append(idx)
        k += 1
    return out


def _by_frames(a: int, b: int, src_fps: float, fps: float, start: float, end: float,
               cap: int | None = None) -> list[int]:
    """Walk the frames: the same indices as :func:`_by_times` when sample
    times outnumber frames.  Frame ``i`` is hit iff some ``t_k`` maps to it;
    the times mapping to ``i`` form one run of consecutive ``k`` (the map is
    monotone), so it is enough to test the first ``k`` whose time maps at or
    past ``i``."""
    out: list[int] = []
    k = 0
    for i in range(a, b):
        # smallest k >= current with floor(t_k * src_fps + eps) >= i (clamped frames are handled by _frame_of)
        if i > a:
            need = (i - _EPS) / src_fps  # t_k * src_fps + eps >= i
            k = max(k, math.ceil((need - start) * fps - 1e-9))
            while k > 0 and _frame_of(start + (k - 1) / fps, a, b, src_fps) >= i:
                k -= 1
            while _frame_of(start + k / fps, a, b, src_fps) < i and start + k / fps < end - _EPS:
                k += 1
        t = start + k / fps
        if t >= end - _EPS:
            break
        if _frame_of(t, a, b, src_fps) == i:
            out.append(i)
            if cap is not None and len(out) >= cap:
                break
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
