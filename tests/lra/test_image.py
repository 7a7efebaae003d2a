"""Tests of lra/image.py: TF-exact grayscale, CIFAR-10 pickles, IDX files, stand-in, cache."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import pathlib
import pickle
import pickletools
import struct

import numpy as np
import pytest

from lra import cache, image

# `tf.image.rgb_to_grayscale` of TensorFlow 2.21.0 (CPU, this machine, with and without
# oneDNN), computed once outside the project: (r, g, b, gray). These are the triples on which a
# fused multiply-add or a right-to-left float32 sum gives a different gray level, plus ones on
# which exact float64 arithmetic does.
# fmt: off
TF_GRAY = np.array([
    (5, 49, 41, 34), (10, 98, 82, 69), (16, 218, 140, 148), (20, 196, 164, 139),
    (23, 195, 100, 132), (24, 133, 189, 107), (32, 181, 166, 134), (37, 230, 207, 169),
    (41, 208, 231, 160), (50, 205, 39, 140), (62, 190, 41, 135), (67, 239, 82, 170),
    (77, 204, 236, 169), (78, 153, 67, 121), (81, 152, 3, 114), (88, 251, 149, 191),
    (91, 117, 157, 113), (94, 116, 93, 106), (94, 249, 21, 177), (102, 164, 70, 134),
    (103, 143, 158, 133), (110, 212, 47, 163), (118, 127, 96, 121), (125, 226, 242, 197),
    (126, 175, 73, 148), (129, 174, 9, 142), (139, 139, 163, 142), (142, 138, 99, 135),
    (146, 249, 51, 196), (150, 186, 76, 163), (152, 103, 253, 135), (152, 236, 181, 205),
    (153, 185, 12, 156), (158, 101, 125, 121), (162, 171, 78, 157), (168, 199, 207, 191),
    (169, 148, 38, 141), (180, 184, 209, 185), (183, 183, 145, 178), (188, 232, 186, 213),
    (190, 27, 177, 92), (190, 160, 105, 162), (193, 159, 41, 155), (195, 209, 146, 197),
    (198, 208, 82, 191), (208, 173, 236, 190), (209, 122, 67, 141), (212, 121, 3, 134),
    (213, 100, 91, 133), (219, 220, 149, 211), (221, 148, 68, 160), (223, 65, 245, 133),
    (231, 113, 222, 161), (236, 254, 192, 242), (238, 182, 111, 190), (240, 232, 216, 232),
    (241, 181, 47, 183), (250, 167, 113, 186), (251, 146, 201, 183), (252, 95, 32, 134),
    (0, 122, 186, 93), (40, 96, 215, 93), (70, 105, 90, 93), (100, 236, 151, 186),
    (126, 42, 145, 79), (174, 64, 151, 107), (199, 146, 171, 165), (220, 158, 238, 186),
    (242, 119, 136, 158),
], dtype=np.int64)
# fmt: on
# sha256 of TF's uint8 output over all 2^24 RGB triples in (r, g, b) lexicographic order.
TF_GRAY_ALL_SHA256 = "824a76d81dad2c5a2cf1fa0b2c0a5afe7d871ec2970e4fa2809b53ddbecdca93"

REAL_STANDIN = pathlib.Path(image.DEFAULT_STANDIN_DIR)
REAL_STANDIN_INSTALLED = all(
    (REAL_STANDIN / name).is_file() for pair in image.STANDIN_FILES.values() for name in pair
)


# ----------------------------------------------------------------------------------------------
# Grayscale and tokens
# ----------------------------------------------------------------------------------------------


def test_gray_matches_tensorflow_on_order_sensitive_triples():
    rgb = TF_GRAY[:, :3].astype(np.uint8)
    np.testing.assert_array_equal(image.rgb_to_gray_lra(rgb), TF_GRAY[:, 3])


def test_gray_matches_tensorflow_on_all_rgb_triples():
    v = np.arange(256, dtype=np.uint8)
    rgb = np.empty((256, 256, 256, 3), dtype=np.uint8)
    rgb[..., 0] = v[:, None, None]
    rgb[..., 1] = v[None, :, None]
    rgb[..., 2] = v[None, None, :]
    gray = image.rgb_to_gray_lra(rgb)
    assert gray.shape == (256, 256, 256) and gray.dtype == np.uint8
    assert hashlib.sha256(gray.tobytes()).hexdigest() == TF_GRAY_ALL_SHA256


def test_gray_known_values_and_shapes():
    # 255 * w * 255.5 / 255 truncated: red 76.37, green 149.98 (not 150), blue 29.13, white 255.47
    rgb = np.array([[[255, 0, 0], [0, 255, 0]], [[0, 0, 255], [255, 255, 255]]], np.uint8)
    np.testing.assert_array_equal(image.rgb_to_gray_lra(rgb), [[76, 149], [29, 255]])
    grays = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(image.rgb_to_gray_lra(np.stack([grays] * 3, -1)), grays)
    with pytest.raises(ValueError, match="uint8"):
        image.rgb_to_gray_lra(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"\[\.\.\., 3\]"):
        image.rgb_to_gray_lra(np.zeros((2, 4), np.uint8))


def test_pixels_to_tokens_both_conventions():
    pixels = np.array([[[0, 1], [254, 255]], [[7, 0], [0, 9]]], np.uint8)
    ours = image.pixels_to_tokens(pixels, zero_is_padding=False)
    lra = image.pixels_to_tokens(pixels, zero_is_padding=True)
    assert ours.dtype == lra.dtype == np.uint16 and ours.shape == (2, 4)
    np.testing.assert_array_equal(ours, [[1, 2, 255, 256], [8, 1, 1, 10]])
    np.testing.assert_array_equal(lra, [[0, 1, 254, 255], [7, 0, 0, 9]])
    assert ours.max() < image.VOCAB_SIZE
    with pytest.raises(ValueError, match=r"\[n, H, W\]"):
        image.pixels_to_tokens(np.zeros((2, 4), np.uint8), False)


# ----------------------------------------------------------------------------------------------
# CIFAR-10 python pickles
# ----------------------------------------------------------------------------------------------


def _batch(rng, n):
    return rng.integers(0, 256, (n, 3072), dtype=np.uint8), rng.integers(0, 10, n).tolist()


def _expected_gray(data):
    # Independent of the reader's reshape: pixel k of the row-major 32x32 image is
    # (data[k], data[1024 + k], data[2048 + k]).
    rgb = np.stack([data[:, :1024], data[:, 1024:2048], data[:, 2048:]], axis=-1)
    return image.rgb_to_gray_lra(rgb)  # [n, 1024]


def _write_cifar(root: pathlib.Path, per_batch=10, seed=0):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    written = {}
    for name in image.CIFAR_FILES:
        data, labels = _batch(rng, per_batch)
        image.write_cifar_batch(folder / name, data, labels)
        written[name] = (data, labels)
    return folder, written


def test_cifar_batch_round_trip(tmp_path):
    data, labels = _batch(np.random.default_rng(1), 1200)  # > 1000 labels: two APPENDS blocks
    path = tmp_path / "data_batch_1"
    image.write_cifar_batch(path, data, labels, batch_label="training batch 1 of 5")
    got_data, got_labels = image.read_cifar_batch(path)
    np.testing.assert_array_equal(got_data, data)
    np.testing.assert_array_equal(got_labels, labels)
    assert got_labels.dtype == np.int32


def test_cifar_writer_uses_the_python2_format(tmp_path):
    data, labels = _batch(np.random.default_rng(2), 3)
    path = tmp_path / "test_batch"
    image.write_cifar_batch(path, data, labels, batch_label="testing batch 1 of 1")
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
    got_data, got_labels = image.read_cifar_batch(path)
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
        image.read_cifar_batch(path)
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
            image.read_cifar_batch(path)
    with pytest.raises(cache.DataError, match=r"nope: CIFAR-10 batch file not found"):
        image.read_cifar_batch(tmp_path / "nope")


def _official(directory, **kw):
    d = image.data_config()
    d.dir = str(directory)
    d.update(kw)
    return d


def test_load_official_splits_tokens_and_order(tmp_path):
    folder, written = _write_cifar(tmp_path / "src")
    splits, desc = image.load(_official(tmp_path / "src"), tmp_path / "cache")
    train_data = np.concatenate([written[n][0] for n in image.CIFAR_TRAIN_FILES])
    train_labels = sum((written[n][1] for n in image.CIFAR_TRAIN_FILES), [])
    gray = _expected_gray(train_data)
    expected = {
        "train": (gray[:45], train_labels[:45]),  # first 90% of the 50 training images
        "val": (gray[45:], train_labels[45:]),
        "test": (_expected_gray(written["test_batch"][0]), written["test_batch"][1]),
    }
    assert set(splits) == {"train", "val", "test"}
    for name, (pixels, labels) in expected.items():
        tokens = splits[name]["tokens"]
        assert tokens.dtype == np.uint16 and tokens.shape == (len(labels), 1024)
        np.testing.assert_array_equal(tokens, pixels.astype(np.uint16) + 1)
        assert splits[name]["label"].dtype == np.int32
        np.testing.assert_array_equal(splits[name]["label"], labels)
    assert desc["dataset"] == "CIFAR-10 (grayscale, LRA Image)" and desc["source"] == "official"
    assert desc["sizes"] == {"train": 45, "val": 5, "test": 10}
    assert desc["cache"].startswith("lra/image-cifar10-") and desc["dir"] == str(folder)
    assert str(tmp_path / "cache") not in json.dumps(desc)
    # dir may name the batches folder itself; the LRA quirk gives raw pixels.
    quirk, desc2 = image.load(_official(folder, zero_is_padding=True), tmp_path / "cache")
    for name in splits:
        np.testing.assert_array_equal(quirk[name]["tokens"], splits[name]["tokens"] - 1)
    assert desc2["cache"] == desc["cache"] and "quirk" in desc2["tokens"]


def test_load_official_directory_errors(tmp_path):
    root = tmp_path / "cache"
    all_six = r"data_batch_1, data_batch_2, data_batch_3, data_batch_4, data_batch_5, test_batch"
    d = image.data_config()
    with pytest.raises(cache.DataError, match=f"needs config.data.dir.*{all_six}"):
        image.load(d, root)
    with pytest.raises(cache.DataError, match=f"absent: CIFAR-10 folder not found.*{all_six}"):
        image.load(_official(tmp_path / "absent"), root)
    folder, _ = _write_cifar(tmp_path / "src")
    (folder / "data_batch_3").unlink()
    (folder / "test_batch").unlink()
    with pytest.raises(cache.DataError, match=r"batches-py: missing data_batch_3, test_batch;"):
        image.load(_official(tmp_path / "src"), root)
    # A malformed batch is reported with its path while building.
    folder2, _ = _write_cifar(tmp_path / "src2")
    _bad_batch(folder2 / "data_batch_4", {b"data": np.zeros((1, 3072), np.uint8), b"labels": [11]})
    with pytest.raises(cache.DataError, match=r"src2/cifar-10-batches-py/data_batch_4: .*record 0"):
        image.load(_official(tmp_path / "src2"), root)
    assert not any(p.name.startswith("image-") for p in root.iterdir())  # nothing half-built


# ----------------------------------------------------------------------------------------------
# IDX files and the Fashion-MNIST stand-in
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["x-idx3-ubyte.gz", "x-idx3-ubyte"])
def test_idx_round_trip(tmp_path, name):
    images = np.random.default_rng(4).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    image.write_idx(tmp_path / name, images)
    raw = (tmp_path / name).read_bytes()
    raw = gzip.decompress(raw) if name.endswith(".gz") else raw
    assert raw[:16] == struct.pack(">IIII", 0x803, 5, 28, 28)  # the IDX header, big-endian
    np.testing.assert_array_equal(image.read_idx(tmp_path / name, 3), images)
    labels = np.arange(7, dtype=np.uint8)
    image.write_idx(tmp_path / "l.gz", labels)
    assert gzip.decompress((tmp_path / "l.gz").read_bytes())[:8] == struct.pack(">II", 0x801, 7)
    np.testing.assert_array_equal(image.read_idx(tmp_path / "l.gz", 1), labels)


def test_idx_errors(tmp_path):
    image.write_idx(tmp_path / "labels.gz", np.arange(4, dtype=np.uint8))
    with pytest.raises(
        cache.DataError, match=r"labels.gz: .*magic 0x00000801, expected 0x00000803"
    ):
        image.read_idx(tmp_path / "labels.gz", 3)
    raw = struct.pack(">IIII", 0x803, 2, 28, 28) + bytes(2 * 784)
    (tmp_path / "short.gz").write_bytes(gzip.compress(raw[:-1]))
    with pytest.raises(cache.DataError, match=r"short.gz: truncated: .*1568 data bytes.*1567"):
        image.read_idx(tmp_path / "short.gz", 3)
    (tmp_path / "long.gz").write_bytes(gzip.compress(raw + b"\0"))
    with pytest.raises(cache.DataError, match=r"long.gz: trailing bytes"):
        image.read_idx(tmp_path / "long.gz", 3)
    (tmp_path / "hdr.gz").write_bytes(gzip.compress(raw[:10]))
    with pytest.raises(cache.DataError, match=r"hdr.gz: truncated header"):
        image.read_idx(tmp_path / "hdr.gz", 3)
    (tmp_path / "plain.gz").write_bytes(raw)
    with pytest.raises(cache.DataError, match=r"plain.gz: corrupt gzip"):
        image.read_idx(tmp_path / "plain.gz", 3)
    (tmp_path / "cut.gz").write_bytes(gzip.compress(raw)[:-12])
    with pytest.raises(cache.DataError, match=r"cut.gz: corrupt gzip"):
        image.read_idx(tmp_path / "cut.gz", 3)
    with pytest.raises(cache.DataError, match=r"none.gz: IDX file not found"):
        image.read_idx(tmp_path / "none.gz", 3)


def _write_standin(folder: pathlib.Path, n_train=20, n_test=10, seed=5):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    made = {}
    for split, n in (("train", n_train), ("test", n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        images[:, :5] = 0  # some black background
        labels = rng.integers(0, 10, n).astype(np.uint8)
        image_file, label_file = image.STANDIN_FILES[split]
        image.write_idx(folder / image_file, images)
        image.write_idx(folder / label_file, labels)
        made[split] = (images, labels)
    return made


def _standin(folder, **kw):
    d = image.data_config()
    d.source = "standin"
    d.standin_dir = str(folder)
    d.update(kw)
    return d


def test_load_standin_pads_and_splits(tmp_path):
    made = _write_standin(tmp_path / "fm")
    splits, desc = image.load(_standin(tmp_path / "fm"), tmp_path / "cache")
    train_images, train_labels = made["train"]
    expected = {
        "train": (train_images[:18], train_labels[:18]),  # first 90% of 20
        "val": (train_images[18:], train_labels[18:]),
        "test": made["test"],
    }
    for name, (images, labels) in expected.items():
        tokens = splits[name]["tokens"].reshape(-1, 32, 32)
        assert splits[name]["tokens"].dtype == np.uint16
        np.testing.assert_array_equal(tokens[:, 2:30, 2:30], images.astype(np.uint16) + 1)
        border = np.ones((32, 32), bool)
        border[2:30, 2:30] = False
        assert (tokens[:, border] == 1).all()  # two zero pixels on each side, as token 1
        np.testing.assert_array_equal(splits[name]["label"], labels)
        assert splits[name]["label"].dtype == np.int32
    assert desc["dataset"] == "Fashion-MNIST (stand-in for grayscale CIFAR-10, LRA Image)"
    assert desc["standin_for"] == "grayscale CIFAR-10 (LRA Image)" and desc["source"] == "standin"
    assert desc["sizes"] == {"train": 18, "val": 2, "test": 10}
    zeros = (np.pad(made["test"][0], ((0, 0), (2, 2), (2, 2))) == 0).mean()
    assert desc["zero_pixel_fraction"]["test"] == pytest.approx(zeros, abs=1e-6)
    assert str(tmp_path / "cache") not in json.dumps(desc)
    quirk, _ = image.load(_standin(tmp_path / "fm", zero_is_padding=True), tmp_path / "cache")
    assert (quirk["test"]["tokens"].reshape(-1, 32, 32)[:, :2] == 0).all()  # masked as pad


def test_standin_not_installed(tmp_path):
    with pytest.raises(cache.DataError) as e:
        image.load(_standin(tmp_path / "missing"), tmp_path / "cache")
    msg = str(e.value)
    assert "apt-get install dataset-fashion-mnist" in msg and "config.data.standin_dir" in msg
    assert "train-images-idx3-ubyte.gz" in msg and str(tmp_path / "missing") in msg
    _write_standin(tmp_path / "partial")
    (tmp_path / "partial" / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(cache.DataError, match=r"partial: .*missing t10k-labels-idx1-ubyte.gz\."):
        image.load(_standin(tmp_path / "partial"), tmp_path / "cache")


def test_standin_file_errors(tmp_path):
    folder = tmp_path / "fm"
    _write_standin(folder)
    image.write_idx(folder / "t10k-labels-idx1-ubyte.gz", np.zeros(9, np.uint8))
    with pytest.raises(cache.DataError, match=r"t10k-labels-idx1-ubyte.gz: 9 labels for 10 images"):
        image.read_fashion_mnist(folder)
    image.write_idx(folder / "t10k-labels-idx1-ubyte.gz", np.array([0] * 6 + [10] + [0] * 3, "u1"))
    with pytest.raises(cache.DataError, match=r"t10k-labels-idx1-ubyte.gz: record 6: label 10"):
        image.read_fashion_mnist(folder)
    image.write_idx(folder / "train-images-idx3-ubyte.gz", np.zeros((20, 32, 32), np.uint8))
    with pytest.raises(cache.DataError, match=r"train-images-idx3-ubyte.gz: images are \[32, 32\]"):
        image.read_fashion_mnist(folder)


# ----------------------------------------------------------------------------------------------
# Cache, config
# ----------------------------------------------------------------------------------------------


def test_second_load_is_a_cache_hit(tmp_path, monkeypatch):
    _write_standin(tmp_path / "fm")
    _write_cifar(tmp_path / "cifar")
    configs = {
        "read_fashion_mnist": _standin(tmp_path / "fm"),
        "read_cifar10": _official(tmp_path / "cifar"),
    }
    for reader, d in configs.items():
        first, desc = image.load(d, tmp_path / "cache")
        assert (tmp_path / desc["cache"].replace("lra/", "cache/", 1) / "spec.json").is_file()

        def fail(*args, **kwargs):
            raise AssertionError("rebuilt instead of reading the cache")

        with monkeypatch.context() as m:
            m.setattr(image, reader, fail)
            second, desc2 = image.load(d, tmp_path / "cache")
        assert desc2 == desc
        for name in first:
            for key in ("tokens", "label"):
                np.testing.assert_array_equal(second[name][key], first[name][key])
                assert second[name][key].dtype == first[name][key].dtype


def test_changed_source_file_rebuilds(tmp_path):
    _write_standin(tmp_path / "fm", seed=1)
    _, desc = image.load(_standin(tmp_path / "fm"), tmp_path / "cache")
    made = _write_standin(tmp_path / "fm", n_test=12, seed=2)
    splits, desc2 = image.load(_standin(tmp_path / "fm"), tmp_path / "cache")
    assert desc2["cache"] != desc["cache"] and desc2["sizes"]["test"] == 12
    np.testing.assert_array_equal(splits["test"]["label"], made["test"][1])


def test_subsets_and_config_errors(tmp_path):
    made = _write_standin(tmp_path / "fm")
    d = _standin(tmp_path / "fm", num_train=3, num_val=1, num_test=4)
    splits, desc = image.load(d, tmp_path / "cache")
    assert desc["sizes"] == {"train": 3, "val": 1, "test": 4}
    np.testing.assert_array_equal(splits["train"]["label"], made["train"][1][:3])
    np.testing.assert_array_equal(splits["val"]["label"], made["train"][1][18:19])
    with pytest.raises(ValueError, match=r"num_val=3: the val split has 2 examples"):
        image.load(_standin(tmp_path / "fm", num_val=3), tmp_path / "cache")
    with pytest.raises(ValueError, match=r"max_length=2048.*32x32 = 1024"):
        image.load(_standin(tmp_path / "fm", max_length=2048), tmp_path / "cache")
    with pytest.raises(ValueError, match=r"source='generated'"):
        image.load(_standin(tmp_path / "fm", source="generated"), tmp_path / "cache")


def test_data_config_defaults():
    d = image.data_config()
    assert d.source == "official" and d.dir == "" and d.max_length == 1024
    assert d.zero_is_padding is False and d.standin_dir == "/usr/share/datasets/fashion-mnist"
    assert {"seed", "num_train", "num_val", "num_test"} <= set(d.keys())
    assert image.NUM_CLASSES == 10 and image.VOCAB_SIZE == 257


@pytest.mark.skipif(not REAL_STANDIN_INSTALLED, reason="Debian dataset-fashion-mnist not installed")
def test_real_fashion_mnist_package(tmp_path):
    d = _standin(REAL_STANDIN, num_train=2000, num_val=500, num_test=1000)
    splits, desc = image.load(d, tmp_path)
    assert desc["sizes"] == {"train": 2000, "val": 500, "test": 1000}
    # The full package: 60,000 + 10,000 images, split 54,000 / 6,000 / 10,000.
    spec = json.loads((tmp_path / desc["cache"][len("lra/") :] / "spec.json").read_text())
    assert spec["source"] == "standin"
    full = {s: cache.load_arrays(tmp_path / desc["cache"][4:] / f"{s}.npz") for s in splits}
    assert {s: len(a["label"]) for s, a in full.items()} == {
        "train": 54000,
        "val": 6000,
        "test": 10000,
    }
    assert np.bincount(full["test"]["label"]).tolist() == [1000] * 10
    assert (full["test"]["pixels"][:, :2] == 0).all() and full["test"]["pixels"].max() == 255
    # Black backgrounds: with zero_is_padding most tokens would be masked.
    assert desc["zero_pixel_fraction"]["train"] > 0.5
