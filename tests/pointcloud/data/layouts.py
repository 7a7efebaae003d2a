"""Tiny files in each official point-cloud layout (ModelNet40 text with normals, ModelNet10,
PointNet's HDF5, ShapeNetPart text + split JSONs), written by the reader tests of
tests/pointcloud/data, and a float64 reference of the unit-sphere normalisation."""

import json

import h5py
import numpy as np


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
