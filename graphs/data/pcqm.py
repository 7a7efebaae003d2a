"""PCQM4Mv2 / PCQM4M, the regression of the HOMO-LUMO gap in eV (Sliceformer Table 6, GFSA
Tables 5, 21, SSA Tables 3, 5): OGB-LSC's official files (`load_pcqm`) and the offline QM9-like
stand-in built from QM9's DFT gaps (`load`).

The official files, as the official loaders read them (facts from their code, restated; what
`load_pcqm` shares with the other official readers is in `graphs.data.official`):

PCQM4Mv2 / PCQM4M (snap-stanford/ogb `ogb/lsc/pcqm4mv2.py`, `ogb/lsc/pcqm4m.py`): the zip
(https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m-v2.zip, v1
`pcqm4m_kddcup2021.zip`) unzips to `pcqm4m-v2/` (v1 `pcqm4m_kddcup2021/`) holding
`raw/data.csv.gz` (columns `idx,smiles,homolumogap`; OGB reads `smiles` and `homolumogap` by
name, molecule i = data row i) and `split_dict.pt` (`torch.save` of a dict of index arrays: v2
`train`, `valid`, `test-dev`, `test-challenge`; v1 `train`, `valid`, `test`), read with
`attnbench.data.formats.torch_pickle`. The test splits have no labels (NaN), so here train = OGB
train, val = OGB valid and test = OGB valid as well (the papers report the valid MAE). Graphs are
OGB's `smiles2graph` (`graphs.data.featurize`); the target is the HOMO-LUMO gap in eV.

QM9-like: an offline stand-in for PCQM4Mv2 (OGB-LSC's HOMO-LUMO gap regression, MAE in eV),
built from QM9's 130,831 molecules and their DFT HOMO-LUMO gaps.

Source: QM9 (Ramakrishnan et al. 2014, "Quantum chemistry structures and properties of 134
kilo molecules"), as shipped by the PyPI package `qm9pack` 1.0.3 (by R. Ramakrishnan, MIT
licence) in `qm9pack/data/qm9_part{1,2,3}.csv`: plain CSV, one molecule a row,
43,610 + 43,611 + 43,610 rows, each file with the header

    XYZ_file,Index,SMILES,InChi,N_atoms,Stoichiometry,Elements,XYZ_Ang,Mulliken_pop,...,
    HOMO_au,LUMO_au,HOMO_LUMO_gap_au,R2_bohr2,...

(the layout read from the files). Only `Index` (QM9's molecule number, 1..133,885), `SMILES`
and `HOMO_LUMO_gap_au` (the gap in Hartree, 4 decimals) are read, with the `csv` module;
`qm9pack` itself is never imported (it imports pandas): the files are located with
`importlib.util.find_spec`. Install with

    pip install --no-deps qm9pack==1.0.3

`source_file=` reads other CSV files with (at least) those three columns instead.

Target: the gap in eV, `gap_au * HARTREE_EV` with `HARTREE_EV = 27.211386245988`, the Hartree
energy in eV of CODATA 2018 (NIST, physics.nist.gov/cgi-bin/cuu/Value?hrev). On the full set the
gap has mean 6.858 eV, std 1.284 eV.

Graphs: each SMILES becomes OGB's `smiles2graph` graph (`graphs.data.featurize`, PCQM4Mv2's
featurisation) with its shortest-path distances (`graphs.data.batching.pack`). A SMILES RDKit
cannot parse or featurise is an error naming its file and line, unless `drop_invalid=True`
(`config.data.drop_invalid`): then it is skipped, a line on stderr per split says how many, and
the description's `dropped` (per split) and `skipped` (count, examined, first few) record them,
all of them in the cache's `skipped.json`. (RDKit 2026.09.1 parses and featurises all 130,831.)

Split: `numpy.random.default_rng(seed).permutation(number of rows)`, over the rows of the files
in order (part1, part2, part3). Walking that order and skipping rejected molecules, the first
`sizes[1]` molecules are val, the next `sizes[2]` test, and the rest train (`sizes[0]` or
`num_train` of them when given). Val and test come first so that they do not depend on
`num_train`: a CPU run on 5,000 training molecules is scored on the same molecules as a full run
with the same seed. Only the molecules a split takes are featurised.

Build: featurisation runs in a process pool (`workers`, default 2, "spawn" processes: the caller
may hold JAX threads; as always with spawn, a script that calls `load` at import time needs an
`if __name__ == "__main__":` guard, or `workers=1`), in chunks, with progress (molecules done,
rate, ETA) on stderr when a build runs longer than a few seconds. Featurising takes ~0.44 ms a
molecule on one core; the full set was built in 137 s with 2 workers on a shared, loaded 2-core
machine. Everything is cached with `attnbench.data.cache.build_once` under
`<data root>/graphs/qm9-like-<hash>/{train,val,test}.npz` (with `skipped.json`), keyed by
(files and their sizes and mtimes, sizes, seed, RDKit version).

How it differs from PCQM4Mv2: QM9 molecules have at most 9 heavy atoms (C, N, O, F; 8.8 on
average), against about 14 on average in PCQM4Mv2 (OGB-LSC, Hu et al. 2021); the gaps are
B3LYP/6-31G(2df,p) against PCQM4Mv2's B3LYP/6-31G* (PubChemQC); 130k molecules against 3.75M.
Summaries label it `standin`; compare mechanisms with each other on it, never with the papers'
PCQM4Mv2 MAE.
"""

from __future__ import annotations

import collections
import concurrent.futures
import csv
import importlib.util
import json
import multiprocessing
import os
import pathlib
import sys
from collections.abc import Sequence

import numpy as np

from attnbench import errors, extras, tasks
from attnbench.data import cache
from graphs.data import batching, featurize, official

__all__ = [
    "PCQM_URLS",
    "HARTREE_EV",
    "INSTALL",
    "QM9_FILES",
    "COLUMNS",
    "SPLITS",
    "SIZES",
    "load_pcqm",
    "qm9pack_files",
    "Molecules",
    "read_csv",
    "featurize_all",
    "load",
]

# The official files (OGB-LSC).
PCQM_URLS = {
    "v2": "https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m-v2.zip",
    "v1": "https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m_kddcup2021.zip",
}
# The stand-in.
HARTREE_EV = 27.211386245988  # eV per Hartree, CODATA 2018 (NIST)
INSTALL = "pip install --no-deps qm9pack==1.0.3"
QM9_FILES = ("data/qm9_part1.csv", "data/qm9_part2.csv", "data/qm9_part3.csv")  # in qm9pack
COLUMNS = ("Index", "SMILES", "HOMO_LUMO_gap_au")  # the columns read
SPLITS = ("train", "val", "test")
SIZES = (None, 10_000, 10_000)  # train (None: all the rest), val, test
CHUNK = 1_000  # molecules per pool task
_POOL_MIN = 4 * CHUNK  # smaller builds featurise in-process (no worker start-up)
_PROGRESS_EVERY = 5.0  # seconds between progress lines
_CACHE_VERSION = 1  # bump when the cached arrays of a given spec change


# --------------------------------------------------------------------------------------------
# PCQM4Mv2 / PCQM4M (OGB-LSC)

# `attnbench-data`'s name for each version and the folder it fetches it into under the data root
# (graphs/data/sources.py; tests/graphs/data/test_pcqm.py checks they agree).
PCQM_CATALOG = {"v2": ("pcqm4mv2", "pcqm4m-v2"), "v1": ("pcqm4m", "pcqm4m_kddcup2021")}
_PCQM = {
    "v2": dict(folder="pcqm4m-v2", keys=("train", "valid", "test-dev", "test-challenge")),
    "v1": dict(folder="pcqm4m_kddcup2021", keys=("train", "valid", "test")),
}


def load_pcqm(
    root: str | os.PathLike = "",
    version: str = "v2",
    *,
    max_train: int = 0,
    spd: bool = True,
    workers: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    collate: batching.GraphCollate | None = None,
    drop_invalid: bool = False,
) -> tasks.Data:
    """PCQM4Mv2 (`version="v2"`) or PCQM4M (`"v1"`) from OGB-LSC's files, as a
    `attnbench.tasks.Data` (`source="official"`) of `PackedGraphs` of OGB graphs with `spd` and a
    float32 `target` (HOMO-LUMO gap, eV). train = OGB `train`, val = OGB `valid`, test = OGB
    `valid` too (the test splits have no public labels; the description says so).

    `DataError` naming the file and the row for a molecule of train or valid without a finite
    `homolumogap`, for an empty split, and for SMILES RDKit cannot parse unless `drop_invalid`
    (`graphs.data.official`'s docstring).

    Args:
      root: the dataset folder (`pcqm4m-v2/`, v1 `pcqm4m_kddcup2021/`, holding
        `raw/data.csv.gz` and `split_dict.pt`) or its parent (or PyG's `raw/` above it). Empty:
        the data root, where `attnbench-data fetch pcqm4mv2` puts `pcqm4m-v2/` (v1:
        `fetch pcqm4m`, `pcqm4m_kddcup2021/`); files not found are an error naming that command.
      max_train: when > 0, only the first `max_train` molecules of OGB's train split (in the
        split's order), for CPU-scale runs; 0 takes all.
      spd: also compute and store shortest-path distances.
      workers: featurisation processes (default: the usable cores, at most 8).
      cache_dir: where the `graphs/` cache folder goes (default `root`).
      collate: the batches' collate (default `GraphCollate()`).
      drop_invalid: leave out the molecules RDKit cannot parse (a line on stderr per split, the
        description's `dropped`) instead of refusing the data.
    """
    rdkit = extras.require("rdkit", "reading PCQM4M (graphs.data.pcqm.load_pcqm)")

    if version not in _PCQM:
        raise errors.ConfigError(f"load_pcqm: version={version!r}; known: v2, v1")
    if int(max_train) < 0:
        raise errors.ConfigError(f"load_pcqm: max_train={max_train} must be >= 0 (0: all)")
    layout, url, base = _PCQM[version], PCQM_URLS[version], official._root(root)
    folders = ("", layout["folder"], f"raw/{layout['folder']}")
    csv_path = official._find(base, [f"{f}/raw" if f else "raw" for f in folders], ["data.csv.gz"])
    split_path = official._find(base, folders, ["split_dict.pt"])
    if csv_path is None or split_path is None:
        what = "raw/data.csv.gz" if csv_path is None else "split_dict.pt"
        hint = official._fetch_hint(*PCQM_CATALOG[version], base, url)
        raise cache.DataError(
            f"PCQM4M{'v2' if version == 'v2' else ''}: no {what} in "
            f"{official._looked(base, folders)}; {hint}"
        )
    spec = dict(
        version=official._CACHE_VERSION,
        dataset=f"pcqm4m-{version}",
        files=official._file_spec([csv_path, split_path]),
        max_train=int(max_train),
        spd=bool(spd),
        rdkit=rdkit.__version__,
    )
    label = layout["folder"]
    fix = f"download {url} and unzip it again"
    checks = official._ogb_layout(
        "PCQM4Mv2" if version == "v2" else "PCQM4M",
        {"train": csv_path, "val": csv_path},
        ("homolumogap",),
        fix,
    )

    def write(tmp: pathlib.Path) -> None:
        split = official._split_dict(split_path, layout["keys"], torch_save=True)
        positions = {
            name: official._split_positions(split[key], split_path, key, None, split=name, fix=fix)
            for name, key in (("train", "train"), ("val", "valid"))
        }
        if max_train:
            positions["train"] = positions["train"][: int(max_train)]
        wanted = set(positions["train"].tolist()) | set(positions["val"].tolist())
        rows = {}  # position -> (SMILES, gap): only the molecules of the splits used
        for position, row in official._gzip_csv_rows(
            csv_path, ("smiles", "homolumogap"), wanted.__contains__, label=label
        ):
            try:
                rows[position] = (row["smiles"].strip(), official._number(row["homolumogap"]))
            except ValueError:
                raise cache.DataError(
                    f"{csv_path}, data row {position}: homolumogap {row['homolumogap']!r} is "
                    "not a number"
                ) from None
        skipped = {}
        with official._Pool(workers) as pool:
            for name, pos in positions.items():
                lost = [int(p) for p in pos if int(p) not in rows]
                if lost:
                    raise cache.DataError(
                        f"{split_path}: split {name!r} lists molecules {lost[:5]} beyond the "
                        f"{csv_path} rows"
                    )
                smiles = [rows[int(p)][0] for p in pos]
                gaps = np.asarray([rows[int(p)][1] for p in pos], np.float64)
                checks.check_targets(name, gaps, pos)  # before featurising
                arrays, skipped[name] = official._featurize(
                    smiles,
                    pos,
                    gaps.astype(np.float32),
                    spd=spd,
                    pool=pool,
                    chunk=5_000,
                    pool_min=official._POOL_MIN["pcqm"],
                    label=f"{label} {name}",
                    path=csv_path,
                    split=name,
                )
                checks.check(name, arrays)
                cache.save_arrays(tmp / f"{name}.npz", arrays)
        (tmp / "skipped.json").write_text(json.dumps(skipped))

    name = f"{label}-official" + (f"-train{int(max_train)}" if max_train else "")
    directory = official._build(cache_dir, base, name, spec, write)
    description = {
        "dataset": "PCQM4Mv2 (OGB-LSC)" if version == "v2" else "PCQM4M (OGB-LSC KDD Cup 2021)",
        "files": [str(csv_path), str(split_path)],
        "url": url,
        "splits_used": "train = OGB train"
        + (f" (first {int(max_train)})" if max_train else "")
        + ", val = OGB valid, test = OGB valid again (OGB's test splits have no public "
        "labels; the papers report the valid MAE)",
        "target": "HOMO-LUMO gap (eV), homolumogap column",
        "features": official._ogb_features(),
        **official._ogb_dims(),
    }
    return official._data(
        directory,
        ("train", "val"),
        description,
        collate,
        layout=checks,
        drop_invalid=drop_invalid,
        test_is="val",
    )


# --------------------------------------------------------------------------------------------
# The QM9-like stand-in (qm9pack's QM9 files)


def qm9pack_files() -> list[pathlib.Path]:
    """The installed `qm9pack` package's three QM9 CSV files, found without importing it;
    `DataError` naming what is missing and the install command."""
    spec = importlib.util.find_spec("qm9pack")
    where = list(spec.submodule_search_locations or []) if spec else []
    if not where:
        raise cache.DataError(
            f"QM9-like data needs QM9's CSV files from the qm9pack package, which is not "
            f"installed; install it with `{INSTALL}`, or pass CSV paths as source_file"
        )
    paths = [pathlib.Path(where[0]) / name for name in QM9_FILES]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise cache.DataError(
            f"qm9pack is installed but lacks {missing}; reinstall it with `{INSTALL}`"
        )
    return paths


class Molecules:
    """The rows of QM9 CSV files: `index` (QM9's molecule number, int64), `smiles` (list of
    str), `gap_au` (float64, Hartree), and `where[i]` ("<file>, line <n>") for messages."""

    def __init__(self, index: np.ndarray, smiles: list[str], gap_au: np.ndarray, where: list):
        self.index, self.smiles, self.gap_au, self._where = index, smiles, gap_au, where

    def __len__(self) -> int:
        return len(self.smiles)

    def where(self, i: int) -> str:
        path, line = self._where[i]
        return f"{path}, line {line}"


def read_csv(paths: Sequence[str | os.PathLike]) -> Molecules:
    """The molecules of QM9 CSV files in qm9pack's layout (a header naming at least `COLUMNS`),
    concatenated in the order given. `DataError` naming the file (and line) for a missing,
    unreadable or malformed file, a missing column, an empty SMILES or a gap that is not a
    finite number."""
    index, smiles, gaps, where = [], [], [], []
    for path in map(pathlib.Path, paths):
        if not path.is_file():
            raise cache.DataError(f"{path}: file not found (QM9's files come with `{INSTALL}`)")
        try:
            with open(path, newline="", encoding="utf-8") as f:
                reader = csv.reader(f)
                header = next(reader, None)
                if header is None:
                    raise cache.DataError(f"{path}: empty file, expected a QM9 CSV with a header")
                missing = [c for c in COLUMNS if c not in header]
                if missing:
                    raise cache.DataError(
                        f"{path}: no column(s) {missing} in the header "
                        f"{','.join(header)[:80]!r}; expected qm9pack's layout "
                        "(XYZ_file,Index,SMILES,...,HOMO_LUMO_gap_au,...)"
                    )
                cols = [header.index(c) for c in COLUMNS]
                width = max(cols) + 1
                for row in reader:
                    if not row:
                        continue
                    line = reader.line_num
                    if len(row) < width:
                        raise cache.DataError(
                            f"{path}, line {line}: {len(row)} fields, expected {len(header)}"
                        )
                    i, s, g = (row[c].strip() for c in cols)
                    try:
                        number, gap = int(i), float(g)
                    except ValueError:
                        raise cache.DataError(
                            f"{path}, line {line}: Index {i!r} / HOMO_LUMO_gap_au {g!r} is not "
                            "a number"
                        ) from None
                    if not np.isfinite(gap) or not s:
                        raise cache.DataError(
                            f"{path}, line {line}: empty SMILES or non-finite gap {g!r}"
                        )
                    index.append(number)
                    smiles.append(s)
                    gaps.append(gap)
                    where.append((str(path), line))
        except (UnicodeDecodeError, csv.Error) as e:
            raise cache.DataError(f"{path}: not a readable CSV file ({e})") from e
    return Molecules(np.asarray(index, np.int64), smiles, np.asarray(gaps, np.float64), where)


def _featurize_chunk(smiles: Sequence[str]) -> list[dict | str]:
    """Pool task: OGB graph of each SMILES, or the error message when RDKit rejects it."""
    out = []
    for s in smiles:
        try:
            out.append(featurize.smiles_to_graph(s))
        except ValueError as e:
            out.append(str(e))
    return out


def featurize_all(
    smiles: Sequence[str],
    *,
    needed: int | None = None,
    workers: int = 2,
    chunk: int = CHUNK,
    min_pool: int = _POOL_MIN,
    label: str = "qm9-like",
) -> tuple[list[int], list[dict], list[tuple[int, str]]]:
    """Featurises `smiles` in order, stopping once `needed` graphs (default: all) are made.

    Returns (positions of the molecules kept, their graphs, (position, error) of those skipped).
    With `workers > 1` and at least `min_pool` molecules to make, chunks of `chunk` molecules
    run in a "spawn" process pool, at most `2 * workers` chunks ahead of the one collected."""
    needed = len(smiles) if needed is None else needed
    chunks = [range(lo, min(lo + chunk, len(smiles))) for lo in range(0, len(smiles), chunk)]
    kept, graphs, skipped = [], [], []
    total = min(needed, len(smiles))
    progress = cache.Progress(total, label, unit="molecules", every=_PROGRESS_EVERY)

    def collect(positions: range, results: list) -> bool:
        for pos, result in zip(positions, results, strict=True):
            if isinstance(result, str):
                skipped.append((pos, result))
            else:
                kept.append(pos)
                graphs.append(result)
                if len(graphs) == needed:
                    return True
        progress.update(len(graphs))
        return False

    if workers <= 1 or min(needed, len(smiles)) < min_pool:
        for part in chunks:
            if collect(part, _featurize_chunk([smiles[i] for i in part])):
                break
    else:
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
            pending = collections.deque()
            todo = iter(chunks)
            try:
                while True:
                    while len(pending) < 2 * workers:
                        part = next(todo, None)
                        if part is None:
                            break
                        task = pool.submit(_featurize_chunk, [smiles[i] for i in part])
                        pending.append((part, task))
                    if not pending:
                        break
                    part, task = pending.popleft()
                    if collect(part, task.result()):
                        break
            finally:
                for _, task in pending:
                    task.cancel()
    progress.update(len(graphs), final=True)
    return kept, graphs, skipped


def _check_sizes(sizes: Sequence[int | None], num_train: int | None) -> tuple:
    sizes = tuple(sizes)
    if len(sizes) != len(SPLITS):
        raise ValueError(f"sizes must be (train, val, test), got {sizes}")
    train, val, test = sizes
    if num_train is not None:
        if train is not None and int(train) != int(num_train):
            raise ValueError(f"num_train={num_train} contradicts sizes[0]={train}")
        train = num_train
    out = (None if train is None else int(train), int(val), int(test))
    if min(n for n in out if n is not None) < 1:
        raise ValueError(f"split sizes must be positive (train may be None: the rest), got {out}")
    return out


def _dropped(report: dict, stats: dict, drop_invalid: bool) -> dict:
    """`{"dropped": {split: {count, of, file, reason, first}}}` for the molecules RDKit rejected
    (the build's `skipped.json` report), with a line on stderr per split; `{}` when none; a
    `DataError` naming them without `drop_invalid`."""
    skipped = report["skipped"]
    if not skipped:
        return {}
    first = [f"{s['where']}: {official._short(s['error'])}" for s in skipped[: official._SHOWN]]
    more = len(skipped) - len(first)
    if not drop_invalid:
        files = sorted({s["where"].rsplit(", line ", 1)[0] for s in skipped})
        raise cache.DataError(
            f"{', '.join(files)}: RDKit cannot parse {len(skipped)} of the {report['examined']} "
            f"molecules the splits drew from ({'; '.join(first)}{f'; {more} more' if more else ''}"
            "); fix those SMILES, or set config.data.drop_invalid=True (drop_invalid=True) to "
            "leave them out: a line on stderr and the run summary then say how many of each split"
        )
    dropped = {}
    for split in (*SPLITS, "all"):  # "all": a cache built before splits were recorded
        items = [s for s in skipped if s.get("split", "all") == split]
        if not items:
            continue
        of = len(items) + (stats[split]["graphs"] if split in stats else report["examined"])
        file = ", ".join(sorted({s["where"].rsplit(", line ", 1)[0] for s in items}))
        print(
            f"[qm9-like] dropped {len(items)} of {of} molecules RDKit cannot parse in {file} "
            f"(split {split})",
            file=sys.stderr,
            flush=True,
        )
        dropped[split] = {
            "count": len(items),
            "of": of,
            "file": file,
            "reason": "RDKit cannot parse or featurise their SMILES; left out "
            "(config.data.drop_invalid=True), the walk taking the next molecule instead",
            "first": [s["where"] for s in items[: official._SHOWN]],
        }
    return {"dropped": dropped}


def load(
    data_dir: str | os.PathLike = "",
    *,
    source_file: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    sizes: Sequence[int | None] = SIZES,
    num_train: int | None = None,
    seed: int = 0,
    workers: int = 2,
    collate: batching.GraphCollate | None = None,
    drop_invalid: bool = False,
) -> tasks.Data:
    """The QM9-like splits as a `attnbench.tasks.Data` (`source="standin"`): `PackedGraphs` of OGB
    graphs with `spd` and a float32 `target` (the HOMO-LUMO gap in eV), and `collate` (default
    `GraphCollate()`) for batches.

    A SMILES RDKit cannot parse or featurise among the molecules the splits draw from is a
    `DataError` naming its file, line and the count, unless `drop_invalid`: then it is left out
    (the walk goes on to the next molecule), with a line on stderr per split it was drawn for
    and the description's `dropped` (per split: `count`, `of`, `file`, `reason`, `first`).

    Args:
      data_dir: the data root (`attnbench.data.cache.data_root`); the cache is its `graphs/` folder.
      source_file: a CSV in qm9pack's layout, or a list of them (read in order); default
        qm9pack's three files.
      sizes: molecules in (train, val, test); train None takes every molecule left.
      num_train: shorthand for sizes[0], for small CPU runs (val and test stay the same).
      seed: the split seed.
      workers: featurisation processes (not part of the cache key: the result is the same).
      drop_invalid: leave out the molecules RDKit rejects instead of refusing the data (not part
        of the cache key: the build always leaves them out and records them in `skipped.json`).
    """
    rdkit = extras.require("rdkit", "the QM9 stand-in (graphs.data.pcqm.load)")

    n_train, n_val, n_test = _check_sizes(sizes, num_train)
    if source_file is None:
        paths = qm9pack_files()
    else:
        one = isinstance(source_file, (str, os.PathLike))
        paths = [pathlib.Path(p).expanduser() for p in ([source_file] if one else source_file)]
        if not paths:
            raise ValueError("source_file is an empty list")
    for path in paths:
        if not path.is_file():
            raise cache.DataError(f"{path}: file not found (QM9's files come with `{INSTALL}`)")
    paths = [p.resolve() for p in paths]
    spec = dict(
        version=_CACHE_VERSION,
        files=[[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in paths],
        sizes=[n_train, n_val, n_test],
        seed=int(seed),
        rdkit=rdkit.__version__,
    )

    def write(tmp: pathlib.Path) -> None:
        mols = read_csv(paths)
        order = np.random.default_rng(seed).permutation(len(mols))
        needed = None if n_train is None else n_val + n_test + n_train
        kept, graphs, skipped = featurize_all(
            [mols.smiles[i] for i in order], needed=needed, workers=workers
        )
        if len(graphs) < (needed or n_val + n_test + 1):
            raise cache.DataError(
                f"{', '.join(map(str, paths))}: {len(graphs)} usable molecules "
                f"({len(skipped)} skipped), fewer than the {needed or n_val + n_test + 1} "
                f"needed for sizes (train, val, test) = {(n_train, n_val, n_test)}"
            )
        rows = order[np.asarray(kept, np.int64)]  # file rows, in split order
        bounds = {"val": (0, n_val), "test": (n_val, n_val + n_test)}
        bounds["train"] = (n_val + n_test, len(graphs))
        for split in SPLITS:
            lo, hi = bounds[split]
            idx = rows[lo:hi]
            arrays = batching.pack(
                graphs[lo:hi],
                spd=True,
                gap_au=mols.gap_au[idx],
                smiles=np.asarray([mols.smiles[i] for i in idx], dtype=str),
                qm9_index=mols.index[idx],
            )
            cache.save_arrays(tmp / f"{split}.npz", arrays)
        # The split each rejected molecule was drawn for: the one being filled when the walk met
        # it (val, then test, then train).
        before = np.searchsorted(np.asarray(kept, np.int64), [p for p, _ in skipped])
        drawn_for = np.where(
            before < n_val, "val", np.where(before < n_val + n_test, "test", "train")
        )
        report = dict(
            examined=len(kept) + len(skipped),
            skipped=[
                dict(
                    where=mols.where(order[p]),
                    index=int(mols.index[order[p]]),
                    error=e,
                    split=str(split),
                )
                for (p, e), split in zip(skipped, drawn_for, strict=True)
            ],
        )
        (tmp / "skipped.json").write_text(json.dumps(report, indent=1) + "\n")

    directory = cache.build_once(cache.data_root(data_dir) / "graphs", "qm9-like", spec, write)
    splits, stats = {}, {}
    for split in SPLITS:
        arrays = cache.load_arrays(
            directory / f"{split}.npz", keys=(*batching.PackedGraphs.REQUIRED, "spd", "gap_au")
        )
        target = (arrays["gap_au"] * HARTREE_EV).astype(np.float32)
        graph_arrays = {k: arrays[k] for k in (*batching.PackedGraphs.REQUIRED, "spd")}
        try:
            splits[split] = batching.PackedGraphs(
                dict(graph_arrays, target=target), name=str(directory / f"{split}.npz")
            )
        except ValueError as e:
            raise cache.DataError(f"{e}; delete {directory} to rebuild") from e
        nodes = splits[split].num_nodes
        stats[split] = dict(
            graphs=len(nodes),
            nodes_min=int(nodes.min()),
            nodes_max=int(nodes.max()),
            nodes_mean=round(float(nodes.mean()), 3),
            target_mean=round(float(target.mean()), 4),
            target_std=round(float(target.std()), 4),
        )
    try:
        report = json.loads((directory / "skipped.json").read_text())
    except (OSError, ValueError) as e:
        raise cache.DataError(f"{directory}: unreadable skipped.json ({e}); delete it") from e
    description = {
        "cache": f"graphs/{directory.name}",
        "standin_for": "PCQM4Mv2 (HOMO-LUMO gap, eV): QM9 molecules (<= 9 heavy atoms, C N O "
        "F), B3LYP/6-31G(2df,p) gaps vs PCQM4Mv2's B3LYP/6-31G*; never compare with the papers' "
        "PCQM4Mv2 MAE",
        # the package's files by their names inside it: no machine's path in a summary
        "molecules": f"QM9 from qm9pack 1.0.3 ({', '.join(QM9_FILES)})"
        if source_file is None
        else ", ".join(map(str, paths)),
        "seed": int(seed),
        "splits": stats,
        "skipped": dict(
            count=len(report["skipped"]),
            examined=report["examined"],
            first=[s["where"] for s in report["skipped"][:5]],
        ),
        **_dropped(report, stats, drop_invalid),
        "target": f"HOMO-LUMO gap in eV (HOMO_LUMO_gap_au x {HARTREE_EV}, CODATA 2018)",
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
