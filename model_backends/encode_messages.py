"""``avhb.model.messages.Request`` -> OpenAI chat-completions ``messages``.

Encoding rules:

- a message made only of text parts -> ``content`` is one string (parts
  joined by newlines), which every OpenAI-compatible server accepts;
- otherwise ``content`` is a list of parts, in order:
  - ``TextPart`` -> ``{"type": "text", "text": ...}``
  - ``ImagePart`` -> (its ``label`` as a text part, if any) then
    ``{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,..."}}``;
    arrays and non-JPEG files are encoded to JPEG, JPEG files are sent as is;
  - ``VideoPart`` with sampled frames -> for each frame a text part
    ``"Frame at 12.5s:"`` then its image (its image alone when the part is
    not ``labelled``: lmms-eval's tasks); without frames, only when the
    backend takes video natively, the whole file as a data URL, either
    ``{"type": "video_url", "video_url": {"url": ...}}`` (vLLM's extension;
    ``video_style="video_url"``) or ``{"type": "file", "file": {"file_data":
    ...}}`` (LiteLLM's form, which it turns into Gemini inline data;
    ``video_style="file"``); files over ``max_inline_mb`` and segments of a
    file are refused with a ``SampleError`` (sample frames instead);
  - ``AudioPart`` with a transcript -> text ``"Audio transcript: ..."``;
    with a waveform or file, only when the backend takes audio:
    ``{"type": "input_audio", "input_audio": {"data": <base64>, "format": "wav"}}``
    (mp3 files keep ``"mp3"``); otherwise a ``SampleError`` (the evaluator
    adapts audio to a transcript before a text-only backend sees it).
"""
from __future__ import annotations

import base64
import io
import mimetypes
import os
from dataclasses import dataclass
from typing import Any

from avhb import AudioPart, ImagePart, Message, Request, SampleError, TextPart, VideoPart

JPEG_QUALITY = 90


def frame_label(seconds: float) -> str:
    """``12.5 -> "Frame at 12.5s:"``; at most two decimals, no trailing zeros."""
    text = f"{float(seconds):.2f}".rstrip("0").rstrip(".")
    return f"Frame at {text}s:"


@dataclass
class EncodeOptions:
    audio: bool = False  # the backend takes audio natively
    video: bool = False  # the backend takes a video file natively
    video_style: str = "video_url"  # or "file"
    max_inline_mb: float = 20.0


def encode_messages(request: Request, *, audio: bool = False, video: bool = False,
                    video_style: str = "video_url", max_inline_mb: float = 20.0) -> list[dict[str, Any]]:
    opts = EncodeOptions(audio, video, video_style, max_inline_mb)
    return [encode_message(m, opts) for m in request.messages]


def encode_message(message: Message, opts: EncodeOptions | None = None) -> dict[str, Any]:
    parts = message.parts
    texts = [p.text for p in parts if isinstance(p, TextPart)]
    if len(texts) == len(parts):  # text only: one string
        return {"role": message.role, "content": "\n".join(texts)}
    opts = opts or EncodeOptions()
    content: list[dict[str, Any]] = []
    for part in parts:
        content.extend(_encode_part(part, opts))
    return {"role": message.role, "content": content}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def _encode_part(part: Any, opts: EncodeOptions) -> list[dict[str, Any]]:
    if isinstance(part, TextPart):
        return [_text(part.text)]
    if isinstance(part, ImagePart):
        out = [_text(part.label)] if part.label else []
        return out + [_image(image_data_url(part))]
    if isinstance(part, VideoPart):
        return _encode_video(part, opts)
    if isinstance(part, AudioPart):
        return _encode_audio(part, audio=opts.audio)
    raise SampleError(f"cannot encode message part of type {type(part).__name__}")


def _encode_video(part: VideoPart, opts: EncodeOptions) -> list[dict[str, Any]]:
    if part.frames is not None:
        times = part.timestamps
        if times is None or len(times) != len(part.frames):
            raise SampleError(f"video {part.path}: {len(part.frames)} frames but "
                              f"{'no' if times is None else len(times)} timestamps")
        out: list[dict[str, Any]] = []
        for frame, t in zip(part.frames, times):
            if part.labelled:
                out.append(_text(frame_label(t)))
            out.append(_image(array_data_url(frame)))
        return out
    if not opts.video:
        raise SampleError(f"video {part.path}: no sampled frames and the backend does not take video")
    if part.segment is not None:
        raise SampleError(f"video {part.path}: a segment needs sampled frames for this backend")
    try:
        size_mb = os.path.getsize(part.path) / 1e6
    except OSError as exc:
        raise SampleError(f"video {part.path}: cannot read ({exc})") from exc
    if size_mb > opts.max_inline_mb:
        raise SampleError(f"video {part.path}: {size_mb:.1f} MB is over the {opts.max_inline_mb:g} MB "
                          "inline limit; sample frames instead (video=false)")
    mime = mimetypes.guess_type(part.path)[0] or "video/mp4"
    url = file_data_url(part.path, mime)
    if opts.video_style == "file":
        return [{"type": "file", "file": {"file_data": url}}]
    return [{"type": "video_url", "video_url": {"url": url}}]


def _encode_audio(part: AudioPart, *, audio: bool) -> list[dict[str, Any]]:
    if part.transcript is not None and not (audio and (part.array is not None or part.path)):
        return [_text(f"Audio transcript: {part.transcript}")]
    if not audio:
        raise SampleError("audio reached a backend without audio support (no transcript was made)")
    if part.array is not None:
        if not part.rate:
            raise SampleError("audio array without a sample rate")
        data, fmt = wav_bytes(part.array, part.rate), "wav"
    elif part.path:
        data, fmt = _audio_file_bytes(part.path, part.segment)
    else:
        raise SampleError("audio part has neither a waveform, a file nor a transcript")
    return [{"type": "input_audio",
             "input_audio": {"data": base64.b64encode(data).decode("ascii"), "format": fmt}}]


def _audio_file_bytes(path: str, segment: tuple[float, float] | None) -> tuple[bytes, str]:
    ext = os.path.splitext(path)[1].lower()
    if segment is None and ext in (".wav", ".mp3"):
        with open(path, "rb") as fh:
            return fh.read(), ext[1:]
    import soundfile as sf

    try:
        info = sf.info(path)
        start, stop = 0, None
        if segment is not None:
            start = int(segment[0] * info.samplerate)
            stop = int(segment[1] * info.samplerate)
        data, rate = sf.read(path, start=start, stop=stop, dtype="float32", always_2d=True)
    except Exception as exc:  # unreadable audio fails this sample only
        raise SampleError(f"audio {path}: cannot read ({exc})") from exc
    return wav_bytes(data.mean(axis=1), rate), "wav"


# -- media helpers (pixels and waveforms: avhb.media.encode) -------------

def wav_bytes(array: Any, rate: int) -> bytes:
    """A waveform (mono, or channels averaged) -> 16-bit PCM WAV bytes."""
    import numpy as np

    from avhb.media import wav_bytes as _wav

    wave = np.asarray(array, dtype=np.float32)
    if wave.ndim == 2:  # (samples, channels) or (channels, samples)
        wave = wave.mean(axis=1) if wave.shape[1] <= 8 else wave.mean(axis=0)
    if wave.ndim != 1:
        raise SampleError(f"audio array must be mono or (samples, channels), got shape {wave.shape}")
    return _wav(np.clip(wave, -1.0, 1.0), int(rate))


def array_data_url(array: Any, encoding: str | None = None) -> str:
    """An RGB (H, W, 3) or grey (H, W) uint8 array -> JPEG data URL (PNG
    with ``encoding="png"``)."""
    from avhb.media import image_data_url as _image_url

    try:
        return _image_url(array, "png") if encoding == "png" else _image_url(array, "jpeg", JPEG_QUALITY)
    except (ValueError, TypeError, OSError) as exc:
        raise SampleError(f"cannot encode image array: {exc}") from exc


def image_data_url(part: ImagePart) -> str:
    if part.array is not None:
        return array_data_url(part.array, part.encoding)
    if not part.path:
        raise SampleError("image part has neither a file nor pixels")
    try:
        with open(part.path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise SampleError(f"image {part.path}: cannot read ({exc})") from exc
    if raw[:3] == b"\xff\xd8\xff":  # already JPEG: send the bytes unchanged
        return "data:image/jpeg;base64," + base64.b64encode(raw).decode("ascii")
    if raw[:8] == b"\x89PNG\r\n\x1a\n":  # already PNG: unchanged (lossless, as the peers send an image)
        return "data:image/png;base64," + base64.b64encode(raw).decode("ascii")
    from PIL import Image

    try:  # any other format (WebP, BMP, GIF...): its pixels as PNG, lossless, as lmms-eval and lm-eval encode them
        with Image.open(io.BytesIO(raw)) as img:
            rgb = img.convert("RGB")
            buf = io.BytesIO()
            rgb.save(buf, format="PNG")
    except Exception as exc:
        raise SampleError(f"image {part.path}: cannot decode ({exc})") from exc
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def file_data_url(path: str, mime: str) -> str:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise SampleError(f"{path}: cannot read ({exc})") from exc
    return f"data:{mime};base64," + base64.b64encode(raw).decode("ascii")
