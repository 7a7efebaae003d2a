"""Fashion-MNIST (Xiao et al. 2017), the offline image stand-in of every image domain.

    splits = fashion_mnist.read(fashion_mnist.DEFAULT_DIR)   # {"train": (images, labels), "test"}

No natural-image dataset installs offline; Debian's `dataset-fashion-mnist` ships Fashion-MNIST
(10 classes of clothing, 28x28 grayscale, 60,000 train + 10,000 test) as the gzipped IDX files
of the original release (`attnbench.data.formats.idx`). LRA Image (`lra.data.image`) and the vision
tasks (`vision.data`) read it through here and label it a stand-in in every summary.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence

import numpy as np

from attnbench.data import cache
from attnbench.data.formats import idx

__all__ = ["PACKAGE", "DEFAULT_DIR", "FILES", "NUM_CLASSES", "SIZE", "missing", "read"]

PACKAGE = "dataset-fashion-mnist"
DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"  # where the Debian package puts it
FILES: dict[str, tuple[str, str]] = {  # split -> (images, labels)
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
NUM_CLASSES = 10
SIZE = 28  # pixels per side


def missing(directory: str | os.PathLike) -> list[str]:
    """The release files absent from `directory`."""
    directory = pathlib.Path(directory).expanduser()
    return [n for pair in FILES.values() for n in pair if not (directory / n).is_file()]


def missing_error(directory: str | os.PathLike, absent: Sequence[str]) -> cache.DataError:
    """The error for a folder lacking `absent` files: what is missing and how to get it."""
    return cache.DataError(
        f"{directory}: Fashion-MNIST (the offline image stand-in) not found: missing "
        f"{', '.join(absent)}. Install the Debian package with `apt-get install {PACKAGE}` "
        f"(files in {DEFAULT_DIR}), or set config.data.standin_dir to a folder holding these "
        "files"
    )


def read(directory: str | os.PathLike) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The release's splits as `{"train", "test"} -> (uint8 [n, 28, 28], int32 labels [n])`.

    Raises:
      DataError: a missing file (all of them named), or a file whose shape or labels are not
        Fashion-MNIST's, naming the file.
    """
    directory = pathlib.Path(directory).expanduser()
    absent = missing(directory)
    if absent:
        raise missing_error(directory, absent)
    out = {}
    for split, (image_file, label_file) in FILES.items():
        images = idx.read(directory / image_file, 3)
        labels = idx.read(directory / label_file, 1)
        if images.shape[1:] != (SIZE, SIZE):
            raise cache.DataError(
                f"{directory / image_file}: images are {list(images.shape[1:])}, expected "
                f"[{SIZE}, {SIZE}]"
            )
        if len(labels) != len(images):
            raise cache.DataError(
                f"{directory / label_file}: {len(labels)} labels for {len(images)} images in "
                f"{image_file}"
            )
        bad = np.flatnonzero(labels >= NUM_CLASSES)
        if len(bad):
            raise cache.DataError(
                f"{directory / label_file}: record {int(bad[0])}: label {int(labels[bad[0]])} "
                "not in 0-9"
            )
        out[split] = (images, labels.astype(np.int32))
    return out
