"""The official datasets the configs read: where each comes from, where it goes, how to check it.

One `Dataset` per release a config reads (`attnbench-data list`): its source URLs and published
checksums (`attnbench.data.fetch.Remote`, each naming where its checksum comes from), the
folder under the data root its reader looks in (`where`: `attnbench.data.cache.data_root`, i.e.
`config.data.dir`, else `$ATTNBENCH_DATA`, else `~/.cache/attnbench`), how the downloaded
release is arranged into that folder (`arrange`), the official split sizes and a `count` that
reads the folder with the project's own reader, so `verify` checks the reader's view of the data,
not only its files.

Each domain registers the datasets its readers read, in `<domain>/data/sources.py` (vision:
CIFAR-10, CIFAR-100, Tiny-ImageNet, ImageNet, Places365, iNaturalist; pointcloud: ModelNet40,
ShapeNetPart; graphs: ZINC, Peptides, PCQM4Mv2;
language: WikiText-103, WikiText-2, PTB, enwik8; lra: ListOps, AAN, Pathfinder32, Path-X,
IMDB), imported when a name is first looked up or listed; `untar_into` and `listed` are the
helpers they share.

Entries with `arrange=None` are listed (source, licence, folder, the configs that read them)
but not fetched by a script: `attnbench-data fetch NAME` prints the steps instead. Datasets
that need a registration or a licence agreement (ImageNet-1k, Places365, iNaturalist) stay that
way by design.
"""

from __future__ import annotations

import dataclasses
import importlib
import pathlib
from collections.abc import Callable, Mapping

from attnbench import registry
from attnbench.data import cache
from attnbench.data.fetch import Remote

__all__ = [
    "Dataset",
    "HFSource",
    "get",
    "names",
    "where",
    "official_dir",
    "register",
    "listed",
    "untar_into",
    "NO_SUM",
]


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
      hf: the same data on the Hugging Face Hub, where `fetch --from hf` can read it.
      layout: the files the reader reads in `folder`, for DATA.md ("data_batch_1..5,
        test_batch: pickled dicts").
      unit: what `splits` counts ("examples", "tokens", "bytes").
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
    hf: HFSource | None = None
    layout: str = ""
    unit: str = "examples"


@dataclasses.dataclass(frozen=True)
class HFSource:
    """The same data from the Hugging Face Hub, through the `datasets` package (the `hf`
    extra): `attnbench-data fetch NAME --from hf` (or `--from hf:REPO_OR_FOLDER` for another
    repository or a local copy of it).

    Attributes:
      repo: the Hub repository ("Salesforce/wikitext").
      config: its configuration ("wikitext-103-v1").
      arrange: `arrange(splits: {Hub split: datasets.Dataset}, target)`: the rows written in
        the layout the reader reads.
      notes: how the Hub's copy differs from the release files, and why that does not change
        what the reader reads.
    """

    repo: str
    config: str
    arrange: Callable[[Mapping[str, object], pathlib.Path], None]
    notes: str = ""


# Each domain registers the datasets its readers read (`<domain>/data/sources.py`), imported
# the first time a name is looked up or listed.
DOMAINS = ("vision", "pointcloud", "graphs", "language", "lra")


def _import_sources(name: str | None = None) -> None:
    del name
    for domain in DOMAINS:
        importlib.import_module(f"{domain}.data.sources")


_DATASETS: registry.Registry[Dataset] = registry.Registry(
    "dataset", load=_import_sources, load_all=_import_sources
)


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


def official_dir(
    name: str,
    config_dir: str = "",
    *,
    field: str = "config.data.dir",
    offline: str = "config.data.source='standin' for the offline stand-in",
    holding: str = "it",
) -> str:
    """The folder a config with `source='official'` reads `name` from: `config_dir` when the
    config names one, else `where(name)` once `attnbench-data fetch` has put it there; when it
    is not there, a `DataError` naming the fetch command, the field to set instead and the
    offline alternative (`offline`: ListOps and Pathfinder generate their data instead);
    `holding` names the files that folder holds."""
    if config_dir:
        return config_dir
    folder = where(name)
    if folder.is_dir():
        return str(folder)
    raise cache.DataError(
        f"{get(name).title} is not in the data root ({folder}) and {field} is empty: fetch it "
        f"with `attnbench-data fetch {name}` (or python -m scripts.data fetch {name}), or set "
        f"{field} to the folder holding {holding}; or set {offline}"
    )


# ---- helpers for the domains' entries ----------------------------------------------------------

# A release that publishes no checksum: fetch records size and sha256 in MANIFEST.json.
NO_SUM = ""


def untar_into(subdir: str):
    """`arrange` for an archive (zip or tar) whose members sit under `subdir/`: its contents
    become the target folder."""

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


def listed(name, title, size, licence, homepage, urls, folder, configs, splits, steps, notes=""):
    """Registers a dataset that no script fetches yet: its sources, folder and the steps."""
    register(
        Dataset(
            name=name,
            title=title,
            size=size,
            licence=licence,
            homepage=homepage,
            remotes=tuple(
                Remote(url=u, filename=f, checksum_source=NO_SUM) for f, u in urls.items()
            ),
            folder=folder,
            configs=configs,
            splits=splits,
            steps=steps,
            notes=notes,
        )
    )
