"""The official datasets the configs read: where each comes from, where it goes, how to check it.

One `Dataset` per release a config reads (`attnbench-data list`): its source URLs and published
checksums (`attnbench.data.fetch.Remote`, each naming where its checksum comes from), the
folder under the data root its reader looks in (`where`: `attnbench.data.cache.data_root`, i.e.
`config.data.dir`, else `$ATTNBENCH_DATA`, else `~/.cache/attnbench`), how the downloaded
release is arranged into that folder (`arrange`), the official split sizes and a `count` that
reads the folder with the project's own reader, so `verify` checks the reader's view of the data,
not only its files.

Entries with `arrange=None` are listed (source, licence, folder, the configs that read them)
but not yet fetched by a script: `attnbench-data fetch NAME` prints the steps instead. Datasets
that need a registration or a licence agreement (ImageNet-1k, Places365, iNaturalist) stay that
way by design.
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Callable, Mapping

from attnbench import registry
from attnbench.data import cache
from attnbench.data.fetch import Remote

__all__ = ["Dataset", "get", "names", "where", "official_dir", "register"]


@dataclasses.dataclass(frozen=True)
class Dataset:
    """One official release a config reads.

    Attributes:
      name: what `attnbench-data` calls it ("cifar10").
      title: what its authors call it.
      size: the download's size, in words ("163 MB").
      licence: the terms it is distributed under, as its source states them.
      homepage: where it is described.
      remotes: the release files (URL, file name, size, published checksum and its source).
      folder: where under the data root it goes; the folder its reader finds by itself.
      configs: the configs that read it (names in the configs package, with the arguments).
      splits: the official number of examples per split.
      arrange: `arrange(downloads: {file name: path}, target: folder)`: the release's files
        laid out as the reader expects, in `target` (a staging folder); None where no script
        fetches it yet (`steps` say what to do).
      count: `count(folder) -> {split: examples}` by the project's reader.
      steps: what to do by hand (registration, or a release not fetched by a script yet).
      notes: what is known to differ between releases or mirrors.
    """

    name: str
    title: str
    size: str
    licence: str
    homepage: str
    remotes: tuple[Remote, ...]
    folder: str
    configs: tuple[str, ...]
    splits: Mapping[str, int]
    arrange: Callable[[Mapping[str, pathlib.Path], pathlib.Path], None] | None = None
    count: Callable[[pathlib.Path], Mapping[str, int]] | None = None
    steps: str = ""
    notes: str = ""


_DATASETS: registry.Registry[Dataset] = registry.Registry("dataset")


def register(dataset: Dataset) -> Dataset:
    return _DATASETS.register(dataset.name, dataset)


def get(name: str) -> Dataset:
    """The dataset called `name`; a user error listing the known ones when there is none."""
    return _DATASETS.get(name)


def names() -> list[str]:
    return _DATASETS.names()


def where(name: str, data_dir: str = "") -> pathlib.Path:
    """The folder the configs read `name` from: `folder` under the data root (`data_dir`, else
    `$ATTNBENCH_DATA`, else `~/.cache/attnbench`)."""
    return cache.data_root(data_dir) / get(name).folder


def official_dir(name: str, config_dir: str = "", *, field: str = "config.data.dir") -> str:
    """The folder a config with `source='official'` reads `name` from: `config_dir` when the
    config names one, else `where(name)` once `attnbench-data fetch` has put it there; when it
    is not there, a `DataError` naming the fetch command and the field to set instead."""
    if config_dir:
        return config_dir
    folder = where(name)
    if folder.is_dir():
        return str(folder)
    raise cache.DataError(
        f"{get(name).title} is not in the data root ({folder}) and {field} is empty: fetch it "
        f"with `attnbench-data fetch {name}` (or python -m scripts.data fetch {name}), or set "
        f"{field} to the folder holding it; or set config.data.source='standin' for the "
        "offline stand-in"
    )


# ---- CIFAR-10 / CIFAR-100 ----------------------------------------------------------------------
# The python version of each (Krizhevsky 2009); the archives' md5 sums are the ones the CIFAR page
# lists, and torchvision checks (torchvision/datasets/cifar.py).


def _untar_into(subdir: str):
    """`arrange` for an archive that unpacks to `subdir/`: its contents become the target."""

    def arrange(downloads: Mapping[str, pathlib.Path], target: pathlib.Path) -> None:
        from attnbench.data import fetch

        (archive,) = downloads.values()
        unpacked = target / ".unpacked"
        fetch.extract(archive, unpacked, members=lambda m: m.split("/")[0] == subdir)
        for child in (unpacked / subdir).iterdir():
            child.rename(target / child.name)
        for path in sorted(unpacked.rglob("*"), reverse=True):
            path.rmdir()
        unpacked.rmdir()

    return arrange


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

register(
    Dataset(
        name="cifar10",
        title="CIFAR-10, python version",
        size="163 MB",
        licence="no licence stated; distributed by the authors for research (cite Krizhevsky 2009)",
        homepage=_CIFAR_PAGE,
        remotes=(
            Remote(
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
        arrange=_untar_into("cifar-10-batches-py"),
        count=_count_cifar(_cifar10_read),
    )
)

register(
    Dataset(
        name="cifar100",
        title="CIFAR-100, python version",
        size="161 MB",
        licence="no licence stated; distributed by the authors for research (cite Krizhevsky 2009)",
        homepage=_CIFAR_PAGE,
        remotes=(
            Remote(
                url="https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
                filename="cifar-100-python.tar.gz",
                md5="eb9058c3a382ffc7106e4002c42a8d85",
                checksum_source=_CIFAR_SUM,
            ),
        ),
        folder="cifar-100-python",
        configs=("vision/cifar100.py:preset=paper",),
        splits={"train": 50_000, "test": 10_000},
        arrange=_untar_into("cifar-100-python"),
        count=_count_cifar(_cifar100_read),
    )
)


# ---- ModelNet40 (point clouds) -------------------------------------------------------------------


def _unzip_into(subdir: str):
    """`arrange` for a zip whose members sit under `subdir/`: its contents become the target."""
    return _untar_into(subdir)  # fetch.extract reads zip and tar alike


def _count_modelnet(layout: str):
    def count(folder: pathlib.Path) -> dict[str, int]:
        from pointcloud.data import modelnet40

        splits, _ = modelnet40.load_modelnet(folder, layout=layout, normals=False, cache=False)
        return {split: len(source) for split, source in splits.items()}

    return count


_NO_SUM = ""  # the release publishes no checksum: fetch records size and sha256 in MANIFEST.json

register(
    Dataset(
        name="modelnet40",
        title="ModelNet40, PointNet++'s resampled clouds with normals",
        size="1.6 GB",
        licence="ModelNet: for academic research (Princeton ModelNet terms); the resampled "
        "release by the PointNet++ authors",
        homepage="https://modelnet.cs.princeton.edu/",
        remotes=(
            Remote(
                url="https://shapenet.cs.stanford.edu/media/modelnet40_normal_resampled.zip",
                filename="modelnet40_normal_resampled.zip",
                checksum_source=_NO_SUM,
            ),
        ),
        folder="modelnet40_normal_resampled",
        configs=("pointcloud/modelnet40.py:preset=paper,source=official",),
        splits={"train": 9_843, "test": 2_468},
        arrange=_unzip_into("modelnet40_normal_resampled"),
        count=_count_modelnet("normal_resampled"),
        notes="The Stanford host has been unreliable; `--from` takes a mirror URL or a copy. "
        "SAMSA (arXiv 2408.05391, App. A) samples 1,024 points by farthest-point sampling.",
    )
)

register(
    Dataset(
        name="modelnet40_hdf5",
        title="ModelNet40, PointNet's 2,048-point HDF5 release",
        size="435 MB",
        licence="ModelNet: for academic research (Princeton ModelNet terms)",
        homepage="https://modelnet.cs.princeton.edu/",
        remotes=(
            Remote(
                url="https://shapenet.cs.stanford.edu/media/modelnet40_ply_hdf5_2048.zip",
                filename="modelnet40_ply_hdf5_2048.zip",
                checksum_source=_NO_SUM,
            ),
        ),
        folder="modelnet40_ply_hdf5_2048",
        configs=("pointcloud/modelnet40.py:preset=paper,source=official",),
        splits={"train": 9_843, "test": 2_468},
        arrange=_unzip_into("modelnet40_ply_hdf5_2048"),
        count=_count_modelnet("hdf5"),
        notes="Read with --config.data.layout=hdf5 (needs the pointcloud extra, h5py).",
    )
)


# ---- listed, not fetched by a script yet: the steps are printed by `fetch` -----------------------


def _listed(name, title, size, licence, homepage, urls, folder, configs, splits, steps, notes=""):
    register(
        Dataset(
            name=name,
            title=title,
            size=size,
            licence=licence,
            homepage=homepage,
            remotes=tuple(
                Remote(url=u, filename=f, checksum_source=_NO_SUM) for f, u in urls.items()
            ),
            folder=folder,
            configs=configs,
            splits=splits,
            steps=steps,
            notes=notes,
        )
    )


_listed(
    "zinc",
    "ZINC (benchmarking-gnns), with the ZINC-12k subset's index files",
    "size not recorded yet",
    "ZINC15 terms (free for research); benchmarking-gnns' files under MIT",
    "https://github.com/graphdeeplearning/benchmarking-gnns",
    {
        "molecules.zip": "https://www.dropbox.com/s/feo9qle74kg48gy/molecules.zip?dl=1",
        **{
            f"{s}.index": "https://raw.githubusercontent.com/graphdeeplearning/benchmarking-gnns/"
            f"master/data/molecules/{s}.index"
            for s in ("train", "val", "test")
        },
    },
    "molecules",
    ("graphs/zinc.py:preset=paper,source=official",),
    {"train": 10_000, "val": 1_000, "test": 1_000},
    "unzip molecules.zip into the data root (it makes molecules/) and put the three .index "
    "files into molecules/",
)
_listed(
    "peptides",
    "LRGB Peptides-func and Peptides-struct (one molecule set, their label and split files)",
    "size not recorded yet",
    "LRGB (CC BY 4.0 per its repository); peptides from SATPdb",
    "https://github.com/vijaydwivedi75/lrgb",
    {
        "peptide_multi_class_dataset.csv.gz": "https://www.dropbox.com/s/ol2v01usvaxbsr8/"
        "peptide_multi_class_dataset.csv.gz?dl=1",
        "peptide_structure_dataset.csv.gz": "https://www.dropbox.com/s/464u3303eu2u4zp/"
        "peptide_structure_dataset.csv.gz?dl=1",
        "splits_random_stratified_peptide.pickle": "https://www.dropbox.com/s/j4zcnx2eipuo0xz/"
        "splits_random_stratified_peptide.pickle?dl=1",
        "peptide_structure_normalized_dataset.csv.gz": "https://www.dropbox.com/s/0d4aalmq4b4e2nh/"
        "peptide_structure_normalized_dataset.csv.gz?dl=1",
        "splits_random_stratified_peptide_structure.pickle": "https://www.dropbox.com/s/"
        "9dfifzft1hqgow6/splits_random_stratified_peptide_structure.pickle?dl=1",
    },
    "",
    (
        "graphs/peptides.py:preset=paper,kind=func,source=official",
        "graphs/peptides.py:preset=paper,kind=struct,source=official",
    ),
    {},
    "download the files into the data root (or into config.data.dir)",
)
_listed(
    "pcqm4mv2",
    "OGB-LSC PCQM4Mv2",
    "size not recorded yet",
    "CC BY 4.0 (OGB-LSC)",
    "https://ogb.stanford.edu/docs/lsc/pcqm4mv2/",
    {"pcqm4m-v2.zip": "https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m-v2.zip"},
    "pcqm4m-v2",
    ("graphs/pcqm.py:preset=paper,source=official",),
    {},
    "unzip pcqm4m-v2.zip into the data root (it makes pcqm4m-v2/raw/data.csv.gz and "
    "pcqm4m-v2/split_dict.pt)",
)
_listed(
    "wikitext103",
    "WikiText-103 (word level)",
    "181 MB",
    "CC BY-SA 3.0 (Wikipedia text)",
    "https://blog.salesforceairesearch.com/the-wikitext-long-term-dependency-language-modeling-dataset/",
    {
        "wikitext-103-v1.zip": "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip"
    },
    "wikitext-103",
    ("language/wikitext103.py:preset=paper,source=official",),
    {},
    "unzip wikitext-103-v1.zip into the data root (it makes wikitext-103/wiki.{train,valid,test}"
    ".tokens), or set config.data.dir to that folder",
)
_listed(
    "enwik8",
    "enwik8 (the first 10^8 bytes of an English Wikipedia dump)",
    "36 MB",
    "Wikipedia text (CC BY-SA); the Hutter Prize file",
    "http://mattmahoney.net/dc/textdata.html",
    {"enwik8.zip": "http://mattmahoney.net/dc/enwik8.zip"},
    "",
    ("language/enwik8.py:preset=paper,source=official",),
    {},
    "download enwik8.zip into the data root (the reader checks its 100,000,000 bytes)",
)
_listed(
    "imagenet",
    "ImageNet-1k (ILSVRC-2012)",
    "147 GB",
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
