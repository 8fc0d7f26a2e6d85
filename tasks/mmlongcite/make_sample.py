"""Build the MMLongCite sample pack in ``sample/`` (the release's layout).

    python -m avhb.tasks.mmlongcite.make_sample [OUT_DIR]

Writes, in the upstream row schema (``id``, ``context``, ``question``,
``ground_truth``, ``task``, ``text_length``, ``mm_length``; plus the
optional ``evidence``):

* ``data/mmlongcite/<dataset>.jsonl``: nine items, an MCQ and an open
  question per family, the MCQ in the 8K bucket and the open one in the
  16K bucket, plus a 17-page LongDocURL item (32K bucket; the one the
  end-to-end test runs over a small context budget, and the HR item);
* ``images/mmlongcite/<dataset>/*.png``: the images the rows name under
  ``image/mmlongcite/...`` (the release keeps them in ``images/``): pages
  rendered with Pillow (numbers, a table), slides, pictures, and video
  frames as timed images (the time is drawn on the frame, the file is
  named by it);
* ``data/mmlongcite-hr/{easy,hard}/longdocurl.jsonl`` and
  ``images/mmlongcite-hr/{easy,hard}/longdocurl/*.png``: HR copies of the
  17-page item (easy: 2x2 grids 4+4+4+4+1; hard: 4x4 + 1), stitched and
  labelled by ``avhb.media.grid.make_grid`` as ``hr.py`` builds them.

Every image carries a band of one colour along its top, unique in the pack,
so a test judge can tell which unit it was shown.  Pages are 200x260 px
(the real ones are larger: the sample's grids are 400x520 and 800x1040, not
the paper's 1-2K / 2-4K).  Deterministic; needs only Pillow and numpy.
"""
from __future__ import annotations

import itertools
import json
import shutil
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from avhb.tasks.sample_media import font, picture

OUT = Path(__file__).resolve().parent / "sample"
PAGE = (200, 260)
FRAME = (200, 150)
BAND = 16
_PALETTE = [(r, g, b) for r, g, b in itertools.product((30, 100, 170, 240), repeat=3)
            if min(r, g, b) < 170 and max(r, g, b) > 30]
_used: list[tuple[int, int, int]] = []


def _next_colour() -> tuple[int, int, int]:
    colour = _PALETTE[(len(_used) * 7) % len(_PALETTE)]
    if colour in _used:
        raise RuntimeError("palette exhausted")
    _used.append(colour)
    return colour


def page(lines: list[str], table: list[list[str]] | None = None, size=PAGE, background=(255, 255, 255),
         shapes: Sequence[tuple[str, tuple[int, int, int], tuple[int, int, int, int]]] = ()) -> np.ndarray:
    """A picture: the colour band, text lines, an optional table, shapes."""
    img, draw = picture(size, background)
    draw.rectangle([0, 0, size[0] - 1, BAND - 1], fill=_next_colour())
    body = font(13)
    y = BAND + 8
    for line in lines:
        draw.text((10, y), line, fill=(0, 0, 0), font=body)
        y += 18
    if table:
        cols = len(table[0])
        cw = (size[0] - 20) // cols
        for r, row in enumerate(table):
            for c, cell in enumerate(row):
                x0, y0 = 10 + c * cw, y + 6 + r * 20
                draw.rectangle([x0, y0, x0 + cw, y0 + 20], outline=(0, 0, 0))
                draw.text((x0 + 4, y0 + 4), cell, fill=(0, 0, 0), font=font(12))
    for kind, colour, box in shapes:
        (draw.ellipse if kind == "circle" else draw.rectangle)(list(box), fill=colour)
    return np.asarray(img)


def frame(t: float, caption: str, shapes=()) -> np.ndarray:
    return page([f"t={t:g}s", caption], size=FRAME, background=(225, 225, 210), shapes=shapes)


def text(t: str) -> dict[str, str]:
    return {"type": "text", "text": t}


class Pack:
    def __init__(self, out: Path):
        self.out = out
        self.rows: dict[str, list[dict[str, Any]]] = {}

    def image(self, dataset: str, name: str, pixels: np.ndarray, root: str = "mmlongcite") -> dict[str, str]:
        from PIL import Image

        rel = f"{root}/{dataset}/{name}.png"
        path = self.out / "images" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).save(path, format="PNG", optimize=True)
        return {"type": "image", "image": f"image/{rel}"}

    def row(self, dataset: str, rid: int, context: list[dict[str, str]], question: str, gold: str, task: str,
            mm_length: int, evidence: list[int]) -> dict[str, Any]:
        text_length = sum(len(u.get("text", "")) for u in context) // 4
        row = {"id": rid, "context": context, "question": [{"type": "text", "text": question}],
               "ground_truth": gold, "task": [task], "text_length": text_length, "mm_length": mm_length,
               "evidence": evidence}
        self.rows.setdefault(dataset, []).append(row)
        return row

    def write_rows(self, folder: Path, rows: dict[str, list[dict[str, Any]]]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for dataset, items in rows.items():
            with open(folder / f"{dataset}.jsonl", "w", encoding="utf-8") as fh:
                for r in items:
                    fh.write(json.dumps(r, ensure_ascii=False) + "\n")


MCQ_TAIL = "Choose the letter name in front of the right option from A, B, C, D."


def build(out: Path = OUT) -> Path:
    _used.clear()
    for sub in ("data", "images"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
    p = Pack(out)

    # -- single-source QA: LongDocURL
    ds = "longdocurl"
    p.row(ds, 101, [
        text("Annual report 2021, page 4: the company reports four business segments."),
        p.image(ds, "5511023_14", page(["Segment growth 2021"], [["Segment", "Growth"], ["Retail", "3%"],
                                                                  ["Cloud", "18%"], ["Devices", "5%"],
                                                                  ["Services", "7%"]])),
        p.image(ds, "5511023_15", page(["Headcount 2021", "Employees: 1,240", "Offices: 9"])),
        text("The board met twice in 2021 and approved the budget."),
    ], "Which segment grew fastest in 2021?\n(A). Retail\n(B). Cloud\n(C). Devices\n(D). Services\n" + MCQ_TAIL,
        "B", "SP_Table_Reasoning", 9830, [2])
    p.row(ds, 102, [
        p.image(ds, "7720311_02", page(["Income statement", "Total revenue 2021:", "4,210 million"])),
        text("Revenue in 2020 was 3,900 million."),
        p.image(ds, "7720311_09", page(["Offices"], [["City", "Staff"], ["Oslo", "40"], ["Lima", "25"]])),
    ], "What was the total revenue in 2021?", "4,210 million", "SP_Text_Understanding", 20000, [1])
    values = [35, 16, 66, 11, 23, 61, 16, 40, 52, 33, 29, 71, 18, 44, 90, 12, 57]  # page 6 holds the answer
    long_pages = [p.image(ds, f"9034418_{k:02d}", page([f"Page {k}", f"Value: {v}"])) for k, v in enumerate(values, 1)]
    p.row(ds, 103, long_pages,
          "What is the value printed on page 6?\n(A). 61\n(B). 16\n(C). 66\n(D). 11\n" + MCQ_TAIL,
          "A", "MP_Figure_Reasoning", 30000, [6])

    # -- multi-source QA: SlideVQA (images) and 2WikiMultiHopQA (text + an image)
    ds = "slidevqa"
    p.row(ds, 201, [
        p.image(ds, "deckA_03", page(["Deck A, slide 3", "Product launch: 2019"])),
        p.image(ds, "deckB_07", page(["Deck B, slide 7", "Team size: 12"])),
        p.image(ds, "deckA_08", page(["Deck A, slide 8", "Sales doubled", "after the launch"])),
    ], "In which year did sales start to double?\n(A). 2017\n(B). 2018\n(C). 2019\n(D). 2020\n" + MCQ_TAIL,
        "C", "MS_Slide_Reasoning", 9000, [1, 3])
    ds = "2wikimultihopqa"
    p.row(ds, 202, [
        text("Alice Moreau was born in Lyon."),
        text("Film X was directed by Jean Roux."),
        p.image(ds, "poster_x", page(["FILM X", "a film by", "Jean Roux"])),
        text("Jean Roux was born in Paris."),
    ], "Where was the director of Film X born?", "Paris", "MS_Multi_Hop", 16000, [2, 4])

    # -- visual grounding: Visual Haystack
    ds = "visual_haystack"
    p.row(ds, 301, [
        p.image(ds, "vh_0001", page(["image 1"], shapes=[("rect", (40, 70, 200), (60, 80, 140, 160))])),
        p.image(ds, "vh_0002", page(["image 2"], shapes=[("rect", (30, 160, 60), (70, 90, 130, 150))])),
        p.image(ds, "vh_0003", page(["image 3"], shapes=[("circle", (240, 210, 40), (60, 80, 140, 160))])),
        p.image(ds, "vh_0004", page(["image 4"], shapes=[("circle", (220, 30, 30), (60, 80, 140, 160))])),
    ], "Which image shows a red circle?\n(A). Image 1\n(B). Image 2\n(C). Image 3\n(D). Image 4\n" + MCQ_TAIL,
        "D", "VG_Single_Needle", 8800, [4])
    p.row(ds, 302, [
        p.image(ds, "vh_0101", page(["a cat"])),
        p.image(ds, "vh_0102", page(["a dog"])),
        p.image(ds, "vh_0103", page(["a bird"])),
    ], "Does any image show a dog? Answer yes or no.", "yes", "VG_Existence", 13000, [2])

    # -- video: LongVideoBench frames as timed images
    ds = "longvideobench"
    ball = (220, 30, 30)
    p.row(ds, 401, [
        p.image(ds, "v017_t0000", frame(0, "an empty table")),
        p.image(ds, "v017_t0010", frame(10, "a ball appears", [("circle", ball, (90, 80, 120, 110))])),
        p.image(ds, "v017_t0020", frame(20, "the ball rolls left", [("circle", ball, (30, 80, 60, 110))])),
        p.image(ds, "v017_t0030", frame(30, "an empty table")),
    ], "What happens right after the ball appears?\n(A). It rolls left\n(B). It rolls right\n(C). It disappears\n"
       "(D). It bounces\n" + MCQ_TAIL, "A", "VU_Temporal_Order", 9500, [2, 3])
    p.row(ds, 402, [
        p.image(ds, "v018_t0000", frame(0, "an empty table")),
        p.image(ds, "v018_t0005", frame(5, "something enters", [("circle", ball, (150, 80, 180, 110))])),
        p.image(ds, "v018_t0010", frame(10, "the table again")),
    ], "What object enters the scene?", "a red ball", "VU_Object_Recognition", 18000, [2])

    p.write_rows(out / "data" / "mmlongcite", p.rows)
    write_hr(p, out, next(r for r in p.rows["longdocurl"] if r["id"] == 103))
    return out


def write_hr(p: Pack, out: Path, row: dict[str, Any]) -> None:
    """The HR copies of ``row`` (module docstring), grids as hr.py builds them."""
    from PIL import Image

    from avhb.media import make_grid

    from . import hr

    for level in ("easy", "hard"):
        spec = hr.level_spec(level)
        context = []
        for k, item in enumerate(hr.layout(row["context"], spec["per_grid"]), 1):
            if item["type"] == "text":
                context.append(text(item["text"]))
                continue
            images = [np.asarray(Image.open(out / "images" / Path(s).relative_to("image")).convert("RGB"))
                      for s in item["sources"]]
            grid = make_grid(images, indices=item["indices"],
                             tile_size=hr.tile_size(images, len(images), spec["max_side"]))
            context.append(p.image("longdocurl", f"{row['id']}_grid{k}", grid, root=f"mmlongcite-hr/{level}"))
        hr_row = {**row, "context": context}
        p.write_rows(out / "data" / "mmlongcite-hr" / level, {"longdocurl": [hr_row]})


def main(argv: list[str]) -> int:
    out = build(Path(argv[0]) if argv else OUT)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{out}: {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
