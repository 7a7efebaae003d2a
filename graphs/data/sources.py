"""The official graph datasets, for `attnbench-data` (`attnbench.data.catalog`): ZINC, LRGB
Peptides and PCQM4Mv2, listed with their sources and the steps `fetch` prints.
"""

from __future__ import annotations

from attnbench.data import catalog

catalog.listed(
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
catalog.listed(
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
catalog.listed(
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
