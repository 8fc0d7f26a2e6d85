"""Aspect-preserving downscaling of RGB frames."""
from __future__ import annotations

import math

import numpy as np


def fit_size(width: int, height: int, max_side: int | None = None,
             max_pixels: int | None = None) -> tuple[int, int]:
    """The largest ``(w, h)`` with the source aspect ratio such that
    ``max(w, h) <= max_side`` and ``w * h <= max_pixels``; never upscales.

    One scale factor ``s = min(1, max_side / max(W, H), sqrt(max_pixels / (W*H)))``
    applies to both sides, each rounded down (at least 1 pixel).
    """
    if width <= 0 or height <= 0:
        raise ValueError(f"bad frame size {width}x{height}")
    scale = 1.0
    if max_side is not None:
        if max_side <= 0:
            raise ValueError(f"max_side must be positive, got {max_side}")
        scale = min(scale, max_side / max(width, height))
    if max_pixels is not None:
        if max_pixels <= 0:
            raise ValueError(f"max_pixels must be positive, got {max_pixels}")
        scale = min(scale, math.sqrt(max_pixels / (width * height)))
    if scale >= 1.0:
        return width, height
    w = max(1, math.floor(width * scale + 1e-9))
    h = max(1, math.floor(height * scale + 1e-9))
    return w, h


def resize(frame: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``frame`` (H, W, 3) uint8 resized to ``size`` = (w, h) (bicubic,
    Pillow); returned unchanged if already that size."""
    from PIL import Image

    w, h = size
    if frame.shape[1] == w and frame.shape[0] == h:
        return frame
    img = Image.fromarray(frame)
    return np.asarray(img.resize((w, h), Image.Resampling.BICUBIC, reducing_gap=3.0))
