"""The ``media`` block of a task YAML, as a plain dataclass.

Keys (all optional): ``video``, ``audio``, ``images`` (templates naming the
files; ``images`` names a field holding a list of paths, or one template),
``frames`` | ``fps`` (+ ``max_frames``), ``segment`` (two field names: start,
end seconds; used when both are numbers and end > start, else the whole
video, noted in the sample log), ``include_last_frame``, ``max_side``,
``max_pixels`` (bound video frames and images alike), ``frame_size``
([width, height]: every video frame resized to exactly that size, aspect
not kept, as a benchmark that standardises its clips does; overrides
``max_side``/``max_pixels`` for video; null = source size), ``audio_rate``
(16000), ``audio_in_video`` (false), ``audio_missing`` ("error" |
"silence"), ``budget`` ("clamp" | "refuse": over-budget frames are clamped,
or the sample fails), ``chunks`` ({seconds, fps, width, height}: long-video
chunks for drivers), ``boxes`` (a field holding box annotations),
``boxes_key_fps`` (the rate of the annotation frame keys, e.g. 10 for a
10 Hz grid; unset = source frame indices), ``decoder`` ("auto" | "decord" |
"pyav"), ``transcriber`` (the registered speech-to-text used when audio
becomes a transcript; default "whisper"), ``asr_language`` (the speech's
language for that transcript, a Whisper code or a locale such as
``ta-IN``, whose language part is used, or a template over the sample's
fields such as ``"{{locale}}"``; default: detected).

Every number is bounded by what media can hold (:data:`LIMITS`: e.g. at
most 1000 frames per second, 100,000 frames, 16,384 pixels a side); a
value past its bound is a ``UserError`` naming the key, never a hang.

A task's media settings are its YAML block merged with ``--media``
(:func:`media_overrides` says how an override lies over the block: the
CLI, ``RunOptions.media`` and pack commands all go through it), parsed
once per task into a :class:`MediaSpec` that both request building and
materialisation read.  :meth:`MediaSpec.frame_spec` builds the
``FrameSpec`` once the segment is known.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal, Mapping

from avhb.errors import UserError

if TYPE_CHECKING:  # frames imports numpy: a text-only run never needs it
    from avhb.media.audio import OnMissing
    from avhb.media.frames import Decoder, FrameSpec


# upper bounds of the media numbers (inclusive)
LIMITS: dict[str, float] = {
    "frames": 100_000, "max_frames": 100_000, "max_side": 16_384, "max_pixels": 16_384 * 16_384,
    "audio_rate": 384_000, "fps": 1000.0, "boxes_key_fps": 1000.0,
    "frame_size": 16_384, "chunks.seconds": 7 * 24 * 3600.0, "chunks.fps": 1000.0, "chunks.width": 16_384, "chunks.height": 16_384,
}
_UNITS = {"fps": "frames per second", "boxes_key_fps": "keys per second", "audio_rate": "samples per second",
          "chunks.seconds": "seconds", "chunks.fps": "frames per second"}


@dataclass(frozen=True)
class ChunkSpec:
    """Long-video chunking: ``seconds`` per chunk sampled at ``fps``,
    frames resized to ``width`` x ``height``."""

    seconds: float = 120.0
    fps: float = 0.5
    width: int = 512
    height: int = 384


@dataclass(frozen=True)
class MediaSpec:
    video: str | None = None
    audio: str | None = None
    images: str | None = None
    frames: int | None = None
    fps: float | None = None
    max_frames: int | None = None
    segment: tuple[str, str] | None = None
    include_last_frame: bool = False
    max_side: int | None = None
    max_pixels: int | None = None
    frame_size: tuple[int, int] | None = None
    audio_rate: int = 16000
    audio_in_video: bool = False
    audio_missing: OnMissing = "error"
    budget: Literal["clamp", "refuse"] = "clamp"
    chunks: ChunkSpec | None = None
    boxes: str | None = None
    boxes_key_fps: float | None = None
    decoder: Decoder = "auto"
    transcriber: str = "whisper"
    asr_language: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None, where: str = "media") -> "MediaSpec":
        """Validate and convert; errors are ``UserError`` naming ``where`` and the key."""
        if d is None:
            return cls()
        if not isinstance(d, Mapping):
            raise UserError(f"{where}: must be a mapping, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise UserError(f"{where}: unknown key(s) {', '.join(unknown)}; "
                            f"expected some of {', '.join(sorted(known))}")
        kw: dict[str, Any] = {}
        for key in ("video", "audio", "images", "boxes", "transcriber", "asr_language"):
            if d.get(key) is not None:
                kw[key] = _typed(where, key, d[key], str)
        for key in ("frames", "max_frames", "max_side", "max_pixels", "audio_rate"):
            if d.get(key) is not None:
                kw[key] = _positive_int(where, key, d[key])
        for key in ("fps", "boxes_key_fps"):
            if d.get(key) is not None:
                kw[key] = _positive_float(where, key, d[key])
        for key in ("include_last_frame", "audio_in_video"):
            if d.get(key) is not None:
                kw[key] = _typed(where, key, d[key], bool)
        for key, allowed in (("audio_missing", ("error", "silence")),
                             ("budget", ("clamp", "refuse")),
                             ("decoder", ("auto", "decord", "pyav"))):
            if d.get(key) is not None:
                if d[key] not in allowed:
                    raise UserError(f"{where}.{key}: must be one of {', '.join(allowed)}, got {d[key]!r}")
                kw[key] = d[key]
        if kw.get("frames") is not None and kw.get("fps") is not None:
            raise UserError(f"{where}: give frames or fps, not both")
        if d.get("segment") is not None:
            seg = d["segment"]
            if not isinstance(seg, (list, tuple)) or len(seg) != 2:
                raise UserError(f"{where}.segment: must be a list of two entries [start, end], got {seg!r}")
            kw["segment"] = (str(seg[0]), str(seg[1]))
        if d.get("frame_size") is not None:
            kw["frame_size"] = _frame_size(where, d["frame_size"])
        if d.get("chunks") is not None:
            kw["chunks"] = _chunks(where, d["chunks"])
        if kw.get("asr_language") and "{" not in kw["asr_language"]:  # a template is rendered per sample
            kw["asr_language"] = whisper_language(kw["asr_language"], where)
        return cls(**kw)

    def to_key(self) -> dict[str, Any]:
        """The settings as plain data, for request keys and run.json."""
        from dataclasses import asdict

        out = asdict(self)
        for key in ("asr_language", "frame_size"):  # keys made before the setting existed stay valid
            if out.get(key) is None:
                out.pop(key, None)
        if out.get("frame_size") is not None:
            out["frame_size"] = list(out["frame_size"])
        return out

    def frame_spec(self, segment: tuple[float, float] | None = None, frames: int | None = None,
                   default_frames: int | None = None, sampling: Mapping[str, Any] | None = None) -> FrameSpec:
        """The ``FrameSpec`` for one video part (``segment`` resolved to
        seconds; ``frames`` overrides the count, e.g. after a budget clamp;
        ``sampling`` = a part's own ``fps``/``frames``/``width``+``height``,
        e.g. a long-video chunk).  Without ``frames`` or ``fps`` anywhere:
        the backend's ``default_frames``, else 8 uniform frames."""
        sampling = dict(sampling or {})
        n = frames if frames is not None else sampling.get("frames", None if "fps" in sampling else self.frames)
        fps = None if n is not None else sampling.get("fps", self.fps)
        if n is None and fps is None:
            n = default_frames or 8
        size = (int(sampling["width"]), int(sampling["height"])) if "width" in sampling and "height" in sampling \
            else self.frame_size
        from avhb.media.frames import FrameSpec

        return FrameSpec(frames=n, fps=fps, max_frames=self.max_frames, segment=segment,
                         include_last=self.include_last_frame, max_side=self.max_side,
                         max_pixels=self.max_pixels, decoder=self.decoder, size=size)


def media_overrides(overrides: Mapping[str, Any] | None, where: str = "--media") -> dict[str, Any]:
    """``--media`` (``RunOptions.media``) as it lies over a task's media
    block: checked like a block (keys, types, bounds), and with ``frames``
    and ``fps`` replacing each other: an override that gives one sets the
    other to None, so ``frames=8`` over a block with ``fps: 5`` samples 8
    frames (the block's ``fps`` cleared), and ``fps=2`` over ``frames: 16``
    samples at 2 per second.  Giving both is an error.  Applying it twice
    changes nothing."""
    out = dict(overrides or {})
    if not out:
        return out
    MediaSpec.from_dict(out, where=where)
    if "frames" in out:
        out.setdefault("fps", None)
    if out.get("fps") is not None:
        out.setdefault("frames", None)
    return out


def merged_media(block: Mapping[str, Any] | None, overrides: Mapping[str, Any] | None,
                 where: str = "media") -> MediaSpec:
    """A task's media settings: its ``media`` block with the overrides over
    it (:func:`media_overrides`)."""
    return MediaSpec.from_dict({**(block or {}), **media_overrides(overrides)}, where=where)


def whisper_language(value: str, where: str = "media") -> str:
    """``ta-IN`` / ``ta_IN`` / ``TA`` -> ``ta``: the language part of a
    locale, lower-cased, as Whisper names languages."""
    code = re.split(r"[-_]", value.strip())[0].lower()
    if not re.fullmatch(r"[a-z]{2,3}|haw|yue", code):
        raise UserError(f"{where}.asr_language: {value!r} is not a language code (e.g. ta, ko, en-GB)")
    return code


def _typed(where: str, key: str, value: Any, typ: type) -> Any:
    if not isinstance(value, typ):
        raise UserError(f"{where}.{key}: must be {typ.__name__}, got {value!r}")
    return value


def _bounded(where: str, key: str, value: float) -> None:
    name = f"{where.rpartition('.')[2]}.{key}" if where.endswith(".chunks") else key
    limit = LIMITS.get(name)
    if limit is not None and value > limit:
        unit = f" {_UNITS[name]}" if name in _UNITS else ""
        raise UserError(f"{where}.{key}: must be at most {limit:g}{unit}, got {value:g}")


def _positive_int(where: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UserError(f"{where}.{key}: must be a positive integer, got {value!r}")
    _bounded(where, key, value)
    return value


def _positive_float(where: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value != value:
        raise UserError(f"{where}.{key}: must be a positive number, got {value!r}")
    _bounded(where, key, float(value))
    return float(value)


def _frame_size(where: str, value: Any) -> tuple[int, int]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise UserError(f"{where}.frame_size: must be [width, height] (or null: the source size), got {value!r}")
    width, height = (_positive_int(where, "frame_size", v) for v in value)
    return width, height


def _chunks(where: str, value: Any) -> ChunkSpec:
    if not isinstance(value, Mapping):
        raise UserError(f"{where}.chunks: must be a mapping with seconds, fps, width, height")
    unknown = sorted(set(value) - {"seconds", "fps", "width", "height"})
    if unknown:
        raise UserError(f"{where}.chunks: unknown key(s) {', '.join(unknown)}")
    kw: dict[str, Any] = {}
    for key in ("seconds", "fps"):
        if key in value:
            kw[key] = _positive_float(f"{where}.chunks", key, value[key])
    for key in ("width", "height"):
        if key in value:
            kw[key] = _positive_int(f"{where}.chunks", key, value[key])
    return ChunkSpec(**kw)
