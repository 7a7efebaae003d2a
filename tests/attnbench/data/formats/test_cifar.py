"""Tests of attnbench/data/formats/cifar.py: the CIFAR-10 / CIFAR-100 python-version pickles, read
safely and written exactly as the official files are (Python 2 cPickle opcodes, the official key
order)."""

from __future__ import annotations

import os
import pickle
import pickletools

import numpy as np
import pytest

from attnbench.data import cache
from attnbench.data.formats import cifar


def _batch(rng, n):
    return rng.integers(0, 256, (n, 3072), dtype=np.uint8), rng.integers(0, 10, n).tolist()


def test_cifar_batch_round_trip(tmp_path):
    data, labels = _batch(np.random.default_rng(1), 1200)  # > 1000 labels: two APPENDS blocks
    path = tmp_path / "data_batch_1"
    cifar.write_batch(path, data, labels, batch_label="training batch 1 of 5")
    got_data, got_labels = cifar.read_batch(path)
    np.testing.assert_array_equal(got_data, data)
    np.testing.assert_array_equal(got_labels, labels)
    assert got_labels.dtype == np.int32


def test_cifar_writer_uses_the_python2_format(tmp_path):
    data, labels = _batch(np.random.default_rng(2), 3)
    path = tmp_path / "test_batch"
    cifar.write_batch(path, data, labels, batch_label="testing batch 1 of 1")
    ops = list(pickletools.genops(path.read_bytes()))
    names = {op.name for op, _, _ in ops}
    assert ops[0][0].name == "PROTO" and ops[0][1] == 2
    # Python 2 strs (SHORT_BINSTRING/BINSTRING), never Python 3 bytes/unicode opcodes.
    assert {"SHORT_BINSTRING", "BINSTRING"} <= names
    assert not names & {"BINBYTES", "SHORT_BINBYTES", "BINUNICODE", "SHORT_BINUNICODE"}
    globals_ = [arg for op, arg, _ in ops if op.name == "GLOBAL"]
    assert globals_ == ["numpy.core.multiarray _reconstruct", "numpy ndarray", "numpy dtype"]
    # What the CIFAR-10 page tells users to do gives the documented dict.
    with path.open("rb") as f:
        d = pickle.load(f, encoding="bytes")
    assert list(d) == [b"batch_label", b"labels", b"data", b"filenames"]
    assert d[b"batch_label"] == b"testing batch 1 of 1"
    assert d[b"labels"] == labels and d[b"filenames"][0] == b"image_00000.png"
    assert d[b"data"].dtype == np.uint8 and d[b"data"].shape == (3, 3072)
    np.testing.assert_array_equal(d[b"data"], data)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_cifar_reader_accepts_python3_repickles(tmp_path, protocol):
    data, labels = _batch(np.random.default_rng(3), 4)
    path = tmp_path / "data_batch_2"
    path.write_bytes(pickle.dumps({b"data": data, b"labels": labels}, protocol=protocol))
    got_data, got_labels = cifar.read_batch(path)
    np.testing.assert_array_equal(got_data, data)
    np.testing.assert_array_equal(got_labels, labels)


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_cifar_reader_refuses_code_in_pickles(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "data_batch_1"
    path.write_bytes(pickle.dumps({b"data": _Evil(marker), b"labels": [0]}, protocol=2))
    with pytest.raises(cache.DataError, match=r"data_batch_1: cannot unpickle.*not allowed"):
        cifar.read_batch(path)
    assert not marker.exists()


def _bad_batch(path, obj):
    path.write_bytes(pickle.dumps(obj, protocol=2))
    return path


def test_cifar_batch_errors(tmp_path):
    good = np.zeros((2, 3072), np.uint8)
    cases = [
        (b"not a pickle at all", r"bad1: cannot unpickle"),
        (pickle.dumps({b"data": good, b"labels": [0, 1]})[:50], r"bad2: cannot unpickle"),
        ([good, [0, 1]], r"bad3: expected a pickled dict, got list"),
        ({b"data": good}, r"bad4: missing key b'labels'"),
        ({b"labels": [0, 1]}, r"bad5: missing key b'data'"),
        ({b"data": good[:, :3071], b"labels": [0, 1]}, r"bad6: key b'data'.*\[n, 3072\]"),
        ({b"data": good.astype(np.int64), b"labels": [0, 1]}, r"bad7: key b'data'.*int64"),
        ({b"data": good, b"labels": [0]}, r"bad8: key b'labels' has 1 entries.*2 rows"),
        ({b"data": good, b"labels": [0, 10]}, r"bad9: key b'labels': record 1: label 10"),
        ({b"data": good, b"labels": [-1, 0]}, r"bad10: key b'labels': record 0: label -1"),
        ({b"data": good, b"labels": [0, "x"]}, r"bad11: key b'labels': record 1: 'x' is not"),
    ]
    for i, (obj, pattern) in enumerate(cases, start=1):
        path = tmp_path / f"bad{i}"
        if isinstance(obj, bytes):
            path.write_bytes(obj)
        else:
            _bad_batch(path, obj)
        with pytest.raises(cache.DataError, match=pattern):
            cifar.read_batch(path)
    with pytest.raises(cache.DataError, match=r"nope: CIFAR batch file not found"):
        cifar.read_batch(tmp_path / "nope")


def test_cifar100_round_trip_and_official_layout(tmp_path):
    rng = np.random.default_rng(7)
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    written = {}
    for split, n in (("train", 12), ("test", 5)):
        data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        fine, coarse = rng.integers(0, 100, n).tolist(), rng.integers(0, 20, n).tolist()
        cifar.write_batch(
            folder / split,
            data,
            {"fine_labels": fine, "coarse_labels": coarse},
            batch_label=f"{'training' if split == 'train' else 'testing'} batch 1 of 1",
        )
        written[split] = (data, fine, coarse)
    # What the CIFAR page tells users to do gives the documented dict, keys in the official order.
    with (folder / "train").open("rb") as f:
        d = pickle.load(f, encoding="bytes")
    assert list(d) == [b"filenames", b"batch_label", b"fine_labels", b"coarse_labels", b"data"]
    got = cifar.read_cifar100(tmp_path)  # the parent of cifar-100-python/ works too
    for split, (data, fine, coarse) in written.items():
        np.testing.assert_array_equal(got[split][0], data)
        np.testing.assert_array_equal(got[split][1], fine)
        np.testing.assert_array_equal(got[split][2], coarse)
    data, fine = cifar.read_batch(folder / "test", label_key="fine_labels", classes=100)
    np.testing.assert_array_equal(fine, written["test"][1])
    with pytest.raises(cache.DataError, match=r"train: missing key b'labels'"):
        cifar.read_batch(folder / "train")  # CIFAR-100 has no CIFAR-10 labels
    (folder / "test").unlink()
    with pytest.raises(cache.DataError, match=r"cifar-100-python: missing test; expected"):
        cifar.read_cifar100(folder)


def test_planar_to_hwc():
    data = np.arange(2 * 3072).reshape(2, 3072).astype(np.uint8)
    img = cifar.planar_to_hwc(data)
    assert img.shape == (2, 32, 32, 3)
    # pixel (r, c) of image i: red at data[i, 32r + c], green 1024 later, blue 2048 later
    for i, r, c in ((0, 0, 0), (1, 5, 31), (0, 31, 7)):
        k = 32 * r + c
        assert img[i, r, c].tolist() == [data[i, k], data[i, 1024 + k], data[i, 2048 + k]]
