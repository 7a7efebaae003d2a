"""`attnbench-data` (scripts/data.py, attnbench/data/catalog.py) against a server on 127.0.0.1:
a release archive written in the official layout is fetched, checked, arranged where the configs
read it and read back; a wrong checksum leaves nothing in the data root; `verify` names a missing
file and a wrong split size. The download, resume and extraction details:
tests/attnbench/data/test_fetch.py."""

import dataclasses
import functools
import hashlib
import http.server
import json
import pathlib
import tarfile
import threading

import numpy as np
import pytest

from attnbench import cli, errors
from attnbench import config as config_lib
from attnbench.data import catalog, fetch
from attnbench.data.formats import cifar
from scripts import data as data_cli
from vision import data as vision_data

PER_BATCH = 4  # examples per CIFAR-10 batch file: train 5 x 4, test 4


def _cifar10_archive(path: pathlib.Path, seed=0) -> pathlib.Path:
    """A cifar-10-python.tar.gz in the release's layout (cifar-10-batches-py/ with the five
    training batches, test_batch and batches.meta), tiny."""
    rng = np.random.default_rng(seed)
    with tarfile.open(path, "w:gz") as tar:
        for name in (*cifar.CIFAR10_FILES, "batches.meta"):
            body = path.parent / name
            if name == "batches.meta":
                body.write_bytes(b"meta")
            else:
                data = rng.integers(0, 256, (PER_BATCH, 3072), dtype=np.uint8)
                cifar.write_batch(body, data, rng.integers(0, 10, PER_BATCH).tolist())
            tar.add(body, arcname=f"cifar-10-batches-py/{name}")
            body.unlink()
    return path


@pytest.fixture
def server(tmp_path):
    """Serves tmp_path/www on 127.0.0.1; yields the base URL."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(_Quiet, directory=str(www))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # noqa: D102 (no request log on the test's stderr)
        pass


@pytest.fixture
def tiny_cifar10(tmp_path, server, monkeypatch):
    """The catalog's cifar10 pointed at a tiny archive served locally, with its own md5 and
    split sizes; the data root in tmp_path."""
    archive = _cifar10_archive(tmp_path / "www" / "cifar-10-python.tar.gz")
    real = catalog.get("cifar10")
    (remote,) = real.remotes
    tiny = dataclasses.replace(
        real,
        remotes=(
            dataclasses.replace(
                remote,
                url=f"{server}/cifar-10-python.tar.gz",
                size=archive.stat().st_size,
                md5=hashlib.md5(archive.read_bytes()).hexdigest(),
            ),
        ),
        splits={"train": 5 * PER_BATCH, "test": PER_BATCH},
    )
    monkeypatch.setattr(catalog, "get", lambda name: tiny if name == "cifar10" else real)
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    return tiny, archive


def _cli(capsys, *argv):
    code = cli.run(data_cli.main, list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_fetch_arranges_the_release_where_the_configs_read_it(tmp_path, tiny_cifar10, capsys):
    code, out, err = _cli(capsys, "fetch", "cifar10")
    assert code == 0, err
    folder = tmp_path / "root" / "cifar-10-batches-py"
    assert out.strip().endswith("; checksums as published)")
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*cifar.CIFAR10_FILES, "batches.meta", fetch.MANIFEST]
    )
    manifest = json.loads((folder / fetch.MANIFEST).read_text())
    assert "data_batch_1" in json.dumps(manifest)
    # nothing else left in the data root than the download and the dataset
    assert sorted(p.name for p in (tmp_path / "root").iterdir()) == [
        "cifar-10-batches-py",
        "downloads",
    ]
    assert _cli(capsys, "where", "cifar10")[1].strip() == str(folder)
    code, out, err = _cli(capsys, "verify", "cifar10")
    assert code == 0 and out.strip().endswith("is complete (train 20, test 4)"), err
    # a config with source=official and no config.data.dir reads it by itself
    splits, desc = vision_data.load(vision_data.data_config("cifar10"))
    assert len(splits["test"]) == PER_BATCH and desc["dir"] == str(folder)


def test_fetch_from_a_downloaded_file_checks_it_too(tmp_path, tiny_cifar10, capsys):
    _, archive = tiny_cifar10
    code, _, err = _cli(capsys, "fetch", "cifar10", "--from", str(archive))
    assert code == 0, err
    other = _cifar10_archive(tmp_path / "other.tar.gz", seed=1)
    (tmp_path / "root" / "downloads" / "cifar-10-python.tar.gz").unlink()
    code, _, err = _cli(capsys, "fetch", "cifar10", "--from", str(other))
    assert code == 2 and "md5" in err and len(err.strip().splitlines()) == 1
    # the earlier, good copy stays where it was
    assert (tmp_path / "root" / "cifar-10-batches-py" / "test_batch").is_file()


def test_a_checksum_mismatch_leaves_nothing_in_the_data_root(tmp_path, tiny_cifar10, capsys):
    tiny, archive = tiny_cifar10
    body = archive.read_bytes()
    archive.write_bytes(body[:100] + bytes([body[100] ^ 1]) + body[101:])  # one bit off
    code, _, err = _cli(capsys, "fetch", "cifar10")
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1
    root = tmp_path / "root"
    left = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    assert left == ["downloads"], left


def test_verify_names_a_missing_file_and_a_wrong_split_size(
    tmp_path, tiny_cifar10, capsys, monkeypatch
):
    tiny, _ = tiny_cifar10
    assert _cli(capsys, "fetch", "cifar10")[0] == 0
    folder = tmp_path / "root" / "cifar-10-batches-py"
    (folder / "test_batch").unlink()
    code, _, err = _cli(capsys, "verify", "cifar10")
    assert code == 1 and "test_batch" in err
    assert all(line.startswith("problem: ") for line in err.strip().splitlines())
    assert _cli(capsys, "fetch", "cifar10")[0] == 0  # fetched again: complete
    bigger = dataclasses.replace(tiny, splits={"train": 50_000, "test": PER_BATCH})
    monkeypatch.setattr(catalog, "get", lambda name: bigger)
    code, _, err = _cli(capsys, "verify", "cifar10")
    assert code == 1
    assert f"split train has {5 * PER_BATCH} examples, the official release 50,000" in err


def test_missing_data_names_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))
    with pytest.raises(errors.DataError, match="`attnbench-data fetch cifar100`"):
        vision_data.load(vision_data.data_config("cifar100"))


def test_every_listed_config_loads_and_names_its_dataset(capsys):
    code, out, _ = _cli(capsys, "list")
    assert code == 0
    for name in catalog.names():
        d = catalog.get(name)
        assert f"{name}: {d.title}" in out
        assert d.remotes or d.steps, name
        for config in d.configs:
            config_lib.load(config)  # exists and parses
    assert "cifar10" in catalog.names() and "cifar100" in catalog.names()


def test_an_unknown_dataset_is_one_line(capsys):
    code, _, err = _cli(capsys, "where", "cifar11")
    assert code == 2 and "unknown dataset 'cifar11'" in err and "cifar10" in err


def test_the_archive_helper_writes_the_release_layout(tmp_path):
    archive = _cifar10_archive(tmp_path / "a.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "cifar-10-batches-py/data_batch_1" in names and len(names) == 7


def test_the_catalog_lists_the_readers_own_sources():
    """One source of truth: the URLs the readers' error messages name are the catalog's."""
    from graphs.data import pcqm, peptides, zinc
    from language.data import corpora
    from pointcloud.data import modelnet40

    urls = {r.url for name in catalog.names() for r in catalog.get(name).remotes}
    expected = {
        zinc.ZINC_URL,
        *(zinc.ZINC_INDEX_URL.format(split=s) for s in ("train", "val", "test")),
        *peptides.PEPTIDES_URLS.values(),
        pcqm.PCQM_URLS["v2"],
        *modelnet40.MODELNET40_URLS.values(),
        corpora._WIKITEXT_URL,
        corpora._ENWIK8_URL,
    }
    assert expected - urls == set()
