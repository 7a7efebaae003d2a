"""The class-folder layouts, the official source (`config.data.source="official"`) of every
dataset but CIFAR, decoded lazily (`attnbench.data.formats.image_folder`):

  tiny_imagenet  the release folder `tiny-imagenet-200/`: `wnids.txt`,
                 `train/<wnid>/images/*.JPEG`, `val/images/*.JPEG` with
                 `val/val_annotations.txt` (file, wnid, box). Its test labels are not public:
                 val is reported as the test split.
  imagenet, places365, inaturalist, folder  ImageNet-style class folders
                 `train/<class>/**/<image>` and `val/<class>/**/<image>` (ILSVRC-2012 val
                 reorganised into class folders, as torchvision / timm expect; Places365 and
                 iNaturalist exports likewise). An evaluation-only run
                 (`config.total_steps=0`) reads `val/<class>/` alone too.

Class indices follow the sorted class-folder names (torchvision's `ImageFolder`, timm, and the
ImageNet synset order), so labels agree with other tools' checkpoints; Tiny-ImageNet's
`wnids.txt` must list exactly the training folders.

No bad input is read silently: a training class folder without images (a partial copy or
extraction) is an error naming it, since it would still count as a class and shift the class
count the model is built for; so is a text file of the release (`wnids.txt`,
`val_annotations.txt`) that is not UTF-8 text, and a `val/` that holds its images directly
rather than in class folders (ILSVRC-2012's val as released: `attnbench-data imagenet-val`
moves them, `vision.data.imagenet_val`). Each missing-data error names the `attnbench-data`
command that fetches the dataset (or prints its steps).
"""

from __future__ import annotations

import os
import pathlib

import numpy as np

from attnbench.data import cache
from attnbench.data.formats import image_folder

__all__ = ["read_tiny_imagenet", "read_class_folders"]

# What each release folder's reader says to do when its data is missing: the catalog name that
# `attnbench-data fetch` takes (vision/data/sources.py registers each).
FETCH = "`attnbench-data fetch {name}`"


def _get_it(name: str | None) -> str:
    """`fetch it with ...` for a catalog dataset; "" for any other folder (`folder`)."""
    return f"; fetch it with {FETCH.format(name=name)}" if name else ""


def read_tiny_imagenet(directory: str | os.PathLike) -> dict:
    """Tiny-ImageNet's release folder -> `{"train", "test"}` lazy sources (test = its val set).

    Raises:
      DataError: a missing `wnids.txt`, `train/` or `val/val_annotations.txt`, a text file
        that is not UTF-8, a class list that differs from the training folders, a training
        class without images, or an annotation naming an unknown class or a missing file,
        each naming the file.
    """
    root = pathlib.Path(directory).expanduser()
    if (root / "tiny-imagenet-200").is_dir() and not (root / "wnids.txt").is_file():
        root = root / "tiny-imagenet-200"
    wnids_file, annotations = root / "wnids.txt", root / "val" / "val_annotations.txt"
    for path in (wnids_file, root / "train", annotations):
        if not path.exists():
            raise cache.DataError(
                f"{path}: not found{_get_it('tiny_imagenet')}, or point config.data.dir at "
                "Tiny-ImageNet's release folder tiny-imagenet-200/ (wnids.txt, "
                "train/<wnid>/images/, val/images/, val/val_annotations.txt)"
            )
    wnids = [w.strip() for w in _read_text(wnids_file).split() if w.strip()]
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
    again = f"fetch it again with {FETCH.format(name='tiny_imagenet')}"
    _refuse_empty_classes(train, root / "train", again)
    files, labels = [], []
    index = {w: i for i, w in enumerate(classes)}
    for number, line in enumerate(_read_text(annotations).splitlines(), 1):
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
            raise cache.DataError(
                f"{annotations}: line {number}: image {path} not found (a partial copy?); {again}"
            )
        files.append(path)
        labels.append(index[fields[1]])
    if not files:
        raise cache.DataError(f"{annotations}: no validation images listed")
    test = image_folder.ImageFolder.from_list(files, labels, classes)
    return {"train": train, "test": test}


def read_class_folders(
    directory: str | os.PathLike, dataset: str | None = None, *, evaluate_only: bool = False
) -> dict:
    """ImageNet-style `train/<class>/` and `val/<class>/` -> `{"train", "test"}` lazy sources
    with the training folders' class list (test = the val folder; a class without a val folder
    has no test images). `dataset`: the catalog name the errors tell to fetch ("imagenet",
    "places365", "inaturalist"; None for any other folder).

    `evaluate_only` (a run of `config.total_steps=0`, which draws no training image): a folder
    without `train/` is read too, e.g. the ILSVRC-2012 validation images alone for a released
    checkpoint. The class list is then the sorted `val/` class folders, so every class needs a
    val folder (ImageNet's val has all 1,000: the count is checked against
    `config.data.num_classes`), and train is empty.

    Raises:
      DataError: a missing `train/` or `val/`, one without images, a `val/` holding its images
        directly (ILSVRC-2012's val before `attnbench-data imagenet-val`), a training class
        folder without images, or a val class folder that is not a training class, each
        naming the folder.
    """
    root = pathlib.Path(directory).expanduser()
    get_it = _get_it(dataset)
    val_only = evaluate_only and not (root / "train").exists() and (root / "val").is_dir()
    for sub in ("val",) if val_only else ("train", "val"):
        if not (root / sub).is_dir():
            raise cache.DataError(
                f"{root / sub}: not found{get_it}; or point config.data.dir at a folder holding "
                "train/<class>/ and val/<class>/ image folders (ILSVRC-2012 val reorganised into "
                "class folders, as torchvision and timm read it)"
            )
    flat = _images_directly_in(root / "val")
    if flat:
        raise cache.DataError(
            f"{root / 'val'}: holds {flat:,} images directly, not in class folders "
            "(ILSVRC-2012's val as released): move them into val/<wnid>/ with "
            f"`attnbench-data imagenet-val {root / 'val'} --devkit ILSVRC2012_devkit_t12.tar.gz`"
        )
    try:
        if val_only:  # the class list is val/'s folders; no training image is read
            test = image_folder.ImageFolder(root / "val")
            train = image_folder.ImageFolder.from_list([], [], test.classes)
        else:
            train = image_folder.ImageFolder(root / "train")
            test = image_folder.ImageFolder(root / "val", classes=train.classes)
    except cache.DataError as e:
        raise cache.DataError(f"{e}{get_it}") from None
    if val_only:
        _refuse_empty_classes(test, root / "val", "copy its validation images again")
    else:
        _refuse_empty_classes(train, root / "train", "copy its images again")
    return {"train": train, "test": test}


def _images_directly_in(folder: pathlib.Path) -> int:
    """How many images sit directly in `folder` (not in a class folder)."""
    with os.scandir(folder) as entries:
        return sum(
            1
            for e in entries
            if e.is_file() and os.path.splitext(e.name)[1].lower() in image_folder.EXTENSIONS
        )


def _read_text(path: pathlib.Path) -> str:
    """A release text file, which must be UTF-8 (the released ones are ASCII)."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise cache.DataError(
            f"{path}: not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start}); the "
            "released file is plain ASCII: re-extract tiny-imagenet-200.zip"
        ) from None
    except OSError as e:
        raise cache.DataError(f"{path}: cannot read ({e})") from None


def _refuse_empty_classes(source: image_folder.ImageFolder, root: pathlib.Path, fix: str) -> None:
    """A class folder with no image (of train/, or of val/ where it makes the class list) would
    still count as a class (the folder names make the class list): the class count, and with
    it the model's head, would silently differ from the release's."""
    counts = np.bincount(source.labels, minlength=len(source.classes))
    empty = [name for name, n in zip(source.classes, counts, strict=True) if n == 0]
    if empty:
        more = f" (and {len(empty) - 1} more class folders)" if len(empty) > 1 else ""
        raise cache.DataError(
            f"{root / empty[0]}: class folder without images "
            f"({', '.join(image_folder.EXTENSIONS)}){more}; every class of the class list needs "
            f"its images (a partial copy or extraction?): {fix}"
        )
