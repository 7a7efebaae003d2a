"""ZINC, the regression of penalized logP (GFSA Tables 4, 20): the official ZINC-12k files
(`load_zinc`) and the offline ZINC-like stand-in built from MOSES molecules (`load`).

The official files, as the official loaders read them (facts from their code, restated; what
`load_zinc` shares with the other official readers is in `graphs.data.official`):

ZINC (graphdeeplearning/benchmarking-gnns `data/molecules.py` `MoleculeDGL`;
pyg-team/pytorch_geometric `torch_geometric/datasets/zinc.py`): `molecules.zip`
(https://www.dropbox.com/s/feo9qle74kg48gy/molecules.zip?dl=1) unzips to `molecules/` with
`{train,val,test}.pickle`, each a `pickle.dump`ed list of dicts of torch tensors: `atom_type`
[n] (28 atom types), `bond_type` [n, n] (a dense adjacency of bond types, 0 = no bond; 4 bond
types counting 0), `logP_SA_cycle_normalized` (the target) and `num_atom`. The 12k subset
("ZINC-12k", 10,000/1,000/1,000) is the molecules listed in `{train,val,test}.index` (one line
of comma-separated positions, from benchmarking-gnns' `data/molecules/`; PyG downloads them
from the URLs of `ZINC_INDEX_URL`). Edges are the nonzero adjacency entries in row-major order
(torch's `adj.nonzero()`), both directions as stored; the node feature is the atom type, the
edge feature the bond type (one integer column each).

ZINC-like: an offline stand-in for ZINC-12k (benchmarking-gnns' 10k/1k/1k penalized-logP
regression), built from MOSES molecules.

Source: MOSES' training SMILES (Polykovskiy et al. 2020; 1,584,663 molecules filtered from ZINC
Clean Leads: molecular weight 250-350, no charges, elements C N O S F Cl Br H), the file
`moses/dataset/data/train.csv.gz` of the PyPI package `molsets` 0.3.1: gzipped CSV, header
`SMILES`, one SMILES a line. Install it without its dependencies (they include torch and an
old pomegranate) and read the file directly, never importing `moses`:

    pip install --no-deps molsets==0.3.1

(the layout and the count as read from the file, the dependencies as `molsets` 0.3.1 declares
them). `source_file=` reads another file of that format instead.

Sampling: `numpy.random.default_rng(seed).permutation(number of molecules)`; its first 10,000
indices are train, the next 1,000 val, the next 1,000 test (sizes configurable).

Each molecule becomes OGB's graph (`graphs.data.featurize`) with its shortest-path distances
(`graphs.data.batching.pack`) and the three raw terms of penalized logP
(`graphs.data.penalized_logp`); the target (z-scored terms by default, the raw sum with
`normalized=False`) is computed from the cached terms at load time. Everything is built once per
(file, sizes, seed, RDKit version) and cached with `attnbench.data.cache.build_once` under
`<data root>/graphs/zinc-like-<hash>/{train,val,test}.npz` (with the SMILES and the terms).

How it differs from ZINC-12k: narrower sizes (the default 12k sample: 11-26 heavy atoms, mean
21.6, against ZINC's 9-37), no charged atoms, no I or P, 13 (element, charge, H count) atom
types against ZINC's 28; the same target definition and molecule family (with seed 0 the
target has mean 0.79, std 1.10 on train). Summaries label it `standin`; compare mechanisms with
each other on it, never with the papers' ZINC MAE.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import os
import pathlib
import zlib
from collections.abc import Sequence

import numpy as np

from attnbench import extras, tasks
from attnbench.data import cache
from attnbench.data.formats import torch_pickle
from graphs.data import batching, featurize, official
from graphs.data import penalized_logp as plogp

__all__ = [
    "ZINC_URL",
    "ZINC_INDEX_URL",
    "ZINC_NODE_TYPES",
    "ZINC_EDGE_TYPES",
    "MOSES_FILE",
    "INSTALL",
    "SPLITS",
    "SIZES",
    "zinc_graph",
    "load_zinc",
    "moses_file",
    "SmilesFile",
    "build",
    "load",
]

# The official files (benchmarking-gnns).
ZINC_URL = "https://www.dropbox.com/s/feo9qle74kg48gy/molecules.zip?dl=1"
ZINC_INDEX_URL = (
    "https://raw.githubusercontent.com/graphdeeplearning/benchmarking-gnns/master/data/"
    "molecules/{split}.index"
)
ZINC_NODE_TYPES = 28  # benchmarking-gnns num_atom_type
ZINC_EDGE_TYPES = 4  # benchmarking-gnns num_bond_type (0 = no bond included)
# The stand-in.
MOSES_FILE = "moses/dataset/data/train.csv.gz"  # inside the `molsets` distribution
INSTALL = "pip install --no-deps molsets==0.3.1"
SPLITS = ("train", "val", "test")
SIZES = (10_000, 1_000, 1_000)  # ZINC-12k's split sizes
_CACHE_VERSION = 1  # bump when the cached arrays of a given spec change
_TERMS = ("logp", "sa", "ring_penalty")


# --------------------------------------------------------------------------------------------
# ZINC (benchmarking-gnns / PyG raw files)

_ZINC_FOLDERS = ("", "molecules", "raw", "ZINC/raw", "data/molecules")
# `attnbench-data`'s name for the release and the folder it fetches it into under the data root
# (graphs/data/sources.py; tests/graphs/data/test_zinc.py checks they agree).
ZINC_CATALOG = ("zinc", "molecules")


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
    """The molecule positions a `<split>.index` file lists; `DataError` naming the file for one
    that is unreadable, not UTF-8 text, not a comma-separated list of integers, empty, or
    pointing past the split's `size` molecules."""
    # PyG: [int(x) for x in f.read()[:-1].split(',')]; benchmarking-gnns: the first csv row.
    # Stripping whitespace is the same on the official files and safe without a final newline.
    split = path.name.removesuffix(".index")
    fix = f"download {ZINC_INDEX_URL.format(split=split)} again"
    try:
        text = path.read_bytes().decode("utf-8").strip()
    except UnicodeDecodeError as e:
        raise cache.DataError(
            f"{path}: not a text file of comma-separated molecule indices (not UTF-8: {e}); {fix}"
        ) from None
    except OSError as e:
        raise cache.DataError(f"{path}: cannot read it ({e}); {fix}") from None
    try:
        values = [int(x) for x in text.split("\n")[0].split(",") if x.strip()]
    except ValueError as e:
        raise cache.DataError(
            f"{path}: not a comma-separated list of indices ({e}); {fix}"
        ) from None
    if not values:
        raise cache.DataError(
            f"{path}: {'empty file' if not text else 'no indices'}, so the {split} split would "
            f"have no molecules; {fix}, or read every molecule of {split}.pickle with "
            "subset=False (config.data.subset=False)"
        )
    return official._index_array(values, path, split, size)


def _layout(files: dict) -> official.Layout:
    return official.Layout(
        dataset="ZINC",
        files={split: files[split] for split in SPLITS},
        row="molecule",
        targets=("logP_SA_cycle_normalized",),
        node_features=("atom_type",),
        node_dims=(ZINC_NODE_TYPES,),
        edge_features=("bond_type",),
        edge_dims=(ZINC_EDGE_TYPES,),
        fix=f"download {ZINC_URL} and unzip it again",
    )


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
        `ZINC/raw/`, `data/molecules/`. Empty: the data root (`attnbench.data.cache.data_root`),
        where `attnbench-data fetch zinc` puts `molecules/`; files not found are an error naming
        that command.
      subset: the 12k subset listed in the `.index` files; False reads every molecule.
      spd: also compute and store shortest-path distances.
      cache_dir: where the `graphs/` cache folder goes (default `root`).
      collate: the batches' collate (default `GraphCollate()`).

    `DataError` naming the file, the molecule and the field for an atom type outside
    [0, `ZINC_NODE_TYPES`), a bond type outside [0, `ZINC_EDGE_TYPES`) or a target that is not a
    finite number, and naming the file for an index file that is not UTF-8 text or lists no
    molecule (`graphs.data.official.Layout`; checked on every load, cached or not).
    """
    base = official._root(root)
    folder = next((base / f for f in _ZINC_FOLDERS if (base / f / "train.pickle").is_file()), None)
    if folder is None:
        raise cache.DataError(
            f"ZINC: no train.pickle in {official._looked(base, _ZINC_FOLDERS)}; "
            + official._fetch_hint(*ZINC_CATALOG, base, ZINC_URL)
        )
    files = {split: folder / f"{split}.pickle" for split in SPLITS}
    if subset:
        files.update({f"{split}.index": folder / f"{split}.index" for split in SPLITS})
    missing = [p for p in files.values() if not p.is_file()]
    if missing:
        urls = [ZINC_INDEX_URL.format(split=p.stem) for p in missing if p.suffix == ".index"]
        hint = f"download {', '.join(urls)} into {folder}" if urls else f"unzip {ZINC_URL} again"
        command = official._fetch_command(ZINC_CATALOG[0], base)
        raise cache.DataError(
            f"ZINC: missing {[str(p) for p in missing]}; {hint}, or fetch the whole release with "
            f"`{command}` (into {base / ZINC_CATALOG[1]})"
        )
    spec = dict(
        version=official._CACHE_VERSION,
        files=official._file_spec(list(files.values())),
        subset=bool(subset),
        spd=bool(spd),
    )
    layout = _layout(files)

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
            if not len(positions):
                raise cache.DataError(
                    f"{path}: no molecules, so the {split} split would be empty; unzip "
                    f"{ZINC_URL} again"
                )
            graphs, targets = [], []
            for i in positions:
                graph, target = zinc_graph(molecules[i], f"{path}, molecule {i}")
                graphs.append(graph)
                targets.append(target)
            arrays = batching.pack(
                graphs, spd=spd, target=np.asarray(targets, np.float32), index=positions
            )
            layout.check(split, arrays)  # atom and bond types in range, targets finite
            cache.save_arrays(tmp / f"{split}.npz", arrays)

    name = "zinc-12k-official" if subset else "zinc-full-official"
    directory = official._build(cache_dir, base, name, spec, write)
    description = {
        "dataset": "ZINC-12k (benchmarking-gnns subset)" if subset else "ZINC full",
        "files": [str(p) for p in files.values()],
        "url": ZINC_URL,
        "target": "logP_SA_cycle_normalized (benchmarking-gnns' constrained solubility)",
        "features": "node: atom type (1 column, 28 types); edge: bond type (1 column, "
        "4 types counting no bond); edges = nonzero bond_type entries",
        "node_feature_dims": [ZINC_NODE_TYPES],
        "edge_feature_dims": [ZINC_EDGE_TYPES],
        "node_feature_names": ["atom_type"],
        "edge_feature_names": ["bond_type"],
    }
    return official._data(directory, SPLITS, description, collate, layout=layout)


# --------------------------------------------------------------------------------------------
# The ZINC-like stand-in (MOSES molecules)


def moses_file() -> pathlib.Path:
    """The installed `molsets` package's training SMILES file; `DataError` naming the file and
    the install command when it is not there."""
    try:
        path = pathlib.Path(importlib.metadata.distribution("molsets").locate_file(MOSES_FILE))
    except importlib.metadata.PackageNotFoundError:
        path = None
    if path is None or not path.is_file():
        where = f" (looked for {path})" if path else " (the molsets package is not installed)"
        raise cache.DataError(
            f"ZINC-like data needs MOSES' {MOSES_FILE}{where}; install it with `{INSTALL}`, "
            "or pass the path of a gzipped SMILES CSV as source_file"
        )
    return path


class SmilesFile:
    """A gzipped CSV of SMILES with a `SMILES` header column (MOSES' layout), read into memory
    once: `len(f)` molecules, `f.take(indices)` their SMILES (molecule `i` is file line
    `i + 2`). `DataError` naming the file for a missing, corrupt or malformed file."""

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        if not self.path.is_file():
            raise cache.DataError(f"{self.path}: file not found (MOSES' file: `{INSTALL}`)")
        try:
            self._raw = gzip.decompress(self.path.read_bytes())
        except (OSError, EOFError, zlib.error) as e:
            raise cache.DataError(f"{self.path}: not a readable gzip file ({e})") from e
        # Line boundaries in one vectorised pass; only the lines taken are decoded.
        ends = np.flatnonzero(np.frombuffer(self._raw, np.uint8) == ord("\n"))
        if self._raw and not self._raw.endswith(b"\n"):
            ends = np.append(ends, len(self._raw))
        self._starts, self._ends = np.concatenate([[0], ends[:-1] + 1]), ends
        header = self._line(0) if len(ends) else ""
        if header.split(",")[0].strip() != "SMILES":
            raise cache.DataError(
                f"{self.path}: expected the header 'SMILES' on line 1, found {header[:60]!r}"
            )

    def _line(self, k: int) -> str:
        return self._raw[self._starts[k] : self._ends[k]].decode("utf-8", "replace").rstrip("\r")

    def __len__(self) -> int:
        return len(self._ends) - 1

    def take(self, indices: Sequence[int]) -> list[str]:
        out = []
        for i in indices:
            if not 0 <= i < len(self):
                raise cache.DataError(f"{self.path}: has {len(self)} molecules, no molecule {i}")
            smiles = self._line(int(i) + 1).split(",")[0].strip()
            if not smiles:
                raise cache.DataError(f"{self.path}, line {int(i) + 2}: empty SMILES")
            out.append(smiles)
        return out


def build(smiles: Sequence[str], *, labels: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Graph arrays (`graphs.data.batching.pack`, shortest paths included) of `smiles`, with the
    per-molecule fields `smiles` and the raw penalized-logP terms `logp`, `sa`,
    `ring_penalty`. A SMILES RDKit rejects raises `DataError` naming it and `labels[i]`
    (where molecule `i` came from, e.g. its file and line)."""
    graphs, terms = [], []
    for i, s in enumerate(smiles):
        try:
            mol = featurize.parse_smiles(s)
            graphs.append(featurize.mol_to_graph(mol))
        except ValueError as e:
            where = labels[i] if labels is not None else f"molecule {i}"
            raise cache.DataError(f"{where}: {e}") from None
        terms.append(plogp.terms(mol))
    return batching.pack(
        graphs,
        spd=True,
        smiles=np.asarray(smiles, dtype=str),
        logp=np.array([t.logp for t in terms]),
        sa=np.array([t.sa for t in terms]),
        ring_penalty=np.array([t.ring_penalty for t in terms], np.int32),
    )


def load(
    data_dir: str | os.PathLike = "",
    *,
    source_file: str | os.PathLike | None = None,
    sizes: Sequence[int] = SIZES,
    seed: int = 0,
    normalized: bool = True,
    collate: batching.GraphCollate | None = None,
) -> tasks.Data:
    """The ZINC-like splits as a `attnbench.tasks.Data` (`source="standin"`): `PackedGraphs` of
    graphs with `spd` and a float32 `target` (penalized logP, `normalized` as in
    `graphs.data.penalized_logp.combine`), and `collate` (default `GraphCollate()`) for batches.

    Args:
      data_dir: the data root (`attnbench.data.cache.data_root`: a config's `data.dir`, else
        `$ATTNBENCH_DATA`, else `~/.cache/attnbench`); the cache is its `graphs/` folder.
      source_file: a gzipped SMILES CSV; default MOSES' training file from `molsets`.
      sizes: molecules in train, val, test.
      seed: the sampling seed.
    """
    rdkit = extras.require("rdkit", "the ZINC stand-in (graphs.data.zinc.load)")

    sizes = tuple(int(n) for n in sizes)
    if len(sizes) != len(SPLITS) or min(sizes) < 1:
        raise ValueError(f"sizes must be 3 positive counts (train, val, test), got {sizes}")
    path = pathlib.Path(source_file).expanduser() if source_file else moses_file()
    if not path.is_file():
        raise cache.DataError(f"{path}: file not found (MOSES' file comes with `{INSTALL}`)")
    path = path.resolve()
    st = path.stat()
    spec = dict(
        version=_CACHE_VERSION,
        file=str(path),
        file_stats=[st.st_size, st.st_mtime_ns],
        sizes=list(sizes),
        seed=int(seed),
        rdkit=rdkit.__version__,
    )

    def write(tmp: pathlib.Path) -> None:
        source = SmilesFile(path)
        if len(source) < sum(sizes):
            raise cache.DataError(
                f"{path}: {len(source)} molecules, fewer than the {sum(sizes)} requested {sizes}"
            )
        order = np.random.default_rng(seed).permutation(len(source))
        bounds = np.cumsum((0, *sizes))
        for split, lo, hi in zip(SPLITS, bounds[:-1], bounds[1:], strict=True):
            idx = order[lo:hi]
            labels = [f"{path}, line {i + 2}" for i in idx]
            arrays = build(source.take(idx), labels=labels)
            arrays["line"] = (idx + 2).astype(np.int64)  # where each molecule is in the file
            cache.save_arrays(tmp / f"{split}.npz", arrays)

    directory = cache.build_once(cache.data_root(data_dir) / "graphs", "zinc-like", spec, write)
    splits, stats = {}, {}
    for split in SPLITS:
        arrays = cache.load_arrays(
            directory / f"{split}.npz", keys=(*batching.PackedGraphs.REQUIRED, "spd", *_TERMS)
        )
        target = plogp.combine(*(arrays[k] for k in _TERMS), normalized=normalized)
        graph_arrays = {k: arrays[k] for k in (*batching.PackedGraphs.REQUIRED, "spd")}
        try:
            splits[split] = batching.PackedGraphs(
                dict(graph_arrays, target=target.astype(np.float32)),
                name=str(directory / f"{split}.npz"),
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
    description = {
        "cache": f"graphs/{directory.name}",
        # the wheel's file by its name inside it: no machine's path in a summary
        "molecules": f"MOSES training SMILES (molsets 0.3.1: {MOSES_FILE})"
        if source_file is None
        else str(path),
        "seed": int(seed),
        "splits": stats,
        "target": "penalized logP: "
        + (
            "z-scored logP, -SA, -ring penalty (ZINC-250k statistics), summed"
            if normalized
            else "logP - SA - ring penalty"
        ),
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
