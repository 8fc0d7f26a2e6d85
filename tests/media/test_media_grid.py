import numpy as np
import pytest

from avhb.media import grid_shape, make_grid


def test_grid_shape():
    assert grid_shape(4) == (2, 2) and grid_shape(16) == (4, 4)
    assert grid_shape(1) == (1, 1) and grid_shape(5) == (2, 3) and grid_shape(10) == (3, 4)
    with pytest.raises(ValueError):
        grid_shape(0)


def solid(color, w=100, h=80):
    a = np.zeros((h, w, 3), np.uint8)
    a[:] = color
    return a


def test_2x2_places_tiles_and_labels():
    colors = [(200, 0, 0), (0, 200, 0), (0, 0, 200), (200, 200, 200)]
    g = make_grid([solid(c) for c in colors], indices=[7, 8, 9, 10])
    assert g.shape == (160, 200, 3)
    for i, c in enumerate(colors):
        r, col = divmod(i, 2)
        assert tuple(g[r * 80 + 60, col * 100 + 80]) == c  # tile interior
        corner = g[r * 80: r * 80 + 15, col * 100: col * 100 + 30]
        assert ((corner[..., 0] > 180) & (corner[..., 1] > 180) & (corner[..., 2] < 90)).any()  # yellow text


def test_labels_differ_by_index():
    imgs = [solid((90, 90, 90)) for _ in range(4)]
    a = make_grid(imgs, indices=[1, 2, 3, 4])
    b = make_grid(imgs, indices=[1, 2, 3, 7])
    diff = np.argwhere((a != b).any(axis=2))
    assert len(diff) and diff[:, 0].min() >= 80 and diff[:, 1].min() >= 100  # only tile 4's label


def test_4x4_with_mixed_sizes_fits_each_tile():
    imgs = [solid((10 * i, 0, 0), w=64 + 8 * (i % 3), h=48) for i in range(16)]
    g = make_grid(imgs, tile_size=(64, 48))
    assert g.shape == (4 * 48, 4 * 64, 3)
    with pytest.raises(ValueError):
        make_grid(imgs, indices=[1, 2])
