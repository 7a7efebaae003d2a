"""Tests of lra/data/pathfinder_release.py: the official release's writer, reader and splits."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from attnbench.data import cache
from lra.data import pathfinder_release


def _images(n, size=32, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, size, size), dtype=np.uint8)


def test_official_roundtrip_order_and_splits(tmp_path):
    images, labels = _images(20), np.arange(20) % 2
    pattern = "curv_contour_length_14"
    base = pathfinder_release.write_official(tmp_path, pattern, images, labels, images_per_file=3)
    assert base == tmp_path / pattern
    meta = sorted(p.name for p in (base / "metadata").iterdir())
    assert meta == [f"{i}.npy" for i in range(7)]
    line = (base / "metadata" / "0.npy").read_text().splitlines()[1]
    assert line == "imgs/0 sample_1.png 1 1"
    data = pathfinder_release.read_official(tmp_path, pattern)
    assert data["num_records"] == 20 and data["empty"] == []
    assert np.array_equal(data["images"], images) and np.array_equal(data["label"], labels)
    splits = pathfinder_release.official_splits(data)
    assert [len(splits[k]["label"]) for k in ("train", "val", "test")] == [16, 2, 2]
    assert np.array_equal(splits["val"]["images"], images[16:18])
    assert np.array_equal(splits["test"]["label"], labels[18:])


def test_official_natural_file_order_and_extra_fields(tmp_path):
    base = tmp_path / "curv_baseline"
    (base / "metadata").mkdir(parents=True)
    (base / "imgs").mkdir()
    images = _images(3)
    for i, name in enumerate(["a.png", "b.png", "c.png"]):
        Image.fromarray(images[i]).save(base / "imgs" / name)
    # Written in the order 10, 2, 1: read as 1, 2, 10. Extra fields are ignored.
    (base / "metadata" / "10.npy").write_text("imgs c.png 0 0 extra fields\n")
    (base / "metadata" / "2.npy").write_text("imgs b.png 0 1 14\n")
    (base / "metadata" / "1.npy").write_text("imgs a.png 0 0 14\n")
    data = pathfinder_release.read_official(tmp_path, "curv_baseline")
    assert np.array_equal(data["images"], images)
    assert data["label"].tolist() == [0, 1, 0]


def test_official_empty_images_skipped_after_split(tmp_path):
    images, labels = _images(10), np.array([1, 0] * 5)
    base = pathfinder_release.write_official(tmp_path, "curv_baseline", images, labels)
    (base / "imgs" / "0" / "sample_3.png").write_bytes(b"")  # train
    (base / "imgs" / "0" / "sample_9.png").write_bytes(b"")  # test
    data = pathfinder_release.read_official(tmp_path, "curv_baseline")
    assert data["num_records"] == 10
    assert data["empty"] == ["imgs/0/sample_3.png", "imgs/0/sample_9.png"]
    splits = pathfinder_release.official_splits(data)
    # Boundaries over all 10 records (8 / 1 / 1), then the empty ones dropped.
    assert np.array_equal(splits["train"]["images"], images[[0, 1, 2, 4, 5, 6, 7]])
    assert np.array_equal(splits["val"]["images"], images[[8]])
    assert len(splits["test"]["label"]) == 0


def test_official_errors(tmp_path):
    with pytest.raises(cache.DataError, match="release folder not found"):
        pathfinder_release.read_official(tmp_path / "nope", "curv_baseline")
    pathfinder_release.write_official(tmp_path, "curv_baseline", _images(4), [0, 1, 0, 1])
    with pytest.raises(cache.DataError, match=r"curv_contour_length_14: .*curv_baseline"):
        pathfinder_release.read_official(tmp_path, "curv_contour_length_14")  # lists what was found
    (tmp_path / "curv_contour_length_9" / "metadata").mkdir(parents=True)
    with pytest.raises(cache.DataError, match=r"metadata: no metadata/\*\.npy"):
        pathfinder_release.read_official(tmp_path, "curv_contour_length_9")

    meta = tmp_path / "curv_baseline" / "metadata" / "0.npy"
    good = meta.read_text()
    meta.write_text(good + "imgs/0 sample_9.png 9\n")
    with pytest.raises(cache.DataError, match=rf"{meta}:5: expected at least 4"):
        pathfinder_release.read_official(tmp_path, "curv_baseline")
    meta.write_text(good.replace("sample_2.png 2 0", "sample_2.png 2 7"))
    with pytest.raises(cache.DataError, match=rf"{meta}:3: label '7' is not 0 or 1"):
        pathfinder_release.read_official(tmp_path, "curv_baseline")
    meta.write_text(good + "imgs/0 sample_9.png 9 1\n")
    missing = tmp_path / "curv_baseline" / "imgs" / "0" / "sample_9.png"
    with pytest.raises(cache.DataError, match=rf"{missing}: image file not found .*0.npy:5"):
        pathfinder_release.read_official(tmp_path, "curv_baseline")
    meta.write_text(good)
    png = tmp_path / "curv_baseline" / "imgs" / "0" / "sample_1.png"
    png.write_bytes(b"not a png at all")
    with pytest.raises(cache.DataError, match=rf"{png}: cannot decode"):
        pathfinder_release.read_official(tmp_path, "curv_baseline")
    Image.fromarray(_images(1, size=31)[0]).save(png)
    with pytest.raises(cache.DataError, match=rf"{png}: image is 31x31, expected 32x32"):
        pathfinder_release.read_official(tmp_path, "curv_baseline")
    # An RGB PNG is read as grayscale (PIL luma), like tf.io.decode_png(channels=1).
    Image.fromarray(np.full((32, 32, 3), 200, np.uint8)).save(png)
    data = pathfinder_release.read_official(tmp_path, "curv_baseline")
    assert (data["images"][1] == 200).all()
