"""Vision readers on tiny files written in each official layout (CIFAR-10/100 python pickles,
Tiny-ImageNet's release folder, ImageNet-style class folders, the Fashion-MNIST IDX files),
read back exactly with their class order; errors name the file; splits, subsets and the
preprocessing shapes."""

import pathlib

import numpy as np
import pytest
from PIL import Image

from attnbench import errors
from attnbench.data import cache
from attnbench.data.formats import cifar, fashion_mnist, idx
from vision import data


def _planar(images):
    return images.transpose(0, 3, 1, 2).reshape(len(images), -1)


def _write_cifar10(root: pathlib.Path, per_batch=4, seed=0):
    folder = root / cifar.CIFAR10_SUBDIR
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    written = {}
    for name in cifar.CIFAR10_FILES:
        images = rng.integers(0, 256, (per_batch, 32, 32, 3), dtype=np.uint8)
        labels = rng.integers(0, 10, per_batch).tolist()
        cifar.write_batch(folder / name, _planar(images), labels)
        written[name] = (images, labels)
    return written


def _config(dataset, directory, **over):
    d = data.data_config(dataset)
    d.dir = str(directory)
    d.update(over)
    return d


def test_cifar10_official_reads_pixels_and_labels_in_file_order(tmp_path):
    written = _write_cifar10(tmp_path)
    splits, desc = data.load(_config("cifar10", tmp_path))
    train = [written[n] for n in cifar.CIFAR10_TRAIN_FILES]
    expect_images = np.concatenate([t[0] for t in train])
    expect_labels = sum((t[1] for t in train), [])
    got = [splits["train"][i] for i in range(len(splits["train"]))]
    np.testing.assert_array_equal(np.stack([g["image"] for g in got]), expect_images)
    assert [int(g["label"]) for g in got] == expect_labels
    test = splits["test"]
    np.testing.assert_array_equal(test.arrays["image"], written[cifar.CIFAR10_TEST_FILE][0])
    assert splits["val"] is test  # model selection on the test split (the papers' tables)
    assert desc["num_classes"] == 10 and desc["sizes"] == {"train": 20, "val": 4, "test": 4}


def test_cifar100_reads_fine_labels(tmp_path):
    folder = tmp_path / cifar.CIFAR100_SUBDIR
    folder.mkdir()
    rng = np.random.default_rng(1)
    written = {}
    for split in cifar.CIFAR100_FILES:
        images = rng.integers(0, 256, (3, 32, 32, 3), dtype=np.uint8)
        fine, coarse = [99, 0, 42], [19, 0, 7]
        cifar.write_batch(
            folder / split,
            _planar(images),
            {"fine_labels": fine, "coarse_labels": coarse},
            batch_label=split,
        )
        written[split] = (images, fine)
    splits, desc = data.load(_config("cifar100", tmp_path))
    np.testing.assert_array_equal(splits["train"].arrays["image"], written["train"][0])
    assert splits["test"].arrays["label"].tolist() == [99, 0, 42]
    assert desc["num_classes"] == 100


def _jpeg(path: pathlib.Path, color, size=(12, 10)):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(path, quality=95)


def _write_tiny(root: pathlib.Path, wnids=("n02", "n01", "n03")):
    """Tiny-ImageNet's release layout, the class list in wnids.txt NOT sorted (as released)."""
    root.mkdir(parents=True)
    (root / "wnids.txt").write_text("\n".join(wnids) + "\n")
    for k, w in enumerate(wnids):
        for i in range(2):
            _jpeg(root / "train" / w / "images" / f"{w}_{i}.JPEG", (10 * k, 100 + i, 50))
        (root / "train" / w / f"{w}_boxes.txt").write_text("")
    rows = []
    for i, w in enumerate(("n03", "n01", "n02", "n01")):
        name = f"val_{i}.JPEG"
        _jpeg(root / "val" / "images" / name, (200, 10 * i, 0))
        rows.append(f"{name}\t{w}\t0\t0\t10\t10")
    (root / "val" / "val_annotations.txt").write_text("\n".join(rows) + "\n")
    return root


def test_tiny_imagenet_layout_class_order_and_val_annotations(tmp_path):
    root = _write_tiny(tmp_path / "tiny-imagenet-200")
    # config.data.dir may name the release folder or its parent
    for directory in (root, tmp_path):
        splits, desc = data.load(_config("tiny_imagenet", directory, num_classes=3))
        train, test = splits["train"], splits["test"]
        assert train.classes == ("n01", "n02", "n03")  # sorted wnids: torchvision ImageFolder
        assert [pathlib.Path(f).name for f in train.files][:2] == ["n01_0.JPEG", "n01_1.JPEG"]
        assert train.labels.tolist() == [0, 0, 1, 1, 2, 2]
        assert [pathlib.Path(f).name for f in test.files] == [f"val_{i}.JPEG" for i in range(4)]
        assert test.labels.tolist() == [2, 0, 1, 0]
        example = test[1]
        assert example["image"].shape == (10, 12, 3) and int(example["label"]) == 0
        assert desc["num_classes"] == 3


def test_tiny_imagenet_errors_name_the_file(tmp_path):
    root = _write_tiny(tmp_path / "t")
    (root / "val" / "val_annotations.txt").write_text("val_0.JPEG\tn99\t0\t0\t1\t1\n")
    with pytest.raises(cache.DataError, match=r"val_annotations.txt: line 1: .*wnid"):
        data.read_tiny_imagenet(root)
    (root / "val" / "val_annotations.txt").write_text("missing.JPEG\tn01\t0\t0\t1\t1\n")
    with pytest.raises(cache.DataError, match=r"missing.JPEG not found"):
        data.read_tiny_imagenet(root)
    (root / "wnids.txt").write_text("n01\nn02\n")
    with pytest.raises(cache.DataError, match=r"wnids.txt: lists 2 classes but train/ has 3"):
        data.read_tiny_imagenet(root)
    with pytest.raises(cache.DataError, match=r"wnids.txt: not found"):
        data.read_tiny_imagenet(tmp_path / "nowhere")


@pytest.mark.parametrize("name", ["wnids.txt", "val/val_annotations.txt"])
def test_tiny_imagenet_text_that_is_not_utf8_names_the_file(tmp_path, name):
    root = _write_tiny(tmp_path / "t")
    path = root / name
    path.write_bytes(path.read_bytes().replace(b"n01", b"n\xff1", 1))
    with pytest.raises(cache.DataError, match=rf"{name}: not UTF-8 text \(byte 0xff at offset"):
        data.read_tiny_imagenet(root)


def test_a_training_class_folder_without_images_is_an_error_naming_it(tmp_path):
    root = _write_tiny(tmp_path / "t")
    for image in (root / "train" / "n02" / "images").iterdir():
        image.unlink()  # n02_boxes.txt stays: no image is left
    with pytest.raises(cache.DataError, match=r"train/n02: class folder without images"):
        data.load(_config("tiny_imagenet", root, num_classes=3))
    for split, n in (("train", 1), ("val", 1)):
        for synset in ("n01440764", "n01443537", "n01484850"):
            for i in range(n):
                _jpeg(tmp_path / "in" / split / synset / f"{synset}_{i}.JPEG", (0, i, 0))
    (tmp_path / "in" / "val" / "n01484850" / "n01484850_0.JPEG").unlink()  # val may lack one
    assert data.read_class_folders(tmp_path / "in")["test"].labels.tolist() == [0, 1]
    for image in (tmp_path / "in" / "train" / "n01443537").iterdir():
        image.unlink()
    (tmp_path / "in" / "train" / "n01484850" / "n01484850_0.JPEG").rename(
        tmp_path / "in" / "train" / "n01484850" / "notes.txt"
    )
    with pytest.raises(
        cache.DataError,
        match=r"train/n01443537: class folder without images \(.*\) \(and 1 more class folders\)",
    ):
        data.load(_config("imagenet", tmp_path / "in", num_classes=0))


def test_corrupt_jpeg_is_an_error_naming_it(tmp_path):
    root = _write_tiny(tmp_path / "t")
    bad = root / "val" / "images" / "val_2.JPEG"
    bad.write_bytes(b"not a jpeg")
    splits, _ = data.load(_config("tiny_imagenet", root, num_classes=3))
    with pytest.raises(cache.DataError, match=r"val_2.JPEG: cannot decode"):
        splits["test"][2]


def test_imagenet_class_folders(tmp_path):
    for split, n in (("train", 3), ("val", 1)):
        for k, synset in enumerate(("n01440764", "n01443537")):
            for i in range(n):
                _jpeg(tmp_path / split / synset / f"{synset}_{i}.JPEG", (k * 100, i, 0))
    splits, desc = data.load(_config("imagenet", tmp_path, num_classes=0))
    assert splits["train"].classes == ("n01440764", "n01443537")
    assert splits["train"].labels.tolist() == [0, 0, 0, 1, 1, 1]
    assert splits["test"].labels.tolist() == [0, 1]
    assert desc["num_classes"] == 2
    with pytest.raises(cache.DataError, match="2 classes found, config.data.num_classes is 1000"):
        data.load(_config("imagenet", tmp_path))  # a partial copy against the 1000 classes
    with pytest.raises(cache.DataError, match=r"train/train: not found"):
        data.load(_config("imagenet", tmp_path / "train"))


def test_validation_images_alone_serve_an_evaluation_only_run(tmp_path):
    """No train/ (the ILSVRC-2012 val images alone, for a released checkpoint): an error for a
    run that trains; for an evaluation-only run the class list is val/'s sorted folders."""
    synsets = ("n01440764", "n01443537", "n01484850")
    for k, synset in enumerate(synsets):
        for i in range(2):
            _jpeg(tmp_path / "val" / synset / f"v_{synset}_{i}.JPEG", (k * 80, i, 0))
    with pytest.raises(cache.DataError, match=r"train: not found"):
        data.load(_config("imagenet", tmp_path, num_classes=0))
    splits, desc = data.load(_config("imagenet", tmp_path, num_classes=0), evaluate_only=True)
    assert len(splits["train"]) == 0 and splits["train"].classes == synsets
    assert splits["test"].labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert desc["num_classes"] == 3 and desc["classes_from"].startswith("val/")
    with pytest.raises(cache.DataError, match="3 classes found, config.data.num_classes is 1000"):
        data.load(_config("imagenet", tmp_path), evaluate_only=True)  # not all 1,000 classes
    (tmp_path / "val" / "n09999999").mkdir()  # an empty class folder would shift the head
    with pytest.raises(cache.DataError, match=r"n09999999: class folder without images"):
        data.load(_config("imagenet", tmp_path, num_classes=0), evaluate_only=True)


def _write_standin(folder: pathlib.Path, n=(30, 10)):
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for (images_file, labels_file), count in zip(fashion_mnist.FILES.values(), n, strict=True):
        idx.write(folder / images_file, rng.integers(0, 256, (count, 28, 28), dtype=np.uint8))
        idx.write(folder / labels_file, rng.integers(0, 10, count).astype(np.uint8))


def test_standin_is_fashion_mnist_padded_to_32_rgb_and_labelled(tmp_path):
    _write_standin(tmp_path / "fm")
    d = _config("cifar100", "", source="standin", standin_dir=str(tmp_path / "fm"))
    splits, desc = data.load(d)
    image = splits["train"][0]["image"]
    raw = idx.read(tmp_path / "fm" / fashion_mnist.FILES["train"][0], 3)[0]
    assert image.shape == (32, 32, 3)
    np.testing.assert_array_equal(image[2:30, 2:30, 1], raw)
    assert image[:2].max() == 0 and (image[..., 0] == image[..., 2]).all()
    assert "standin" in desc and desc["num_classes"] == 10
    with pytest.raises(cache.DataError, match="dataset-fashion-mnist"):
        data.load(_config("cifar10", "", source="standin", standin_dir=str(tmp_path / "no")))


def test_heldout_validation_and_seeded_subsets(tmp_path):
    _write_standin(tmp_path / "fm")
    d = _config("cifar10", "", source="standin", standin_dir=str(tmp_path / "fm"))
    d.val_from_train, d.num_train, d.num_test = 6, 10, 5
    splits, desc = data.load(d)
    assert desc["sizes"] == {"train": 10, "val": 6, "test": 5}
    train_ids = {splits["train"][i]["image"].tobytes() for i in range(10)}
    val_ids = {splits["val"][i]["image"].tobytes() for i in range(6)}
    assert not train_ids & val_ids
    again, _ = data.load(d)
    assert [again["train"][i]["label"] for i in range(10)] == [
        splits["train"][i]["label"] for i in range(10)
    ]
    d.num_test = 11
    with pytest.raises(errors.ConfigError, match="num_test=11"):
        data.load(d)


def test_official_without_dir_and_unknown_names_are_config_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))
    with pytest.raises(cache.DataError, match="fetch it with `attnbench-data fetch cifar10`"):
        data.load(data.data_config("cifar10"))
    with pytest.raises(cache.DataError, match="`attnbench-data fetch tiny_imagenet`"):
        data.load(data.data_config("tiny_imagenet"))
    with pytest.raises(cache.DataError, match="needs config.data.dir"):
        data.load(data.data_config("folder"))
    with pytest.raises(errors.ConfigError, match="unknown vision dataset 'cifar11'"):
        data.data_config("cifar11")
    d = data.data_config("cifar10")
    d.augment = "autoaugment"
    with pytest.raises(errors.ConfigError, match="augment='autoaugment'"):
        data.transforms_for(d)
    d.augment, d.rand_augment = "crop_flip", "rand-x9"
    with pytest.raises(errors.ConfigError, match="unknown part 'x9'"):
        data.transforms_for(d)


def test_rand_augment_strings_parse_as_timm():
    assert data.parse_rand_augment("rand-m9-mstd0.5-inc1") == {
        "num_ops": 2,
        "magnitude": 9.0,
        "magnitude_std": 0.5,
        "increasing": True,
    }
    assert data.parse_rand_augment("rand-n3-m7")["num_ops"] == 3


@pytest.mark.parametrize("augment", ["crop_flip", "inception", "none"])
def test_preprocessing_gives_normalised_float_images_at_the_model_size(augment):
    d = data.data_config("tiny_imagenet")
    d.augment, d.image_size = augment, 48
    d.rand_augment, d.random_erasing = "rand-m9-mstd0.5-inc1", 0.5
    train, evaluate = data.transforms_for(d)
    image = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    example = {"image": image, "label": np.int32(3)}
    out = train(dict(example), np.random.default_rng(1))
    again = train(dict(example), np.random.default_rng(1))
    assert out["image"].shape == (48, 48, 3) and out["image"].dtype == np.float32
    np.testing.assert_array_equal(out["image"], again["image"])  # a function of (example, rng)
    ev = evaluate(dict(example))
    assert ev["image"].shape == (48, 48, 3) and ev["image"].dtype == np.float32
    assert int(ev["label"]) == 3
