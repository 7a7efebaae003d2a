"""What the readers of the official graph dataset files share: finding the files, featurising
SMILES in a process pool, packing, caching. The readers are `graphs.data.zinc.load_zinc`
(ZINC, benchmarking-gnns), `graphs.data.pcqm.load_pcqm` (PCQM4Mv2 / PCQM4M, OGB-LSC) and
`graphs.data.peptides.load_peptides` (LRGB Peptides-func / Peptides-struct), all without torch;
each module's docstring gives its files' layout, as the official loaders read them.

Each reader finds the files under `root` (the folder a user downloaded them to: a config's
`data.dir`; see each function for the folder levels accepted), builds our graph dicts
(`graphs.data.batching`), packs every split with shortest-path distances into a `PackedGraphs`,
caches the arrays with `attnbench.data.cache.build_once` under `<cache_dir or root>/graphs/`, and
returns a `attnbench.tasks.Data` with `source="official"` (as `graphs.data.zinc.load` does for the
stand-in). Every split's arrays also keep `index`, each graph's position in the official file. The
description names the files read, the split sizes and what the target is.

Featurisation of SMILES runs in chunks in a "spawn" process pool (`workers`; the caller may
hold JAX threads), each chunk packed (shortest paths included) in its worker, with progress
lines on stderr for builds that run longer than a few seconds. Shortest paths are
`batching.shortest_path_distances`' for graphs of up to 64 nodes and scipy's breadth-first
search for larger ones (peptides: seconds instead of hours; the same distances). A SMILES
RDKit rejects is skipped and listed in the description (`skipped`) and in the cache's
`skipped.json`.
"""

from __future__ import annotations

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

from attnbench import errors, tasks
from attnbench.data import cache
from attnbench.data.formats import torch_pickle
from graphs.data import batching

_CACHE_VERSION = 1  # bump when the cached arrays of a given spec change
_PROGRESS_EVERY = 5.0  # seconds between progress lines
# Splits smaller than this are featurised in-process (a spawn pool takes seconds to start).
_POOL_MIN = {"pcqm": 4_000, "peptides": 500}
_SKIPPED_SHOWN = 5  # skipped molecules listed in the description


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
    from graphs.data import featurize

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
    from graphs.data import featurize

    return (
        "OGB smiles2graph: atom dims "
        f"{featurize.atom_feature_dims()}, bond dims {featurize.bond_feature_dims()}"
    )


def _ogb_dims() -> dict:
    from graphs.data import featurize

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
