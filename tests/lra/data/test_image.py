"""Tests of lra/data/image.py: TF-exact grayscale, the LRA splits of CIFAR-10, the stand-in, cache.

The file formats themselves are tested in tests/attnbench/data/formats/test_cifar.py and
test_idx.py."""

from __future__ import annotations

import hashlib
import json
import pathlib
import pickle

import numpy as np
import pytest

from attnbench.data import cache
from attnbench.data.formats import cifar, idx
from lra.data import image

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
        cifar.write_batch(folder / name, data, labels)
        written[name] = (data, labels)
    return folder, written


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


def test_load_official_directory_errors(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "data-root"))
    all_six = r"data_batch_1, data_batch_2, data_batch_3, data_batch_4, data_batch_5, test_batch"
    d = image.data_config()
    with pytest.raises(
        cache.DataError,
        match=r"data-root/cifar-10-batches-py\) and config.data.dir is empty: "
        r"fetch it with `attnbench-data fetch cifar10`",
    ):
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
    bad = {b"data": np.zeros((1, 3072), np.uint8), b"labels": [11]}
    (folder2 / "data_batch_4").write_bytes(pickle.dumps(bad, protocol=2))
    with pytest.raises(cache.DataError, match=r"src2/cifar-10-batches-py/data_batch_4: .*record 0"):
        image.load(_official(tmp_path / "src2"), root)
    assert not any(p.name.startswith("image-") for p in root.iterdir())  # nothing half-built


# ----------------------------------------------------------------------------------------------
# IDX files and the Fashion-MNIST stand-in
# ----------------------------------------------------------------------------------------------


def _write_standin(folder: pathlib.Path, n_train=20, n_test=10, seed=5):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    made = {}
    for split, n in (("train", n_train), ("test", n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        images[:, :5] = 0  # some black background
        labels = rng.integers(0, 10, n).astype(np.uint8)
        image_file, label_file = image.STANDIN_FILES[split]
        idx.write(folder / image_file, images)
        idx.write(folder / label_file, labels)
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
    idx.write(folder / "t10k-labels-idx1-ubyte.gz", np.zeros(9, np.uint8))
    with pytest.raises(cache.DataError, match=r"t10k-labels-idx1-ubyte.gz: 9 labels for 10 images"):
        image.read_fashion_mnist(folder)
    idx.write(folder / "t10k-labels-idx1-ubyte.gz", np.array([0] * 6 + [10] + [0] * 3, "u1"))
    with pytest.raises(cache.DataError, match=r"t10k-labels-idx1-ubyte.gz: record 6: label 10"):
        image.read_fashion_mnist(folder)
    idx.write(folder / "train-images-idx3-ubyte.gz", np.zeros((20, 32, 32), np.uint8))
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
