"""Container metadata without decoding any frame."""
from __future__ import annotations

from dataclasses import dataclass

from avhb.media._open import check_file, decoding, fail, open_container


@dataclass(frozen=True)
class MediaInfo:
    """What a media file holds, read from container and stream headers.

    ``duration`` is in seconds (the video stream's own duration where the
    container states it, else the container's); ``fps`` is the video stream's
    average frame rate; ``frame_count`` is the stream's stated frame count or,
    where the container does not state one (e.g. Matroska), ``floor(duration
    * fps)``.  Video fields are 0 / None for an audio-only file.
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
    )
