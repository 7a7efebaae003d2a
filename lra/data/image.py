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
`cifar-10-batches-py/{data_batch_1..5,test_batch}`, read by `attnbench.data.formats.cifar` (a
restricted unpickler: a pickle naming anything but numpy's array reconstruction is refused before
it runs; `attnbench.data.formats.cifar.write_batch` writes the format for test fixtures).

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

import os
import pathlib
from collections.abc import Sequence

import ml_collections
import numpy as np

from attnbench.data import cache, catalog
from attnbench.data.formats import cifar, fashion_mnist

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
    "read_cifar10",
    "read_fashion_mnist",
]

NUM_CLASSES = 10
VOCAB_SIZE = 257  # pad id 0 + 256 pixel values (shifted by one unless zero_is_padding)
HEIGHT = WIDTH = 32

CIFAR_TRAIN_FILES = cifar.CIFAR10_TRAIN_FILES
CIFAR_TEST_FILE = cifar.CIFAR10_TEST_FILE
CIFAR_FILES = cifar.CIFAR10_FILES

STANDIN_PACKAGE = fashion_mnist.PACKAGE
DEFAULT_STANDIN_DIR = fashion_mnist.DEFAULT_DIR
STANDIN_FILES = fashion_mnist.FILES
_MNIST_SIZE = fashion_mnist.SIZE
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
# The LRA splits of CIFAR-10 (attnbench.data.formats.cifar) and of the Fashion-MNIST stand-in
# --------------------------------------------------------------------------------------------


def _cifar_gray(data: np.ndarray) -> np.ndarray:
    return rgb_to_gray_lra(cifar.planar_to_hwc(data))


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
    raw = cifar.read_cifar10(directory)
    out = _train_val(_cifar_gray(raw["train"][0]), raw["train"][1])
    out["test"] = (_cifar_gray(raw["test"][0]), raw["test"][1])
    return out


def _standin_missing(directory: pathlib.Path, missing: Sequence[str]) -> cache.DataError:
    return fashion_mnist.missing_error(directory, missing)


def read_fashion_mnist(directory: str | os.PathLike) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The stand-in splits: Fashion-MNIST (`attnbench.data.formats.fashion_mnist`) padded to 32x32.

    Args:
      directory: folder with `STANDIN_FILES` (the Debian package's is `DEFAULT_STANDIN_DIR`).

    Returns:
      {"train", "val", "test"} -> (uint8 images [n, 32, 32], int32 labels [n]); train and val
      are the first 90% and last 10% of the training file.
    """
    out = {
        split: (np.pad(images, ((0, 0), (_PAD, _PAD), (_PAD, _PAD))), labels)
        for split, (images, labels) in fashion_mnist.read(directory).items()
    }
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
        # config.data.dir, else where `attnbench-data fetch cifar10` puts CIFAR-10
        source_dir = cifar.cifar10_dir(catalog.official_dir("cifar10", d.dir))
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
