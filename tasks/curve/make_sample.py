"""Build the CURVE sample pack in ``sample/`` (upstream layout).

    python -m avhb.tasks.curve.make_sample [OUT_DIR]

Writes ``curve.json`` (10 questions in ta-IN, ko-KR, ar-EG, de-DE, in their
own scripts) and one short video per locale, ``videos/<id>.mp4``: 3.5 s,
160x120, 10 fps H.264, with the locale's speech (espeak-ng) muxed as AAC.
The pictures are simple coloured shapes whose colours, counts and timing
the questions ask about; the speech carries the cultural part (a festival
greeting, a dish, a sport, a custom).  Needs ``espeak-ng`` on PATH and PyAV.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from avhb.tasks.sample_media import canvas, circle, fit, rect, speech, write_video

W, H, FPS, SECONDS = 160, 120, 10, 3.5
OUT = Path(__file__).resolve().parent / "sample"

RED, GREEN, BLUE, YELLOW = (220, 30, 30), (30, 160, 60), (40, 70, 200), (240, 210, 40)
BROWN, ORANGE, WHITE, GREY = (120, 70, 30), (240, 140, 40), (245, 245, 245), (128, 128, 128)


def tamil(t: float) -> np.ndarray:  # red circle, then a green rectangle from 00:02
    img = canvas(W, H, YELLOW)
    if t < 1.7:
        circle(img, 80, 60, 30, RED)
    else:
        rect(img, 60, 20, 100, 100, GREEN)
    return img


def korean(t: float) -> np.ndarray:  # a white rectangle, then a yellow horizontal band
    img = canvas(W, H, BLUE)
    if t < 1.7:
        rect(img, 50, 20, 110, 100, WHITE)
    else:
        rect(img, 20, 52, 140, 68, YELLOW)
    return img


def arabic(t: float) -> np.ndarray:  # one brown circle, then three small ones
    img = canvas(W, H, ORANGE)
    if t < 1.7:
        circle(img, 80, 60, 35, BROWN)
    else:
        for cx in (40, 80, 120):
            circle(img, cx, 60, 12, BROWN)
    return img


def german(t: float) -> np.ndarray:  # a brown pole; from 00:02 a blue rectangle on top
    img = canvas(W, H, GREEN)
    rect(img, 74, 25, 86, 115, BROWN)
    if t >= 1.7:
        rect(img, 60, 5, 100, 25, BLUE)
    return img


@dataclass
class Video:
    youtube_id: str
    voice: str
    speech: str
    draw: Callable[[float], np.ndarray]


VIDEOS = {
    "ta-IN": Video("avhbTamil01", "ta", "பொங்கலோ பொங்கல்", tamil),
    "ko-KR": Video("avhbKorea01", "ko", "태권도 경기를 시작합니다", korean),
    "ar-EG": Video("avhbArabic1", "ar", "الكشري أكلة مصرية شعبية", arabic),
    "de-DE": Video("avhbGerman1", "de", "Heute stellen wir den Maibaum auf", german),
}


def _q(key, locale, question, answer, steps, links, skills, category, subcategory):
    return {"key": key, "video_id": f"https://www.youtube.com/watch?v={VIDEOS[locale].youtube_id}", "locale": locale,
            "question": question, "answer": answer, "reasoning_steps": "\n".join(steps), "external_links": links,
            "skills": skills + ", Visual Cultural Understanding", "category": category, "subcategory": subcategory}


QUESTIONS = [
    _q("ta-IN_0001", "ta-IN", "வீடியோவில் முதலில் தோன்றும் வட்டத்தின் நிறம் என்ன?", "சிவப்பு.",
       ["1. 00:00 இல் மஞ்சள் பின்னணியில் ஒரு வட்டம் தோன்றுகிறது.", "2. அந்த வட்டம் சிவப்பு நிறத்தில் உள்ளது.",
        "3. எனவே பதில் சிவப்பு."], [], "Temporal Ordering, Object Recognition", "Festivals", "Pongal"),
    _q("ta-IN_0002", "ta-IN", "பேச்சாளர் எந்தத் திருவிழாவின் வாழ்த்தைச் சொல்கிறார்?", "பொங்கல் திருநாள்.",
       ["1. 00:00–00:02 இல் பேச்சாளர் \"பொங்கலோ பொங்கல்\" என்று கூறுகிறார்.",
        "2. \"பொங்கலோ பொங்கல்\" என்பது தைப் பொங்கல் திருநாளின் பாரம்பரிய முழக்கம்.",
        "3. எனவே பதில் பொங்கல் திருநாள்."], ["https://ta.wikipedia.org/wiki/தைப்பொங்கல்"],
       "Audio Understanding, Cultural Knowledge", "Festivals", "Pongal"),
    _q("ta-IN_0003", "ta-IN", "பச்சை நிறச் செவ்வகம் எப்போது தோன்றுகிறது?", "சுமார் 00:02 இல், சிவப்பு வட்டம் மறைந்த பிறகு.",
       ["1. 00:00 முதல் சிவப்பு வட்டம் தெரிகிறது.", "2. 00:02 அளவில் வட்டம் மறைந்து பச்சைச் செவ்வகம் தோன்றுகிறது.",
        "3. எனவே செவ்வகம் சுமார் 00:02 இல், வட்டத்திற்குப் பிறகு தோன்றுகிறது."], [],
       "Temporal Event Localization, Temporal Ordering", "Festivals", "Pongal"),
    _q("ko-KR_0001", "ko-KR", "영상 후반부에 나타나는 띠의 색은 무엇입니까?", "노란색입니다.",
       ["1. 00:02에 화면이 바뀐다.", "2. 파란 배경 위에 가로로 된 노란 띠가 보인다.", "3. 따라서 답은 노란색이다."],
       [], "Temporal Event Localization, Object Recognition", "Sports", "Taekwondo"),
    _q("ko-KR_0002", "ko-KR", "화자가 시작을 알리는 경기의 종목은 무엇입니까?", "태권도입니다.",
       ["1. 00:00에 화자가 \"태권도 경기를 시작합니다\"라고 말한다.", "2. 따라서 종목은 태권도이다."],
       ["https://ko.wikipedia.org/wiki/태권도"], "Audio Understanding, Cultural Knowledge", "Sports", "Taekwondo"),
    _q("ar-EG_0001", "ar-EG", "كم عدد الدوائر الصغيرة التي تظهر في نهاية الفيديو؟", "ثلاث دوائر.",
       ["1. عند 00:02 يتغير المشهد.", "2. تظهر ثلاث دوائر بنية صغيرة على خلفية برتقالية.", "3. إذن الإجابة ثلاث دوائر."],
       [], "Counting, Temporal Event Localization", "Cuisine", "Koshari"),
    _q("ar-EG_0002", "ar-EG", "ما اسم الطبق الذي يذكره المتحدث؟", "الكشري.",
       ["1. عند 00:00 يقول المتحدث \"الكشري أكلة مصرية شعبية\".", "2. إذن الطبق المذكور هو الكشري."],
       ["https://ar.wikipedia.org/wiki/كشري"], "Audio Understanding, Cultural Knowledge", "Cuisine", "Koshari"),
    _q("de-DE_0001", "de-DE", "Welche Farbe hat die senkrechte Stange zu Beginn des Videos?", "Braun.",
       ["1. Bei 00:00 ist auf grünem Hintergrund eine senkrechte Stange zu sehen.", "2. Die Stange ist braun.",
        "3. Also ist die Antwort braun."], [], "Object Recognition, Spatial Perception", "Rituals", "Maibaum"),
    _q("de-DE_0002", "de-DE", "Welcher Brauch wird im Video angekündigt?", "Das Aufstellen des Maibaums.",
       ["1. Bei 00:00 sagt der Sprecher: „Heute stellen wir den Maibaum auf“.",
        "2. Das Maibaumaufstellen ist ein Brauch zum 1. Mai, besonders in Bayern.",
        "3. Also wird das Aufstellen des Maibaums angekündigt."], ["https://de.wikipedia.org/wiki/Maibaum"],
       "Audio Understanding, Cultural Knowledge", "Rituals", "Maibaum"),
    _q("de-DE_0003", "de-DE", "Was erscheint ab Sekunde 2 oben an der Stange?", "Ein blaues Rechteck.",
       ["1. Bei 00:02 ändert sich das Bild.", "2. Oben an der braunen Stange erscheint ein blaues Rechteck.",
        "3. Also erscheint ein blaues Rechteck."], [], "Temporal Event Localization, Spatial Perception",
       "Rituals", "Maibaum"),
]


def main(out: Path = OUT) -> None:
    (out / "videos").mkdir(parents=True, exist_ok=True)
    for video in VIDEOS.values():
        frames = [video.draw(i / FPS) for i in range(int(SECONDS * FPS))]
        audio = fit(speech(video.speech, video.voice, speed=150), SECONDS)
        write_video(out / "videos" / f"{video.youtube_id}.mp4", frames, FPS, audio)
    (out / "curve.json").write_text(json.dumps(QUESTIONS, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {len(QUESTIONS)} questions, {len(VIDEOS)} videos, {total / 1024:.0f} KiB")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
