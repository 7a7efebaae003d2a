"""ShapeNetPart: the reader of the official release
(`shapenetcore_partanno_segmentation_benchmark_v0_normal`) and the glue of the offline stand-in
(the generated composite objects with parts of `pointcloud.data.shapes`).

`load_shapenetpart` finds the files under `root`, resamples every shape to a fixed number of
points and returns random-access sources per split with a description, converted once into
cached `.npy` arrays by default (`pointcloud.data.release_files`, which holds the plumbing shared
with `pointcloud.data.modelnet40`). `attnbench-data fetch shapenetpart` puts the release in the
data root (`SHAPENET_CATALOG`), where `load_shapenetpart` finds it with an empty
`config.data.dir`; a release not found, or a file it lists missing, is an error naming that
command.

Layout, as the loader the papers follow reads it (facts from its code, restated):

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

Resampling here (a documented choice):

* ShapeNetPart: xyz normalised over all the file's points, then `num_points` points drawn
  without replacement with `numpy.random.default_rng([seed, split, index])` when the file
  has at least that many (fixed per shape: the same points at every epoch and in every
  split); a file with fewer points keeps all of them, in order, padded with zeros to
  `num_points`. Every example has `point_mask` (float32 [num_points], 1 for a real point, 0
  for padding; padded points carry the category's first part id and must be masked out of
  losses and IoUs). SAMSA used "the initial 2,500 point-normal without any change";
  `num_points=2500` is the closest fixed-size reading of that.

Stand-in (`config.data.source="standin"`, served by `pointcloud.data.loader`):
`SHAPENETPART_SIZES` (the official split lists' sizes, the stand-in's default sizes),
`generate_standin` (`shapes.shapenetpart_like`, 7 categories, 24 parts) and
`standin_description`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
from collections.abc import Sequence

import numpy as np

from attnbench import errors
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
    "SHAPENET_URL",
    "SHAPENET_CATALOG",
    "SHAPENET_CATEGORIES",
    "SHAPENET_SYNSETS",
    "SHAPENET_PARTS_PER_CATEGORY",
    "SHAPENETPART_SIZES",
    "read_shapenet_txt",
    "load_shapenetpart",
    "generate_standin",
    "standin_description",
]

SHAPENET_URL = (
    "https://shapenet.cs.stanford.edu/media/"
    "shapenetcore_partanno_segmentation_benchmark_v0_normal.zip"
)
SHAPENET_FOLDERS = ("", "shapenetcore_partanno_segmentation_benchmark_v0_normal")
# `attnbench-data`'s name for the release and the folder it fetches it into under the data root
# (pointcloud/data/sources.py; tests/pointcloud/data/test_fetch_shapenetpart.py checks they agree).
SHAPENET_CATALOG = ("shapenetpart", "shapenetcore_partanno_segmentation_benchmark_v0_normal")
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


def _shapenet_items(folder: pathlib.Path, split: str, synsets: dict[str, str], fix: str):
    """A split's `(path, category)` items, in yanx27's order, each listed file checked to
    exist (not read); `fix` says what to do about a missing file."""
    path = folder / "train_test_split" / f"shuffled_{split}_file_list.json"
    if not path.is_file():
        raise errors.DataError(f"{path}: file not found (ShapeNetPart {split} split); {fix}")
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
            raise errors.DataError(f"{path}: entry {k} {entry!r}: {file} not found; {fix}")
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
    `root` (the release folder or its parent; empty: the data root, where `attnbench-data fetch
    shapenetpart` puts it), `cache`, `cache_dir` and `workers` as in `load_modelnet`. With
    `cache=False` nothing but the category map and the split lists is read until a shape is
    indexed (each listed file is checked to exist), so the sizes are cheap to count."""
    num_points = int(num_points)
    if num_points < 1:
        raise errors.ConfigError(f"config.data.num_points={num_points}: must be >= 1")
    base = _resolve_root(root)
    marker = "synsetoffset2category.txt"
    folder = _find_folder(base, SHAPENET_FOLDERS, marker)
    if folder is None:
        raise _not_found(
            "ShapeNetPart (shapenetcore_partanno_segmentation_benchmark_v0_normal)", base,
            SHAPENET_FOLDERS, marker, _SHAPENET_LAYOUT, SHAPENET_URL, *SHAPENET_CATALOG,
        )  # fmt: skip
    fetch_name, fetched = SHAPENET_CATALOG
    fix = _incomplete(folder, fetch_name, base, fetched)
    synsets = _shapenet_categories(folder / marker)
    splits_ = ("train", "val", "test")
    items = {s: _shapenet_items(folder, s, synsets, fix) for s in splits_}

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


# --------------------------------------------------------------------------------------------
# The offline stand-in, as `pointcloud.data.loader` serves it.

SHAPENETPART_SIZES = {"train": 12137, "val": 1870, "test": 2874}  # the official split lists
STANDIN_KEYS = ("points", "part", "category")  # the arrays of a cached stand-in split


def generate_standin(sizes: dict, **common) -> dict:
    """The stand-in's splits (`shapes.shapenetpart_like`); `sizes`: `{"train", "val", "test"}`;
    `common`: num_points, seed, random_pose."""
    return shapes.shapenetpart_like(sizes["train"], sizes["val"], sizes["test"], **common)


def standin_description() -> dict:
    """The stand-in's categories and parts, as the description names them."""
    return dict(
        categories=list(shapes.CATEGORIES),
        num_categories=len(shapes.CATEGORIES),
        parts_per_category=[list(p) for p in shapes.PARTS_PER_CATEGORY],
        num_parts=shapes.NUM_PARTS,
        part_names={c: list(shapes.PART_NAMES[c]) for c in shapes.CATEGORIES},
        optional_parts={f"{c}/{p}": prob for (c, p), prob in shapes.OPTIONAL.items()},
    )
