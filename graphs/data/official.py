"""What the readers of the official graph dataset files share: finding the files, featurising
SMILES in a process pool, packing, caching. The readers are `graphs.data.zinc.load_zinc`
(ZINC, benchmarking-gnns), `graphs.data.pcqm.load_pcqm` (PCQM4Mv2 / PCQM4M, OGB-LSC) and
`graphs.data.peptides.load_peptides` (LRGB Peptides-func / Peptides-struct), all without torch;
each module's docstring gives its files' layout, as the official loaders read them.

Each reader finds the files under `root` (the folder a user downloaded them to: a config's
`data.dir`; see each function for the folder levels accepted; empty: the data root, where
`attnbench-data fetch zinc|peptides|pcqm4mv2` puts them), builds our graph dicts
(`graphs.data.batching`), packs every split with shortest-path distances into a `PackedGraphs`,
caches the arrays with `attnbench.data.cache.build_once` under `<cache_dir or root>/graphs/`, and
returns a `attnbench.tasks.Data` with `source="official"` (as `graphs.data.zinc.load` does for the
stand-in). Every split's arrays also keep `index`, each graph's position in the official file. The
description names the files read, the split sizes and what the target is.

Featurisation of SMILES runs in chunks in a "spawn" process pool (`workers`; the caller may
hold JAX threads), each chunk packed (shortest paths included) in its worker, with progress
lines on stderr for builds that run longer than a few seconds. Shortest paths are
`batching.shortest_path_distances`' for graphs of up to 64 nodes and scipy's breadth-first
search for larger ones (peptides: seconds instead of hours; the same distances).

No bad input is read silently. A SMILES RDKit cannot parse or featurise is an error naming the
file, the count and the first few (`DataError`), unless the reader is given `drop_invalid=True`
(`config.data.drop_invalid`): then those molecules are left out, one line per split on stderr
says how many of how many in which file, and the description's `dropped` records it (per split:
`count`, `of`, `file`, `reason`, `first`). The build records every rejected molecule in the
cache's `skipped.json` either way, so a cached build is held to the same rule and switching
`drop_invalid` reuses the cache. Each split is checked when it is built and again when it is
read from the cache (`Layout.check`; a cache written before these checks is held to them too):
its targets are finite numbers (binary labels 0 or 1), its node and edge feature ids lie in the
dataset's vocabulary (the embedding tables' sizes), and no split is empty. Each error names the
file, the row (or molecule) and the column, and says what to do.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import csv
import dataclasses
import gzip
import json
import math
import multiprocessing
import os
import pathlib
import sys
import time
import zlib
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from attnbench import errors, tasks
from attnbench.data import cache
from attnbench.data.formats import torch_pickle
from graphs.data import batching

_CACHE_VERSION = 1  # bump when the cached arrays of a given spec change
_PROGRESS_EVERY = 5.0  # seconds between progress lines
# Splits smaller than this are featurised in-process (a spawn pool takes seconds to start).
_POOL_MIN = {"pcqm": 4_000, "peptides": 500}
_SHOWN = 3  # offending rows named in a message or listed in the description


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


def _fetch_command(name: str, root: pathlib.Path) -> str:
    """The `attnbench-data fetch` command that puts catalog dataset `name` where a reader looking
    under `root` finds it: plain for the default data root (`config.data.dir` empty), with
    `--dir root` otherwise."""
    command = f"attnbench-data fetch {name}"
    return command if root == _root("") else f"{command} --dir {root}"


def _fetch_hint(name: str, folder: str, root: pathlib.Path, url: str) -> str:
    """The end of a one-line "files not found" error: the fetch command of catalog entry `name`
    (which arranges the release in `root/folder`), `config.data.dir`, the stand-in."""
    return (
        f"fetch it with `{_fetch_command(name, root)}` (from {url}, into "
        f"{root / folder}), or set config.data.dir to the folder holding it; or set "
        "config.data.source='standin' for the offline stand-in"
    )


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
    path: pathlib.Path,
    split: str,
) -> tuple[dict, list[tuple[int, str]]]:
    """Packed arrays of the OGB graphs of `smiles` (with per-graph `target` and `index`), in
    order, and the (index, reason) of the molecules RDKit rejects. Chunks of `chunk` molecules
    run in `pool` when it has several workers and there are at least `pool_min` molecules,
    at most `2 * workers` chunks ahead of the one being collected. `DataError` naming `path`
    (the file the SMILES came from) and `split` when RDKit rejects every one of them."""
    n = len(smiles)
    if not n:
        raise errors.DataError(f"{path}: split {split!r} has no molecules; the split is empty")
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
        raise errors.DataError(
            f"{path}: RDKit cannot parse any of the {n} molecules of split {split!r} "
            f"({_first(skipped, 'data row')}), so the split would be empty; fix those SMILES or "
            "download the file again"
        )
    return _concat(parts), skipped


def _first(items: Sequence[tuple[int, str]], row: str) -> str:
    """The first few (position, reason) pairs, for a message."""
    text = "; ".join(f"{row} {int(i)}: {_short(reason)}" for i, reason in items[:_SHOWN])
    return text + (f"; {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _rows(rows: np.ndarray) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:_SHOWN])
    return shown + (f" and {len(rows) - _SHOWN} more" if len(rows) > _SHOWN else "")


@dataclasses.dataclass(frozen=True)
class Layout:
    """What the checks of an official dataset's splits name, and hold them to (`check`).

    Attributes:
      dataset: its name in messages and stderr lines ("ZINC", "PCQM4Mv2", "Peptides-func").
      files: the file each split's examples were read from (split -> path).
      row: what an example is called in that file ("molecule", "data row"), numbered by the
        split's `index` array (its position in the file).
      targets: the names of the target entries (one per column of `target`).
      node_features, node_dims, edge_features, edge_dims: the feature columns' names and
        vocabulary sizes (ids in [0, dim): the rows of their embedding tables).
      fix: what to do about a bad file ("download <url> again").
      binary: the targets are labels that must be 0 or 1.
    """

    dataset: str
    files: Mapping[str, pathlib.Path]
    row: str
    targets: Sequence[str]
    node_features: Sequence[str]
    node_dims: Sequence[int]
    edge_features: Sequence[str]
    edge_dims: Sequence[int]
    fix: str
    binary: bool = False

    def where(self, split: str, rows: np.ndarray | None, g: int) -> str:
        what = f"{self.row} {int(rows[g])}" if rows is not None else f"example {g}"
        return f"{self.files[split]}, {what} (split {split!r})"

    def check(self, split: str, arrays: Mapping[str, np.ndarray]) -> None:
        """`DataError` naming the file, the row and the column of the first bad value of one
        split's packed arrays (with `target`, and `index` naming the rows)."""
        rows = arrays.get("index")
        self.check_targets(split, arrays["target"], rows)
        self.check_features(split, arrays, rows)

    def check_targets(self, split: str, target, rows: np.ndarray | None = None) -> None:
        """Every target a finite number (and 0 or 1 when `binary`)."""
        values = np.asarray(target)
        values = values.reshape(values.shape[0], int(np.prod(values.shape[1:])))
        bad, what = ~np.isfinite(values), "not a finite number"
        rule = "every target must be a finite number"
        if self.binary and not bad.any():
            bad, what = (values != 0) & (values != 1), "not 0 or 1"
            rule = f"{self.dataset}'s labels are 0 or 1"
        if not bad.any():
            return
        graphs = np.flatnonzero(bad.any(axis=1))
        g = int(graphs[0])
        c = int(np.flatnonzero(bad[g])[0])
        column = self.targets[c] if len(self.targets) == values.shape[1] else f"target {c}"
        raise errors.DataError(
            f"{self.where(split, rows, g)}: {column} is {float(values[g, c]):g}, {what}"
            f"{self._all(graphs, rows)}; {rule}: fix the file or {self.fix}"
        )

    def _all(self, graphs: np.ndarray, rows: np.ndarray | None) -> str:
        if len(graphs) < 2:
            return ""
        named = _rows(graphs if rows is None else rows[graphs])
        return f" ({len(graphs)} {self.row}s of the split: {named})"

    def check_features(
        self, split: str, arrays: Mapping[str, np.ndarray], rows: np.ndarray | None = None
    ) -> None:
        """Every node and edge feature id in [0, its vocabulary size)."""
        for key, ptr, names, dims, what in (
            ("node_feat", "node_ptr", self.node_features, self.node_dims, "node"),
            ("edge_feat", "edge_ptr", self.edge_features, self.edge_dims, "edge"),
        ):
            feat = np.asarray(arrays[key])
            feat = feat.reshape(feat.shape[0], int(np.prod(feat.shape[1:])))
            if feat.shape[1] != len(dims):
                raise errors.DataError(
                    f"{self.files[split]} (split {split!r}): {feat.shape[1]} {what} feature "
                    f"columns, expected {len(dims)} ({', '.join(names)}); {self.fix}"
                )
            if not len(feat):
                continue
            low, high = feat.min(axis=0), feat.max(axis=0)
            wrong = np.flatnonzero((low < 0) | (high >= np.asarray(dims)))
            if not wrong.size:
                continue
            c = int(wrong[0])
            column = feat[:, c]
            entries = np.flatnonzero((column < 0) | (column >= dims[c]))
            graphs = np.unique(np.searchsorted(arrays[ptr], entries, side="right") - 1)
            raise errors.DataError(
                f"{self.where(split, rows, int(graphs[0]))}: {what} feature {names[c]} is "
                f"{int(column[entries[0]])}, outside [0, {dims[c]}), the {dims[c]} ids of "
                f"{self.dataset}'s {names[c]}{self._all(graphs, rows)}; an embedding table would "
                f"clamp it to another id: fix the file or {self.fix}"
            )


def _split_positions(
    value, path: pathlib.Path, key: str, size: int | None, *, split: str, fix: str
) -> np.ndarray:
    """`_index_array`, and a `DataError` naming the file when the split lists no molecule."""
    positions = _index_array(value, path, key, size)
    if not positions.size:
        raise errors.DataError(
            f"{path}: split {key!r} lists no molecules (0 indices), so the {split} split would "
            f"be empty; {fix}"
        )
    return positions


def _load_splits(
    directory: pathlib.Path, names: Sequence[str], layout: Layout
) -> tuple[dict[str, batching.PackedGraphs], dict]:
    """The cached splits as `PackedGraphs` (graph arrays, `spd` when built, and `target`),
    each checked (`layout.check`), with per-split statistics."""
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
        if not len(splits[split]):
            raise cache.DataError(f"{path}: no graphs; delete {directory} to rebuild")
        layout.check(split, arrays)
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


def _dropped(
    directory: pathlib.Path, names: Sequence[str], stats: dict, layout: Layout, drop_invalid: bool
) -> dict:
    """The description's `dropped` (per split with molecules RDKit rejected, from the cache's
    `skipped.json`), with one line on stderr per such split; without `drop_invalid`, a
    `DataError` naming each such split's file, count and first molecules."""
    path = directory / "skipped.json"
    try:
        skipped = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError) as e:
        raise cache.DataError(f"{path}: unreadable ({e}); delete {directory} to rebuild") from e
    dropped, problems = {}, []
    for split in names:
        items = skipped.get(split) or []
        if not items:
            continue
        count, file = len(items), layout.files[split]
        of = count + stats[split]["graphs"]
        if not drop_invalid:
            problems.append(
                f"{file}: RDKit cannot parse {count} of the {of} molecules of split {split!r} "
                f"({_first(items, layout.row)})"
            )
            continue
        print(
            f"[{layout.dataset}] dropped {count} of {of} molecules RDKit cannot parse in {file} "
            f"(split {split})",
            file=sys.stderr,
            flush=True,
        )
        dropped[split] = {
            "count": count,
            "of": of,
            "file": str(file),
            "reason": "RDKit cannot parse or featurise their SMILES; left out "
            "(config.data.drop_invalid=True)",
            "first": [f"{layout.row} {int(i)}: {_short(r)}" for i, r in items[:_SHOWN]],
        }
    if problems:
        raise errors.DataError(
            "; ".join(problems) + "; fix those SMILES, or set config.data.drop_invalid=True "
            "(drop_invalid=True) to leave them out: a line on stderr and the run summary then "
            "say how many of each split"
        )
    return dropped


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


def _ogb_layout(dataset: str, files: Mapping[str, pathlib.Path], targets, fix: str, *,
                binary: bool = False) -> Layout:  # fmt: skip
    """The `Layout` of a dataset of OGB `smiles2graph` graphs read from csv data rows."""
    from graphs.data import featurize

    return Layout(
        dataset=dataset,
        files=files,
        row="data row",
        targets=tuple(targets),
        node_features=tuple(f.name for f in featurize.ATOM_FEATURES),
        node_dims=tuple(featurize.atom_feature_dims()),
        edge_features=tuple(f.name for f in featurize.BOND_FEATURES),
        edge_dims=tuple(featurize.bond_feature_dims()),
        fix=fix,
        binary=binary,
    )


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
    layout: Layout,
    drop_invalid: bool = False,
    test_is: str | None = None,
) -> tasks.Data:
    splits, stats = _load_splits(directory, names, layout)
    description = dict(description, cache=f"graphs/{directory.name}", splits=stats)
    dropped = _dropped(directory, names, stats, layout, drop_invalid)
    if dropped:
        description["dropped"] = dropped
    return tasks.Data(
        train=splits["train"],
        val=splits["val"],
        test=splits[test_is or "test"],
        source="official",
        description=description,
        collate=collate or batching.GraphCollate(),
    )
