"""The dataset-independent API of `vision.data`: the data config (`data_config`), the splits of
any dataset and source (`load`), and the train / eval preprocessing (`transforms_for`).

Splits: train is the release's training set; test is its test set (CIFAR, Fashion-MNIST) or its
validation set (Tiny-ImageNet, ImageNet-style folders: the split these papers report).
Validation (`config.data.val_from_train`): 0 = the test split itself, which is how the
Sliceformer and DeiT-family tables select their reported accuracy (best over epochs on the
evaluation split); n > 0 holds out the last n training examples instead (seeded shuffle for
lazy folders, whose files are sorted by class). `num_train` / `num_val` / `num_test` > 0 keep a
seeded random subset of that many examples (all classes, unlike a prefix of sorted folders).

Preprocessing (`transforms_for`): training applies the recipe's augmentation (`augment`:
"crop_flip" = random crop with zero padding + horizontal flip, as the Sliceformer CIFAR recipe;
"inception" = random resized crop + flip, DeiT; "none"), then RandAugment if named, then
normalisation to float32 and random erasing; evaluation resizes (ImageNet's resize + centre crop
at `eval_crop_pct` for "inception" recipes) and normalises. Both produce float32 [S, S, 3] at
`image_size`. Mixup / CutMix and label smoothing act on whole batches in the training step
(`vision.mixup`).
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable

import ml_collections
import numpy as np

from attnbench import errors
from attnbench.data import cache, catalog
from attnbench.data.formats import fashion_mnist
from vision.data import cifar, standin, tfds, transforms
from vision.data.folders import read_class_folders, read_tiny_imagenet
from vision.data.views import _in_memory, _Subset, _subset

__all__ = [
    "DATASETS",
    "SOURCES",
    "AUGMENTS",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "data_config",
    "load",
    "parse_rand_augment",
    "transforms_for",
]

# dataset -> (classes, native image side or None for variable-size photos)
DATASETS: dict[str, tuple[int, int | None]] = {
    "cifar10": (10, 32),
    "cifar100": (100, 32),
    "tiny_imagenet": (200, 64),
    "imagenet": (1000, None),
    "places365": (365, None),
    "inaturalist": (0, None),  # classes: from the folders (2017: 5,089; 2018: 8,142; ...)
    "folder": (0, None),  # any ImageNet-style class folders; classes from the folders
}
SOURCES = ("official", "standin", "tfds")
AUGMENTS = ("crop_flip", "inception", "none")

# ImageNet's channel statistics (torchvision / timm IMAGENET_DEFAULT_MEAN / _STD)
IMAGENET_MEAN, IMAGENET_STD = transforms.IMAGENET_MEAN, transforms.IMAGENET_STD


def data_config(dataset: str) -> ml_collections.ConfigDict:
    """`config.data` of a vision recipe on `dataset`, with neutral defaults; recipes set theirs."""
    if dataset not in DATASETS:
        raise errors.ConfigError(
            f"unknown vision dataset {dataset!r}; known: {', '.join(DATASETS)}"
        )
    classes, side = DATASETS[dataset]
    d = ml_collections.ConfigDict()
    d.dataset = dataset  # which release (fixes the reader and the class count)
    d.source = "official"  # official (files in dir) | standin (Fashion-MNIST) | tfds
    d.dir = ""  # official: the release folder; tfds: TFDS data_dir ("" = TFDS default)
    d.tfds_name = ""  # tfds: the TFDS dataset name, e.g. "cifar10", "imagenet2012"
    d.standin_dir = fashion_mnist.DEFAULT_DIR  # folder of the Fashion-MNIST IDX files
    d.num_classes = classes  # 0 = from the class folders (read at load time)
    d.image_size = side or 224  # model input side (square)
    d.val_from_train = 0  # 0: validate on the test split; n > 0: hold out n training images
    d.num_train = 0  # 0 = all; n > 0 a seeded random subset of n
    d.num_val = 0  # as num_train, for the validation split
    d.num_test = 0  # as num_train, for the test split
    d.seed = 0  # subsets and the held-out split
    d.augment = "crop_flip" if side else "inception"  # crop_flip | inception | none
    d.crop_padding = 4  # crop_flip: zero padding before the random crop (torchvision padding=4)
    d.rrc_scale = (0.08, 1.0)  # inception: RandomResizedCrop area range
    d.hflip = True  # random horizontal flip in training
    d.rand_augment = ""  # e.g. "rand-m9-mstd0.5-inc1" (timm notation); "" = off
    d.random_erasing = 0.0  # probability of random erasing (timm `reprob`), after normalising
    d.eval_crop_pct = 0.875  # inception: evaluation resize to side / pct, then centre crop
    d.mean = IMAGENET_MEAN  # per-channel mean of pixels / 255
    d.std = IMAGENET_STD  # per-channel std of pixels / 255
    # Batch-level, in the training step (vision.mixup; timm's Mixup in batch mode)
    d.mixup = 0.0  # mixup alpha; 0 = off
    d.cutmix = 0.0  # cutmix alpha; 0 = off
    d.mix_prob = 1.0  # probability of mixing a batch at all
    d.switch_prob = 0.5  # probability of cutmix instead of mixup when both are on
    d.label_smoothing = 0.0  # label smoothing of the (mixed) targets
    return d


def load(d, *, evaluate_only: bool = False) -> tuple[dict, dict]:
    """The splits of `config.data` `d` (fields of `data_config`), unpreprocessed.
    `evaluate_only` (a run of `config.total_steps=0`): class folders without `train/` are read,
    their class list from `val/` (`vision.data.folders.read_class_folders`), train empty.

    Returns:
      ({"train", "val", "test"} -> random-access sources of {"image": uint8 [H, W, 3],
      "label": int32}, a JSON-able description with `num_classes`).
    """
    dataset = d.dataset
    if dataset not in DATASETS:
        raise errors.ConfigError(
            f"config.data.dataset={dataset!r}: unknown; known: {', '.join(DATASETS)}"
        )
    if d.source not in SOURCES:
        raise errors.ConfigError(
            f"config.data.source={d.source!r}: vision knows {', '.join(SOURCES)}"
        )
    description: dict = {"dataset": dataset}
    if d.source == "standin":
        splits = _in_memory(standin._read_standin(d.standin_dir))
        description.update(
            standin="Fashion-MNIST (Debian dataset-fashion-mnist), 28x28 gray zero-padded to "
            "32x32 and repeated to 3 channels; 10 classes",
            package=fashion_mnist.PACKAGE,
        )
        classes = fashion_mnist.NUM_CLASSES
    elif d.source == "tfds":
        splits = tfds._read_tfds(d)
        description.update(tfds_name=d.tfds_name)
        classes = d.num_classes
    else:
        splits, folder = _read_official(dataset, d.dir, evaluate_only)
        description.update(dir=str(pathlib.Path(folder).expanduser()))
        if not len(splits["train"]):
            description["classes_from"] = "val/ (no train/ folder: evaluation only)"
        found = getattr(splits["train"], "classes", None)
        classes = len(found) if found is not None else DATASETS[dataset][0]
        if d.num_classes and classes != d.num_classes:
            raise cache.DataError(
                f"{folder}: {classes} classes found, config.data.num_classes is {d.num_classes} "
                f"({dataset}); point config.data.dir at the full release or set num_classes"
                + (f" (`attnbench-data verify {dataset}` checks it)" if dataset != "folder" else "")
            )
    train, test = splits["train"], splits["test"]
    if d.val_from_train:
        n = int(d.val_from_train)
        if not 0 < n < len(train):
            raise errors.ConfigError(
                f"config.data.val_from_train={n}: the training split has {len(train)} examples"
            )
        order = np.random.default_rng([d.seed, 2]).permutation(len(train))
        rest, held = np.sort(order[:-n]), np.sort(order[-n:])
        train, val = _Subset(train, rest), _Subset(train, held)
        description["val"] = f"{n} training images held out (seed {d.seed})"
    else:
        val = test
        description["val"] = "the test split (model selection on it, as the papers' tables)"
    out = {
        # an empty train (val/ only, evaluation only) draws no subset: nothing is trained on
        "train": _subset(train, int(d.num_train), d.seed, "num_train") if len(train) else train,
        "val": _subset(val, int(d.num_val), d.seed, "num_val"),
        "test": _subset(test, int(d.num_test), d.seed, "num_test"),
    }
    description["num_classes"] = int(classes)
    description["sizes"] = {s: len(v) for s, v in out.items()}
    return out, description


def _read_official(dataset: str, config_dir: str, evaluate_only: bool) -> tuple[dict, str]:
    """The official release of `dataset` (`{"train", "test"}` sources) and the folder read:
    `config_dir`, else the folder `attnbench-data fetch` puts it in under the data root
    (`attnbench.data.catalog.official_dir`; every dataset but `folder` is in the catalog,
    vision/data/sources.py). An error reading it names the command that fetches it."""
    if dataset == "folder":  # any class folders: only config.data.dir says where
        if not config_dir:
            raise cache.DataError(
                "config.data.source='official' with dataset 'folder' needs config.data.dir, a "
                "folder of train/<class>/ and val/<class>/ images; or set "
                "config.data.source='standin' for the offline Fashion-MNIST stand-in"
            )
        return read_class_folders(config_dir, evaluate_only=evaluate_only), config_dir
    folder = catalog.official_dir(dataset, config_dir)
    try:
        if dataset in ("cifar10", "cifar100"):
            return _in_memory(cifar._read_cifar(dataset, folder)), folder
        if dataset == "tiny_imagenet":
            return read_tiny_imagenet(folder), folder
        return read_class_folders(folder, dataset, evaluate_only=evaluate_only), folder
    except cache.DataError as e:
        if "attnbench-data" in str(e):
            raise
        raise cache.DataError(
            f"{e} (`attnbench-data verify {dataset} {folder}` checks the folder; "
            f"`attnbench-data fetch {dataset}` gets the release)"
        ) from None


# --------------------------------------------------------------------------------------------
# Preprocessing
# --------------------------------------------------------------------------------------------


def parse_rand_augment(spec: str) -> dict:
    """timm's RandAugment string, e.g. "rand-m9-mstd0.5-inc1" (DeiT's), as keyword arguments
    of `transforms.rand_augment`: m = magnitude, n = ops per image (default 2), mstd = the
    magnitude's std, inc = the increasing-magnitude op variants."""
    parts = spec.split("-")
    if parts[0] != "rand":
        raise errors.ConfigError(
            f"config.data.rand_augment={spec!r}: expected timm's notation 'rand-m9-mstd0.5-inc1'"
        )
    out = {"num_ops": 2, "magnitude": 10, "magnitude_std": 0.0, "increasing": False}
    for part in parts[1:]:
        for key, name, kind in (
            ("mstd", "magnitude_std", float),
            ("inc", "increasing", lambda v: bool(int(v))),
            ("m", "magnitude", float),
            ("n", "num_ops", int),
        ):
            if part.startswith(key):
                try:
                    out[name] = kind(part[len(key) :])
                except ValueError:
                    raise errors.ConfigError(
                        f"config.data.rand_augment={spec!r}: bad value in {part!r}"
                    ) from None
                break
        else:
            raise errors.ConfigError(
                f"config.data.rand_augment={spec!r}: unknown part {part!r}; known: m<magnitude>, "
                "n<ops>, mstd<std>, inc<0|1>"
            )
    return out


def transforms_for(d) -> tuple[Callable, Callable]:
    """`(train_transform(example, rng), eval_fn(example))` for `config.data` `d`: both map
    `{"image": uint8 [H, W, 3], ...}` to float32 `[image_size, image_size, 3]` normalised."""
    if d.augment not in AUGMENTS:
        raise errors.ConfigError(
            f"config.data.augment={d.augment!r}: unknown; known: {', '.join(AUGMENTS)}"
        )
    size = int(d.image_size)
    native = DATASETS[d.dataset][1] if d.source != "standin" else standin._STANDIN_SIDE
    steps: list = []
    # Square images of another size than the model's (Tiny-ImageNet's 64 px at 224, or
    # variable-size photos) are resized; at the native size nothing is resampled.
    resize = [] if native == size else [transforms.resize((size, size))]
    if d.augment == "inception":
        steps.append(transforms.random_resized_crop(size, scale=tuple(d.rrc_scale)))
    else:
        if d.augment == "crop_flip" and native:
            steps.append(transforms.random_crop(native, int(d.crop_padding)))
        steps += resize
    if d.hflip:
        steps.append(transforms.horizontal_flip())
    if d.rand_augment:
        steps.append(transforms.rand_augment(**parse_rand_augment(d.rand_augment)))
    normalize = transforms.normalize(tuple(d.mean), tuple(d.std))
    steps.append(normalize)
    if d.random_erasing:
        steps.append(transforms.random_erasing(float(d.random_erasing)))
    train = transforms.compose(*steps)

    if d.augment == "inception":
        geometry = [transforms.resize_center_crop(size, crop_pct=float(d.eval_crop_pct))]
    else:
        geometry = resize
    evaluation = transforms.compose(*geometry, normalize)
    rng = np.random.default_rng(0)  # unused: every evaluation step is deterministic

    def evaluate(example: dict) -> dict:
        return evaluation(example, rng)

    return train, evaluate
