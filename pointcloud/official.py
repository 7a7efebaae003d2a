"""Readers of the official point-cloud releases: ModelNet40 (`modelnet40_normal_resampled`,
PointNet++'s text release, and `modelnet40_ply_hdf5_2048`, PointNet's HDF5 release) and
ShapeNetPart (`shapenetcore_partanno_segmentation_benchmark_v0_normal`).

Each loader finds the files under `root` (a config's `data.dir`: the dataset folder itself or the
folder holding it), resamples every shape to a fixed number of points and returns random-access
sources (`len`, `source[i] -> example dict`) per split with a description. With `cache=True` (the
default) the first call converts every shape once into `.npy` arrays under `<cache_dir or
root>/pointcloud/<name>-<hash>/` (`attnbench.data.cache.build_once`, keyed by the folder, the files'
sizes and modification times and the options) and later calls memory-map them
(`attnbench.tasks.Split` over read-only memmaps: nothing is read until indexed); with `cache=False`
every access reads and resamples the text / HDF5 file again (`FileSource`).

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

ShapeNetPart (yanx27 `data_utils/ShapeNetDataLoader.py`, `train_partseg.py`; download
`SHAPENET_URL`): `synsetoffset2category.txt` (lines `<Name>\\t<synset>`, 16 categories listed
in sorted name order), `<synset>/<id>.txt` with lines `x y z nx ny nz part` space-separated
(the part is the global id 0..49, written as a float), and
`train_test_split/shuffled_{train,val,test}_file_list.json` (JSON lists of
`shape_data/<synset>/<id>`; 12,137 / 1,870 / 2,874 shapes). yanx27's category index is the
line order of `synsetoffset2category.txt` (= `SHAPENET_CATEGORIES`, sorted) and its part
ranges are `SHAPENET_PARTS_PER_CATEGORY` (Airplane 0-3, Bag 4-5, Cap 6-7, Car 8-11, Chair
12-15, Earphone 16-18, Guitar 19-21, Knife 22-23, Lamp 24-27, Laptop 28-29, Motorbike 30-35,
Mug 36-37, Pistol 38-40, Rocket 41-43, Skateboard 44-46, Table 47-49). It orders a split by
category, then by sorted id; normalises xyz of all a file's points (`pc_normalize`), then
draws `npoints` (2,500 by default in the dataset class, 2,048 in `train_partseg.py`) with
replacement, anew at every access; it trains on train + val.

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
* ShapeNetPart: xyz normalised over all the file's points, then `num_points` points drawn
  without replacement with `numpy.random.default_rng([seed, split, index])` when the file
  has at least that many (fixed per shape: the same points at every epoch and in every
  split); a file with fewer points keeps all of them, in order, padded with zeros to
  `num_points`. Every example has `point_mask` (float32 [num_points], 1 for a real point, 0
  for padding; padded points carry the category's first part id and must be masked out of
  losses and IoUs). SAMSA used "the initial 2,500 point-normal without any change";
  `num_points=2500` is the closest fixed-size reading of that.

Text errors name the file and the line (a wrong number of fields, a field that is not a
number, a non-finite value, a part id outside its category's range).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import json
import math
import multiprocessing
import os
import pathlib
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from attnbench import errors, extras, tasks
from attnbench.data import cache
from pointcloud import ops

__all__ = [
    "MODELNET40_URLS",
    "SHAPENET_URL",
    "SHAPENET_CATEGORIES",
    "SHAPENET_SYNSETS",
    "SHAPENET_PARTS_PER_CATEGORY",
    "FileSource",
    "read_modelnet_txt",
    "read_shapenet_txt",
    "load_modelnet",
    "load_shapenetpart",
]

MODELNET40_URLS = {
    "normal_resampled": "https://shapenet.cs.stanford.edu/media/modelnet40_normal_resampled.zip",
    "hdf5": "https://shapenet.cs.stanford.edu/media/modelnet40_ply_hdf5_2048.zip",
}
SHAPENET_URL = (
    "https://shapenet.cs.stanford.edu/media/"
    "shapenetcore_partanno_segmentation_benchmark_v0_normal.zip"
)
MODELNET_FOLDERS = {
    "normal_resampled": ("", "modelnet40_normal_resampled"),
    "hdf5": ("", "modelnet40_ply_hdf5_2048", "data/modelnet40_ply_hdf5_2048"),
}
SHAPENET_FOLDERS = ("", "shapenetcore_partanno_segmentation_benchmark_v0_normal")
SHAPENET_SYNSETS = {
    "Airplane": "02691156",
    "Bag": "02773838",
    "Cap": "02954340",
    "Car": "02958343",
    "Chair": "03001627",
    "Earphone": "03261776",
    "Guitar": "03467517",
    "Knife": "03624134",
    "Lamp": "03636649",
    "Laptop": "03642806",
    "Motorbike": "03790512",
    "Mug": "03797390",
    "Pistol": "03948459",
    "Rocket": "04099429",
    "Skateboard": "04225987",
    "Table": "04379243",
}
SHAPENET_CATEGORIES = tuple(sorted(SHAPENET_SYNSETS))
_PARTS_COUNT = (4, 2, 2, 4, 4, 3, 3, 2, 4, 2, 6, 2, 3, 3, 3, 3)  # yanx27 seg_classes, sorted


def _ranges(counts: Sequence[int]) -> list[list[int]]:
    out, first = [], 0
    for k in counts:
        out.append(list(range(first, first + k)))
        first += k
    return out


SHAPENET_PARTS_PER_CATEGORY = _ranges(_PARTS_COUNT)
SPLIT_CODES = {"train": 0, "val": 1, "test": 2}
_CACHE_VERSION = 1  # bump when the cached arrays of a given spec change
_CHUNK = 64  # shapes per pool task of the one-time conversion


# --------------------------------------------------------------------------------------------
# Text files.


def _scan_for_error(path: pathlib.Path, split: Callable[[str], list[str]], columns: int,
                    check_row: Callable[[np.ndarray], str] | None = None) -> str:  # fmt: skip
    """The first bad line of a text file as 'path:line: reason' (the slow path, run only after
    the fast parse failed)."""
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            for k, line in enumerate(f, 1):
                text = line.strip()
                if not text:
                    continue
                fields = split(text)
                if len(fields) != columns:
                    return f"{path}:{k}: {len(fields)} fields, expected {columns} ({text[:80]!r})"
                try:
                    row = np.array([float(x) for x in fields])
                except ValueError:
                    return f"{path}:{k}: not a number ({text[:80]!r})"
                if not np.isfinite(row).all():
                    return f"{path}:{k}: non-finite value ({text[:80]!r})"
                if check_row is not None:
                    problem = check_row(row)
                    if problem:
                        return f"{path}:{k}: {problem} ({text[:80]!r})"
    except UnicodeDecodeError as e:
        return f"{path}: not a text file ({e})"
    return ""


def _read_table(path: pathlib.Path, *, delimiter: str | None, columns: int, what: str,
                check_row: Callable[[np.ndarray], str] | None = None) -> np.ndarray:  # fmt: skip
    """`[n, columns]` float64 from a text file; `DataError` naming the file (and the line)."""
    if not path.is_file():
        raise errors.DataError(f"{path}: file not found ({what})")
    splitter = (lambda s: s.split(delimiter)) if delimiter else str.split
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # loadtxt's "input contained no data"
            table = np.loadtxt(path, delimiter=delimiter, dtype=np.float64, ndmin=2)
    except (ValueError, UnicodeDecodeError):
        table = None
    if table is not None and table.size == 0:
        raise errors.DataError(f"{path}: no points ({what})")
    ok = table is not None and table.shape[1] == columns and np.isfinite(table).all()
    if ok and check_row is not None:
        vectorized = getattr(check_row, "vectorized", None)
        if vectorized is not None:
            ok = bool(vectorized(table).all())
        else:
            ok = not any(check_row(row) for row in table)
    if not ok:
        problem = _scan_for_error(path, splitter, columns, check_row)
        raise errors.DataError(problem or f"{path}: unreadable {what}")
    return table


def read_modelnet_txt(path: str | os.PathLike) -> np.ndarray:
    """A `modelnet40_normal_resampled` file: float32 [n, 6] (`x,y,z,nx,ny,nz` per line)."""
    table = _read_table(pathlib.Path(path), delimiter=",", columns=6, what="ModelNet points")
    return table.astype(np.float32)


def read_shapenet_txt(
    path: str | os.PathLike, parts: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A ShapeNetPart file: float32 [n, 6] (`x y z nx ny nz`) and the int32 part ids [n]
    (7th column); `parts` (the category's global ids) are the allowed ids."""
    allowed = None if parts is None else np.asarray(sorted(parts), np.float64)

    def check(row: np.ndarray) -> str:
        label = row[6]
        if label != math.floor(label) or (allowed is not None and label not in allowed):
            want = "an integer" if allowed is None else f"one of {allowed.astype(int).tolist()}"
            return f"part id {label:g} is not {want}"
        return ""

    def vectorized(table: np.ndarray) -> np.ndarray:
        label = table[:, 6]
        ok = label == np.floor(label)
        if allowed is not None:
            ok &= np.isin(label, allowed)
        return ok

    check.vectorized = vectorized
    table = _read_table(
        pathlib.Path(path), delimiter=None, columns=7, what="ShapeNetPart points", check_row=check
    )
    return table[:, :6].astype(np.float32), table[:, 6].astype(np.int32)


def _read_lines(path: pathlib.Path, what: str) -> list[str]:
    if not path.is_file():
        raise errors.DataError(f"{path}: file not found ({what})")
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError) as e:
        raise errors.DataError(f"{path}: unreadable ({what}: {e})") from e
    return [line for line in lines if line]


# --------------------------------------------------------------------------------------------
# Sources, resampling, caching.


@dataclasses.dataclass(frozen=True)
class FileSource:
    """A lazy split: `source[i]` reads file `items[i]` and resamples it; `read(item, i)`
    returns the example and the number of points in the file."""

    items: tuple
    read: Callable[[object, int], tuple[dict, int]]
    name: str = ""

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        i = int(i)
        if not -len(self.items) <= i < len(self.items):
            raise IndexError(f"{self.name}: index {i} out of range for {len(self.items)} shapes")
        i %= len(self.items)
        return self.read(self.items[i], i)[0]


def _resolve_root(root) -> pathlib.Path:
    """The data folder a config names (`attnbench.data.cache.data_root`), resolved."""
    return cache.data_root(root).resolve()


def _find_folder(root: pathlib.Path, folders: Sequence[str], marker: str) -> pathlib.Path | None:
    for folder in folders:
        if (root / folder / marker).is_file():
            return root / folder
    return None


def _not_found(what: str, root: pathlib.Path, folders: Sequence[str], marker: str,
               layout: str, url: str) -> errors.DataError:  # fmt: skip
    looked = ", ".join(str(root / f) if f else str(root) for f in folders)
    return errors.DataError(
        f"{what} not found: no {marker} in {looked}. Expected layout: {layout}. Download "
        f"{url}, unzip it and set config.data.dir to the unzipped folder (or its parent)"
    )


def _files_digest(paths: Sequence[pathlib.Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        st = p.stat()
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


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


def _read_chunk(task: tuple) -> list[tuple[dict, int]]:
    """Pool task: the examples `lo, lo + 1, ...` of one chunk of a split's items."""
    read, items, lo = task
    return [read(item, lo + k) for k, item in enumerate(items)]


def _workers(workers: int | None) -> int:
    if workers is not None:
        return max(1, int(workers))
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - macOS
        return max(1, min(8, os.cpu_count() or 1))


def _write_split(directory: pathlib.Path, split: str, source: FileSource, specs: dict,
                 label: str, workers: int) -> dict:  # fmt: skip
    """Every example of `source` into `<split>_<key>.npy` memmaps (specs: key -> (shape,
    dtype) per example), read in chunks by `workers` "spawn" processes when there are enough
    shapes, with progress lines on stderr for long builds; returns the points per file
    (min, mean, max)."""
    n = len(source)
    out = {
        key: np.lib.format.open_memmap(
            directory / f"{split}_{key}.npy", mode="w+", dtype=dtype, shape=(n, *shape)
        )
        for key, (shape, dtype) in specs.items()
    }
    raw = np.zeros(n, np.int64)
    progress = cache.Progress(n, label, unit="shapes")
    tasks_ = [(source.read, source.items[lo : lo + _CHUNK], lo) for lo in range(0, n, _CHUNK)]
    if workers > 1 and n >= 2 * _CHUNK:
        context = multiprocessing.get_context("spawn")
        executor = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context)
        results = executor.map(_read_chunk, tasks_)
    else:
        executor, results = None, map(_read_chunk, tasks_)
    try:
        for (_, _, lo), chunk in zip(tasks_, results, strict=True):
            for k, (example, count) in enumerate(chunk):
                raw[lo + k] = count
                for key in specs:
                    out[key][lo + k] = example[key]
            progress.update(lo + len(chunk))
    finally:
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
    progress.update(n, final=True)
    for array in out.values():
        array.flush()
    del out
    return {"min": int(raw.min()), "mean": round(float(raw.mean()), 1), "max": int(raw.max())}


def _open_split(directory: pathlib.Path, split: str, keys: Sequence[str]) -> tasks.Split:
    arrays = {}
    for key in keys:
        path = directory / f"{split}_{key}.npy"
        try:
            arrays[key] = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as e:
            raise errors.DataError(f"{path}: corrupt or missing ({e}); delete {directory}") from e
    try:
        return tasks.Split(arrays)
    except ValueError as e:
        raise errors.DataError(f"{directory}: {e}; delete it to rebuild") from e


def _cached(cache_dir, base: pathlib.Path, name: str, spec: dict, sources: dict,
            specs: dict, workers: int | None) -> tuple[dict, str, dict]:  # fmt: skip
    """The splits converted once into `.npy` arrays (`build_once`) and memory-mapped, the
    cache folder and the build's statistics (`stats.json`: points per file per split)."""
    where = cache.data_root(cache_dir or base) / "pointcloud"

    def write(tmp: pathlib.Path) -> None:
        stats = {
            split: _write_split(tmp, split, source, specs, f"{name} {split}", _workers(workers))
            for split, source in sources.items()
        }
        (tmp / "stats.json").write_text(json.dumps({"points_per_file": stats}, indent=2) + "\n")

    try:
        directory = cache.build_once(where, name, spec, write)
    except PermissionError as e:
        raise errors.DataError(
            f"{where}: cannot write the point-cloud cache there ({e}); set config.data.cache_dir "
            "to a writable folder"
        ) from e
    try:
        stats = json.loads((directory / "stats.json").read_text())
    except (OSError, ValueError) as e:
        raise errors.DataError(
            f"{directory}/stats.json: unreadable ({e}); delete {directory}"
        ) from e
    splits = {split: _open_split(directory, split, list(specs)) for split in sources}
    return splits, str(directory), stats


# --------------------------------------------------------------------------------------------
# ModelNet40.

_TEXT_LAYOUT = (
    "<dir>/modelnet40_shape_names.txt, modelnet40_train.txt, modelnet40_test.txt and "
    "<dir>/<class>/<class>_NNNN.txt (10,000 lines x,y,z,nx,ny,nz)"
)
_H5_LAYOUT = (
    "<dir>/shape_names.txt, train_files.txt, test_files.txt and ply_data_train0..4.h5, "
    "ply_data_test0..1.h5 (datasets data [n,2048,3], label [n,1], normal [n,2048,3])"
)


def _modelnet_text_items(folder: pathlib.Path, prefix: str, names: list[str], split: str):
    listing = folder / f"{prefix}_{split}.txt"
    index = {name: k for k, name in enumerate(names)}
    items = []
    for k, shape_id in enumerate(_read_lines(listing, f"ModelNet {split} list"), 1):
        cls = "_".join(shape_id.split("_")[:-1])
        if cls not in index:
            raise errors.DataError(
                f"{listing}:{k}: shape id {shape_id!r} names no class of {prefix}_shape_names.txt"
            )
        path = folder / cls / f"{shape_id}.txt"
        if not path.is_file():
            raise errors.DataError(f"{listing}:{k}: {path} not found")
        items.append((path, index[cls]))
    if not items:
        raise errors.DataError(f"{listing}: lists no shapes")
    return items


def _h5py():
    return extras.require("h5py", "reading modelnet40_ply_hdf5_2048")


def _h5_items(folder: pathlib.Path, split: str, num_classes: int, normals: bool):
    h5py = _h5py()
    listing = folder / f"{split}_files.txt"
    items = []
    for k, line in enumerate(_read_lines(listing, f"HDF5 {split} file list"), 1):
        path = folder / pathlib.PurePosixPath(line).name
        if not path.is_file():
            raise errors.DataError(f"{listing}:{k}: {line!r}: {path} not found")
        try:
            with h5py.File(path, "r") as f:
                if "data" not in f or "label" not in f:
                    raise errors.DataError(f"{path}: needs datasets 'data' and 'label'")
                shape, labels = f["data"].shape, np.asarray(f["label"][:]).reshape(-1)
                has_normal = "normal" in f
                if has_normal and f["normal"].shape != shape:
                    raise errors.DataError(
                        f"{path}: 'normal' has shape {f['normal'].shape}, 'data' {shape}"
                    )
        except OSError as e:
            raise errors.DataError(f"{path}: not a readable HDF5 file ({e})") from e
        if len(shape) != 3 or shape[2] != 3 or len(labels) != shape[0]:
            raise errors.DataError(
                f"{path}: 'data' must be [n, points, 3] with one label per cloud, got "
                f"{shape} and {len(labels)} labels"
            )
        bad = np.flatnonzero((labels < 0) | (labels >= num_classes))
        if len(bad):
            raise errors.DataError(
                f"{path}: label[{bad[0]}] = {labels[bad[0]]} is outside 0..{num_classes - 1}"
            )
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


@dataclasses.dataclass(frozen=True)
class _ShapeNetReader:
    """`(path, category), i -> (example, points in the file)` for `FileSource` (picklable)."""

    num_points: int
    seed: int
    split_code: int

    def __call__(self, item, i: int) -> tuple[dict, int]:
        path, cat = item
        parts = SHAPENET_PARTS_PER_CATEGORY[cat]
        raw, part = read_shapenet_txt(path, parts)
        raw[:, :3] = ops.normalize_unit_sphere(raw[:, :3])
        n, m = len(raw), self.num_points
        mask = np.ones(m, np.float32)
        if n >= m:
            idx = ops.random_sample(n, m, np.random.default_rng([self.seed, self.split_code, i]))
            pts, part = raw[idx], part[idx]
        else:
            pts = np.zeros((m, 6), np.float32)
            pts[:n] = raw
            part = np.concatenate([part, np.full(m - n, parts[0], np.int32)])
            mask[n:] = 0
        example = {
            "points": pts.astype(np.float32),
            "part": part.astype(np.int32),
            "category": np.int32(cat),
            "point_mask": mask,
        }
        return example, n


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
      root: the dataset folder or its parent.
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
    if layout == "normal_resampled":
        prefix = f"modelnet{num_categories}"
        marker = f"{prefix}_shape_names.txt"
        folder = _find_folder(base, MODELNET_FOLDERS[layout], marker)
        if folder is None:
            raise _not_found(
                f"ModelNet{num_categories} (modelnet40_normal_resampled)", base,
                MODELNET_FOLDERS[layout], marker, _TEXT_LAYOUT.replace("modelnet40", prefix),
                MODELNET40_URLS[layout],
            )  # fmt: skip
        names = _read_lines(folder / marker, "class names")
        items = {s: _modelnet_text_items(folder, prefix, names, s) for s in ("train", "test")}
        data_files = [folder / marker] + [folder / f"{prefix}_{s}.txt" for s in items]
        data_files += [p for s in items for p, _ in items[s]]

        reader = _ModelNetTextReader

    else:
        marker = "shape_names.txt"
        folder = _find_folder(base, MODELNET_FOLDERS[layout], marker)
        if folder is None:
            raise _not_found(
                "ModelNet40 (modelnet40_ply_hdf5_2048)", base, MODELNET_FOLDERS[layout], marker,
                _H5_LAYOUT, MODELNET40_URLS[layout],
            )  # fmt: skip
        names = _read_lines(folder / marker, "class names")
        items = {s: _h5_items(folder, s, len(names), normals) for s in ("train", "test")}
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
# ShapeNetPart.

_SHAPENET_LAYOUT = (
    "<dir>/synsetoffset2category.txt, <dir>/<synset>/<id>.txt (lines x y z nx ny nz part) and "
    "<dir>/train_test_split/shuffled_{train,val,test}_file_list.json"
)


def _shapenet_categories(path: pathlib.Path) -> dict[str, str]:
    """synset -> category name, checked against the 16 known categories."""
    out = {}
    for k, line in enumerate(_read_lines(path, "category map"), 1):
        fields = line.split()
        if len(fields) != 2:
            raise errors.DataError(f"{path}:{k}: expected '<Name> <synset>', got {line!r}")
        name, synset = fields
        if name not in SHAPENET_SYNSETS:
            raise errors.DataError(
                f"{path}:{k}: unknown category {name!r}; known: {', '.join(SHAPENET_CATEGORIES)}"
            )
        out[synset] = name
    return out


def _shapenet_items(folder: pathlib.Path, split: str, synsets: dict[str, str]):
    path = folder / "train_test_split" / f"shuffled_{split}_file_list.json"
    if not path.is_file():
        raise errors.DataError(f"{path}: file not found (ShapeNetPart {split} split)")
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise errors.DataError(f"{path}: not a JSON list ({e})") from e
    if not isinstance(entries, list):
        raise errors.DataError(f"{path}: expected a JSON list of 'shape_data/<synset>/<id>'")
    items = []
    for k, entry in enumerate(entries):
        parts = entry.split("/") if isinstance(entry, str) else []
        if len(parts) != 3 or parts[1] not in synsets:
            raise errors.DataError(
                f"{path}: entry {k} {entry!r} is not 'shape_data/<synset>/<id>' with a synset of "
                "synsetoffset2category.txt"
            )
        cat = SHAPENET_CATEGORIES.index(synsets[parts[1]])
        file = folder / parts[1] / f"{parts[2]}.txt"
        if not file.is_file():
            raise errors.DataError(f"{path}: entry {k} {entry!r}: {file} not found")
        items.append((cat, parts[2], file))
    if not items:
        raise errors.DataError(f"{path}: lists no shapes")
    items.sort(key=lambda t: (t[0], t[1]))  # yanx27's order: category, then sorted id
    return [(file, cat) for cat, _, file in items]


def load_shapenetpart(
    root: str | os.PathLike,
    *,
    num_points: int = 2500,
    seed: int = 0,
    cache: bool = True,
    cache_dir: str | os.PathLike | None = None,
    workers: int | None = None,
) -> tuple[dict, dict]:
    """ShapeNetPart `{"train", "val", "test"}` sources of `{"points": float32 [num_points, 6],
    "part": int32 [num_points] (global id), "category": int32, "point_mask": float32
    [num_points]}` and a description (`parts_per_category`: `SHAPENET_PARTS_PER_CATEGORY`);
    `cache`, `cache_dir` and `workers` as in `load_modelnet`."""
    num_points = int(num_points)
    if num_points < 1:
        raise errors.ConfigError(f"config.data.num_points={num_points}: must be >= 1")
    base = _resolve_root(root)
    marker = "synsetoffset2category.txt"
    folder = _find_folder(base, SHAPENET_FOLDERS, marker)
    if folder is None:
        raise _not_found(
            "ShapeNetPart (shapenetcore_partanno_segmentation_benchmark_v0_normal)", base,
            SHAPENET_FOLDERS, marker, _SHAPENET_LAYOUT, SHAPENET_URL,
        )  # fmt: skip
    synsets = _shapenet_categories(folder / marker)
    splits_ = ("train", "val", "test")
    items = {s: _shapenet_items(folder, s, synsets) for s in splits_}

    sources = {
        s: FileSource(
            tuple(items[s]), _ShapeNetReader(num_points, int(seed), SPLIT_CODES[s]), f"{folder} {s}"
        )
        for s in splits_
    }
    description = {
        "data": "ShapeNetPart (shapenetcore_partanno_segmentation_benchmark_v0_normal)",
        "dir": str(folder),
        "categories": list(SHAPENET_CATEGORIES),
        "num_categories": len(SHAPENET_CATEGORIES),
        "parts_per_category": [list(p) for p in SHAPENET_PARTS_PER_CATEGORY],
        "num_parts": sum(_PARTS_COUNT),
        "sizes": {s: len(items[s]) for s in splits_},
        "num_points": num_points,
        "sampling": (
            "xyz normalised to the unit sphere over all the file's points; num_points drawn "
            f"without replacement (fixed per shape, seed {int(seed)}); shorter files padded "
            "with zeros, point_mask 0"
        ),
    }
    if not cache:
        description["cache"] = "none: every access reads the files"
        return sources, description
    data_files = [folder / marker]
    data_files += [folder / "train_test_split" / f"shuffled_{s}_file_list.json" for s in splits_]
    data_files += [p for s in splits_ for p, _ in items[s]]
    spec = dict(
        version=_CACHE_VERSION,
        kind="shapenetpart",
        dir=str(folder),
        num_points=num_points,
        seed=int(seed),
        files=_files_digest(data_files),
    )
    specs = {
        "points": ((num_points, 6), np.float32),
        "part": ((num_points,), np.int32),
        "category": ((), np.int32),
        "point_mask": ((num_points,), np.float32),
    }
    splits, directory, stats = _cached(
        cache_dir, folder, f"shapenetpart-{num_points}", spec, sources, specs, workers
    )
    description["cache"] = directory
    description.update(stats)
    return splits, description
