"""Build the HAVE-Bench sample pack in ``sample/`` (avhb's item schema).

    python -m avhb.tasks.have.make_sample [OUT_DIR]

Writes ``items.jsonl`` and its assets: PIL images (text, a chart, shapes;
PNG), street views for navigation (JPEG, the ``images/pano/<id>_<heading>.jpg``
layout), espeak-ng speech (spoken instructions, a talk, rules), tones (beeps,
a ringing phone, a melody at two tempi and two loudness levels) and one clip
with two overlapping sources; audio is 16 kHz mono MP3 (32 kbit/s), which
keeps the pack under 1 MB.  Two items per static subtask (MCQ and open, one
with audio options, one "human" voice item spoken by another espeak voice as
a stand-in), and one task graph per interaction scenario: navigation (a map
and spoken directions, then street views), a rule puzzle with a trap edge
(solving before learning the rule is a fail node), and music reproduction
with two parameters (tempo, loudness).  Needs ``espeak-ng`` and ``ffmpeg``.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from avhb.tasks.sample_media import RATE, font, mix, picture, silence, speech, tone
OUT = Path(__file__).resolve().parent / "sample"
W, H = 192, 144
TTS, HUMAN = "en-us", "en-gb-x-rp"  # "human" items: another espeak voice standing in for a recorded speaker

WHITE, BLACK, GREY = (250, 250, 250), (20, 20, 20), (150, 150, 150)
RED, GREEN, BLUE, YELLOW, BROWN = (210, 40, 40), (40, 150, 60), (40, 80, 200), (235, 200, 40), (130, 85, 45)


# ---------------------------------------------------------------- images

def _text(draw, xy, text, size=14, fill=BLACK, anchor="la"):
    draw.text(xy, text, fill=fill, font=font(size), anchor=anchor)


def _save_png(img, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    img.quantize(colors=16).save(path, optimize=True)


def _save_jpg(img, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, quality=70, optimize=True)


def sign(text: str):
    img, d = picture((W, H), (180, 220, 250))
    d.rectangle([40, 30, 152, 90], fill=BROWN, outline=BLACK, width=2)
    d.rectangle([92, 90, 100, 140], fill=BROWN)
    _text(d, (96, 60), text, 26, WHITE, "mm")
    return img


def shapes():
    img, d = picture((W, H), WHITE)
    d.ellipse([12, 50, 56, 94], fill=RED)
    d.rectangle([74, 50, 118, 94], fill=BLUE)
    d.polygon([(158, 48), (136, 94), (180, 94)], fill=GREEN)
    return img


def board(lines: list[str], bg=(30, 70, 40), fg=WHITE, size=18):
    img, d = picture((W, H), bg)
    step = H // (len(lines) + 1)
    for i, line in enumerate(lines, 1):
        _text(d, (W // 2, i * step), line, size, fg, "mm")
    return img


def dot_panels(counts: list[int]):
    img, d = picture((W, H), WHITE)
    for i, n in enumerate(counts):
        x0 = i * (W // len(counts))
        d.rectangle([x0 + 2, 20, x0 + W // len(counts) - 3, 130], outline=BLACK, width=1)
        _text(d, (x0 + W // (2 * len(counts)), 10), "ABCD"[i], 12, BLACK, "mm")
        for k in range(n):
            cy = 35 + k * 25
            d.ellipse([x0 + 16, cy, x0 + 30, cy + 14], fill=BLACK)
    return img


def dots(n: int):
    img, d = picture((W, H), WHITE)
    for k in range(n):
        x = 50 + k * 60
        d.ellipse([x, 50, x + 36, 86], fill=RED)
    return img


def labelled(objects: list[tuple[str, tuple[int, int, int]]]):
    img, d = picture((W, H), (235, 235, 225))
    for i, (name, color) in enumerate(objects):
        x0 = 8 + i * 62
        d.rectangle([x0, 50, x0 + 54, 100], fill=color, outline=BLACK)
        _text(d, (x0 + 27, 115), name, 12, BLACK, "mm")
    return img


def bar_chart(values: list[int], labels: list[str], title: str, show_values: bool = True):
    img, d = picture((W, H), WHITE)
    _text(d, (W // 2, 10), title, 12, BLACK, "mm")
    top = max(values)
    width = (W - 30) // len(values)
    for i, (v, lab) in enumerate(zip(values, labels)):
        x0 = 20 + i * width
        y0 = 125 - int(95 * v / top)
        d.rectangle([x0 + 4, y0, x0 + width - 6, 125], fill=BLUE)
        _text(d, (x0 + width // 2 - 1, 134), lab, 11, BLACK, "mm")
        if show_values:
            _text(d, (x0 + width // 2 - 1, y0 - 8), str(v), 11, BLACK, "mm")
    d.line([18, 125, W - 8, 125], fill=BLACK)
    return img


def planets():
    img, d = picture((W, H), (10, 10, 40))
    d.ellipse([-30, 42, 30, 102], fill=YELLOW)
    _text(d, (6, 125), "Sun", 11, WHITE, "mm")
    for i, (name, r) in enumerate([("Mercury", 5), ("Venus", 8), ("Earth", 9)]):
        x = 60 + i * 45
        d.ellipse([x - r, 72 - r, x + r, 72 + r], fill=(170, 170, 210))
        _text(d, (x, 100), name, 10, WHITE, "mm")
    return img


def circuit():
    img, d = picture((W, H), WHITE)
    d.rectangle([30, 30, 162, 110], outline=BLACK, width=2)
    d.rectangle([20, 55, 40, 85], fill=WHITE, outline=BLACK, width=2)
    _text(d, (30, 70), "9V", 11, BLACK, "mm")
    d.rectangle([80, 22, 112, 38], fill=WHITE, outline=BLACK, width=2)
    _text(d, (96, 50), "R = 3 ohm", 11, BLACK, "mm")
    return img


def slide(lines: list[tuple[str, tuple[int, int, int]]]):
    img, d = picture((W, H), WHITE)
    _text(d, (W // 2, 14), "Project timeline", 14, BLACK, "mm")
    for i, (line, color) in enumerate(lines):
        _text(d, (20, 40 + i * 28), line, 14, color)
    return img


def grid_map():
    img, d = picture((W, H), (225, 225, 215))
    d.rectangle([86, 20, 106, 144], fill=GREY)  # the street north
    d.rectangle([86, 20, 192, 40], fill=GREY)  # the street east at the crossing
    _text(d, (96, 132), "S", 14, BLACK, "mm")
    d.line([96, 124, 96, 30, 170, 30], fill=RED, width=3)
    d.rectangle([172, 22, 186, 38], fill=RED)
    _text(d, (150, 56), "red door", 11, BLACK, "mm")
    _text(d, (40, 10), "N ^", 11, BLACK, "mm")
    return img


def street_view(caption: str, door: bool = False, wall: bool = False, crossing: bool = False):
    img, d = picture((192, 96), (170, 200, 235))
    d.polygon([(70, 96), (122, 96), (100, 48), (92, 48)], fill=GREY)  # the road ahead
    d.rectangle([0, 40, 60, 96], fill=(200, 190, 170))
    d.rectangle([132, 40, 192, 96], fill=(200, 190, 170))
    if crossing:
        d.rectangle([60, 44, 132, 52], fill=GREY)
    if door:
        d.rectangle([150, 58, 172, 96], fill=RED)
    if wall:
        d.rectangle([0, 20, 192, 96], fill=(120, 110, 100))
    _text(d, (96, 10), caption, 11, BLACK, "mm")
    return img


def puzzle_screen(lines: list[str], circles: int = 0):
    img, d = picture((W, H), (245, 240, 220))
    for i, line in enumerate(lines):
        _text(d, (W // 2, 18 + i * 22), line, 13, BLACK, "mm")
    for k in range(circles):
        x = 40 + k * 45
        d.ellipse([x, 90, x + 30, 120], outline=BLACK, width=3)
    return img


# ---------------------------------------------------------------- audio

def say(text: str, voice: str = TTS, speed: int = 165) -> np.ndarray:
    """The pack's narrator: espeak-ng's ``voice`` at ``speed`` words a minute."""
    return speech(text, voice, speed)


def beeps(n: int) -> np.ndarray:
    beep = np.concatenate([tone(880, 0.15, fade=0.01), silence(0.2)])
    return np.concatenate([beep] * n + [silence(0.2)])


def ringing() -> np.ndarray:
    ring = np.concatenate([tone(1200 if k % 2 == 0 else 1000, 0.08, 0.3, fade=0.01) for k in range(8)])
    return np.concatenate([ring, silence(0.3), ring, silence(0.3)])


MELODY = (523.25, 659.25, 783.99, 659.25, 523.25)  # C5 E5 G5 E5 C5


def melody(tempo: str, loudness: str) -> np.ndarray:
    beat = {"slow": 0.32, "fast": 0.16}[tempo]
    amp = {"soft": 0.12, "loud": 0.6}[loudness]
    return np.concatenate([np.concatenate([tone(f, beat * 0.9, amp, fade=0.01), silence(beat * 0.1)]) for f in MELODY])


def write_mp3(wave: np.ndarray, path: Path) -> None:
    import soundfile as sf

    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "a.wav"
        sf.write(str(raw), wave, RATE, subtype="PCM_16")
        subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", str(raw), "-ac", "1", "-ar", str(RATE),
                        "-codec:a", "libmp3lame", "-b:a", "32k", "-map_metadata", "-1", "-fflags", "+bitexact",
                        "-flags:a", "+bitexact", str(path)], check=True)


# ---------------------------------------------------------------- items

def static_items(out: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []

    def add(item_id: str, subtask: str, level: str, role: str, image, audio: np.ndarray | None, *,
            answer: str, answer_type: str, instruction: str = "", question: str = "", options=None,
            options_audio=None, voice: str = "tts", speaker: str | None = None) -> None:
        _save_png(image, out / "images" / f"{item_id}.png")
        item: dict[str, Any] = {"id": item_id, "subtask": subtask, "level": level, "role": role,
                                "images": [f"images/{item_id}.png"]}
        if audio is not None:
            write_mp3(audio, out / "audio" / f"{item_id}.mp3")
            item["audio"] = f"audio/{item_id}.mp3"
        item.update(instruction_text=instruction, question=question)
        if options is not None:
            item["options"] = options
        if options_audio is not None:
            paths = []
            for letter, wave in zip("ABCD", options_audio):
                write_mp3(wave, out / "audio" / f"{item_id}_{letter}.mp3")
                paths.append(f"audio/{item_id}_{letter}.mp3")
            item["options_audio"] = paths
        item.update(answer=answer, answer_type=answer_type, voice=voice)
        if speaker:
            item["speaker"] = speaker
        items.append(item)

    def said(text: str, voice: str = TTS) -> tuple[np.ndarray, str]:
        return say(text, voice), text

    wave, text = said("Which animal is named on the sign?")
    add("rec_0001", "instructed_recognition", "perception", "AaI", sign("OWL"), wave, instruction=text,
        options=["cat", "owl", "fox", "dog"], answer="B", answer_type="mcq")
    wave, text = said("What colour is the triangle?", HUMAN)
    add("rec_0002", "instructed_recognition", "perception", "AaI", shapes(), wave, instruction=text,
        options=["red", "blue", "green", "yellow"], answer="C", answer_type="mcq", voice="human", speaker="stand-in-1")

    wave, text = said("How much does the tea cost?")
    add("txt_0001", "text_rich_qa", "perception", "AaI", board(["MENU", "Coffee  $2.50", "Tea  $1.80", "Cake  $3.20"],
                                                              (250, 245, 230), BLACK, 15),
        wave, instruction=text, options=["$2.50", "$1.80", "$3.20", "$4.00"], answer="B", answer_type="mcq")
    wave, text = said("What is the title of the poster?")
    add("txt_0002", "text_rich_qa", "perception", "AaI", board(["SUMMER FAIR", "July 14", "City Park"], (40, 60, 140)),
        wave, instruction=text, answer="SUMMER FAIR", answer_type="open")

    add("cmm_0001", "cross_modal_matching", "perception", "AaC", dot_panels([1, 2, 3, 4]), beeps(3),
        question="Which panel shows as many dots as the beeps you hear?",
        options=["panel A", "panel B", "panel C", "panel D"], answer="C", answer_type="mcq")
    add("cmm_0002", "cross_modal_matching", "perception", "AaC", dots(2), None,
        question="Which audio option has as many beeps as there are dots in the image?",
        options_audio=[beeps(1), beeps(2), beeps(3), beeps(4)], answer="B", answer_type="mcq")

    add("agv_0001", "audio_grounded_vqa", "perception", "AaC",
        labelled([("DOG", BROWN), ("CAR", BLUE), ("TREE", GREEN)]), say("woof, woof, woof", speed=120),
        question="Which object in the picture is making the sound, and where is it?",
        answer="the dog, on the left", answer_type="open")
    add("agv_0002", "audio_grounded_vqa", "perception", "AaC",
        labelled([("RADIO", YELLOW), ("LAMP", GREY), ("PHONE", RED)]),
        mix([(0, say("Good evening, here is the news.")), (0.4, ringing())]),
        question="Two sounds overlap in the audio. Which object in the picture makes the ringing, and where is it?",
        answer="the phone, on the right", answer_type="open")

    wave, text = said("What is the sum of the two numbers on the board?")
    add("math_0001", "math", "reasoning", "AaI", board(["12 + 7"], size=30), wave, instruction=text,
        answer="19", answer_type="open")
    wave, text = said("How much taller is the tallest bar than the shortest bar?")
    add("math_0002", "math", "reasoning", "AaI", bar_chart([3, 5, 2], ["A", "B", "C"], "Values"), wave,
        instruction=text, options=["1", "2", "3", "4"], answer="C", answer_type="mcq")

    wave, text = said("Which planet in the diagram is closest to the Sun?")
    add("mdr_0001", "multidisciplinary_reasoning", "reasoning", "AaI", planets(), wave, instruction=text,
        options=["Earth", "Venus", "Mercury", "Mars"], answer="C", answer_type="mcq")
    wave, text = said("Using Ohm's law, what current flows through the resistor, in amperes?", HUMAN)
    add("mdr_0002", "multidisciplinary_reasoning", "reasoning", "AaI", circuit(), wave, instruction=text,
        answer="3", answer_type="open", voice="human", speaker="stand-in-1")

    add("dis_0001", "discourse_reasoning", "reasoning", "AaC",
        bar_chart([2, 4, 7, 5], ["Q1", "Q2", "Q3", "Q4"], "Sales", show_values=False),
        say("Good morning. This chart shows our sales last year. Winter made the first quarter slow. "
               "We launched the new product in the quarter with the highest sales."),
        question="In which quarter did the company launch its new product?",
        options=["Q1", "Q2", "Q3", "Q4"], answer="C", answer_type="mcq")
    add("dis_0002", "discourse_reasoning", "reasoning", "AaC",
        slide([("Design   done", GREEN), ("Build    delayed", RED), ("Testing  next", BLACK)]),
        say("The design phase ended on time. The build phase slipped, because the supplier shipped "
               "the parts three weeks late."),
        question="According to the talk, why is the phase shown in red on the slide delayed?",
        answer="the supplier shipped the parts late", answer_type="open")
    return items


def navigation_item(out: Path) -> dict[str, Any]:
    _save_png(grid_map(), out / "images" / "nav_0001_map.png")
    write_mp3(say("Walk forward to the crossing, then turn right. The destination is the red door."),
              out / "audio" / "nav_0001_directions.mp3")
    _save_jpg(street_view("start: street ahead", crossing=True), out / "images" / "nav_0001_start.jpg")
    _save_jpg(street_view("crossing, facing north", crossing=True), out / "images" / "pano" / "pano_b_0.jpg")
    _save_jpg(street_view("facing east", door=True), out / "images" / "pano" / "pano_b_90.jpg")
    _save_jpg(street_view("facing west", wall=True), out / "images" / "pano" / "pano_b_270.jpg")
    return {
        "id": "nav_0001", "subtask": "navigation", "level": "interaction", "role": "AaI",
        "start": "n0", "goal": "n2",
        "intro": {"text": "You are walking through a town. First study the map and listen to the directions; they "
                          "are shown only now. At each step you see the street in front of you: reply with one "
                          "action, turn left, turn right or move forward.",
                  "images": ["images/nav_0001_map.png"], "audio": "audio/nav_0001_directions.mp3",
                  "audio_role": "instruction"},
        "nodes": [
            {"id": "n0", "images": ["images/nav_0001_start.jpg"], "text": "Your view now.",
             "description": "the start of the street; a crossing is ahead"},
            {"id": "n1", "panorama_id": "pano_b", "lat": 48.8584, "lng": 2.2945, "heading": 0, "text": "Your view now.",
             "description": "at the crossing, facing north"},
            {"id": "n2", "panorama_id": "pano_b", "lat": 48.8584, "lng": 2.2945, "heading": 90,
             "text": "Your view now.", "description": "facing east: the red door"},
            {"id": "n3", "panorama_id": "pano_b", "lat": 48.8584, "lng": 2.2945, "heading": 270,
             "text": "Your view now.", "description": "facing west: a wall"},
        ],
        "edges": [
            {"from": "n0", "to": "n1", "criterion": "The agent moves forward (walks straight ahead)."},
            {"from": "n1", "to": "n2", "criterion": "The agent turns right."},
            {"from": "n1", "to": "n3", "criterion": "The agent turns left."},
            {"from": "n3", "to": "n1", "criterion": "The agent turns right or turns around to face north again."},
        ],
    }


def puzzle_item(out: Path) -> dict[str, Any]:
    _save_png(puzzle_screen(["MENU", "1: learn the rule", "2: solve the puzzle"]), out / "images" / "puz_0001_menu.png")
    _save_png(puzzle_screen(["RULE", "listen carefully"]), out / "images" / "puz_0001_learn.png")
    _save_png(puzzle_screen(["PUZZLE", "enter the code"], circles=3), out / "images" / "puz_0001_solve.png")
    write_mp3(say("Welcome. Say learn to hear the rule, or say solve to try the puzzle."),
              out / "audio" / "puz_0001_menu.mp3")
    write_mp3(say("The rule: the code is the number of circles, multiplied by two."),
              out / "audio" / "puz_0001_rule.mp3")
    return {
        "id": "puz_0001", "subtask": "puzzle", "level": "interaction", "role": "AaI",
        "start": "menu", "goal": "solved",
        "intro": {"text": "You are playing a rule puzzle. At each screen, say what you do."},
        "nodes": [
            {"id": "menu", "stage": "menu", "images": ["images/puz_0001_menu.png"], "audio": "audio/puz_0001_menu.mp3",
             "audio_role": "instruction", "text": "Main menu.", "description": "menu: learn the rule, or solve"},
            {"id": "learn", "stage": "learn", "images": ["images/puz_0001_learn.png"],
             "audio": "audio/puz_0001_rule.mp3", "audio_role": "instruction",
             "text": "Say continue when you are ready.", "description": "the rule: code = circles x 2"},
            {"id": "solve", "stage": "solve", "images": ["images/puz_0001_solve.png"],
             "text": "Enter the code.", "description": "three circles; the code is 6"},
            {"id": "solved", "text": "Solved!", "description": "the puzzle is solved"},
            {"id": "trap", "stage": "solve", "terminal": "fail", "text": "You tried to solve without the rule.",
             "description": "the agent skipped the rule: game over"},
        ],
        "edges": [
            {"from": "menu", "to": "learn", "criterion": "The agent chooses to learn the rule."},
            {"from": "menu", "to": "trap", "criterion": "The agent chooses to solve the puzzle now."},
            {"from": "learn", "to": "solve", "criterion": "The agent says it is ready to continue."},
            {"from": "solve", "to": "solved", "criterion": "The agent enters the code 6."},
        ],
    }


def music_item(out: Path) -> dict[str, Any]:
    write_mp3(melody("fast", "loud"), out / "audio" / "mus_0001_target.mp3")
    states = {f"{t}_{l}": {"tempo": t, "loudness": l} for t in ("slow", "fast") for l in ("soft", "loud")}
    for name, state in states.items():
        write_mp3(melody(state["tempo"], state["loudness"]), out / "audio" / f"mus_0001_{name}.mp3")
    nodes = [{"id": name, "audio": f"audio/mus_0001_{name}.mp3", "audio_role": "context", "state": state,
              "text": "This is the current version.", "description": f"tempo {state['tempo']}, {state['loudness']}"}
             for name, state in states.items()]
    change = {"tempo": ("slow", "fast"), "loudness": ("soft", "loud")}
    words = {"fast": "a faster tempo", "slow": "a slower tempo", "loud": "louder playing", "soft": "softer playing"}
    edges = []
    for name, state in states.items():
        for key, pair in change.items():
            other = pair[1 - pair.index(state[key])]
            to = dict(state, **{key: other})
            edges.append({"from": name, "to": f"{to['tempo']}_{to['loudness']}",
                          "criterion": f"The agent asks for {words[other]}."})
    return {
        "id": "mus_0001", "subtask": "music_reproduction", "level": "interaction", "role": "AaC",
        "start": "slow_soft", "goal": "fast_loud",
        "intro": {"text": "Listen to the reference tune; you hear it only now. At each step you hear the current "
                          "version. Change one setting per reply (tempo: slow or fast; loudness: soft or loud) "
                          "until it sounds like the reference.",
                  "audio": "audio/mus_0001_target.mp3", "audio_role": "context"},
        "nodes": nodes,
        "edges": edges,
    }


def build(out: Path = OUT) -> list[dict[str, Any]]:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    items = static_items(out) + [navigation_item(out), puzzle_item(out), music_item(out)]
    with open(out / "items.jsonl", "w", encoding="utf-8") as fh:
        for item in items:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
    return items


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    build(target)
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    print(f"wrote {target} ({size / 1024:.0f} KiB)")
