"""Image datasets: official readers, the offline stand-in, and the train / eval preprocessing.

    d = data.data_config("cifar10")              # config.data of a vision recipe
    splits, description = data.load("cifar10", d)   # {"train", "val", "test"} sources
    train_fn, eval_fn = data.transforms_for(d)   # per-example preprocessing

Sources (`config.data.source`), every one yielding `{"image": uint8 [H, W, 3], "label": int32}`:
  official  the release files under `config.data.dir`:
            cifar10 / cifar100  the "python version" pickles (`attnbench.data.formats.cifar`;
            CIFAR-100's fine
                          labels), read into memory;
            tiny_imagenet  the release folder `tiny-imagenet-200/`: `wnids.txt`,
                          `train/<wnid>/images/*.JPEG`, `val/images/*.JPEG` with
                          `val/val_annotations.txt` (file, wnid, box); decoded lazily. Its test
                          labels are not public: val is reported as the test split.
            imagenet, places365, inaturalist, folder  ImageNet-style class folders
                          `train/<class>/**/<image>` and `val/<class>/**/<image>` (ILSVRC-2012
                          val reorganised into class folders, as torchvision / timm expect;
                          Places365 and iNaturalist exports likewise); decoded lazily.
            Class indices follow the sorted class-folder names (torchvision's `ImageFolder`,
            timm, and the ImageNet synset order), so labels agree with other tools' checkpoints;
            Tiny-ImageNet's `wnids.txt` must list exactly the training folders.
  standin   Fashion-MNIST (`attnbench.data.formats.fashion_mnist`, Debian `dataset-fashion-mnist`),
  zero-padded to
            32x32 and repeated to 3 channels: 10 classes whatever the recipe's dataset (the
            model keeps the recipe's head; labels 0-9). Labelled as a stand-in everywhere.
  tfds      the TFDS dataset `config.data.tfds_name` from `config.data.dir` (optional:
            needs `tensorflow-datasets`, the `tfds` extra), read through `tfds.data_source`.

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

import os
import pathlib
from collections.abc import Callable

import ml_collections
import numpy as np

from attnbench import errors, extras, tasks
from attnbench.data import cache
from attnbench.data.formats import cifar, fashion_mnist, image_folder
from vision import transforms

__all__ = [
    "DATASETS",
    "SOURCES",
    "AUGMENTS",
    "data_config",
    "load",
    "transforms_for",
    "read_tiny_imagenet",
    "read_class_folders",
    "Mapped",
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
_STANDIN_SIDE = 32  # Fashion-MNIST's 28 pixels + 2 zero pixels on every side, as LRA Image's

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


# --------------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------------


class Mapped:
    """`source` with `fn(example)` applied on read (deterministic preprocessing of eval splits)."""

    def __init__(self, source, fn: Callable[[dict], dict]):
        self.source, self.fn = source, fn

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, i: int) -> dict:
        return self.fn(dict(self.source[int(i)]))


class _Subset:
    """The examples `index` of `source` (a random-access view)."""

    def __init__(self, source, index: np.ndarray):
        self.source, self.index = source, np.asarray(index, np.int64)

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> dict:
        return self.source[int(self.index[i])]

    @property
    def arrays(self):  # majority-class rate in the summary, for in-memory sources
        arrays = getattr(self.source, "arrays", None)
        return None if arrays is None else {"label": arrays["label"][self.index]}


def _labels_of(source) -> np.ndarray | None:
    if hasattr(source, "labels"):
        return np.asarray(source.labels)
    arrays = getattr(source, "arrays", None)
    return None if arrays is None else np.asarray(arrays["label"])


def _subset(source, n: int, seed: int, what: str):
    if n == 0:
        return source
    if not 0 < n <= len(source):
        raise errors.ConfigError(f"config.data.{what}={n}: the split has {len(source)} examples")
    index = np.sort(np.random.default_rng([seed, 1]).permutation(len(source))[:n])
    return _Subset(source, index)


def _read_cifar(dataset: str, directory: str) -> dict:
    if dataset == "cifar10":
        splits = cifar.read_cifar10(directory)
        return {s: (cifar.planar_to_hwc(x), y) for s, (x, y) in splits.items()}
    splits = cifar.read_cifar100(directory)
    return {s: (cifar.planar_to_hwc(v[0]), v[1]) for s, v in splits.items()}  # fine labels


def read_tiny_imagenet(directory: str | os.PathLike) -> dict:
    """Tiny-ImageNet's release folder -> `{"train", "test"}` lazy sources (test = its val set).

    Raises:
      DataError: a missing `wnids.txt`, `train/` or `val/val_annotations.txt`, a class list
        that differs from the training folders, or an annotation naming an unknown class or a
        missing file, each naming the file.
    """
    root = pathlib.Path(directory).expanduser()
    if (root / "tiny-imagenet-200").is_dir() and not (root / "wnids.txt").is_file():
        root = root / "tiny-imagenet-200"
    wnids_file, annotations = root / "wnids.txt", root / "val" / "val_annotations.txt"
    for path in (wnids_file, root / "train", annotations):
        if not path.exists():
            raise cache.DataError(
                f"{path}: not found; config.data.dir must be Tiny-ImageNet's release folder "
                "tiny-imagenet-200/ (wnids.txt, train/<wnid>/images/, val/images/, "
                "val/val_annotations.txt)"
            )
    wnids = [w.strip() for w in wnids_file.read_text().split() if w.strip()]
    folders = sorted(p.name for p in (root / "train").iterdir() if p.is_dir())
    if sorted(wnids) != folders or len(set(wnids)) != len(wnids):
        extra = sorted(set(folders) - set(wnids))[:3]
        absent = sorted(set(wnids) - set(folders))[:3]
        raise cache.DataError(
            f"{wnids_file}: lists {len(wnids)} classes but train/ has {len(folders)} class "
            f"folders (not listed: {extra}; listed without a folder: {absent})"
        )
    classes = sorted(wnids)
    train = image_folder.ImageFolder(root / "train", classes=classes)
    files, labels = [], []
    index = {w: i for i, w in enumerate(classes)}
    for number, line in enumerate(annotations.read_text().splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2 or fields[1] not in index:
            raise cache.DataError(
                f"{annotations}: line {number}: expected '<file>\\t<wnid>\\t<box>' with a wnid "
                f"of wnids.txt, got {line[:80]!r}"
            )
        path = root / "val" / "images" / fields[0]
        if not path.is_file():
            raise cache.DataError(f"{annotations}: line {number}: image {path} not found")
        files.append(path)
        labels.append(index[fields[1]])
    if not files:
        raise cache.DataError(f"{annotations}: no validation images listed")
    test = image_folder.ImageFolder.from_list(files, labels, classes)
    return {"train": train, "test": test}


def read_class_folders(directory: str | os.PathLike) -> dict:
    """ImageNet-style `train/<class>/` and `val/<class>/` -> `{"train", "test"}` lazy sources
    with the training folders' class list (test = the val folder)."""
    root = pathlib.Path(directory).expanduser()
    for sub in ("train", "val"):
        if not (root / sub).is_dir():
            raise cache.DataError(
                f"{root / sub}: not found; config.data.dir must hold train/<class>/ and "
                "val/<class>/ image folders (ILSVRC-2012 val reorganised into class folders, "
                "as torchvision and timm read it)"
            )
    train = image_folder.ImageFolder(root / "train")
    return {"train": train, "test": image_folder.ImageFolder(root / "val", classes=train.classes)}


def _read_standin(directory: str) -> dict:
    pad = (_STANDIN_SIDE - fashion_mnist.SIZE) // 2
    out = {}
    for split, (images, labels) in fashion_mnist.read(directory).items():
        images = np.pad(images, ((0, 0), (pad, pad), (pad, pad)))
        out[split] = (np.repeat(images[..., None], 3, axis=-1), labels)
    return out


def _read_tfds(d) -> dict:
    tfds = extras.require("tensorflow_datasets", "config.data.source='tfds'")
    if not d.tfds_name:
        raise errors.ConfigError("config.data.source='tfds' needs config.data.tfds_name")
    out = {}
    builder = tfds.builder(d.tfds_name, data_dir=d.dir or None)
    # The evaluation split these papers report: "test" where the release has one (CIFAR),
    # else "validation" (ImageNet, Places365, iNaturalist).
    test = "test" if "test" in builder.info.splits else "validation"
    for split, name in (("train", "train"), ("test", test)):
        source = tfds.data_source(d.tfds_name, split=name, data_dir=d.dir or None)
        out[split] = Mapped(source, _from_tfds)
    return out


def _from_tfds(example: dict) -> dict:
    return {"image": np.asarray(example["image"], np.uint8), "label": np.int32(example["label"])}


def _in_memory(pairs: dict) -> dict:
    return {
        split: tasks.Split({"image": np.ascontiguousarray(x), "label": np.asarray(y, np.int32)})
        for split, (x, y) in pairs.items()
    }


def load(d) -> tuple[dict, dict]:
    """The splits of `config.data` `d` (fields of `data_config`), unpreprocessed.

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
        splits = _in_memory(_read_standin(d.standin_dir))
        description.update(
            standin="Fashion-MNIST (Debian dataset-fashion-mnist), 28x28 gray zero-padded to "
            "32x32 and repeated to 3 channels; 10 classes",
            package=fashion_mnist.PACKAGE,
        )
        classes = fashion_mnist.NUM_CLASSES
    elif d.source == "tfds":
        splits = _read_tfds(d)
        description.update(tfds_name=d.tfds_name)
        classes = d.num_classes
    else:
        if not d.dir:
            raise cache.DataError(
                f"config.data.source='official' needs config.data.dir, the {dataset} release "
                "folder; or set config.data.source='standin' for the offline Fashion-MNIST "
                "stand-in"
            )
        if dataset in ("cifar10", "cifar100"):
            splits = _in_memory(_read_cifar(dataset, d.dir))
        elif dataset == "tiny_imagenet":
            splits = read_tiny_imagenet(d.dir)
        else:
            splits = read_class_folders(d.dir)
        description.update(dir=str(pathlib.Path(d.dir).expanduser()))
        found = getattr(splits["train"], "classes", None)
        classes = len(found) if found is not None else DATASETS[dataset][0]
        if d.num_classes and classes != d.num_classes:
            raise cache.DataError(
                f"{d.dir}: {classes} classes found, config.data.num_classes is {d.num_classes} "
                f"({dataset}); point config.data.dir at the full release or set num_classes"
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
        "train": _subset(train, int(d.num_train), d.seed, "num_train"),
        "val": _subset(val, int(d.num_val), d.seed, "num_val"),
        "test": _subset(test, int(d.num_test), d.seed, "num_test"),
    }
    description["num_classes"] = int(classes)
    description["sizes"] = {s: len(v) for s, v in out.items()}
    return out, description


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
    native = DATASETS[d.dataset][1] if d.source != "standin" else _STANDIN_SIDE
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
