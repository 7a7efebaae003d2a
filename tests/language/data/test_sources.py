"""`attnbench-data fetch` of the language corpora (language/data/sources.py) on tiny release
archives in the official layouts, served on 127.0.0.1: each is arranged where `corpora.load`
finds it with `source='official'` and an empty `config.data.dir`, verified, and a deleted split
file is named by `verify`. No checksum is published for these files; enwik8's split sizes are
the reader's (the tiny file is read with a tiny split)."""

import dataclasses
import functools
import io
import tarfile
import zipfile

import pytest

from attnbench import cli, errors
from attnbench.data import catalog
from language.data import corpora
from scripts import data as data_cli
from tests.scripts.test_data import server  # noqa: F401 (the fixture)

WIKI = {"train": " = A = \n\n the cat sat \n", "valid": " the dog \n", "test": " a <unk> \n"}
PTB = {"train": " the cat <unk> \n the N \n", "valid": " cat the \n", "test": " dog \n"}
# tokens per split as the reader counts them (each line's words, then </s>)
WIKI_TOKENS = {"train": 9, "val": 3, "test": 3}
PTB_TOKENS = {"train": 7, "val": 3, "test": 2}
BYTES = bytes(range(256)) * 2 + b"<page>\xc3\xa9</page>"  # 527 bytes
SPLIT = (500, 15, 12)


def _wikitext_zip(path, top):
    """wikitext-*-v1.zip as released: `top/` holding wiki.{train,valid,test}.tokens."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{top}/", "")
        for split, text in WIKI.items():
            z.writestr(f"{top}/wiki.{split}.tokens", text)


def _simple_examples_tgz(path):
    """Mikolov's simple-examples.tgz: ./simple-examples/data/ptb.*.txt among other files."""
    files = {f"./simple-examples/data/ptb.{s}.txt": t for s, t in PTB.items()}
    files["./simple-examples/data/ptb.char.train.txt"] = "t h e _ c a t\n"
    files["./simple-examples/1-train/train.sh"] = "#!/bin/sh\n"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))


def _enwik8_zip(path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("enwik8", BYTES)


def _serve(monkeypatch, tmp_path, server, name, splits=None):  # noqa: F811
    """The catalog's `name` pointed at the archive in tmp_path/www; the data root tmp_path/root."""
    real = catalog.get(name)
    (remote,) = real.remotes
    tiny = dataclasses.replace(
        real,
        remotes=(dataclasses.replace(remote, url=f"{server}/{remote.filename}"),),
        splits=real.splits if splits is None else splits,
    )
    get = catalog.get
    monkeypatch.setattr(catalog, "get", lambda n: tiny if n == name else get(n))
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    return tmp_path / "www" / remote.filename


def _official(dataset):
    d = corpora.data_config()
    d.dataset, d.source, d.dir = dataset, "official", ""
    return d


@pytest.mark.parametrize(
    ("name", "dataset", "top"),
    [("wikitext103", "wikitext-103", "wikitext-103"), ("wikitext2", "wikitext-2", "wikitext-2")],
)
def test_fetch_wikitext(tmp_path, server, monkeypatch, capsys, name, dataset, top):  # noqa: F811
    _wikitext_zip(_serve(monkeypatch, tmp_path, server, name, splits=WIKI_TOKENS), top)
    assert cli.run(data_cli.main, ["fetch", name]) == 0
    assert f"no checksum is published for {top}-v1.zip" in capsys.readouterr().out
    target = tmp_path / "root" / dataset
    assert sorted(p.name for p in target.glob("wiki.*")) == [
        "wiki.test.tokens",
        "wiki.train.tokens",
        "wiki.valid.tokens",
    ]
    assert cli.run(data_cli.main, ["verify", name]) == 0
    assert "is complete (train 9, val 3, test 3)" in capsys.readouterr().out
    corpus = corpora.load(_official(dataset))
    assert corpus.source == "official"
    assert corpus.description["tokens"] == WIKI_TOKENS  # the reader's count is verify's
    (target / "wiki.valid.tokens").unlink()
    assert cli.run(data_cli.main, ["verify", name]) == 1
    assert "wiki.valid.tokens" in capsys.readouterr().err


def test_fetch_ptb(tmp_path, server, monkeypatch, capsys):  # noqa: F811
    _simple_examples_tgz(_serve(monkeypatch, tmp_path, server, "ptb", splits=PTB_TOKENS))
    assert cli.run(data_cli.main, ["fetch", "ptb"]) == 0
    target = tmp_path / "root" / "ptb"
    assert sorted(p.name for p in target.iterdir()) == [
        "MANIFEST.json",
        "ptb.test.txt",
        "ptb.train.txt",
        "ptb.valid.txt",
    ]
    assert cli.run(data_cli.main, ["verify", "ptb"]) == 0
    corpus = corpora.load(_official("ptb"))
    assert {s: len(v) for s, v in corpus.splits.items()} == PTB_TOKENS
    # as tests/language/data/test_corpora.py reads the same files: the = 4, N = 5, cat = 6
    assert corpus.splits["train"].tolist() == [4, 6, 3, 2, 4, 5, 2]
    assert corpus.splits["test"].tolist() == [3, 2]
    capsys.readouterr()
    (target / "ptb.test.txt").unlink()
    assert cli.run(data_cli.main, ["verify", "ptb"]) == 1
    assert "ptb.test.txt" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "official"),
    [
        ("wikitext103", "103,227,021"),  # Merity et al. 2016, Table 1
        ("wikitext2", "2,088,628"),
    ],
)
def test_wikitext_counts_against_the_published_ones(
    tmp_path,
    server,  # noqa: F811
    monkeypatch,
    capsys,
    name,
    official,
):
    """The real entries' token counts against the tiny release: one problem line per split."""
    _wikitext_zip(
        _serve(monkeypatch, tmp_path, server, name), name.replace("wikitext", "wikitext-")
    )
    assert cli.run(data_cli.main, ["fetch", name]) == 1
    err = capsys.readouterr().err
    assert f"split train has 9 tokens, the official release {official}" in err
    assert "split val has 3 tokens, the official release 217,646" in err
    assert err.count("problem:") == 3


def test_fetch_ptb_refuses_another_archive(tmp_path, server, monkeypatch, capsys):  # noqa: F811
    archive = _serve(monkeypatch, tmp_path, server, "ptb")
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("./simple-examples/data/ptb.train.txt")
        tar.addfile(info, io.BytesIO(b""))
    assert cli.run(data_cli.main, ["fetch", "ptb"]) != 0
    assert "ptb.valid.txt, ptb.test.txt" in capsys.readouterr().err
    assert not (tmp_path / "root" / "ptb").exists()


def test_fetch_enwik8(tmp_path, server, monkeypatch, capsys):  # noqa: F811
    # The reader insists on ENWIK8_SPLIT's 100,000,000 bytes: the tiny file is read with a
    # tiny split, by count and by load alike.
    monkeypatch.setattr(corpora, "enwik8", functools.partial(corpora.enwik8, split=SPLIT))
    tiny = dict(zip(("train", "val", "test"), SPLIT, strict=True))
    _enwik8_zip(_serve(monkeypatch, tmp_path, server, "enwik8", splits=tiny))
    assert cli.run(data_cli.main, ["fetch", "enwik8"]) == 0
    target = tmp_path / "root" / "enwik8"
    assert (target / "enwik8").read_bytes() == BYTES
    assert cli.run(data_cli.main, ["verify", "enwik8"]) == 0
    assert "is complete (train 500, val 15, test 12)" in capsys.readouterr().out
    corpus = corpora.load(_official("enwik8"))
    assert corpus.splits["test"].tobytes() == BYTES[515:]
    (target / "enwik8").unlink()
    assert cli.run(data_cli.main, ["verify", "enwik8"]) == 1
    assert "enwik8" in capsys.readouterr().err


def test_enwik8_wrong_size_is_a_problem(tmp_path, server, monkeypatch, capsys):  # noqa: F811
    """The real entry's split (the reader's 90M / 5M / 5M bytes) against the tiny file."""
    _enwik8_zip(_serve(monkeypatch, tmp_path, server, "enwik8"))
    assert cli.run(data_cli.main, ["fetch", "enwik8"]) == 1
    assert "527 bytes, expected 100,000,000" in capsys.readouterr().err


def test_the_entries_match_the_readers():
    assert catalog.get("enwik8").splits == dict(
        zip(("train", "val", "test"), corpora.ENWIK8_SPLIT, strict=True)
    )
    for dataset, name in corpora.FETCH_NAMES.items():
        assert catalog.get(name).folder in (dataset, "cifar-10-batches-py"), name
    urls = {catalog.get(n).remotes[0].url for n in ("wikitext103", "wikitext2", "ptb", "enwik8")}
    assert corpora._WIKITEXT_URL.replace("103", "2") in urls and corpora._ENWIK8_URL in urls


def test_missing_data_names_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))
    for dataset, name in corpora.FETCH_NAMES.items():
        with pytest.raises(errors.DataError, match=f"`attnbench-data fetch {name}`"):
            corpora.load(_official(dataset))
    (tmp_path / "ptb").mkdir()  # a folder put there by hand is still read, and named
    with pytest.raises(errors.DataError, match=r"ptb: missing ptb.train.txt"):
        corpora.load(_official("ptb"))
