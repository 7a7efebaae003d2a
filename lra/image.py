"""LRA Image: grayscale CIFAR-10 as a sequence of 1024 pixel tokens, 10 classes.

The task (Tay et al. 2021, LRA §3; `lra_benchmarks/image/input_pipeline.py`)
-------------------------------------------------------------------------------
Each 32x32 CIFAR-10 image is converted to grayscale with `tf.image.rgb_to_grayscale` and read
row by row as 1024 8-bit pixel values. Splits: train = first 90% of the 50,000 training images
(45,000), val = the last 10% (5,000), test = the 10,000 test images.

Grayscale (`rgb_to_gray_lra`), what TF does on a uint8 image
---------------------------------------------------------------
1. `convert_image_dtype(uint8 -> float32)`: cast, then multiply by the float32 constant 1/255.
2. `tensordot` with the weights [0.2989, 0.5870, 0.1140] (float32): here the float32 sum
   `(r*w0 + g*w1) + b*w2`, left to right, each product rounded (no fused multiply-add).
3. `convert_image_dtype(float32 -> uint8)`: multiply by 255.5, cast, i.e. truncate toward zero.
   `rgb_to_grayscale` does not ask for saturation; none is needed since the weights sum to
   0.9999 (white maps to 255.47 -> 255). We clip to [0, 255] anyway, which changes nothing.
The summation order matters: for 31 to 60 of the 2^24 RGB triples a fused or right-to-left sum
gives a value one gray level off, and plain float64 arithmetic is off on 237. The order above
was checked against `tf.image.rgb_to_grayscale` of TensorFlow 2.21 (CPU, with and without
oneDNN) on all 2^24 triples: identical. Consequences worth knowing: pure green 255 -> 149, not
150; pure red 255 -> 76; pure blue 255 -> 29.

Official files: the CIFAR-10 "python version"
---------------------------------------------
`cifar-10-batches-py/{data_batch_1..5,test_batch}`, each a pickle (protocol 2, written by
Python 2) of a dict with `b"data"`: uint8 [10000, 3072] (the 1024 red values of a row-major
32x32 image, then the 1024 green, then the 1024 blue) and `b"labels"`: 10000 ints in 0-9 (also
`b"batch_label"` and `b"filenames"`, unused). They are read with `encoding="bytes"` by a
restricted unpickler that resolves only the globals a numpy uint8 array needs (see
`_ALLOWED_GLOBALS`): a pickle naming anything else (`os.system`, ...) is refused before it runs.
`write_cifar_batch` writes this format with the opcodes of Python 2's cPickle (test fixtures).

LRA read CIFAR-10 through TFDS (`cifar10`, `train[:90%]` / `train[90%:]` / `test`). TFDS stores
the examples in its own shuffled order, which cannot be reproduced without TFDS, so here the
split is taken in file order (data_batch_1 .. data_batch_5): the same sizes and distribution as
LRA's, but not the same 5,000 validation images. The test split is the same set of images.

Tokens
------
`zero_is_padding=False` (default): token = pixel + 1 (ids 1-256; 0 is the pad id and never
occurs, since every sequence is exactly 1024 long). `zero_is_padding=True` reproduces an
undocumented quirk of the LRA code: its models mask with `inputs > 0`, and the image pipeline
feeds raw pixel values, so black pixels (value 0) are treated as padding and dropped from
attention and pooling. `VOCAB_SIZE = 257` either way.

Stand-in (`source="standin"`): Fashion-MNIST
--------------------------------------------
No copy of CIFAR-10 can be installed offline; Debian's `dataset-fashion-mnist` ships
Fashion-MNIST (10 classes, 28x28 grayscale, 60,000 train + 10,000 test) as gzipped IDX files.
Each image is zero-padded by 2 pixels on every side to 32x32 (1024 tokens). Split as LRA's
90/10: train = the first 54,000 training images, val = the last 6,000, test = t10k. It is
labelled as a stand-in in the description. Its backgrounds are exactly 0: with the 240 border
pixels, 62% of all pixels of the padded images are 0 (measured on the Debian files; the
description reports `zero_pixel_fraction` per split), so with `zero_is_padding=True` most of
each sequence would be masked out, far more than on natural CIFAR-10 photos.
"""

from __future__ import annotations

import gzip
import os
import pathlib
import pickle
import struct
import zlib
from collections.abc import Sequence

import ml_collections
import numpy as np

from lra import cache

__all__ = [
    "NUM_CLASSES",
    "VOCAB_SIZE",
    "HEIGHT",
    "WIDTH",
    "CIFAR_FILES",
    "CIFAR_TRAIN_FILES",
    "CIFAR_TEST_FILE",
    "STANDIN_FILES",
    "STANDIN_PACKAGE",
    "DEFAULT_STANDIN_DIR",
    "data_config",
    "load",
    "rgb_to_gray_lra",
    "pixels_to_tokens",
    "read_cifar_batch",
    "write_cifar_batch",
    "read_cifar10",
    "read_idx",
    "write_idx",
    "read_fashion_mnist",
]

NUM_CLASSES = 10
VOCAB_SIZE = 257  # pad id 0 + 256 pixel values (shifted by one unless zero_is_padding)
HEIGHT = WIDTH = 32

CIFAR_TRAIN_FILES: tuple[str, ...] = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR_TEST_FILE = "test_batch"
CIFAR_FILES: tuple[str, ...] = (*CIFAR_TRAIN_FILES, CIFAR_TEST_FILE)
_CIFAR_SUBDIR = "cifar-10-batches-py"  # what cifar-10-python.tar.gz unpacks to
_CIFAR_PIXELS = 3 * HEIGHT * WIDTH

STANDIN_PACKAGE = "dataset-fashion-mnist"
DEFAULT_STANDIN_DIR = "/usr/share/datasets/fashion-mnist"  # where the Debian package puts it
STANDIN_FILES: dict[str, tuple[str, str]] = {  # split -> (images, labels)
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
_MNIST_SIZE = 28
_PAD = (HEIGHT - _MNIST_SIZE) // 2  # 2 zero pixels on each side: 28 + 2 + 2 = 32

_SPLITS = ("train", "val", "test")
# LRA: tfds "train[:90%]" / "train[90%:]". Exact for 50,000 (CIFAR) and 60,000 (Fashion-MNIST).
_TRAIN_TENTHS = 9
_CACHE_VERSION = 1  # bump when the cached arrays of a given spec change

# TF's constants, as float32 tensors (tensorflow/python/ops/image_ops_impl.py:
# rgb_to_grayscale and convert_image_dtype).
_TO_FLOAT = np.float32(1.0 / 255)
_GRAY_WEIGHTS = np.array([0.2989, 0.5870, 0.1140], dtype=np.float32)
_TO_UINT8 = np.float32(255 + 0.5)
_GRAY_CHUNK = 1 << 20  # pixels per float32 block: ~12 MB of temporaries


# --------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------


def data_config() -> ml_collections.ConfigDict:
    """`config.data` of LRA Image, with the official LRA values as defaults."""
    d = ml_collections.ConfigDict()
    d.source = "official"  # official (CIFAR-10 python pickles) | standin (Fashion-MNIST, offline)
    d.dir = ""  # official: cifar-10-batches-py/ or its parent; standin: cache root ("" = default)
    d.max_length = HEIGHT * WIDTH  # tokens per image; fixed at 32*32 = 1024
    d.seed = 0  # unused: LRA's splits are contiguous slices, nothing is shuffled
    d.zero_is_padding = False  # True = LRA quirk: token = pixel, so black pixels are pad (masked)
    d.standin_dir = DEFAULT_STANDIN_DIR  # folder of the Fashion-MNIST IDX files (Debian package)
    d.num_train = 0  # 0 = the whole split (45,000; stand-in 54,000); n > 0 keeps the first n
    d.num_val = 0  # 0 = the whole split (5,000; stand-in 6,000); n > 0 keeps the first n
    d.num_test = 0  # 0 = the whole split (10,000); n > 0 keeps the first n
    return d


# --------------------------------------------------------------------------------------------
# Pixels and tokens
# --------------------------------------------------------------------------------------------


def rgb_to_gray_lra(rgb: np.ndarray) -> np.ndarray:
    """`tf.image.rgb_to_grayscale` of a uint8 image, bit for bit (see the module docstring).

    Args:
      rgb: uint8 [..., 3].

    Returns:
      uint8 [...] (the trailing channel axis of size 1 that TF keeps is dropped).
    """
    rgb = np.asarray(rgb)
    if rgb.dtype != np.uint8 or rgb.ndim < 1 or rgb.shape[-1] != 3:
        raise ValueError(f"expected a uint8 array [..., 3], got {rgb.dtype} {list(rgb.shape)}")
    flat = rgb.reshape(-1, 3)
    out = np.empty(len(flat), dtype=np.uint8)
    w0, w1, w2 = _GRAY_WEIGHTS
    for lo in range(0, len(flat), _GRAY_CHUNK):
        x = flat[lo : lo + _GRAY_CHUNK].astype(np.float32) * _TO_FLOAT
        # Separate numpy ufuncs: every product and sum is rounded to float32, in TF's order.
        gray = x[:, 0] * w0 + x[:, 1] * w1
        gray += x[:, 2] * w2
        gray *= _TO_UINT8
        np.clip(gray, 0, 255, out=gray)
        out[lo : lo + _GRAY_CHUNK] = gray  # float -> uint8 truncates toward zero, as TF's cast
    return out.reshape(rgb.shape[:-1])


def pixels_to_tokens(images: np.ndarray, zero_is_padding: bool) -> np.ndarray:
    """Token ids of grayscale images read row by row.

    Args:
      images: uint8 [n, H, W].
      zero_is_padding: False: token = pixel + 1 (ids 1-256, 0 never occurs). True (the LRA
        quirk): token = pixel, so a black pixel is the pad id 0 and gets masked out.

    Returns:
      uint16 [n, H*W].
    """
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 3:
        raise ValueError(f"expected uint8 images [n, H, W], got {images.dtype} {images.shape}")
    tokens = images.reshape(len(images), -1).astype(np.uint16)
    if not zero_is_padding:
        tokens += 1
    return tokens


# --------------------------------------------------------------------------------------------
# CIFAR-10 python pickles
# --------------------------------------------------------------------------------------------

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
                f"global {module}.{name} is not allowed in a CIFAR-10 batch (only numpy array "
                "reconstruction is)"
            ) from None


def _key(key) -> str | None:
    if isinstance(key, bytes):
        return key.decode("latin-1")
    return key if isinstance(key, str) else None


def read_cifar_batch(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR-10 python batch (`data_batch_1`, ..., `test_batch`).

    Returns:
      data: uint8 [n, 3072], per image 1024 red, 1024 green, 1024 blue values (row-major 32x32).
      labels: int32 [n], in 0-9.

    Raises:
      cache.DataError: missing file, not an allowed pickle, not a dict, a missing key, `data`
        of the wrong type/shape, or a label that is not an int in 0-9 (names the record).
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise cache.DataError(f"{path}: CIFAR-10 batch file not found")
    try:
        with path.open("rb") as f:
            # encoding="bytes": the Python 2 strs (keys, the array's raw data) stay bytes.
            obj = _RestrictedUnpickler(f, encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as e:
        raise cache.DataError(f"{path}: cannot unpickle as a CIFAR-10 batch ({e})") from None
    if not isinstance(obj, dict):
        raise cache.DataError(f"{path}: expected a pickled dict, got {type(obj).__name__}")
    entries = {_key(k): v for k, v in obj.items()}
    for key in ("data", "labels"):
        if key not in entries:
            found = sorted(str(k) for k in entries)
            raise cache.DataError(f"{path}: missing key b'{key}' (found {found})")
    data = entries["data"]
    if (
        not isinstance(data, np.ndarray)
        or data.dtype != np.uint8
        or data.ndim != 2
        or data.shape[1] != _CIFAR_PIXELS
    ):
        got = (
            f"{data.dtype} {list(data.shape)}"
            if isinstance(data, np.ndarray)
            else type(data).__name__
        )
        raise cache.DataError(
            f"{path}: key b'data': expected a uint8 array [n, {_CIFAR_PIXELS}], got {got}"
        )
    labels = entries["labels"]
    if isinstance(labels, np.ndarray):
        labels = labels.tolist()
    if not isinstance(labels, (list, tuple)):
        raise cache.DataError(
            f"{path}: key b'labels': expected a list of ints, got {type(labels).__name__}"
        )
    if len(labels) != len(data):
        raise cache.DataError(
            f"{path}: key b'labels' has {len(labels)} entries but b'data' has {len(data)} rows"
        )
    for i, label in enumerate(labels):
        if isinstance(label, bool) or not isinstance(label, (int, np.integer)):
            raise cache.DataError(f"{path}: key b'labels': record {i}: {label!r} is not an int")
        if not 0 <= label < NUM_CLASSES:
            raise cache.DataError(f"{path}: key b'labels': record {i}: label {label} not in 0-9")
    return np.ascontiguousarray(data), np.asarray(labels, dtype=np.int32)


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


def write_cifar_batch(
    path: str | os.PathLike,
    data: np.ndarray,
    labels: Sequence[int],
    *,
    batch_label: str = "training batch 1 of 5",
    filenames: Sequence[str] | None = None,
) -> None:
    """Writes a batch in the format of the official CIFAR-10 python files: a protocol-2 pickle
    with Python 2 strs, keys in the official order (batch_label, labels, data, filenames).

    Args:
      data: uint8 [n, 3072] (1024 R, 1024 G, 1024 B per image).
      labels: n ints in 0-9.
      filenames: n names (default `image_00000.png`, ...).
    """
    data = np.asarray(data)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != _CIFAR_PIXELS:
        raise ValueError(f"data must be uint8 [n, {_CIFAR_PIXELS}], got {data.dtype} {data.shape}")
    labels = [int(x) for x in labels]
    if len(labels) != len(data) or any(not 0 <= x < NUM_CLASSES for x in labels):
        raise ValueError(f"need {len(data)} labels in 0-9, got {len(labels)}")
    if filenames is None:
        filenames = [f"image_{i:05d}.png" for i in range(len(data))]
    body = [
        pickle.PROTO + bytes([2]), pickle.EMPTY_DICT, pickle.MARK,
        _p_str(b"batch_label"), _p_str(batch_label.encode()),
        _p_str(b"labels"), _p_list([_p_int(x) for x in labels]),
        _p_str(b"data"), _p_uint8_array(np.ascontiguousarray(data)),
        _p_str(b"filenames"), _p_list([_p_str(n.encode()) for n in filenames]),
        pickle.SETITEMS, pickle.STOP,
    ]  # fmt: skip
    pathlib.Path(path).write_bytes(b"".join(body))


def _cifar_dir(directory: pathlib.Path) -> pathlib.Path:
    """The folder holding the 6 batches: `directory` itself or its `cifar-10-batches-py/`."""
    expected = (
        f"the CIFAR-10 python version: {', '.join(CIFAR_FILES)} (from cifar-10-python.tar.gz, "
        f"which unpacks to {_CIFAR_SUBDIR}/); set config.data.dir to that folder or its parent"
    )
    if not directory.is_dir():
        raise cache.DataError(f"{directory}: CIFAR-10 folder not found; expected {expected}")
    if (directory / _CIFAR_SUBDIR).is_dir():
        directory = directory / _CIFAR_SUBDIR
    missing = [name for name in CIFAR_FILES if not (directory / name).is_file()]
    if missing:
        raise cache.DataError(f"{directory}: missing {', '.join(missing)}; expected {expected}")
    return directory


def _cifar_gray(data: np.ndarray) -> np.ndarray:
    # [n, 3072] planar (R plane, G plane, B plane) -> [n, 32, 32, 3] -> gray [n, 32, 32].
    rgb = data.reshape(len(data), 3, HEIGHT, WIDTH).transpose(0, 2, 3, 1)
    return rgb_to_gray_lra(rgb)


def _train_val(images: np.ndarray, labels: np.ndarray) -> dict[str, tuple]:
    cut = len(images) * _TRAIN_TENTHS // 10
    return {"train": (images[:cut], labels[:cut]), "val": (images[cut:], labels[cut:])}


def read_cifar10(directory: str | os.PathLike) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The LRA splits of the CIFAR-10 python batches, in grayscale.

    Args:
      directory: `cifar-10-batches-py/` or its parent.

    Returns:
      {"train", "val", "test"} -> (uint8 gray images [n, 32, 32], int32 labels [n]); train and
      val are the first 90% and last 10% of data_batch_1..5 in file order.
    """
    directory = _cifar_dir(pathlib.Path(directory).expanduser())
    parts = {}
    for name in CIFAR_FILES:
        data, labels = read_cifar_batch(directory / name)
        parts[name] = (_cifar_gray(data), labels)
    train = [parts[name] for name in CIFAR_TRAIN_FILES]
    out = _train_val(np.concatenate([p[0] for p in train]), np.concatenate([p[1] for p in train]))
    out["test"] = parts[CIFAR_TEST_FILE]
    return out


# --------------------------------------------------------------------------------------------
# IDX files (Fashion-MNIST)
# --------------------------------------------------------------------------------------------

_IDX_UBYTE = 0x08  # the only element type the MNIST family uses


def read_idx(path: str | os.PathLike, ndim: int) -> np.ndarray:
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


def write_idx(path: str | os.PathLike, array: np.ndarray) -> None:
    """Writes a uint8 array as an IDX file (gzip-compressed if the name ends in `.gz`)."""
    array = np.ascontiguousarray(array)
    if array.dtype != np.uint8 or not 1 <= array.ndim <= 255:
        raise ValueError(f"write_idx takes a uint8 array, got {array.dtype} {array.shape}")
    raw = struct.pack(">I", 0x0800 | array.ndim)
    raw += struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()
    path = pathlib.Path(path)
    path.write_bytes(gzip.compress(raw, mtime=0) if path.suffix == ".gz" else raw)


def _standin_missing(directory: pathlib.Path, missing: Sequence[str]) -> cache.DataError:
    return cache.DataError(
        f"{directory}: Fashion-MNIST (the LRA Image stand-in) not found: missing "
        f"{', '.join(missing)}. Install the Debian package with `apt-get install "
        f"{STANDIN_PACKAGE}` (files in {DEFAULT_STANDIN_DIR}), or set config.data.standin_dir "
        "to a folder holding these files"
    )


def read_fashion_mnist(directory: str | os.PathLike) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The stand-in splits: Fashion-MNIST padded to 32x32.

    Args:
      directory: folder with `STANDIN_FILES` (the Debian package's is `DEFAULT_STANDIN_DIR`).

    Returns:
      {"train", "val", "test"} -> (uint8 images [n, 32, 32], int32 labels [n]); train and val
      are the first 90% and last 10% of the training file.
    """
    directory = pathlib.Path(directory).expanduser()
    names = [name for pair in STANDIN_FILES.values() for name in pair]
    missing = [name for name in names if not (directory / name).is_file()]
    if missing:
        raise _standin_missing(directory, missing)
    out = {}
    for split, (image_file, label_file) in STANDIN_FILES.items():
        images = read_idx(directory / image_file, 3)
        labels = read_idx(directory / label_file, 1)
        if images.shape[1:] != (_MNIST_SIZE, _MNIST_SIZE):
            raise cache.DataError(
                f"{directory / image_file}: images are {list(images.shape[1:])}, expected "
                f"[{_MNIST_SIZE}, {_MNIST_SIZE}]"
            )
        if len(labels) != len(images):
            raise cache.DataError(
                f"{directory / label_file}: {len(labels)} labels for {len(images)} images in "
                f"{image_file}"
            )
        bad = np.flatnonzero(labels >= NUM_CLASSES)
        if len(bad):
            raise cache.DataError(
                f"{directory / label_file}: record {int(bad[0])}: label {int(labels[bad[0]])} "
                "not in 0-9"
            )
        padded = np.pad(images, ((0, 0), (_PAD, _PAD), (_PAD, _PAD)))
        out[split] = (padded, labels.astype(np.int32))
    result = _train_val(*out["train"])
    result["test"] = out["test"]
    return result


# --------------------------------------------------------------------------------------------
# Loading with a cache
# --------------------------------------------------------------------------------------------


def _file_stats(directory: pathlib.Path, names: Sequence[str]) -> dict[str, list[int]]:
    # Size and mtime of each source file: a changed file gets a new cache directory.
    stats = {}
    for name in names:
        st = (directory / name).stat()
        stats[name] = [st.st_size, st.st_mtime_ns]
    return stats


def _subset(arrays: dict[str, np.ndarray], n: int, split: str, total: int) -> dict:
    if n < 0 or n > total:
        raise ValueError(f"config.data.num_{split}={n}: the {split} split has {total} examples")
    return {k: v[:n] for k, v in arrays.items()} if n else arrays


def load(
    d: ml_collections.ConfigDict, cache_root: pathlib.Path
) -> tuple[dict[str, dict[str, np.ndarray]], dict]:
    """LRA Image splits (see the module docstring).

    Args:
      d: `config.data` (fields of `data_config()`).
      cache_root: where the grayscale pixels are cached (`<data root>/lra`).

    Returns:
      ({"train", "val", "test"} -> {"tokens": uint16 [n, 1024], "label": int32 [n]},
       a JSON-able description).
    """
    if d.max_length != HEIGHT * WIDTH:
        raise ValueError(
            f"config.data.max_length={d.max_length}: LRA Image sequences are the "
            f"{HEIGHT}x{WIDTH} = {HEIGHT * WIDTH} pixels of an image"
        )
    if d.source == "official":
        if not d.dir:
            raise cache.DataError(
                "config.data.source='official' needs config.data.dir: the folder "
                f"{_CIFAR_SUBDIR}/ (or its parent) holding {', '.join(CIFAR_FILES)}; or set "
                "config.data.source='standin' for the offline Fashion-MNIST stand-in"
            )
        source_dir = _cifar_dir(pathlib.Path(d.dir).expanduser())
        name, names, read = "image-cifar10", CIFAR_FILES, read_cifar10
    elif d.source == "standin":
        source_dir = pathlib.Path(d.standin_dir).expanduser()
        names = [name for pair in STANDIN_FILES.values() for name in pair]
        missing = [name for name in names if not (source_dir / name).is_file()]
        if missing:
            raise _standin_missing(source_dir, missing)
        name, read = "image-fashion-mnist", read_fashion_mnist
    else:
        raise ValueError(f"config.data.source={d.source!r}; LRA Image knows 'official', 'standin'")
    source_dir = source_dir.resolve()
    spec = dict(
        version=_CACHE_VERSION,
        source=d.source,
        dir=str(source_dir),
        files=_file_stats(source_dir, names),
    )

    def build(tmp: pathlib.Path) -> None:
        # The grayscale pixels are cached, not the tokens: half the size, and the same cache
        # serves both settings of zero_is_padding (tokenising 60k images takes ~0.1 s).
        for split, (images, labels) in read(source_dir).items():
            cache.save_arrays(tmp / f"{split}.npz", {"pixels": images, "label": labels})

    directory = cache.build_once(cache_root, name, spec, build)
    splits, sizes, zero_fraction = {}, {}, {}
    for split in _SPLITS:
        arrays = cache.load_arrays(directory / f"{split}.npz", keys=("pixels", "label"))
        arrays = _subset(arrays, int(d[f"num_{split}"]), split, len(arrays["label"]))
        pixels = arrays["pixels"]
        splits[split] = {
            "tokens": pixels_to_tokens(pixels, d.zero_is_padding),
            "label": arrays["label"].astype(np.int32),
        }
        sizes[split] = len(pixels)
        zero_fraction[split] = round(float(np.mean(pixels == 0)), 6) if pixels.size else 0.0

    description = {
        "cache": f"lra/{directory.name}",
        "source": d.source,
        "sizes": sizes,
        "image": f"{HEIGHT}x{WIDTH} grayscale, read row by row",
        "tokens": (
            "pixel (LRA quirk: black pixels are pad id 0 and masked)"
            if d.zero_is_padding
            else "pixel + 1 (0 = pad, unused)"
        ),
        "vocab_size": VOCAB_SIZE,
        # With zero_is_padding this is the fraction of every sequence the model masks out.
        "zero_pixel_fraction": zero_fraction,
        "split": "train/val = first 90% / last 10% of the training images (file order)",
    }
    if d.source == "official":
        description.update(
            dataset="CIFAR-10 (grayscale, LRA Image)",
            dir=str(source_dir),
            grayscale="tf.image.rgb_to_grayscale on uint8: x/255, weights 0.2989/0.5870/0.1140, "
            "x255.5, truncate",
        )
    else:
        description.update(
            dataset="Fashion-MNIST (stand-in for grayscale CIFAR-10, LRA Image)",
            standin_for="grayscale CIFAR-10 (LRA Image)",
            package=STANDIN_PACKAGE,
            dir=str(source_dir),
            image=f"28x28 grayscale zero-padded by {_PAD} pixels per side to {HEIGHT}x{WIDTH}, "
            "read row by row",
        )
    return splits, description
