"""`attnbench-data fetch` / `verify` of the graph datasets (graphs/data/sources.py) on tiny
releases in the official layouts (the readers' own test writers), served on 127.0.0.1: each is
arranged where its reader finds it from the data root by itself, counted by the reader, verified,
read by its task with `source=official` and an empty `config.data.dir`, and a deleted file is
named by `verify`."""

import dataclasses
import json
import shutil
import sys
import zipfile

import pytest

from attnbench import cli, tasks
from attnbench import config as config_lib
from attnbench.data import catalog, fetch
from graphs.data import peptides, sources
from scripts import data as data_cli
from tests.graphs.data.test_pcqm import write_pcqm
from tests.graphs.data.test_peptides import write_peptides
from tests.graphs.data.test_zinc import write_zinc
from tests.scripts.test_data import server  # noqa: F401 (the fixture)


def _serve(monkeypatch, tmp_path, server, name, files, splits):  # noqa: F811
    """The catalog's `name` pointed at `files` ({release file name: path}, copied into the
    served folder), with the tiny `splits`; the data root in tmp_path/root."""
    real = catalog.get(name)
    assert sorted(r.filename for r in real.remotes) == sorted(files)
    for filename, path in files.items():
        if path.parent != tmp_path / "www":
            shutil.copyfile(path, tmp_path / "www" / filename)
    tiny = dataclasses.replace(
        real,
        remotes=tuple(dataclasses.replace(r, url=f"{server}/{r.filename}") for r in real.remotes),
        splits=splits,
    )
    get = catalog.get
    monkeypatch.setattr(catalog, "get", lambda n: tiny if n == name else get(n))
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    return tmp_path / "root" / real.folder


def _zip(archive, folder):
    """`folder` zipped with its own name as the members' first component."""
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                z.write(path, path.relative_to(folder.parent).as_posix())
    return archive


def _run(capsys, *argv):
    code = cli.run(data_cli.main, list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _official(config_name, args=""):
    config = config_lib.load(f"{config_name}:preset=smoke,source=official{args}")
    assert config.data.dir == ""
    return config


def _fetched_files(target):
    return sorted(str(p.relative_to(target)) for p in target.rglob("*"))


def test_zinc(tmp_path, server, monkeypatch, capsys):  # noqa: F811
    release = write_zinc(tmp_path / "release" / "molecules")  # pickles and .index files
    index = {f"{s}.index": release / f"{s}.index" for s in ("train", "val", "test")}
    for path in index.values():
        path.rename(tmp_path / "www" / path.name)
    archive = _zip(tmp_path / "www" / "molecules.zip", release)
    files = {"molecules.zip": archive, **{n: tmp_path / "www" / n for n in index}}
    target = _serve(monkeypatch, tmp_path, server, "zinc", files, {"train": 2, "val": 1, "test": 1})
    assert target == tmp_path / "root" / "molecules"

    code, out, err = _run(capsys, "fetch", "zinc")
    assert code == 0, err
    assert "no checksum is published for molecules.zip, train.index" in out
    assert _fetched_files(target) == sorted(
        [
            fetch.MANIFEST,
            *(f"{s}.{e}" for s in ("train", "val", "test") for e in ("pickle", "index")),
        ]
    )  # the count's cache went to a temporary folder
    code, out, err = _run(capsys, "verify", "zinc")
    assert code == 0 and out.strip().endswith("is complete (train 2, val 1, test 1)"), err

    data = tasks.get("graphs.zinc").load_data(_official("graphs/zinc.py"))
    assert [len(s) for s in (data.train, data.val, data.test)] == [2, 1, 1]
    assert str(target / "train.pickle") in data.description["files"]

    (target / "val.pickle").unlink()
    code, _, err = _run(capsys, "verify", "zinc")
    assert code == 1 and "val.pickle" in err


def _peptides_release(tmp_path):
    func = write_peptides(tmp_path / "func", "func")
    struct = write_peptides(tmp_path / "struct", "struct")
    first = write_peptides(tmp_path / "first", "struct", "peptide_structure_dataset.csv.gz")
    paths = [
        func / "raw" / "peptide_multi_class_dataset.csv.gz",
        func / "splits_random_stratified_peptide.pickle",
        struct / "raw" / "peptide_structure_normalized_dataset.csv.gz",
        struct / "splits_random_stratified_peptide_structure.pickle",
        first / "raw" / "peptide_structure_dataset.csv.gz",
    ]
    return {p.name: p for p in paths}


def test_peptides_urls_are_the_readers():
    assert sources._PEPTIDES_URLS == peptides.PEPTIDES_URLS
    assert {r.filename: r.url for r in catalog.get("peptides").remotes} == peptides.PEPTIDES_URLS


def test_peptides(tmp_path, server, monkeypatch, capsys):  # noqa: F811
    pytest.importorskip("rdkit")
    files = _peptides_release(tmp_path)
    target = _serve(
        monkeypatch, tmp_path, server, "peptides", files, {"train": 2, "val": 1, "test": 1}
    )
    assert target == tmp_path / "root" / "peptides"

    code, out, err = _run(capsys, "fetch", "peptides")
    assert code == 0, err
    assert _fetched_files(target) == sorted([fetch.MANIFEST, *files])
    manifest = json.loads((target / fetch.MANIFEST).read_text())
    assert len(manifest["releases"]) == 5
    code, out, err = _run(capsys, "verify", "peptides")
    assert code == 0 and out.strip().endswith("is complete (train 2, val 1, test 1)"), err

    for kind in ("func", "struct"):
        config = _official("graphs/peptides.py", f",kind={kind}")
        data = tasks.get(f"graphs.peptides_{kind}").load_data(config)
        assert [len(s) for s in (data.train, data.val, data.test)] == [2, 1, 1]
        assert all(f.startswith(str(target)) for f in data.description["files"])
    assert "peptide_structure_normalized_dataset.csv.gz" in data.description["files"][0]

    (target / "splits_random_stratified_peptide.pickle").unlink()
    code, _, err = _run(capsys, "verify", "peptides")
    assert code == 1 and "splits_random_stratified_peptide.pickle" in err


def test_peptides_verify_without_rdkit_names_the_extra(tmp_path, server, monkeypatch, capsys):  # noqa: F811
    files = _peptides_release(tmp_path)
    target = _serve(monkeypatch, tmp_path, server, "peptides", files, {"train": 2})
    target.mkdir(parents=True)
    for name, path in files.items():
        shutil.copyfile(path, target / name)
    monkeypatch.setitem(sys.modules, "rdkit", None)
    code, out, err = _run(capsys, "verify", "peptides")
    problems = [line for line in err.splitlines() if line.startswith("problem:")]
    assert code == 1 and len(problems) == 1, err
    assert "attnbench[molecules]" in problems[0]


@pytest.mark.parametrize(
    ("name", "version", "folder", "keys"),
    [
        ("pcqm4mv2", "v2", "pcqm4m-v2", ("train", "valid", "test-dev", "test-challenge")),
        ("pcqm4m", "v1", "pcqm4m_kddcup2021", ("train", "valid", "test")),
    ],
)
def test_pcqm4m(tmp_path, server, monkeypatch, capsys, name, version, folder, keys):  # noqa: F811
    release = tmp_path / "release" / folder
    write_pcqm(release, version=version)  # train 3 molecules, valid 2
    archive = _zip(tmp_path / "www" / f"{folder}.zip", release)
    splits = {"train": 3, "val": 2, "test": 2}
    target = _serve(monkeypatch, tmp_path, server, name, {f"{folder}.zip": archive}, splits)
    assert target == tmp_path / "root" / folder
    assert sources._count_pcqm(name, keys)(release) == splits

    code, out, err = _run(capsys, "fetch", name)
    assert code == 0, err
    assert _fetched_files(target) == [fetch.MANIFEST, "raw", "raw/data.csv.gz", "split_dict.pt"]
    code, out, err = _run(capsys, "verify", name)
    assert code == 0 and out.strip().endswith("is complete (train 3, val 2, test 2)"), err

    pytest.importorskip("rdkit")
    config = _official("graphs/pcqm.py", f",version={version}")
    data = tasks.get("graphs.pcqm").load_data(config)
    assert [len(s) for s in (data.train, data.val)] == [3, 2]
    assert str(target / "raw" / "data.csv.gz") in data.description["files"]

    (target / "split_dict.pt").unlink()
    code, _, err = _run(capsys, "verify", name)
    assert code == 1 and "split_dict.pt" in err


def test_pcqm4mv2_a_split_beyond_the_csv_is_a_problem(tmp_path, server, monkeypatch, capsys):  # noqa: F811
    release = tmp_path / "release" / "pcqm4m-v2"
    write_pcqm(release, valid=(5, 9))  # row 9: past the 6 data rows
    archive = _zip(tmp_path / "www" / "pcqm4m-v2.zip", release)
    _serve(monkeypatch, tmp_path, server, "pcqm4mv2", {"pcqm4m-v2.zip": archive}, {"train": 3})
    code, _, err = _run(capsys, "fetch", "pcqm4mv2")
    assert code == 1 and "split 'valid' has indices in [5, 9]" in err
