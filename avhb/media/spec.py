"""The ``media`` block of a task YAML, as a plain dataclass.

Keys (all optional): ``video``, ``audio`` (templates naming the files),
``frames`` | ``fps`` (+ ``max_frames``), ``segment`` (two templates or field
names: start, end seconds), ``include_last_frame``, ``max_side``,
``max_pixels``, ``audio_rate`` (16000), ``audio_in_video`` (false),
``audio_missing`` ("error" | "silence"), ``budget`` ("clamp" | "refuse"),
``chunks`` ({seconds, fps, width, height}), ``boxes`` (a field name),
``decoder`` ("auto" | "decord" | "pyav").  The caller resolves the templates
and calls the media functions; :meth:`MediaSpec.frame_spec` builds the
``FrameSpec`` once the segment is known.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from avhb.errors import UserError
from avhb.media.frames import FrameSpec


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
    frames: int | None = None
    fps: float | None = None
    max_frames: int | None = None
    segment: tuple[str, str] | None = None
    include_last_frame: bool = False
    max_side: int | None = None
    max_pixels: int | None = None
    audio_rate: int = 16000
    audio_in_video: bool = False
    audio_missing: str = "error"
    budget: str = "clamp"
    chunks: ChunkSpec | None = None
    boxes: str | None = None
    decoder: str = "auto"

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
        for key in ("video", "audio", "boxes"):
            if d.get(key) is not None:
                kw[key] = _typed(where, key, d[key], str)
        for key in ("frames", "max_frames", "max_side", "max_pixels", "audio_rate"):
            if d.get(key) is not None:
                kw[key] = _positive_int(where, key, d[key])
        if d.get("fps") is not None:
            kw["fps"] = _positive_float(where, "fps", d["fps"])
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
        if d.get("chunks") is not None:
            kw["chunks"] = _chunks(where, d["chunks"])
        return cls(**kw)

    def frame_spec(self, segment: tuple[float, float] | None = None,
                   frames: int | None = None) -> FrameSpec:
        """The ``FrameSpec`` for one sample (``segment`` resolved to seconds;
        ``frames`` overrides the count, e.g. after a budget clamp).  Without
        ``frames`` or ``fps`` in the spec, 8 uniform frames."""
        n = frames if frames is not None else self.frames
        fps = None if n is not None else self.fps
        if n is None and fps is None:
            n = 8
        return FrameSpec(frames=n, fps=fps, max_frames=self.max_frames, segment=segment,
                         include_last=self.include_last_frame, max_side=self.max_side,
                         max_pixels=self.max_pixels, decoder=self.decoder)  # type: ignore[arg-type]


def _typed(where: str, key: str, value: Any, typ: type) -> Any:
    if not isinstance(value, typ):
        raise UserError(f"{where}.{key}: must be {typ.__name__}, got {value!r}")
    return value


def _positive_int(where: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UserError(f"{where}.{key}: must be a positive integer, got {value!r}")
    return value


def _positive_float(where: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise UserError(f"{where}.{key}: must be a positive number, got {value!r}")
    return float(value)


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
