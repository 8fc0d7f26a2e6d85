import base64
import io

import numpy as np
import pytest
import soundfile as sf
from PIL import Image

from avhb.media import (FrameSample, image_data_url, vllm_video, video_array, wav_bytes,
                        wav_data_url)


def decode_url(url):
    head, data = url.split(",", 1)
    return head, base64.b64decode(data)


def test_png_roundtrip_is_lossless():
    a = np.random.default_rng(1).integers(0, 256, (17, 23, 3), dtype=np.uint8)
    head, data = decode_url(image_data_url(a, "png"))
    assert head == "data:image/png;base64"
    assert (np.asarray(Image.open(io.BytesIO(data))) == a).all()


def test_jpeg_roundtrip_is_close():
    a = np.zeros((64, 64, 3), np.uint8)
    a[:, 32:] = (200, 100, 50)
    head, data = decode_url(image_data_url(a, "jpeg", quality=95))
    assert head == "data:image/jpeg;base64" and data[:2] == b"\xff\xd8"
    back = np.asarray(Image.open(io.BytesIO(data))).astype(int)
    assert np.abs(back - a).mean() < 3
    with pytest.raises(ValueError):
        image_data_url(a, "gif")
    with pytest.raises(ValueError):
        image_data_url(a.astype(np.float32), "png")


def test_wav_roundtrip():
    t = np.arange(1600) / 16000
    y = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    back, rate = sf.read(io.BytesIO(wav_bytes(y, 16000)), dtype="float32")
    assert rate == 16000 and back.shape == y.shape
    assert np.abs(back - y).max() < 1e-4  # 16-bit PCM
    head, data = decode_url(wav_data_url(y, 16000))
    assert head == "data:audio/wav;base64" and data[:4] == b"RIFF"
    with pytest.raises(ValueError):
        wav_bytes(np.zeros((2, 10), np.float32), 16000)


def test_arrays_for_vllm():
    frames = [np.full((4, 6, 3), i, np.uint8) for i in range(3)]
    s = FrameSample(frames, [0, 30, 60], [0.0, 1.0, 2.0], 30.0, "pyav", 90, (6, 4))
    arr, meta = vllm_video(s)
    assert arr.shape == (3, 4, 6, 3) and arr.dtype == np.uint8 and arr[2, 0, 0, 0] == 2
    assert meta == {"fps": 30.0, "total_num_frames": 90, "duration": 3.0,
                    "frames_indices": [0, 30, 60], "video_backend": "pyav",
                    "do_sample_frames": False}
    assert video_array(frames).shape == (3, 4, 6, 3)
