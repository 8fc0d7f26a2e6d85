"""Build the VidPair-Halluc sample pack (``sample/``) in the release layout.

    python -m avhb.tasks.vidpair_halluc.make_sample [OUT_DIR]   # default: sample/ next to this file

Four pairs of 3 s, 160x120, 8 fps H.264 videos (3 clips of 1 s).  Both
videos of a pair share the same background (sky, grass, a table) and differ
only in the foreground:

* ``color_0001`` (video level): a red ball vs a blue ball;
* ``number_0002`` (video level): one yellow square vs two;
* ``sequence_0003`` (temporal): a ball rolling left to right vs the same
  frames reversed (``T_sequence_0003_0.mp4``);
* ``object_0004`` (spatial): ball / green square / ball vs the same video
  with its middle clip blacked out (``M_object_0004_101.mp4``,
  mask flags ``[1, 0, 1]``).

Each pair gets 4 yes/no rows (the pos and the neg question on both videos),
2 multiple-choice rows (one question on both videos) and 2 open-ended rows,
written to ``qa/hf/{binary,multiple_choice,open_ended,all_qa}.jsonl`` with
``metadata.csv`` and ``pairs/pairs.json``.  Rows and frames are
deterministic; the MP4 bytes can differ from run to run
(``avhb.tasks.sample_media.write_video``).
"""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from avhb.tasks.sample_media import canvas, circle, rect, write_video

W, H, FPS, CLIP_FRAMES, CLIPS = 160, 120, 8, 8, 3
SKY, GRASS, TABLE = (135, 190, 235), (70, 150, 70), (120, 80, 40)
RED, BLUE, YELLOW, GREEN, WHITE = (220, 30, 30), (30, 60, 220), (240, 210, 30), (30, 170, 60), (245, 245, 245)


# ---------------------------------------------------------------- drawing

def background() -> np.ndarray:
    img = canvas(W, H, SKY)
    img[H // 2:] = GRASS
    rect(img, 20, 70, 140, 78, TABLE)  # the table top the objects sit on
    return img


def disc(img: np.ndarray, cx: int, cy: int, r: int, colour) -> None:
    circle(img, cx, cy, r, colour)


def square(img: np.ndarray, cx: int, cy: int, half: int, colour) -> None:
    rect(img, cx - half, cy - half, cx + half, cy + half, colour)


def frames_for(kind: str) -> list[np.ndarray]:
    """The 24 RGB frames of one source video."""
    out = []
    n = CLIP_FRAMES * CLIPS
    for i in range(n):
        img = background()
        clip = i // CLIP_FRAMES
        bob = (i % 4) - 2  # a little motion so every clip is a real video
        if kind == "red_ball":
            disc(img, 80, 58 + bob, 12, RED)
        elif kind == "blue_ball":
            disc(img, 80, 58 + bob, 12, BLUE)
        elif kind == "one_square":
            square(img, 80, 60 + bob, 10, YELLOW)
        elif kind == "two_squares":
            square(img, 55, 60 + bob, 10, YELLOW)
            square(img, 105, 60 - bob, 10, YELLOW)
        elif kind == "rolling_ball":
            disc(img, 20 + (120 * i) // (n - 1), 60, 9, WHITE)
        elif kind == "ball_square_ball":
            if clip == 1:
                square(img, 80, 60 + bob, 11, GREEN)
            else:
                disc(img, 80, 58 + bob, 11, RED)
        else:
            raise ValueError(kind)
        out.append(img)
    return out


def reverse(frames: list[np.ndarray]) -> list[np.ndarray]:
    """Upstream reverse.py: every frame in reverse order."""
    return frames[::-1]


def mask(frames: list[np.ndarray], flags: list[int]) -> list[np.ndarray]:
    """Upstream mask.py: clip i blacked out where flag i is 0."""
    return [f if flags[i // CLIP_FRAMES] else np.zeros_like(f) for i, f in enumerate(frames)]


# ---------------------------------------------------------------- content

Video = tuple[str, str, str, list[int] | None]  # file name, scene (frames_for), variant, mask flags


class Pair(TypedDict):
    pair_id: str
    id: str
    category: str
    level: str
    pos: Video  # the positive video
    adv: Video  # the adversarial one
    q_pos: str  # the yes/no question true of the positive video
    q_neg: str  # the one true of the adversarial video
    mcq: tuple[str, list[str], str, str]  # stem, options, the positive video's gold letter, the adversarial's
    open: tuple[str, str]  # each video's description


PAIRS: list[Pair] = [
    {"pair_id": "pair_0001", "id": "color_0001", "category": "color", "level": "video",
     "pos": ("color_0001_0.mp4", "red_ball", "original", None), "adv": ("color_0001_1.mp4", "blue_ball", "original", None),
     "q_pos": "Is the ball on the table red?", "q_neg": "Is the ball on the table blue?",
     "mcq": ("What colour is the ball on the table?", ["red", "blue", "green", "yellow"], "A", "B"),
     "open": ("A red ball sits on a table in front of grass and sky, bobbing slightly.",
              "A blue ball sits on a table in front of grass and sky, bobbing slightly.")},
    {"pair_id": "pair_0002", "id": "number_0002", "category": "number", "level": "video",
     "pos": ("number_0002_0.mp4", "one_square", "original", None), "adv": ("number_0002_1.mp4", "two_squares", "original", None),
     "q_pos": "Is there exactly one yellow square on the table?", "q_neg": "Are there two yellow squares on the table?",
     "mcq": ("How many yellow squares are on the table?", ["one", "two", "three", "none"], "A", "B"),
     "open": ("One yellow square sits on a table in front of grass and sky.",
              "Two yellow squares sit side by side on a table in front of grass and sky.")},
    {"pair_id": "pair_0003", "id": "sequence_0003", "category": "sequence", "level": "temporal",
     "pos": ("sequence_0003_0.mp4", "rolling_ball", "original", None),
     "adv": ("T_sequence_0003_0.mp4", "rolling_ball", "temporal_reversed", None),
     "q_pos": "Does the white ball roll from left to right?", "q_neg": "Does the white ball roll from right to left?",
     "mcq": ("In which direction does the white ball roll?", ["left to right", "right to left", "upwards", "it does not move"], "A", "B"),
     "open": ("A white ball rolls along the table from the left edge to the right edge.",
              "A white ball rolls along the table from the right edge to the left edge.")},
    {"pair_id": "pair_0004", "id": "object_0004", "category": "object", "level": "spatial",
     "pos": ("object_0004_0.mp4", "ball_square_ball", "original", None),
     "adv": ("M_object_0004_101.mp4", "ball_square_ball", "masked", [1, 0, 1]),
     "q_pos": "Is a green square visible in the middle segment?", "q_neg": "Is the middle segment completely black?",
     "mcq": ("What is shown in the middle segment of the video?", ["a green square", "a black screen", "a red ball", "two squares"], "A", "B"),
     "open": ("A red ball on a table is replaced by a green square in the middle second, then the red ball returns.",
              "A red ball on a table; the middle second is completely black; then the red ball is back.")},
]


def build(out: Path) -> dict[str, int]:
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list[dict[str, Any]]] = {"binary": [], "multiple_choice": [], "open_ended": []}
    meta: list[dict[str, Any]] = []  # metadata.csv's rows
    pairs: list[dict[str, Any]] = []  # pairs/pairs.json
    for p in PAIRS:
        vid = p["id"]
        base = frames_for(p["pos"][1])
        videos: dict[str, tuple[str, str, list[int] | None]] = {}  # role -> file name, repository path, mask flags
        for role, video in (("pos", p["pos"]), ("adv", p["adv"])):
            fname, kind, variant, flags = video
            frames = frames_for(kind)
            if variant == "temporal_reversed":
                frames = reverse(base)
            elif variant == "masked":
                assert flags is not None  # a masked video has its flags (PAIRS)
                frames = mask(base, flags)
            repo = f"VidPair-Halluc/{vid}/{fname}"
            write_video(out / repo, frames, FPS, preset="medium", threads=1)
            videos[role] = (fname, repo, flags)
            meta.append({"video_id": fname[:-4], "id": vid, "pair_id": p["pair_id"],
                         "role": "positive" if role == "pos" else "adversarial", "file_name": fname,
                         "repo_video_path": repo, "category": p["category"], "level": p["level"], "variant": variant,
                         "mask_flags_json": json.dumps(flags) if flags else "", "duration_sec": f"{len(frames) / FPS:.1f}",
                         "fps": FPS, "width": W, "height": H, "num_frames": len(frames), "num_clips": CLIPS})
        pairs.append({"pair_id": p["pair_id"], "positive_video": videos["pos"][1], "adversarial_video": videos["adv"][1],
                      "id": vid, "category": p["category"], "level": p["level"]})

        def row(qa_type: str, role: str, question_id: str, group: str, question: str, answer: str,
                **extra: str) -> None:
            fname, repo, flags = videos[role]
            n = len(rows[qa_type]) + 1
            r = {"qa_id": f"{qa_type}_{n:05d}", "qa_type": qa_type, "id": vid, "pair_id": p["pair_id"],
                 "question_id": question_id, "qa_group": group,
                 "video_role": "positive" if role == "pos" else "adversarial", "file_name": fname,
                 "repo_video_path": repo, "video_path": f"{vid}/{fname}", "category": p["category"], "level": p["level"],
                 "question": question, "answer": answer, "choices_json": "", "option_map_json": "",
                 "mask_flags_json": json.dumps(flags) if flags else ""}
            r.update(extra)
            rows[qa_type].append(r)

        row("binary", "pos", f"{vid}_pos", "binary_qa_pos", p["q_pos"], "yes")
        row("binary", "adv", f"{vid}_pos", "binary_qa_pos", p["q_pos"], "no")
        row("binary", "pos", f"{vid}_neg", "binary_qa_neg", p["q_neg"], "no")
        row("binary", "adv", f"{vid}_neg", "binary_qa_neg", p["q_neg"], "yes")
        stem, options, gold_pos, gold_adv = p["mcq"]
        letters = "ABCD"
        text = stem + "".join(f"\n{letters[i]}. {o}" for i, o in enumerate(options))
        extra = {"choices_json": json.dumps(options), "option_map_json": json.dumps(dict(zip(letters, options)))}
        row("multiple_choice", "pos", f"{vid}_mcq", "multiple_qa", text, gold_pos, **extra)
        row("multiple_choice", "adv", f"{vid}_mcq", "multiple_qa", text, gold_adv, **extra)
        row("open_ended", "pos", f"{vid}_open", "open_qa", "Describe what happens in the video.", p["open"][0])
        row("open_ended", "adv", f"{vid}_open", "open_qa", "Describe what happens in the video.", p["open"][1])

    qa_dir = out / "qa" / "hf"
    qa_dir.mkdir(parents=True, exist_ok=True)
    for name, rs in rows.items():
        (qa_dir / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rs), encoding="utf-8")
    (qa_dir / "all_qa.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                 for name in rows for r in rows[name]), encoding="utf-8")
    (out / "pairs").mkdir(exist_ok=True)
    (out / "pairs" / "pairs.json").write_text(json.dumps(pairs, indent=1) + "\n", encoding="utf-8")
    with open(out / "metadata.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(meta[0]))
        writer.writeheader()
        writer.writerows(meta)
    (out / "DATA_LAYOUT.md").write_text(
        "# VidPair-Halluc sample pack\n\nSynthetic stand-in for the release, same layout: `metadata.csv`, "
        "`pairs/pairs.json`, `qa/hf/*.jsonl`, `VidPair-Halluc/<id>/<file>.mp4`.\n"
        "Made by `tasks/vidpair_halluc/make_sample.py`.\n", encoding="utf-8")
    return {k: len(v) for k, v in rows.items()}


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "sample"
    counts = build(target)
    size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
    print(f"{target}: {counts}, {size} bytes")
