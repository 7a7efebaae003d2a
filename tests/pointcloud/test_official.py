"""pointcloud.official and pointcloud.data on tiny files written here in each official layout
(ModelNet40 text with normals, ModelNet10, PointNet's HDF5, ShapeNetPart text + split JSONs):
values, labels, categories, splits, resampling, caching, and one clear error for a missing
folder, a corrupt line, a bad label or a missing h5py."""

import json
import pickle
import sys

import h5py
import ml_collections
import numpy as np
import pytest

from attnbench import errors, extras
from pointcloud import data, official


def normalise_by_hand(xyz):
    """Centroid and largest norm with explicit float64 loops."""
    xyz = [[float(v) for v in row] for row in xyz]
    n = len(xyz)
    c = [sum(row[k] for row in xyz) / n for k in range(3)]
    off = [[row[k] - c[k] for k in range(3)] for row in xyz]
    scale = max(sum(v * v for v in row) ** 0.5 for row in off)
    return np.array([[v / scale for v in row] for row in off])


# ----------------------------------------------------------------------------- writers


def write_modelnet_text(root, clouds, train, test, names, prefix="modelnet40"):
    """PointNet++'s layout: names / split lists, `<class>/<id>.txt` with `x,y,z,nx,ny,nz`."""
    folder = root / "modelnet40_normal_resampled"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{prefix}_shape_names.txt").write_text("\n".join(names) + "\n")
    (folder / f"{prefix}_train.txt").write_text("\n".join(train) + "\n")
    (folder / f"{prefix}_test.txt").write_text("\n".join(test) + "\n")
    for shape_id, cloud in clouds.items():
        cls = shape_id.rsplit("_", 1)[0]
        (folder / cls).mkdir(exist_ok=True)
        lines = [",".join(f"{v:.6f}" for v in row) for row in cloud]
        (folder / cls / f"{shape_id}.txt").write_text("\n".join(lines) + "\n")
    return folder


def grid_cloud(seed, n=6):
    """Points on a 0.25 grid (exact in decimal) with unit normals along an axis."""
    rng = np.random.default_rng(seed)
    xyz = rng.integers(-8, 9, size=(n, 3)) / 4
    nrm = np.eye(3)[rng.integers(0, 3, n)] * rng.choice([-1, 1], size=(n, 1))
    return np.concatenate([xyz, nrm], axis=1)


NAMES = ["airplane", "night_stand", "table"]
CLOUDS = {
    "airplane_0001": grid_cloud(0),
    "night_stand_0001": grid_cloud(1),
    "table_0002": grid_cloud(2),
    "night_stand_0003": grid_cloud(3),
}


@pytest.fixture
def modelnet(tmp_path):
    return write_modelnet_text(
        tmp_path, CLOUDS, ["airplane_0001", "night_stand_0001", "table_0002"],
        ["night_stand_0003"], NAMES,
    )  # fmt: skip


def write_h5(path, xyz, labels, normal=None):
    with h5py.File(path, "w") as f:
        f["data"] = np.asarray(xyz, np.float32)
        f["label"] = np.asarray(labels, np.uint8).reshape(-1, 1)
        if normal is not None:
            f["normal"] = np.asarray(normal, np.float32)


def write_hdf5_release(root, with_normal=True):
    """PointNet's layout: shape_names.txt, {train,test}_files.txt with the repo prefix."""
    folder = root / "modelnet40_ply_hdf5_2048"
    folder.mkdir(parents=True)
    (folder / "shape_names.txt").write_text("\n".join(NAMES) + "\n")
    rng = np.random.default_rng(0)
    clouds = {}
    for name, n, labels in (("train0", 2, [2, 0]), ("train1", 1, [1]), ("test0", 2, [1, 1])):
        xyz, nrm = rng.normal(size=(n, 8, 3)), rng.normal(size=(n, 8, 3))
        nrm /= np.linalg.norm(nrm, axis=-1, keepdims=True)
        write_h5(folder / f"ply_data_{name}.h5", xyz, labels, nrm if with_normal else None)
        clouds[name] = (xyz, nrm, labels)
    prefix = "data/modelnet40_ply_hdf5_2048/"
    (folder / "train_files.txt").write_text(
        f"{prefix}ply_data_train0.h5\n{prefix}ply_data_train1.h5\n"
    )
    (folder / "test_files.txt").write_text(f"{prefix}ply_data_test0.h5\n")
    return folder, clouds


SYNSET = {"Airplane": "02691156", "Mug": "03797390"}


def write_shapenet(root, files, splits):
    """ShapeNetPart's layout: the category map (here in reverse order), `<synset>/<id>.txt`
    with `x y z nx ny nz part` and the split JSONs of `shape_data/<synset>/<id>`."""
    folder = root / "shapenetcore_partanno_segmentation_benchmark_v0_normal"
    (folder / "train_test_split").mkdir(parents=True)
    (folder / "synsetoffset2category.txt").write_text("Mug\t03797390\nAirplane\t02691156\n")
    for (cat, shape_id), (cloud, part) in files.items():
        (folder / SYNSET[cat]).mkdir(exist_ok=True)
        lines = [
            " ".join(f"{v:.6f}" for v in row) + f" {p:.6f}"
            for row, p in zip(cloud, part, strict=True)
        ]
        (folder / SYNSET[cat] / f"{shape_id}.txt").write_text("\n".join(lines) + "\n")
    for split, entries in splits.items():
        names = [f"shape_data/{SYNSET[c]}/{i}" for c, i in entries]
        (folder / "train_test_split" / f"shuffled_{split}_file_list.json").write_text(
            json.dumps(names)
        )
    return folder


SHAPENET_FILES = {
    ("Airplane", "a1"): (grid_cloud(10, 5), [0, 1, 1, 3, 2]),
    ("Airplane", "a2"): (grid_cloud(11, 5), [0, 0, 1, 1, 2]),
    ("Mug", "m1"): (grid_cloud(12, 5), [36, 37, 36, 36, 37]),
    ("Mug", "m2"): (grid_cloud(13, 5), [36, 36, 37, 36, 36]),
}
SHAPENET_SPLITS = {
    "train": [("Mug", "m1"), ("Airplane", "a2"), ("Airplane", "a1")],
    "val": [("Mug", "m2")],
    "test": [("Airplane", "a2")],
}


# ----------------------------------------------------------------------------- ModelNet


def test_modelnet_text_first_points(modelnet, tmp_path):
    splits, desc = official.load_modelnet(tmp_path, num_points=4, sampling="first", cache=False)
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
    splits, _ = official.load_modelnet(tmp_path, num_points=3, cache=False)
    # FPS picks x = 0, 10, 3; centroid 13/3, offsets -13/3, 17/3, -4/3, largest 17/3.
    got = splits["train"][0]["points"]
    np.testing.assert_allclose(got[:, 0], [-13 / 17, 1, -4 / 17], rtol=1e-6)
    np.testing.assert_array_equal(got[:, 1:3], 0)


def test_modelnet_cache_reused_and_rebuilt_on_change(modelnet, tmp_path):
    cache_dir = tmp_path / "cache"
    lazy, _ = official.load_modelnet(tmp_path, num_points=4, cache=False)
    splits, desc = official.load_modelnet(tmp_path, num_points=4, cache_dir=cache_dir)
    assert desc["cache"].startswith(str(cache_dir / "pointcloud"))
    assert desc["points_per_file"]["train"] == {"min": 6, "mean": 6.0, "max": 6}
    for i in range(3):
        np.testing.assert_array_equal(splits["train"][i]["points"], lazy["train"][i]["points"])
    again, desc2 = official.load_modelnet(tmp_path, num_points=4, cache_dir=cache_dir)
    assert desc2["cache"] == desc["cache"]
    np.testing.assert_array_equal(again["test"].arrays["points"], splits["test"].arrays["points"])
    changed = CLOUDS["night_stand_0003"].copy()
    changed[:, :3] *= -1
    path = modelnet / "night_stand" / "night_stand_0003.txt"
    path.write_text("\n".join(",".join(f"{v:.6f}" for v in row) for row in changed) + "\n\n")
    rebuilt, desc3 = official.load_modelnet(tmp_path, num_points=4, cache_dir=cache_dir)
    assert desc3["cache"] != desc["cache"]
    np.testing.assert_allclose(
        rebuilt["test"][0]["points"][:, :3], -splits["test"][0]["points"][:, :3], atol=1e-6
    )


def test_modelnet10_variant(tmp_path):
    write_modelnet_text(tmp_path, {"table_0001": grid_cloud(5)}, ["table_0001"], ["table_0001"],
                        ["bed", "table"], prefix="modelnet10")  # fmt: skip
    splits, desc = official.load_modelnet(tmp_path, num_points=6, num_categories=10, cache=False)
    assert int(splits["train"][0]["label"]) == 1 and desc["data"].startswith("ModelNet10")


def test_modelnet_missing_folder_names_it(tmp_path):
    where = tmp_path / "nowhere"
    with pytest.raises(errors.DataError) as e:
        official.load_modelnet(where)
    msg = str(e.value)
    assert str(where) in msg and "modelnet40_normal_resampled.zip" in msg
    assert "modelnet40_shape_names.txt" in msg


def test_modelnet_corrupt_line_names_file_and_line(modelnet, tmp_path):
    path = modelnet / "airplane" / "airplane_0001.txt"
    lines = path.read_text().splitlines()
    lines[2] = "1.0,2.0,abc,0,0,1"
    path.write_text("\n".join(lines) + "\n")
    lazy, _ = official.load_modelnet(tmp_path, num_points=4, cache=False)
    with pytest.raises(errors.DataError, match=r"airplane_0001\.txt:3: not a number"):
        lazy["train"][0]
    lines[2] = "1.0,2.0,3.0,0,0"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(errors.DataError, match=r"airplane_0001\.txt:3: 5 fields, expected 6"):
        official.load_modelnet(tmp_path, num_points=4, cache_dir=tmp_path / "c")


def test_empty_file_and_lazy_source_pickles(modelnet, tmp_path):
    lazy, _ = official.load_modelnet(tmp_path, num_points=4, cache=False)
    copy = pickle.loads(pickle.dumps(lazy["train"]))  # worker processes receive sources
    np.testing.assert_array_equal(copy[1]["points"], lazy["train"][1]["points"])
    (modelnet / "table" / "table_0002.txt").write_text("")
    with pytest.raises(errors.DataError, match=r"table_0002\.txt: no points"):
        lazy["train"][2]


def test_modelnet_unknown_class_in_list(modelnet, tmp_path):
    (modelnet / "modelnet40_test.txt").write_text("night_stand_0003\nsofa_0001\n")
    with pytest.raises(errors.DataError, match=r"modelnet40_test\.txt:2: shape id 'sofa_0001'"):
        official.load_modelnet(tmp_path, cache=False)


def test_hdf5_release_with_normals(tmp_path):
    folder, clouds = write_hdf5_release(tmp_path)
    splits, desc = official.load_modelnet(tmp_path, layout="hdf5", num_points=8,
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
    fps, _ = official.load_modelnet(tmp_path, layout="hdf5", num_points=4, cache=False)
    assert fps["test"][1]["points"].shape == (4, 6)


def test_hdf5_without_normals(tmp_path):
    write_hdf5_release(tmp_path, with_normal=False)
    with pytest.raises(errors.DataError, match=r"ply_data_train0\.h5: no 'normal'.*normals=False"):
        official.load_modelnet(tmp_path, layout="hdf5", num_points=8)
    splits, desc = official.load_modelnet(tmp_path, layout="hdf5", num_points=8, normals=False,
                                          cache=False)  # fmt: skip
    np.testing.assert_array_equal(splits["train"][0]["points"][:, 3:], 0)
    assert "zeros" in desc["normals"]


def test_hdf5_needs_h5py_message(tmp_path, monkeypatch):
    write_hdf5_release(tmp_path)
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(extras.MissingExtraError, match=r"pip install 'attnbench\[pointcloud\]'"):
        official.load_modelnet(tmp_path, layout="hdf5")


# ----------------------------------------------------------------------------- ShapeNetPart


def test_shapenet_part_ranges_are_yanx27s():
    ranges = {"Airplane": (0, 3), "Bag": (4, 5), "Cap": (6, 7), "Car": (8, 11), "Chair": (12, 15),
              "Earphone": (16, 18), "Guitar": (19, 21), "Knife": (22, 23), "Lamp": (24, 27),
              "Laptop": (28, 29), "Motorbike": (30, 35), "Mug": (36, 37), "Pistol": (38, 40),
              "Rocket": (41, 43), "Skateboard": (44, 46), "Table": (47, 49)}  # fmt: skip
    assert list(official.SHAPENET_CATEGORIES) == sorted(ranges)
    for cat, parts in zip(official.SHAPENET_CATEGORIES, official.SHAPENET_PARTS_PER_CATEGORY,
                          strict=True):  # fmt: skip
        assert parts == list(range(ranges[cat][0], ranges[cat][1] + 1))


def test_shapenet_subsampled_splits_and_categories(tmp_path):
    write_shapenet(tmp_path, SHAPENET_FILES, SHAPENET_SPLITS)
    splits, desc = official.load_shapenetpart(tmp_path, num_points=4, cache_dir=tmp_path / "c")
    assert desc["sizes"] == {"train": 3, "val": 1, "test": 1}
    assert desc["parts_per_category"] == official.SHAPENET_PARTS_PER_CATEGORY
    want = [("Airplane", "a1"), ("Airplane", "a2"), ("Mug", "m1")]  # category, then id
    for i, key in enumerate(want):
        example = splits["train"][i]
        cloud, part = SHAPENET_FILES[key]
        assert int(example["category"]) == official.SHAPENET_CATEGORIES.index(key[0])
        assert example["points"].shape == (4, 6) and (example["point_mask"] == 1).all()
        full = np.concatenate([normalise_by_hand(cloud[:, :3]), cloud[:, 3:]], axis=1)
        for point, p in zip(example["points"], example["part"], strict=True):
            match = np.flatnonzero(np.abs(full - point).max(1) < 1e-6)
            assert len(match) >= 1 and any(part[m] == p for m in match)
    assert int(splits["val"][0]["category"]) == 11  # Mug, whatever the map file's order
    lazy, _ = official.load_shapenetpart(tmp_path, num_points=4, cache=False)
    np.testing.assert_array_equal(lazy["train"][2]["points"], splits["train"][2]["points"])


def test_shapenet_padding_and_mask(tmp_path):
    write_shapenet(tmp_path, SHAPENET_FILES, SHAPENET_SPLITS)
    splits, _ = official.load_shapenetpart(tmp_path, num_points=8, cache=False)
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
        official.load_shapenetpart(tmp_path, num_points=4, cache_dir=tmp_path / "c")
    (folder / SYNSET["Mug"] / "m2.txt").unlink()
    with pytest.raises(errors.DataError, match=r"shuffled_val_file_list\.json: entry 0"):
        official.load_shapenetpart(tmp_path, cache=False)


def test_shapenet_missing_folder_names_it(tmp_path):
    with pytest.raises(errors.DataError) as e:
        official.load_shapenetpart(tmp_path)
    assert str(tmp_path) in str(e.value) and "synsetoffset2category.txt" in str(e.value)
    assert "shapenetcore_partanno_segmentation_benchmark_v0_normal.zip" in str(e.value)


# ----------------------------------------------------------------------------- pointcloud.data


def config(**fields):
    return ml_collections.ConfigDict(fields)


def test_data_load_official_modelnet_val_is_test(modelnet, tmp_path):
    cfg = config(dataset="modelnet40", source="official", dir=str(tmp_path), num_points=4,
                 sampling="first", seed=0, cache_dir=str(tmp_path / "c"))  # fmt: skip
    splits, desc = data.load(cfg)
    assert splits["val"] is splits["test"] and "selection on test" in desc["val"]
    assert desc["source"] == "official" and desc["num_classes"] == 3
    assert desc["dir"] == str(modelnet.resolve())


def test_data_load_official_shapenet_trainval(tmp_path):
    write_shapenet(tmp_path, SHAPENET_FILES, SHAPENET_SPLITS)
    cfg = config(dataset="shapenetpart", source="official", dir=str(tmp_path), num_points=4,
                 seed=0, cache=False, trainval=True)  # fmt: skip
    splits, desc = data.load(cfg)
    assert len(splits["train"]) == 4 and len(splits["val"]) == 1
    assert int(splits["train"][3]["category"]) == 11  # the val shape, appended
    assert desc["num_parts"] == 50


def test_data_config_errors(tmp_path):
    with pytest.raises(errors.ConfigError, match="config.data.dataset='modelnet10'"):
        data.load(config(dataset="modelnet10", source="standin", num_points=4))
    with pytest.raises(errors.ConfigError, match="config.data.source='web'"):
        data.load(config(dataset="modelnet40", source="web", num_points=4))
    with pytest.raises(errors.ConfigError, match="config.data.layout='ply'"):
        data.load(config(dataset="modelnet40", source="official", dir=str(tmp_path),
                         num_points=4, layout="ply"))  # fmt: skip
    with pytest.raises(errors.ConfigError, match="config.data.augment='rotate'"):
        data.train_transform(config(augment="rotate"))


def test_train_transform_scale_shift():
    assert data.train_transform(config(augment="")) is None
    assert data.train_transform(config()) is None
    transform = data.train_transform(config(augment="scale_shift"))
    points = np.random.default_rng(0).normal(size=(16, 6)).astype(np.float32)
    points.setflags(write=False)  # sources may be read-only memmaps
    out = transform({"points": points, "label": np.int32(1)}, np.random.default_rng(1))
    np.testing.assert_array_equal(out["points"][:, 3:], points[:, 3:])
    # xyz' = s xyz + t: recover s and t by least squares, check their ranges.
    a = np.concatenate([points[:, :3].reshape(-1, 1), np.tile(np.eye(3), (16, 1))], axis=1)
    coef = np.linalg.lstsq(a, out["points"][:, :3].reshape(-1), rcond=None)[0]
    assert 0.8 <= coef[0] <= 1.25 and (np.abs(coef[1:]) <= 0.1 + 1e-6).all()
    np.testing.assert_allclose(a @ coef, out["points"][:, :3].reshape(-1), atol=1e-5)


@pytest.mark.slow
def test_conversion_in_worker_processes_equals_in_process(tmp_path):
    clouds = {f"airplane_{i:04d}": grid_cloud(i, 12) for i in range(140)}
    write_modelnet_text(tmp_path, clouds, list(clouds), ["airplane_0000"], ["airplane"])
    one, _ = official.load_modelnet(tmp_path, num_points=8, cache_dir=tmp_path / "a", workers=1)
    two, _ = official.load_modelnet(tmp_path, num_points=8, cache_dir=tmp_path / "b", workers=2)
    np.testing.assert_array_equal(one["train"].arrays["points"], two["train"].arrays["points"])
    np.testing.assert_array_equal(two["train"].arrays["label"], 0)
