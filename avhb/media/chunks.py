"""Long videos as fixed-length chunks (ANCHOR-style "Socratic" reading).

A driver asks for a video's chunks (``ctx.chunks(part)``); each chunk is a
``VideoPart`` over one segment, sampled by the materialiser like any other
video part (through the media cache), so a multi-turn driver sends chunk
``k`` at turn ``k`` and memory holds one chunk's frames at a time.
"""
from __future__ import annotations

import math


def chunk_bounds(duration: float, seconds: float) -> list[tuple[float, float]]:
    """``[k * seconds, min((k + 1) * seconds, duration))`` for k = 0, 1, ...
    covering ``duration`` seconds (at least one chunk; a trailing chunk is
    shorter).  ``chunk_bounds(300, 120)`` -> (0, 120), (120, 240), (240, 300)."""
    if not seconds > 0:
        raise ValueError(f"chunk length must be positive, got {seconds}")
    if not duration > 0:
        raise ValueError(f"duration must be positive, got {duration}")
    n = max(1, math.ceil(duration / seconds - 1e-9))
    return [(k * seconds, min((k + 1) * seconds, duration)) for k in range(n)]
