"""Frame sampling on real encoded video, with both decoders."""
import numpy as np
import pytest

from avhb.errors import SampleError
from avhb.media import FrameSpec, sample_frames
from avhb.media.decoders import PyAVReader, resolve_decoder

DECODERS = ["pyav", "decord"]


@pytest.mark.parametrize("decoder", DECODERS)
def test_uniform_frames_are_exact(media, decode_index, decoder):
    s = sample_frames(media.long, FrameSpec(frames=8, decoder=decoder))
    # 1200 frames, 8 bins of 150: centres 75, 225, ...
    assert s.indices == [75 + 150 * k for k in range(8)]
    assert [decode_index(f) for f in s.frames] == s.indices
    assert s.timestamps == pytest.approx([i / 30 for i in s.indices])
    assert s.source_fps == pytest.approx(30)
    assert s.decoder == decoder
    assert s.source_frame_count == 1200
    assert all(f.shape == (120, 160, 3) and f.dtype == np.uint8 for f in s.frames)


@pytest.mark.parametrize("decoder", DECODERS)
def test_fps_segment_and_include_last(media, decode_index, decoder):
    s = sample_frames(media.long, FrameSpec(fps=2, segment=(10.2, 12.9), include_last=True,
                                            decoder=decoder))
    # times 10.2, 10.7, ..., 12.7 -> 306, 321, ..., 381; last frame of [306, 387) is 386
    assert s.indices == [306, 321, 336, 351, 366, 381, 386]
    assert [decode_index(f) for f in s.frames] == s.indices
    assert s.timestamps[0] == pytest.approx(10.2)


@pytest.mark.parametrize("decoder", DECODERS)
def test_dense_run_and_last_frame(media, decode_index, decoder):
    s = sample_frames(media.long, FrameSpec(fps=30, segment=(39.5, 45), decoder=decoder))
    assert s.indices == list(range(1185, 1200))
    assert [decode_index(f) for f in s.frames] == s.indices


def test_decoders_agree_on_indices_and_pixels(media):
    spec = dict(frames=12, include_last=True, max_side=96)
    a = sample_frames(media.long, FrameSpec(decoder="pyav", **spec))
    b = sample_frames(media.long, FrameSpec(decoder="decord", **spec))
    assert a.indices == b.indices
    assert a.timestamps == b.timestamps
    for x, y in zip(a.frames, b.frames):
        assert x.shape == y.shape
        assert np.abs(x.astype(int) - y.astype(int)).mean() < 1.0


@pytest.mark.parametrize("decoder", DECODERS)
def test_resize_keeps_aspect(media, decode_index, decoder):
    s = sample_frames(media.long, FrameSpec(frames=3, max_side=80, decoder=decoder))
    assert all(f.shape == (60, 80, 3) for f in s.frames)
    assert [decode_index(f) for f in s.frames] == s.indices
    s = sample_frames(media.long, FrameSpec(frames=3, max_pixels=4800, decoder=decoder))
    # sqrt(4800 / 19200) = 0.5 -> 80 x 60
    assert all(f.shape == (60, 80, 3) for f in s.frames)
    s = sample_frames(media.long, FrameSpec(frames=2, max_side=1000, decoder=decoder))
    assert s.frames[0].shape == (120, 160, 3)  # never upscaled


def test_auto_decoder_resolves():
    assert resolve_decoder("auto") in ("pyav", "decord")
    with pytest.raises(ValueError):
        FrameSpec(frames=2, decoder="opencv")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        FrameSpec()
    with pytest.raises(ValueError):
        FrameSpec(frames=2, fps=1)


class CountingReader(PyAVReader):
    def __init__(self, path):
        super().__init__(path)
        self.seeks = 0
        self.decoded = 0

    def _seek(self, index):
        self.seeks += 1
        super()._seek(index)

    def _next(self):
        self.decoded += 1
        return super()._next()


def test_pyav_seeks_for_far_targets_and_decodes_only_near_them(media, decode_index):
    r = CountingReader(media.long)  # keyframe every 50 frames
    targets = [75, 375, 675, 975, 1175]
    got = [(i, decode_index(f)) for i, f in r.read(targets)]
    r.close()
    assert got == [(t, t) for t in targets]
    assert r.seeks == len(targets)
    # each seek lands on the key frame at or before its target (<= 50 frames back)
    assert r.decoded <= sum(t % 50 + 1 for t in targets) + len(targets)


def test_pyav_reuses_decode_position_for_close_targets(media, decode_index):
    r = CountingReader(media.long)
    targets = list(range(10, 200, 7))
    got = [decode_index(f) for _, f in r.read(targets)]
    r.close()
    assert got == targets
    assert r.seeks == 1
    assert r.decoded == targets[-1] + 1  # frames 0..199 decoded once each


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("which, reason", [
    ("missing", "file not found"), ("empty", "empty file"), ("garbage", ""),
    ("truncated", ""), ("unknown_codec", ""), ("wav", ""),
])
def test_bad_files_raise_sample_error_naming_the_file(media, decoder, which, reason):
    path = getattr(media, which)
    with pytest.raises(SampleError) as ei:
        sample_frames(path, FrameSpec(frames=4, decoder=decoder))
    msg = str(ei.value)
    assert msg.startswith(path + ": ")
    assert reason in msg
    assert len(msg) > len(path) + 10


def test_pyav_reasons(media):
    def reason(path, **kw):
        with pytest.raises(SampleError) as ei:
            sample_frames(path, FrameSpec(decoder="pyav", **kw))
        return str(ei.value)

    assert "corrupt or truncated" in reason(media.garbage, frames=4)
    assert "unknown video codec" in reason(media.unknown_codec, frames=4)
    assert "no video stream" in reason(media.wav, frames=4)
    assert "truncated" in reason(media.truncated_faststart, frames=8)


@pytest.mark.parametrize("decoder", DECODERS)
def test_bad_requests(media, decoder):
    with pytest.raises(SampleError, match="past the end"):
        sample_frames(media.long, FrameSpec(frames=4, segment=(40.0, 50.0), decoder=decoder))
    with pytest.raises(SampleError, match=r"long\.mp4: sampling fps must be > 0"):
        sample_frames(media.long, FrameSpec(fps=0, decoder=decoder))
    with pytest.raises(SampleError, match="frames must be positive"):
        sample_frames(media.long, FrameSpec(frames=0, decoder=decoder))
