"""`attnbench-data fetch shapenetpart` on a tiny release zip in PointNet++'s layout
(tests/pointcloud/data/layouts.py's writer), served on 127.0.0.1 or given with `--from`: arranged
where the config finds it with an empty `config.data.dir`, counted by the reader from the split
lists, verified; a split list deleted and a split size that differs from the catalog's are
problems. No checksum is published, so the manifest holds the sha256 fetch computed."""

import dataclasses
import json
import zipfile

from attnbench import cli, tasks
from attnbench import config as config_lib
from attnbench.data import catalog, fetch
from pointcloud.data import shapenetpart, sources
from scripts import data as data_cli
from tests.pointcloud.data.layouts import SHAPENET_FILES, SHAPENET_SPLITS, SYNSET, write_shapenet
from tests.scripts.test_data import server  # noqa: F401 (the fixture)

FOLDER = "shapenetcore_partanno_segmentation_benchmark_v0_normal"
TINY_SPLITS = {"train": 3, "val": 1, "test": 1}  # SHAPENET_SPLITS' lengths


def _release_zip(tmp_path):
    """The tiny release zipped as the official one is: every member under FOLDER/."""
    folder = write_shapenet(tmp_path / "release", SHAPENET_FILES, SHAPENET_SPLITS)
    (tmp_path / "www").mkdir(exist_ok=True)
    archive = tmp_path / "www" / f"{FOLDER}.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted(folder.rglob("*")):
            z.write(path, path.relative_to(folder.parent).as_posix())
    return archive


def _tiny(monkeypatch, url, splits=TINY_SPLITS):
    real = catalog.get("shapenetpart")
    (remote,) = real.remotes
    tiny = dataclasses.replace(
        real, remotes=(dataclasses.replace(remote, url=url),), splits=dict(splits)
    )
    get = catalog.get
    monkeypatch.setattr(catalog, "get", lambda n: tiny if n == "shapenetpart" else get(n))


def _run(capsys, *argv):
    code = cli.run(data_cli.main, list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_catalog_entry_is_the_readers_release():
    d = catalog.get("shapenetpart")
    (remote,) = d.remotes
    assert remote.url == shapenetpart.SHAPENET_URL and remote.filename == f"{FOLDER}.zip"
    assert (d.name, d.folder) == shapenetpart.SHAPENET_CATALOG
    assert d.folder in shapenetpart.SHAPENET_FOLDERS  # found from the data root by the reader
    assert dict(d.splits) == shapenetpart.SHAPENETPART_SIZES  # the stand-in's default sizes
    assert d.arrange is not None and d.count is not None
    assert "--from" in d.notes
    assert d.configs == ("pointcloud/shapenetpart.py:preset=paper,source=official",)


def test_fetch_verify_and_read_shapenetpart(tmp_path, server, monkeypatch, capsys):  # noqa: F811
    archive = _release_zip(tmp_path)
    _tiny(monkeypatch, f"{server}/{archive.name}")
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    target = tmp_path / "root" / FOLDER

    code, out, err = _run(capsys, "fetch", "shapenetpart")
    assert code == 0, err
    assert f"no checksum is published for {FOLDER}.zip" in out
    manifest = json.loads((target / fetch.MANIFEST).read_text())
    assert manifest["releases"][0]["published"] == "none published"
    assert len(manifest["releases"][0]["sha256"]) == 64
    assert (target / "synsetoffset2category.txt").is_file()
    assert (target / SYNSET["Mug"] / "m1.txt").is_file()
    assert (target / "train_test_split" / "shuffled_val_file_list.json").is_file()
    code, out, err = _run(capsys, "verify", "shapenetpart")
    assert code == 0 and out.strip().endswith("is complete (train 3, val 1, test 1)"), err

    # The config reads the fetched folder by itself (config.data.dir empty).
    config = config_lib.load("pointcloud/shapenetpart.py:preset=smoke,source=official")
    assert config.data.dir == ""
    data = tasks.get("pointcloud.shapenetpart").load_data(config)
    assert [len(s) for s in (data.train, data.val, data.test)] == [3, 1, 1]
    assert data.description["dir"] == str(target.resolve())
    assert data.source == "official" and data.description["num_parts"] == 50

    # verify: a split list deleted is a problem naming it.
    split_list = target / "train_test_split" / "shuffled_val_file_list.json"
    kept = split_list.read_bytes()
    split_list.unlink()
    code, _, err = _run(capsys, "verify", "shapenetpart")
    problems = [line for line in err.splitlines() if line.startswith("problem:")]
    assert code == 1 and any("shuffled_val_file_list.json" in p for p in problems), err
    assert any("attnbench-data fetch shapenetpart" in p for p in problems), err
    split_list.write_bytes(kept)

    # verify: a split size other than the catalog's is a problem naming the split.
    _tiny(monkeypatch, f"{server}/{archive.name}", {"train": 4, "val": 1, "test": 1})
    code, _, err = _run(capsys, "verify", "shapenetpart")
    assert code == 1 and "split train has 3 examples, the official release 4" in err, err


def test_fetch_from_a_copy_of_the_zip(tmp_path, monkeypatch, capsys):
    """The Stanford host is unreliable: `--from` takes a copy (here a local file; the catalog's
    URL points nowhere reachable)."""
    archive = _release_zip(tmp_path)
    _tiny(monkeypatch, "http://127.0.0.1:9/unreachable.zip")
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    code, out, err = _run(capsys, "fetch", "shapenetpart", "--from", str(archive))
    assert code == 0, err
    assert f"in {tmp_path / 'root' / FOLDER}" in out


def test_count_reads_the_split_lists_not_the_point_files(tmp_path, capsys):
    """The count is the reader's view of the split lists: each listed file must exist, none is
    parsed (a corrupt point file does not change it; a missing one is an error)."""
    folder = write_shapenet(tmp_path, SHAPENET_FILES, SHAPENET_SPLITS)
    (folder / SYNSET["Airplane"] / "a1.txt").write_text("not a point cloud\n")
    assert sources._count_shapenetpart(folder) == TINY_SPLITS
    assert not (folder / "pointcloud").exists()  # nothing cached by the count
    (folder / SYNSET["Airplane"] / "a1.txt").unlink()
    code, _, err = _run(capsys, "verify", "shapenetpart", str(folder))
    problems = [line for line in err.splitlines() if line.startswith("problem:")]
    assert code == 1 and len(problems) == 1 and "a1.txt not found" in problems[0], err
