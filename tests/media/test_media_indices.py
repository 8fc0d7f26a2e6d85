"""Frame index rules, pinned on hand-computed cases."""
import pytest

from avhb.media.indices import (SelectionError, fps_indices, segment_range, select_indices,
                                uniform_indices)


def test_uniform_bin_centres():
    # M=100, N=4: floor((k+.5)*25) = 12, 37, 62, 87
    assert uniform_indices(0, 100, 4) == [12, 37, 62, 87]
    # M=10, N=3: floor(1.666..), floor(5), floor(8.333) = 1, 5, 8
    assert uniform_indices(0, 10, 3) == [1, 5, 8]
    assert uniform_indices(20, 30, 3) == [21, 25, 28]
    assert uniform_indices(0, 100, 1) == [50]


def test_uniform_include_last_is_inclusive_linspace():
    # floor(k*99/3 + .5) = 0, 33, 66, 99
    assert uniform_indices(0, 100, 4, include_last=True) == [0, 33, 66, 99]
    # M=10, N=4: k*3 -> 0, 3, 6, 9
    assert uniform_indices(0, 10, 4, include_last=True) == [0, 3, 6, 9]
    # M=8, N=3: k*3.5 + .5 -> 0, 4, 7
    assert uniform_indices(0, 8, 3, include_last=True) == [0, 4, 7]
    assert uniform_indices(0, 100, 1, include_last=True) == [50]


def test_uniform_more_than_available_takes_each_once():
    assert uniform_indices(5, 9, 10) == [5, 6, 7, 8]
    assert uniform_indices(5, 9, 4) == [5, 6, 7, 8]


def test_segment_range():
    # 25 fps: [1.0, 2.5) -> frames 25..62 -> [25, 63)
    assert segment_range(100, 25, (1.0, 2.5)) == (25, 63)
    # start between frames rounds up, end clipped to the video
    assert segment_range(100, 25, (1.01, 99)) == (26, 100)
    assert segment_range(100, 25, (-3, 0.05)) == (0, 2)
    assert segment_range(100, 25, None) == (0, 100)


@pytest.mark.parametrize("seg, msg", [((4.0, 5.0), "past the end"), ((9, 10), "past the end"),
                                      ((2.0, 2.0), "not after"), ((3.0, 1.0), "not after"),
                                      ((1.01, 1.02), "no frame")])
def test_segment_errors(seg, msg):
    with pytest.raises(SelectionError, match=msg):
        segment_range(100, 25, seg)


def test_fps_mode():
    # 25 fps source, 1 fps over 4 s: times 0,1,2,3 -> frames 0,25,50,75
    assert select_indices(100, 25, fps=1) == [0, 25, 50, 75]
    assert select_indices(100, 25, fps=1, include_last=True) == [0, 25, 50, 75, 99]
    # 30 fps source at 0.4 fps on [1.1, 6.5): times 1.1, 3.6, 6.1 -> 33, 108, 183
    assert select_indices(300, 30, fps=0.4, segment=(1.1, 6.5)) == [33, 108, 183]
    # above the source rate: every frame once
    assert select_indices(10, 25, fps=100) == list(range(10))
    # 2 fps x 4 s = 8 > max 3 -> uniform 3 over [0, 100)
    assert select_indices(100, 25, fps=2, max_frames=3) == [16, 50, 83]
    assert select_indices(100, 25, fps=2, max_frames=3, include_last=True) == [0, 50, 99]


def test_frames_capped_by_max_frames():
    assert select_indices(100, 25, frames=8, max_frames=2) == [25, 75]


def test_bad_numbers():
    with pytest.raises(SelectionError, match="fps must be > 0"):
        fps_indices(0, 10, 25, 0, 0, 1)
    with pytest.raises(SelectionError, match="positive"):
        uniform_indices(0, 10, 0)
    with pytest.raises(SelectionError, match="no frames"):
        select_indices(0, 25, frames=4)
