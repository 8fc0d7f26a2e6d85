"""From a sample to the request a backend receives.

``build_request`` makes the request with media *references* (paths and
segments) and is cheap: its hash is the journal key, so a resumed run knows a
sample is done without decoding anything.  ``materialize`` then decodes media
for what the backend can take, applies the ablation switches, and records
every change it makes in ``Request.adaptations`` (written to the sample log).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .backend import Capabilities
from .errors import SampleError, UserError
from .messages import AudioPart, ImagePart, Message, Request, TextPart, VideoPart
from .templates import lookup, render

ABLATIONS = ("no_audio", "no_video", "no_boxes", "audio_as_transcript", "text_only")


def parse_ablations(text: str | None) -> tuple[str, ...]:
    items = tuple(a.strip() for a in (text or "").split(",") if a.strip())
    for a in items:
        if a not in ABLATIONS:
            raise UserError(f"--ablate {a!r}: unknown switch (choose from {', '.join(ABLATIONS)})")
    return items


def _media_path(template: str, doc: dict[str, Any], root: Path) -> str:
    rel = render(template, doc)
    path = Path(rel)
    return str(path if path.is_absolute() else root / path)


def build_request(task, doc: dict[str, Any], root: Path, sample_id: str) -> Request:
    gen = task.generation
    media = task.cfg.get("media") or {}
    hook = task.cfg.get("doc_to_messages")
    if hook:
        messages = task.hook(hook["function"])(doc, {"root": root, "media": media})
    else:
        parts: list[Any] = []
        video_path = None
        segment = None
        segment_note = None
        if media.get("segment"):
            # as upstream (ANCHOR): clip only when both ends are numbers and end > start; otherwise the
            # whole video is used, and the sample log says why
            try:
                start, end = (lookup(doc, f) for f in media["segment"])
                if start is not None and end is not None and float(end) > float(start):
                    segment = (float(start), float(end))
                else:
                    segment_note = f"segment not used (start={start!r}, end={end!r}): whole video"
            except (SampleError, TypeError, ValueError) as exc:
                segment_note = f"segment not used ({exc}): whole video"
        if media.get("video"):
            video_path = _media_path(media["video"], doc, root)
            parts.append(VideoPart(path=video_path, segment=segment))
        if media.get("audio"):
            parts.append(AudioPart(path=_media_path(media["audio"], doc, root), segment=segment))
        elif media.get("audio_in_video") and video_path:
            parts.append(AudioPart(path=video_path, segment=segment))
        parts.append(TextPart(task.text(doc)))
        messages = []
        if task.cfg.get("system_prompt"):
            messages.append(Message("system", [TextPart(task.cfg.get("system_prompt"))]))
        messages.append(Message("user", parts))
    request = Request(messages=messages, generation=gen, choices=task.choices(doc))
    request.fields = {"task": task.name, "sample_id": sample_id}
    if not hook and segment_note:
        request.adaptations.append(segment_note)
    return request


def request_key(request: Request, backend_identity: dict[str, Any], repeat: int, ablations: tuple[str, ...],
                media: dict[str, Any] | None = None) -> str:
    def part(p: Any) -> Any:
        if isinstance(p, TextPart):
            return ["text", p.text]
        if isinstance(p, VideoPart):
            return ["video", p.path, p.segment]
        if isinstance(p, AudioPart):
            return ["audio", p.path, p.segment, p.transcript]
        if isinstance(p, ImagePart):
            return ["image", p.path, p.label]
        return [type(p).__name__]

    payload = {
        "backend": backend_identity,
        "messages": [[m.role, [part(p) for p in m.parts]] for m in request.messages],
        "generation": request.generation,
        "choices": request.choices,
        "repeat": repeat,
        "ablations": sorted(ablations),
        "media": media or {},
        "sample": request.fields.get("sample_id"),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def has_media(request: Request) -> bool:
    return any(not isinstance(p, TextPart) for m in request.messages for p in m.parts)


def prompt_text(request: Request) -> str:
    return "\n\n".join(f"[{m.role}] {m.text}" for m in request.messages)


def materialize(request: Request, media: dict[str, Any], caps: Capabilities, ablations: tuple[str, ...],
                doc: dict[str, Any], task_name: str) -> dict[str, Any]:
    """Decode media in place; returns the media log for the sample file.
    Raises SampleError for a bad file (the sample fails, the run goes on)."""
    from . import media as avmedia

    log: dict[str, Any] = {"video": None, "audio": None}
    drop_video = "no_video" in ablations or "text_only" in ablations
    drop_audio = "no_audio" in ablations or "text_only" in ablations
    for message in request.messages:
        kept = []
        for p in message.parts:
            if isinstance(p, (VideoPart, ImagePart)) and drop_video:
                request.adaptations.append(f"{p.type} removed (--ablate {'text_only' if 'text_only' in ablations else 'no_video'})")
                continue
            if isinstance(p, (VideoPart, ImagePart)) and not caps.sees_pixels:
                request.adaptations.append(f"{p.type} not sent: the backend sees no pixels")
                log["video"] = {"path": getattr(p, "path", None), "sent": False}
                continue
            if isinstance(p, AudioPart) and drop_audio:
                request.adaptations.append(f"audio removed (--ablate {'text_only' if 'text_only' in ablations else 'no_audio'})")
                continue
            if isinstance(p, VideoPart) and p.frames is None:
                spec = avmedia.MediaSpec.from_dict(media)
                frame_spec = spec.frame_spec(segment=p.segment)
                n = frame_spec.frames or frame_spec.max_frames
                if n:
                    text_tokens = sum(len(t.text) for m in request.messages for t in m.parts if isinstance(t, TextPart)) // 3
                    allowed = avmedia.check_budget(task_name, n, caps.tokens_per_frame, text_tokens, caps.max_context,
                                                   policy=spec.budget)
                    if allowed < n:
                        request.adaptations.append(f"frames clamped {n} -> {allowed} to fit {caps.max_context} tokens")
                        frame_spec = spec.frame_spec(segment=p.segment, frames=allowed)
                sample = avmedia.cached_sample_frames(p.path, frame_spec)
                frames = sample.frames
                if spec.boxes and "no_boxes" not in ablations:
                    boxes = doc.get(spec.boxes)
                    if boxes:
                        info = avmedia.probe(p.path)
                        frames = avmedia.draw_boxes(frames, sample.indices, boxes, source_size=(info.width, info.height),
                                                    source_fps=sample.source_fps)
                        request.adaptations.append("boxes drawn on frames")
                p.frames, p.timestamps, p.frame_indices, p.fps = frames, sample.timestamps, sample.indices, sample.source_fps
                log["video"] = {"path": p.path, "frame_indices": sample.indices,
                                "timestamps": [round(t, 3) for t in sample.timestamps], "decoder": sample.decoder}
            elif isinstance(p, AudioPart) and p.array is None and p.transcript is None:
                spec = avmedia.MediaSpec.from_dict(media)
                p.array = avmedia.cached_load_audio(p.path, rate=spec.audio_rate, segment=p.segment,
                                                    on_missing=spec.audio_missing)
                p.rate = spec.audio_rate
                log["audio"] = {"path": p.path, "seconds": round(len(p.array) / p.rate, 3), "rate": p.rate,
                                "segment": p.segment}
                if not caps.audio or "audio_as_transcript" in ablations:
                    _to_transcript(p, request)
            kept.append(p)
        message.parts = kept
    return log


def _to_transcript(part: AudioPart, request: Request) -> None:
    from .model_backends.asr import transcribe  # a missing faster-whisper is a UserError naming the pip command

    transcript = transcribe(part.array, rate=part.rate or 16000)
    part.transcript = transcript.text
    part.array = None
    request.adaptations.append(f"audio -> transcript ({transcript.model})")
