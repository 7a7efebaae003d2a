"""The data root and build-once, on-disk caches for generated, stand-in and pre-processed data
of every domain.

    root = cache.data_root(config.data.dir)             # config.data.dir, $ATTNBENCH_DATA, or
                                                        # ~/.cache/attnbench
    path = cache.build_once(root / "lra", "listops", spec, build)

A dataset built from a spec (generator parameters, source files, sizes, seed) lives in
`root / f"{name}-{hash(spec)}"`. It is built in a temporary sibling and renamed into place, so
a directory that exists is complete; a second run (or a concurrent one) reuses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from attnbench import errors

__all__ = ["DataError", "data_root", "spec_hash", "build_once", "save_arrays", "load_arrays"]

_DONE = "spec.json"


DataError = errors.DataError  # a missing, malformed or corrupt file; the message names it


def data_root(config_dir: str | os.PathLike = "") -> pathlib.Path:
    """Where data is built and cached: `config_dir` (a config's `data.dir`) when set, else
    `$ATTNBENCH_DATA`, else `~/.cache/attnbench`. Domains use a subfolder each (`lra/`, ...)."""
    if config_dir:
        return pathlib.Path(config_dir).expanduser()
    return pathlib.Path(os.environ.get("ATTNBENCH_DATA", "~/.cache/attnbench")).expanduser()


def spec_hash(spec: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:12]


def build_once(
    root: str | os.PathLike,
    name: str,
    spec: Mapping[str, Any],
    build: Callable[[pathlib.Path], None],
) -> pathlib.Path:
    """`root/<name>-<hash>`: built by `build(tmp_dir)` on the first call, reused afterwards.

    `build` writes its files into the directory it is given; `spec.json` (the spec and its
    hash) is written last, and the directory is renamed into place only when complete.
    """
    digest = spec_hash(spec)
    root = pathlib.Path(root)
    final = root / f"{name}-{digest}"
    if final.exists():
        if (final / _DONE).exists():
            return final
        raise DataError(f"{final}: incomplete dataset directory (no {_DONE}); delete it to rebuild")
    root.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(dir=root, prefix=f".{final.name}.tmp-"))
    try:
        tmp.chmod(0o755)  # mkdtemp's 0700 would survive the rename
        build(tmp)
        (tmp / _DONE).write_text(json.dumps(dict(spec, hash=digest), indent=2, default=str) + "\n")
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / _DONE).exists():  # not a concurrent builder that finished first
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def save_arrays(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> None:
    """Writes `arrays` to an uncompressed `.npz` atomically (temp file + rename)."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise


def load_arrays(path: str | os.PathLike, keys: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """Reads an `.npz` written by `save_arrays`; a missing, truncated or incomplete file
    raises `DataError` naming it."""
    path = pathlib.Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as e:
        raise DataError(f"{path}: corrupt array file ({e}); delete it to rebuild") from e
    missing = [k for k in keys if k not in out]
    if missing:
        raise DataError(f"{path}: missing arrays {missing}; delete it to rebuild")
    return out


class Progress:
    """Progress lines of a long build on stderr: `[label] done/total <unit>, rate/s, ETA`,
    the first after `every` seconds, so short builds print nothing; `update(done,
    final=True)` prints the total time when any line was printed."""

    def __init__(self, total: int, label: str, *, unit: str = "items", every: float = 5.0,
                 rate_format: str = ",.0f"):  # fmt: skip
        self.total, self.label, self.unit = total, label, unit
        self.every, self.rate_format = every, rate_format
        self.start = self.last = time.perf_counter()

    def update(self, done: int, *, final: bool = False) -> None:
        now = time.perf_counter()
        if now - self.last < self.every and not (final and self.last > self.start):
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        if final:
            tail = f"done in {now - self.start:.0f} s"
        else:
            tail = f"ETA {(self.total - done) / rate:.0f} s" if rate > 0 else "ETA ?"
        print(
            f"[{self.label}] {done:,}/{self.total:,} {self.unit}, "
            f"{rate:{self.rate_format}}/s, {tail}",
            file=sys.stderr,
            flush=True,
        )
