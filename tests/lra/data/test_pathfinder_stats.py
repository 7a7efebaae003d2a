"""Tests of lra/data/pathfinder_stats.py: its helpers on hand-made images (its statistics of
generated images are tested in test_pathfinder_generator.py)."""

from __future__ import annotations

import numpy as np

from lra.data import pathfinder_stats as stats


def test_statistics_helpers():
    # Connected components and the solver on hand-made images.
    mask = np.zeros((2, 5, 5), bool)
    mask[0, 0, 0] = mask[0, 1, 1] = mask[0, 3, 3] = True  # diagonal neighbours join
    mask[1, :, 2] = True
    assert stats.count_components(mask).tolist() == [2, 1]
    images = (mask * 100).astype(np.uint8)
    joined = np.array([[[0, 0], [1, 1]], [[0, 2], [4, 2]]])
    apart = np.array([[[0, 0], [3, 3]], [[0, 2], [0, 0]]])
    assert stats.flood_fill_predict(images, joined).tolist() == [1, 1]
    assert stats.flood_fill_predict(images, apart).tolist() == [0, 0]
    assert stats.flood_fill_predict(images, joined, threshold=100).tolist() == [0, 0]
    table = stats.stats_table(stats.ORIGINAL_RERUN | {"images_per_s": 1.0})
    assert table.count("\n") == 2 + 9 and "0.48" in table and "239" in table
