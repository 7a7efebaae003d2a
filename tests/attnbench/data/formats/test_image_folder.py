"""Tests of attnbench/data/formats/image_folder.py: the class-folder layout read lazily, through
attnbench.data.pipeline."""

from __future__ import annotations

import pickle
import struct
import warnings
import zlib

import numpy as np
import pytest
from PIL import Image

from attnbench.data import cache, pipeline
from attnbench.data.formats import image_folder


def _write(root, layout, seed=0):
    """layout: {class: [(relative name, (h, w))]} -> {path: rgb array} written as PNG/JPEG."""
    rng = np.random.default_rng(seed)
    written = {}
    for name, files in layout.items():
        for rel, (h, w) in files:
            path = root / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            rgb = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
            Image.fromarray(rgb).save(path)
            written[str(path)] = rgb
    return written


def test_classes_sorted_files_recursive_and_decoded(tmp_path):
    written = _write(
        tmp_path,
        {
            "n02": [("b.png", (5, 7)), ("a.PNG", (4, 4))],
            "n01": [("images/x.png", (3, 6))],  # Tiny-ImageNet keeps train images in images/
            "n03": [],
        },
    )
    (tmp_path / "n03").mkdir()  # an empty class folder is still a class
    (tmp_path / "n01" / "notes.txt").write_text("not an image")
    source = image_folder.ImageFolder(tmp_path)
    assert source.classes == ("n01", "n02", "n03")
    assert [p.split(str(tmp_path))[1] for p in source.files] == [
        "/n01/images/x.png",
        "/n02/a.PNG",
        "/n02/b.png",
    ]
    assert source.labels.tolist() == [0, 1, 1] and len(source) == 3
    for i, path in enumerate(source.files):
        example = source[i]
        np.testing.assert_array_equal(example["image"], written[path])  # PNG is lossless
        assert example["label"] == source.labels[i]
    # A split with fewer classes keeps the training indices; the source pickles (grain workers).
    val = image_folder.ImageFolder(tmp_path, classes=("n00", "n01", "n02", "n03"))
    assert val.labels.tolist() == [1, 2, 2]
    again = pickle.loads(pickle.dumps(val))
    np.testing.assert_array_equal(again[2]["image"], val[2]["image"])


def test_grayscale_and_palette_images_become_rgb(tmp_path):
    (tmp_path / "c").mkdir()
    gray = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    Image.fromarray(gray, mode="L").save(tmp_path / "c" / "g.png")
    img = image_folder.ImageFolder(tmp_path)[0]["image"]
    assert img.shape == (3, 4, 3)
    np.testing.assert_array_equal(img, np.repeat(gray[..., None], 3, axis=-1))


def test_errors_name_the_path(tmp_path):
    with pytest.raises(cache.DataError, match=r"absent: image folder not found; expected root/"):
        image_folder.ImageFolder(tmp_path / "absent")
    (tmp_path / "empty" / "c").mkdir(parents=True)
    with pytest.raises(cache.DataError, match=r"empty: no images"):
        image_folder.ImageFolder(tmp_path / "empty")
    _write(tmp_path / "two", {"a": [("x.png", (2, 2))], "b": [("y.png", (2, 2))]})
    with pytest.raises(cache.DataError, match=r"two: class folders not in the given classes: b"):
        image_folder.ImageFolder(tmp_path / "two", classes=("a",))
    bad = tmp_path / "bad" / "c" / "broken.jpg"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\xff\xd8 truncated jpeg")
    source = image_folder.ImageFolder(tmp_path / "bad")
    with pytest.raises(cache.DataError, match=r"broken.jpg: cannot decode as an image"):
        source[0]
    with pytest.raises(ValueError, match=r"label 3 is not an index into the 2 classes"):
        image_folder.ImageFolder.from_list(["a.png"], [3], classes=("x", "y"))


def test_from_list_through_the_input_pipeline(tmp_path):
    written = _write(tmp_path, {"img": [(f"{i}.png", (6, 6)) for i in range(5)]})
    files = sorted(written)
    labels = [0, 1, 0, 1, 1]
    source = image_folder.ImageFolder.from_list(files, labels, classes=("cat", "dog"))
    # Lazy decoding through attnbench.data.pipeline's evaluation batches: every example once,
    # weight-0 padding.
    batches = list(pipeline.eval_batches(source, batch_size=2))
    assert [b["weight"].tolist() for b in batches] == [[1, 1], [1, 1], [1, 0]]
    images = np.concatenate([b["image"] for b in batches])[:5]
    np.testing.assert_array_equal(images, np.stack([written[f] for f in files]))
    assert np.concatenate([b["label"] for b in batches])[:5].tolist() == labels


def _png_header(path, width, height):
    """A PNG whose header declares `width` x `height` 8-bit gray pixels (one row of data):
    Pillow's decompression-bomb check reads only the header."""

    def chunk(kind, data):
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(width + 1)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body + chunk(b"IEND", b""))


def test_a_decompression_bomb_is_an_error_naming_the_file(tmp_path):
    """Pillow's limit is kept (20,000^2 pixels is above twice it); the error names the file,
    also where Pillow's warning (above the limit, below twice it) is made an error."""
    bomb = tmp_path / "c" / "bomb.png"
    _png_header(bomb, 20_000, 20_000)
    source = image_folder.ImageFolder(tmp_path)
    with pytest.raises(cache.DataError, match=r"bomb\.png: refused by Pillow's decompression-bomb"):
        source[0]
    _png_header(bomb, 10_000, 10_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        with pytest.raises(cache.DataError, match=r"bomb\.png: refused by Pillow's"):
            source[0]


def test_an_image_above_the_warning_limit_is_decoded_with_a_warning_naming_it(
    tmp_path, monkeypatch
):
    written = _write(tmp_path, {"c": [("big.png", (10, 12))]})  # 120 pixels
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # warn above 100, refuse above 200
    with pytest.warns(Image.DecompressionBombWarning, match=r"big\.png: 12x10 pixels, above"):
        image = image_folder.ImageFolder(tmp_path)[0]["image"]
    np.testing.assert_array_equal(image, next(iter(written.values())))
