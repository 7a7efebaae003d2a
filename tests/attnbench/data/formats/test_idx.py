"""Tests of attnbench/data/formats/idx.py: the IDX format of MNIST / Fashion-MNIST, plain and
gzip-compressed."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest

from attnbench.data import cache
from attnbench.data.formats import idx


@pytest.mark.parametrize("name", ["x-idx3-ubyte.gz", "x-idx3-ubyte"])
def test_idx_round_trip(tmp_path, name):
    images = np.random.default_rng(4).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    idx.write(tmp_path / name, images)
    raw = (tmp_path / name).read_bytes()
    raw = gzip.decompress(raw) if name.endswith(".gz") else raw
    assert raw[:16] == struct.pack(">IIII", 0x803, 5, 28, 28)  # the IDX header, big-endian
    np.testing.assert_array_equal(idx.read(tmp_path / name, 3), images)
    labels = np.arange(7, dtype=np.uint8)
    idx.write(tmp_path / "l.gz", labels)
    assert gzip.decompress((tmp_path / "l.gz").read_bytes())[:8] == struct.pack(">II", 0x801, 7)
    np.testing.assert_array_equal(idx.read(tmp_path / "l.gz", 1), labels)


def test_idx_errors(tmp_path):
    idx.write(tmp_path / "labels.gz", np.arange(4, dtype=np.uint8))
    with pytest.raises(
        cache.DataError, match=r"labels.gz: .*magic 0x00000801, expected 0x00000803"
    ):
        idx.read(tmp_path / "labels.gz", 3)
    raw = struct.pack(">IIII", 0x803, 2, 28, 28) + bytes(2 * 784)
    (tmp_path / "short.gz").write_bytes(gzip.compress(raw[:-1]))
    with pytest.raises(cache.DataError, match=r"short.gz: truncated: .*1568 data bytes.*1567"):
        idx.read(tmp_path / "short.gz", 3)
    (tmp_path / "long.gz").write_bytes(gzip.compress(raw + b"\0"))
    with pytest.raises(cache.DataError, match=r"long.gz: trailing bytes"):
        idx.read(tmp_path / "long.gz", 3)
    (tmp_path / "hdr.gz").write_bytes(gzip.compress(raw[:10]))
    with pytest.raises(cache.DataError, match=r"hdr.gz: truncated header"):
        idx.read(tmp_path / "hdr.gz", 3)
    (tmp_path / "plain.gz").write_bytes(raw)
    with pytest.raises(cache.DataError, match=r"plain.gz: corrupt gzip"):
        idx.read(tmp_path / "plain.gz", 3)
    (tmp_path / "cut.gz").write_bytes(gzip.compress(raw)[:-12])
    with pytest.raises(cache.DataError, match=r"cut.gz: corrupt gzip"):
        idx.read(tmp_path / "cut.gz", 3)
    with pytest.raises(cache.DataError, match=r"none.gz: IDX file not found"):
        idx.read(tmp_path / "none.gz", 3)
