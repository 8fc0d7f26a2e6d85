"""Encode media for backends: image data URLs, WAV bytes, arrays for vLLM."""
from __future__ import annotations

import base64
import io
from typing import Any, Sequence

import numpy as np

_IMAGE_MIME = {"jpeg": "image/jpeg", "jpg": "image/jpeg", "png": "image/png"}


def image_bytes(array: np.ndarray, fmt: str = "jpeg", quality: int = 90) -> bytes:
    """``array`` (H, W, 3 RGB or H, W grey uint8) encoded as JPEG or PNG."""
    from PIL import Image

    fmt = fmt.lower()
    if fmt not in _IMAGE_MIME:
        raise ValueError(f"image format must be jpeg or png, got {fmt!r}")
    arr = np.asarray(array)
    if arr.dtype != np.uint8:
        raise ValueError(f"image array must be uint8, got {arr.dtype}")
    buf = io.BytesIO()
    img = Image.fromarray(arr)
    if fmt in ("jpeg", "jpg"):
        img.save(buf, format="JPEG", quality=quality)
    else:
        img.save(buf, format="PNG")
    return buf.getvalue()


def data_url(data: bytes, mime: str) -> str:
    """``data:<mime>;base64,<data>``."""
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def image_data_url(array: np.ndarray, fmt: str = "jpeg", quality: int = 90) -> str:
    """An image array as a ``data:image/jpeg|png;base64,...`` URL."""
    return data_url(image_bytes(array, fmt, quality), _IMAGE_MIME[fmt.lower()])


def wav_bytes(audio: np.ndarray, rate: int, subtype: str = "PCM_16") -> bytes:
    """A mono float32 waveform (values in [-1, 1]) as WAV file bytes
    (soundfile; ``subtype`` PCM_16 by default, or FLOAT)."""
    import soundfile as sf

    arr = np.asarray(audio, dtype=np.float32)
    if arr.ndim != 1:
        raise ValueError(f"audio must be mono (1-D), got shape {arr.shape}")
    buf = io.BytesIO()
    sf.write(buf, arr, int(rate), format="WAV", subtype=subtype)
    return buf.getvalue()


def wav_data_url(audio: np.ndarray, rate: int) -> str:
    """A waveform as a ``data:audio/wav;base64,...`` URL."""
    return data_url(wav_bytes(audio, rate), "audio/wav")


def video_array(frames: Sequence[np.ndarray]) -> np.ndarray:
    """Frames stacked as one (T, H, W, 3) uint8 array (all the same size)."""
    if not frames:
        raise ValueError("no frames")
    return np.stack([np.asarray(f, dtype=np.uint8) for f in frames])


def vllm_video(sample: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """A ``FrameSample`` as vLLM's ``(frames, metadata)`` video input: the
    stacked array, and metadata with the source fps, total frame count,
    duration, the sampled frame indices and ``do_sample_frames=False`` (the
    frames are already sampled)."""
    frames = video_array(sample.frames)
    fps = float(sample.source_fps)
    total = int(sample.source_frame_count or 0)
    meta = {"fps": fps, "total_num_frames": total,
            "duration": total / fps if fps else 0.0,
            "frames_indices": [int(i) for i in sample.indices],
            "video_backend": sample.decoder, "do_sample_frames": False}
    return frames, meta


def vllm_audio(audio: np.ndarray, rate: int) -> tuple[np.ndarray, int]:
    """vLLM's ``(waveform, sampling_rate)`` audio input (float32 mono)."""
    return np.asarray(audio, dtype=np.float32), int(rate)
