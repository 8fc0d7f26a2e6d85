"""Stitch images into one grid image, each tile labelled with its index."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def grid_shape(n: int) -> tuple[int, int]:
    """(rows, cols): 4 -> 2x2, 16 -> 4x4; otherwise ``cols = ceil(sqrt(n))``,
    ``rows = ceil(n / cols)``."""
    if n <= 0:
        raise ValueError("no images to stitch")
    cols = math.ceil(math.sqrt(n))
    return math.ceil(n / cols), cols


def make_grid(images: Sequence[np.ndarray], indices: Sequence[int] | None = None,
              labels: Sequence[str] | None = None,
              tile_size: tuple[int, int] | None = None,
              background: tuple[int, int, int] = (0, 0, 0)) -> np.ndarray:
    """One RGB image with ``images`` in row-major tiles.

    Every tile is ``tile_size`` = (w, h) (default: the largest width and
    height among the images); each image is scaled to fit its tile keeping
    aspect ratio (never upscaled), centred, and labelled top-left with
    ``labels[i]`` or ``"[indices[i]]"`` (default indices 1..n).
    """
    from PIL import Image, ImageDraw

    from avhb.media.boxes import _font

    n = len(images)
    rows, cols = grid_shape(n)
    if labels is None:
        idx = list(indices) if indices is not None else list(range(1, n + 1))
        if len(idx) != n:
            raise ValueError(f"{n} images but {len(idx)} indices")
        labels = [f"[{i}]" for i in idx]
    elif len(labels) != n:
        raise ValueError(f"{n} images but {len(labels)} labels")
    arrays = [np.asarray(im) for im in images]
    arrays = [np.repeat(a[:, :, None], 3, axis=2) if a.ndim == 2 else a[:, :, :3] for a in arrays]
    tw, th = tile_size or (max(a.shape[1] for a in arrays), max(a.shape[0] for a in arrays))
    canvas = Image.new("RGB", (cols * tw, rows * th), background)
    draw = ImageDraw.Draw(canvas)
    font = _font(max(10, round(min(tw, th) / 10)))
    for i, (arr, label) in enumerate(zip(arrays, labels)):
        r, c = divmod(i, cols)
        h, w = arr.shape[:2]
        scale = min(tw / w, th / h, 1.0)
        size = (w, h) if scale >= 1 else (max(1, math.floor(w * scale)),
                                          max(1, math.floor(h * scale)))
        tile = Image.fromarray(arr.astype(np.uint8))
        if size != (w, h):
            tile = tile.resize(size, Image.Resampling.BICUBIC)
        ox, oy = c * tw + (tw - size[0]) // 2, r * th + (th - size[1]) // 2
        canvas.paste(tile, (ox, oy))
        l, t, rr, b = draw.textbbox((0, 0), label, font=font)
        x0, y0 = c * tw, r * th
        draw.rectangle([x0, y0, x0 + (rr - l) + 6, y0 + (b - t) + 6], fill=(0, 0, 0))
        draw.text((x0 + 3 - l, y0 + 3 - t), label, fill=(255, 255, 0), font=font)
    return np.asarray(canvas)
