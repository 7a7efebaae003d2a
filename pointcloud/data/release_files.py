"""The official point-cloud readers' shared plumbing (`modelnet40`, `shapenetpart`): text tables
read with errors that name the file and the line, lazy per-file sources, the release folder
found under a config's `data.dir`, and the one-time conversion of every split into
memory-mapped `.npy` arrays.

Each loader finds the files under `root` (a config's `data.dir`: the dataset folder itself or
the folder holding it; empty: the data root, where `attnbench-data fetch` puts the releases),
resamples every shape to a fixed number of points and returns random-access sources (`len`,
`source[i] -> example dict`) per split with a description. With
`cache=True` (the default) the first call converts every shape once into `.npy` arrays under
`<cache_dir or root>/pointcloud/<name>-<hash>/` (`attnbench.data.cache.build_once`, keyed by
the folder, the files' sizes and modification times and the options) and later calls
memory-map them (`attnbench.tasks.Split` over read-only memmaps: nothing is read until
indexed); with `cache=False` every access reads and resamples the text / HDF5 file again
(`FileSource`).

Text errors name the file and the line (a wrong number of fields, a field that is not a
number, a non-finite value, a part id outside its category's range). A release not found, or a
file of it missing, is a one-line `DataError` naming what is missing, where the reader looked
and the `attnbench-data fetch` command (`fetch_command`).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import json
import multiprocessing
import os
import pathlib
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from attnbench import errors, tasks
from attnbench.data import cache

__all__ = ["FileSource", "fetch_command"]

SPLIT_CODES = {"train": 0, "val": 1, "test": 2}
_CACHE_VERSION = 1  # bump when the cached arrays of a given spec change
_CHUNK = 64  # shapes per pool task of the one-time conversion


# --------------------------------------------------------------------------------------------
# Text files.


def _scan_for_error(path: pathlib.Path, split: Callable[[str], list[str]], columns: int,
                    check_row: Callable[[np.ndarray], str] | None = None) -> str:  # fmt: skip
    """The first bad line of a text file as 'path:line: reason' (the slow path, run only after
    the fast parse failed)."""
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            for k, line in enumerate(f, 1):
                text = line.strip()
                if not text:
                    continue
                fields = split(text)
                if len(fields) != columns:
                    return f"{path}:{k}: {len(fields)} fields, expected {columns} ({text[:80]!r})"
                try:
                    row = np.array([float(x) for x in fields])
                except ValueError:
                    return f"{path}:{k}: not a number ({text[:80]!r})"
                if not np.isfinite(row).all():
                    return f"{path}:{k}: non-finite value ({text[:80]!r})"
                if check_row is not None:
                    problem = check_row(row)
                    if problem:
                        return f"{path}:{k}: {problem} ({text[:80]!r})"
    except UnicodeDecodeError as e:
        return f"{path}: not a text file ({e})"
    return ""


def _read_table(path: pathlib.Path, *, delimiter: str | None, columns: int, what: str,
                check_row: Callable[[np.ndarray], str] | None = None) -> np.ndarray:  # fmt: skip
    """`[n, columns]` float64 from a text file; `DataError` naming the file (and the line)."""
    if not path.is_file():
        raise errors.DataError(f"{path}: file not found ({what})")
    splitter = (lambda s: s.split(delimiter)) if delimiter else str.split
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # loadtxt's "input contained no data"
            table = np.loadtxt(path, delimiter=delimiter, dtype=np.float64, ndmin=2)
    except (ValueError, UnicodeDecodeError):
        table = None
    if table is not None and table.size == 0:
        raise errors.DataError(f"{path}: no points ({what})")
    ok = table is not None and table.shape[1] == columns and np.isfinite(table).all()
    if ok and check_row is not None:
        vectorized = getattr(check_row, "vectorized", None)
        if vectorized is not None:
            ok = bool(vectorized(table).all())
        else:
            ok = not any(check_row(row) for row in table)
    if not ok:
        problem = _scan_for_error(path, splitter, columns, check_row)
        raise errors.DataError(problem or f"{path}: unreadable {what}")
    return table


def _read_lines(path: pathlib.Path, what: str, fix: str = "") -> list[str]:
    """The non-empty lines of a text file, stripped; a missing file is a `DataError` naming it
    and saying what to do (`fix`)."""
    if not path.is_file():
        raise errors.DataError(f"{path}: file not found ({what})" + (f"; {fix}" if fix else ""))
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError) as e:
        raise errors.DataError(f"{path}: unreadable ({what}: {e})") from e
    return [line for line in lines if line]


# --------------------------------------------------------------------------------------------
# Sources, caching.


@dataclasses.dataclass(frozen=True)
class FileSource:
    """A lazy split: `source[i]` reads file `items[i]` and resamples it; `read(item, i)`
    returns the example and the number of points in the file."""

    items: tuple
    read: Callable[[object, int], tuple[dict, int]]
    name: str = ""

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        i = int(i)
        if not -len(self.items) <= i < len(self.items):
            raise IndexError(f"{self.name}: index {i} out of range for {len(self.items)} shapes")
        i %= len(self.items)
        return self.read(self.items[i], i)[0]


def _resolve_root(root) -> pathlib.Path:
    """The data folder a config names (`attnbench.data.cache.data_root`), resolved."""
    return cache.data_root(root).resolve()


def _find_folder(root: pathlib.Path, folders: Sequence[str], marker: str) -> pathlib.Path | None:
    for folder in folders:
        if (root / folder / marker).is_file():
            return root / folder
    return None


def fetch_command(name: str, root: pathlib.Path) -> str:
    """The `attnbench-data fetch` command that puts catalog dataset `name` where a reader
    looking under `root` finds it: plain for the default data root (`config.data.dir` empty),
    with `--dir root` otherwise."""
    command = f"attnbench-data fetch {name}"
    return command if root == _resolve_root("") else f"{command} --dir {root}"


def _not_found(what: str, root: pathlib.Path, folders: Sequence[str], marker: str, layout: str,
               url: str, name: str, folder: str) -> errors.DataError:  # fmt: skip
    """The one-line error for a release not found under `root`: what is missing, the folders
    looked in, the fetch command of catalog entry `name` (which arranges it in `root/folder`),
    `config.data.dir` and the stand-in."""
    looked = ", ".join(str(root / f) if f else str(root) for f in folders)
    return errors.DataError(
        f"{what} not found: no {marker} in {looked}; fetch it with `{fetch_command(name, root)}` "
        f"(from {url}, into {root / folder}), or set config.data.dir to the folder "
        f"holding it (or its parent), laid out as {layout}; or set config.data.source='standin' "
        "for the offline stand-in"
    )


def _incomplete(folder: pathlib.Path, name: str, root: pathlib.Path, fetched: str) -> str:
    """What to do about a file missing from the release found in `folder` (a clause of a
    one-line error): catalog entry `name` fetched under `root` lands in `root/fetched`."""
    return (
        f"the release in {folder} is incomplete: replace it with a complete copy "
        f"(`{fetch_command(name, root)}` fetches one into {root / fetched})"
    )


def _files_digest(paths: Sequence[pathlib.Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        st = p.stat()
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _read_chunk(task: tuple) -> list[tuple[dict, int]]:
    """Pool task: the examples `lo, lo + 1, ...` of one chunk of a split's items."""
    read, items, lo = task
    return [read(item, lo + k) for k, item in enumerate(items)]


def _workers(workers: int | None) -> int:
    if workers is not None:
        return max(1, int(workers))
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - macOS
        return max(1, min(8, os.cpu_count() or 1))


def _write_split(directory: pathlib.Path, split: str, source: FileSource, specs: dict,
                 label: str, workers: int) -> dict:  # fmt: skip
    """Every example of `source` into `<split>_<key>.npy` memmaps (specs: key -> (shape,
    dtype) per example), read in chunks by `workers` "spawn" processes when there are enough
    shapes, with progress lines on stderr for long builds; returns the points per file
    (min, mean, max)."""
    n = len(source)
    out = {
        key: np.lib.format.open_memmap(
            directory / f"{split}_{key}.npy", mode="w+", dtype=dtype, shape=(n, *shape)
        )
        for key, (shape, dtype) in specs.items()
    }
    raw = np.zeros(n, np.int64)
    progress = cache.Progress(n, label, unit="shapes")
    tasks_ = [(source.read, source.items[lo : lo + _CHUNK], lo) for lo in range(0, n, _CHUNK)]
    if workers > 1 and n >= 2 * _CHUNK:
        context = multiprocessing.get_context("spawn")
        executor = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context)
        results = executor.map(_read_chunk, tasks_)
    else:
        executor, results = None, map(_read_chunk, tasks_)
    try:
        for (_, _, lo), chunk in zip(tasks_, results, strict=True):
            for k, (example, count) in enumerate(chunk):
                raw[lo + k] = count
                for key in specs:
                    out[key][lo + k] = example[key]
            progress.update(lo + len(chunk))
    finally:
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
    progress.update(n, final=True)
    for array in out.values():
        array.flush()
    del out
    return {"min": int(raw.min()), "mean": round(float(raw.mean()), 1), "max": int(raw.max())}


def _open_split(directory: pathlib.Path, split: str, keys: Sequence[str]) -> tasks.Split:
    arrays = {}
    for key in keys:
        path = directory / f"{split}_{key}.npy"
        try:
            arrays[key] = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as e:
            raise errors.DataError(f"{path}: corrupt or missing ({e}); delete {directory}") from e
    try:
        return tasks.Split(arrays)
    except ValueError as e:
        raise errors.DataError(f"{directory}: {e}; delete it to rebuild") from e


def _cached(cache_dir, base: pathlib.Path, name: str, spec: dict, sources: dict,
            specs: dict, workers: int | None) -> tuple[dict, str, dict]:  # fmt: skip
    """The splits converted once into `.npy` arrays (`build_once`) and memory-mapped, the
    cache folder and the build's statistics (`stats.json`: points per file per split)."""
    where = cache.data_root(cache_dir or base) / "pointcloud"

    def write(tmp: pathlib.Path) -> None:
        stats = {
            split: _write_split(tmp, split, source, specs, f"{name} {split}", _workers(workers))
            for split, source in sources.items()
        }
        (tmp / "stats.json").write_text(json.dumps({"points_per_file": stats}, indent=2) + "\n")

    try:
        directory = cache.build_once(where, name, spec, write)
    except PermissionError as e:
        raise errors.DataError(
            f"{where}: cannot write the point-cloud cache there ({e}); set config.data.cache_dir "
            "to a writable folder"
        ) from e
    try:
        stats = json.loads((directory / "stats.json").read_text())
    except (OSError, ValueError) as e:
        raise errors.DataError(
            f"{directory}/stats.json: unreadable ({e}); delete {directory}"
        ) from e
    splits = {split: _open_split(directory, split, list(specs)) for split in sources}
    return splits, str(directory), stats
