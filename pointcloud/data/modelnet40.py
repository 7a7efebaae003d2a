"""ModelNet40 (and ModelNet10): the reader of the official releases, `modelnet40_normal_resampled`
(PointNet++'s text release) and `modelnet40_ply_hdf5_2048` (PointNet's HDF5 release), and the
glue of the offline stand-in (the generated shapes of `pointcloud.data.shapes`).

`load_modelnet` finds the files under `root`, resamples every shape to a fixed number of points
and returns random-access sources per split with a description, converted once into cached
`.npy` arrays by default (`pointcloud.data.release_files`, which holds the plumbing shared with
`pointcloud.data.shapenetpart`). `attnbench-data fetch modelnet40` (`modelnet40_hdf5`) puts each
release in the data root, where `load_modelnet` finds it with an empty `config.data.dir`; a
release not found is an error naming that command.

Layouts, as the loaders the papers follow read them (facts from their code, restated):

ModelNet40, `modelnet40_normal_resampled` (yanx27/Pointnet_Pointnet2_pytorch
`data_utils/ModelNetDataLoader.py`; download `MODELNET40_URLS["normal_resampled"]`):
`modelnet40_shape_names.txt` (40 class names, one a line; the line number is the label),
`modelnet40_train.txt` / `modelnet40_test.txt` (shape ids such as `airplane_0001` or
`night_stand_0001`, one a line; 9,843 / 2,468; the class is the id without its last
`_NNNN`), and `<class>/<id>.txt`, 10,000 lines `x,y,z,nx,ny,nz` comma-separated. The
ModelNet10 variant (`num_categories=10`) reads `modelnet10_shape_names.txt`,
`modelnet10_{train,test}.txt` from the same folder. yanx27 takes the first `num_point` lines,
or farthest-point sampling (random first point) with `--use_uniform_sample`, then normalises
xyz only (`pc_normalize`); normals are kept as stored.

ModelNet40, `modelnet40_ply_hdf5_2048` (charlesq34/pointnet `provider.py`, `train.py`; download
`MODELNET40_URLS["hdf5"]`): `shape_names.txt` (40 names), `train_files.txt` /
`test_files.txt` listing `ply_data_train{0..4}.h5` / `ply_data_test{0,1}.h5` with PointNet's
repository prefix (`data/modelnet40_ply_hdf5_2048/ply_data_train0.h5`; resolved here by file
name inside the folder); each file holds `data` [n, 2048, 3] float32, `label` [n, 1] uint8
and, in the released files, `normal` [n, 2048, 3]. PointNet trains on the first `NUM_POINT`
points of each cloud.

Resampling here (documented choices):

* ModelNet40: `sampling="fps"` (default): farthest-point sampling to `num_points`
  (`pointcloud.ops.farthest_point_sample`, first pick = the file's first point, so it is
  deterministic; SAMSA: "farthest point sampling to 1,024 points ... following PointNet");
  `sampling="first"`: the first `num_points` points (yanx27's default, PointNet's HDF5
  training). Then xyz are normalised to the unit sphere (normals unchanged). A file with
  fewer than `num_points` points (none in the releases) is padded by repeating points drawn
  with `numpy.random.default_rng([seed, split, index])`.
* HDF5 without a `normal` dataset: an error when normals are asked for (`normals=True`, the
  SAMSA setting); with `normals=False` the normal columns are zeros (the model reads xyz
  only).
* HDF5 files are checked when they are listed, each error naming the file and the key:
  `data`, `label` (and `normal` when present) must be numeric datasets, not groups; `data`
  `[n, points, 3]` with n, points >= 1, one label per cloud, each an integer class index in
  0..(the classes of `shape_names.txt`) - 1.

Stand-in (`config.data.source="standin"`, served by `pointcloud.data.loader`):
`MODELNET40_SIZES` (the real set's split sizes, the stand-in's default sizes),
`generate_standin` (`shapes.modelnet_like`, 13 classes) and `standin_description`.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Callable

import numpy as np

from attnbench import errors, extras
from pointcloud import ops
from pointcloud.data import shapes
from pointcloud.data.release_files import (
    _CACHE_VERSION,
    SPLIT_CODES,
    FileSource,
    _cached,
    _files_digest,
    _find_folder,
    _incomplete,
    _not_found,
    _read_lines,
    _read_table,
    _resolve_root,
)

__all__ = [
    "MODELNET40_URLS",
    "MODELNET40_SIZES",
    "read_modelnet_txt",
    "load_modelnet",
    "generate_standin",
    "standin_description",
]

MODELNET40_URLS = {
    "normal_resampled": "https://shapenet.cs.stanford.edu/media/modelnet40_normal_resampled.zip",
    "hdf5": "https://shapenet.cs.stanford.edu/media/modelnet40_ply_hdf5_2048.zip",
}
MODELNET_FOLDERS = {
    "normal_resampled": ("", "modelnet40_normal_resampled"),
    "hdf5": ("", "modelnet40_ply_hdf5_2048", "data/modelnet40_ply_hdf5_2048"),
}
# Each layout's `attnbench-data` name and the folder it fetches it into under the data root
# (pointcloud/data/sources.py; tests/pointcloud/data/test_modelnet40.py checks they agree).
MODELNET_CATALOG = {
    "normal_resampled": ("modelnet40", "modelnet40_normal_resampled"),
    "hdf5": ("modelnet40_hdf5", "modelnet40_ply_hdf5_2048"),
}


def read_modelnet_txt(path: str | os.PathLike) -> np.ndarray:
    """A `modelnet40_normal_resampled` file: float32 [n, 6] (`x,y,z,nx,ny,nz` per line)."""
    table = _read_table(pathlib.Path(path), delimiter=",", columns=6, what="ModelNet points")
    return table.astype(np.float32)


def _fixed_size(points: np.ndarray, num_points: int, sampling: str,
                rng: Callable[[], np.random.Generator]) -> np.ndarray:  # fmt: skip
    """ModelNet resampling: FPS / first points (padding by repeats when too few), then xyz
    normalised to the unit sphere."""
    n = len(points)
    if n < num_points:
        idx = ops.random_sample(n, num_points, rng())
    elif sampling == "fps":
        idx = ops.farthest_point_sample(points, num_points, start=0)
    else:
        idx = np.arange(num_points)
    out = points[idx].astype(np.float32)
    out[:, :3] = ops.normalize_unit_sphere(out[:, :3])
    return out


_TEXT_LAYOUT = (
    "<dir>/modelnet40_shape_names.txt, modelnet40_train.txt, modelnet40_test.txt and "
    "<dir>/<class>/<class>_NNNN.txt (10,000 lines x,y,z,nx,ny,nz)"
)
_H5_LAYOUT = (
    "<dir>/shape_names.txt, train_files.txt, test_files.txt and ply_data_train0..4.h5, "
    "ply_data_test0..1.h5 (datasets data [n,2048,3], label [n,1], normal [n,2048,3])"
)


def _modelnet_text_items(folder: pathlib.Path, prefix: str, names: list[str], split: str,
                         fix: str):  # fmt: skip
    """A split's `(path, label)` items from its list; `fix` says what to do about a missing
    file."""
    listing = folder / f"{prefix}_{split}.txt"
    index = {name: k for k, name in enumerate(names)}
    items = []
    for k, shape_id in enumerate(_read_lines(listing, f"ModelNet {split} list", fix), 1):
        cls = "_".join(shape_id.split("_")[:-1])
        if cls not in index:
            raise errors.DataError(
                f"{listing}:{k}: shape id {shape_id!r} names no class of {prefix}_shape_names.txt"
            )
        path = folder / cls / f"{shape_id}.txt"
        if not path.is_file():
            raise errors.DataError(f"{listing}:{k}: {path} not found; {fix}")
        items.append((path, index[cls]))
    if not items:
        raise errors.DataError(f"{listing}: lists no shapes")
    return items


def _h5py():
    return extras.require("h5py", "reading modelnet40_ply_hdf5_2048")


def _h5_dataset(f, path: pathlib.Path, key: str, h5py, kinds: str, what: str):
    """`f[key]`, which must be a dataset of a numeric kind in `kinds` (numpy dtype kinds)."""
    if key not in f:
        raise errors.DataError(
            f"{path}: no dataset {key!r} ({what}); expected PointNet's layout: {_H5_LAYOUT}"
        )
    node = f[key]
    if not isinstance(node, h5py.Dataset):
        raise errors.DataError(
            f"{path}: {key!r} is an HDF5 {type(node).__name__.lower()}, not a dataset ({what}); "
            f"expected PointNet's layout: {_H5_LAYOUT}"
        )
    if node.dtype.kind not in kinds or node.shape == ():
        raise errors.DataError(
            f"{path}: dataset {key!r} ({what}) has dtype {node.dtype} and shape {node.shape}; "
            f"expected PointNet's layout: {_H5_LAYOUT}"
        )
    return node


def _h5_labels(labels: np.ndarray, path: pathlib.Path, names_file: pathlib.Path,
               num_classes: int) -> np.ndarray:  # fmt: skip
    """The `label` dataset as int64 class indices, each an integer in 0..num_classes-1."""
    if labels.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(labels) | (labels != np.floor(labels)))
        if len(bad):
            raise errors.DataError(
                f"{path}: label[{bad[0]}] = {labels[bad[0]]} is not a class index (an integer)"
            )
    out = labels.astype(np.int64)
    bad = np.flatnonzero((out < 0) | (out >= num_classes))
    if len(bad):
        raise errors.DataError(
            f"{path}: label[{bad[0]}] = {out[bad[0]]} is outside 0..{num_classes - 1} (the "
            f"{num_classes} classes of {names_file.name})"
        )
    return out


def _h5_items(folder: pathlib.Path, split: str, num_classes: int, normals: bool, fix: str):
    h5py = _h5py()
    listing = folder / f"{split}_files.txt"
    names_file = folder / "shape_names.txt"
    items = []
    for k, line in enumerate(_read_lines(listing, f"HDF5 {split} file list", fix), 1):
        path = folder / pathlib.PurePosixPath(line).name
        if not path.is_file():
            raise errors.DataError(f"{listing}:{k}: {line!r}: {path} not found; {fix}")
        try:
            with h5py.File(path, "r") as f:
                data = _h5_dataset(f, path, "data", h5py, "fiu", "the clouds' xyz")
                label = _h5_dataset(f, path, "label", h5py, "fiu", "one class per cloud")
                shape, labels = data.shape, np.asarray(label[()]).reshape(-1)
                has_normal = "normal" in f
                if has_normal:
                    normal = _h5_dataset(f, path, "normal", h5py, "fiu", "the points' normals")
                    if normal.shape != shape:
                        raise errors.DataError(
                            f"{path}: 'normal' has shape {normal.shape}, 'data' {shape}"
                        )
        except errors.DataError:
            raise
        except (OSError, ValueError, TypeError) as e:  # h5py's errors for a damaged file
            raise errors.DataError(f"{path}: not a readable HDF5 file ({e})") from e
        if len(shape) != 3 or shape[2] != 3 or len(labels) != shape[0]:
            raise errors.DataError(
                f"{path}: 'data' must be [n, points, 3] with one label per cloud, got "
                f"{shape} and {len(labels)} labels"
            )
        if shape[0] == 0 or shape[1] == 0:
            raise errors.DataError(
                f"{path}: 'data' has shape {shape}: no clouds or no points; the released files "
                "hold [n, 2048, 3]"
            )
        labels = _h5_labels(labels, path, names_file, num_classes)
        if normals and not has_normal:
            raise errors.DataError(
                f"{path}: no 'normal' dataset, but normals are asked for; set "
                "config.data.normals=False to use xyz only (normal columns are then zeros), or "
                "use the modelnet40_normal_resampled layout"
            )
        items.extend((path, row, int(labels[row]), has_normal) for row in range(shape[0]))
    if not items:
        raise errors.DataError(f"{listing}: lists no HDF5 files")
    return items


@dataclasses.dataclass(frozen=True)
class _ModelNetTextReader:
    """`(path, label), i -> (example, points in the file)` for `FileSource` (picklable)."""

    num_points: int
    sampling: str
    seed: int
    split_code: int

    def __call__(self, item, i: int) -> tuple[dict, int]:
        path, label = item
        raw = read_modelnet_txt(path)
        return self.example(raw, label, i), len(raw)

    def example(self, raw: np.ndarray, label: int, i: int) -> dict:
        rng = lambda: np.random.default_rng([self.seed, self.split_code, i])  # noqa: E731
        pts = _fixed_size(raw, self.num_points, self.sampling, rng)
        return {"points": pts, "label": np.int32(label)}


class _ModelNetH5Reader(_ModelNetTextReader):
    """`(path, row, label, has_normal), i -> (example, points)`: one cloud of an HDF5 file."""

    def __call__(self, item, i: int) -> tuple[dict, int]:
        path, row, label, has_normal = item
        h5py = _h5py()
        try:
            with h5py.File(path, "r") as f:
                xyz = np.asarray(f["data"][row], np.float32)
                nrm = np.asarray(f["normal"][row], np.float32) if has_normal else np.zeros_like(xyz)
        except (OSError, KeyError) as e:
            raise errors.DataError(f"{path}: cannot read cloud {row} ({e})") from e
        raw = np.concatenate([xyz, nrm], axis=1)
        if not np.isfinite(raw).all():
            raise errors.DataError(f"{path}: cloud {row} has non-finite values")
        return self.example(raw, label, i), len(raw)


def load_modelnet(
    root: str | os.PathLike,
    *,
    layout: str = "normal_resampled",
    num_points: int = 1024,
    sampling: str = "fps",
    num_categories: int = 40,
    normals: bool = True,
    seed: int = 0,
    cache: bool = True,
    cache_dir: str | os.PathLike | None = None,
    workers: int | None = None,
) -> tuple[dict, dict]:
    """ModelNet40 (or ModelNet10) `{"train", "test"}` sources of `{"points": float32
    [num_points, 6], "label": int32}` and a description.

    Args:
      root: the dataset folder or its parent; empty: the data root
        (`attnbench.data.cache.data_root`), where `attnbench-data fetch` puts it.
      layout: "normal_resampled" (PointNet++'s text files) or "hdf5" (PointNet's 2,048 points).
      sampling: "fps" (default; SAMSA) or "first" (yanx27's default, PointNet).
      num_categories: 40, or 10 for ModelNet10 (normal_resampled only).
      normals: whether the model reads normals (HDF5 files without them are then an error).
      cache / cache_dir: convert once to `.npy` under `<cache_dir or root>/pointcloud/`.
      workers: processes for that conversion (default: the CPUs available, at most 8).
    """
    if layout not in MODELNET_FOLDERS:
        raise errors.ConfigError(
            f"config.data.layout={layout!r}: known: {', '.join(MODELNET_FOLDERS)}"
        )
    if sampling not in ("fps", "first"):
        raise errors.ConfigError(f"config.data.sampling={sampling!r}: known: fps, first")
    if num_categories not in (10, 40) or (num_categories == 10 and layout == "hdf5"):
        raise errors.ConfigError(
            f"num_categories={num_categories}: 40, or 10 with the normal_resampled layout"
        )
    num_points = int(num_points)
    if num_points < 1:
        raise errors.ConfigError(f"config.data.num_points={num_points}: must be >= 1")
    base = _resolve_root(root)
    fetch_name, fetched = MODELNET_CATALOG[layout]
    if layout == "normal_resampled":
        prefix = f"modelnet{num_categories}"
        marker = f"{prefix}_shape_names.txt"
        folder = _find_folder(base, MODELNET_FOLDERS[layout], marker)
        if folder is None:
            raise _not_found(
                f"ModelNet{num_categories} (modelnet40_normal_resampled)", base,
                MODELNET_FOLDERS[layout], marker, _TEXT_LAYOUT.replace("modelnet40", prefix),
                MODELNET40_URLS[layout], fetch_name, fetched,
            )  # fmt: skip
        fix = _incomplete(folder, fetch_name, base, fetched)
        names = _read_lines(folder / marker, "class names")
        items = {s: _modelnet_text_items(folder, prefix, names, s, fix) for s in ("train", "test")}
        data_files = [folder / marker] + [folder / f"{prefix}_{s}.txt" for s in items]
        data_files += [p for s in items for p, _ in items[s]]

        reader = _ModelNetTextReader

    else:
        marker = "shape_names.txt"
        folder = _find_folder(base, MODELNET_FOLDERS[layout], marker)
        if folder is None:
            raise _not_found(
                "ModelNet40 (modelnet40_ply_hdf5_2048)", base, MODELNET_FOLDERS[layout], marker,
                _H5_LAYOUT, MODELNET40_URLS[layout], fetch_name, fetched,
            )  # fmt: skip
        fix = _incomplete(folder, fetch_name, base, fetched)
        names = _read_lines(folder / marker, "class names")
        items = {s: _h5_items(folder, s, len(names), normals, fix) for s in ("train", "test")}
        data_files = [folder / marker] + [folder / f"{s}_files.txt" for s in items]
        data_files += sorted({p for s in items for p, *_ in items[s]})
        reader = _ModelNetH5Reader

    sources = {
        s: FileSource(
            tuple(items[s]),
            reader(num_points, sampling, int(seed), SPLIT_CODES[s]),
            f"{folder} {s}",
        )
        for s in ("train", "test")
    }
    release = "modelnet40_normal_resampled" if layout == "normal_resampled" else folder.name
    description = {
        "data": f"ModelNet{num_categories} (official, {release})",
        "dir": str(folder),
        "layout": layout,
        "num_classes": len(names),
        "class_names": list(names),
        "sizes": {s: len(items[s]) for s in items},
        "num_points": num_points,
        "sampling": (
            "farthest-point sampling from the file's first point"
            if sampling == "fps"
            else "the first points of each file"
        )
        + "; xyz normalised to the unit sphere after sampling, normals as stored",
        "normals": "from the files"
        if layout == "normal_resampled" or all(it[3] for s in items for it in items[s])
        else "zeros (the HDF5 files have none)",
    }
    if not cache:
        description["cache"] = "none: every access reads the files"
        return sources, description
    spec = dict(
        version=_CACHE_VERSION,
        kind="modelnet",
        dir=str(folder),
        layout=layout,
        num_categories=num_categories,
        num_points=num_points,
        sampling=sampling,
        seed=int(seed),
        files=_files_digest(data_files),
    )
    specs = {"points": ((num_points, 6), np.float32), "label": ((), np.int32)}
    name = f"modelnet{num_categories}-{layout}-{num_points}-{sampling}"
    splits, directory, stats = _cached(cache_dir, folder, name, spec, sources, specs, workers)
    description["cache"] = directory
    description.update(stats)
    return splits, description


# --------------------------------------------------------------------------------------------
# The offline stand-in, as `pointcloud.data.loader` serves it.

MODELNET40_SIZES = {"train": 9843, "val": 0, "test": 2468}  # SAMSA (arXiv 2408.05391) App. A
STANDIN_KEYS = ("points", "label")  # the arrays of a cached stand-in split


def generate_standin(sizes: dict, **common) -> dict:
    """The stand-in's splits (`shapes.modelnet_like`); `sizes`: `{"train", "val", "test"}`,
    a val split only when its size is above 0; `common`: num_points, seed, random_pose."""
    return shapes.modelnet_like(sizes["train"], sizes["test"], num_val=sizes["val"], **common)


def standin_description() -> dict:
    """The stand-in's classes, as the description names them."""
    return dict(num_classes=len(shapes.CLASSES), class_names=list(shapes.CLASSES))
