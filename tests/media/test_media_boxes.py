import numpy as np
import pytest

from avhb.media import Box, boxes_for_indices, draw_boxes, sample_frames, FrameSpec
from avhb.media.boxes import nearest_key


def test_nearest_key():
    keys = [0, 3, 6, 9]
    assert [nearest_key(keys, i) for i in range(11)] == [0, 0, 3, 3, 3, 6, 6, 6, 9, 9, 9]
    assert nearest_key(keys, 30, max_distance=5) is None
    assert nearest_key([], 3) is None


def test_boxes_for_indices_with_string_keys_and_key_fps():
    ann = {"0": [{"x": 1, "y": 2, "width": 3, "height": 4, "label": "a"}],
           "10": [{"x": 5, "y": 5, "width": 5, "height": 5, "label": "b"}]}
    got = boxes_for_indices(ann, [0, 4, 6, 100])
    assert [[b.label for b in bs] for bs in got] == [["a"], ["a"], ["b"], ["b"]]
    # keys on a 10 Hz grid for a 30 fps video: key 10 = 1.0 s = frame 30
    got = boxes_for_indices(ann, [14, 16, 29], source_fps=30, key_fps=10)
    assert [[b.label for b in bs] for bs in got] == [["a"], ["b"], ["b"]]
    assert boxes_for_indices(ann, [100], max_distance=20) == [[]]


def test_boxes_drawn_around_the_moving_square(media, fixtures_module):
    size = (160, 120)
    idx_keys = range(0, 1200, 3)  # annotated every 3rd frame (10 Hz at 30 fps)
    ann = {str(k): [Box(*fixtures_module.shape_box(k, size), label="sq", color="#00FF00")]
           for k in idx_keys}
    s = sample_frames(media.long, FrameSpec(frames=4, max_side=320))  # no-op resize
    s2 = sample_frames(media.long, FrameSpec(frames=4, max_side=80))  # half size
    for sample, scale in ((s, 1.0), (s2, 0.5)):
        out = draw_boxes(sample.frames, sample.indices, ann, source_size=size)
        for frame, drawn, idx in zip(sample.frames, out, sample.indices):
            assert drawn is not frame
            k = min(idx_keys, key=lambda k: (abs(k - idx), k))
            x, y, w, h = (v * scale for v in fixtures_module.shape_box(k, size))
            # the outline's left edge is green, just inside the box
            px = drawn[int(y + h / 2), int(x)]
            assert px[1] > 200 and px[0] < 60, px
            # the inside of the box is untouched (still red)
            assert (drawn[int(y + h / 2), int(x + w / 2)] == frame[int(y + h / 2), int(x + w / 2)]).all()
            # label background above the box
            assert drawn[int(y) - 3, int(x) + 2][1] > 200


def test_frames_without_boxes_unchanged():
    frame = np.zeros((20, 20, 3), np.uint8)
    out = draw_boxes([frame], [5], {"100": [Box(1, 1, 5, 5)]}, max_distance=10)
    assert out[0] is frame
    with pytest.raises(ValueError):
        draw_boxes([frame], [1, 2], {})
