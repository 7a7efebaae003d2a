"""The official image datasets the vision and LRA Image configs read, for `attnbench-data`
(`attnbench.data.catalog`): CIFAR-10 and CIFAR-100, fetched by the command; ImageNet-1k, listed
with the steps (it needs a registration).
"""

from __future__ import annotations

import pathlib

from attnbench.data import catalog, fetch

# ---- CIFAR-10 / CIFAR-100 ----------------------------------------------------------------------
# The python version of each (Krizhevsky 2009); the archives' md5 sums are the ones the CIFAR page
# lists, and torchvision checks (torchvision/datasets/cifar.py).


def _count_cifar(read):
    def count(folder: pathlib.Path) -> dict[str, int]:
        return {split: len(arrays[1]) for split, arrays in read(folder).items()}

    return count


def _cifar10_read(folder):
    from attnbench.data.formats import cifar

    return cifar.read_cifar10(folder)


def _cifar100_read(folder):
    from attnbench.data.formats import cifar

    return cifar.read_cifar100(folder)


_CIFAR_PAGE = "https://www.cs.toronto.edu/~kriz/cifar.html"
_CIFAR_SUM = f"{_CIFAR_PAGE} (md5sum column); torchvision/datasets/cifar.py checks the same"

catalog.register(
    catalog.Dataset(
        name="cifar10",
        title="CIFAR-10, python version",
        size="163 MB",
        licence="no licence stated; distributed by the authors for research (cite Krizhevsky 2009)",
        homepage=_CIFAR_PAGE,
        remotes=(
            fetch.Remote(
                url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                filename="cifar-10-python.tar.gz",
                size=170_498_071,
                md5="c58f30108f718f92721af3b95e74349a",
                checksum_source=_CIFAR_SUM,
            ),
        ),
        folder="cifar-10-batches-py",
        configs=(
            "vision/cifar10.py:preset=paper",
            "lra/image.py:preset=paper",
        ),
        splits={"train": 50_000, "test": 10_000},
        arrange=catalog.untar_into("cifar-10-batches-py"),
        count=_count_cifar(_cifar10_read),
    )
)

catalog.register(
    catalog.Dataset(
        name="cifar100",
        title="CIFAR-100, python version",
        size="about 161 MB (not checked here)",
        licence="no licence stated; distributed by the authors for research (cite Krizhevsky 2009)",
        homepage=_CIFAR_PAGE,
        remotes=(
            fetch.Remote(
                url="https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
                filename="cifar-100-python.tar.gz",
                md5="eb9058c3a382ffc7106e4002c42a8d85",
                checksum_source=_CIFAR_SUM,
            ),
        ),
        folder="cifar-100-python",
        configs=("vision/cifar100.py:preset=paper",),
        splits={"train": 50_000, "test": 10_000},
        arrange=catalog.untar_into("cifar-100-python"),
        count=_count_cifar(_cifar100_read),
    )
)


catalog.listed(
    "imagenet",
    "ImageNet-1k (ILSVRC-2012)",
    "about 147 GB (not checked here)",
    "ImageNet terms of access: non-commercial research, after registration",
    "https://image-net.org/download.php",
    {},
    "imagenet",
    ("vision/imagenet.py:preset=paper",),
    {"train": 1_281_167, "val": 50_000},
    "register at https://image-net.org, download ILSVRC2012_img_train.tar and "
    "ILSVRC2012_img_val.tar, unpack them into train/<wnid>/*.JPEG and val/<wnid>/*.JPEG "
    "(ImageNet-style class folders), and set config.data.dir to the folder holding train/ and "
    "val/",
)
