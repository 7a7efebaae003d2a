"""CIFAR-10 and CIFAR-100 "python version" batches: a safe reader and an exact writer.

    data, labels = cifar.read_batch("cifar-10-batches-py/data_batch_1")
    data, fine = cifar.read_batch("cifar-100-python/train", label_key="fine_labels", classes=100)
    splits = cifar.read_cifar10(folder)        # {"train": (data, labels), "test": (...)}
    splits = cifar.read_cifar100(folder)       # {"train": (data, fine, coarse), "test": ...}

The official files (https://www.cs.toronto.edu/~kriz/cifar.html) are pickles (protocol 2,
written by Python 2) of a dict with `b"data"`: uint8 [n, 3072] (per image the 1024 red values
of a row-major 32x32 image, then the 1024 green, then the 1024 blue) and the labels:
`b"labels"` (CIFAR-10, 0-9) or `b"fine_labels"` (0-99) and `b"coarse_labels"` (0-19)
(CIFAR-100); also `b"batch_label"` and `b"filenames"`, unused. CIFAR-10 ships
`cifar-10-batches-py/{data_batch_1..5,test_batch}`, CIFAR-100 `cifar-100-python/{train,test}`.

They are read with `encoding="bytes"` by a restricted unpickler that resolves only the globals
a numpy uint8 array needs (`_ALLOWED_GLOBALS`): a pickle naming anything else (`os.system`,
...) is refused before it runs. `write_batch` writes the format with the opcodes of Python 2's
cPickle (test fixtures of every domain that reads CIFAR).
"""

from __future__ import annotations

import os
import pathlib
import pickle
import struct
from collections.abc import Mapping, Sequence

import numpy as np

from attnbench.data import cache

__all__ = [
    "PIXELS",
    "CIFAR10_TRAIN_FILES",
    "CIFAR10_TEST_FILE",
    "CIFAR10_FILES",
    "CIFAR10_SUBDIR",
    "CIFAR100_FILES",
    "CIFAR100_SUBDIR",
    "read_batch",
    "write_batch",
    "planar_to_hwc",
    "cifar10_dir",
    "cifar100_dir",
    "read_cifar10",
    "read_cifar100",
]

PIXELS = 3 * 32 * 32
CIFAR10_TRAIN_FILES: tuple[str, ...] = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR10_TEST_FILE = "test_batch"
CIFAR10_FILES: tuple[str, ...] = (*CIFAR10_TRAIN_FILES, CIFAR10_TEST_FILE)
CIFAR10_SUBDIR = "cifar-10-batches-py"  # what cifar-10-python.tar.gz unpacks to
CIFAR100_FILES: tuple[str, ...] = ("train", "test")
CIFAR100_SUBDIR = "cifar-100-python"  # what cifar-100-python.tar.gz unpacks to

# The globals a numpy uint8 array pickle names; each resolves to the object numpy itself uses,
# looked up through public objects (numpy 2 moved numpy.core to the private numpy._core).
_RECONSTRUCT = np.empty(0).__reduce__()[0]
_FROMBUFFER = np.empty(0).__reduce_ex__(5)[0]  # numpy's reduction at pickle protocol 5
_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,  # written by numpy < 2
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,  # written by numpy >= 2
    ("numpy.core.numeric", "_frombuffer"): _FROMBUFFER,
    ("numpy._core.numeric", "_frombuffer"): _FROMBUFFER,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    # Python 3 pickles bytes at protocol <= 2 as _codecs.encode(str, "latin1"): a file re-saved
    # by Python 3 needs it; encoding a string is harmless.
    ("_codecs", "encode"): __import__("codecs").encode,
}


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only `_ALLOWED_GLOBALS`; dicts, lists, ints and strings are pickle opcodes and
    need no global, so nothing else (no callable that could run code) can be reached."""

    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"global {module}.{name} is not allowed in a CIFAR batch (only numpy array "
                "reconstruction is)"
            ) from None


def _key(key) -> str | None:
    if isinstance(key, bytes):
        return key.decode("latin-1")
    return key if isinstance(key, str) else None


def read_batch(
    path: str | os.PathLike, *, label_key: str = "labels", classes: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR python batch (`data_batch_1`, ..., `test_batch`; CIFAR-100 `train`, `test`).

    Args:
      label_key: `labels` (CIFAR-10), `fine_labels` or `coarse_labels` (CIFAR-100).
      classes: labels must lie in 0..classes-1.

    Returns:
      data: uint8 [n, 3072], per image 1024 red, 1024 green, 1024 blue values (row-major 32x32).
      labels: int32 [n].

    Raises:
      cache.DataError: missing file, not an allowed pickle, not a dict, a missing key, `data`
        of the wrong type/shape, or a label that is not an int in range (names the record).
    """
    data, labels = _read(path, (label_key,), {label_key: classes})
    return data, labels[label_key]


def _read(path, label_keys: Sequence[str], classes: Mapping[str, int]):
    path = pathlib.Path(path)
    if not path.is_file():
        raise cache.DataError(f"{path}: CIFAR batch file not found")
    try:
        with path.open("rb") as f:
            # encoding="bytes": the Python 2 strs (keys, the array's raw data) stay bytes.
            obj = _RestrictedUnpickler(f, encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as e:
        raise cache.DataError(f"{path}: cannot unpickle as a CIFAR batch ({e})") from None
    if not isinstance(obj, dict):
        raise cache.DataError(f"{path}: expected a pickled dict, got {type(obj).__name__}")
    entries = {_key(k): v for k, v in obj.items()}
    for key in ("data", *label_keys):
        if key not in entries:
            found = sorted(str(k) for k in entries)
            raise cache.DataError(f"{path}: missing key b'{key}' (found {found})")
    data = entries["data"]
    if (
        not isinstance(data, np.ndarray)
        or data.dtype != np.uint8
        or data.ndim != 2
        or data.shape[1] != PIXELS
    ):
        got = (
            f"{data.dtype} {list(data.shape)}"
            if isinstance(data, np.ndarray)
            else type(data).__name__
        )
        raise cache.DataError(
            f"{path}: key b'data': expected a uint8 array [n, {PIXELS}], got {got}"
        )
    out = {}
    for key in label_keys:
        out[key] = _labels(path, key, entries[key], len(data), classes[key])
    return np.ascontiguousarray(data), out


def _labels(path: pathlib.Path, key: str, labels, n: int, classes: int) -> np.ndarray:
    if isinstance(labels, np.ndarray):
        labels = labels.tolist()
    if not isinstance(labels, (list, tuple)):
        raise cache.DataError(
            f"{path}: key b'{key}': expected a list of ints, got {type(labels).__name__}"
        )
    if len(labels) != n:
        raise cache.DataError(
            f"{path}: key b'{key}' has {len(labels)} entries but b'data' has {n} rows"
        )
    for i, label in enumerate(labels):
        if isinstance(label, bool) or not isinstance(label, (int, np.integer)):
            raise cache.DataError(f"{path}: key b'{key}': record {i}: {label!r} is not an int")
        if not 0 <= label < classes:
            raise cache.DataError(
                f"{path}: key b'{key}': record {i}: label {label} not in 0-{classes - 1}"
            )
    return np.asarray(labels, dtype=np.int32)


# Python 2 cPickle's encodings (pickletools names): a str is SHORT_BINSTRING (< 256 bytes) or
# BINSTRING; these unpickle as bytes under encoding="bytes", exactly as the official files do.
def _p_str(b: bytes) -> bytes:
    if len(b) < 256:
        return pickle.SHORT_BINSTRING + bytes([len(b)]) + b
    return pickle.BINSTRING + struct.pack("<i", len(b)) + b


def _p_int(i: int) -> bytes:
    if 0 <= i < 1 << 8:
        return pickle.BININT1 + bytes([i])
    if 0 <= i < 1 << 16:
        return pickle.BININT2 + struct.pack("<H", i)
    return pickle.BININT + struct.pack("<i", i)


def _p_list(items: Sequence[bytes]) -> bytes:
    out = [pickle.EMPTY_LIST]
    for lo in range(0, len(items), 1000):  # cPickle appends in batches of 1000
        out += [pickle.MARK, *items[lo : lo + 1000], pickle.APPENDS]
    return b"".join(out)


def _p_uint8_array(a: np.ndarray) -> bytes:
    # numpy's __reduce__ of an array: _reconstruct(ndarray, (0,), "b"), then __setstate__ with
    # (version 1, shape, dtype, is_fortran, raw bytes); dtype("u1") with its version-3 state.
    dtype = b"".join([
        pickle.GLOBAL + b"numpy\ndtype\n",
        _p_str(b"u1"), _p_int(0), _p_int(1), pickle.TUPLE3, pickle.REDUCE,
        pickle.MARK, _p_int(3), _p_str(b"|"), pickle.NONE, pickle.NONE, pickle.NONE,
        _p_int(-1), _p_int(-1), _p_int(0), pickle.TUPLE, pickle.BUILD,
    ])  # fmt: skip
    shape = b"".join(_p_int(s) for s in a.shape) + pickle.TUPLE2
    return b"".join([
        pickle.GLOBAL + b"numpy.core.multiarray\n_reconstruct\n",
        pickle.GLOBAL + b"numpy\nndarray\n",
        _p_int(0), pickle.TUPLE1, _p_str(b"b"), pickle.TUPLE3, pickle.REDUCE,
        pickle.MARK, _p_int(1), shape, dtype, pickle.NEWFALSE, _p_str(a.tobytes()),
        pickle.TUPLE, pickle.BUILD,
    ])  # fmt: skip


def write_batch(
    path: str | os.PathLike,
    data: np.ndarray,
    labels: Mapping[str, Sequence[int]] | Sequence[int],
    *,
    batch_label: str = "training batch 1 of 5",
    filenames: Sequence[str] | None = None,
) -> None:
    """Writes a batch in the format of the official python files: a protocol-2 pickle with
    Python 2 strs; keys in the official order (CIFAR-10: batch_label, labels, data, filenames;
    CIFAR-100: filenames, batch_label, fine_labels, coarse_labels, data).

    Args:
      data: uint8 [n, 3072] (1024 R, 1024 G, 1024 B per image).
      labels: n CIFAR-10 labels, or `{"fine_labels": [...], "coarse_labels": [...]}`.
      filenames: n names (default `image_00000.png`, ...).
    """
    data = np.asarray(data)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != PIXELS:
        raise ValueError(f"data must be uint8 [n, {PIXELS}], got {data.dtype} {data.shape}")
    columns = dict(labels) if isinstance(labels, Mapping) else {"labels": labels}
    columns = {k: [int(x) for x in v] for k, v in columns.items()}
    for key, values in columns.items():
        if len(values) != len(data) or any(x < 0 for x in values):
            raise ValueError(f"{key}: need {len(data)} non-negative labels, got {len(values)}")
    if filenames is None:
        filenames = [f"image_{i:05d}.png" for i in range(len(data))]
    item = {
        "batch_label": _p_str(batch_label.encode()),
        "data": _p_uint8_array(np.ascontiguousarray(data)),
        "filenames": _p_list([_p_str(n.encode()) for n in filenames]),
        **{k: _p_list([_p_int(x) for x in v]) for k, v in columns.items()},
    }
    order = (
        ("batch_label", "labels", "data", "filenames")
        if "labels" in columns
        else ("filenames", "batch_label", *columns, "data")
    )
    body = [pickle.PROTO + bytes([2]), pickle.EMPTY_DICT, pickle.MARK]
    for key in order:
        body += [_p_str(key.encode()), item[key]]
    body += [pickle.SETITEMS, pickle.STOP]
    pathlib.Path(path).write_bytes(b"".join(body))


def planar_to_hwc(data: np.ndarray) -> np.ndarray:
    """[n, 3072] planar rows (R plane, G plane, B plane) -> uint8 images [n, 32, 32, 3]."""
    return data.reshape(len(data), 3, 32, 32).transpose(0, 2, 3, 1)


def _folder(directory, subdir: str, files: Sequence[str], what: str) -> pathlib.Path:
    directory = pathlib.Path(directory).expanduser()
    expected = (
        f"{what} python version: {', '.join(files)} (the archive unpacks to {subdir}/); set "
        "config.data.dir to that folder or its parent"
    )
    if not directory.is_dir():
        raise cache.DataError(f"{directory}: {what} folder not found; expected the {expected}")
    if (directory / subdir).is_dir():
        directory = directory / subdir
    missing = [name for name in files if not (directory / name).is_file()]
    if missing:
        raise cache.DataError(f"{directory}: missing {', '.join(missing)}; expected the {expected}")
    return directory


def cifar10_dir(directory: str | os.PathLike) -> pathlib.Path:
    """The folder holding the 6 CIFAR-10 batches: `directory` or its `cifar-10-batches-py/`."""
    return _folder(directory, CIFAR10_SUBDIR, CIFAR10_FILES, "CIFAR-10")


def cifar100_dir(directory: str | os.PathLike) -> pathlib.Path:
    """The folder holding CIFAR-100's `train` and `test`: `directory` or `cifar-100-python/`."""
    return _folder(directory, CIFAR100_SUBDIR, CIFAR100_FILES, "CIFAR-100")


def read_cifar10(directory: str | os.PathLike) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"train": 50,000 (data_batch_1..5 in file order), "test": 10,000} -> (uint8 [n, 3072]
    planar, int32 labels [n])."""
    directory = cifar10_dir(directory)
    parts = [read_batch(directory / name) for name in CIFAR10_TRAIN_FILES]
    train = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    return {"train": train, "test": read_batch(directory / CIFAR10_TEST_FILE)}


def read_cifar100(directory: str | os.PathLike) -> dict[str, tuple[np.ndarray, ...]]:
    """{"train": 50,000, "test": 10,000} -> (uint8 [n, 3072] planar, int32 fine labels 0-99,
    int32 coarse labels 0-19)."""
    directory = cifar100_dir(directory)
    out = {}
    for split in CIFAR100_FILES:
        keys = ("fine_labels", "coarse_labels")
        data, labels = _read(directory / split, keys, {"fine_labels": 100, "coarse_labels": 20})
        out[split] = (data, labels["fine_labels"], labels["coarse_labels"])
    return out
