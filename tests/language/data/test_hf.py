"""`attnbench-data fetch wikitext103 --from hf:FOLDER` (attnbench/data/hf.py): a local copy of
the Hub repository Salesforce/wikitext in its published layout (README.md declaring the
configurations, one parquet file per split with a `text` column, a line per row, blank lines as
empty rows), read through the `datasets` package offline, arranged as the release's
wiki.*.tokens and read by the corpus reader with the same tokens as the release files give."""

import json
import os
import pathlib
import sys

import pytest

from attnbench import cli, extras
from attnbench.data import catalog
from language.data import corpora
from scripts import data as data_cli
from tests.language.data.test_sources import WIKI, WIKI_TOKENS, _official

# offline before `datasets` is first imported (it reads these when imported)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
pa = pytest.importorskip("pyarrow")  # installed with `datasets` (the hf and test extras)
pq = pytest.importorskip("pyarrow.parquet")

_README = """---
license: cc-by-sa-3.0
configs:
{configs}
---
# WikiText (a test copy)
"""
_HUB_SPLITS = {"train": "train", "validation": "valid", "test": "test"}


def _hub_copy(root: pathlib.Path, rows: dict[str, list[str]] | None = None) -> pathlib.Path:
    """Salesforce/wikitext as published: <config>/<split>-00000-of-00001.parquet and a README
    whose YAML header maps each configuration's splits to its files."""
    if rows is None:  # WIKI's files, one row per line with its "\n"; blank lines as ""
        rows = {
            hub: [line if line.strip() else "" for line in WIKI[f].splitlines(keepends=True)]
            for hub, f in _HUB_SPLITS.items()
        }
    blocks = []
    for config in ("wikitext-103-v1", "wikitext-2-v1"):
        (root / config).mkdir(parents=True)
        files = []
        for split, texts in rows.items():
            pq.write_table(
                pa.table({"text": texts}), root / config / f"{split}-00000-of-00001.parquet"
            )
            files.append(f"  - split: {split}\n    path: {config}/{split}-*")
        blocks.append(f"- config_name: {config}\n  data_files:\n" + "\n".join(files))
    (root / "README.md").write_text(_README.format(configs="\n".join(blocks)))
    return root


@pytest.fixture
def tiny_counts(monkeypatch, tmp_path):
    """wikitext103's entry with the tiny files' token counts; the data root in tmp_path."""
    import dataclasses

    pytest.importorskip("datasets")
    real = catalog.get("wikitext103")
    tiny = dataclasses.replace(real, splits=WIKI_TOKENS)
    get = catalog.get
    monkeypatch.setattr(catalog, "get", lambda n: tiny if n == "wikitext103" else get(n))
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    return tmp_path / "root"


def test_fetch_from_a_hub_copy(tmp_path, tiny_counts, capsys):
    hub = _hub_copy(tmp_path / "hub")
    assert cli.run(data_cli.main, ["fetch", "wikitext103", "--from", f"hf:{hub}"]) == 0
    out = capsys.readouterr().out
    assert "from Hugging Face" in out and "no release checksum" in out
    target = tiny_counts / "wikitext-103"
    for f in ("train", "valid", "test"):
        # the release's lines (a blank line's lone space, where the release has one, is gone)
        assert (target / f"wiki.{f}.tokens").read_text() == WIKI[f]
    origin = json.loads((target / "MANIFEST.json").read_text())["origin"]["huggingface"]
    assert origin["repo"] == str(hub.resolve()) and origin["config"] == "wikitext-103-v1"
    assert {s: v["rows"] for s, v in origin["splits"].items()} == {
        "train": 3,
        "validation": 1,
        "test": 1,
    }
    assert cli.run(data_cli.main, ["verify", "wikitext103"]) == 0
    corpus = corpora.load(_official("wikitext-103"))
    assert corpus.description["tokens"] == WIKI_TOKENS
    # nothing of the Hub's cache outside the data root
    assert (tiny_counts / "downloads" / "huggingface").is_dir()


def test_a_hub_copy_with_a_wrong_count_is_a_problem(tmp_path, tiny_counts, capsys):
    hub = _hub_copy(tmp_path / "hub", {"train": ["a b\n"], "validation": ["c\n"], "test": [""]})
    assert cli.run(data_cli.main, ["fetch", "wikitext103", "--from", f"hf:{hub}"]) == 1
    err = capsys.readouterr().err
    assert "split train has 3 tokens, the official release 9" in err
    assert err.count("problem:") == 3


def test_a_copy_that_is_not_wikitext_is_refused(tmp_path, tiny_counts, capsys):
    hub = _hub_copy(tmp_path / "hub", {"train": ["a\n"], "test": ["b\n"]})
    assert cli.run(data_cli.main, ["fetch", "wikitext103", "--from", f"hf:{hub}"]) == 2
    assert "no validation split" in capsys.readouterr().err
    assert not (tiny_counts / "wikitext-103").exists()


def test_a_repository_that_does_not_load_is_one_line(tmp_path, tiny_counts, capsys):
    missing = tmp_path / "nowhere"
    assert cli.run(data_cli.main, ["fetch", "wikitext103", "--from", f"hf:{missing}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: Hugging Face datasets could not load") and "\n" not in err


def test_a_dataset_without_a_hub_source_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))
    assert cli.run(data_cli.main, ["fetch", "ptb", "--from", "hf"]) == 2
    assert "ptb has no Hugging Face source" in capsys.readouterr().err


def test_without_the_package_the_extra_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))
    monkeypatch.setitem(sys.modules, "datasets", None)  # import fails as if not installed
    assert cli.run(data_cli.main, ["fetch", "wikitext2", "--from", "hf"]) == 2
    assert "pip install 'attnbench[hf]'" in capsys.readouterr().err
    assert extras.EXTRAS["datasets"][0] == "hf"
