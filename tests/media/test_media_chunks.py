import types

import pytest

from avhb.errors import SampleError
from avhb.media import iter_chunks


@pytest.mark.parametrize("decoder", ["pyav", "decord"])
def test_chunks_cover_the_video(media, decode_index, decoder):
    chunks = list(iter_chunks(media.long, seconds=15, fps=0.2, size=(64, 48), decoder=decoder))
    assert [(c.start, c.end) for c in chunks] == [(0, 15), (15, 30), (30, 40.0)]
    # 0.2 fps: times 0, 5, 10 | 15, 20, 25 | 30, 35 -> frames at 30 fps
    assert [c.indices for c in chunks] == [[0, 150, 300], [450, 600, 750], [900, 1050]]
    assert chunks[1].timestamps == [15.0, 20.0, 25.0]
    for c in chunks:
        assert [decode_index(f) for f in c.frames] == c.indices
        assert all(f.shape == (48, 64, 3) for f in c.frames)


def test_chunks_are_lazy(media):
    it = iter_chunks(media.long, seconds=10, fps=1, size=None)
    assert isinstance(it, types.GeneratorType)
    first = next(it)
    assert first.indices == [30 * k for k in range(10)] and first.frames[0].shape == (120, 160, 3)
    it.close()


def test_chunks_bad_file(media):
    with pytest.raises(SampleError, match="file not found"):
        next(iter_chunks(media.missing))
    with pytest.raises(SampleError, match="fps must be > 0"):
        next(iter_chunks(media.long, fps=0))
