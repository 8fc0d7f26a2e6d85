"""From a request's media references to what a backend receives.

``materialize(request, plan, caps)`` runs inside the model call (after the
journal said the call is not done yet) on the caller's private copy of the
request, in this order:

1. **ablations** (``--ablate``): ``no_video`` / ``no_audio`` / ``text_only``
   remove the parts they name; ``no_boxes`` draws no boxes;
   ``audio_as_transcript`` turns audio into its transcript;
2. **capability adaptation**: video and images a backend cannot see are not
   sent; audio it cannot hear becomes a transcript (the registered
   transcriber named by ``media.transcriber``); a conversation it cannot
   hold as turns is flattened into one message;
3. **budget**: text (characters / 3) + video frames x ``tokens_per_frame`` +
   images x ``tokens_per_frame`` must fit ``max_context``.  Video frames are
   clamped (``budget: clamp``) or the sample fails (``budget: refuse``);
   images are never dropped (they may be numbered context units): images
   alone over budget, or more images than the backend takes per request,
   fail the sample;
4. **decoding**: frames through the media cache (boxes drawn when the part
   carries them), audio at ``audio_rate`` (a video's own track that ends
   well before its picture is an adaptation line:
   :func:`avhb.media.probe.short_audio`), images resized to ``max_side`` /
   ``max_pixels``.

Every change is appended to ``request.adaptations`` (the sample log); the
returned media log says what was sent.  A bad file or an over-budget
request raises ``SampleError``: that sample fails, the run goes on.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable

from avhb.errors import SampleError
from avhb.media.spec import MediaSpec
from avhb.model.backend import Capabilities
from avhb.model.messages import AudioPart, ImagePart, Message, Request, TextPart, VideoPart

ABLATIONS = ("no_audio", "no_video", "no_boxes", "audio_as_transcript", "text_only")


@dataclass(frozen=True)
class MediaPlan:
    """How one task's requests are materialised: its media settings (YAML
    merged with ``--media``), the run's ablations, and the task's name for
    messages."""

    spec: MediaSpec
    ablations: tuple[str, ...] = ()
    task: str = ""
    language: str | None = None  # speech language for transcripts, when the task knows it

    def key(self) -> dict[str, Any]:
        """What the plan contributes to a request key (computed once)."""
        return self._key

    @cached_property
    def _key(self) -> dict[str, Any]:
        import hashlib
        import json

        settings = json.dumps({"media": self.spec.to_key(), "ablations": sorted(self.ablations)}, sort_keys=True)
        return {"media": hashlib.sha256(settings.encode()).hexdigest()[:32]}


def materialize(request: Request, plan: MediaPlan, caps: Capabilities,
                transcriber: Callable[..., Any] | None = None) -> dict[str, Any]:
    """Decode media in place (module docstring); returns the media log."""
    log: dict[str, Any] = {"video": None, "audio": None}
    _adapt_parts(request, plan, caps, log)
    if not caps.multi_turn:
        _flatten(request)
    _budget(request, plan, caps)
    for message in request.messages:
        for part in message.parts:
            if isinstance(part, VideoPart) and part.frames is None:
                _decode_video(part, plan, caps, request, log)
            elif isinstance(part, AudioPart) and part.array is None and part.transcript is None:
                _decode_audio(part, plan, caps, request, log, transcriber)
            elif isinstance(part, ImagePart):
                _decode_image(part, plan.spec, log)
    return log


def has_media(request: Request) -> bool:
    return any(not isinstance(p, TextPart) for m in request.messages for p in m.parts)


def needs_materializing(request: Request, caps: Capabilities) -> bool:
    """False for a text request the backend takes as it is (the common
    case: no copy, no thread hop)."""
    if has_media(request):
        return True
    return not caps.multi_turn and sum(1 for m in request.messages if m.role != "system") > 1


# ---------------------------------------------------------------- steps


def _adapt_parts(request: Request, plan: MediaPlan, caps: Capabilities, log: dict[str, Any]) -> None:
    ab = plan.ablations
    switch = "text_only" if "text_only" in ab else None
    drop_video = "no_video" in ab or switch
    drop_audio = "no_audio" in ab or switch
    for message in request.messages:
        kept = []
        for p in message.parts:
            if isinstance(p, (VideoPart, ImagePart)) and drop_video:
                request.adaptations.append(f"{p.type} removed (--ablate {switch or 'no_video'})")
                continue
            if isinstance(p, VideoPart) and not caps.sees_pixels:
                request.adaptations.append("video not sent: the backend sees no pixels")
                log["video"] = {"path": p.path, "sent": False}
                continue
            if isinstance(p, ImagePart) and not caps.takes_images:
                why = "sees no pixels" if not caps.sees_pixels else "takes no images"
                request.adaptations.append(f"image not sent: the backend {why}")
                log.setdefault("images", []).append({"path": p.path, "label": p.label, "size": _image_size(p),
                                                     "sent": False})
                continue
            if isinstance(p, AudioPart) and drop_audio:
                request.adaptations.append(f"audio removed (--ablate {switch or 'no_audio'})")
                continue
            kept.append(p)
        message.parts = kept


def _flatten(request: Request) -> None:
    """One user message holding every turn, for a backend without
    multi-turn support (system messages stay first)."""
    turns = [m for m in request.messages if m.role != "system"]
    if len(turns) <= 1:
        return
    system = [m for m in request.messages if m.role == "system"]
    parts: list[Any] = []
    for m in turns:
        label = "Assistant" if m.role == "assistant" else "User"
        parts.append(TextPart(f"{label}:"))
        parts.extend(m.parts)
    request.messages = system + [Message("user", parts)]
    request.adaptations.append(f"conversation of {len(turns)} turns flattened into one message "
                               "(the backend takes no multi-turn input)")


def _frames_planned(part: VideoPart, plan: MediaPlan, caps: Capabilities) -> int | None:
    spec = plan.spec.frame_spec(segment=part.segment, default_frames=caps.default_frames, sampling=part.sampling)
    return spec.frames or spec.max_frames


def _budget(request: Request, plan: MediaPlan, caps: Capabilities) -> None:
    from avhb.media.budget import check_budget

    parts = [p for m in request.messages for p in m.parts]
    videos = [p for p in parts if isinstance(p, VideoPart) and p.frames is None]
    images = [p for p in parts if isinstance(p, ImagePart)]
    if caps.images and len(images) > caps.images:
        raise SampleError(f"task {plan.task}: {len(images)} images, but the backend takes at most {caps.images} "
                          "per request (images are not dropped: they may be numbered units)")
    text_tokens = sum(len(p.text) for p in parts if isinstance(p, TextPart)) // 3
    image_tokens = len(images) * caps.tokens_per_frame
    planned = {id(v): _frames_planned(v, plan, caps) for v in videos}
    counted = [v for v in videos if planned[id(v)]]
    if images and text_tokens + image_tokens > caps.max_context:
        raise SampleError(f"task {plan.task}: {len(images)} images x {caps.tokens_per_frame} tokens + {text_tokens} "
                          f"text tokens = {text_tokens + image_tokens} > max context {caps.max_context} (images are "
                          "not dropped: they may be numbered units; use a model with a longer context)")
    if not counted:
        return
    total = sum(planned[id(v)] or 0 for v in counted)  # counted: the videos with a planned count
    allowed = check_budget(plan.task, total, caps.tokens_per_frame, text_tokens + image_tokens, caps.max_context,
                           policy=plan.spec.budget)
    if allowed < total:
        each = allowed // len(counted)
        if each < 1:
            raise SampleError(f"task {plan.task}: {len(counted)} videos do not fit {caps.max_context} tokens "
                              "with one frame each")
        for v in counted:
            n = planned[id(v)] or 0
            if n > each:
                v.sampling = {**(v.sampling or {}), "frames": each}
                v.sampling.pop("fps", None)
                request.adaptations.append(f"frames clamped {n} -> {each} to fit {caps.max_context} tokens")


def _decode_video(part: VideoPart, plan: MediaPlan, caps: Capabilities, request: Request, log: dict[str, Any]) -> None:
    from avhb.media.boxes import draw_boxes
    from avhb.media.cache import cached_sample_frames

    spec = plan.spec
    frame_spec = spec.frame_spec(segment=part.segment, default_frames=caps.default_frames, sampling=part.sampling)
    sample = cached_sample_frames(part.path, frame_spec)
    frames = sample.frames
    if part.boxes and "no_boxes" not in plan.ablations:
        frames = draw_boxes(frames, sample.indices, part.boxes, source_size=sample.source_size,
                            source_fps=sample.source_fps, key_fps=spec.boxes_key_fps)
        request.adaptations.append("boxes drawn on frames")
    part.frames, part.timestamps, part.frame_indices, part.fps = frames, sample.timestamps, sample.indices, sample.source_fps
    entry = {"path": part.path, "frame_indices": sample.indices,
             "timestamps": [round(t, 3) for t in sample.timestamps], "decoder": sample.decoder}
    if part.segment:
        entry["segment"] = list(part.segment)
    _log_one(log, "video", entry)


def _decode_audio(part: AudioPart, plan: MediaPlan, caps: Capabilities, request: Request, log: dict[str, Any],
                  transcriber: Callable[..., Any] | None) -> None:
    from avhb.media.cache import cached_load_audio
    from avhb.media.probe import probe_file, short_audio

    spec = plan.spec
    assert part.path is not None  # an audio part without its array has a file
    part.array = cached_load_audio(part.path, rate=spec.audio_rate, segment=part.segment, on_missing=spec.audio_missing)
    part.rate = spec.audio_rate
    _log_one(log, "audio", {"path": part.path, "seconds": round(len(part.array) / part.rate, 3), "rate": part.rate,
                            "segment": part.segment})
    short = short_audio(probe_file(part.path), part.segment)
    if short:  # a video's own track that ends early: said once per task (avhb.run.notes.adaptation_notes)
        request.adaptations.append(short)
    if not caps.audio or "audio_as_transcript" in plan.ablations:
        transcribe = transcriber or load_transcriber(spec.transcriber)
        transcript = transcribe(part.array, rate=part.rate, language=part.language or plan.language)
        part.transcript = transcript.text
        part.array = part.path = None  # the transcript replaces the audio, also for a backend that hears
        request.adaptations.append(f"audio -> transcript ({transcript.model})")


def _decode_image(part: ImagePart, spec: MediaSpec, log: dict[str, Any]) -> None:
    import numpy as np

    from avhb.media.resize import fit_size, resize

    if part.array is None and part.encoding is None and not _is_jpeg(part.path):
        part.encoding = "png"  # a lossless file stays lossless (PNG, as lm-eval and lmms-eval send an image)
    array = part.array if part.array is not None else read_image(part.path)
    array = np.asarray(array)
    if array.ndim == 2:
        array = np.repeat(array[:, :, None], 3, axis=2)
    array = array[:, :, :3]
    source = (int(array.shape[1]), int(array.shape[0]))
    size = fit_size(*source, spec.max_side, spec.max_pixels)
    part.array = resize(array.astype(np.uint8), size)
    entry = {"path": part.path, "label": part.label, "size": list(size)}
    if size != source:
        entry["source_size"] = list(source)
    log.setdefault("images", []).append(entry)


def _is_jpeg(path: str | None) -> bool:
    """Whether a file starts as a JPEG does (its pixels are re-sent as JPEG)."""
    try:
        with open(str(path), "rb") as fh:
            return fh.read(3) == b"\xff\xd8\xff"
    except OSError:  # a missing file: read_image names it
        return False


def _image_size(part: ImagePart) -> list[int] | None:
    """An image's width and height without decoding it (the header only)."""
    if part.array is not None:
        return [int(part.array.shape[1]), int(part.array.shape[0])]
    try:
        from PIL import Image

        assert part.path is not None  # an image part without its array has a file
        with Image.open(part.path) as im:
            return [int(im.width), int(im.height)]
    except Exception:  # noqa: BLE001 - a missing or broken image: its size is simply unknown
        return None


def read_image(path: str | None):
    """An image file as an RGB uint8 array; ``SampleError`` naming the file
    when it is missing or unreadable."""
    import numpy as np
    from PIL import Image, UnidentifiedImageError

    from avhb.media._open import check_file

    if not path:
        raise SampleError("image part has neither a path nor pixels")
    check_file(path)
    try:
        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"))
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise SampleError(f"{path}: not a readable image ({exc})") from None


def _log_one(log: dict[str, Any], kind: str, entry: dict[str, Any]) -> None:
    """One entry per kind, or a list once a request holds several (chunks,
    multi-turn histories)."""
    current = log.get(kind)
    if current is None or (isinstance(current, dict) and current.get("sent") is False):
        log[kind] = entry
    elif isinstance(current, list):
        current.append(entry)
    else:
        log[kind] = [current, entry]


def load_transcriber(name: str) -> Callable[..., Any]:
    """The speech-to-text function a plugin registers (``avhb_transcribers``):
    ``transcribe(array, rate=..., language=None)`` -> an object with
    ``text`` and ``model``."""
    from avhb.registry import get_registry

    return get_registry().load("transcribers", name)
