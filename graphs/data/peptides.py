"""LRGB Peptides-func / Peptides-struct (SAMSA Tables 1, 3, 4, GFSA Table 6): LRGB's official
files (`load_peptides`) and the offline Peptides-like stand-in of generated peptides (`load`).

The official files, as the official loaders read them (facts from their code, restated; what
`load_peptides` shares with the other official readers is in `graphs.data.official`):

Peptides (vijaydwivedi75/lrgb `graphgps/loader/dataset/peptides_functional.py`,
`peptides_structural.py`; rampasek/GraphGPS, same files): func reads
`peptide_multi_class_dataset.csv.gz` (columns `smiles`, `labels`: the string of a list of 10
0/1 labels, e.g. "[0, 1, 0, ...]", in the class order antifungal, cell_cell_communication,
anticancer, drug_delivery_vehicle, antimicrobial, antiviral, antihypertensive, antibacterial,
antiparasitic, toxic) and `splits_random_stratified_peptide.pickle`; struct reads
`peptide_structure_normalized_dataset.csv.gz` (GraphGPS; LRGB's first release read the
unnormalised `peptide_structure_dataset.csv.gz`, also accepted) with the 11 target columns
`STRUCT_TARGETS` and `splits_random_stratified_peptide_structure.pickle`. The split pickles are
`pickle.dump`ed dicts `{"train", "val", "test"}` of numpy index arrays (OGB's
`replace_numpy_with_torchtensor` turns them into tensors after loading); index i is csv row i.
LRGB standardises the struct targets over the whole csv, per column, with pandas'
`(x - x.mean()) / x.std()` (sample std, ddof=1, NaN skipped); GraphGPS's normalised file is
already standardised (it asserts mean 0 and std 1 within 1e-10), so applying the same
standardisation here gives LRGB's targets from either file. The csv files sit in
`peptides-functional/raw/` and `peptides-structural/raw/`, the split pickles one level up.
Graphs are OGB's `smiles2graph`.

Peptides-like: an offline stand-in for LRGB's Peptides-func / Peptides-struct (Dwivedi et al.
2022, "Long Range Graph Benchmark"), NOT LRGB's data: random peptides, their molecular graphs,
3-D shape targets from RDKit conformers, and synthetic function labels.

What LRGB has (facts from vijaydwivedi75/lrgb: `README.md` "Statistics of Datasets" and
`graphgps/loader/dataset/peptides_structural.py`): 15,535 SATPdb peptides as OGB
`smiles2graph` molecular graphs (heavy atoms; 2,344,859 nodes, 150.94 nodes and 307.30 directed
edges per graph on average, mean shortest path 20.89 +- 9.79, diameter 56.99 +- 28.72), a
stratified 70/15/15 split (10,873 / 2,331 / 2,331). Peptides-func: 10 binary labels (antifungal,
cell-cell communication, anticancer, drug delivery vehicle, antimicrobial, antiviral,
antihypertensive, antibacterial, antiparasitic, toxic), scored by average precision.
Peptides-struct: 11 regression targets "precomputed from molecule XYZ", each z-scored over the
whole set with pandas' `(x - mean) / std` (std with ddof=1), scored by MAE:
`Inertia_mass_[a-c]` ("principal component of the inertia of the mass, with some
normalizations. Sorted"), `Inertia_valence_[a-c]` ("principal component of the inertia of the
Hydrogen atoms ... the 3D distribution of hydrogens. Sorted"), `length_[a-c]` ("the length
around the 3 main geometric axis ... without considering atom types. Sorted"), `Spherocity`
(RDKit's `CalcSpherocityIndex`) and `Plane_best_fit` (RDKit's `CalcPBF`). The real files cannot
be installed offline: LRGB distributes them as downloads only (`PEPTIDES_URLS`).

What is built here (everything seeded by `seed`):

* Sequences: peptide `i` is drawn from `numpy.random.default_rng(seed)`: its length uniform on
  `LENGTHS` = 6..30 residues, then its residues uniform over the 20 standard amino acids
  (`AMINO_ACIDS`). A residue adds 8.35 heavy atoms on average (the free amino acids' 9.35 minus
  the water lost to each peptide bond), so a peptide has 8.35 L + 1 heavy atoms: 151 on average
  (LRGB: 150.94), roughly 50-250 (W-rich 30-mers up to ~420). SATPdb's sequences are real
  (and include modified residues); ours are uniform random. Measured on a 40-peptide build
  (seed 0): 149.9 nodes, 308.6 directed edges per graph, mean degree 2.06, mean shortest path
  21.4 and diameter 59.2 (train split), against LRGB's 150.94, 307.30, 2.04, 20.89, 56.99.
* Graphs: `rdkit.Chem.MolFromSequence` (L-amino acids, N- to C-terminus, neutral termini and
  side chains), written as RDKit's canonical isomeric SMILES and read back by OGB's
  `smiles2graph` (`graphs.data.featurize.smiles_to_graph`, exactly as `graphs.data.zinc`; LRGB's
  graphs too came from SMILES), with shortest-path distances (`graphs.data.batching.pack`).
* Conformers: one per peptide, RDKit ETKDGv3 with `randomSeed` derived from (`seed`, `i`)
  (`numpy.random.SeedSequence`), `useRandomCoords=True`, at most `MAX_ATTEMPTS` embedding
  attempts, **on the heavy atoms only** and **without enforcing chirality**: with explicit
  hydrogens (or with chirality enforced) ETKDG took 4-15 s per 150-atom peptide here, against
  ~1-2 s without, which is what makes a few thousand peptides affordable on 2 cores. So the
  stereocentres of a conformer are not guaranteed to be L, and hydrogens have no coordinates
  (their mass and count are lumped onto the heavy atom that carries them). No force-field
  optimisation. A peptide whose embedding fails is skipped, for both kinds, and counted
  (`embed_failures` in the description).
* struct targets (`shape_targets`, float64, from the heavy-atom coordinates `x_i`; "moments"
  below are eigenvalues, ascending, of the tensor `I = sum_i w_i (|r_i|^2 E - r_i r_i^T) /
  sum_i w_i` with `r_i = x_i - (sum_i w_i x_i) / sum_i w_i`; dividing by the total weight is
  our reading of LRGB's unspecified "normalizations"):
    Inertia_mass_a/b/c     moments with `w_i` = the atom's mass plus its hydrogens' masses
                           (united atoms: the molecule's total mass; RDKit's `GetMass`).
    Inertia_valence_a/b/c  moments with `w_i` = the atom's hydrogen count (`GetTotalNumHs`):
                           the hydrogens' distribution, each hydrogen placed on its heavy atom.
    length_a/b/c           extents (max - min of the projections) of the unweighted points
                           along the eigenvectors of their covariance; sorted descending, so
                           `a` is the long axis (the axis of the smallest moments).
    Spherocity             `3 * l_min / (l_1 + l_2 + l_3)`, `l` the eigenvalues of the
                           covariance `sum_i r_i r_i^T / n` of the unweighted points: RDKit's
                           `CalcSpherocityIndex` (equal to it on the same conformer).
    Plane_best_fit         mean distance of the points to their least-squares plane (through
                           the centroid, normal = the covariance's smallest eigenvector):
                           RDKit's `CalcPBF` (equal to it on the same conformer).
  Where this may differ from LRGB: LRGB's conformers (method not stated in the code) most likely
  had explicit hydrogens, which enter its mass inertia, lengths, spherocity and PBF; its
  valence inertia may weight atoms differently; its normalisation is unknown. The targets are
  z-scored over the whole generated set (pandas' ddof=1 std), as LRGB does; the raw values are
  cached too (`struct_raw`).
* func labels (`func_labels`): 10 synthetic binary rules on the sequence (`FUNC_RULES`:
  charge, hydropathy, composition, motifs; four of them compare the two ends of the chain, i.e.
  atoms ~100 bonds apart), with thresholds set so that each positive rate is 10-50% on this
  length distribution (on 20,000 sequences of seed 0: 0.200, 0.190, 0.246, 0.343, 0.315,
  0.142, 0.328, 0.208, 0.159, 0.374 in `FUNC_RULES` order). **They mean nothing
  biological**; they only give a multilabel task whose answers are in the graph and partly
  need long-range information.

`load(root, kind=...)` splits the G kept peptides by the permutation
`numpy.random.default_rng([seed, 1]).permutation(G)` (a stream of its own): its first
`G - 2 ceil(0.15 G)` entries are train, the next `ceil(0.15 G)` val, the rest test (`split_sizes`:
LRGB's proportions and, for 15,535, its counts; LRGB's split is stratified, ours is not). Both
kinds share one build, cached with `attnbench.data.cache.build_once` under
`<data root>/graphs/peptides-like-<hash>/{train,val,test}.npz` (graph arrays, `sequence`,
`struct`, `struct_raw`, `func`, `index`: the peptide's draw number) and `build.json` (generation
time, per-peptide conformer time, failures), keyed by (number of peptides, seed, lengths,
`MAX_ATTEMPTS`, RDKit version): never by `kind`. Conformers run in a "spawn" process pool of
`workers` (the caller may hold JAX threads; a script calling `load` at import time needs an
`if __name__ == "__main__":` guard, or `workers=1`), with progress (peptides done, rate, ETA)
on stderr.

Cost (RDKit 2026.09.1, the shared and loaded 2-core machine, 2 workers): embedding dominates and
grows steeply with size (~0.3 s for a 50-atom peptide, ~1-4 s at 150 atoms, 6-14 s at 200-260
atoms, per core); 40 peptides at the default lengths (mean 149.9 nodes) took 57-91 s in two runs,
0.44-0.70 peptides/s, so the default `DEFAULT_NUM_PEPTIDES` = 360 takes ~9-14 min and LRGB's
15,535 would take 6-10 h. Larger sets (`num_peptides=2000`: ~50-75 min) are built once and
cached. The fast tests use 2-4-residue peptides (~10 ms each). Summaries label the data
`standin` with "offline Peptides-like stand-in (not LRGB)"; compare mechanisms with each other on
it, never with the papers' Peptides AP / MAE.
"""

from __future__ import annotations

import ast
import concurrent.futures
import json
import math
import multiprocessing
import os
import pathlib
import time
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from attnbench import errors, extras, tasks
from attnbench.data import cache
from graphs.data import batching, featurize, official

__all__ = [
    "PEPTIDES_URLS",
    "STRUCT_TARGETS",
    "FUNC_CLASSES",
    "standardize_struct",
    "load_peptides",
    "AMINO_ACIDS",
    "LENGTHS",
    "SPLITS",
    "FRACTIONS",
    "FUNC_RULES",
    "DEFAULT_NUM_PEPTIDES",
    "MAX_ATTEMPTS",
    "sample_sequences",
    "peptide_smiles",
    "peptide_graph",
    "shape_targets",
    "conformer_targets",
    "func_labels",
    "standardize",
    "split_sizes",
    "build",
    "load",
]

# The official files (LRGB).
PEPTIDES_URLS = {
    "peptide_multi_class_dataset.csv.gz": (
        "https://www.dropbox.com/s/ol2v01usvaxbsr8/peptide_multi_class_dataset.csv.gz?dl=1"
    ),
    "splits_random_stratified_peptide.pickle": (
        "https://www.dropbox.com/s/j4zcnx2eipuo0xz/splits_random_stratified_peptide.pickle?dl=1"
    ),
    "peptide_structure_dataset.csv.gz": (  # LRGB's first release (unnormalised targets)
        "https://www.dropbox.com/s/464u3303eu2u4zp/peptide_structure_dataset.csv.gz?dl=1"
    ),
    "peptide_structure_normalized_dataset.csv.gz": (
        "https://www.dropbox.com/s/0d4aalmq4b4e2nh/peptide_structure_normalized_dataset.csv.gz?dl=1"
    ),
    "splits_random_stratified_peptide_structure.pickle": (
        "https://www.dropbox.com/s/9dfifzft1hqgow6/"
        "splits_random_stratified_peptide_structure.pickle?dl=1"
    ),
}
# LRGB Peptides-struct's target names, in its csv's column order.
STRUCT_TARGETS = (
    "Inertia_mass_a",
    "Inertia_mass_b",
    "Inertia_mass_c",
    "Inertia_valence_a",
    "Inertia_valence_b",
    "Inertia_valence_c",
    "length_a",
    "length_b",
    "length_c",
    "Spherocity",
    "Plane_best_fit",
)
FUNC_CLASSES = (
    "antifungal",
    "cell_cell_communication",
    "anticancer",
    "drug_delivery_vehicle",
    "antimicrobial",
    "antiviral",
    "antihypertensive",
    "antibacterial",
    "antiparasitic",
    "toxic",
)
# The stand-in.
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"  # the 20 standard residues, one-letter codes
LENGTHS = (6, 30)  # residues per peptide, inclusive: mean 18 -> ~151 heavy atoms
SPLITS = ("train", "val", "test")
FRACTIONS = (0.70, 0.15, 0.15)  # LRGB's proportions (10,873 / 2,331 / 2,331 of 15,535)
# Default size for CPU runs: ~9-14 min on 2 loaded cores at 0.44-0.70 peptides/s (measured on
# 40-peptide samples); the build's own time is in the description (`generation_seconds`).
DEFAULT_NUM_PEPTIDES = 360
MAX_ATTEMPTS = 10  # ETKDG embedding attempts (`maxIterations`) before a peptide is skipped
_CACHE_VERSION = 1  # bump when the cached arrays of a given spec change
_PROGRESS_EVERY = 5.0  # seconds between progress lines
_H_MASS = 1.008  # RDKit's atomic weight of hydrogen


# --------------------------------------------------------------------------------------------
# LRGB Peptides-func / Peptides-struct

# `attnbench-data`'s name for LRGB's files and the folder it fetches them into under the data
# root (graphs/data/sources.py; tests/graphs/data/test_peptides.py checks they agree).
PEPTIDES_CATALOG = ("peptides", "peptides")
_PEPTIDES = {
    "func": dict(
        folder="peptides-functional",
        csv=("peptide_multi_class_dataset.csv.gz",),
        split="splits_random_stratified_peptide.pickle",
    ),
    "struct": dict(
        folder="peptides-structural",
        csv=("peptide_structure_normalized_dataset.csv.gz", "peptide_structure_dataset.csv.gz"),
        split="splits_random_stratified_peptide_structure.pickle",
    ),
}


def _func_labels(text: str, where: str) -> list[float]:
    try:
        labels = ast.literal_eval(text.strip())
        values = [float(v) for v in labels]
    except (ValueError, SyntaxError, TypeError) as e:
        raise cache.DataError(f"{where}: labels {text[:40]!r} is not a list of numbers") from e
    if len(values) != len(FUNC_CLASSES):
        raise cache.DataError(f"{where}: {len(values)} labels, expected {len(FUNC_CLASSES)}")
    return values


def _check_spread(values: np.ndarray, path: pathlib.Path, fix: str) -> None:
    """`DataError` naming the struct column that LRGB's standardisation would turn into NaN
    (fewer than two numbers, or one value in every row: a sample std of 0 or NaN)."""
    with warnings.catch_warnings():  # a column of fewer than 2 numbers: NaN, refused below
        warnings.simplefilter("ignore", RuntimeWarning)
        std = np.nanstd(np.asarray(values, np.float64), axis=0, ddof=1)
    flat = np.flatnonzero(~(std > 0))
    if flat.size:
        raise cache.DataError(
            f"{path}: column {STRUCT_TARGETS[flat[0]]} has no spread over the file's rows "
            f"(sample std {std[flat[0]]:g}), so LRGB's standardisation (x - mean) / std would "
            f"make every target of it NaN; {fix}"
        )


def standardize_struct(values: np.ndarray) -> np.ndarray:
    """LRGB's standardisation of the struct targets, per column over all rows: pandas'
    `(x - x.mean()) / x.std()` (sample std, ddof=1; NaN skipped), in float64."""
    values = np.asarray(values, np.float64)
    mean = np.nanmean(values, axis=0)
    std = np.nanstd(values, axis=0, ddof=1)
    return (values - mean) / std


def load_peptides(
    root: str | os.PathLike = "",
    kind: str = "func",
    *,
    spd: bool = True,
    workers: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    collate: batching.GraphCollate | None = None,
    drop_invalid: bool = False,
) -> tasks.Data:
    """LRGB Peptides-func (`kind="func"`: float32 target [10], multilabel 0/1 in
    `FUNC_CLASSES` order) or Peptides-struct (`"struct"`: float32 target [11], the
    `STRUCT_TARGETS` standardised as LRGB does) from LRGB's original files, as a
    `attnbench.tasks.Data` (`source="official"`) of `PackedGraphs` of OGB graphs with `spd`, split
    by LRGB's stratified split pickle.

    `DataError` naming the file, the data row and the column for a label other than 0 or 1
    (func: LRGB's 10 binary columns have no missing values), a target that is not a finite
    number (struct), a struct column without spread (it cannot be standardised), an empty
    split, and for SMILES RDKit cannot parse unless `drop_invalid` (`graphs.data.official`).

    Args:
      root: the folder holding the csv.gz and the split pickle, `peptides-functional/`
        (`peptides-structural/`) with the csv in its `raw/`, or their parent (which may instead
        hold `peptides/` with all the files, as `attnbench-data fetch peptides` arranges them).
        Empty: the data root, where that command puts `peptides/`; files not found are an
        error naming it.
      spd: also compute and store shortest-path distances (peptides average ~151 atoms, so this
        is most of the build time).
      workers: featurisation processes (default: the usable cores, at most 8).
      cache_dir: where the `graphs/` cache folder goes (default `root`).
      collate: the batches' collate (default `GraphCollate()`).
      drop_invalid: leave out the molecules RDKit cannot parse (a line on stderr per split, the
        description's `dropped`) instead of refusing the data.
    """
    rdkit = extras.require("rdkit", "reading LRGB Peptides (graphs.data.peptides.load_peptides)")

    if kind not in _PEPTIDES:
        raise errors.ConfigError(f"load_peptides: kind={kind!r}; known: func, struct")
    layout, base = _PEPTIDES[kind], official._root(root)
    # "peptides": where `attnbench-data fetch peptides` puts both kinds' files.
    folders = ("", "raw", layout["folder"], f"{layout['folder']}/raw", PEPTIDES_CATALOG[1])
    csv_path = official._find(base, folders, layout["csv"])
    split_path = official._find(base, folders, [layout["split"]])
    if csv_path is None or split_path is None:
        name = layout["csv"][0] if csv_path is None else layout["split"]
        raise cache.DataError(
            f"Peptides-{kind}: no {name} in {official._looked(base, folders)}; "
            + official._fetch_hint(*PEPTIDES_CATALOG, base, PEPTIDES_URLS[name])
        )
    spec = dict(
        version=official._CACHE_VERSION,
        dataset=f"peptides-{kind}",
        files=official._file_spec([csv_path, split_path]),
        spd=bool(spd),
        rdkit=rdkit.__version__,
    )
    columns = ("smiles", "labels") if kind == "func" else ("smiles", *STRUCT_TARGETS)
    fix = f"download {PEPTIDES_URLS[csv_path.name]} again"
    checks = official._ogb_layout(
        f"Peptides-{kind}",
        {split: csv_path for split in SPLITS},
        FUNC_CLASSES if kind == "func" else STRUCT_TARGETS,
        fix,
        binary=kind == "func",
    )

    def write(tmp: pathlib.Path) -> None:
        smiles, targets = [], []
        for position, row in official._gzip_csv_rows(csv_path, columns, lambda _: True):
            where = f"{csv_path}, data row {position}"
            smiles.append(row["smiles"].strip())
            if kind == "func":
                targets.append(_func_labels(row["labels"], where))
            else:
                try:
                    targets.append([official._number(row[c]) for c in STRUCT_TARGETS])
                except ValueError as e:
                    raise cache.DataError(f"{where}: a target is not a number ({e})") from None
        if not smiles:
            raise cache.DataError(f"{csv_path}: no data rows, so every split would be empty; {fix}")
        targets = np.asarray(targets, np.float64)
        split = official._split_dict(split_path, SPLITS, torch_save=False)
        positions = {
            name: official._split_positions(
                split[name], split_path, name, len(smiles), split=name,
                fix=f"download {PEPTIDES_URLS[split_path.name]} again",
            )
            for name in SPLITS
        }  # fmt: skip
        for name, pos in positions.items():  # the file's values, before featurising
            checks.check_targets(name, targets[pos], pos)
        if kind == "struct":
            _check_spread(targets, csv_path, fix)
            targets = standardize_struct(targets)
        skipped = {}
        with official._Pool(workers) as pool:
            for name, pos in positions.items():
                arrays, skipped[name] = official._featurize(
                    [smiles[p] for p in pos],
                    pos,
                    targets[pos].astype(np.float32),
                    spd=spd,
                    pool=pool,
                    chunk=100,
                    pool_min=official._POOL_MIN["peptides"],
                    label=f"peptides-{kind} {name}",
                    path=csv_path,
                    split=name,
                )
                checks.check(name, arrays)
                cache.save_arrays(tmp / f"{name}.npz", arrays)
        (tmp / "skipped.json").write_text(json.dumps(skipped))

    directory = official._build(cache_dir, base, f"peptides-{kind}-official", spec, write)
    description = {
        "dataset": f"LRGB Peptides-{kind}",
        "files": [str(csv_path), str(split_path)],
        "url": PEPTIDES_URLS[csv_path.name],
        "target": (
            f"10 binary labels ({', '.join(FUNC_CLASSES)}); metric: AP"
            if kind == "func"
            else f"11 targets ({', '.join(STRUCT_TARGETS)}), each standardised over the whole "
            "csv (mean 0, sample std 1) as LRGB does; metric: MAE"
        ),
        "features": official._ogb_features(),
        **official._ogb_dims(),
    }
    return official._data(
        directory, SPLITS, description, collate, layout=checks, drop_invalid=drop_invalid
    )


# --------------------------------------------------------------------------------------------
# The Peptides-like stand-in (generated peptides)

# Residue classes for the synthetic labels (textbook groupings at pH 7; His counted neutral).
_POSITIVE, _NEGATIVE = set("KR"), set("DE")
_HYDROPHOBIC = set("AILMFVW")
_AROMATIC = set("FWY")
_POLAR = set("STNQ")
# Kyte & Doolittle (1982) hydropathy index.
_KYTE_DOOLITTLE = {
    "A": 1.8, "R": -4.5, "N": -3.5, "D": -3.5, "C": 2.5, "Q": -3.5, "E": -3.5, "G": -0.4,
    "H": -3.2, "I": 4.5, "L": 3.8, "K": -3.9, "M": 1.9, "F": 2.8, "P": -1.6, "S": -0.8,
    "T": -0.7, "W": -0.9, "Y": -1.3, "V": 4.2,
}  # fmt: skip


def _charge(seq: str) -> int:
    return sum(c in _POSITIVE for c in seq) - sum(c in _NEGATIVE for c in seq)


def _class(residue: str) -> str:
    if residue in _POSITIVE or residue in _NEGATIVE:
        return "charged"
    return "hydrophobic" if residue in _HYDROPHOBIC else "other"


def _far_pair(seq: str, residues: set, gap: int) -> bool:
    at = [i for i, c in enumerate(seq) if c in residues]
    return len(at) >= 2 and at[-1] - at[0] >= gap


# (name, rule(sequence) -> bool). Names describe the rule, not a biological function.
FUNC_RULES: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("net_positive", lambda s: _charge(s) >= 2),
    ("net_negative", lambda s: _charge(s) <= -2),
    ("hydropathy_above_0", lambda s: np.mean([_KYTE_DOOLITTLE[c] for c in s]) > 0.0),
    ("hydrophobic_fraction_ge_0.4", lambda s: np.mean([c in _HYDROPHOBIC for c in s]) >= 0.4),
    ("polar_fraction_ge_0.25", lambda s: np.mean([c in _POLAR for c in s]) >= 0.25),
    ("has_GP_PG_GG_or_PP_motif", lambda s: any(m in s for m in ("GP", "PG", "GG", "PP"))),
    # Long-range rules: the two ends of the chain together.
    ("aromatic_in_first_5_and_last_5", lambda s: bool(_AROMATIC & set(s[:5]))
     and bool(_AROMATIC & set(s[-5:]))),
    ("cys_or_met_pair_12_apart", lambda s: _far_pair(s, {"C", "M"}, 12)),
    ("ends_charge_opposite", lambda s: _charge(s[:6]) * _charge(s[-6:]) < 0),
    ("first_last_same_class", lambda s: _class(s[0]) == _class(s[-1])),
)  # fmt: skip


def sample_sequences(num: int, seed: int = 0, lengths: Sequence[int] = LENGTHS) -> list[str]:
    """`num` random peptides from `numpy.random.default_rng(seed)` (the generator's first draws:
    all lengths, uniform on `lengths` inclusive, then all residues, uniform over
    `AMINO_ACIDS`)."""
    lo, hi = int(lengths[0]), int(lengths[1])
    if not 1 <= lo <= hi:
        raise ValueError(f"lengths must be (min, max) with 1 <= min <= max, got {lengths}")
    rng = np.random.default_rng(seed)
    sizes = rng.integers(lo, hi + 1, size=num)
    residues = rng.integers(0, len(AMINO_ACIDS), size=int(sizes.sum()))
    letters = np.array(list(AMINO_ACIDS))[residues]
    cuts = np.cumsum(sizes)[:-1]
    return ["".join(chunk) for chunk in np.split(letters, cuts)]


def _molecule(sequence: str):
    from rdkit import Chem

    if not sequence or set(sequence) - set(AMINO_ACIDS):
        raise ValueError(f"peptide {sequence!r}: use one-letter codes of {AMINO_ACIDS}")
    mol = Chem.MolFromSequence(sequence)
    if mol is None or mol.GetNumAtoms() == 0:
        raise ValueError(f"peptide {sequence!r}: RDKit's MolFromSequence returned no molecule")
    return mol


def peptide_smiles(sequence: str) -> str:
    """RDKit's canonical SMILES (isomeric) of `Chem.MolFromSequence(sequence)`."""
    from rdkit import Chem

    return Chem.MolToSmiles(_molecule(sequence))


def peptide_graph(sequence: str) -> dict:
    """OGB's `smiles2graph` graph (`graphs.data.featurize.smiles_to_graph`) of the peptide's SMILES
    (`peptide_smiles`): LRGB built its graphs from SMILES the same way, so atom order and the
    order-relative chirality tags (CW / CCW) follow the SMILES, as in `graphs.data.zinc`."""
    return featurize.smiles_to_graph(peptide_smiles(sequence))


def _moments(r: np.ndarray, w: np.ndarray) -> np.ndarray:
    centred = r - (w[:, None] * r).sum(0) / w.sum()
    sq = (centred**2).sum(1)
    tensor = np.eye(3) * (w * sq).sum() - (w[:, None] * centred).T @ centred
    return np.linalg.eigvalsh(tensor / w.sum())  # ascending


def shape_targets(coords: np.ndarray, masses: np.ndarray, hydrogens: np.ndarray) -> np.ndarray:
    """The 11 raw struct targets (`STRUCT_TARGETS` order, float64) of a conformer: heavy-atom
    coordinates `[n, 3]`, their united-atom masses `[n]` and hydrogen counts `[n]` (module
    docstring). A peptide always has hydrogens; with none, the valence moments are 0."""
    x = np.asarray(coords, np.float64)
    masses, hydrogens = np.asarray(masses, np.float64), np.asarray(hydrogens, np.float64)
    mass = _moments(x, masses)
    valence = _moments(x, hydrogens) if hydrogens.sum() > 0 else np.zeros(3)
    centred = x - x.mean(0)
    cov = centred.T @ centred / len(x)
    evals, evecs = np.linalg.eigh(cov)  # ascending
    proj = centred @ evecs
    lengths = np.sort(proj.max(0) - proj.min(0))[::-1]
    spherocity = 3.0 * evals[0] / evals.sum() if evals.sum() > 0 else 0.0
    plane = np.abs(proj[:, 0]).mean()
    return np.concatenate([mass, valence, lengths, [spherocity, plane]])


def _embed_seed(seed: int, index: int) -> int:
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0] >> 1)


def conformer_targets(
    sequence: str, embed_seed: int, max_attempts: int = MAX_ATTEMPTS
) -> np.ndarray | None:
    """The raw struct targets of one ETKDGv3 conformer of the peptide's heavy atoms (module
    docstring), or None when RDKit fails to embed it in `max_attempts` attempts."""
    from rdkit import rdBase
    from rdkit.Chem import AllChem

    mol = _molecule(sequence)
    params = AllChem.ETKDGv3()
    params.randomSeed = int(embed_seed)
    params.useRandomCoords = True
    params.enforceChirality = False
    params.maxIterations = int(max_attempts)
    with rdBase.BlockLogs():  # "does not have explicit Hs": intended, see the docstring
        status = AllChem.EmbedMolecule(mol, params)
    if status != 0:
        return None
    atoms = [mol.GetAtomWithIdx(i) for i in range(mol.GetNumAtoms())]
    hydrogens = np.array([a.GetTotalNumHs() for a in atoms], np.float64)
    masses = np.array([a.GetMass() for a in atoms]) + _H_MASS * hydrogens
    return shape_targets(mol.GetConformer().GetPositions(), masses, hydrogens)


def _conformer_job(args: tuple[str, int, int]) -> tuple[np.ndarray | None, float]:
    start = time.perf_counter()
    targets = conformer_targets(*args)
    return targets, time.perf_counter() - start


def func_labels(sequence: str) -> np.ndarray:
    """The 10 synthetic labels (`FUNC_RULES` order) of a sequence, int8 0/1."""
    return np.array([rule(sequence) for _, rule in FUNC_RULES], np.int8)


def standardize(values: np.ndarray) -> np.ndarray:
    """Columns z-scored as LRGB does: `(x - mean) / std` with pandas' ddof=1 std (float64); a
    constant column (or a single row) becomes 0."""
    values = np.asarray(values, np.float64)
    mean = values.mean(0)
    std = values.std(0, ddof=1) if len(values) > 1 else np.zeros(values.shape[1:])
    return np.where(std > 0, (values - mean) / np.where(std > 0, std, 1.0), 0.0)


def split_sizes(num: int) -> tuple[int, int, int]:
    """(train, val, test) counts for `num` peptides: val and test `ceil(0.15 num)` each, the
    rest train (15,535 -> 10,873 / 2,331 / 2,331, LRGB's counts)."""
    val = math.ceil(FRACTIONS[1] * num - 1e-9)
    test = math.ceil(FRACTIONS[2] * num - 1e-9)
    return num - val - test, val, test


def _all_conformers(
    sequences: Sequence[str], seed: int, workers: int, label: str
) -> tuple[list[np.ndarray | None], list[float]]:
    jobs = [(s, _embed_seed(seed, i), MAX_ATTEMPTS) for i, s in enumerate(sequences)]
    progress = cache.Progress(
        len(jobs), label, unit="peptides", every=_PROGRESS_EVERY, rate_format=".2f"
    )
    results: list = []
    if workers > 1 and len(jobs) > 1:
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            for result in pool.map(_conformer_job, jobs, chunksize=1):
                results.append(result)
                progress.update(len(results))
    else:
        for job in jobs:
            results.append(_conformer_job(job))
            progress.update(len(results))
    progress.update(len(results), final=True)
    return [r[0] for r in results], [r[1] for r in results]


def build(
    sequences: Sequence[str], *, seed: int = 0, workers: int = 2, label: str = "peptides-like"
) -> tuple[dict[str, np.ndarray], dict]:
    """Graph arrays (`graphs.data.batching.pack`, shortest paths included) of the peptides whose
    conformer embeds, with per-peptide `sequence`, `index` (position in `sequences`),
    `struct_raw` [G, 11] float64, `struct` (z-scored over these G) and `func` [G, 10] int8;
    and build facts (`embed_failures`, `conformer_seconds`: summed per-peptide times)."""
    targets, seconds = _all_conformers(sequences, seed, workers, label)
    kept = [i for i, t in enumerate(targets) if t is not None]
    if not kept:
        raise cache.DataError(f"{label}: no peptide embedded ({len(sequences)} tried)")
    raw = np.stack([targets[i] for i in kept])
    arrays = batching.pack(
        [peptide_graph(sequences[i]) for i in kept],
        spd=True,
        sequence=np.asarray([sequences[i] for i in kept], dtype=str),
        index=np.asarray(kept, np.int64),
        struct_raw=raw,
        struct=standardize(raw),
        func=np.stack([func_labels(sequences[i]) for i in kept]),
    )
    facts = dict(
        embed_failures=len(sequences) - len(kept),
        failed=[sequences[i] for i, t in enumerate(targets) if t is None][:10],
        conformer_seconds=round(float(np.sum(seconds)), 2),
        conformer_seconds_per_peptide=round(float(np.mean(seconds)), 3),
    )
    return arrays, facts


def _take(arrays: dict, rows: np.ndarray) -> dict:
    """The graph arrays and per-peptide fields of `rows` (sorted), re-packed."""
    ds = batching.PackedGraphs({k: v for k, v in arrays.items() if k != "sequence"})
    graphs = [ds[int(i)] for i in rows]
    out = batching.pack(graphs, spd=False)
    spd_ptr = ds.spd_ptr
    out["spd"] = np.concatenate([arrays["spd"][spd_ptr[i] : spd_ptr[i + 1]] for i in rows])
    for k in ("sequence", "index", "struct_raw", "struct", "func"):
        out[k] = arrays[k][rows]
    return out


def load(
    data_dir: str | os.PathLike = "",
    *,
    kind: str = "func",
    num_peptides: int = DEFAULT_NUM_PEPTIDES,
    seed: int = 0,
    collate: batching.GraphCollate | None = None,
    workers: int = 2,
    lengths: Sequence[int] = LENGTHS,
) -> tasks.Data:
    """The Peptides-like splits as a `attnbench.tasks.Data` (`source="standin"`): `PackedGraphs`
    with `spd` and a float32 `target`: `kind="func"` the 10 synthetic labels (0/1) [10],
    `kind="struct"` the 11 z-scored shape targets [11]; `collate` (default `GraphCollate()`).

    Args:
      data_dir: the data root (`attnbench.data.cache.data_root`); the cache is its `graphs/` folder.
      kind: "func" or "struct"; both come from one cached build.
      num_peptides: peptides generated (those whose conformer fails are dropped).
      seed: sequences, conformers and split.
      workers: processes for the conformers (1: in this process).
      lengths: (min, max) residues per peptide (tests use short ones).
    """
    rdkit = extras.require("rdkit", "the generated Peptides stand-in (graphs.data.peptides.load)")

    if kind not in ("func", "struct"):
        raise ValueError(f"kind must be 'func' or 'struct', got {kind!r}")
    num_peptides = int(num_peptides)
    if num_peptides < 3:
        raise ValueError(f"num_peptides must be at least 3 (one per split), got {num_peptides}")
    spec = dict(
        version=_CACHE_VERSION,
        num_peptides=num_peptides,
        seed=int(seed),
        lengths=[int(n) for n in lengths],
        max_attempts=MAX_ATTEMPTS,
        rdkit=rdkit.__version__,
    )

    def write(tmp: pathlib.Path) -> None:
        start = time.perf_counter()
        sequences = sample_sequences(num_peptides, seed, lengths)
        arrays, facts = build(sequences, seed=seed, workers=workers)
        kept = len(arrays["index"])
        if kept < 3:
            raise cache.DataError(f"peptides-like: only {kept} of {num_peptides} embedded")
        rng = np.random.default_rng([int(seed), 1])  # the split's own stream
        order = rng.permutation(kept)
        bounds = np.cumsum((0, *split_sizes(kept)))
        for split, lo, hi in zip(SPLITS, bounds[:-1], bounds[1:], strict=True):
            cache.save_arrays(tmp / f"{split}.npz", _take(arrays, np.sort(order[lo:hi])))
        facts["seconds"] = round(time.perf_counter() - start, 1)
        facts["workers"] = int(workers)
        (tmp / "build.json").write_text(json.dumps(facts, indent=2) + "\n")

    directory = cache.build_once(cache.data_root(data_dir) / "graphs", "peptides-like", spec, write)
    try:
        facts = json.loads((directory / "build.json").read_text())
    except (OSError, ValueError) as e:
        raise cache.DataError(
            f"{directory}/build.json: unreadable ({e}); delete {directory} to rebuild"
        ) from e
    column = "func" if kind == "func" else "struct"
    splits, stats, labels, all_nodes = {}, {}, [], []
    for split in SPLITS:
        path = directory / f"{split}.npz"
        keys = (*batching.PackedGraphs.REQUIRED, "spd", "func", "struct")
        arrays = cache.load_arrays(path, keys=keys)
        labels.append(arrays["func"])
        target = arrays[column].astype(np.float32)
        graph_arrays = {k: arrays[k] for k in (*batching.PackedGraphs.REQUIRED, "spd")}
        try:
            splits[split] = batching.PackedGraphs(dict(graph_arrays, target=target), name=str(path))
        except ValueError as e:
            raise cache.DataError(f"{e}; delete {directory} to rebuild") from e
        nodes = splits[split].num_nodes
        all_nodes.append(nodes)
        stats[split] = dict(
            graphs=len(nodes),
            nodes_min=int(nodes.min()),
            nodes_max=int(nodes.max()),
            nodes_mean=round(float(nodes.mean()), 2),
        )
        if kind == "func":
            stats[split]["label_rates"] = [round(float(r), 3) for r in target.mean(0)]
    all_nodes = np.concatenate(all_nodes)
    rates = np.concatenate(labels).mean(0)
    description = {
        "data": f"offline Peptides-like stand-in (not LRGB): {len(all_nodes)} random peptides "
        f"({num_peptides} generated, {facts['embed_failures']} conformer failures), "
        f"mean {all_nodes.mean():.1f} nodes (LRGB: 15,535 peptides, 150.94 nodes)",
        "label_rates": {
            name: round(float(r), 3) for (name, _), r in zip(FUNC_RULES, rates, strict=True)
        },
        "kind": kind,
        "cache": f"graphs/{directory.name}",
        "seed": int(seed),
        "splits": stats,
        "target": (
            "10 synthetic sequence rules (not biological functions): "
            + ", ".join(name for name, _ in FUNC_RULES)
            if kind == "func"
            else "11 shape targets of one ETKDGv3 heavy-atom conformer, z-scored over the set: "
            + ", ".join(STRUCT_TARGETS)
        ),
        "generation_seconds": facts["seconds"],
        "conformer_seconds_per_peptide": facts["conformer_seconds_per_peptide"],
        "features": "OGB smiles2graph: atom dims "
        f"{featurize.atom_feature_dims()}, bond dims {featurize.bond_feature_dims()}",
        "rdkit": rdkit.__version__,
    }
    return tasks.Data(
        train=splits["train"],
        val=splits["val"],
        test=splits["test"],
        source="standin",
        description=description,
        collate=collate or batching.GraphCollate(),
    )
