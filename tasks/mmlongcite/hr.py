"""MMLongCite-HR: runs of image units stitched into labelled grids.

Levels: ``easy`` stitches each run of 4 consecutive image units 2x2 (the
paper: 1-2K px), ``hard`` each run of 16 units 4x4 (2-4K px).  Text units
stay as they are.  A run is a maximal sequence of adjacent image units (a
text unit ends it, INFERRED: stitching across a text unit would move that
text); it is cut into grids of 4 (16) in context order, and a trailing
partial run makes a smaller grid (``avhb.media.grid.grid_shape``: 3 images
2x2 with one empty tile, 5 images 2x3...).

Every tile is labelled ``[i]`` with the ORIGINAL unit index, citations name
original units, and the citation judge is shown the original units one by
one (the doc keeps the original ``context``).

Where the grids come from:

* shipped: ``PATH/data/mmlongcite-hr/<level>/*.json[l]`` rows (same schema;
  their image units are the stitched files).  Each is joined to the
  original row by ``id``; its context must have the original's shape under
  the rule above (the same text units in order, one image per grid),
  which maps every shipped image to the original indices it holds.  A row
  that does not fit, or has no original, fails its sample with a message;
  nothing is guessed.
* built: without shipped rows, the rows of ``hr_datasets`` (YAML; the
  paper's HR set is LongDocURL and 2WikiMultiHopQA) get grids made by
  ``avhb.media.grid.make_grid`` when their request is first built, cached
  under ``<avhb cache>/built/mmlongcite-hr/<level>/<hash>.png``, the core's
  folder for media a pack builds (``avhb.paths.built_media_dir``: accepted
  by media confinement, which refuses paths the data names outside the
  data root; the hash covers
  the level, the size cap and every source file's fingerprint).  Tiles are
  the largest source width and height, shrunk (never enlarged) so that the
  grid's long side is at most 2048 px (easy) or 4096 px (hard), INFERRED
  from the paper's resolution ranges.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from avhb import ImagePart, SampleError, TextPart, write_atomic

LEVELS = {"easy": {"per_grid": 4, "max_side": 2048}, "hard": {"per_grid": 16, "max_side": 4096}}
GRID_VERSION = 1


def level_spec(level: str) -> dict[str, int]:
    if level not in LEVELS:
        raise ValueError(f"unknown HR level {level!r} (easy or hard)")
    return LEVELS[level]


def layout(context: list[dict[str, Any]], per_grid: int) -> list[dict[str, Any]]:
    """What the model sees in place of ``context``: ``{"type": "text",
    "index": i, "text": ...}`` and ``{"type": "grid", "indices": [...],
    "sources": [image paths]}`` in context order (module docstring)."""
    out: list[dict[str, Any]] = []
    run: list[int] = []

    def flush() -> None:
        for k in range(0, len(run), per_grid):
            chunk = run[k:k + per_grid]
            out.append({"type": "grid", "indices": chunk, "sources": [context[i - 1]["image"] for i in chunk]})
        run.clear()

    for i, unit in enumerate(context, 1):
        if unit.get("type") == "image":
            run.append(i)
        else:
            flush()
            out.append({"type": "text", "index": i, "text": unit.get("text", "")})
    flush()
    return out


def attach_shipped(plan: list[dict[str, Any]], hr_context: list[dict[str, Any]]) -> str | None:
    """Put the shipped grid files into ``plan`` (in place); the reason they
    do not fit when they do not (module docstring)."""
    grids = [p for p in plan if p["type"] == "grid"]
    images = [u for u in hr_context if u.get("type") == "image"]
    texts_plan = [p["text"] for p in plan if p["type"] == "text"]
    texts_hr = [u.get("text", "") for u in hr_context if u.get("type") == "text"]
    if len(images) != len(grids):
        return (f"the HR row has {len(images)} images but the original's image runs make {len(grids)} grids "
                "of this level")
    if texts_hr != texts_plan:
        return "the HR row's text units differ from the original's"
    order = [u.get("type") for u in hr_context]
    if order != ["image" if p["type"] == "grid" else "text" for p in plan]:
        return "the HR row's units are not in the original's order"
    for grid, unit in zip(grids, images):
        grid["image"] = unit["image"]
    return None


def grid_cache_dir() -> Path:
    """Under the core's folder for media packs build (trusted by media
    confinement, unlike a path the data names)."""
    from avhb import built_media_dir

    return built_media_dir() / "mmlongcite-hr"


def grid_path(sources: list[str], level: str) -> Path:
    """Where the built grid of ``sources`` (absolute paths) is cached."""
    from avhb.media import fingerprint

    spec = level_spec(level)
    h = hashlib.sha256(json.dumps([GRID_VERSION, level, spec["max_side"], [fingerprint(s) for s in sources]])
                       .encode()).hexdigest()[:24]
    return grid_cache_dir() / level / f"{h}.png"


def tile_size(images: list[Any], n: int, max_side: int) -> tuple[int, int]:
    from avhb.media import grid_shape

    rows, cols = grid_shape(n)
    tw = max(int(a.shape[1]) for a in images)
    th = max(int(a.shape[0]) for a in images)
    scale = min(1.0, max_side / max(cols * tw, rows * th))
    return max(1, int(tw * scale)), max(1, int(th * scale))


def build_grid(sources: list[str], indices: list[int], level: str) -> Path:
    """The grid image of ``sources`` labelled with ``indices``, built once
    and cached; a missing or unreadable source is a ``SampleError``."""
    from PIL import Image

    from avhb.media import make_grid, read_image

    path = grid_path(sources, level)
    if path.is_file():
        return path
    images = [read_image(s) for s in sources]
    grid = make_grid(images, indices=indices, tile_size=tile_size(images, len(images), level_spec(level)["max_side"]))
    write_atomic(path, lambda fh: Image.fromarray(grid).save(fh, format="PNG"), binary=True, durable=False)  # a cache
    return path


def grid_label(indices: list[int]) -> str:
    if len(indices) == 1:
        return f"[{indices[0]}]"
    return f"Units [{indices[0]}]-[{indices[-1]}], one stitched image, each tile labelled with its index:"


def parts(doc: dict[str, Any], root: Path) -> list[Any]:
    """The HR context as message parts (text units as ``[i] text``, one
    labelled image per grid)."""
    out: list[Any] = []
    level = doc["hr_level"]
    for item in doc["hr_layout"]:
        if item["type"] == "text":
            out.append(TextPart(f"[{item['index']}] {item['text']}"))
            continue
        if item.get("image"):
            path = Path(item["image"])
            path = path if path.is_absolute() else root / path
        else:
            sources = [str(Path(s) if Path(s).is_absolute() else root / s) for s in item["sources"]]
            try:
                path = build_grid(sources, item["indices"], level)
            except SampleError as exc:
                raise SampleError(f"sample {doc.get('id')}: cannot build its HR grid: {exc}") from None
        out.append(ImagePart(path=str(path), label=grid_label(item["indices"])))
    return out
