"""Readers of the official graph dataset files: ZINC (benchmarking-gnns), PCQM4Mv2 / PCQM4M
(OGB-LSC) and LRGB Peptides-func / Peptides-struct, without torch.

Each reader finds the files under `root` (the folder a user downloaded them to: a config's
`data.dir`; see each function for the folder levels accepted), builds our graph dicts
(`graphs.batching`), packs every split with shortest-path distances into a `PackedGraphs`, caches
the arrays with `attnbench.data.cache.build_once` under `<cache_dir or root>/graphs/`, and returns a
`attnbench.tasks.Data` with `source="official"` (as `graphs.zinc_like.load` does for the stand-in).
Every split's arrays also keep `index`, each graph's position in the official file. The description
names the files read, the split sizes and what the target is.

The layouts, as the official loaders read them (facts from their code, restated):

ZINC (graphdeeplearning/benchmarking-gnns `data/molecules.py` `MoleculeDGL`; pyg-team/
pytorch_geometric `torch_geometric/datasets/zinc.py`): `molecules.zip`
(https://www.dropbox.com/s/feo9qle74kg48gy/molecules.zip?dl=1) unzips to `molecules/` with
`{train,val,test}.pickle`, each a `pickle.dump`ed list of dicts of torch tensors: `atom_type`
[n] (28 atom types), `bond_type` [n, n] (a dense adjacency of bond types, 0 = no bond; 4 bond
types counting 0), `logP_SA_cycle_normalized` (the target) and `num_atom`. The 12k subset
("ZINC-12k", 10,000/1,000/1,000) is the molecules listed in `{train,val,test}.index` (one line
of comma-separated positions, from benchmarking-gnns' `data/molecules/`; PyG downloads them
from https://raw.githubusercontent.com/graphdeeplearning/benchmarking-gnns/master/data/
molecules/{split}.index). Edges are the nonzero adjacency entries in row-major order (torch's
`adj.nonzero()`), both directions as stored; the node feature is the atom type, the edge
feature the bond type (one integer column each).

PCQM4Mv2 / PCQM4M (snap-stanford/ogb `ogb/lsc/pcqm4mv2.py`, `ogb/lsc/pcqm4m.py`): the zip
(https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m-v2.zip, v1
`pcqm4m_kddcup2021.zip`) unzips to `pcqm4m-v2/` (v1 `pcqm4m_kddcup2021/`) holding `raw/data.csv.gz`
(columns `idx,smiles,homolumogap`; OGB reads `smiles` and `homolumogap` by name, molecule i = data
row i) and `split_dict.pt` (`torch.save` of a dict of index arrays: v2 `train`, `valid`, `test-dev`,
`test-challenge`; v1 `train`, `valid`, `test`), read with `attnbench.data.formats.torch_pickle`. The
test splits have no labels (NaN), so here train = OGB train, val = OGB valid and test = OGB valid as
well (the papers report the valid MAE). Graphs are OGB's `smiles2graph` (`graphs.featurize`); the
target is the HOMO-LUMO gap in eV.

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

Featurisation of SMILES runs in chunks in a "spawn" process pool (`workers`; the caller may
hold JAX threads), each chunk packed (shortest paths included) in its worker, with progress
lines on stderr for builds that run longer than a few seconds. Shortest paths are
`batching.shortest_path_distances`' for graphs of up to 64 nodes and scipy's breadth-first
search for larger ones (peptides: seconds instead of hours; the same distances). A SMILES
RDKit rejects is skipped and listed in the description (`skipped`) and in the cache's
`skipped.json`.
"""

from __future__ import annotations

import ast
import collections
import concurrent.futures
import contextlib
import csv
import gzip
import json
import math
import multiprocessing
import os
import pathlib
import sys
import time
import zlib
from collections.abc import Callable, Sequence

import numpy as np

from attnbench import errors, extras, tasks
from attnbench.data import cache
from attnbench.data.formats import torch_pickle
from graphs import batching

__all__ = [
    "ZINC_URL",
    "ZINC_INDEX_URL",
    "PCQM_URLS",
    "PEPTIDES_URLS",
    "STRUCT_TARGETS",
    "FUNC_CLASSES",
    "ZINC_NODE_TYPES",
    "ZINC_EDGE_TYPES",
    "zinc_graph",
    "standardize_struct",
    "load_zinc",
    "load_pcqm",
    "load_peptides",
]

ZINC_URL = "https://www.dropbox.com/s/feo9qle74kg48gy/molecules.zip?dl=1"
ZINC_INDEX_URL = (
    "https://raw.githubusercontent.com/graphdeeplearning/benchmarking-gnns/master/data/"
    "molecules/{split}.index"
)
ZINC_NODE_TYPES = 28  # benchmarking-gnns num_atom_type
ZINC_EDGE_TYPES = 4  # benchmarking-gnns num_bond_type (0 = no bond included)
PCQM_URLS = {
    "v2": "https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m-v2.zip",
    "v1": "https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m_kddcup2021.zip",
}
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
SPLITS = ("train", "val", "test")
_CACHE_VERSION = 1  # bump when the cached arrays of a given spec change
_PROGRESS_EVERY = 5.0  # seconds between progress lines
# Splits smaller than this are featurised in-process (a spawn pool takes seconds to start).
_POOL_MIN = {"pcqm": 4_000, "peptides": 500}
_SKIPPED_SHOWN = 5  # skipped molecules listed in the description


# --------------------------------------------------------------------------------------------
# Shared machinery: finding files, featurising in a pool, packing, caching.


def _root(root: str | os.PathLike) -> pathlib.Path:
    return cache.data_root(root).resolve()


def _find(root: pathlib.Path, folders: Sequence[str], names: Sequence[str]) -> pathlib.Path | None:
    """The first `folder/name` that is a file (folders in order, then names in order)."""
    for folder in folders:
        for name in names:
            path = root / folder / name
            if path.is_file():
                return path
    return None


def _looked(root: pathlib.Path, folders: Sequence[str]) -> str:
    return ", ".join(str(root / f) if f else str(root) for f in folders)


def _file_spec(paths: Sequence[pathlib.Path]) -> list:
    return [[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in paths]


def _workers(workers: int | None) -> int:
    if workers:
        return max(1, int(workers))
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - macOS
        return max(1, min(8, os.cpu_count() or 1))


def _pack_smiles_chunk(task: tuple) -> tuple[dict | None, list[tuple[int, str]]]:
    """Pool task: the packed arrays (with `target` and `index`) of one chunk of SMILES, and the
    (index, reason) of those RDKit rejects."""
    from graphs import featurize

    smiles, index, target, spd = task
    graphs, keep, skipped = [], [], []
    for k, s in enumerate(smiles):
        try:
            graphs.append(featurize.smiles_to_graph(s))
            keep.append(k)
        except ValueError as e:
            skipped.append((int(index[k]), str(e)))
    if not graphs:
        return None, skipped
    keep = np.asarray(keep)
    return batching.pack(graphs, spd=spd, target=target[keep], index=index[keep]), skipped


def _concat(parts: Sequence[dict]) -> dict:
    """One `pack` output from several, in order (edge ids are per graph: no offsets)."""
    out = {}
    for key in parts[0]:
        values = [p[key] for p in parts]
        if key in ("node_ptr", "edge_ptr"):
            ends = np.cumsum([0] + [v[-1] for v in values[:-1]])
            out[key] = np.concatenate(
                [values[0][:1]] + [v[1:] + e for v, e in zip(values, ends, strict=True)]
            )
        else:
            out[key] = np.concatenate(values, axis=1 if key == "edge_index" else 0)
    return out


class _Pool:
    """A "spawn" process pool of `workers` processes, started on first use and shared by the
    splits of one build (`with _Pool(workers) as pool:`); `workers <= 1` runs in-process."""

    def __init__(self, workers: int | None):
        self.workers = _workers(workers)
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None

    def executor(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._executor is None:
            context = multiprocessing.get_context("spawn")
            self._executor = concurrent.futures.ProcessPoolExecutor(
                self.workers, mp_context=context
            )
        return self._executor

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *exc) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)


def _featurize(
    smiles: Sequence[str],
    index: np.ndarray,
    target: np.ndarray,
    *,
    spd: bool,
    pool: _Pool,
    chunk: int,
    pool_min: int,
    label: str,
) -> tuple[dict, list[tuple[int, str]]]:
    """Packed arrays of the OGB graphs of `smiles` (with per-graph `target` and `index`), in
    order, and the (index, reason) of the molecules RDKit rejects. Chunks of `chunk` molecules
    run in `pool` when it has several workers and there are at least `pool_min` molecules,
    at most `2 * workers` chunks ahead of the one being collected."""
    n = len(smiles)
    tasks_ = [
        (list(smiles[lo : lo + chunk]), index[lo : lo + chunk], target[lo : lo + chunk], spd)
        for lo in range(0, n, chunk)
    ]
    progress = cache.Progress(n, label, unit="molecules", every=_PROGRESS_EVERY)
    parts, skipped, done = [], [], 0

    def collect(task, result) -> None:
        nonlocal done
        arrays, bad = result
        if arrays is not None:
            parts.append(arrays)
        skipped.extend(bad)
        done += len(task[0])
        progress.update(done)

    if pool.workers <= 1 or n < pool_min:
        for task in tasks_:
            collect(task, _pack_smiles_chunk(task))
    else:
        executor = pool.executor()
        pending: collections.deque = collections.deque()
        todo = iter(tasks_)
        try:
            while True:
                while len(pending) < 2 * pool.workers:
                    task = next(todo, None)
                    if task is None:
                        break
                    pending.append((task, executor.submit(_pack_smiles_chunk, task)))
                if not pending:
                    break
                task, future = pending.popleft()
                collect(task, future.result())
        finally:
            for _, future in pending:
                future.cancel()
    progress.update(done, final=True)
    if not parts:
        raise errors.DataError(f"{label}: RDKit rejected every molecule ({skipped[:3]} ...)")
    return _concat(parts), skipped


def _load_splits(
    directory: pathlib.Path, names: Sequence[str]
) -> tuple[dict[str, batching.PackedGraphs], dict]:
    """The cached splits as `PackedGraphs` (graph arrays, `spd` when built, and `target`),
    with per-split statistics."""
    splits, stats = {}, {}
    for split in names:
        path = directory / f"{split}.npz"
        arrays = cache.load_arrays(path, keys=(*batching.PackedGraphs.REQUIRED, "target"))
        keep = {k: arrays[k] for k in (*batching.PackedGraphs.REQUIRED, "spd") if k in arrays}
        try:
            splits[split] = batching.PackedGraphs(
                dict(keep, target=arrays["target"]), name=str(path)
            )
        except ValueError as e:
            raise cache.DataError(f"{e}; delete {directory} to rebuild") from e
        nodes = splits[split].num_nodes
        target = arrays["target"].astype(np.float64)
        stats[split] = dict(
            graphs=len(nodes),
            nodes_min=int(nodes.min()),
            nodes_max=int(nodes.max()),
            nodes_mean=round(float(nodes.mean()), 3),
            target_mean=np.round(target.mean(axis=0), 4).tolist(),
            target_std=np.round(target.std(axis=0), 4).tolist(),
        )
    return splits, stats


def _skipped_summary(directory: pathlib.Path) -> dict:
    path = directory / "skipped.json"
    skipped = json.loads(path.read_text()) if path.exists() else {}
    return {
        split: {"count": len(items), "first": items[:_SKIPPED_SHOWN]}
        for split, items in skipped.items()
        if items
    }


def _ogb_features() -> str:
    from graphs import featurize

    return (
        "OGB smiles2graph: atom dims "
        f"{featurize.atom_feature_dims()}, bond dims {featurize.bond_feature_dims()}"
    )


def _ogb_dims() -> dict:
    from graphs import featurize

    return {
        "node_feature_dims": featurize.atom_feature_dims(),
        "edge_feature_dims": featurize.bond_feature_dims(),
    }


@contextlib.contextmanager
def _large_csv_fields():
    # LRGB's csv files hold long fields (struct: the `self_dist_matrix` column).
    old = csv.field_size_limit()
    csv.field_size_limit(2**31 - 1)
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _gzip_csv_rows(
    path: pathlib.Path, columns: Sequence[str], keep: Callable[[int], bool], *, label: str = ""
):
    """(row position, {column: text}) of the data rows of a gzipped CSV whose header names
    `columns`, for the rows `keep(position)` accepts (a progress line on stderr every few
    seconds). `DataError` naming the file for a corrupt file or a missing column."""
    start = last = time.perf_counter()
    try:
        with _large_csv_fields(), gzip.open(path, "rt", newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                raise cache.DataError(f"{path}: empty file, expected a CSV header")
            header = [h.strip() for h in header]
            missing = [c for c in columns if c not in header]
            if missing:
                raise cache.DataError(
                    f"{path}: no column(s) {missing} in the header {','.join(header)[:120]!r}"
                )
            where = [header.index(c) for c in columns]
            width = max(where) + 1
            for position, row in enumerate(reader):
                if position % 65536 == 0 and time.perf_counter() - last > _PROGRESS_EVERY:
                    last = time.perf_counter()
                    print(
                        f"[{label or path.name}] read {position:,} rows of {path.name} in "
                        f"{last - start:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )
                if not keep(position):
                    continue
                if len(row) < width:
                    raise cache.DataError(
                        f"{path}, data row {position} (line {reader.line_num}): {len(row)} "
                        f"fields, expected {len(header)}"
                    )
                yield position, {c: row[w] for c, w in zip(columns, where, strict=True)}
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, csv.Error) as e:
        raise cache.DataError(f"{path}: not a readable gzipped CSV file ({e})") from e


def _number(text: str) -> float:
    """A csv number as pandas reads it: an empty field is NaN."""
    text = text.strip()
    return float(text) if text else math.nan


def _index_array(value, path: pathlib.Path, key: str, size: int | None) -> np.ndarray:
    try:
        out = np.asarray(value).reshape(-1)
        if out.size and not np.issubdtype(out.dtype, np.integer):
            if not np.all(np.asarray(out, np.float64) == np.round(np.asarray(out, np.float64))):
                raise ValueError("non-integer indices")
        out = out.astype(np.int64)
    except (TypeError, ValueError) as e:
        raise cache.DataError(f"{path}: split {key!r} is not an array of indices ({e})") from e
    if size is not None and out.size and (out.min() < 0 or out.max() >= size):
        raise cache.DataError(
            f"{path}: split {key!r} has indices in [{out.min()}, {out.max()}], outside the "
            f"{size} molecules of the dataset"
        )
    return out


def _split_dict(path: pathlib.Path, keys: Sequence[str], *, torch_save: bool) -> dict:
    obj = torch_pickle.load(path) if torch_save else torch_pickle.loads_pickle(path)
    if not isinstance(obj, dict):
        raise cache.DataError(f"{path}: expected a dict of split indices, got {type(obj).__name__}")
    missing = [k for k in keys if k not in obj]
    if missing:
        raise cache.DataError(f"{path}: no split(s) {missing}; it has {sorted(map(str, obj))}")
    return obj


def _build(cache_dir, base: pathlib.Path, name: str, spec: dict, write) -> pathlib.Path:
    """`attnbench.data.cache.build_once` under `<cache_dir or base>/graphs`; a folder the cache
    cannot be written to is a `DataError` saying to pass `cache_dir`."""
    where = cache.data_root(cache_dir or base) / "graphs"
    try:
        return cache.build_once(where, name, spec, write)
    except PermissionError as e:
        raise cache.DataError(
            f"{where}: cannot write the dataset cache there ({e}); pass cache_dir= a writable "
            "folder"
        ) from e


def _data(
    directory: pathlib.Path,
    names: Sequence[str],
    description: dict,
    collate,
    *,
    test_is: str | None = None,
) -> tasks.Data:
    splits, stats = _load_splits(directory, names)
    description = dict(description, cache=f"graphs/{directory.name}", splits=stats)
    skipped = _skipped_summary(directory)
    if skipped:
        description["skipped"] = skipped
    return tasks.Data(
        train=splits["train"],
        val=splits["val"],
        test=splits[test_is or "test"],
        source="official",
        description=description,
        collate=collate or batching.GraphCollate(),
    )


# --------------------------------------------------------------------------------------------
# ZINC (benchmarking-gnns / PyG raw files)

_ZINC_FOLDERS = ("", "molecules", "raw", "ZINC/raw", "data/molecules")


def zinc_graph(molecule, where: str = "molecule") -> tuple[dict, float]:
    """Our graph dict and target of one benchmarking-gnns ZINC molecule (a dict with
    `atom_type` [n], `bond_type` [n, n], `logP_SA_cycle_normalized`, `num_atom`, tensors read
    as numpy): `node_feat` [n, 1] (atom type), `edge_index` [2, e] (the nonzero entries of
    `bond_type`, row-major), `edge_feat` [e, 1] (their bond types). `DataError` naming `where`
    for a malformed record."""
    try:
        atom = np.asarray(molecule["atom_type"]).reshape(-1)
        adj = np.asarray(molecule["bond_type"])
        target = np.asarray(molecule["logP_SA_cycle_normalized"], np.float64).reshape(-1)
        n = int(np.asarray(molecule.get("num_atom", len(atom))).reshape(-1)[0])
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise cache.DataError(f"{where}: not a ZINC molecule record ({e!r})") from None
    # The official loaders cast both to long (`.long()`, `.to(torch.long)`): whole numbers.
    whole = all(
        np.issubdtype(a.dtype, np.integer)
        or (np.issubdtype(a.dtype, np.number) and np.all(a == np.round(a)))
        for a in (atom, adj)
    )
    if not whole or adj.shape != (len(atom), len(atom)) or n != len(atom) or target.size != 1:
        raise cache.DataError(
            f"{where}: atom_type {atom.shape} {atom.dtype}, bond_type {adj.shape}, num_atom {n} "
            f"and a target of {target.size} values do not form a molecule"
        )
    src, dst = np.nonzero(adj)
    graph = {
        "node_feat": atom.astype(np.int64)[:, None],
        "edge_index": np.stack([src, dst]).astype(np.int64),
        "edge_feat": adj[src, dst].astype(np.int64)[:, None],
    }
    return graph, float(target[0])


def _zinc_index(path: pathlib.Path, size: int) -> np.ndarray:
    # PyG: [int(x) for x in f.read()[:-1].split(',')]; benchmarking-gnns: the first csv row.
    # Stripping whitespace is the same on the official files and safe without a final newline.
    text = path.read_text().strip()
    try:
        values = [int(x) for x in text.split("\n")[0].split(",") if x.strip()]
    except ValueError as e:
        raise cache.DataError(f"{path}: not a comma-separated list of indices ({e})") from None
    return _index_array(values, path, path.stem, size)


def load_zinc(
    root: str | os.PathLike = "",
    *,
    subset: bool = True,
    spd: bool = True,
    cache_dir: str | os.PathLike | None = None,
    collate: batching.GraphCollate | None = None,
) -> tasks.Data:
    """ZINC from benchmarking-gnns' raw files: ZINC-12k (10k/1k/1k, `subset=True`) or the full
    ~250k (`subset=False`), as a `attnbench.tasks.Data` (`source="official"`) of `PackedGraphs` with
    `node_feat` [n, 1] (atom type, `ZINC_NODE_TYPES` values), `edge_feat` [e, 1] (bond type,
    `ZINC_EDGE_TYPES` values counting "no bond"), `spd` (when `spd`) and a float32 `target`
    (`logP_SA_cycle_normalized`).

    Args:
      root: the folder holding `{train,val,test}.pickle` (and `.index` for the subset), or a
        parent of it: `molecules/` (molecules.zip unzipped), `raw/` (PyG's ZINC root),
        `ZINC/raw/`, `data/molecules/`. Empty: the data root (`attnbench.data.cache.data_root`).
      subset: the 12k subset listed in the `.index` files; False reads every molecule.
      spd: also compute and store shortest-path distances.
      cache_dir: where the `graphs/` cache folder goes (default `root`).
      collate: the batches' collate (default `GraphCollate()`).
    """
    base = _root(root)
    folder = next((base / f for f in _ZINC_FOLDERS if (base / f / "train.pickle").is_file()), None)
    if folder is None:
        raise cache.DataError(
            f"ZINC: no train.pickle in {_looked(base, _ZINC_FOLDERS)}; download {ZINC_URL} and "
            f"unzip it into {base} (it makes molecules/)"
        )
    files = {split: folder / f"{split}.pickle" for split in SPLITS}
    if subset:
        files.update({f"{split}.index": folder / f"{split}.index" for split in SPLITS})
    missing = [p for p in files.values() if not p.is_file()]
    if missing:
        urls = [ZINC_INDEX_URL.format(split=p.stem) for p in missing if p.suffix == ".index"]
        hint = f"download {', '.join(urls)}" if urls else f"unzip {ZINC_URL} again"
        raise cache.DataError(f"ZINC: missing {[str(p) for p in missing]}; {hint}")
    spec = dict(
        version=_CACHE_VERSION,
        files=_file_spec(list(files.values())),
        subset=bool(subset),
        spd=bool(spd),
    )

    def write(tmp: pathlib.Path) -> None:
        for split in SPLITS:
            path = files[split]
            molecules = torch_pickle.loads_pickle(path)
            if not isinstance(molecules, list):
                raise cache.DataError(
                    f"{path}: expected a list of molecule dicts, got {type(molecules).__name__}"
                )
            positions = (
                _zinc_index(files[f"{split}.index"], len(molecules))
                if subset
                else np.arange(len(molecules))
            )
            graphs, targets = [], []
            for i in positions:
                graph, target = zinc_graph(molecules[i], f"{path}, molecule {i}")
                graphs.append(graph)
                targets.append(target)
            arrays = batching.pack(
                graphs, spd=spd, target=np.asarray(targets, np.float32), index=positions
            )
            cache.save_arrays(tmp / f"{split}.npz", arrays)

    name = "zinc-12k-official" if subset else "zinc-full-official"
    directory = _build(cache_dir, base, name, spec, write)
    description = {
        "dataset": "ZINC-12k (benchmarking-gnns subset)" if subset else "ZINC full",
        "files": [str(p) for p in files.values()],
        "url": ZINC_URL,
        "target": "logP_SA_cycle_normalized (benchmarking-gnns' constrained solubility)",
        "features": "node: atom type (1 column, 28 types); edge: bond type (1 column, "
        "4 types counting no bond); edges = nonzero bond_type entries",
        "node_feature_dims": [ZINC_NODE_TYPES],
        "edge_feature_dims": [ZINC_EDGE_TYPES],
    }
    return _data(directory, SPLITS, description, collate)


# --------------------------------------------------------------------------------------------
# PCQM4Mv2 / PCQM4M (OGB-LSC)

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
) -> tasks.Data:
    """PCQM4Mv2 (`version="v2"`) or PCQM4M (`"v1"`) from OGB-LSC's files, as a
    `attnbench.tasks.Data` (`source="official"`) of `PackedGraphs` of OGB graphs with `spd` and a
    float32 `target` (HOMO-LUMO gap, eV). train = OGB `train`, val = OGB `valid`, test = OGB
    `valid` too (the test splits have no public labels; the description says so).

    Args:
      root: the dataset folder (`pcqm4m-v2/`, v1 `pcqm4m_kddcup2021/`, holding `raw/
        data.csv.gz` and `split_dict.pt`) or its parent (or PyG's `raw/` above it). Empty: the
        data root.
      max_train: when > 0, only the first `max_train` molecules of OGB's train split (in the
        split's order), for CPU-scale runs; 0 takes all.
      spd: also compute and store shortest-path distances.
      workers: featurisation processes (default: the usable cores, at most 8).
      cache_dir: where the `graphs/` cache folder goes (default `root`).
      collate: the batches' collate (default `GraphCollate()`).
    """
    rdkit = extras.require("rdkit", "reading PCQM4M (graphs.official.load_pcqm)")

    if version not in _PCQM:
        raise errors.ConfigError(f"load_pcqm: version={version!r}; known: v2, v1")
    if int(max_train) < 0:
        raise errors.ConfigError(f"load_pcqm: max_train={max_train} must be >= 0 (0: all)")
    layout, url, base = _PCQM[version], PCQM_URLS[version], _root(root)
    folders = ("", layout["folder"], f"raw/{layout['folder']}")
    csv_path = _find(base, [f"{f}/raw" if f else "raw" for f in folders], ["data.csv.gz"])
    split_path = _find(base, folders, ["split_dict.pt"])
    if csv_path is None or split_path is None:
        what = "raw/data.csv.gz" if csv_path is None else "split_dict.pt"
        raise cache.DataError(
            f"PCQM4M{'v2' if version == 'v2' else ''}: no {what} under "
            f"{_looked(base, folders)}; download {url} and unzip it into {base}"
        )
    spec = dict(
        version=_CACHE_VERSION,
        dataset=f"pcqm4m-{version}",
        files=_file_spec([csv_path, split_path]),
        max_train=int(max_train),
        spd=bool(spd),
        rdkit=rdkit.__version__,
    )
    label = layout["folder"]

    def write(tmp: pathlib.Path) -> None:
        split = _split_dict(split_path, layout["keys"], torch_save=True)
        positions = {
            "train": _index_array(split["train"], split_path, "train", None),
            "val": _index_array(split["valid"], split_path, "valid", None),
        }
        if max_train:
            positions["train"] = positions["train"][: int(max_train)]
        wanted = set(positions["train"].tolist()) | set(positions["val"].tolist())
        rows = {}  # position -> (SMILES, gap): only the molecules of the splits used
        for position, row in _gzip_csv_rows(
            csv_path, ("smiles", "homolumogap"), wanted.__contains__, label=label
        ):
            try:
                rows[position] = (row["smiles"].strip(), _number(row["homolumogap"]))
            except ValueError:
                raise cache.DataError(
                    f"{csv_path}, data row {position}: homolumogap {row['homolumogap']!r} is "
                    "not a number"
                ) from None
        skipped = {}
        with _Pool(workers) as pool:
            for name, pos in positions.items():
                lost = [int(p) for p in pos if int(p) not in rows]
                if lost:
                    raise cache.DataError(
                        f"{split_path}: split {name!r} lists molecules {lost[:5]} beyond the "
                        f"{csv_path} rows"
                    )
                smiles = [rows[int(p)][0] for p in pos]
                gaps = np.asarray([rows[int(p)][1] for p in pos], np.float64)
                bad = np.flatnonzero(~np.isfinite(gaps))
                if bad.size:
                    raise cache.DataError(
                        f"{csv_path}: molecules {pos[bad[:5]].tolist()} of split {name!r} have no "
                        "homolumogap label"
                    )
                arrays, skipped[name] = _featurize(
                    smiles,
                    pos,
                    gaps.astype(np.float32),
                    spd=spd,
                    pool=pool,
                    chunk=5_000,
                    pool_min=_POOL_MIN["pcqm"],
                    label=f"{label} {name}",
                )
                cache.save_arrays(tmp / f"{name}.npz", arrays)
        (tmp / "skipped.json").write_text(json.dumps(skipped))

    name = f"{label}-official" + (f"-train{int(max_train)}" if max_train else "")
    directory = _build(cache_dir, base, name, spec, write)
    description = {
        "dataset": "PCQM4Mv2 (OGB-LSC)" if version == "v2" else "PCQM4M (OGB-LSC KDD Cup 2021)",
        "files": [str(csv_path), str(split_path)],
        "url": url,
        "splits_used": "train = OGB train"
        + (f" (first {int(max_train)})" if max_train else "")
        + ", val = OGB valid, test = OGB valid again (OGB's test splits have no public "
        "labels; the papers report the valid MAE)",
        "target": "HOMO-LUMO gap (eV), homolumogap column",
        "features": _ogb_features(),
        **_ogb_dims(),
    }
    return _data(directory, ("train", "val"), description, collate, test_is="val")


# --------------------------------------------------------------------------------------------
# LRGB Peptides-func / Peptides-struct

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
) -> tasks.Data:
    """LRGB Peptides-func (`kind="func"`: float32 target [10], multilabel 0/1 in
    `FUNC_CLASSES` order) or Peptides-struct (`"struct"`: float32 target [11], the
    `STRUCT_TARGETS` standardised as LRGB does) from LRGB's original files, as a
    `attnbench.tasks.Data` (`source="official"`) of `PackedGraphs` of OGB graphs with `spd`, split
    by LRGB's stratified split pickle.

    Args:
      root: the folder holding the csv.gz and the split pickle, `peptides-functional/`
        (`peptides-structural/`) with the csv in its `raw/`, or their parent. Empty: the data
        root.
      spd: also compute and store shortest-path distances (peptides average ~151 atoms, so this
        is most of the build time).
      workers: featurisation processes (default: the usable cores, at most 8).
      cache_dir: where the `graphs/` cache folder goes (default `root`).
      collate: the batches' collate (default `GraphCollate()`).
    """
    rdkit = extras.require("rdkit", "reading LRGB Peptides (graphs.official.load_peptides)")

    if kind not in _PEPTIDES:
        raise errors.ConfigError(f"load_peptides: kind={kind!r}; known: func, struct")
    layout, base = _PEPTIDES[kind], _root(root)
    folders = ("", "raw", layout["folder"], f"{layout['folder']}/raw")
    csv_path = _find(base, folders, layout["csv"])
    split_path = _find(base, folders, [layout["split"]])
    if csv_path is None or split_path is None:
        name = layout["csv"][0] if csv_path is None else layout["split"]
        into = base / layout["folder"] / ("raw" if name.endswith(".gz") else "")
        raise cache.DataError(
            f"Peptides-{kind}: no {name} under {_looked(base, folders)}; download "
            f"{PEPTIDES_URLS[name]} into {into}"
        )
    spec = dict(
        version=_CACHE_VERSION,
        dataset=f"peptides-{kind}",
        files=_file_spec([csv_path, split_path]),
        spd=bool(spd),
        rdkit=rdkit.__version__,
    )
    columns = ("smiles", "labels") if kind == "func" else ("smiles", *STRUCT_TARGETS)

    def write(tmp: pathlib.Path) -> None:
        smiles, targets = [], []
        for position, row in _gzip_csv_rows(csv_path, columns, lambda _: True):
            where = f"{csv_path}, data row {position}"
            smiles.append(row["smiles"].strip())
            if kind == "func":
                targets.append(_func_labels(row["labels"], where))
            else:
                try:
                    targets.append([_number(row[c]) for c in STRUCT_TARGETS])
                except ValueError as e:
                    raise cache.DataError(f"{where}: a target is not a number ({e})") from None
        if not smiles:
            raise cache.DataError(f"{csv_path}: no data rows")
        targets = np.asarray(targets, np.float64)
        if kind == "struct":
            targets = standardize_struct(targets)
        split = _split_dict(split_path, SPLITS, torch_save=False)
        skipped = {}
        with _Pool(workers) as pool:
            for name in SPLITS:
                pos = _index_array(split[name], split_path, name, len(smiles))
                arrays, skipped[name] = _featurize(
                    [smiles[p] for p in pos],
                    pos,
                    targets[pos].astype(np.float32),
                    spd=spd,
                    pool=pool,
                    chunk=100,
                    pool_min=_POOL_MIN["peptides"],
                    label=f"peptides-{kind} {name}",
                )
                cache.save_arrays(tmp / f"{name}.npz", arrays)
        (tmp / "skipped.json").write_text(json.dumps(skipped))

    directory = _build(cache_dir, base, f"peptides-{kind}-official", spec, write)
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
        "features": _ogb_features(),
        **_ogb_dims(),
    }
    return _data(directory, SPLITS, description, collate)
