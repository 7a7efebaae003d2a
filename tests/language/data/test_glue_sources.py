"""`attnbench-data fetch glue` (language/data/sources.py) on tiny release files in GLUE's official
layouts, served on 127.0.0.1: the task zips (`<Task>/` members plus sources the reader does not
read), and MRPC's three files, from which train.tsv / dev.tsv / test.tsv are made as
download_glue_data.py makes them. The arranged folder is the reader's (`language.data.glue`,
byte for byte the test_glue.py fixture's), verify counts its splits, and broken releases are one
named error each. The tiny files replace the real ones' published sizes and sha256 here."""

import dataclasses
import hashlib
import zipfile

import pytest

from attnbench import cli
from attnbench.data import cache, catalog
from configs.language import glue as recipe
from language.data import glue
from language.data import sources as language_sources
from scripts import data as data_cli
from tests.language.data.test_glue import glue_tsv  # noqa: F401 (the fixture)
from tests.scripts.test_data import server  # noqa: F401 (the fixture)

MRPC_HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String"
# the fixture's MRPC train rows, then its dev row, in one train file (CRLF line ends)
MRPC_TRAIN = [
    "1\t702876\t702977\tAmrozi accused.\tHe said.",
    "1\t1355540\t1355592\tHe is.\tHe was.",
    "0\t2108705\t2108831\tYucaipa owned.\tNot so.",
]
MRPC_DEV_IDS = "1355540\t1355592\n"
MRPC_TEST = ["1\t1089874\t1089925\tA.\tB."]


def _zip_task(folder_root, path, folder):
    """A GLUE task zip: `folder/` with its split files and an original/ source not read."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{folder}/", "")
        for f in sorted((folder_root / folder).iterdir()):
            z.write(f, f"{folder}/{f.name}")
        z.writestr(f"{folder}/original/raw.txt", "not read\n")


def _release(www, folder_root):
    """The eleven release files in tmp_path/www, from the fixture's glue_data/ folder."""
    for name, (*_, folder) in language_sources._GLUE_FILES.items():
        if folder:
            _zip_task(folder_root, www / name, folder)
    lines = [MRPC_HEADER, *MRPC_TRAIN]
    (www / "msr_paraphrase_train.txt").write_bytes("\r\n".join(lines).encode() + b"\r\n")
    test = [MRPC_HEADER, *MRPC_TEST]
    (www / "msr_paraphrase_test.txt").write_bytes("\n".join(test).encode() + b"\n")
    (www / "mrpc_dev_ids.tsv").write_text(MRPC_DEV_IDS)


def _tiny_counts(folder_root):
    return {
        f"{t}/{s}": len(glue.load(t, s, folder_root))
        for t, splits in language_sources.GLUE_SPLITS.items()
        for s in splits
    }


@pytest.fixture
def tiny_glue(tmp_path, server, glue_tsv, monkeypatch):  # noqa: F811
    """The catalog's glue pointed at tiny release files served locally, with their own sizes
    and sha256 (the real ones' checksum sources kept) and split sizes; the data root in
    tmp_path/root. Returns the fixture's glue_data/ folder (what the arranged folder must be)."""
    www = tmp_path / "www"
    _release(www, glue_tsv)
    real = catalog.get("glue")
    remotes = []
    for r in real.remotes:
        data = (www / r.filename).read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        url = f"{server}/{r.filename}"
        remotes.append(dataclasses.replace(r, url=url, size=len(data), sha256=sha))
    tiny = dataclasses.replace(real, remotes=tuple(remotes), splits=_tiny_counts(glue_tsv))
    get = catalog.get
    monkeypatch.setattr(catalog, "get", lambda n: tiny if n == "glue" else get(n))
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    return glue_tsv


def test_fetch_glue_arranges_the_readers_layout(tmp_path, tiny_glue, capsys):
    assert cli.run(data_cli.main, ["fetch", "glue"]) == 0
    assert "checksums as published" in capsys.readouterr().out
    target = tmp_path / "root" / "glue"
    assert target == cache.data_root() / "glue"  # where language.glue reads with dir=""
    arranged = {str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()}
    expected = {str(p.relative_to(tiny_glue)) for p in tiny_glue.rglob("*") if p.is_file()}
    assert arranged == expected | {"MANIFEST.json"}  # no original/ sources, no release files
    for name in expected:  # MRPC's made files included: the download script's bytes
        assert (target / name).read_bytes() == (tiny_glue / name).read_bytes(), name
    assert glue.load("mrpc", "validation", target).text_a == ["He is."]
    assert glue.load("mrpc", "test", target).text_b == ["B."]
    assert cli.run(data_cli.main, ["verify", "glue"]) == 0
    assert "glue: " in capsys.readouterr().out
    (target / "RTE" / "dev.tsv").unlink()
    assert cli.run(data_cli.main, ["verify", "glue"]) == 1
    err = capsys.readouterr().err
    assert "RTE/dev.tsv" in err  # the manifest names the file
    assert "split rte/validation has no examples, the official release 1" in err


def test_real_split_sizes_against_the_tiny_release(tmp_path, tiny_glue, monkeypatch, capsys):
    real = catalog.get("glue")
    monkeypatch.setattr(
        catalog, "get", lambda n: dataclasses.replace(real, splits=language_sources._GLUE_SIZES)
    )
    assert cli.run(data_cli.main, ["fetch", "glue"]) == 1
    err = capsys.readouterr().err
    assert "split mnli/train has 3 examples, the official release 392,702" in err
    assert err.count("problem:") == len(language_sources._GLUE_SIZES)


def test_a_zip_without_a_split_file_is_named_and_nothing_is_kept(
    tmp_path, tiny_glue, monkeypatch, capsys
):
    www = tmp_path / "www"
    with zipfile.ZipFile(www / "RTE.zip", "w") as z:
        z.writestr("RTE/train.tsv", "index\tsentence1\tsentence2\tlabel\n")
    _rehash(monkeypatch, www, "RTE.zip")
    assert cli.run(data_cli.main, ["fetch", "glue"]) != 0
    err = capsys.readouterr().err
    assert "RTE/dev.tsv, RTE/test.tsv" in err and "RTE.zip" in err
    assert not (tmp_path / "root" / "glue").exists()


@pytest.mark.parametrize(
    ("filename", "text", "match"),
    [
        ("mrpc_dev_ids.tsv", "999\t998\n", "1 of its 1 dev pairs are not in"),
        ("msr_paraphrase_test.txt", MRPC_HEADER + "\n1\t2\tonly three\n", "line 2 has 3"),
    ],
    ids=["dev-pair-missing", "short-row"],
)
def test_broken_mrpc_files_are_one_named_error(
    tmp_path, tiny_glue, monkeypatch, capsys, filename, text, match
):
    www = tmp_path / "www"
    (www / filename).write_text(text, encoding="utf-8")
    _rehash(monkeypatch, www, filename)
    assert cli.run(data_cli.main, ["fetch", "glue"]) != 0
    err = capsys.readouterr().err
    assert match in err and filename in err
    assert not (tmp_path / "root" / "glue").exists()


def _rehash(monkeypatch, www, filename):
    """The tiny catalog entry's size and sha256 of `filename` made the rewritten file's."""
    entry = catalog.get("glue")
    data = (www / filename).read_bytes()
    remotes = tuple(
        dataclasses.replace(r, size=len(data), sha256=hashlib.sha256(data).hexdigest())
        if r.filename == filename
        else r
        for r in entry.remotes
    )
    tiny = dataclasses.replace(entry, remotes=remotes)
    get = catalog.get
    monkeypatch.setattr(catalog, "get", lambda n: tiny if n == "glue" else get(n))


def test_the_entry_matches_the_reader_and_the_recipe():
    d = catalog.get("glue")
    zips = {r.filename for r in d.remotes if r.filename.endswith(".zip")}
    folders = {f for *_, f in language_sources._GLUE_FILES.values() if f}
    # every task the reader knows comes from a zip, except MRPC (made from its three files)
    assert folders == {t.tsv_dir for t in glue.TASKS.values()} - {"MRPC"} and len(zips) == 8
    assert {r.filename for r in d.remotes} - zips == {
        "msr_paraphrase_train.txt",
        "msr_paraphrase_test.txt",
        "mrpc_dev_ids.tsv",
    }
    assert all(r.sha256 and len(r.sha256) == 64 and r.size for r in d.remotes)
    assert set(language_sources.GLUE_SPLITS) == set(glue.TASKS)
    for task, splits in language_sources.GLUE_SPLITS.items():
        assert set(splits) <= set(glue.TASKS[task].splits)
        assert all(not s.startswith("test") for s in splits)
    assert set(d.splits) == {
        f"{t}/{s}" for t, ss in language_sources.GLUE_SPLITS.items() for s in ss
    }
    # the recipe's estimate of each task's training examples is the same published count
    for task, n in recipe.TRAIN_EXAMPLES.items():
        assert d.splits[f"{task.removesuffix('-mm')}/train"] == n
    assert sum(r.size for r in d.remotes) == 375_946_990  # "376 MB"
