"""The point-cloud data entry point, which `pointcloud.data` exports:
`load(config.data) -> (splits, description)` for ModelNet40 classification and ShapeNetPart
segmentation, official files or offline shapes, and `train_transform(config.data)`
(augmentation, off unless asked for).

Config fields read (`config.data`):
  dataset        "modelnet40" or "shapenetpart".
  source         "standin" (offline shapes of `pointcloud.data.shapes`, labelled as such) or
                 "official" (`pointcloud.data.modelnet40`, `pointcloud.data.shapenetpart`).
  dir            official: the dataset folder (or its parent); standin: the data root whose
                 `pointcloud/` folder caches the generated sets (`attnbench.data.cache.data_root`:
                 empty means $ATTNBENCH_DATA or ~/.cache/attnbench).
  layout         ModelNet40 official: "normal_resampled" (default) or "hdf5".
  sampling       ModelNet40 official: "fps" (default, SAMSA) or "first".
  num_categories ModelNet official: 40 (default) or 10 (ModelNet10, normal_resampled).
  normals        whether the model reads normals (default True; HDF5 files without normals
                 are then refused).
  num_points     points per cloud.
  num_train, num_val, num_test   stand-in sizes (defaults: the real sets' sizes, ModelNet40
                 9,843 / 0 / 2,468 and ShapeNetPart 12,137 / 1,870 / 2,874).
  seed           the stand-in's generator seed; the official ShapeNetPart subsampling seed.
  random_pose    stand-in: a random rotation per shape (default False: the real sets are
                 pre-aligned).
  cache          convert / generate once into `.npy` arrays and memory-map them (default
                 True); False reads the official files at every access, or generates the
                 stand-in in memory.
  cache_dir      official: where the `pointcloud/` cache goes (default: the dataset folder).
  workers        official: processes for the one-time conversion (default: the CPUs, <= 8).
  trainval       ShapeNetPart: train on train + val (yanx27's `train_partseg.py` does);
                 default False. The val split is unchanged.
  augment        "" (default: SAMSA trains without augmentation) or "scale_shift" (PointNet++'s
                 `random_scale_point_cloud` 0.8-1.25 and `shift_point_cloud` +-0.1 per axis,
                 yanx27 `provider.py`, on xyz; normals are unchanged by both).

Splits: ModelNet40 has no validation split. yanx27's `train_classification.py` evaluates the
test split after every epoch and keeps the best, and the papers report test accuracy, so
here `val` IS the test split (the same source) for both sources, and the description says so:
any model selection on `val` is selection on test. A stand-in with `num_val > 0` gets a
separate generated val split instead. ShapeNetPart uses its official train / val / test
lists (stand-in: three generated splits).
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np

from attnbench import errors
from attnbench.data import cache
from pointcloud.data import modelnet40, release_files, shapenetpart

__all__ = ["load", "train_transform", "ConcatSource", "DATASETS", "SOURCES", "AUGMENTS"]

DATASETS = ("modelnet40", "shapenetpart")
SOURCES = ("standin", "official")
AUGMENTS = ("", "scale_shift")
_STANDIN_VERSION = 1  # bump when the generator's output for a given spec changes
_VAL_IS_TEST = (
    "the test split: ModelNet40 has no validation split (yanx27's train_classification.py "
    "evaluates test every epoch and the papers report test accuracy), so model selection on "
    "val is selection on test"
)


def _get(cfg, key: str, default=None):
    if hasattr(cfg, "get"):
        value = cfg.get(key, default)
    else:
        value = getattr(cfg, key, default)
    return default if value is None else value


@dataclasses.dataclass(frozen=True)
class ConcatSource:
    """Several random-access sources read as one (ShapeNetPart's train + val)."""

    sources: tuple

    def __len__(self) -> int:
        return sum(len(s) for s in self.sources)

    def __getitem__(self, i: int) -> dict:
        i = int(i)
        if i < 0:
            i += len(self)
        for s in self.sources:
            if 0 <= i < len(s):
                return s[i]
            i -= len(s)
        raise IndexError("index out of range")


def _size(data_cfg, key: str, default: int) -> int:
    value = _get(data_cfg, key, default)
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
        raise errors.ConfigError(f"config.data.{key}={value!r}: must be an integer >= 0")
    return int(value)


def _standin(data_cfg, dataset: str, num_points: int, seed: int) -> tuple[dict, dict]:
    random_pose = bool(_get(data_cfg, "random_pose", False))
    # The dataset's module: the real set's sizes (the stand-in's defaults) and the stand-in glue.
    if dataset == "modelnet40":
        module, defaults = modelnet40, modelnet40.MODELNET40_SIZES
    else:
        module, defaults = shapenetpart, shapenetpart.SHAPENETPART_SIZES
    sizes = {k: _size(data_cfg, f"num_{k}", v) for k, v in defaults.items()}
    if dataset == "modelnet40":
        names = ("train", "val", "test") if sizes["val"] else ("train", "test")
    else:
        names = ("train", "val", "test")
    for k in names:
        if sizes[k] < 1:
            raise errors.ConfigError(f"config.data.num_{k}={sizes[k]}: must be >= 1")

    def generate() -> dict:
        common = dict(num_points=num_points, seed=seed, random_pose=random_pose)
        return module.generate_standin(sizes, **common)

    description = {
        "data": (
            f"offline generated shapes (pointcloud.data.shapes), NOT {dataset}: parametric "
            "primitives and compositions sampled on the surface with exact normals; format "
            "only, numbers not comparable with the papers'"
        ),
        "sizes": {k: sizes[k] for k in names},
        "num_points": num_points,
        "seed": seed,
        "random_pose": random_pose,
    }
    description.update(module.standin_description())
    if not _get(data_cfg, "cache", True):
        description["cache"] = "none: generated in memory"
        return generate(), description
    spec = dict(
        version=_STANDIN_VERSION,
        dataset=dataset,
        sizes={k: sizes[k] for k in names},
        num_points=num_points,
        seed=seed,
        random_pose=random_pose,
    )

    def write(tmp: pathlib.Path) -> None:
        for split, made in generate().items():
            for key, array in made.arrays.items():
                np.save(tmp / f"{split}_{key}.npy", array)

    where = cache.data_root(_get(data_cfg, "dir", "")) / "pointcloud"
    name = f"{dataset}-like-{num_points}"
    directory = cache.build_once(where, name, spec, write)
    keys = module.STANDIN_KEYS
    splits = {split: release_files._open_split(directory, split, keys) for split in names}
    # Relative to the data root: summaries are committed, the user's home is not theirs to hold.
    description["cache"] = f"<data root>/pointcloud/{directory.name}"
    return splits, description


def load(data_cfg) -> tuple[dict, dict]:
    """`({"train", "val", "test"}: random-access sources of example dicts, description)`.

    Examples: `{"points": float32 [N, 6] (xyz on the unit sphere, then normals), "label":
    int32}` (ModelNet40) or `{"points", "part": int32 [N] (global part id), "category": int32,
    and "point_mask": float32 [N] for official ShapeNetPart}`. The description names the
    source, the folder or generator, sizes, class / category names, `num_classes` or
    `parts_per_category`, the resampling and the val-split choice."""
    dataset = _get(data_cfg, "dataset", "")
    source = _get(data_cfg, "source", "standin")
    if dataset not in DATASETS:
        raise errors.ConfigError(f"config.data.dataset={dataset!r}: known: {', '.join(DATASETS)}")
    if source not in SOURCES:
        raise errors.ConfigError(f"config.data.source={source!r}: known: {', '.join(SOURCES)}")
    num_points = _get(data_cfg, "num_points", 1024 if dataset == "modelnet40" else 2048)
    if not isinstance(num_points, (int, np.integer)) or isinstance(num_points, bool):
        raise errors.ConfigError(f"config.data.num_points={num_points!r}: must be an integer")
    num_points = int(num_points)
    if num_points < 1:
        raise errors.ConfigError(f"config.data.num_points={num_points}: must be >= 1")
    seed = int(_get(data_cfg, "seed", 0))
    if source == "standin":
        splits, description = _standin(data_cfg, dataset, num_points, seed)
    elif dataset == "modelnet40":
        splits, description = modelnet40.load_modelnet(
            _get(data_cfg, "dir", ""),
            layout=_get(data_cfg, "layout", "normal_resampled"),
            num_points=num_points,
            sampling=_get(data_cfg, "sampling", "fps"),
            num_categories=int(_get(data_cfg, "num_categories", 40)),
            normals=bool(_get(data_cfg, "normals", True)),
            seed=seed,
            cache=bool(_get(data_cfg, "cache", True)),
            cache_dir=_get(data_cfg, "cache_dir", None) or None,
            workers=_get(data_cfg, "workers", None) or None,
        )
    else:
        splits, description = shapenetpart.load_shapenetpart(
            _get(data_cfg, "dir", ""),
            num_points=num_points,
            seed=seed,
            cache=bool(_get(data_cfg, "cache", True)),
            cache_dir=_get(data_cfg, "cache_dir", None) or None,
            workers=_get(data_cfg, "workers", None) or None,
        )
    description = dict(source=source, dataset=dataset, **description)
    if dataset == "modelnet40" and "val" not in splits:
        splits = dict(splits, val=splits["test"])
        description["val"] = _VAL_IS_TEST
    if dataset == "shapenetpart" and _get(data_cfg, "trainval", False):
        splits = dict(splits, train=ConcatSource((splits["train"], splits["val"])))
        description["train"] = "train + val (as yanx27's train_partseg.py)"
    return {k: splits[k] for k in ("train", "val", "test")}, description


def _scale_shift(example: dict, rng: np.random.Generator) -> dict:
    """PointNet++'s scale (uniform 0.8..1.25 per cloud) then shift (uniform -0.1..0.1 per
    axis) of xyz; normals kept (a uniform positive scale and a shift do not change them)."""
    points = np.array(example["points"], np.float32)  # a copy: sources may be read-only
    scale = rng.uniform(0.8, 1.25)
    shift = rng.uniform(-0.1, 0.1, 3)
    points[:, :3] = points[:, :3] * scale + shift
    return dict(example, points=points)


def train_transform(data_cfg):
    """`transform(example, rng) -> example` for training examples, or None (the default: SAMSA
    trains without augmentation). `config.data.augment="scale_shift"`: PointNet++'s."""
    augment = _get(data_cfg, "augment", "") or ""
    if augment not in AUGMENTS:
        raise errors.ConfigError(
            f"config.data.augment={augment!r}: known: {', '.join(repr(a) for a in AUGMENTS)}"
        )
    return _scale_shift if augment == "scale_shift" else None
