"""Frame decoders: read given frame indices, holding one decode position.

Both decoders yield ``(index, rgb_uint8_array)`` for sorted, distinct
indices, at the source resolution, and never hold more than a small batch of
frames, so memory does not grow with video length.

PyAV strategy: for each target, seek to the key frame at or before it and
decode forward, converting only the target frame to RGB.  When the next
target lies ahead of the current decode position by no more than the
estimated key-frame interval (at least one second of frames), decoding simply
continues instead of seeking again.  The interval estimate is learnt while
decoding: a seek for target ``t`` that lands on key frame ``k`` shows there
is no key frame in ``(k, t]``, and consecutive key frames seen while decoding
give their distance.
"""
from __future__ import annotations

import math
from typing import Any, Iterator, Sequence

import numpy as np

from avhb.media._open import check_file, decoding, describe, fail, open_container

DECODERS = ("auto", "decord", "pyav")


def decord_available() -> bool:
    """True if ``import decord`` works here."""
    try:
        import decord  # noqa: F401
    except Exception:
        return False
    return True


def resolve_decoder(name: str) -> str:
    """``"auto"`` -> ``"pyav"``; others as given.

    PyAV is the default even where decord is installed: measured on 720p
    H.264 with a 250-frame key-frame interval (benchmarks/media.py), the
    seek-and-decode reader above is faster than decord's ``get_batch`` and
    its memory does not grow with video length (decord indexes every packet
    when it opens a file).  decord stays available as ``decoder="decord"``
    and gives the same indices and pixels.
    """
    if name not in DECODERS:
        raise ValueError(f"unknown decoder {name!r}; expected one of {', '.join(DECODERS)}")
    if name == "auto":
        return "pyav"
    return name


class PyAVReader:
    """Seek-and-decode-forward reader over one open container."""

    name = "pyav"

    def __init__(self, path: str, threads: bool = True) -> None:
        self.path = path
        self.container = open_container(path)
        try:
            if not self.container.streams.video:
                raise fail(path, "no video stream")
            self.stream = stream = self.container.streams.video[0]
            if stream.codec_context is None:
                raise fail(path, "unknown video codec: no decoder for this stream")
            if threads:
                stream.thread_type = "AUTO"
            rate = stream.average_rate or stream.guessed_rate or stream.base_rate
            self.fps = float(rate) if rate else 0.0
            if self.fps <= 0:
                raise fail(path, "video frame rate is 0 or unknown")
            self.time_base = float(stream.time_base)
            self.start_pts = int(stream.start_time or 0)
            count = int(stream.frames or 0)
            if count <= 0:
                dur = (stream.duration * self.time_base if stream.duration
                       else (self.container.duration or 0) / 1_000_000)
                count = int(dur * self.fps + 1e-6)
            if count <= 0:
                raise fail(path, "video has no frames")
            self.count = count
            self.width = int(stream.codec_context.width)
            self.height = int(stream.codec_context.height)
        except BaseException:
            self.container.close()
            raise
        self._frames: Iterator[Any] | None = None  # decode iterator
        self._pos = -1  # index of the last frame decoded
        self._prev = None  # that frame
        self._gop = 0  # lower bound on the key-frame interval, frames
        self._last_key: int | None = None

    # -- helpers ---------------------------------------------------------
    def _index(self, frame) -> int:
        pts = frame.pts if frame.pts is not None else frame.dts
        if pts is None:
            return self._pos + 1
        return int(round((pts - self.start_pts) * self.time_base * self.fps))

    def _seek(self, index: int) -> None:
        offset = self.start_pts + int(round(max(0, index) / self.fps / self.time_base))
        self.container.seek(offset, stream=self.stream, backward=True, any_frame=False)
        self._frames = self.container.decode(self.stream)
        self._pos = -1
        self._prev = None
        self._last_key = None

    def _next(self):
        assert self._frames is not None  # _seek ran first
        frame = next(self._frames, None)
        if frame is None:
            return None
        idx = self._index(frame)
        if frame.key_frame:
            if self._last_key is not None:
                self._gop = max(self._gop, idx - self._last_key)
            self._last_key = idx
        return idx, frame

    def _seek_to(self, target: int) -> None:
        """Seek so that the next decoded frame is at or before ``target``."""
        back = 0
        while True:
            self._seek(target - back)
            got = self._next()
            if got is None:
                raise fail(self.path, f"no frame could be decoded at or after frame {target - back} "
                                      f"of {self.count} (truncated or corrupt file?)")
            idx, frame = got
            if idx <= target or target - back <= 0:
                self._gop = max(self._gop, target - idx + 1)
                self._pos, self._prev = idx, frame
                return
            back = max(2 * back, int(self.fps), 1)

    # -- public ----------------------------------------------------------
    def read(self, indices: Sequence[int]) -> Iterator[tuple[int, np.ndarray]]:
        with decoding(self.path, "video"):
            yield from self._read(indices)

    def _read(self, indices: Sequence[int]) -> Iterator[tuple[int, np.ndarray]]:
        for target in indices:
            ahead = target - self._pos
            near = max(self._gop, int(math.ceil(self.fps)))
            if self._frames is None or ahead < 0 or ahead > near:
                self._seek_to(target)
            frame = self._advance_to(target)
            yield target, frame.to_ndarray(format="rgb24")

    def _advance_to(self, target: int):
        """Decode forward to the frame shown at ``target`` (the last frame
        whose index is <= target)."""
        while self._pos < target:
            got = self._next()
            if got is None:  # end of stream
                if self._prev is not None and target - self._pos <= 2:
                    return self._prev  # stated count exceeds decodable frames by <= 2
                raise fail(self.path, f"stream ends at frame {self._pos}, before frame {target} "
                                      f"of {self.count} (truncated or corrupt file?)")
            idx, frame = got
            if idx > target:
                if self._prev is None:
                    raise fail(self.path, f"frame {target} cannot be decoded")
                out = self._prev
                self._pos, self._prev = idx, frame
                return out
            self._pos, self._prev = idx, frame
        return self._prev

    def close(self) -> None:
        self._frames = None
        self.container.close()


class DecordReader:
    """decord ``VideoReader``; frames fetched in small batches."""

    name = "decord"
    batch = 8

    def __init__(self, path: str) -> None:
        check_file(path)
        import decord

        self.path = path
        try:
            self.vr = decord.VideoReader(path, ctx=decord.cpu(0))
            self.count = len(self.vr)
            self.fps = float(self.vr.get_avg_fps())
            height, width = self.vr[0].shape[:2] if self.count else (0, 0)
            self.vr.seek(0)
        except decord.DECORDError as exc:
            raise fail(path, f"decord cannot read this video: {describe(exc)}") from exc
        except (RuntimeError, ValueError) as exc:
            raise fail(path, f"decord cannot read this video: {describe(exc)}") from exc
        if self.count <= 0:
            raise fail(path, "video has no frames")
        if not self.fps or self.fps <= 0 or not math.isfinite(self.fps):
            raise fail(path, "video frame rate is 0 or unknown")
        self.width, self.height = int(width), int(height)

    def read(self, indices: Sequence[int]) -> Iterator[tuple[int, np.ndarray]]:
        import decord

        for i in range(0, len(indices), self.batch):
            chunk = [int(x) for x in indices[i:i + self.batch]]
            try:
                arr = self.vr.get_batch(chunk).asnumpy()
            except (decord.DECORDError, RuntimeError, ValueError) as exc:
                raise fail(self.path, f"decord failed on frames {chunk[0]}-{chunk[-1]}: "
                                      f"{describe(exc)}") from exc
            for idx, frame in zip(chunk, arr):
                yield idx, frame
            del arr

    def close(self) -> None:
        del self.vr


def open_reader(path: str, decoder: str = "auto"):
    """An open reader for ``path`` (``PyAVReader`` or ``DecordReader``)."""
    name = resolve_decoder(decoder)
    if name == "decord":
        if not decord_available():
            raise ValueError("decoder 'decord' requested but decord is not installed")
        return DecordReader(path)
    return PyAVReader(path)
