"""MMLongCite's ``document`` (what the tasks' samples cluster by,
``cluster_key: document``): ``data.document_of`` on hand-made contexts, and
the field the loader writes on rows of one document and of several."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from avhb.tasks.mmlongcite import data, hooks

KW = yaml.safe_load((Path(hooks.__file__).resolve().parent / "mmlongcite.yaml").read_text())["dataset_kwargs"]


def image(name: str) -> dict:
    return {"type": "image", "image": f"images/mmlongcite/ds/{name}"}


TEXT = {"type": "text", "text": "a paragraph"}


@pytest.mark.parametrize("family, context, expected", [
    # one source: the dataset and the first image's stem without its page or time suffix
    ("single_source", [image("5511023_14.png"), image("5511023_15.png")], "ds/5511023"),
    ("video", [image("v017_t0010.png"), image("v017_t0020.png")], "ds/v017"),
    # text units, and image units naming no file, come before the first image and are passed over
    ("single_source", [TEXT, {"type": "image", "image": ""}, {"type": "image"}, image("7720311_02.png")],
     "ds/7720311"),
    # the first image decides, whatever the later ones name
    ("single_source", [image("a_1.png"), image("b_2.png")], "ds/a"),
    # only the last suffix goes; a stem without one is kept whole; "_t" needs digits
    ("single_source", [image("report_2021_03.png")], "ds/report_2021"),
    ("single_source", [image("cover.png")], "ds/cover"),
    ("video", [image("clip_tail.png")], "ds/clip_tail"),
    # a stem that is all suffix is kept, not emptied
    ("single_source", [image("_14.png")], "ds/_14"),
    # one source but no image: the row is its own document
    ("single_source", [TEXT], "ds/row:7"),
    ("video", [], "ds/row:7"),
    # several sources, a haystack of unrelated images, no family: each row its own, page suffix or not
    ("multi_source", [image("deckA_03.png"), image("deckA_08.png")], "ds/row:7"),
    ("visual_grounding", [image("vh_0001.png")], "ds/row:7"),
    (None, [image("5511023_14.png")], "ds/row:7"),
])
def test_document_of(family, context, expected):
    assert data.document_of("ds", family, context, 7) == expected


def test_rows_of_one_document_share_it_and_others_do_not(tmp_path):
    rows = [(1, "LongDocURL", ["5511023_14.png", "5511023_15.png"]),
            (2, "LongDocURL", ["5511023_40.png"]),  # another question on the same document
            (3, "LongDocURL", ["7720311_02.png"]),
            (4, "SlideVQA", ["deckA_03.png", "deckA_08.png"]),
            (5, "SlideVQA", ["deckA_04.png"])]  # multi-source rows never share, whatever their files
    path = tmp_path / "data" / "mmlongcite" / "set.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps({
        "id": rid, "context": [{"type": "image", "image": f"image/mmlongcite/{ds}/{f}"} for f in files],
        "question": "Q?", "ground_truth": "x", "task": "SP_Text", "text_length": 1, "mm_length": 100})
        + "\n" for rid, ds, files in rows))
    docs = {d["id"]: d["document"] for d in hooks.load(tmp_path, {"dataset_kwargs": {**KW, "family": "all",
                                                                                   "hr": "none"}})}
    assert docs == {1: "LongDocURL/5511023", 2: "LongDocURL/5511023", 3: "LongDocURL/7720311",
                    4: "SlideVQA/row:4", 5: "SlideVQA/row:5"}
