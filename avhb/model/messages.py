"""The request a backend receives: conversation turns made of typed parts.

Media parts carry either a file reference (for backends that take files
natively) or decoded content (frames, waveform).  The evaluator decides which,
from the backend's declared capabilities, and records what it changed in
``Request.adaptations``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Union


@dataclass
class TextPart:
    text: str
    type: Literal["text"] = "text"


@dataclass
class ImagePart:
    """One still image: a file path, or an RGB uint8 array (H, W, 3).
    Once materialised, ``array`` holds the (resized) pixels."""

    path: str | None = None
    array: Any = None  # numpy.ndarray
    label: str | None = None  # e.g. "frame at 12.50s" or "[3]"
    encoding: Literal["png"] | None = None  # how pixels are sent: PNG (lossless, as the peers send a PIL image) or the backend's JPEG
    type: Literal["image"] = "image"


@dataclass
class VideoPart:
    """A video. ``path`` is the source file; once sampled, ``frames`` holds
    RGB uint8 arrays and ``timestamps`` their times in seconds."""

    path: str
    segment: tuple[float, float] | None = None
    sampling: dict[str, Any] | None = None  # per-part frame settings over the task's (fps, frames, width, height)
    boxes: Any = None  # box annotations to draw ({frame key: [box, ...]}), from the sample
    labelled: bool = True  # sampled frames go with their times ("Frame at 12.5s:"); False: images only (lmms-eval's)
    frames: list[Any] | None = None
    timestamps: list[float] | None = None
    frame_indices: list[int] | None = None
    fps: float | None = None  # source fps, once probed
    type: Literal["video"] = "video"


@dataclass
class AudioPart:
    """Audio: a file path (or a video's own track) and/or a mono float32
    waveform at ``rate`` Hz.  ``transcript`` is filled by an ASR adaptation."""

    path: str | None = None
    array: Any = None  # numpy.ndarray float32, mono
    rate: int | None = None
    segment: tuple[float, float] | None = None
    transcript: str | None = None
    language: str | None = None  # the speech's language (Whisper code) when the task knows it
    type: Literal["audio"] = "audio"


Part = Union[TextPart, ImagePart, VideoPart, AudioPart]
Role = Literal["system", "user", "assistant"]


@dataclass
class Message:
    role: Role
    parts: list[Part]

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))


@dataclass
class Request:
    """Everything a backend needs for one generation."""

    messages: list[Message]
    generation: dict[str, Any] = field(default_factory=dict)  # max_tokens, temperature, stop...
    choices: list[str] | None = None  # option texts, for baselines and log-likelihood scoring
    # lm-eval's log-likelihood requests: (context, continuation) pairs whose continuation log-probabilities
    # the backend returns as Response.meta["loglikelihoods"] = [[loglikelihood, is_greedy], ...] (rolling:
    # each continuation scored from the start of the text, in windows, lm-eval's loglikelihood_rolling)
    loglikelihood: list[tuple[str, str]] | None = None
    rolling: bool = False
    prompt: str | None = None  # lm-eval's plain-text rendering of the messages, for completion (non-chat) backends
    key: str = ""  # content hash; set by the evaluator, used by the journal
    fields: dict[str, Any] = field(default_factory=dict)  # structured inputs (judge fields, sample id) for non-LLM backends
    adaptations: list[str] = field(default_factory=list)


@dataclass
class Response:
    text: str
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)  # prompt_tokens, completion_tokens
    cost: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


def reference_copy(request: Request) -> Request:
    """A copy whose messages and parts are new objects (the parts' file
    references, not decoded content): materialising it leaves the original,
    which a multi-step driver keeps as its history, untouched."""
    from dataclasses import replace

    return replace(request, messages=[Message(m.role, [replace(p) for p in m.parts]) for m in request.messages],
                   generation=dict(request.generation), fields=dict(request.fields), adaptations=list(request.adaptations))


def prompt_text(request: Request) -> str:
    """The request's text, one ``[role] text`` block per message (media
    parts are not shown)."""
    return "\n\n".join(f"[{m.role}] {m.text}" for m in request.messages)


def text_request(prompt: str, system: str | None = None, **generation: Any) -> Request:
    messages = [Message("system", [TextPart(system)])] if system else []
    messages.append(Message("user", [TextPart(prompt)]))
    return Request(messages=messages, generation=dict(generation))
