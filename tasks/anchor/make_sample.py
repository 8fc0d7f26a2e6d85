"""Build the ANCHOR sample pack in ``sample/`` (upstream JSONL formats).

    python -m avhb.tasks.anchor.make_sample [OUT_DIR]

Writes four short videos (``videos/*.mp4``: 160x120, 10 fps H.264 with AAC
mono audio: espeak-ng speech and synthesised non-speech sounds — a bell
tone, drum hits, a beep) and three JSONL files:

* ``anchor.jsonl`` (the full set): format-A lines (annotation export with
  10 Hz boxes, actions with gold CoTs; one action with an empty question,
  one with end <= start) and a format-B line (``videoID`` + ``QAs``, no gold
  CoT); ``long_0004`` is a 10 s clip, longer than a lowered
  ``socratic_after`` (``--media 'chunks={seconds: 4}'``: three chunks);
* ``anchor_refined.jsonl``: two of those lines (the gold-set subset);
* ``anchor_grounding.jsonl``: grounding items (a target instance per action).

The questions need both sight and sound (what rings, how many hits, what is
said while something is shown).  Needs ``espeak-ng`` on PATH and PyAV.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from avhb.tasks.sample_media import RATE, canvas, circle, mix, rect, speech, tone, write_video

W, H, FPS = 160, 120, 10
KEY_FPS = 10
OUT = Path(__file__).resolve().parent / "sample"

YELLOW, RED, BLUE, WHITE = (240, 210, 40), (220, 30, 30), (40, 70, 200), (245, 245, 245)
GREEN, GREY, DARK, ORANGE = (30, 160, 60), (128, 128, 128), (20, 20, 30), (240, 140, 40)


# ---------------------------------------------------------------- pictures


def bell(t: float) -> np.ndarray:  # a red bell (circle) in the middle the whole time
    img = canvas(W, H, YELLOW)
    circle(img, 80, 60, 20, RED)
    return img


def drum_x(t: float) -> float:  # the drum (a blue square) slides from x=10 to x=110
    return 10 + min(t, 3.5) / 3.5 * 100


def drum(t: float) -> np.ndarray:
    img = canvas(W, H, WHITE)
    rect(img, drum_x(t), 40, drum_x(t) + 40, 80, BLUE)
    return img


def triangle(t: float) -> np.ndarray:  # a green triangle while the speaker talks
    img = canvas(W, H, ORANGE)
    for row in range(30, 90):
        half = (row - 30) * 0.6
        img[row, int(80 - half):int(80 + half) + 1] = GREEN
    return img


def long_clip(t: float) -> np.ndarray:  # sun 0-4 s, grey box 4-8 s (beep at 5 s), dark 8-10 s
    if t < 4:
        img = canvas(W, H, BLUE)
        circle(img, 80, 50, 25, YELLOW)
    elif t < 8:
        img = canvas(W, H, WHITE)
        rect(img, 50, 30, 110, 90, GREY)
    else:
        img = canvas(W, H, DARK)
    return img


# ---------------------------------------------------------------- sounds


def drum_hit(seconds: float = 0.15) -> np.ndarray:
    rng = np.random.default_rng(7)
    n = int(seconds * RATE)
    noise = rng.standard_normal(n).astype(np.float32)
    low = np.convolve(noise, np.ones(24) / 24, mode="same")  # a dull thud, not a hiss
    return (0.6 * low / np.abs(low).max() * np.exp(-np.arange(n) / (0.04 * RATE))).astype(np.float32)


# ---------------------------------------------------------------- videos


@dataclass
class Video:
    name: str
    seconds: float
    draw: Callable[[float], np.ndarray]
    sounds: Callable[[], list[tuple[float, np.ndarray]]]
    boxes: Callable[[float], list[dict]] = field(default=lambda t: [])


def _box(label, color, instance, x, y, w, h):
    return {"highlight": False, "instance": instance, "score": 0.9, "labelId": label, "color": color,
            "x": float(x), "y": float(y), "width": float(w), "height": float(h)}


VIDEOS = {
    "bell": Video("bell_0001.mp4", 3.5, bell,
                  lambda: [(1.0, tone(880, 0.6, decay=6.0)), (1.9, speech("ring the bell"))],
                  lambda t: [_box("bell", "#FF6B6B", 0, 60, 40, 40, 40)]),
    "drum": Video("drum_0002.mp4", 3.5, drum,
                  lambda: [(0.5, drum_hit()), (1.5, drum_hit()), (2.5, drum_hit())],
                  lambda t: [_box("drum", "#3355FF", 0, round(drum_x(t), 1), 40, 40, 40)]),
    "triangle": Video("speech_0003.mp4", 3.5, triangle, lambda: [(0.3, speech("the cat is asleep"))]),
    "long": Video("long_0004.mp4", 10.0, long_clip,
                  lambda: [(0.4, speech("first the sun")), (5.0, tone(1000, 0.3)), (8.3, speech("then the night"))],
                  lambda t: [_box("sun", "#FFD700", 0, 55, 25, 50, 50)] if t < 4 else []),
}


def object_map(video: Video) -> dict[str, list[dict]]:
    """Boxes on the 10 Hz grid: key k = time k / 10 s."""
    out = {}
    for k in range(int(video.seconds * KEY_FPS)):
        boxes = video.boxes(k / KEY_FPS)
        if boxes:
            out[str(k)] = boxes
    return out


# ---------------------------------------------------------------- annotations


def cot(visual: tuple[str, str, str], audio: tuple[str, str, str], answer: str) -> str:
    """A gold CoT in the release's shape (Visual Cue / Audio Cue / Final Answer)."""
    (vt, vd, va), (at, ad, aa) = visual, audio
    return (f"1. **Visual Cue:**\n   - **Timeframe:** {vt}\n   - **Description:** {vd}\n   - **Analysis:** {va}\n"
            f"2. **Audio Cue:**\n   - **Timeframe:** {at}\n   - **Description:** {ad}\n   - **Analysis:** {aa}\n\n"
            f"**Final Answer:**\n- {answer}")


def action(start, end, question, answer, analysis, obj=0, **extra):
    return {"start": start, "end": end, "action": 0, "object": obj, "color": "#FF0000",
            "description": f"{question} {answer}".strip(), "question": question, "answer": answer,
            "gemini_analysis": analysis, **extra}


def line_a(video: Video, actions: list[dict]) -> dict:
    """A format-A line (annotation-tool export, version 2.0.0)."""
    boxes = object_map(video)
    return {"version": "2.0.0", "annotation": {
        "video": {"src": f"/data/anchor/{video.name}", "fps": "fps", "frames": 0, "duration": 0, "height": 0, "width": 0},
        "keyframeList": sorted(int(k) for k in boxes), "objectAnnotationListMap": boxes,
        "regionAnnotationListMap": {k: [] for k in boxes}, "skeletonAnnotationListMap": {k: [] for k in boxes},
        "actionAnnotationList": actions}}


BELL_RINGS = action(0, 3.5, "What object makes the ringing sound, and when is it heard?",
                    "The red bell, at about one second.",
                    cot(("00:00-00:03", "A red round bell sits in the middle of a yellow background.",
                         "The bell is the only object that could ring."),
                        ("00:01-00:02", "A single clear ringing tone, then a voice says \"ring the bell\".",
                         "The ring comes at about one second and fits a bell."),
                        "The red bell rings, at about 00:01."), difficulty="Easy")
BELL_EMPTY = action(0, 3.5, "", "", "")
BELL_SPEAKER = action(1.5, 1.0, "What does the speaker ask for?", "To ring the bell.",
                      cot(("00:00-00:03", "The red bell is shown throughout.", "The request is about this bell."),
                          ("00:01-00:03", "Speech: \"ring the bell\".", "The speaker asks for the bell to be rung."),
                          "To ring the bell."), difficulty="Easy")
DRUM_HITS = action(0, 3.5, "How many times is the blue drum hit while it slides across?", "Three times.",
                   cot(("00:00-00:03", "A blue square drum slides from left to right.",
                        "It moves steadily; nothing else is on screen."),
                       ("00:00-00:03", "Three dull drum thuds, at about 0.5, 1.5 and 2.5 seconds.",
                        "Each thud is one hit, so there are three."),
                       "Three times."), difficulty="Difficult")
LONG_AFTER_BEEP = action(0, 10, "What happens right after the beep?",
                         "The screen goes dark and the speaker says \"then the night\".",
                         cot(("00:04-00:09", "A grey box on white from 00:04, then a dark screen from 00:08.",
                              "The picture turns dark after the box."),
                             ("00:05-00:09", "A short beep at 00:05, later the voice says \"then the night\".",
                              "After the beep the speaker announces the night."),
                             "It goes dark and the speaker says \"then the night\"."), difficulty="Difficult")
SUN_GROUNDING = action(0, 10, "Where is the sun while the speaker introduces it?", "At the top centre, first.",
                       cot(("00:00-00:03", "A yellow sun above the centre on a blue sky.", "It is the first thing."),
                           ("00:00-00:01", "Speech: \"first the sun\".", "The speaker introduces it."),
                           "At the top centre, at the start."))
TRIANGLE_QAS = {"videoID": "/data/anchor/speech_0003", "QAs": [
    {"question": "Which animal does the speaker mention?", "answer": "A cat.", "start": 0.0, "end": 3.5},
    {"question": "What shape is on screen while the speaker talks?", "answer": "A green triangle."},
]}


def lines() -> dict[str, list[dict]]:
    v = VIDEOS
    bell_line = line_a(v["bell"], [BELL_RINGS, BELL_EMPTY, BELL_SPEAKER])
    drum_line = line_a(v["drum"], [DRUM_HITS])
    long_line = line_a(v["long"], [LONG_AFTER_BEEP])
    return {
        "anchor.jsonl": [bell_line, drum_line, TRIANGLE_QAS, long_line],
        "anchor_refined.jsonl": [bell_line, drum_line],
        "anchor_grounding.jsonl": [line_a(v["bell"], [BELL_RINGS]), drum_line, line_a(v["long"], [SUN_GROUNDING])],
    }


def main(out: Path = OUT) -> None:
    (out / "videos").mkdir(parents=True, exist_ok=True)
    for video in VIDEOS.values():
        frames = [video.draw(i / FPS) for i in range(int(round(video.seconds * FPS)))]
        write_video(out / "videos" / video.name, frames, FPS, mix(video.sounds(), video.seconds), crf=32)
    for name, rows in lines().items():
        (out / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {len(VIDEOS)} videos, {total / 1024:.0f} KiB")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
