"""Load audio as mono float32 at a chosen rate, from a video's own track or
an audio file, resampled by PyAV (libswresample).

Definitions: sample ``j`` of the result is at ``start + j / rate`` seconds,
where ``start`` is the segment start (0 without a segment).  A segment
``(start, end)`` yields exactly ``round((min(end, duration) - start) * rate)``
samples (zeros where the track has no data); the whole file yields every
decoded sample.  Several channels are mixed down to mono by the resampler.

:func:`decode_waveform` decodes a whole track (a file or its bytes) as a
``datasets`` ``Audio`` column's decoder does (torchcodec's
``get_all_samples``): every decoded sample, planar float32 ``(channels,
samples)``, at the native rate or resampled, with the source's channels or
converted to mono/stereo, all by libswresample -- the same samples
torchcodec gives, bit for bit, on WAV, FLAC and MP3
(``tests/media/test_audio_columns.py``).  :func:`audio_header` reads the
rate and channel count without decoding.
"""
from __future__ import annotations

import io
import math
from typing import Literal

import numpy as np

from avhb.media._open import decoding, fail, open_container

OnMissing = Literal["error", "silence"]


def load_audio(path: str, rate: int = 16000, segment: tuple[float, float] | None = None,
               on_missing: OnMissing = "error") -> np.ndarray:
    """Mono float32 waveform of ``path`` at ``rate`` Hz.

    A file without an audio track raises ``SampleError`` naming it, or with
    ``on_missing="silence"`` returns zeros as long as the video (or segment).
    """
    path = str(path)
    if on_missing not in ("error", "silence"):
        raise ValueError(f"on_missing must be 'error' or 'silence', got {on_missing!r}")
    if not rate or rate <= 0:
        raise fail(path, f"audio rate must be positive, got {rate}")
    container = open_container(path)
    try:
        with decoding(path, "audio"):
            return _load(path, container, int(rate), segment, on_missing)
    finally:
        container.close()


def _duration(container, stream) -> float:
    if stream is not None and stream.duration is not None and stream.time_base:
        return float(stream.duration * stream.time_base)
    if container.duration:
        return container.duration / 1_000_000
    for s in container.streams:
        if s.duration is not None and s.time_base:
            return float(s.duration * s.time_base)
    return 0.0


def _bounds(path: str, duration: float, segment) -> tuple[float, float | None]:
    if segment is None:
        return 0.0, None
    start, end = float(segment[0]), float(segment[1])
    if not (math.isfinite(start) and math.isfinite(end)):
        raise fail(path, f"segment {segment!r} is not finite")
    if end <= start:
        raise fail(path, f"segment end {end:g}s is not after its start {start:g}s")
    start = max(0.0, start)
    if duration > 0:
        if start >= duration:
            raise fail(path, f"segment starts at {start:g}s, past the end of the media ({duration:.3f}s)")
        end = min(end, duration)
    return start, end


def _load(path, container, rate, segment, on_missing) -> np.ndarray:
    import av

    stream = container.streams.audio[0] if container.streams.audio else None
    duration = _duration(container, stream)
    start, end = _bounds(path, duration, segment)
    if stream is None:
        if on_missing == "error":
            raise fail(path, "no audio track (this sample needs audio)")
        stop = end if end is not None else duration
        return np.zeros(max(0, int(round((stop - start) * rate))), np.float32)
    if stream.codec_context is None:
        raise fail(path, "unknown audio codec: no decoder for this stream")

    want = int(round((end - start) * rate)) if end is not None else None
    capacity = want if want is not None else int(math.ceil(duration * rate)) + rate
    out = np.zeros(max(capacity, 1), np.float32)
    filled = 0  # samples written to out
    pos: int | None = None  # out position of the next resampled sample

    tb = float(stream.time_base)
    if start > 0:
        container.seek(int(start / tb), stream=stream, backward=True, any_frame=False)
    resampler = av.AudioResampler(format="flt", layout="mono", rate=rate)

    def put(frames) -> None:
        nonlocal out, filled, pos
        assert pos is not None  # set from the first frame, before put is called
        for f in frames:
            data = f.to_ndarray().reshape(-1)
            a = pos
            pos += len(data)
            lo = max(a, 0)
            hi = pos if want is None else min(pos, want)
            if hi <= lo:
                continue
            if hi > len(out):
                grown = np.zeros(max(hi, 2 * len(out)), np.float32)
                grown[:filled] = out[:filled]
                out = grown
            out[lo:hi] = data[lo - a:hi - a]
            filled = max(filled, hi)

    for frame in container.decode(stream):
        if pos is None:
            t0 = frame.pts * tb if frame.pts is not None else start
            pos = int(round((t0 - start) * rate))
        put(resampler.resample(frame))
        if want is not None and pos >= want:
            break
    if pos is not None:
        put(resampler.resample(None))
    if want is not None:
        return out[:want] if len(out) >= want else np.pad(out, (0, want - len(out)))
    return out[:filled]  # a view: no second copy of a long track


def _open_track(source: str | bytes, name: str, stream_index: int | None):
    """(container, audio stream) of a file path or its bytes; errors name ``name``."""
    import av

    from avhb.media._open import check_file, describe

    if isinstance(source, (bytes, bytearray, memoryview)):
        if not len(source):
            raise fail(name, "empty audio (0 bytes)")
        try:
            container = av.open(io.BytesIO(bytes(source)), "r")
        except av.error.FFmpegError as exc:
            raise fail(name, f"cannot open audio (corrupt or truncated?): {describe(exc)}") from exc
    else:
        check_file(source)
        container = open_container(source)
    try:
        streams = container.streams.audio
        if stream_index is not None:
            matches = [s for s in container.streams if s.index == stream_index]
            if not matches or matches[0].type != "audio":
                raise fail(name, f"stream {stream_index} is not an audio stream")
            stream = matches[0]
        elif not streams:
            raise fail(name, "no audio track")
        else:
            stream = container.streams.best("audio") or streams[0]
        if stream.codec_context is None:
            raise fail(name, "unknown audio codec: no decoder for this stream")
    except BaseException:
        container.close()
        raise
    return container, stream


_LAYOUTS = {1: "mono", 2: "stereo"}


def audio_header(source: str | bytes, name: str | None = None,
                 stream_index: int | None = None) -> tuple[int, int]:
    """(sample rate, channels) of the track, from its header: nothing decoded."""
    name = name or (source if isinstance(source, str) else "<audio bytes>")
    container, stream = _open_track(source, name, stream_index)
    try:
        ctx = stream.codec_context
        return int(ctx.sample_rate or stream.rate or 0), int(ctx.channels or 0)
    finally:
        container.close()


def decode_waveform(source: str | bytes, rate: int | None = None, channels: int | None = None,
                    stream_index: int | None = None, name: str | None = None) -> tuple[np.ndarray, int]:
    """Every sample of an audio track (a file path, or the file's bytes) as
    float32 ``(channels, samples)`` and its rate: at ``rate`` Hz when given
    (else the track's own), with ``channels`` channels (1 or 2; None: the
    track's own), converted by libswresample; ``stream_index`` picks the
    stream (None: the best audio stream).  A file that cannot be read
    raises ``SampleError`` naming ``name`` (default: the path)."""
    import av

    name = name or (source if isinstance(source, str) else "<audio bytes>")
    if channels is not None and channels not in _LAYOUTS:
        raise fail(name, f"num_channels must be 1 or 2 (or unset), got {channels}")
    if rate is not None and rate <= 0:
        raise fail(name, f"sampling rate must be positive, got {rate}")
    container, stream = _open_track(source, name, stream_index)
    try:
        with decoding(name, "audio"):
            ctx = stream.codec_context
            layout = _LAYOUTS[channels] if channels is not None else (ctx.layout.name if ctx.layout else None)
            out_rate = int(rate or ctx.sample_rate)
            if not out_rate:
                raise fail(name, "the audio track states no sample rate")
            resampler = av.AudioResampler(format="fltp", layout=layout, rate=out_rate)
            planes: list[np.ndarray] = []
            for frame in container.decode(stream):
                planes.extend(f.to_ndarray() for f in resampler.resample(frame))
            planes.extend(f.to_ndarray() for f in resampler.resample(None))
    finally:
        container.close()
    if not planes:
        width = channels or int(ctx.channels or 1)
        return np.zeros((width, 0), np.float32), out_rate
    wave = np.concatenate(planes, axis=1) if len(planes) > 1 else planes[0]
    return np.ascontiguousarray(wave, dtype=np.float32), out_rate
