"""The official data of the Long Range Arena configs, for `attnbench-data`
(`attnbench.data.catalog`): the LRA release (one gzipped tar, `lra_release.gz`) for ListOps,
Retrieval (AAN) and Pathfinder / Path-X, and the IMDB release (`aclImdb_v1.tar.gz`) for Text. LRA
Image reads CIFAR-10, the `cifar10` entry of vision/data/sources.py.

The LRA release is downloaded once into `<data root>/downloads/` and kept there: `fetch listops`,
`fetch aan`, `fetch pathfinder32` and `fetch pathfinder128` each unpack only their own folder of
it (`fetch.extract(..., members=...)`), so ListOps does not unpack the release's PNGs. The folders
keep the release's names under `<data root>/lra_release/`, where the readers look when
`config.data.dir` is empty (`catalog.official_dir`).

Member names. LRA's own setup script (google-research/long-range-arena dataset_setup.sh) unpacks
the release and then moves `lra_release/lra_release/listops-1000`, `.../tsv_data` and
`.../pathfinder*`, i.e. the members sit under `lra_release/lra_release/`; some downstream loaders
read `lra_release/listops-1000/` instead. Not checked here against the file itself, so the
arrangement accepts one or two leading `lra_release/` components (and a leading `./`).
"""

from __future__ import annotations

import pathlib
import shutil
from collections.abc import Callable, Mapping

from attnbench import errors
from attnbench.data import catalog, fetch

# ---- the LRA release ----------------------------------------------------------------------------

# google-research/long-range-arena, lra_benchmarks/README.md ("you may download the entire
# gziped file at https://storage.googleapis.com/long-range-arena/lra_release.gz") and its
# dataset_setup.sh; no checksum is published there.
LRA_RELEASE = fetch.Remote(
    url="https://storage.googleapis.com/long-range-arena/lra_release.gz",
    filename="lra_release.gz",
    checksum_source=catalog.NO_SUM,
)
_LRA_HOME = "https://github.com/google-research/long-range-arena"
# 7.7 GB: quoted by downstream READMEs (e.g. the Skyformer-derived ones), not by LRA itself.
_LRA_SIZE = "about 7.7 GB (not checked here), one download for all the LRA entries"
_LRA_LICENCE = (
    "no licence stated for the data in the LRA repository (its code is Apache-2.0); cite LRA "
    "(Tay et al. 2021) and the datasets' own sources"
)
_RELEASE_DIR = "lra_release"  # under the data root, as in the release
_ONE_DOWNLOAD = (
    "The release is one download for listops, aan, pathfinder32 and pathfinder128: it stays in "
    "<data root>/downloads/lra_release.gz and the next of these fetches reuses it (delete it "
    "once all are fetched)."
)

Place = Callable[[str], tuple[str, ...] | None]


def _parts(member: str) -> list[str]:
    return [p for p in member.replace("\\", "/").split("/") if p not in ("", ".")]


def release_path(member: str, folder: str) -> tuple[str, ...] | None:
    """Where a member of lra_release.gz goes inside `folder` (a release folder such as
    "listops-1000"): its path below `[lra_release/[lra_release/]]folder/`, or None for a
    member elsewhere (or the folder itself)."""
    parts = _parts(member)
    skip = 0
    while skip < 2 and parts[skip : skip + 1] == [_RELEASE_DIR]:
        skip += 1
    if parts[skip : skip + 1] == [folder] and len(parts) > skip + 1:
        return tuple(parts[skip + 1 :])
    return None


def _arrange_members(place: Place, what: str):
    """`arrange` for one archive: the members that `place` maps to a path (a tuple of its
    parts) are extracted and moved there under the target; nothing else is written."""

    def arrange(downloads: Mapping[str, pathlib.Path], target: pathlib.Path) -> None:
        (archive,) = downloads.values()
        unpacked = target / ".unpacked"
        files = fetch.extract(archive, unpacked, members=lambda m: place(m) is not None)
        if not files:
            raise errors.DataError(
                f"{archive}: no member under {what}; not the published release file? Delete it "
                "and fetch again"
            )
        for path in files:
            dest = target.joinpath(*place(path.relative_to(unpacked).as_posix()))
            dest.parent.mkdir(parents=True, exist_ok=True)
            path.rename(dest)
        shutil.rmtree(unpacked)

    return arrange


def _arrange_release(folder: str):
    return _arrange_members(
        lambda m: release_path(m, folder), f"lra_release/[lra_release/]{folder}/"
    )


# ---- ListOps ------------------------------------------------------------------------------------


def _count_listops(folder: pathlib.Path) -> dict[str, int]:
    """Examples per split as the reader parses basic_{train,val,test}.tsv (header, fields,
    targets and every token checked; no cache written)."""
    from lra.data import listops

    return {
        split: len(listops._parse_tsv(folder / name)[1])
        for split, name in listops.SPLIT_FILES.items()
    }


catalog.register(
    catalog.Dataset(
        name="listops",
        title="LRA ListOps (listops-1000/ of the LRA release)",
        size=_LRA_SIZE,
        licence=_LRA_LICENCE,
        homepage=_LRA_HOME,
        remotes=(LRA_RELEASE,),
        folder=f"{_RELEASE_DIR}/listops-1000",
        configs=("lra/listops.py:preset=paper",),
        # The LRA generator's defaults, lra_benchmarks/data/listops.py (num_train_samples 96000,
        # num_valid_samples 2000, num_test_samples 2000), as lra/data/listops.OFFICIAL_SIZES; the
        # S5 paper's dataset details (Smith et al. 2023, arXiv 2208.04933, appendix, as quoted
        # in a later paper's appendix) give the same 96,000 / 2,000 / 2,000 for the release.
        splits={"train": 96_000, "val": 2_000, "test": 2_000},
        layout="basic_train.tsv, basic_val.tsv, basic_test.tsv: a header Source<TAB>Target, then "
        "one parenthesised expression and its value (0-9) per line",
        arrange=_arrange_release("listops-1000"),
        count=_count_listops,
        notes="The ListOps config reads these files at preset=paper (the cpu and smoke presets "
        "use the generator; --config.data.source=official reads them at any preset). "
        + _ONE_DOWNLOAD,
    )
)

# ---- Retrieval (AAN) ----------------------------------------------------------------------------


def _count_aan(folder: pathlib.Path) -> dict[str, int]:
    """Pairs per split as the reader parses new_aan_pairs.{train,eval,test}.tsv (5 fields and
    the label of every line checked; the texts are not encoded)."""
    from lra.data import retrieval

    files = retrieval._find_official_files(folder)
    return {split: sum(1 for _ in retrieval._records(path)) for split, path in files.items()}


catalog.register(
    catalog.Dataset(
        name="aan",
        title="LRA Retrieval: ACL Anthology Network citation pairs (tsv_data/ of the LRA release)",
        size=_LRA_SIZE,
        licence=_LRA_LICENCE + "; the texts are from the ACL Anthology Network (Radev et al.)",
        homepage=_LRA_HOME,
        remotes=(LRA_RELEASE,),
        folder=f"{_RELEASE_DIR}/tsv_data",
        configs=("lra/retrieval.py:preset=paper",),
        # The S5 paper's dataset details (Smith et al. 2023, arXiv 2208.04933, appendix, as
        # quoted in a later paper's appendix): "147,086 training pairs, 18,090 validation pairs,
        # and 17,437 test pairs"; the LRA paper's own table not read here.
        splits={"train": 147_086, "val": 18_090, "test": 17_437},
        layout="new_aan_pairs.train.tsv, new_aan_pairs.eval.tsv (val), new_aan_pairs.test.tsv: "
        "label, id1, id2, text1, text2 per line, tab-separated, no header",
        arrange=_arrange_release("tsv_data"),
        count=_count_aan,
        notes=_ONE_DOWNLOAD,
    )
)

# ---- Pathfinder / Path-X ------------------------------------------------------------------------


def _count_pathfinder(folder: pathlib.Path) -> dict[str, int]:
    """`"<difficulty>/<split>"` -> images, for each difficulty, as the reader splits them:
    the records of the metadata files (the reader's parsing) cut [:80%] / [80%:90%] / [90%:]
    (`official_splits`), zero-byte PNGs dropped. Each listed PNG is stat-ed (a missing one is
    an error naming it), none is decoded."""
    import numpy as np

    from attnbench.data import cache
    from lra.data import pathfinder_release as release

    out = {}
    for difficulty, pattern in release.PATTERNS.items():
        base = release._pattern_dir(folder, pattern)
        records = []
        for meta in release._metadata_files(base):
            for sub, name, _, lineno in release._parse_metadata(meta):
                path = base / sub / name
                try:
                    records.append(path.stat().st_size > 0)
                except FileNotFoundError:
                    raise cache.DataError(
                        f"{path}: image file not found (listed in {meta}:{lineno})"
                    ) from None
        kept = np.flatnonzero(records)
        data = dict(
            images=np.zeros((len(kept), 0, 0), np.uint8),
            label=np.zeros(len(kept), np.int32),
            record=kept,
            num_records=len(records),
        )
        for split, arrays in release.official_splits(data).items():
            out[f"{difficulty}/{split}"] = len(arrays["label"])
    return out


_PATHFINDER_LAYOUT = (
    "curv_baseline/, curv_contour_length_9/, curv_contour_length_14/ (difficulty easy, "
    "intermediate, hard), each with metadata/<n>.npy (text: image subfolder, file name, index, "
    "label per line) and the PNGs they list, imgs/<n>/sample_<i>.png"
)
_PATHFINDER_NOTES = (
    "No image count is recorded: the LRA code (lra_benchmarks/data/pathfinder.py, "
    "image/input_pipeline.py) states none, only the split, [:80%] / [80%:90%] / [90%:] of each "
    "difficulty with empty images filtered out, which is how the reader and verify split the "
    "records. S4/S5 report 160,000 / 20,000 / 20,000 for Pathfinder32 with their own random "
    "split, which suggests 200,000 images per difficulty (not checked here). verify parses every "
    "metadata file and checks that each listed PNG exists, and counts per difficulty. "
)


def _pathfinder(resolution: int, title: str, configs: tuple[str, ...]) -> None:
    catalog.register(
        catalog.Dataset(
            name=f"pathfinder{resolution}",
            title=title,
            size=_LRA_SIZE,
            licence=_LRA_LICENCE + "; images made with drewlinsley/pathfinder (Linsley et al.)",
            homepage=_LRA_HOME,
            remotes=(LRA_RELEASE,),
            folder=f"{_RELEASE_DIR}/pathfinder{resolution}",
            configs=configs,
            splits={},
            layout=_PATHFINDER_LAYOUT,
            arrange=_arrange_release(f"pathfinder{resolution}"),
            count=_count_pathfinder,
            notes=_PATHFINDER_NOTES
            + "The Pathfinder config reads it at preset=paper (the cpu and smoke presets use the "
            "generator; --config.data.source=official reads it at any preset). " + _ONE_DOWNLOAD,
        )
    )


_pathfinder(
    32,
    "LRA Pathfinder, 32x32 (pathfinder32/ of the LRA release)",
    ("lra/pathfinder.py:preset=paper",),
)
_pathfinder(
    128,
    "LRA Path-X, Pathfinder 128x128 (pathfinder128/ of the LRA release)",
    ("lra/pathfinder.py:preset=paper,resolution=128",),
)

# ---- IMDB (LRA Text) ----------------------------------------------------------------------------

_IMDB_KEPT = {("train", "pos"), ("train", "neg"), ("test", "pos"), ("test", "neg")}


def _imdb_path(member: str) -> tuple[str, ...] | None:
    """aclImdb/{train,test}/{pos,neg}/<file> and aclImdb/README, as paths inside the target;
    None for the rest (unsup/, the bag-of-words features, the URL lists, the vocabulary)."""
    parts = _parts(member)
    if parts[:1] != ["aclImdb"]:
        return None
    if parts[1:] == ["README"] or (len(parts) == 4 and (parts[1], parts[2]) in _IMDB_KEPT):
        return tuple(parts[1:])
    return None


def _count_imdb(folder: pathlib.Path) -> dict[str, int]:
    """Reviews per split as the reader reads them (file names, ratings against the folders,
    empty files checked)."""
    from lra.data import text

    return {split: len(text.read_imdb(folder, split)[1]) for split in ("train", "test")}


catalog.register(
    catalog.Dataset(
        name="imdb",
        title="IMDB Large Movie Review Dataset v1.0 (aclImdb), for LRA Text",
        size="about 84 MB (not checked here)",
        licence="no licence stated; distributed by the authors for research (cite Maas et al. "
        "2011)",
        homepage="https://ai.stanford.edu/~amaas/data/sentiment/",
        remotes=(
            fetch.Remote(
                url="https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz",
                filename="aclImdb_v1.tar.gz",
                # pytorch/text torchtext/datasets/imdb.py (MD5, checked on its download)
                md5="7c2ac02c03563afcf9b574c7e56c153a",
                checksum_source="torchtext/datasets/imdb.py (pytorch/text)",
            ),
        ),
        folder="aclImdb",
        configs=("lra/text.py:preset=paper",),
        # torchtext/datasets/imdb.py NUM_LINES: train 25000, test 25000.
        splits={"train": 25_000, "test": 25_000},
        layout="train/{pos,neg}/<id>_<rating>.txt and test/{pos,neg}/<id>_<rating>.txt, one "
        "review per file (pos: rating 7-10, neg: 1-4), and README",
        arrange=_arrange_members(_imdb_path, "aclImdb/{train,test}/{pos,neg}/"),
        count=_count_imdb,
        notes="verify counts the release's train and test reviews; the Text config then holds "
        "out config.data.val_fraction (0.1) of train, stratified and seeded, as its val split "
        "(or, with --config.data.val_split=test, validates on test as LRA did). unsup/ (the "
        "unlabelled reviews) and the bag-of-words files are not kept.",
    )
)
