"""The official LRA Pathfinder release: `read_official` reads one difficulty's metadata files
and PNGs, `official_splits` cuts LRA's train/val/test from them, `write_official` writes the
layout (for tests and exports). `lra.data.pathfinder` loads and caches it (`source="official"`).

Official release (`source="official"`)
--------------------------------------
`<dir>/<pattern>/metadata/*.npy` are TEXT files, one image per line, fields split on
whitespace: field[0] = image subfolder (relative to `<pattern>/`), field[1] = PNG file name,
field[3] = label 0/1 (field[2] and further fields are ignored). Patterns: `curv_baseline` (easy),
`curv_contour_length_9` (intermediate), `curv_contour_length_14` (hard). Metadata files are
read in natural sorted order (`2.npy` before `10.npy`), lines in file order; PNGs are decoded
as 8-bit grayscale with PIL. Splits are train/val/test = records [:80%], [80%:90%], [90%:]
(boundaries rounded half up) of all records, then zero-byte images are dropped (LRA sliced its
TFDS split first and filtered `tf.strings.length(image) > 0` in the input pipeline); the
description of `lra.data.pathfinder.load` counts them. TFDS stored examples in its own hashed
order, so LRA's exact split membership cannot be reproduced; the sizes and distribution are the
same.
"""

from __future__ import annotations

import os
import pathlib
import re
import types
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from attnbench.data import cache

__all__ = ["PATTERNS", "write_official", "read_official", "official_splits"]

# Release folder of each difficulty.
PATTERNS: Mapping[str, str] = types.MappingProxyType(
    dict(easy="curv_baseline", intermediate="curv_contour_length_9", hard="curv_contour_length_14")
)
_SPLITS = ("train", "val", "test")  # official_splits' keys, in order


def _natural_key(name: str):
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name) if t]


def write_official(
    root: str | os.PathLike,
    pattern: str,
    images: np.ndarray,
    labels: Sequence[int],
    *,
    images_per_file: int = 1000,
) -> pathlib.Path:
    """Writes images in the layout of the official release (for tests and exports).

    `root/pattern/imgs/<f>/sample_<i>.png` (8-bit grayscale PNG) and
    `root/pattern/metadata/<f>.npy`, a text file with one line per image:
    `imgs/<f> sample_<i>.png <i> <label>`.

    Args:
      images: uint8 [n, H, W]; labels: n values in {0, 1}.

    Returns:
      `root/pattern`.
    """
    from PIL import Image

    images = np.asarray(images)
    labels = [int(v) for v in labels]
    if images.ndim != 3 or images.dtype != np.uint8 or len(images) != len(labels):
        raise ValueError(
            f"need uint8 images [n, H, W] and n labels, got {images.shape} {len(labels)}"
        )
    if any(v not in (0, 1) for v in labels):
        raise ValueError("labels must be 0 or 1")
    base = pathlib.Path(root) / pattern
    (base / "metadata").mkdir(parents=True, exist_ok=True)
    for f, lo in enumerate(range(0, len(images), images_per_file)):
        sub = f"imgs/{f}"
        (base / sub).mkdir(parents=True, exist_ok=True)
        lines = []
        for i in range(lo, min(len(images), lo + images_per_file)):
            name = f"sample_{i}.png"
            Image.fromarray(images[i]).save(base / sub / name)
            lines.append(f"{sub} {name} {i} {labels[i]}\n")
        (base / "metadata" / f"{f}.npy").write_text("".join(lines))
    return base


def _fetch_hint(fetch: str) -> str:
    name = fetch or "pathfinder32` or `attnbench-data fetch pathfinder128"
    return f"; `attnbench-data fetch {name}` puts the release where config.data.dir='' finds it"


def _pattern_dir(root: pathlib.Path, pattern: str, *, fetch: str = "") -> pathlib.Path:
    """`root/pattern`, or a DataError naming what is missing and the fetch command (`fetch`:
    the catalog name, e.g. "pathfinder32"; "" names both that are fetched)."""
    if not root.is_dir():
        raise cache.DataError(
            f"{root}: Pathfinder release folder not found (expected {', '.join(PATTERNS.values())}"
            f" inside, each with metadata/*.npy){_fetch_hint(fetch)}"
        )
    base = root / pattern
    if not base.is_dir():
        found = sorted(q.name for q in root.iterdir() if q.is_dir())
        raise cache.DataError(
            f"{base}: Pathfinder pattern folder not found; folders in {root}: "
            f"{', '.join(found) if found else 'none'} (expected {', '.join(PATTERNS.values())})"
            f"{_fetch_hint(fetch)}"
        )
    return base


def _metadata_files(base: pathlib.Path, *, fetch: str = "") -> list[pathlib.Path]:
    files = sorted((base / "metadata").glob("*.npy"), key=lambda q: _natural_key(q.name))
    if not files:
        raise cache.DataError(f"{base / 'metadata'}: no metadata/*.npy files{_fetch_hint(fetch)}")
    return files


def _parse_metadata(path: pathlib.Path) -> list[tuple[str, str, int, int]]:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise cache.DataError(f"{path}: metadata is not a UTF-8 text file ({e})") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline (LRA drops the last split piece likewise)
    out = []
    for lineno, line in enumerate(lines, start=1):
        fields = line.split()
        if len(fields) < 4:
            raise cache.DataError(
                f"{path}:{lineno}: expected at least 4 space-separated fields (subdir, file, "
                f"index, label), found {len(fields)}: {line[:80]!r}"
            )
        if fields[3] not in ("0", "1"):
            raise cache.DataError(f"{path}:{lineno}: label {fields[3][:20]!r} is not 0 or 1")
        out.append((fields[0], fields[1], int(fields[3]), lineno))
    return out


def read_official(
    root: str | os.PathLike,
    pattern: str,
    *,
    resolution: int = 32,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Reads all records of one difficulty of the official release.

    Returns a dict with
      images: uint8 [m, resolution, resolution] of the non-empty images, in record order;
      label: int32 [m];
      record: int64 [m], each image's index among all records (empty ones included);
      num_records: int, all records; empty: list of the zero-byte PNGs' relative paths.

    Raises:
      DataError: missing folder (lists the patterns found), no metadata, malformed metadata
        line (path:line), missing / undecodable PNG (its path), wrong image size.
    """
    from PIL import Image

    root = pathlib.Path(root)
    base = _pattern_dir(root, pattern)
    records = []
    for meta in _metadata_files(base):
        records += [
            (sub, name, label, meta, lineno) for sub, name, label, lineno in _parse_metadata(meta)
        ]
    if not records:
        raise cache.DataError(f"{base / 'metadata'}: the metadata files list no images")
    n = len(records)
    images = np.zeros((n, resolution, resolution), np.uint8)
    keep = np.zeros(n, bool)
    labels = np.zeros(n, np.int32)
    empty = []
    for i, (sub, name, label, meta, lineno) in enumerate(records):
        path = base / sub / name
        try:
            nbytes = path.stat().st_size
        except FileNotFoundError:
            raise cache.DataError(
                f"{path}: image file not found (listed in {meta}:{lineno})"
            ) from None
        if nbytes == 0:  # LRA filtered empty images out
            empty.append(f"{sub}/{name}")
            continue
        try:
            with Image.open(path) as im:
                im.load()
                gray = np.asarray(im if im.mode == "L" else im.convert("L"))
        except (OSError, ValueError, SyntaxError) as e:
            raise cache.DataError(f"{path}: cannot decode the PNG ({e})") from None
        if gray.shape != (resolution, resolution):
            raise cache.DataError(
                f"{path}: image is {gray.shape[1]}x{gray.shape[0]}, expected "
                f"{resolution}x{resolution} (listed in {meta}:{lineno})"
            )
        images[i], labels[i], keep[i] = gray, label, True
        if progress is not None and (i + 1) % 1000 == 0:
            progress(i + 1, n)
    if progress is not None:
        progress(n, n)
    idx = np.flatnonzero(keep)
    return dict(images=images[idx], label=labels[idx], record=idx, num_records=n, empty=empty)


def official_splits(data: dict) -> dict[str, dict[str, np.ndarray]]:
    """LRA's [:80%], [80%:90%], [90%:] of the records (`read_official` output), each without
    its empty images: {split: {"images": uint8 [n, H, W], "label": int32 [n]}}."""
    n = data["num_records"]
    # Percent boundaries rounded half up (TFDS rounds percent slices to the closest record).
    b1, b2 = (n * 80 + 50) // 100, (n * 90 + 50) // 100
    out = {}
    for split, (lo, hi) in zip(_SPLITS, ((0, b1), (b1, b2), (b2, n)), strict=True):
        sel = (data["record"] >= lo) & (data["record"] < hi)
        out[split] = {"images": data["images"][sel], "label": data["label"][sel]}
    return out
