"""IDX files, the format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/).

    images = idx.read("train-images-idx3-ubyte.gz", ndim=3)   # uint8 [60000, 28, 28]
    labels = idx.read("train-labels-idx1-ubyte.gz", ndim=1)

Format: magic `0x00 0x00 <type> <ndim>`, then `ndim` big-endian uint32 sizes, then the data
row-major; only unsigned bytes (type 0x08), the type the MNIST family uses, are read. A name
ending in `.gz` is gzip-compressed.
"""

from __future__ import annotations

import gzip
import os
import pathlib
import struct
import zlib

import numpy as np

from attnbench.data import cache

__all__ = ["read", "write"]

_IDX_UBYTE = 0x08  # the only element type the MNIST family uses


def read(path: str | os.PathLike, ndim: int) -> np.ndarray:
    """An IDX file of unsigned bytes (gzip-compressed if the name ends in `.gz`).

    Format: magic `0x00 0x00 0x08 ndim`, then `ndim` big-endian uint32 sizes, then the data.

    Args:
      ndim: the expected rank: 3 for images (magic 0x00000803), 1 for labels (0x00000801).

    Returns:
      uint8 array of the stored shape.

    Raises:
      cache.DataError: missing file, corrupt gzip, wrong magic, or truncated / overlong data.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise cache.DataError(f"{path}: IDX file not found")
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, zlib.error) as e:
        raise cache.DataError(f"{path}: corrupt gzip file ({e})") from None
    want = 0x0800 | ndim
    if len(raw) < 4 or struct.unpack(">I", raw[:4])[0] != want:
        got = f"0x{struct.unpack('>I', raw[:4])[0]:08x}" if len(raw) >= 4 else "a short header"
        raise cache.DataError(
            f"{path}: not an IDX file of rank-{ndim} unsigned bytes: magic {got}, "
            f"expected 0x{want:08x}"
        )
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise cache.DataError(f"{path}: truncated header ({len(raw)} bytes, need {header})")
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    size = int(np.prod(shape, dtype=np.int64))
    have = len(raw) - header
    if have != size:
        what = "truncated" if have < size else "trailing bytes"
        raise cache.DataError(
            f"{path}: {what}: shape {list(shape)} needs {size} data bytes, file has {have}"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


def write(path: str | os.PathLike, array: np.ndarray) -> None:
    """Writes a uint8 array as an IDX file (gzip-compressed if the name ends in `.gz`)."""
    array = np.ascontiguousarray(array)
    if array.dtype != np.uint8 or not 1 <= array.ndim <= 255:
        raise ValueError(f"idx.write takes a uint8 array, got {array.dtype} {array.shape}")
    raw = struct.pack(">I", 0x0800 | array.ndim)
    raw += struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()
    path = pathlib.Path(path)
    path.write_bytes(gzip.compress(raw, mtime=0) if path.suffix == ".gz" else raw)
