"""Container metadata without decoding any frame; :func:`short_audio` says
when a video's own audio track ends well before its picture does."""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from avhb.media._open import check_file, decoding, fail, open_container


@dataclass(frozen=True)
class MediaInfo:
    """What a media file holds, read from container and stream headers.

    ``duration`` is in seconds (the video stream's own duration where the
    container states it, else the container's); ``fps`` is the video stream's
    average frame rate; ``frame_count`` is the stream's stated frame count or,
    where the container does not state one (e.g. Matroska), ``floor(duration
    * fps)``.  Video fields are 0 / None for an audio-only file.
    ``audio_duration`` is the audio stream's own length in seconds, from its
    header or (Matroska, WebM) its ``DURATION`` tag; None when neither says.
    """

    path: str
    duration: float
    fps: float
    frame_count: int
    width: int
    height: int
    has_video: bool
    has_audio: bool
    audio_rate: int | None
    audio_channels: int | None
    video_codec: str | None
    audio_codec: str | None = None
    start_time: float = 0.0  # the video stream's first timestamp, seconds
    audio_duration: float | None = None


def probe(path: str) -> MediaInfo:
    """Read :class:`MediaInfo` for ``path``; bad files raise ``SampleError``."""
    check_file(path)
    container = open_container(path)
    try:
        with decoding(path, "headers"):
            return _info(path, container)
    finally:
        container.close()


def _info(path: str, container) -> MediaInfo:
    video = container.streams.video[0] if container.streams.video else None
    audio = container.streams.audio[0] if container.streams.audio else None
    if video is None and audio is None:
        raise fail(path, "no video or audio stream")
    container_duration = container.duration / 1_000_000 if container.duration else 0.0
    fps = 0.0
    count = 0
    width = height = 0
    codec = None
    duration = container_duration
    start = 0.0
    if video is not None:
        rate = video.average_rate or video.guessed_rate or video.base_rate
        fps = float(rate) if rate else 0.0
        if video.duration is not None and video.time_base:
            duration = float(video.duration * video.time_base)
        if video.start_time is not None and video.time_base:
            start = float(video.start_time * video.time_base)
        count = int(video.frames or 0)
        if count <= 0 and fps > 0 and duration > 0:
            count = int(duration * fps + 1e-6)
        ctx = video.codec_context  # None when FFmpeg has no decoder for it
        if ctx is not None:
            width, height = int(ctx.width or 0), int(ctx.height or 0)
            codec = ctx.name
    elif audio is not None and audio.duration is not None and audio.time_base:
        duration = float(audio.duration * audio.time_base)
    actx = audio.codec_context if audio is not None else None
    return MediaInfo(
        path=path,
        duration=duration,
        fps=fps,
        frame_count=count,
        width=width,
        height=height,
        has_video=video is not None,
        has_audio=audio is not None,
        audio_rate=int(actx.sample_rate) if actx is not None else None,
        audio_channels=int(actx.channels) if actx is not None else None,
        video_codec=codec,
        audio_codec=actx.name if actx is not None else None,
        start_time=start,
        audio_duration=_own_seconds(audio) if audio is not None else None,
    )


def _own_seconds(stream) -> float | None:
    """A stream's own length: its header's duration, else its ``DURATION``
    tag (``HH:MM:SS.fraction``, written by Matroska muxers)."""
    if stream.duration is not None and stream.time_base:
        return float(stream.duration * stream.time_base)
    tag = (stream.metadata or {}).get("DURATION")
    try:
        hours, minutes, seconds = str(tag).split(":")
        return int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    except ValueError:
        return None


def probe_file(path: str) -> MediaInfo:
    """:func:`probe`, read once per file state (path, size, modification
    time) in this process."""
    st = os.stat(path)
    return _probe_state(str(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=1024)
def _probe_state(path: str, size: int, mtime_ns: int) -> MediaInfo:
    return probe(path)


# A video's audio track is "short" when it ends this much before its picture: at least 1 s and a tenth of the
# span listened to (encoders pad or trim a track by a few frames: tens of milliseconds).
SHORT_AUDIO_SECONDS = 1.0
SHORT_AUDIO_SHARE = 0.1


def short_audio(info: MediaInfo, segment: tuple[float, float] | None = None) -> str | None:
    """One line when the file's audio track ends well before its picture
    within the span listened to (the whole video, or ``segment``): the model
    hears silence for the rest.  None when it does not, or when the file
    has no picture or its headers do not give the audio's length."""
    if not (info.has_video and info.has_audio) or info.audio_duration is None or info.duration <= 0:
        return None
    start, end = (0.0, info.duration) if segment is None else (max(0.0, segment[0]), min(segment[1], info.duration))
    span = end - start
    heard = max(0.0, min(info.audio_duration, end) - start)
    if span <= 0 or span - heard < max(SHORT_AUDIO_SECONDS, SHORT_AUDIO_SHARE * span):
        return None
    where = f" (segment {start:g}-{end:g}s: {heard:.1f}s of {span:.1f}s heard)" if segment is not None else ""
    return (f"audio track shorter than its video: {Path(info.path).name} has sound to {info.audio_duration:.1f}s "
            f"of its {info.duration:.1f}s picture{where}; the rest is silent")
