"""`attnbench-data fetch modelnet40` on a tiny release zip in PointNet++'s layout, served on
127.0.0.1: arranged where the configs read it, counted by the reader, verified; no checksum is
published, so the manifest holds the sha256 it computed and the command says so."""

import dataclasses
import json
import zipfile

from attnbench import cli
from attnbench.data import catalog, fetch
from scripts import data as data_cli
from tests.pointcloud.data.layouts import CLOUDS, NAMES, write_modelnet_text
from tests.scripts.test_data import server  # noqa: F401 (the fixture)

TRAIN, TEST = ["airplane_0001", "night_stand_0001", "table_0002"], ["night_stand_0003"]


def test_fetch_and_verify_modelnet40(tmp_path, server, monkeypatch, capsys):  # noqa: F811
    folder = write_modelnet_text(tmp_path / "release", CLOUDS, TRAIN, TEST, NAMES)
    archive = tmp_path / "www" / "modelnet40_normal_resampled.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted(folder.rglob("*")):
            z.write(path, path.relative_to(folder.parent).as_posix())
    real = catalog.get("modelnet40")
    (remote,) = real.remotes
    tiny = dataclasses.replace(
        real,
        remotes=(dataclasses.replace(remote, url=f"{server}/{archive.name}"),),
        splits={"train": 3, "test": 1},
    )
    monkeypatch.setattr(catalog, "get", lambda name: tiny)
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    assert cli.run(data_cli.main, ["fetch", "modelnet40"]) == 0
    out = capsys.readouterr().out
    target = tmp_path / "root" / "modelnet40_normal_resampled"
    assert "no checksum is published for modelnet40_normal_resampled.zip" in out
    manifest = json.loads((target / fetch.MANIFEST).read_text())
    assert manifest["releases"][0]["published"] == "none published"
    assert len(manifest["releases"][0]["sha256"]) == 64
    assert (target / "airplane" / "airplane_0001.txt").is_file()
    assert cli.run(data_cli.main, ["verify", "modelnet40"]) == 0
    assert "is complete (train 3, test 1)" in capsys.readouterr().out
    (target / "table" / "table_0002.txt").unlink()
    assert cli.run(data_cli.main, ["verify", "modelnet40"]) == 1
    assert "table_0002.txt" in capsys.readouterr().err
