"""MMLongCite-HR: grid layout rules, grids built from real images and read
back (tile colours and index labels, by matching the rendered label glyphs),
the shipped HR files mapped to original units, and mismatches failing
their sample."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from avhb.errors import SampleError
from avhb.media.boxes import _font
from avhb.media.grid import grid_shape
from avhb.model.messages import ImagePart, TextPart
from avhb.tasks.mmlongcite import hooks, hr
from tests.tasks.test_mmlongcite import SAMPLE, load, write_rows


def yellow(a: np.ndarray) -> np.ndarray:
    a = a.astype(int)
    return (a[..., 0] > 180) & (a[..., 1] > 180) & (a[..., 2] < 90)


def read_label(grid: np.ndarray, r: int, c: int, tw: int, th: int, candidates: range) -> int:
    """The index whose ``[i]`` label, drawn as make_grid draws it, best
    matches the yellow glyph pixels in tile (r, c)."""
    font = _font(max(10, round(min(tw, th) / 10)))
    box = (tw // 2, th // 3)
    crop = yellow(grid[r * th: r * th + box[1], c * tw: c * tw + box[0]])
    best, best_iou = None, -1.0
    for i in candidates:
        canvas = Image.new("RGB", box, (0, 0, 0))
        draw = ImageDraw.Draw(canvas)
        l, t, _, _ = draw.textbbox((0, 0), f"[{i}]", font=font)
        draw.text((3 - l, 3 - t), f"[{i}]", fill=(255, 255, 0), font=font)
        mask = yellow(np.asarray(canvas))
        iou = (mask & crop).sum() / max(1, (mask | crop).sum())
        if iou > best_iou:
            best, best_iou = i, iou
    assert best_iou > 0.9, best_iou
    return best


def colour(k: int) -> tuple[int, int, int]:
    return (20 + (k * 37) % 200, 20 + (k * 71) % 120, 60 + (k * 53) % 190)  # green kept low: never yellow


def image_rows(tmp_path: Path, n: int) -> Path:
    folder = tmp_path / "images" / "mmlongcite" / "longdocurl"
    folder.mkdir(parents=True)
    for k in range(1, n + 1):
        Image.new("RGB", (120, 90), colour(k)).save(folder / f"p{k}.png")
    context = [{"type": "image", "image": f"image/mmlongcite/longdocurl/p{k}.png"} for k in range(1, n + 1)]
    write_rows(tmp_path, [{"id": 5, "context": context, "question": "Q?", "ground_truth": "x", "task": ["t"],
                           "text_length": 0, "mm_length": 40000}])
    return tmp_path


def test_layout_runs_are_cut_at_text_units_and_trailing_partial_grids():
    ctx = [{"type": "text", "text": "a"}] + [{"type": "image", "image": f"{k}.png"} for k in range(2, 7)] + \
          [{"type": "text", "text": "b"}, {"type": "image", "image": "8.png"}]
    out = hr.layout(ctx, 4)
    assert [(x["type"], x.get("indices") or x["index"]) for x in out] == [
        ("text", 1), ("grid", [2, 3, 4, 5]), ("grid", [6]), ("text", 7), ("grid", [8])]
    assert out[1]["sources"] == ["2.png", "3.png", "4.png", "5.png"]
    assert [x["indices"] for x in hr.layout(ctx, 16) if x["type"] == "grid"] == [[2, 3, 4, 5, 6], [8]]
    assert grid_shape(5) == (2, 3) and grid_shape(3) == (2, 2)


def test_hard_grids_built_from_real_images_read_back(tmp_path):
    """32 pages, hard level: two 4x4 grids; unit 5 is at row 1, column 0 of
    the first; the second is labelled 17-32."""
    root = image_rows(tmp_path, 32)
    doc = load(root, hr="hard", hr_datasets=["LongDocURL"])[0]
    assert doc["hr_source"] == "built"
    parts = [p for p in hooks.messages(doc, {"root": root})[1].parts if isinstance(p, ImagePart)]
    assert len(parts) == 2
    assert parts[1].label == "Units [17]-[32], one stitched image, each tile labelled with its index:"
    first, second = (np.asarray(Image.open(p.path).convert("RGB")) for p in parts)
    assert first.shape == (4 * 90, 4 * 120, 3)
    tw, th = 120, 90
    for grid, base in ((first, 1), (second, 17)):
        for k in range(16):
            r, c = divmod(k, 4)
            interior = grid[r * th + 60, c * tw + 90].astype(int)
            assert np.abs(interior - colour(base + k)).max() <= 2  # the tile shows page base+k
            assert read_label(grid, r, c, tw, th, range(1, 33)) == base + k
    r, c = divmod(5 - 1, 4)
    assert (r, c) == (1, 0) and read_label(first, 1, 0, tw, th, range(1, 33)) == 5
    # built once: a second request reuses the cached file
    again = [p for p in hooks.messages(doc, {"root": root})[1].parts if isinstance(p, ImagePart)]
    assert [p.path for p in again] == [p.path for p in parts]
    assert Path(parts[0].path).is_relative_to(hr.grid_cache_dir())


def _images(folder: Path, count: int, size: tuple[int, int]) -> list[str]:
    """``count`` plain images of ``size``, one colour each, in ``folder``."""
    folder.mkdir()
    for k in range(count):
        Image.new("RGB", size, colour(k)).save(folder / f"{k}.png")
    return [str(folder / f"{k}.png") for k in range(count)]


def test_easy_grid_shrinks_to_the_level_cap(tmp_path):
    paths = _images(tmp_path / "big", 4, (1500, 1000))
    grid = np.asarray(Image.open(hr.build_grid(paths, [9, 10, 11, 12], "easy")))
    assert max(grid.shape[:2]) <= 2048 and grid.shape[:2] == (2 * 682, 2 * 1024)
    assert read_label(grid, 1, 1, 1024, 682, range(1, 20)) == 12


def test_shipped_hr_rows_map_grids_to_original_units():
    doc = load(SAMPLE, hr="easy")[0]
    assert (doc["id"], doc["hr_source"], len(doc["context"])) == (103, "shipped", 17)  # the original units stay
    grids = [x for x in doc["hr_layout"] if x["type"] == "grid"]
    assert [g["indices"] for g in grids] == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16], [17]]
    assert grids[1]["image"] == "images/mmlongcite-hr/easy/longdocurl/103_grid2.png"
    shipped = np.asarray(Image.open(SAMPLE / grids[1]["image"]).convert("RGB"))
    page6 = np.asarray(Image.open(SAMPLE / doc["context"][5]["image"]).convert("RGB"))
    tw, th = page6.shape[1], page6.shape[0]
    assert np.array_equal(shipped[0:th, tw:2 * tw][40:], page6[40:])  # unit 6 at row 0, column 1 (below its label)
    assert read_label(shipped, 0, 1, tw, th, range(1, 18)) == 6
    hard = load(SAMPLE, hr="hard")[0]
    assert [len(x["indices"]) for x in hard["hr_layout"]] == [16, 1]


def test_built_grid_equals_the_shipped_one(tmp_path):
    copy = tmp_path / "release"
    shutil.copytree(SAMPLE, copy)
    shutil.rmtree(copy / "data" / "mmlongcite-hr")
    docs = {d["id"]: d for d in load(copy, hr="easy")}
    assert sorted(docs) == [101, 102, 103, 202]  # the hr_datasets: LongDocURL and 2WikiMultiHopQA
    assert {d["hr_source"] for d in docs.values()} == {"built"}
    parts = hooks.messages(docs[103], {"root": copy})[1].parts
    built = [p.path for p in parts if isinstance(p, ImagePart)]
    for k, path in enumerate(built, 1):
        shipped = SAMPLE / f"images/mmlongcite-hr/easy/longdocurl/103_grid{k}.png"
        assert np.array_equal(np.asarray(Image.open(path)), np.asarray(Image.open(shipped).convert("RGB")))
    # text units are unchanged; the two adjacent images of 101 make one smaller grid
    p101 = hooks.messages(docs[101], {"root": copy})[1].parts
    assert isinstance(p101[1], TextPart) and p101[1].text.startswith("[1] Annual report")
    assert isinstance(p101[2], ImagePart) and p101[2].label.startswith("Units [2]-[3]")
    assert isinstance(p101[3], TextPart) and p101[3].text.startswith("[4] The board")


def test_missing_source_image_fails_the_sample(tmp_path):
    root = image_rows(tmp_path, 4)
    (root / "images" / "mmlongcite" / "longdocurl" / "p3.png").unlink()
    doc = load(root, hr="easy")[0]
    with pytest.raises(SampleError, match="sample 5: cannot build its HR grid: .*p3.png: file not found"):
        hooks.messages(doc, {"root": root})


def test_shipped_row_that_does_not_fit_fails_its_sample(tmp_path):
    copy = tmp_path / "release"
    shutil.copytree(SAMPLE, copy)
    path = copy / "data" / "mmlongcite-hr" / "easy" / "longdocurl.jsonl"
    row = json.loads(path.read_text())
    row["context"] = row["context"][:4]
    orphan = {**row, "id": 999}
    path.write_text(json.dumps(row) + "\n" + json.dumps(orphan) + "\n")
    docs = {d["id"]: d for d in load(copy, hr="easy")}
    with pytest.raises(SampleError, match="HR row id 103 .*4 images but the original's image runs make 5 grids"):
        hooks.messages(docs[103], {"root": copy})
    with pytest.raises(SampleError, match="HR row id 999 .*has no original row"):
        hooks.messages(docs[999], {"root": copy})


def test_a_grid_is_cached_without_an_fsync(tmp_path, monkeypatch):
    """The grid cache is rebuilt from its sources when lost: written
    atomically, not synced to disk (an fsync per grid, per sample)."""
    import os

    paths = _images(tmp_path / "src", 2, (64, 48))
    synced = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    path = hr.build_grid(paths, [1, 2], "easy")
    assert path.is_file() and synced == []
