"""Image folders read lazily: `root/<class>/.../<image>` (the ImageNet / Tiny-ImageNet layout).

    source = image_folder.ImageFolder("imagenet/train")      # classes = sorted folder names
    len(source); source[i] -> {"image": uint8 [H, W, 3], "label": int32 []}
    val = image_folder.ImageFolder.from_list(files, labels, classes=source.classes)

A random-access source in the sense of `attnbench.data.pipeline`: only the file list is held in
memory, and an image is decoded (Pillow, converted to RGB) when it is read, in whichever process
reads it (a grain worker when `config.data_workers > 0`). Class indices follow the sorted folder
names, the convention of ImageNet's synset order and of torchvision's `ImageFolder`, so labels agree
with checkpoints and label files made by other tools. Files are found recursively under each class
folder (Tiny-ImageNet keeps them in `<wnid>/images/`) and sorted by path, so the order is the same
on every machine. Validation sets whose labels sit in a list rather than in folders (Tiny-ImageNet's
`val_annotations.txt`) use `from_list`.

Sizes differ between images; a domain's `transform` (crop, resize) makes them equal before
batching.
"""

from __future__ import annotations

import os
import pathlib
import warnings
from collections.abc import Sequence

import numpy as np

from attnbench.data import cache

__all__ = ["EXTENSIONS", "ImageFolder", "decode"]

EXTENSIONS = (".jpeg", ".jpg", ".png", ".bmp", ".ppm", ".webp")  # matched case-insensitively


def decode(path: str | os.PathLike) -> np.ndarray:
    """The image at `path` as uint8 [H, W, 3] RGB; an unreadable file is a `DataError` naming it.

    Pillow's decompression-bomb limit (`PIL.Image.MAX_IMAGE_PIXELS`) stays as Pillow sets it:
    an image above twice the limit is a `DataError` naming the file (Pillow's
    `DecompressionBombError`, and its `DecompressionBombWarning` where warnings are errors); one
    between the limit and twice it is decoded, with a `DecompressionBombWarning` naming the file
    after Pillow's own.
    """
    from PIL import Image, UnidentifiedImageError  # only the image domains need Pillow

    try:
        with Image.open(path) as img:
            limit = Image.MAX_IMAGE_PIXELS
            if limit and img.width * img.height > limit:
                warnings.warn(
                    f"{path}: {img.width}x{img.height} pixels, above Pillow's decompression-bomb "
                    f"limit of {limit} pixels (PIL.Image.MAX_IMAGE_PIXELS); decoded anyway",
                    Image.DecompressionBombWarning,
                    stacklevel=2,
                )
            return np.asarray(img.convert("RGB"), dtype=np.uint8)
    except FileNotFoundError:
        raise cache.DataError(f"{path}: image file not found") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise cache.DataError(
            f"{path}: refused by Pillow's decompression-bomb check ({e}); replace the file with "
            "a smaller image"
        ) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        raise cache.DataError(f"{path}: cannot decode as an image ({e})") from None


class ImageFolder:
    """Images with integer labels, decoded on access.

    Attributes:
      classes: class names; label i is `classes[i]`.
      files: the image paths (str), in reading order.
      labels: int32 [len(files)].
    """

    def __init__(self, root: str | os.PathLike, classes: Sequence[str] | None = None):
        """Every image under `root/<class>/`; `classes` fixes the class list (and order), e.g.
        the training set's, so a split missing some classes keeps the same indices."""
        root = pathlib.Path(root).expanduser()
        layout = "root/<class>/<image>, one folder per class"
        if not root.is_dir():
            raise cache.DataError(f"{root}: image folder not found; expected {layout}")
        found = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        if classes is None:
            classes = found
        unknown = sorted(set(found) - set(classes))
        if unknown:
            raise cache.DataError(
                f"{root}: class folders not in the given classes: {', '.join(unknown[:5])}"
            )
        files, labels = [], []
        for label, name in enumerate(classes):
            folder = root / name
            if not folder.is_dir():
                continue
            images = sorted(
                str(p) for p in folder.rglob("*") if p.suffix.lower() in EXTENSIONS and p.is_file()
            )
            files += images
            labels += [label] * len(images)
        if not files:
            raise cache.DataError(
                f"{root}: no images ({', '.join(EXTENSIONS)}) found; expected {layout}"
            )
        self._set(files, labels, classes)

    @classmethod
    def from_list(
        cls, files: Sequence[str | os.PathLike], labels: Sequence[int], classes: Sequence[str]
    ) -> ImageFolder:
        """Images listed with their labels (indices into `classes`)."""
        if len(files) != len(labels):
            raise ValueError(f"{len(files)} files but {len(labels)} labels")
        bad = [int(x) for x in labels if not 0 <= int(x) < len(classes)]
        if bad:
            raise ValueError(f"label {bad[0]} is not an index into the {len(classes)} classes")
        source = cls.__new__(cls)
        source._set([str(f) for f in files], labels, classes)
        return source

    def _set(self, files, labels, classes) -> None:
        self.files = list(files)
        self.labels = np.asarray(labels, dtype=np.int32)
        self.classes = tuple(classes)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int) -> dict[str, np.ndarray]:
        return {"image": decode(self.files[i]), "label": self.labels[i]}
