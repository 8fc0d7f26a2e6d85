"""Draw labelled bounding boxes on sampled frames.

Annotations map a frame key to boxes in source-video pixels (``x, y`` the
top-left corner, ``width, height``).  Keys are source frame indices, or, with
``key_fps``, indices on a ``key_fps`` Hz grid (key ``k`` = time ``k / key_fps``
= source frame ``round(k / key_fps * source_fps)``).  Each sampled frame gets
the boxes of the annotated frame nearest to its own index (ties: the earlier
one), optionally only within ``max_distance`` source frames.  Boxes are
scaled from the source size to the sampled frame's size.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np


@dataclass(frozen=True)
class Box:
    """One box in source pixels, top-left origin."""

    x: float
    y: float
    width: float
    height: float
    label: str | None = None
    color: str | None = None  # "#RRGGBB"; default red

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Box":
        """From a mapping with ``x, y, width, height`` and optional
        ``label`` and ``color``."""
        return cls(float(d["x"]), float(d["y"]), float(d["width"]), float(d["height"]),
                   None if d.get("label") is None else str(d["label"]), d.get("color"))


def _as_box(b: Box | Mapping[str, Any]) -> Box:
    return b if isinstance(b, Box) else Box.from_dict(b)


def nearest_key(keys: Sequence[int], index: int, max_distance: float | None = None) -> int | None:
    """The element of sorted ``keys`` nearest to ``index`` (earlier on ties),
    or None if there is none within ``max_distance``."""
    if not keys:
        return None
    i = bisect.bisect_left(keys, index)
    best = None
    for j in (i - 1, i):
        if 0 <= j < len(keys):
            if best is None or abs(keys[j] - index) < abs(best - index):
                best = keys[j]
    assert best is not None  # keys is not empty: one of i - 1, i indexes it
    if max_distance is not None and abs(best - index) > max_distance:
        return None
    return best


def boxes_for_indices(annotations: Mapping[Any, Sequence[Box | Mapping[str, Any]]],
                      indices: Sequence[int], source_fps: float | None = None,
                      key_fps: float | None = None,
                      max_distance: float | None = None) -> list[list[Box]]:
    """For each sampled source frame index, the boxes of the nearest annotated frame."""
    by_frame: dict[int, list[Box]] = {}
    for key, boxes in annotations.items():
        k = int(key)
        if key_fps is not None:
            if not source_fps:
                raise ValueError("key_fps needs source_fps")
            k = int(round(k / key_fps * source_fps))
        by_frame.setdefault(k, []).extend(_as_box(b) for b in boxes)
    keys = sorted(by_frame)
    out = []
    for idx in indices:
        near = nearest_key(keys, int(idx), max_distance)
        out.append(list(by_frame[near]) if near is not None else [])
    return out


def _color(value: str | None) -> tuple[int, int, int]:
    if value and isinstance(value, str) and value.startswith("#") and len(value) == 7:
        try:
            return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)
        except ValueError:
            pass
    return (255, 0, 0)


def draw_boxes_on(frame: np.ndarray, boxes: Sequence[Box], source_size: tuple[int, int] | None = None,
                  line_width: int | None = None) -> np.ndarray:
    """A copy of ``frame`` with ``boxes`` drawn (outline + label above the
    box, or inside it at the top edge of the frame)."""
    from PIL import Image, ImageDraw

    h, w = frame.shape[:2]
    sw, sh = source_size or (w, h)
    sx, sy = w / sw, h / sh
    img = Image.fromarray(np.ascontiguousarray(frame))
    draw = ImageDraw.Draw(img)
    lw = line_width or max(1, round(min(w, h) / 160))
    font = _font(max(8, round(min(w, h) / 24)))
    for b in boxes:
        color = _color(b.color)
        x0, y0 = b.x * sx, b.y * sy
        x1, y1 = (b.x + b.width) * sx, (b.y + b.height) * sy
        draw.rectangle([x0, y0, x1 - 1, y1 - 1], outline=color, width=lw)
        if b.label:
            l, t, r, bt = draw.textbbox((0, 0), b.label, font=font)
            tw, th = r - l, bt - t
            ty = y0 - th - 2 if y0 - th - 2 >= 0 else y0 + lw
            draw.rectangle([x0, ty, x0 + tw + 2, ty + th + 2], fill=color)
            draw.text((x0 + 1 - l, ty + 1 - t), b.label, fill=(255, 255, 255), font=font)
    return np.asarray(img)


def draw_boxes(frames: Sequence[np.ndarray], indices: Sequence[int],
               annotations: Mapping[Any, Sequence[Box | Mapping[str, Any]]],
               source_size: tuple[int, int] | None = None, source_fps: float | None = None,
               key_fps: float | None = None, max_distance: float | None = None) -> list[np.ndarray]:
    """Frames with the boxes of their nearest annotated frame drawn on them
    (frames without boxes are returned unchanged)."""
    if len(frames) != len(indices):
        raise ValueError(f"{len(frames)} frames but {len(indices)} indices")
    per_frame = boxes_for_indices(annotations, indices, source_fps, key_fps, max_distance)
    return [draw_boxes_on(f, bs, source_size) if bs else f for f, bs in zip(frames, per_frame)]


def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1
        return ImageFont.load_default()
