"""The vision datasets of `attnbench-data` (vision/data/sources.py) and the ImageNet val
reorganiser (vision/data/imagenet_val.py), on tiny files in the official layouts: Tiny-ImageNet's
zip served on 127.0.0.1 is fetched, arranged, verified and read by its config with an empty
`config.data.dir`; verify names a missing file, a wrong split size and a wrong class count, one
`problem:` line each; the val reorganiser's round trip, its refusals (nothing moved) and its
restart after a killed run; every missing-data error names the fetch command."""

import dataclasses
import hashlib
import io
import pathlib
import tarfile
import zipfile

import numpy as np
import pytest
import scipy.io
from PIL import Image

from attnbench import cli, tasks
from attnbench import config as config_lib
from attnbench.data import cache, catalog, fetch
from scripts import data as data_cli
from tests.scripts.test_data import server  # noqa: F401 (the fixture)
from vision import data as vision_data
from vision.data import folders, imagenet_val, sources


def _jpeg(size=(6, 5), color=(200, 30, 60)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="JPEG", quality=90)
    return out.getvalue()


JPEG = _jpeg()


def _write(path: pathlib.Path, body: bytes | str) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(body, str):
        path.write_text(body)
    else:
        path.write_bytes(body)
    return path


def _run(capsys, *argv):
    code = cli.run(data_cli.main, [str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _problems(err: str) -> list[str]:
    lines = err.strip().splitlines()
    assert lines and all(line.startswith("problem: ") for line in lines), err
    return lines


# ---- Tiny-ImageNet -----------------------------------------------------------------------------

TINY_CLASSES, TINY_VAL = 200, 4


def _tiny_release(parent: pathlib.Path) -> pathlib.Path:
    """tiny-imagenet-200/ in the release's layout (wnids.txt unsorted, words.txt, one training
    image per class with its boxes file, val/images with val_annotations.txt, unlabelled
    test/images), with the 200 classes the config's num_classes expects."""
    root = parent / "tiny-imagenet-200"
    wnids = [f"n{10_000_000 + 37 * i:08d}" for i in reversed(range(TINY_CLASSES))]
    _write(root / "wnids.txt", "\n".join(wnids) + "\n")
    _write(root / "words.txt", "".join(f"{w}\tthing {w}\n" for w in wnids))
    for w in wnids:
        _write(root / "train" / w / "images" / f"{w}_0.JPEG", JPEG)
        _write(root / "train" / w / f"{w}_boxes.txt", f"{w}_0.JPEG\t0\t0\t5\t4\n")
    rows = []
    for i in range(TINY_VAL):
        _write(root / "val" / "images" / f"val_{i}.JPEG", JPEG)
        rows.append(f"val_{i}.JPEG\t{wnids[i]}\t0\t0\t5\t4")
    _write(root / "val" / "val_annotations.txt", "\n".join(rows) + "\n")
    _write(root / "test" / "images" / "test_0.JPEG", JPEG)
    return root


def _zip(archive: pathlib.Path, folder: pathlib.Path) -> pathlib.Path:
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                z.write(path, path.relative_to(folder.parent).as_posix())
    return archive


@pytest.fixture
def tiny(tmp_path, server, monkeypatch):  # noqa: F811
    """The catalog's tiny_imagenet pointed at a tiny zip served locally (its own md5 and split
    sizes); the data root in tmp_path/root. Returns the folder it is fetched into."""
    archive = _zip(tmp_path / "www" / "tiny-imagenet-200.zip", _tiny_release(tmp_path / "rel"))
    real = catalog.get("tiny_imagenet")
    (remote,) = real.remotes
    assert remote.filename == archive.name and remote.url.endswith("/" + archive.name)
    entry = dataclasses.replace(
        real,
        remotes=(
            dataclasses.replace(
                remote,
                url=f"{server}/{archive.name}",
                md5=hashlib.md5(archive.read_bytes()).hexdigest(),
            ),
        ),
        splits={"train": TINY_CLASSES, "val": TINY_VAL},
    )
    get = catalog.get
    monkeypatch.setattr(catalog, "get", lambda n: entry if n == "tiny_imagenet" else get(n))
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    return tmp_path / "root" / "tiny-imagenet-200", entry


def test_tiny_imagenet_is_fetched_verified_and_read_by_its_config(tiny, capsys):
    target, _ = tiny
    code, out, err = _run(capsys, "fetch", "tiny_imagenet")
    assert code == 0, err
    assert sorted(p.name for p in target.iterdir()) == sorted(
        ["wnids.txt", "words.txt", "train", "val", "test", fetch.MANIFEST]
    )
    code, out, err = _run(capsys, "verify", "tiny_imagenet")
    assert code == 0 and out.strip().endswith(f"complete (train 200, val {TINY_VAL})"), err
    config = config_lib.load("configs/vision/tiny_imagenet.py:preset=paper")
    assert config.data.dir == "" and config.data.source == "official"
    data = tasks.get(config.task).load_data(config)
    assert len(data.train) == TINY_CLASSES and len(data.test) == TINY_VAL
    assert data.description["dir"] == str(target) and data.description["num_classes"] == 200
    example = data.val[0]
    assert example["image"].shape == (224, 224, 3) and example["image"].dtype == np.float32
    assert int(example["label"]) == TINY_CLASSES - 1  # wnids.txt lists the largest wnid first


def test_tiny_imagenet_verify_names_a_missing_file_and_a_wrong_count(tiny, capsys, monkeypatch):
    target, entry = tiny
    assert _run(capsys, "fetch", "tiny_imagenet")[0] == 0
    (target / "val" / "val_annotations.txt").unlink()
    code, _, err = _run(capsys, "verify", "tiny_imagenet")
    assert code == 1
    manifest, reader = _problems(err)  # the file's checksum record, then the reader
    missing = target / "val" / "val_annotations.txt"
    assert manifest == f"problem: {missing}: listed in MANIFEST.json but missing"
    assert reader.startswith(f"problem: {missing}: not found; fetch it with `attnbench-data fetch")
    assert _run(capsys, "fetch", "tiny_imagenet")[0] == 0  # again from downloads/: complete
    more = dataclasses.replace(entry, splits={"train": TINY_CLASSES, "val": 10_000})
    monkeypatch.setattr(catalog, "get", lambda n: more)
    code, _, err = _run(capsys, "verify", "tiny_imagenet")
    assert code == 1
    (line,) = _problems(err)
    assert line.endswith(f"split val has {TINY_VAL} examples, the official release 10,000")


# ---- ImageNet: verify on a tiny tree -----------------------------------------------------------

WNIDS = {1: "n01440764", 2: "n01443537", 3: "n01484850"}  # ILSVRC2012_ID -> WNID (the devkit's)


def _imagenet_tree(root: pathlib.Path, per_class=2, val=(1, 1, 1)) -> pathlib.Path:
    for k, wnid in enumerate(WNIDS.values()):
        for i in range(per_class):
            _write(root / "train" / wnid / f"{wnid}_{i}.JPEG", JPEG)
        for i in range(val[k]):
            _write(root / "val" / wnid / imagenet_val.image_name(10 * k + i + 1), JPEG)
    return root


@pytest.fixture
def tiny_imagenet_entry(monkeypatch):
    """The catalog's imagenet with 3 classes, 6 training and 3 validation images."""
    real = catalog.get("imagenet")
    entry = dataclasses.replace(real, splits={"train": 6, "val": 3})
    get = catalog.get
    monkeypatch.setattr(catalog, "get", lambda n: entry if n == "imagenet" else get(n))
    monkeypatch.setitem(sources.CLASSES, "imagenet", 3)
    return entry


def test_imagenet_verify_counts_the_class_folders(
    tmp_path, tiny_imagenet_entry, capsys, monkeypatch
):
    tree = _imagenet_tree(tmp_path / "imagenet")
    code, out, err = _run(capsys, "verify", "imagenet", tree)
    assert code == 0, err
    assert "has no MANIFEST.json" in out and out.strip().endswith("complete (train 6, val 3)")
    wrong = dataclasses.replace(tiny_imagenet_entry, splits={"train": 1_281_167, "val": 3})
    monkeypatch.setattr(catalog, "get", lambda n: wrong)
    code, _, err = _run(capsys, "verify", "imagenet", tree)
    (line,) = _problems(err)
    assert code == 1 and line.endswith("split train has 6 examples, the official release 1,281,167")
    monkeypatch.setattr(catalog, "get", lambda n: tiny_imagenet_entry)
    monkeypatch.setitem(sources.CLASSES, "imagenet", 1_000)
    code, _, err = _run(capsys, "verify", "imagenet", tree)
    (line,) = _problems(err)
    assert code == 1 and "3 classes in train/, the release has 1,000" in line
    monkeypatch.setitem(sources.CLASSES, "imagenet", 3)
    for image in list((tree / "val").rglob("*.JPEG")):  # val as released: flat
        image.rename(tree / "val" / image.name)
    code, _, err = _run(capsys, "verify", "imagenet", tree)
    (line,) = _problems(err)
    assert code == 1 and "holds 3 images directly" in line and "attnbench-data imagenet-val" in line


def test_imagenet_fetch_prints_the_exact_steps(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))
    code, out, _ = _run(capsys, "fetch", "imagenet")
    assert code == 0 and not list(tmp_path.iterdir())  # nothing downloaded
    for name in ("ILSVRC2012_img_train.tar", "ILSVRC2012_img_val.tar", "ILSVRC2012_devkit_t12"):
        assert f"https://image-net.org/data/ILSVRC/2012/{name}" in out
    assert "1,000 per-class tars" in out and "attnbench-data imagenet-val" in out
    assert str(tmp_path / "imagenet") in out


# ---- The ImageNet val reorganiser --------------------------------------------------------------


def _synsets(leaves: dict[int, str]) -> np.ndarray:
    """meta.mat's `synsets` as the devkit has it: a struct array (n x 1) of the leaves and an
    ancestor (num_children > 0), with the devkit's fields."""
    fields = (
        "ILSVRC2012_ID",
        "WNID",
        "words",
        "gloss",
        "num_children",
        "children",
        "wordnet_height",
        "num_train_images",
    )
    rows = [(i, w, f"class {i}", "a class", 0, np.zeros(0), 0, 2) for i, w in leaves.items()]
    parent = len(leaves) + 1
    rows.append((parent, "n00001740", "entity", "the root", len(leaves), list(leaves), 2, 0))
    out = np.empty((len(rows), 1), dtype=[(f, object) for f in fields])
    for k, row in enumerate(rows):
        out[k, 0] = tuple(np.array(v) if isinstance(v, list) else v for v in row)
    return out


def _devkit(folder: pathlib.Path, labels, leaves=WNIDS) -> pathlib.Path:
    """ILSVRC2012_devkit_t12/data/{meta.mat, ILSVRC2012_validation_ground_truth.txt} under
    `folder`, and the tarball of it beside; returns the tarball."""
    kit = folder / "ILSVRC2012_devkit_t12"
    (kit / "data").mkdir(parents=True)
    scipy.io.savemat(kit / imagenet_val.META, {"synsets": _synsets(leaves)})
    _write(kit / imagenet_val.GROUND_TRUTH, "".join(f"{label}\n" for label in labels))
    tarball = folder / "ILSVRC2012_devkit_t12.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(kit, arcname=kit.name)
    return tarball


LABELS = (2, 1, 3, 2, 1, 3)  # ground truth of images 1..6


def _flat_val(folder: pathlib.Path, n=6) -> pathlib.Path:
    for i in range(1, n + 1):
        _write(folder / imagenet_val.image_name(i), _jpeg(color=(i, 0, 0)))
    return folder


def _tree(folder: pathlib.Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _placed(val: pathlib.Path) -> dict[str, str]:
    return {p.name: p.parent.name for p in val.rglob("*.JPEG") if p.parent != val}


def test_imagenet_val_moves_each_image_into_its_class_folder(tmp_path, capsys):
    tarball = _devkit(tmp_path / "kit", LABELS)
    val = _flat_val(tmp_path / "imagenet" / "val")
    before = _tree(val)
    code, out, err = _run(capsys, "imagenet-val", val, "--devkit", tarball, "--dry-run")
    assert code == 0, err
    assert "would move 6 images into 3 class folders (0 already" in out
    assert "ILSVRC2012_val_00000001.JPEG -> n01443537/" in out
    assert _tree(val) == before  # a dry run moves nothing
    code, out, err = _run(capsys, "imagenet-val", val, "--devkit", tarball)
    assert code == 0 and "moved 6 images into 3 class folders (0 already" in out, err
    expected = {imagenet_val.image_name(i): WNIDS[c] for i, c in enumerate(LABELS, 1)}
    assert _placed(val) == expected and not [p for p in val.iterdir() if p.is_file()]
    # the devkit's folder (or the one above it) does the same; all in place: nothing to move
    for devkit in (tmp_path / "kit", tmp_path / "kit" / "ILSVRC2012_devkit_t12"):
        code, out, err = _run(capsys, "imagenet-val", val, "--devkit", devkit)
        assert code == 0 and "moved 0 images" in out and "(6 already in their class" in out, err
    # the reader reads the devkit's labels: sorted wnids, images sorted within each class
    for wnid in WNIDS.values():
        _write(tmp_path / "imagenet" / "train" / wnid / "a.JPEG", JPEG)
    test = folders.read_class_folders(tmp_path / "imagenet", "imagenet")["test"]
    assert [pathlib.Path(f).name[-7:-5] for f in test.files] == ["02", "05", "01", "04", "03", "06"]
    assert test.labels.tolist() == [0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            "extra",
            "1 images the devkit's ground truth does not list (first: ILSVRC2012_val_00000007",
        ),
        ("missing", "ILSVRC2012_val_00000003.JPEG: not found (1 of the listed images are missing"),
        ("label", "line 2: '4' is not the ILSVRC2012_ID of one of the devkit's 3 classes (1..3)"),
        ("zero", "line 2: '0' is not the ILSVRC2012_ID"),
        ("wrong_folder", "in class folder n01440764, the devkit's ground truth says n01443537"),
        ("twice", "ILSVRC2012_val_00000002.JPEG is both in VAL_DIR itself and in n01440764/"),
    ],
)
def test_imagenet_val_refuses_and_moves_nothing(tmp_path, capsys, damage, message):
    labels = list(LABELS)
    if damage in ("label", "zero"):
        labels[1] = 4 if damage == "label" else 0  # 4: the ancestor synset, not a class
    tarball = _devkit(tmp_path / "kit", labels)
    val = _flat_val(tmp_path / "val")
    if damage == "extra":
        _write(val / imagenet_val.image_name(7), JPEG)
    elif damage == "missing":
        (val / imagenet_val.image_name(3)).unlink()
    elif damage == "wrong_folder":
        _write(val / "n01440764" / imagenet_val.image_name(1), JPEG)  # image 1 is n01443537
        (val / imagenet_val.image_name(1)).unlink()
    elif damage == "twice":
        _write(val / "n01440764" / imagenet_val.image_name(2), JPEG)  # and still in val/
    before = _tree(val)
    code, out, err = _run(capsys, "imagenet-val", val, "--devkit", tarball)
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
    assert message in err
    assert _tree(val) == before


def test_imagenet_val_counts_and_devkit_errors_are_one_line(tmp_path, capsys):
    val = _flat_val(tmp_path / "val")
    code, _, err = _run(capsys, "imagenet-val", val, "--devkit", tmp_path / "nowhere.tar.gz")
    assert code == 2 and "devkit not found" in err and len(err.strip().splitlines()) == 1
    _write(tmp_path / "bad.tar.gz", b"not a tarball")
    code, _, err = _run(capsys, "imagenet-val", val, "--devkit", tmp_path / "bad.tar.gz")
    assert code == 2 and "cannot read as the devkit tarball" in err
    tarball = _devkit(tmp_path / "kit", LABELS + (1,))  # 7 lines, 6 images
    code, _, err = _run(capsys, "imagenet-val", val, "--devkit", tarball)
    assert code == 2 and "the ground truth lists 7 images" in err and "holds 6" in err
    scipy.io.savemat(tmp_path / "other.mat", {"synsets": np.zeros(3)})
    other = tmp_path / "other_kit" / "data"
    other.mkdir(parents=True)
    (tmp_path / "other.mat").rename(other / "meta.mat")
    _write(other / "ILSVRC2012_validation_ground_truth.txt", "1\n")
    code, _, err = _run(capsys, "imagenet-val", val, "--devkit", other.parent)
    assert code == 2 and "not the ILSVRC-2012 devkit's meta.mat" in err


def test_imagenet_val_restarts_after_a_killed_run(tmp_path, capsys, monkeypatch):
    tarball = _devkit(tmp_path / "kit", LABELS)
    val = _flat_val(tmp_path / "val")
    moved = []
    real_move = imagenet_val._move

    def killed_after_two(source, destination):
        if len(moved) == 2:
            raise KeyboardInterrupt  # the run is stopped here
        real_move(source, destination)
        moved.append(source.name)

    monkeypatch.setattr(imagenet_val, "_move", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        imagenet_val.reorganise(val, tarball, say=lambda line: None)
    assert len(_placed(val)) == 2 and len([p for p in val.iterdir() if p.is_file()]) == 4
    monkeypatch.setattr(imagenet_val, "_move", real_move)
    code, out, err = _run(capsys, "imagenet-val", val, "--devkit", tarball)
    assert code == 0 and "moved 4 images" in out and "(2 already in their class folders)" in out
    expected = {imagenet_val.image_name(i): WNIDS[c] for i, c in enumerate(LABELS, 1)}
    assert _placed(val) == expected


# ---- Missing data names the fetch command ------------------------------------------------------


@pytest.mark.parametrize("name", ["tiny_imagenet", "imagenet", "places365", "inaturalist"])
def test_missing_data_names_the_fetch_command(tmp_path, monkeypatch, capsys, name):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    d = vision_data.data_config(name)
    with pytest.raises(cache.DataError, match=f"`attnbench-data fetch {name}`"):
        vision_data.load(d)  # not in the data root, config.data.dir empty
    d.dir = str(_write(tmp_path / "partial" / "notes.txt", "").parent)  # a folder without it
    with pytest.raises(
        cache.DataError, match=f"not found; fetch it with `attnbench-data fetch {name}`"
    ):
        vision_data.load(d)
    entry = catalog.get(name)
    assert entry.count is not None and entry.splits and entry.layout
    if entry.arrange is None:  # by hand: what the message says to run prints the steps
        code, out, _ = _run(capsys, "fetch", name)
        assert code == 0 and all(r.url in out for r in entry.remotes)
        assert not (tmp_path / "root").exists()  # nothing downloaded


def test_a_partial_cifar_folder_names_verify_and_fetch(tmp_path):
    d = vision_data.data_config("cifar10")
    d.dir = str(tmp_path)
    with pytest.raises(cache.DataError, match="`attnbench-data fetch cifar10` gets the release"):
        vision_data.load(d)


def test_the_published_sums_are_the_sources(capsys):
    """The md5 sums recorded for the vision releases (and where each comes from)."""
    sums = {
        r.filename: (r.md5, r.checksum_source)
        for n in sources.CLASSES
        for r in catalog.get(n).remotes
    }
    assert sums["train.tar.gz"][0] == "e0526d53c7f7b2e3167b2b43bb2690ed"
    assert "visipedia/inat_comp" in sums["val.tar.gz"][1]
    assert sums["ILSVRC2012_img_val.tar"][0] == "29b22e2961454d5413ddabcf34fc5622"
    assert sums["places365standard_easyformat.tar"] == (None, catalog.NO_SUM)
    assert "CS231n publishes none" in sums["tiny-imagenet-200.zip"][1]


@pytest.mark.parametrize(
    ("name", "classes"),
    [("places365", ("airfield", "bakery", "canyon")), ("inaturalist", ("00000_a", "00001_b"))],
)
def test_places_and_inaturalist_steps_and_verify(tmp_path, capsys, monkeypatch, name, classes):
    """Registration datasets: `fetch` prints the release files and the steps and downloads
    nothing; `verify` reads a folder of the release's layout (train/ and val/ class folders of
    .jpg) by its reader: complete with the entry's sizes, one problem line for a wrong one."""
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    real = catalog.get(name)
    code, out, _ = _run(capsys, "fetch", name)
    assert code == 0 and not (tmp_path / "root" / "downloads").exists()
    for remote in real.remotes:
        assert remote.url in out
    assert str(tmp_path / "root" / real.folder) in out

    tree = tmp_path / "root" / real.folder
    for c in classes:
        for i in range(2):
            _write(tree / "train" / c / f"{i}.jpg", JPEG)
        _write(tree / "val" / c / "v.jpg", JPEG)
    entry = dataclasses.replace(real, splits={"train": 2 * len(classes), "val": len(classes)})
    get = catalog.get
    monkeypatch.setattr(catalog, "get", lambda n: entry if n == name else get(n))
    monkeypatch.setitem(sources.CLASSES, name, len(classes))
    code, out, err = _run(capsys, "verify", name)
    assert code == 0, err
    assert out.strip().endswith(f"complete (train {2 * len(classes)}, val {len(classes)})")
    (tree / "val" / classes[0] / "v.jpg").unlink()
    code, _, err = _run(capsys, "verify", name)
    (line,) = _problems(err)
    assert code == 1 and line.endswith(
        f"split val has {len(classes) - 1} examples, the official release {len(classes)}"
    )
