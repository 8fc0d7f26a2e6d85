"""The data of the differential corpora (tests/compat/lmeval_corpus,
tests/compat/lmms_corpus), written by :func:`make_lmeval_data` and
:func:`make_lmms_data` into a copy of the corpus folder: small, made here,
in the layouts lm-eval and lmms-eval read (JSON lines, CSV, parquet;
PNG images, an MP4 video, WAV audio).

A document's ``hint`` is what the scripted model answers to it
(tests/compat/fake_model.py): right, wrong, or in a shape a filter must dig
out, so the corpora's scores are neither all 0 nor all 1.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

ARITH_TEST = [
    ("What is 2 plus 3?", "5", "#### 5", "add"),
    ("What is 7 minus 4?", "3", "The answer is 3.", "sub"),
    ("What is 6 times 2?", "12", "#### 13", "mul"),
    ("What is 9 plus 9?", "18", "18", "add"),
    ("What is 10 minus 1?", "9", "it is nine, #### 9", "sub"),
    ("What is 3 times 3?", "9", " 9 ", "mul"),
    ("Name the capital of France.", "Paris", "PARIS", "geo"),
    ("Name the capital of Italy.", "Rome", "Rome.", "geo"),
]
ARITH_TRAIN = [
    ("What is 1 plus 1?", "2", "#### 2", "add"),
    ("What is 5 minus 2?", "3", "3", "sub"),
    ("What is 4 times 2?", "8", "#### 8", "mul"),
    ("What is 8 plus 1?", "9", "nine", "add"),
    ("Name the capital of Spain.", "Madrid", "Madrid", "geo"),
    ("What is 6 minus 6?", "0", "#### 0", "sub"),
    ("What is 2 times 5?", "10", "10", "mul"),
    ("Name the capital of Japan.", "Tokyo", "tokyo", "geo"),
]
ARITH_VALIDATION = [
    ("What is 4 plus 4?", "8", "#### 8", "add"),
    ("What is 9 minus 3?", "6", "6 or 7", "sub"),
    ("What is 7 times 1?", "7", "#### 7", "mul"),
    ("Name the capital of Peru.", "Lima", "Lima", "geo"),
    ("What is 5 plus 0?", "5", "five", "add"),
]

MC = [
    ("Which one is a fruit?", ["carrot", "apple", "potato", "onion"], 1),
    ("Which animal can fly?", ["dog", "cat", "eagle", "cow"], 2),
    ("Which is a colour?", ["blue", "table", "seven", "run"], 0),
    ("Which number is even?", ["three", "five", "seven", "eight"], 3),
    ("Which one is a planet?", ["Mars", "Paris", "Nile", "Everest"], 0),
    ("Which is a tool?", ["cloud", "hammer", "river", "song"], 1),
    ("Which is frozen water?", ["steam", "sand", "ice", "glass"], 2),
]
MC_TRAIN = [
    ("Which one is a vegetable?", ["pear", "leek", "plum", "fig"], 1),
    ("Which animal swims?", ["fish", "owl", "ant", "bee"], 0),
    ("Which is a shape?", ["circle", "sugar", "wind", "milk"], 0),
    ("Which is a metal?", ["wood", "wool", "iron", "silk"], 2),
]
BINARY = [
    ("Is the sky blue on a clear day?", 1), ("Do fish breathe air through lungs?", 0), ("Is ice cold?", 1),
    ("Can a stone swim?", 0), ("Is seven a prime number?", 1), ("Is Paris in Japan?", 0),
]
PASSAGES = [
    "The cat sat on the mat. The cat was happy.",
    "Rivers flow to the sea, and the sea is wide.",
    "One, two, three, four, five; once I caught a fish alive.",
    "Bright stars shine at night over quiet hills.",
]


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _arith_rows(rows) -> list[dict]:
    return [{"id": i, "question": q, "answer": a, "hint": h, "topic": t, "answers": [a, a.lower()]}
            for i, (q, a, h, t) in enumerate(rows)]


def make_lmeval_data(corpus: Path) -> None:
    """The lm-eval corpus's data under ``corpus/data``."""
    data = corpus / "data"
    test, train, val = _arith_rows(ARITH_TEST), _arith_rows(ARITH_TRAIN), _arith_rows(ARITH_VALIDATION)
    _write_jsonl(data / "arith_test.jsonl", test)
    _write_jsonl(data / "arith_train.jsonl", train)
    _write_jsonl(data / "arith_validation.jsonl", val)
    with open(data / "arith_test.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, ["id", "question", "answer", "hint", "topic"])
        writer.writeheader()
        writer.writerows({k: r[k] for k in ("id", "question", "answer", "hint", "topic")} for r in test)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(test), data / "arith_test.parquet")
    mc = [{"question": q, "choices": c, "label": y, "gold_text": c[y]} for q, c, y in MC]
    _write_jsonl(data / "mc_test.jsonl", mc)
    _write_jsonl(data / "mc_train.jsonl", [{"question": q, "choices": c, "label": y, "gold_text": c[y]}
                                           for q, c, y in MC_TRAIN])
    _write_jsonl(data / "binary_test.jsonl", [{"question": q, "label": y} for q, y in BINARY])
    _write_jsonl(data / "passages.jsonl", [{"text": t} for t in PASSAGES])


SCENES = [
    ("What colour is the square?", "red", "red", (200, 30, 30)),
    ("What colour is the square?", "green", "blue", (30, 200, 30)),
    ("What colour is the square?", "blue", "blue", (30, 30, 200)),
    ("What colour is the square?", "yellow", "Yellow", (220, 220, 40)),
    ("What colour is the square?", "white", "white.", (250, 250, 250)),
]


def make_lmms_data(corpus: Path) -> None:
    """The lmms-eval corpus's data under ``corpus/data``: PNG images, one
    MP4 (the indexed test video), one WAV (a tone), and the rows naming
    them (absolute paths, as lmms-eval's hooks build them from a cache
    folder)."""
    import numpy as np
    from PIL import Image

    from tests.fixtures.make_test_media import make_audio_file, make_video, tone_track

    data = corpus / "data"
    media = data / "media"
    media.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (question, answer, hint, rgb) in enumerate(SCENES):
        image = np.zeros((24 + 4 * i, 32, 3), np.uint8)
        image[:] = (90, 90, 90)
        image[4:16, 8:20] = rgb
        Image.fromarray(image).save(media / f"scene{i}.png")
        Image.fromarray(image[:, ::-1].copy()).save(media / f"mirror{i}.png")
        rows.append({"id": f"s{i}", "question": question, "answer": answer, "hint": hint,
                     "image": str(media / f"scene{i}.png"), "mirror": str(media / f"mirror{i}.png"),
                     "video": str(media / "clip.mp4"), "audio": str(media / "tone.wav"), "category": "colour"})
    make_video(str(media / "clip.mp4"), seconds=2.0, fps=10, size=(64, 48))
    make_audio_file(str(media / "tone.wav"), tone_track(1.0, 16000, [(0.1, 0.6, 440.0)]), 16000)
    _write_jsonl(data / "scenes.jsonl", rows)
