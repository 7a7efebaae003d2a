"""pointcloud.data.modelnet40 on tiny files written here in each official ModelNet layout
(ModelNet40 text with normals, ModelNet10, PointNet's HDF5): values, labels, splits, resampling,
caching (in worker processes too), and one clear error for a missing folder or file (naming
`attnbench-data fetch`), a corrupt line, a bad label or a missing h5py."""

import pickle
import sys

import numpy as np
import pytest

from attnbench import errors, extras
from pointcloud.data import modelnet40
from tests.pointcloud.data.layouts import (
    CLOUDS,
    NAMES,
    grid_cloud,
    normalise_by_hand,
    write_hdf5_release,
    write_modelnet_text,
)


def test_modelnet_text_first_points(modelnet, tmp_path):
    splits, desc = modelnet40.load_modelnet(tmp_path, num_points=4, sampling="first", cache=False)
    assert len(splits["train"]) == 3 and len(splits["test"]) == 1
    assert desc["class_names"] == NAMES and desc["num_classes"] == 3
    for i, (sid, label) in enumerate([("airplane_0001", 0), ("night_stand_0001", 1),
                                      ("table_0002", 2)]):  # fmt: skip
        example = splits["train"][i]
        assert int(example["label"]) == label and example["label"].dtype == np.int32
        np.testing.assert_allclose(example["points"][:, :3], normalise_by_hand(CLOUDS[sid][:4]),
                                   atol=1e-6)  # fmt: skip
        np.testing.assert_array_equal(example["points"][:, 3:], CLOUDS[sid][:4, 3:])
    assert int(splits["test"][0]["label"]) == 1


def test_modelnet_fps_by_hand(tmp_path):
    line = np.array([[x, 0, 0, 0, 0, 1] for x in (0, 1, 2, 3, 10)], float)
    write_modelnet_text(tmp_path, {"airplane_0001": line}, ["airplane_0001"], ["airplane_0001"],
                        ["airplane"])  # fmt: skip
    splits, _ = modelnet40.load_modelnet(tmp_path, num_points=3, cache=False)
    # FPS picks x = 0, 10, 3; centroid 13/3, offsets -13/3, 17/3, -4/3, largest 17/3.
    got = splits["train"][0]["points"]
    np.testing.assert_allclose(got[:, 0], [-13 / 17, 1, -4 / 17], rtol=1e-6)
    np.testing.assert_array_equal(got[:, 1:3], 0)


def test_modelnet_cache_reused_and_rebuilt_on_change(modelnet, tmp_path):
    cache_dir = tmp_path / "cache"
    lazy, _ = modelnet40.load_modelnet(tmp_path, num_points=4, cache=False)
    splits, desc = modelnet40.load_modelnet(tmp_path, num_points=4, cache_dir=cache_dir)
    assert desc["cache"].startswith(str(cache_dir / "pointcloud"))
    assert desc["points_per_file"]["train"] == {"min": 6, "mean": 6.0, "max": 6}
    for i in range(3):
        np.testing.assert_array_equal(splits["train"][i]["points"], lazy["train"][i]["points"])
    again, desc2 = modelnet40.load_modelnet(tmp_path, num_points=4, cache_dir=cache_dir)
    assert desc2["cache"] == desc["cache"]
    np.testing.assert_array_equal(again["test"].arrays["points"], splits["test"].arrays["points"])
    changed = CLOUDS["night_stand_0003"].copy()
    changed[:, :3] *= -1
    path = modelnet / "night_stand" / "night_stand_0003.txt"
    path.write_text("\n".join(",".join(f"{v:.6f}" for v in row) for row in changed) + "\n\n")
    rebuilt, desc3 = modelnet40.load_modelnet(tmp_path, num_points=4, cache_dir=cache_dir)
    assert desc3["cache"] != desc["cache"]
    np.testing.assert_allclose(
        rebuilt["test"][0]["points"][:, :3], -splits["test"][0]["points"][:, :3], atol=1e-6
    )


def test_modelnet10_variant(tmp_path):
    write_modelnet_text(tmp_path, {"table_0001": grid_cloud(5)}, ["table_0001"], ["table_0001"],
                        ["bed", "table"], prefix="modelnet10")  # fmt: skip
    splits, desc = modelnet40.load_modelnet(tmp_path, num_points=6, num_categories=10, cache=False)
    assert int(splits["train"][0]["label"]) == 1 and desc["data"].startswith("ModelNet10")


def test_modelnet_missing_folder_names_it(tmp_path):
    where = tmp_path / "nowhere"
    with pytest.raises(errors.DataError) as e:
        modelnet40.load_modelnet(where)
    msg = str(e.value)
    assert str(where) in msg and "modelnet40_normal_resampled.zip" in msg
    assert "modelnet40_shape_names.txt" in msg
    assert f"`attnbench-data fetch modelnet40 --dir {where.resolve()}`" in msg


@pytest.mark.parametrize(
    "layout, marker, name",
    [
        ("normal_resampled", "modelnet40_shape_names.txt", "modelnet40"),
        ("hdf5", "shape_names.txt", "modelnet40_hdf5"),
    ],
)
def test_modelnet_not_found_in_the_data_root_names_the_fetch_command(
    tmp_path, monkeypatch, layout, marker, name
):
    """config.data.dir empty: one line naming the marker file, the data root's own folders
    (not "/"), `attnbench-data fetch NAME` and where it puts the release (the catalog's
    folder), config.data.dir and the stand-in."""
    from attnbench.data import catalog

    assert modelnet40.MODELNET_CATALOG[layout] == (name, catalog.get(name).folder)
    root = (tmp_path / "root").resolve()
    monkeypatch.setenv("ATTNBENCH_DATA", str(root))
    with pytest.raises(errors.DataError) as e:
        modelnet40.load_modelnet("", layout=layout)
    msg = str(e.value)
    release = root / catalog.get(name).folder
    assert "\n" not in msg and f"no {marker} in {root}, {release}" in msg
    url = modelnet40.MODELNET40_URLS[layout]
    assert f"`attnbench-data fetch {name}` (from {url}, into {release})" in msg
    assert "or set config.data.dir to the folder holding it" in msg
    assert "config.data.source='standin'" in msg
    assert "into /" not in msg.replace(str(root), "<root>")  # no folder but the data root's


def test_modelnet_incomplete_release_names_the_fetch_command(modelnet, tmp_path):
    (modelnet / "modelnet40_test.txt").unlink()
    with pytest.raises(errors.DataError) as e:
        modelnet40.load_modelnet(tmp_path, cache=False)
    msg = str(e.value)
    assert "\n" not in msg and "modelnet40_test.txt: file not found (ModelNet test list)" in msg
    assert f"the release in {modelnet.resolve()} is incomplete" in msg
    assert f"`attnbench-data fetch modelnet40 --dir {tmp_path.resolve()}`" in msg
    (modelnet / "modelnet40_test.txt").write_text("night_stand_0003\n")
    (modelnet / "night_stand" / "night_stand_0003.txt").unlink()
    with pytest.raises(errors.DataError, match=r"modelnet40_test\.txt:1: .* not found; the rel"):
        modelnet40.load_modelnet(tmp_path, cache=False)


def test_modelnet_corrupt_line_names_file_and_line(modelnet, tmp_path):
    path = modelnet / "airplane" / "airplane_0001.txt"
    lines = path.read_text().splitlines()
    lines[2] = "1.0,2.0,abc,0,0,1"
    path.write_text("\n".join(lines) + "\n")
    lazy, _ = modelnet40.load_modelnet(tmp_path, num_points=4, cache=False)
    with pytest.raises(errors.DataError, match=r"airplane_0001\.txt:3: not a number"):
        lazy["train"][0]
    lines[2] = "1.0,2.0,3.0,0,0"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(errors.DataError, match=r"airplane_0001\.txt:3: 5 fields, expected 6"):
        modelnet40.load_modelnet(tmp_path, num_points=4, cache_dir=tmp_path / "c")


def test_empty_file_and_lazy_source_pickles(modelnet, tmp_path):
    lazy, _ = modelnet40.load_modelnet(tmp_path, num_points=4, cache=False)
    copy = pickle.loads(pickle.dumps(lazy["train"]))  # worker processes receive sources
    np.testing.assert_array_equal(copy[1]["points"], lazy["train"][1]["points"])
    (modelnet / "table" / "table_0002.txt").write_text("")
    with pytest.raises(errors.DataError, match=r"table_0002\.txt: no points"):
        lazy["train"][2]


def test_modelnet_unknown_class_in_list(modelnet, tmp_path):
    (modelnet / "modelnet40_test.txt").write_text("night_stand_0003\nsofa_0001\n")
    with pytest.raises(errors.DataError, match=r"modelnet40_test\.txt:2: shape id 'sofa_0001'"):
        modelnet40.load_modelnet(tmp_path, cache=False)


def test_hdf5_release_with_normals(tmp_path):
    folder, clouds = write_hdf5_release(tmp_path)
    splits, desc = modelnet40.load_modelnet(tmp_path, layout="hdf5", num_points=8,
                                          sampling="first", cache_dir=tmp_path / "c")  # fmt: skip
    assert desc["sizes"] == {"train": 3, "test": 2} and desc["normals"] == "from the files"
    order = [("train0", 0), ("train0", 1), ("train1", 0)]
    for i, (name, row) in enumerate(order):
        xyz, nrm, labels = clouds[name]
        example = splits["train"][i]
        assert int(example["label"]) == labels[row]
        np.testing.assert_allclose(example["points"][:, :3], normalise_by_hand(xyz[row]),
                                   atol=1e-6)  # fmt: skip
        np.testing.assert_allclose(example["points"][:, 3:], nrm[row], atol=1e-7)
    fps, _ = modelnet40.load_modelnet(tmp_path, layout="hdf5", num_points=4, cache=False)
    assert fps["test"][1]["points"].shape == (4, 6)


def test_hdf5_without_normals(tmp_path):
    write_hdf5_release(tmp_path, with_normal=False)
    with pytest.raises(errors.DataError, match=r"ply_data_train0\.h5: no 'normal'.*normals=False"):
        modelnet40.load_modelnet(tmp_path, layout="hdf5", num_points=8)
    splits, desc = modelnet40.load_modelnet(tmp_path, layout="hdf5", num_points=8, normals=False,
                                          cache=False)  # fmt: skip
    np.testing.assert_array_equal(splits["train"][0]["points"][:, 3:], 0)
    assert "zeros" in desc["normals"]


def test_hdf5_needs_h5py_message(tmp_path, monkeypatch):
    write_hdf5_release(tmp_path)
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(extras.MissingExtraError, match=r"pip install 'attnbench\[pointcloud\]'"):
        modelnet40.load_modelnet(tmp_path, layout="hdf5")


@pytest.mark.slow
def test_conversion_in_worker_processes_equals_in_process(tmp_path):
    clouds = {f"airplane_{i:04d}": grid_cloud(i, 12) for i in range(140)}
    write_modelnet_text(tmp_path, clouds, list(clouds), ["airplane_0000"], ["airplane"])
    one, _ = modelnet40.load_modelnet(tmp_path, num_points=8, cache_dir=tmp_path / "a", workers=1)
    two, _ = modelnet40.load_modelnet(tmp_path, num_points=8, cache_dir=tmp_path / "b", workers=2)
    np.testing.assert_array_equal(one["train"].arrays["points"], two["train"].arrays["points"])
    np.testing.assert_array_equal(two["train"].arrays["label"], 0)


def _rewrite(path, **datasets):
    """Replace datasets of an HDF5 file: a value of None makes the key a group instead."""
    import h5py

    with h5py.File(path, "a") as f:
        for key, value in datasets.items():
            del f[key]
            if value is None:
                f.create_group(key).create_dataset("x", data=np.zeros(2))
            else:
                f[key] = value


@pytest.mark.parametrize("key", ["data", "label", "normal"])
def test_hdf5_group_instead_of_dataset_names_file_and_key(tmp_path, key):
    folder, _ = write_hdf5_release(tmp_path)
    _rewrite(folder / "ply_data_train1.h5", **{key: None})
    with pytest.raises(errors.DataError, match=rf"ply_data_train1\.h5: '{key}' is an HDF5 group"):
        modelnet40.load_modelnet(tmp_path, layout="hdf5", num_points=8, cache=False)


@pytest.mark.parametrize(
    "labels,expected",
    [
        (
            np.array([[3]], np.uint8),
            r"label\[0\] = 3 is outside 0\.\.2 \(the 3 classes of shape_names",
        ),
        (np.array([[-1]], np.int8), r"label\[0\] = -1 is outside 0\.\.2"),
        (np.array([[1.5]], np.float32), r"label\[0\] = 1\.5 is not a class index"),
        (np.array([[b"a"]]), r"dataset 'label' \(one class per cloud\) has dtype \|S1"),
    ],
)
def test_hdf5_bad_labels_name_the_file(tmp_path, labels, expected):
    folder, _ = write_hdf5_release(tmp_path)
    _rewrite(folder / "ply_data_train1.h5", label=labels)
    with pytest.raises(errors.DataError, match=r"ply_data_train1\.h5: " + expected):
        modelnet40.load_modelnet(tmp_path, layout="hdf5", num_points=8, cache=False)


def test_hdf5_bad_shapes_name_the_file(tmp_path):
    folder, _ = write_hdf5_release(tmp_path)
    path = folder / "ply_data_test0.h5"
    _rewrite(path, data=np.zeros((2, 8, 2), np.float32), normal=np.zeros((2, 8, 2), np.float32))
    with pytest.raises(
        errors.DataError, match=r"ply_data_test0\.h5: 'data' must be \[n, points, 3\]"
    ):
        modelnet40.load_modelnet(tmp_path, layout="hdf5", num_points=8, cache=False)
    _rewrite(path, data=np.zeros((2, 0, 3), np.float32), normal=np.zeros((2, 0, 3), np.float32))
    with pytest.raises(errors.DataError, match=r"ply_data_test0\.h5: 'data' has shape \(2, 0, 3\)"):
        modelnet40.load_modelnet(tmp_path, layout="hdf5", num_points=8, cache=False)
    _rewrite(path, normal=np.zeros((2, 8, 3), np.float32))
    with pytest.raises(errors.DataError, match=r"ply_data_test0\.h5: 'normal' has shape"):
        modelnet40.load_modelnet(tmp_path, layout="hdf5", num_points=8, cache=False)
