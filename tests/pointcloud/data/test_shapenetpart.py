"""pointcloud.data.shapenetpart on tiny files written here in the official ShapeNetPart layout
(text + split JSONs): the part ranges, values, categories, splits, subsampling, padding, caching,
and one clear error for a missing folder, a bad part id or a missing file (naming `attnbench-data
fetch shapenetpart`)."""

import numpy as np
import pytest

from attnbench import errors
from pointcloud.data import shapenetpart
from tests.pointcloud.data.layouts import (
    SHAPENET_FILES,
    SHAPENET_SPLITS,
    SYNSET,
    grid_cloud,
    normalise_by_hand,
    write_shapenet,
)


def test_shapenet_part_ranges_are_yanx27s():
    ranges = {"Airplane": (0, 3), "Bag": (4, 5), "Cap": (6, 7), "Car": (8, 11), "Chair": (12, 15),
              "Earphone": (16, 18), "Guitar": (19, 21), "Knife": (22, 23), "Lamp": (24, 27),
              "Laptop": (28, 29), "Motorbike": (30, 35), "Mug": (36, 37), "Pistol": (38, 40),
              "Rocket": (41, 43), "Skateboard": (44, 46), "Table": (47, 49)}  # fmt: skip
    assert list(shapenetpart.SHAPENET_CATEGORIES) == sorted(ranges)
    pairs = zip(shapenetpart.SHAPENET_CATEGORIES, shapenetpart.SHAPENET_PARTS_PER_CATEGORY,
                strict=True)  # fmt: skip
    for cat, parts in pairs:
        assert parts == list(range(ranges[cat][0], ranges[cat][1] + 1))


def test_shapenet_subsampled_splits_and_categories(tmp_path):
    write_shapenet(tmp_path, SHAPENET_FILES, SHAPENET_SPLITS)
    splits, desc = shapenetpart.load_shapenetpart(tmp_path, num_points=4, cache_dir=tmp_path / "c")
    assert desc["sizes"] == {"train": 3, "val": 1, "test": 1}
    assert desc["parts_per_category"] == shapenetpart.SHAPENET_PARTS_PER_CATEGORY
    want = [("Airplane", "a1"), ("Airplane", "a2"), ("Mug", "m1")]  # category, then id
    for i, key in enumerate(want):
        example = splits["train"][i]
        cloud, part = SHAPENET_FILES[key]
        assert int(example["category"]) == shapenetpart.SHAPENET_CATEGORIES.index(key[0])
        assert example["points"].shape == (4, 6) and (example["point_mask"] == 1).all()
        full = np.concatenate([normalise_by_hand(cloud[:, :3]), cloud[:, 3:]], axis=1)
        for point, p in zip(example["points"], example["part"], strict=True):
            match = np.flatnonzero(np.abs(full - point).max(1) < 1e-6)
            assert len(match) >= 1 and any(part[m] == p for m in match)
    assert int(splits["val"][0]["category"]) == 11  # Mug, whatever the map file's order
    lazy, _ = shapenetpart.load_shapenetpart(tmp_path, num_points=4, cache=False)
    np.testing.assert_array_equal(lazy["train"][2]["points"], splits["train"][2]["points"])


def test_shapenet_padding_and_mask(tmp_path):
    write_shapenet(tmp_path, SHAPENET_FILES, SHAPENET_SPLITS)
    splits, _ = shapenetpart.load_shapenetpart(tmp_path, num_points=8, cache=False)
    example = splits["test"][0]  # a2
    cloud, part = SHAPENET_FILES[("Airplane", "a2")]
    np.testing.assert_array_equal(example["point_mask"], [1] * 5 + [0] * 3)
    np.testing.assert_allclose(example["points"][:5, :3], normalise_by_hand(cloud[:, :3]),
                               atol=1e-6)  # fmt: skip
    np.testing.assert_array_equal(example["points"][5:], 0)
    np.testing.assert_array_equal(example["part"], part + [0, 0, 0])


def test_shapenet_bad_part_and_missing_file(tmp_path):
    files = dict(SHAPENET_FILES)
    files[("Airplane", "a1")] = (grid_cloud(10, 5), [0, 36, 1, 3, 2])  # a Mug part
    folder = write_shapenet(tmp_path, files, SHAPENET_SPLITS)
    with pytest.raises(errors.DataError, match=r"a1\.txt:2: part id 36 is not one of \[0, 1"):
        shapenetpart.load_shapenetpart(tmp_path, num_points=4, cache_dir=tmp_path / "c")
    (folder / SYNSET["Mug"] / "m2.txt").unlink()
    with pytest.raises(
        errors.DataError,
        match=r"shuffled_val_file_list\.json: entry 0 .*m2\.txt not found; the release in .* is "
        r"incomplete: .*`attnbench-data fetch shapenetpart --dir ",
    ):
        shapenetpart.load_shapenetpart(tmp_path, cache=False)


def test_shapenet_missing_folder_names_it(tmp_path):
    with pytest.raises(errors.DataError) as e:
        shapenetpart.load_shapenetpart(tmp_path)
    assert str(tmp_path) in str(e.value) and "synsetoffset2category.txt" in str(e.value)
    assert "shapenetcore_partanno_segmentation_benchmark_v0_normal.zip" in str(e.value)
    assert f"`attnbench-data fetch shapenetpart --dir {tmp_path.resolve()}`" in str(e.value)


def test_shapenet_not_found_in_the_data_root_names_the_fetch_command(tmp_path, monkeypatch):
    """config.data.dir empty: one line naming the marker file, the data root's own folders
    (not "/"), `attnbench-data fetch shapenetpart` and where it puts the release,
    config.data.dir and the stand-in; a file the split lists name, missing, names the command
    too."""
    root = (tmp_path / "root").resolve()
    monkeypatch.setenv("ATTNBENCH_DATA", str(root))
    release = root / "shapenetcore_partanno_segmentation_benchmark_v0_normal"
    with pytest.raises(errors.DataError) as e:
        shapenetpart.load_shapenetpart("")
    msg = str(e.value)
    assert "\n" not in msg
    assert f"no synsetoffset2category.txt in {root}, {release};" in msg
    url = shapenetpart.SHAPENET_URL
    assert f"`attnbench-data fetch shapenetpart` (from {url}, into {release})" in msg
    assert "or set config.data.dir to the folder holding it" in msg
    assert "config.data.source='standin'" in msg
    assert "into /" not in msg.replace(str(root), "<root>")  # no folder but the data root's
    write_shapenet(root, SHAPENET_FILES, SHAPENET_SPLITS)
    (release / "train_test_split" / "shuffled_test_file_list.json").unlink()
    with pytest.raises(errors.DataError) as e:
        shapenetpart.load_shapenetpart("", cache=False)
    msg = str(e.value)
    assert "\n" not in msg and "shuffled_test_file_list.json: file not found" in msg
    assert f"the release in {release} is incomplete" in msg
    assert f"(`attnbench-data fetch shapenetpart` fetches one into {release})" in msg
