"""The `modelnet` fixture of the reader tests: a tiny `modelnet40_normal_resampled` folder."""

import pytest

from tests.pointcloud.data.layouts import CLOUDS, NAMES, write_modelnet_text


@pytest.fixture
def modelnet(tmp_path):
    return write_modelnet_text(
        tmp_path, CLOUDS, ["airplane_0001", "night_stand_0001", "table_0002"],
        ["night_stand_0003"], NAMES,
    )  # fmt: skip
