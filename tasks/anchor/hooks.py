"""ANCHOR's inference: the structured-CoT prompt, the answer driver (one
call, or Socratic mode for long clips) and the direct-grounding driver.

**Answer tasks** (``anchor``, ``anchor_refined``): the clip at 5 fps with its
audio and the annotated boxes drawn (the paper's full modality), and a
prompt asking for Visual Cue / Audio Cue (timeframe, description, analysis)
then ``Final Answer:`` (the structure of upstream's ``build_prompt``).

**Socratic mode** (upstream ``run_socratic_sequential``): a clip longer than
``dataset_kwargs.socratic_after`` seconds (default: the chunk length,
``media.chunks.seconds`` = 120 s; INFERRED, upstream's script defaults its
threshold to 20 s) is read in ``media.chunks`` (120 s at 0.5 fps,
512x384).  Turn k sends chunk k's frames (boxes drawn) and audio, the
question and turn k-1's notes, and asks for timestamped notes without a
final answer; a last turn sends the question and every turn's notes, no
media, and asks for the structured answer: its reply is the sample's
``response``.  Each turn is one ``ctx.ask`` step (``chunk1``, ``chunk2``,
..., ``synthesis``): journaled, logged in the trajectory, replayed on resume
and by ``avhb score``.  Lower the threshold with the chunk length, e.g.
``--media 'chunks={seconds: 4}'``.

**Direct grounding** (``anchor_grounding``; no upstream code: ours): the
prompt names the target label, gives the frames' size, and asks for JSON
``{"intervals": [[s, e], ...], "boxes": {"<t>": [x, y, w, h]}}`` with boxes
in shown-frame pixels keyed by the frames' times.  The driver returns the
frame size, the source size, the shown frame times and the gold box at each
shown time (``outputs``); :class:`GroundingReply` reads the reply and scales
its boxes to source pixels.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from avhb import (AudioPart, DriverResult, Filter, Message, SampleContext, SampleError, SampleRecord, ScoreContext,
                  TextPart, VideoPart, render_template)
from avhb.media import nearest_key

from .data import KEY_FPS

PROMPTS = Path(__file__).resolve().parent / "prompts"


@lru_cache(maxsize=None)
def prompt(name: str) -> str:
    return (PROMPTS / f"{name}.txt").read_text(encoding="utf-8").strip()


def doc_to_text(doc: dict[str, Any]) -> str:
    return render_template(prompt("inference"), {"question": doc["question"]})


def mmss(t: float) -> str:
    t = int(t)
    return f"{t // 60:02d}:{t % 60:02d}" if t < 3600 else f"{t // 3600}:{t // 60 % 60:02d}:{t % 60:02d}"


def _parts(request) -> tuple[VideoPart | None, AudioPart | None, TextPart | None]:
    parts = request.messages[-1].parts
    video = next((p for p in parts if isinstance(p, VideoPart)), None)
    audio = next((p for p in parts if isinstance(p, AudioPart)), None)
    text = next((p for p in reversed(parts) if isinstance(p, TextPart)), None)
    return video, audio, text


def clip_seconds(video: VideoPart) -> float:
    """The clip's length: its segment, else the whole video (probed;
    ``SampleError`` for a missing or unreadable file)."""
    if video.segment:
        return video.segment[1] - video.segment[0]
    from avhb.media import probe

    return probe(video.path).duration


def socratic_after(ctx: SampleContext) -> float:
    kwargs = ctx.run.task.cfg.get("dataset_kwargs") or {}
    if kwargs.get("socratic_after") is not None:
        return float(kwargs["socratic_after"])
    return ctx.media.chunks.seconds if ctx.media.chunks else math.inf


# ---------------------------------------------------------------- answer tasks


async def drive(ctx: SampleContext, doc: dict[str, Any]) -> DriverResult:
    """The answer tasks' driver (module docstring)."""
    request = ctx.request()
    video, audio, _ = _parts(request)
    if video is None or clip_seconds(video) <= socratic_after(ctx):
        return (await ctx.ask(request)).text
    return await socratic(ctx, doc, video, audio)


async def socratic(ctx: SampleContext, doc: dict[str, Any], video: VideoPart, audio: AudioPart | None):
    chunks = ctx.chunks(video)
    spec = ctx.media.chunks
    assert spec is not None  # ctx.chunks raised SampleError otherwise
    segments: list[tuple[float, float]] = []
    for c in chunks:
        assert c.segment is not None  # ctx.chunks gives every chunk its segment
        segments.append(c.segment)
    ctx.log("socratic", {"chunks": [list(s) for s in segments], "clip": list(video.segment or ())})
    notes: list[str] = []
    previous = ""
    for k, (chunk, segment) in enumerate(zip(chunks, segments), 1):
        span = f"{mmss(segment[0])}-{mmss(segment[1])}"
        text = render_template(prompt("socratic_notes"), {
            "part": k, "parts": len(chunks), "span": span, "fps": f"{spec.fps:g}", "width": spec.width,
            "height": spec.height, "question": doc["question"],
            "previous": f"\nYour notes on part {k - 1}:\n{previous}\n" if previous else ""})
        parts: list[Any] = [chunk]
        if audio is not None:
            parts.append(AudioPart(path=audio.path, segment=chunk.segment))
        call = await ctx.ask([Message("user", [*parts, TextPart(text)])], step=f"chunk{k}")
        previous = call.text.strip()
        notes.append(f"Part {k} ({span}):\n{previous}")
    final = render_template(prompt("socratic_synthesis"), {"parts": len(chunks), "notes": "\n\n".join(notes),
                                                  "question": doc["question"]})
    call = await ctx.ask([Message("user", [TextPart(final)])], step="synthesis")
    return call.text, {"socratic_turns": len(chunks) + 1}


# ---------------------------------------------------------------- grounding


def time_key(t: Any) -> str:
    """A frame time as the model sees it labelled ("Frame at 2.5s:"): at
    most two decimals, no trailing zeros; text that is not a number is kept."""
    try:
        value = float(str(t).strip().rstrip("sS"))
    except ValueError:
        return str(t)
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _frame_times(media: dict[str, Any] | None) -> list[float]:
    video = (media or {}).get("video")
    entries = video if isinstance(video, list) else [video] if video else []
    return [float(t) for e in entries if isinstance(e, dict) for t in e.get("timestamps") or []]


def gold_boxes_at(doc: dict[str, Any], times: list[float]) -> dict[str, list[float]]:
    """The target's gold box at each shown frame time inside the target's
    annotated span (first to last annotated key): the box of the nearest
    annotated key (10 Hz grid; the earlier on ties).  Source pixels."""
    boxes = doc.get("target_boxes") or {}
    if not boxes:
        return {}
    keys = sorted(int(k) for k in boxes)
    lo, hi = keys[0] / KEY_FPS, keys[-1] / KEY_FPS
    out = {}
    for t in times:
        if lo - 1e-6 <= t <= hi + 1e-6:
            out[time_key(t)] = list(boxes[str(nearest_key(keys, round(t * KEY_FPS)))])
    return out


async def drive_grounding(ctx: SampleContext, doc: dict[str, Any]) -> DriverResult:
    """``anchor_grounding``'s driver (module docstring)."""
    if not doc.get("target"):
        raise SampleError(f"sample {ctx.sample_id}: no grounding target (no annotated object matches the action)")
    from avhb.media import fit_size, probe

    request = ctx.request()
    video, _, text = _parts(request)
    if video is None or text is None:
        raise SampleError(f"sample {ctx.sample_id}: the grounding request has no video")
    info = probe(video.path)
    width, height = ctx.media.frame_size or fit_size(info.width, info.height, ctx.media.max_side, ctx.media.max_pixels)
    text.text = render_template(prompt("grounding"), {"target": doc["target"], "question": doc["question"],
                                             "width": width, "height": height})
    call = await ctx.ask(request)
    times = _frame_times(call.media)
    return call.text, {"frame_size": [width, height], "source_size": [info.width, info.height],
                       "frame_times": times, "gold_boxes": gold_boxes_at(doc, times)}


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` that has ``intervals`` or ``boxes``
    (code fences and prose around it are fine)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and ("intervals" in obj or "boxes" in obj):
            return obj
        start = text.find("{", start + 1)
    return None


def _scaled(box: Any, sx: float, sy: float) -> Any:
    if isinstance(box, (list, tuple)) and len(box) == 4 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in box):
        x, y, w, h = box
        return [x * sx, y * sy, w * sx, h * sy]
    return box  # left as is: the box metric counts it unreadable


class GroundingReply(Filter):
    """The grounding reply as ``{"intervals": [...], "boxes": {time key:
    [x, y, w, h] in source pixels}}``; None (flag ``meta["grounding_unparsed"]``)
    when it holds no such JSON object.  Box keys are normalised to the frame
    labels' form (``"2.50"`` -> ``"2.5"``); boxes are scaled by source size /
    shown size; malformed values are passed on for the metrics to count."""

    name = "anchor_grounding_reply"

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        if value is None:
            return None
        obj = first_json_object(str(value))
        if obj is None:
            record.meta["grounding_unparsed"] = "no JSON object with intervals or boxes"
            return None
        shown = record.outputs.get("frame_size") or [1, 1]
        source = record.outputs.get("source_size") or shown
        sx, sy = source[0] / shown[0], source[1] / shown[1]
        boxes = obj.get("boxes")
        if isinstance(boxes, dict):
            boxes = {time_key(k): _scaled(v, sx, sy) for k, v in boxes.items()}
        return {"intervals": obj.get("intervals"), "boxes": boxes}
