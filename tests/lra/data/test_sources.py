"""`attnbench-data fetch` / `verify` of the LRA data (lra/data/sources.py) on tiny releases
written by the readers' own test writers: an `lra_release.gz` in the release's layout (ListOps,
AAN, Pathfinder32, Path-X under `lra_release/lra_release/`) and an `aclImdb_v1.tar.gz`, served on
127.0.0.1. Each entry is arranged where its reader finds it with an empty `config.data.dir`,
counted by the reader, verified, and read by its task; a fetch unpacks only its own members."""

import dataclasses
import hashlib
import pathlib
import shutil
import tarfile

import numpy as np
import pytest

from attnbench import cli, errors, tasks
from attnbench import config as config_lib
from attnbench.data import catalog, fetch
from lra.data import listops, pathfinder_release, sources
from scripts import data as data_cli
from tests.lra.data.test_retrieval import _write_official as write_aan
from tests.lra.data.test_text import _write_imdb as write_imdb
from tests.scripts.test_data import server  # noqa: F401 (the fixture)

LRA = ("listops", "aan", "pathfinder32", "pathfinder128")
PREFIX = "lra_release/lra_release"  # where LRA's dataset_setup.sh finds the release's folders
PATTERNS = tuple(pathfinder_release.PATTERNS.values())
N_IMAGES = 10  # per difficulty: [:8] / [8:9] / [9:]
EMPTY = "imgs/0/sample_2.png"  # a zero-byte PNG of curv_contour_length_14 (train), as LRA's


def _tar(archive, folder):
    """`folder`'s files as a gzipped tar, named relative to `folder`."""
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            tar.add(path, path.relative_to(folder).as_posix(), recursive=False)
    return archive


@pytest.fixture(scope="module")
def lra_release(tmp_path_factory):
    """A tiny lra_release.gz: listops-1000 (6 / 2 / 3), tsv_data (3 / 2 / 1), pathfinder32 and
    pathfinder128 (10 images per difficulty, one of them empty in `hard`), and a file of the
    release that no entry reads."""
    tmp = tmp_path_factory.mktemp("lra-release")
    top = tmp / "tree" / PREFIX
    sizes = {"train": 6, "val": 2, "test": 3}
    generated = listops.generate_splits(seed=0, sizes=sizes, min_length=5, max_length=30)
    (top / "listops-1000").mkdir(parents=True)
    for split, examples in generated.items():
        listops.write_tsv(top / "listops-1000" / listops.SPLIT_FILES[split], examples)
    write_aan(top / "tsv_data")
    rng = np.random.default_rng(0)
    for res in (32, 128):
        for pattern in PATTERNS:
            images = (rng.random((N_IMAGES, res, res)) < 0.05).astype(np.uint8) * 255
            pathfinder_release.write_official(
                top / f"pathfinder{res}", pattern, images, np.arange(N_IMAGES) % 2,
                images_per_file=4,
            )  # fmt: skip
        (top / f"pathfinder{res}" / "curv_contour_length_14" / EMPTY).write_bytes(b"")
    (top / "README").write_text("not read by any entry\n")
    return _tar(tmp / "lra_release.gz", tmp / "tree")


def _serve(monkeypatch, tmp_path, server, archive, names, splits=None):  # noqa: F811
    """The catalog's `names` pointed at `archive` on the local server (with `splits` where
    given); the data root in tmp_path/root."""
    shutil.copyfile(archive, tmp_path / "www" / archive.name)
    tiny = {}
    for name in names:
        real = catalog.get(name)
        remotes = tuple(dataclasses.replace(r, url=f"{server}/{r.filename}") for r in real.remotes)
        tiny[name] = dataclasses.replace(real, remotes=remotes)
        if splits and name in splits:
            tiny[name] = dataclasses.replace(tiny[name], splits=splits[name])
    get = catalog.get
    monkeypatch.setattr(catalog, "get", lambda n: tiny.get(n) or get(n))
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    return tmp_path / "root"


def _run(capsys, *argv):
    code = cli.run(data_cli.main, list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _problems(err):
    return [line for line in err.splitlines() if line.startswith("problem:")]


def _files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def _official(config_arg, **data):
    config = config_lib.load(f"{config_arg}:preset=smoke" if ":" not in config_arg else config_arg)
    config.data.source = "official"
    for key, value in data.items():
        config.data[key] = value
    assert config.data.dir == ""
    return config


def _sizes(data):
    return [len(data.train), len(data.val), len(data.test)]


TINY = {
    "listops": {"train": 6, "val": 2, "test": 3},
    "aan": {"train": 3, "val": 2, "test": 1},
    "pathfinder32": {"hard/train": 7, "hard/val": 1, "hard/test": 1, "easy/train": 8},
    "pathfinder128": {"hard/train": 7, "hard/val": 1, "hard/test": 1},
}


# ---- the entries ------------------------------------------------------------------------------


def test_the_entries_share_one_download_and_list_their_folders(capsys):
    assert all(catalog.get(n).remotes == (sources.LRA_RELEASE,) for n in LRA)
    assert sources.LRA_RELEASE.url == (
        "https://storage.googleapis.com/long-range-arena/lra_release.gz"
    )
    code, out, _ = _run(capsys, "list")
    assert code == 0
    for name, folder in [
        ("listops", "lra_release/listops-1000"),
        ("aan", "lra_release/tsv_data"),
        ("pathfinder32", "lra_release/pathfinder32"),
        ("pathfinder128", "lra_release/pathfinder128"),
        ("imdb", "aclImdb"),
    ]:
        entry = out[("\n" + out).index(f"\n{name}: ") :]
        assert f"  folder: <data root>/{folder}\n" in entry[: entry.index("read by:")], name
    assert "(md5 from torchtext/datasets/imdb.py (pytorch/text))" in out
    assert "splits: train 96,000, val 2,000, test 2,000" in out


@pytest.mark.parametrize(
    "member, expected",
    [
        ("lra_release/lra_release/listops-1000/basic_train.tsv", ("basic_train.tsv",)),
        ("lra_release/listops-1000/basic_train.tsv", ("basic_train.tsv",)),
        ("./lra_release/lra_release/listops-1000/sub/x", ("sub", "x")),
        ("listops-1000/basic_val.tsv", ("basic_val.tsv",)),
        ("lra_release/lra_release/listops-1000", None),  # the folder itself
        ("lra_release/lra_release/tsv_data/new_aan_pairs.train.tsv", None),
        ("lra_release/x/listops-1000/basic_train.tsv", None),
    ],
)
def test_release_path_takes_one_or_two_release_prefixes(member, expected):
    assert sources.release_path(member, "listops-1000") == expected


# ---- ListOps ------------------------------------------------------------------------------------


def test_listops_fetch_unpacks_only_its_folder_and_verifies(
    tmp_path,
    server,  # noqa: F811
    monkeypatch,
    capsys,
    lra_release,
):
    root = _serve(monkeypatch, tmp_path, server, lra_release, LRA, TINY)
    code, out, err = _run(capsys, "fetch", "listops")
    assert code == 0, err
    assert "no checksum is published for lra_release.gz" in out
    target = root / "lra_release" / "listops-1000"
    assert _files(target) == sorted([fetch.MANIFEST, *listops.SPLIT_FILES.values()])
    # nothing of the rest of the release is unpacked: only the download and this folder
    assert _files(root) == sorted(
        ["downloads/lra_release.gz", *(f"lra_release/listops-1000/{f}" for f in _files(target))]
    )
    code, out, err = _run(capsys, "verify", "listops")
    assert code == 0 and out.strip().endswith("is complete (train 6, val 2, test 3)"), err

    # the reader finds it with an empty config.data.dir, as the ListOps task reads it
    config = _official("lra/listops.py")
    directory = listops.official_dir(config.data.dir)
    assert directory == target
    tokens, labels = listops.load_split(directory, "test", max_length=config.data.max_length)
    assert tokens.shape == (3, config.data.max_length) and len(labels) == 3

    # a second LRA entry reuses the downloaded release: the server no longer has it
    (tmp_path / "www" / "lra_release.gz").unlink()
    code, _, err = _run(capsys, "fetch", "aan")
    assert code == 0, err
    assert _files(root / "lra_release" / "tsv_data")[0] == fetch.MANIFEST


def test_listops_task_reads_the_fetched_files_with_an_empty_dir(
    tmp_path,
    server,  # noqa: F811
    monkeypatch,
    capsys,
    lra_release,
):
    _serve(monkeypatch, tmp_path, server, lra_release, LRA, TINY)
    assert _run(capsys, "fetch", "listops")[0] == 0
    data = tasks.get("lra.listops").load_data(_official("lra/listops.py"))
    assert _sizes(data) == [6, 2, 3]
    assert "<data root>/lra_release/listops-1000" in str(data.description)


def test_listops_verify_names_a_missing_split_file_and_a_wrong_count(
    tmp_path,
    server,  # noqa: F811
    monkeypatch,
    capsys,
    lra_release,
):
    wrong = {**TINY, "listops": {"train": 6, "val": 3, "test": 3}}
    root = _serve(monkeypatch, tmp_path, server, lra_release, LRA, wrong)
    code, _, err = _run(capsys, "fetch", "listops")
    target = root / "lra_release" / "listops-1000"
    assert code == 1
    assert _problems(err) == [
        f"problem: {target}: split val has 2 examples, the official release 3"
    ]
    code, _, err = _run(capsys, "verify", "listops")
    assert code == 1 and len(_problems(err)) == 1 and "split val has 2" in err

    # a folder made by hand (no manifest): the missing file is one problem, naming the file
    # and the fetch command
    copy = tmp_path / "by-hand"
    shutil.copytree(target, copy, ignore=shutil.ignore_patterns(fetch.MANIFEST))
    (copy / "basic_val.tsv").unlink()
    code, _, err = _run(capsys, "verify", "listops", str(copy))
    (problem,) = _problems(err)
    assert code == 1 and "basic_val.tsv: ListOps file not found" in problem
    assert "`attnbench-data fetch listops`" in problem
    # fetched (with a manifest): the manifest and the reader both name it
    (target / "basic_val.tsv").unlink()
    code, _, err = _run(capsys, "verify", "listops")
    assert code == 1 and all("basic_val.tsv" in p for p in _problems(err))


# ---- Retrieval (AAN) ----------------------------------------------------------------------------


def test_aan_fetch_verify_and_the_task_reads_it(
    tmp_path,
    server,  # noqa: F811
    monkeypatch,
    capsys,
    lra_release,
):
    root = _serve(monkeypatch, tmp_path, server, lra_release, LRA, TINY)
    code, _, err = _run(capsys, "fetch", "aan")
    assert code == 0, err
    target = root / "lra_release" / "tsv_data"
    assert _files(target) == sorted(
        [
            fetch.MANIFEST,
            "new_aan_pairs.train.tsv",
            "new_aan_pairs.eval.tsv",
            "new_aan_pairs.test.tsv",
        ]
    )
    assert not (root / "lra_release" / "listops-1000").exists()
    code, out, err = _run(capsys, "verify", "aan")
    assert code == 0 and out.strip().endswith("is complete (train 3, val 2, test 1)"), err

    data = tasks.get("lra.retrieval").load_data(_official("lra/retrieval.py"))
    assert _sizes(data) == [3, 2, 1]
    assert data.description["dir"] == str(target)

    (target / "new_aan_pairs.eval.tsv").unlink()
    code, _, err = _run(capsys, "verify", "aan")
    assert code == 1 and all("new_aan_pairs.eval.tsv" in p for p in _problems(err)), err


# ---- Pathfinder / Path-X ------------------------------------------------------------------------


@pytest.mark.parametrize("resolution", [32, 128])
def test_pathfinder_fetch_verify_and_the_task_reads_it(
    tmp_path,
    server,  # noqa: F811
    monkeypatch,
    capsys,
    lra_release,
    resolution,
):
    name = f"pathfinder{resolution}"
    root = _serve(monkeypatch, tmp_path, server, lra_release, LRA, TINY)
    code, _, err = _run(capsys, "fetch", name)
    assert code == 0, err
    target = root / "lra_release" / name
    assert sorted(p.name for p in target.iterdir()) == sorted([fetch.MANIFEST, *PATTERNS])
    assert sorted(p.name for p in (root / "lra_release").iterdir()) == [name]
    counts = sources._count_pathfinder(target)
    for difficulty in ("easy", "intermediate"):
        assert [counts[f"{difficulty}/{s}"] for s in ("train", "val", "test")] == [8, 1, 1]
    assert [counts[f"hard/{s}"] for s in ("train", "val", "test")] == [7, 1, 1]  # one empty
    code, _, err = _run(capsys, "verify", name)
    assert code == 0, err

    arg = "lra/pathfinder.py:preset=smoke" + (",resolution=128" if resolution == 128 else "")
    config = _official(arg)
    data = tasks.get("lra.pathfinder").load_data(config)
    train = min(7, config.data.num_train)  # Path-X's smoke preset reads the first 4 images
    assert _sizes(data) == [train, 1, 1]
    assert data.description["dir"] == str(target.resolve())
    assert data.train.arrays["tokens"].shape == (train, resolution**2)

    # a PNG listed in the metadata but missing is one problem naming it
    missing = target / "curv_baseline" / "imgs" / "1" / "sample_5.png"
    missing.unlink()
    code, _, err = _run(capsys, "verify", name)
    assert code == 1 and all(str(missing) in p for p in _problems(err)), err
    assert any("image file not found (listed in" in p for p in _problems(err))


def test_pathfinder_with_no_recorded_counts_verifies_the_files(
    tmp_path,
    server,  # noqa: F811
    monkeypatch,
    capsys,
    lra_release,
):
    assert catalog.get("pathfinder32").splits == {}  # not confirmed: see the entry's notes
    root = _serve(monkeypatch, tmp_path, server, lra_release, LRA)
    assert _run(capsys, "fetch", "pathfinder32")[0] == 0
    shutil.rmtree(root / "lra_release" / "pathfinder32" / "curv_contour_length_9" / "metadata")
    code, _, err = _run(capsys, "verify", "pathfinder32")
    assert code == 1 and any("no metadata/*.npy files" in p for p in _problems(err)), err


# ---- missing data -------------------------------------------------------------------------------


def test_missing_data_names_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "empty"))
    cases = [
        ("lra.retrieval", "lra/retrieval.py", "aan"),
        ("lra.text", "lra/text.py", "imdb"),
        ("lra.pathfinder", "lra/pathfinder.py", "pathfinder32"),
        ("lra.pathfinder", "lra/pathfinder.py:preset=smoke,resolution=128", "pathfinder128"),
        ("lra.image", "lra/image.py", "cifar10"),
    ]
    for task, config_arg, name in cases:
        with pytest.raises(errors.DataError) as info:
            tasks.get(task).load_data(_official(config_arg))
        message = cli.one_line(info.value)
        assert f"`attnbench-data fetch {name}`" in message, message
        assert str(tmp_path / "empty") in message
    with pytest.raises(errors.DataError, match="`attnbench-data fetch listops`.*'generated'"):
        listops.official_dir("")
    assert listops.official_dir("~/x") == pathlib.Path("~/x").expanduser()


# ---- IMDB ---------------------------------------------------------------------------------------


@pytest.fixture
def imdb_release(tmp_path):
    """A tiny aclImdb_v1.tar.gz: 3 + 3 train and 2 + 2 test reviews, and the parts of the
    release the reader does not read (unsup/, URL lists, the vocabulary)."""
    root = write_imdb(tmp_path / "imdb")
    (root / "README").write_text("Large Movie Review Dataset v1.0\n")
    return _tar(tmp_path / "aclImdb_v1.tar.gz", tmp_path / "imdb")


def test_imdb_fetch_keeps_the_labelled_reviews_and_the_task_reads_them(
    tmp_path,
    server,  # noqa: F811
    monkeypatch,
    capsys,
    imdb_release,
):
    md5 = hashlib.md5(imdb_release.read_bytes()).hexdigest()
    real = catalog.get("imdb")
    (remote,) = real.remotes
    assert remote.md5 == "7c2ac02c03563afcf9b574c7e56c153a"
    tiny = dataclasses.replace(
        real,
        remotes=(dataclasses.replace(remote, md5=md5),),
        splits={"train": 6, "test": 4},
    )
    monkeypatch.setattr(catalog, "get", lambda n: tiny if n == "imdb" else real)
    root = _serve(monkeypatch, tmp_path, server, imdb_release, ["imdb"])

    code, out, err = _run(capsys, "fetch", "imdb")
    assert code == 0 and "checksums as published" in out, err
    target = root / "aclImdb"
    assert _files(target) == sorted(
        [fetch.MANIFEST, "README"]
        + [f"{s}/pos/{n}" for s in ("train", "test") for n in _names(imdb_release, s, "pos")]
        + [f"{s}/neg/{n}" for s in ("train", "test") for n in _names(imdb_release, s, "neg")]
    )  # no unsup/, urls_pos.txt, imdb.vocab
    code, out, err = _run(capsys, "verify", "imdb")
    assert code == 0 and out.strip().endswith("is complete (train 6, test 4)"), err

    data = tasks.get("lra.text").load_data(_official("lra/text.py"))
    assert _sizes(data) == [4, 2, 4]  # the config holds out 10% of each class of train for val
    assert data.description["dir"] == str(target.resolve())

    (target / "test" / "neg" / "8_1.txt").unlink()
    code, _, err = _run(capsys, "verify", "imdb")
    problems = _problems(err)
    assert code == 1 and any("8_1.txt" in p for p in problems), err
    assert problems[-1].endswith("split test has 3 examples, the official release 4")


def _names(archive, split, label):
    with tarfile.open(archive) as tar:
        prefix = f"aclImdb/{split}/{label}/"
        return [m.name[len(prefix) :] for m in tar.getmembers() if m.name.startswith(prefix)]


def test_imdb_download_is_checked_against_torchtexts_md5(
    tmp_path,
    server,  # noqa: F811
    monkeypatch,
    capsys,
    imdb_release,
):
    root = _serve(monkeypatch, tmp_path, server, imdb_release, ["imdb"])
    code, _, err = _run(capsys, "fetch", "imdb")
    assert code == 2 and err.count("\n") == 1, err
    assert "where 7c2ac02c03563afcf9b574c7e56c153a is expected" in err
    assert "torchtext/datasets/imdb.py" in err
    assert not (root / "aclImdb").exists()
