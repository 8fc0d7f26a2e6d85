"""Long-video chunks: bounds, and each chunk part sampled by the
materialiser (the path a driver's chunk turns take)."""
import pytest

from avhb.errors import SampleError
from avhb.media import chunk_bounds
from avhb.media.materialize import MediaPlan, materialize
from avhb.media.spec import MediaSpec
from avhb.model.backend import Capabilities
from avhb.model.messages import Message, Request, TextPart, VideoPart

CAPS = Capabilities(images=8, video=True, audio=True, max_context=1 << 20)


def test_bounds():
    assert chunk_bounds(40, 15) == [(0, 15), (15, 30), (30, 40)]
    assert chunk_bounds(300, 120) == [(0, 120), (120, 240), (240, 300)]
    assert chunk_bounds(120, 120) == [(0, 120)]
    assert chunk_bounds(5, 120) == [(0, 5)]
    with pytest.raises(ValueError):
        chunk_bounds(10, 0)


def sample_chunk(path, segment, sampling, decoder="auto"):
    part = VideoPart(path=path, segment=segment, sampling=sampling)
    request = Request([Message("user", [part, TextPart("notes?")])])
    log = materialize(request, MediaPlan(MediaSpec(decoder=decoder)), CAPS)
    return part, log


@pytest.mark.parametrize("decoder", ["pyav", "decord"])
def test_chunks_cover_the_video(media, decode_index, decoder):
    sampling = {"fps": 0.2, "width": 64, "height": 48}
    parts = [sample_chunk(media.long, seg, sampling, decoder)[0] for seg in chunk_bounds(40, 15)]
    # 0.2 fps: times 0, 5, 10 | 15, 20, 25 | 30, 35 -> frames at 30 fps
    assert [p.frame_indices for p in parts] == [[0, 150, 300], [450, 600, 750], [900, 1050]]
    assert parts[1].timestamps == [15.0, 20.0, 25.0]
    for p in parts:
        assert [decode_index(f) for f in p.frames] == p.frame_indices
        assert all(f.shape == (48, 64, 3) for f in p.frames)


def test_chunk_source_size_kept_without_width(media):
    part, log = sample_chunk(media.long, (0, 10), {"fps": 1})
    assert part.frame_indices == [30 * k for k in range(10)] and part.frames[0].shape == (120, 160, 3)
    assert log["video"]["segment"] == [0, 10]


def test_chunks_bad_file(media):
    with pytest.raises(SampleError, match="file not found"):
        sample_chunk(media.missing, (0, 10), {"fps": 0.5})
    with pytest.raises(SampleError, match="fps must be > 0"):
        sample_chunk(media.long, (0, 10), {"fps": 0})
