"""The official graph datasets, for `attnbench-data` (`attnbench.data.catalog`): ZINC, LRGB
Peptides and PCQM4Mv2, fetched by the command into the folders the readers find by themselves
from the data root (`graphs.data.zinc.load_zinc`, `graphs.data.peptides.load_peptides`,
`graphs.data.pcqm.load_pcqm` with `config.data.dir` empty), and verified with the readers' own
view of the splits. None of these sources publishes checksums: `fetch` records each release
file's size and sha256 in MANIFEST.json.
"""

from __future__ import annotations

import pathlib
import shutil
import tempfile
from collections.abc import Mapping

from attnbench.data import catalog, fetch

# ---- ZINC (benchmarking-gnns) ------------------------------------------------------------------

_ZINC_SPLITS = ("train", "val", "test")


def _arrange_zinc(downloads: Mapping[str, pathlib.Path], target: pathlib.Path) -> None:
    """molecules.zip's `molecules/` becomes the target (`<root>/molecules`, `load_zinc`'s
    `_ZINC_FOLDERS`), with the three ZINC-12k `.index` files beside the pickles."""
    catalog.untar_into("molecules")({"molecules.zip": downloads["molecules.zip"]}, target)
    for split in _ZINC_SPLITS:
        shutil.copyfile(downloads[f"{split}.index"], target / f"{split}.index")


def _count_zinc(folder: pathlib.Path) -> dict[str, int]:
    """ZINC-12k's split sizes as `load_zinc` reads them (no shortest paths; its cache in a
    temporary folder, so nothing is left in the dataset folder)."""
    from graphs.data import zinc

    with tempfile.TemporaryDirectory(prefix="attnbench-zinc-count-") as tmp:
        data = zinc.load_zinc(folder, subset=True, spd=False, cache_dir=tmp)
        return {"train": len(data.train), "val": len(data.val), "test": len(data.test)}


catalog.register(
    catalog.Dataset(
        name="zinc",
        title="ZINC (benchmarking-gnns), with the ZINC-12k subset's index files",
        size="size not recorded yet",
        licence="ZINC15 terms (free for research); benchmarking-gnns' files under MIT",
        homepage="https://github.com/graphdeeplearning/benchmarking-gnns",
        remotes=(
            fetch.Remote(
                url="https://www.dropbox.com/s/feo9qle74kg48gy/molecules.zip?dl=1",
                filename="molecules.zip",
                checksum_source=catalog.NO_SUM,
            ),
            *(
                fetch.Remote(
                    url="https://raw.githubusercontent.com/graphdeeplearning/benchmarking-gnns/"
                    f"master/data/molecules/{s}.index",
                    filename=f"{s}.index",
                    checksum_source=catalog.NO_SUM,
                )
                for s in _ZINC_SPLITS
            ),
        ),
        folder="molecules",
        configs=("graphs/zinc.py:preset=paper,source=official",),
        # ZINC-12k (benchmarking-gnns; graphs/data/zinc.py `SIZES` and its docstring)
        splits={"train": 10_000, "val": 1_000, "test": 1_000},
        layout="train.pickle, val.pickle, test.pickle (each a pickled list of dicts of torch "
        "tensors: atom_type, bond_type adjacency, target; read without torch) and the ZINC-12k "
        "subset's train.index, val.index, test.index (comma-separated molecule positions)",
        arrange=_arrange_zinc,
        count=_count_zinc,
        notes="molecules.zip also holds the full ZINC (~250k); the configs read the 12k subset "
        "(config.data.subset=True), which is what verify counts.",
    )
)

# ---- LRGB Peptides -----------------------------------------------------------------------------

# LRGB's files (graphs/data/peptides.py `PEPTIDES_URLS`, written out here so that listing the
# catalog does not import the reader; tests/graphs/data/test_sources.py checks they agree).
_PEPTIDES_URLS = {
    "peptide_multi_class_dataset.csv.gz": "https://www.dropbox.com/s/ol2v01usvaxbsr8/"
    "peptide_multi_class_dataset.csv.gz?dl=1",
    "splits_random_stratified_peptide.pickle": "https://www.dropbox.com/s/j4zcnx2eipuo0xz/"
    "splits_random_stratified_peptide.pickle?dl=1",
    "peptide_structure_dataset.csv.gz": "https://www.dropbox.com/s/464u3303eu2u4zp/"
    "peptide_structure_dataset.csv.gz?dl=1",
    "peptide_structure_normalized_dataset.csv.gz": "https://www.dropbox.com/s/0d4aalmq4b4e2nh/"
    "peptide_structure_normalized_dataset.csv.gz?dl=1",
    "splits_random_stratified_peptide_structure.pickle": "https://www.dropbox.com/s/"
    "9dfifzft1hqgow6/splits_random_stratified_peptide_structure.pickle?dl=1",
}


def _arrange_files(downloads: Mapping[str, pathlib.Path], target: pathlib.Path) -> None:
    """Each release file copied as it is into the target (the copies in downloads/ stay, so a
    second fetch does not download them again)."""
    for name, path in downloads.items():
        shutil.copyfile(path, target / name)


def _count_peptides(folder: pathlib.Path) -> dict[str, int]:
    """The split sizes `load_peptides` reads, for func and for struct (each split pickle is
    its own file): func's, or a `DataError` when struct's differ. Needs RDKit (the `molecules`
    extra): without it, the extras error. No shortest paths; the cache in a temporary folder."""
    from attnbench.data import cache
    from graphs.data import peptides

    sizes = {}
    with tempfile.TemporaryDirectory(prefix="attnbench-peptides-count-") as tmp:
        for kind in ("func", "struct"):
            data = peptides.load_peptides(folder, kind, spd=False, cache_dir=tmp)
            sizes[kind] = {"train": len(data.train), "val": len(data.val), "test": len(data.test)}
    if sizes["func"] != sizes["struct"]:
        raise cache.DataError(
            f"{folder}: Peptides-struct's splits {sizes['struct']} differ from Peptides-func's "
            f"{sizes['func']} (LRGB: both 10,873 / 2,331 / 2,331)"
        )
    return sizes["func"]


catalog.register(
    catalog.Dataset(
        name="peptides",
        title="LRGB Peptides-func and Peptides-struct (one molecule set, their label and split "
        "files)",
        size="size not recorded yet",
        licence="LRGB (CC BY 4.0 per its repository); peptides from SATPdb",
        homepage="https://github.com/vijaydwivedi75/lrgb",
        remotes=tuple(
            fetch.Remote(url=u, filename=f, checksum_source=catalog.NO_SUM)
            for f, u in _PEPTIDES_URLS.items()
        ),
        # load_peptides looks in <root>/peptides (as in <root>, <root>/raw and LRGB's
        # peptides-functional/ and peptides-structural/) for both kinds' files.
        folder="peptides",
        configs=(
            "graphs/peptides.py:preset=paper,kind=func,source=official",
            "graphs/peptides.py:preset=paper,kind=struct,source=official",
        ),
        # LRGB's stratified 70/15/15 split of 15,535 peptides (its README; graphs/data/
        # peptides.py's docstring, configs/graphs/peptides.py TRAIN_GRAPHS), func and struct.
        splits={"train": 10_873, "val": 2_331, "test": 2_331},
        layout="peptide_multi_class_dataset.csv.gz (smiles, labels: 10 functions) with "
        "splits_random_stratified_peptide.pickle; peptide_structure_normalized_dataset.csv.gz "
        "(smiles and 11 structural targets) with splits_random_stratified_peptide_structure"
        ".pickle; each pickle a dict of train/val/test index arrays",
        arrange=_arrange_files,
        count=_count_peptides,
        notes="verify reads both kinds with RDKit (pip install 'attnbench[molecules]'). "
        "Peptides-struct reads peptide_structure_normalized_dataset.csv.gz (GraphGPS); the "
        "unnormalised first release is fetched too and read only when the normalised one is "
        "absent.",
    )
)

# ---- PCQM4Mv2 (OGB-LSC) ------------------------------------------------------------------------


def _count_pcqm(name: str, keys: tuple[str, ...]):
    """`count(folder)`: the split sizes `load_pcqm` reads (train = OGB train, val = test = OGB
    valid), from split_dict.pt with the reader's own parsing, each index checked against the
    rows of raw/data.csv.gz; without featurising 3.7 million molecules (hours), so no RDKit."""

    def count(folder: pathlib.Path) -> dict[str, int]:
        from attnbench.data import cache
        from graphs.data import official

        csv_path, split_path = folder / "raw" / "data.csv.gz", folder / "split_dict.pt"
        fix = f"fetch it again with `attnbench-data fetch {name}`"
        for path in (csv_path, split_path):
            if not path.is_file():
                raise cache.DataError(f"{path}: not found; {fix}")
        split = official._split_dict(split_path, keys, torch_save=True)
        rows = sum(1 for _ in official._gzip_csv_rows(csv_path, ("smiles",), lambda _: True))
        sizes = {
            name: len(
                official._split_positions(split[key], split_path, key, rows, split=name, fix=fix)
            )
            for name, key in (("train", "train"), ("val", "valid"))
        }
        return {**sizes, "test": sizes["val"]}

    return count


catalog.register(
    catalog.Dataset(
        name="pcqm4mv2",
        title="OGB-LSC PCQM4Mv2",
        size="size not recorded yet",
        licence="CC BY 4.0 (OGB-LSC)",
        homepage="https://ogb.stanford.edu/docs/lsc/pcqm4mv2/",
        remotes=(
            fetch.Remote(
                url="https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m-v2.zip",
                filename="pcqm4m-v2.zip",
                checksum_source=catalog.NO_SUM,
            ),
        ),
        folder="pcqm4m-v2",
        configs=("graphs/pcqm.py:preset=paper,source=official",),
        # OGB-LSC PCQM4Mv2 (ogb.stanford.edu/docs/lsc/pcqm4mv2; Hu et al. 2021, arXiv 2103.09430):
        # train 3,378,606 and valid 73,545 of 3,746,620 molecules (test-dev 147,037 and
        # test-challenge 147,432 carry no public labels and are not read). The configs test on
        # valid, as the papers report it.
        splits={"train": 3_378_606, "val": 73_545, "test": 73_545},
        layout="raw/data.csv.gz (idx, smiles, homolumogap) and split_dict.pt (train, valid, "
        "test-dev, test-challenge index tensors; read without torch); the 3D structures "
        "(pcqm4m-v2-train.sdf) are a separate download and not read",
        arrange=catalog.untar_into("pcqm4m-v2"),
        count=_count_pcqm("pcqm4mv2", ("train", "valid", "test-dev", "test-challenge")),
        notes="verify counts the splits from split_dict.pt against raw/data.csv.gz's rows; the "
        "molecules themselves are parsed (RDKit) when a config first reads them.",
    )
)

catalog.register(
    catalog.Dataset(
        name="pcqm4m",
        title="OGB-LSC PCQM4M (v1, KDD Cup 2021; deprecated by OGB for PCQM4Mv2)",
        size="size not recorded yet",
        licence="CC BY 4.0 (OGB-LSC)",
        homepage="https://ogb.stanford.edu/kddcup2021/pcqm4m/",
        remotes=(
            fetch.Remote(
                url="https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/"
                "pcqm4m_kddcup2021.zip",
                filename="pcqm4m_kddcup2021.zip",
                checksum_source=catalog.NO_SUM,
            ),
        ),
        folder="pcqm4m_kddcup2021",
        configs=("graphs/pcqm.py:preset=paper,source=official,version=v1",),
        # OGB-LSC PCQM4M (Hu et al. 2021, arXiv 2103.09430; configs/graphs/pcqm.py TRAIN_SIZE):
        # train 3,045,360 and valid 380,670 of 3,803,453 molecules (test 377,423, no public
        # labels, not read). Sliceformer's Graphormer row reports valid.
        splits={"train": 3_045_360, "val": 380_670, "test": 380_670},
        layout="raw/data.csv.gz (idx, smiles, homolumogap) and split_dict.pt (train, valid, test "
        "index tensors; read without torch)",
        arrange=catalog.untar_into("pcqm4m_kddcup2021"),
        count=_count_pcqm("pcqm4m", ("train", "valid", "test")),
        notes="OGB deprecated PCQM4M for PCQM4Mv2 (different molecules and splits); it is read "
        "only by the configs that name version=v1.",
    )
)
