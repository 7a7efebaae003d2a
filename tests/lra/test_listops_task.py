"""The ListOps task through the trainer on files in the official release format."""

import json

import pytest

from attnbench import config as config_lib
from attnbench import train
from lra.data import listops


def _official_dir(path):
    """A tiny LRA-release-like folder: basic_{train,val,test}.tsv with the official header."""
    splits = listops.generate_splits(
        seed=7, sizes=dict(train=64, val=16, test=24), min_length=5, max_length=40
    )
    path.mkdir()
    for name, file in listops.SPLIT_FILES.items():
        listops.write_tsv(path / file, splits[name])
    return path


def _config(**data):
    c = config_lib.load("lra/listops.py:preset=smoke")
    with c.unlocked():
        for k, v in data.items():
            c.data[k] = v
    return c


@pytest.mark.slow  # ~12 s; the readers' tests check the files, test_matrix trains ListOps
def test_official_files_train_end_to_end(tmp_path):
    directory = _official_dir(tmp_path / "listops-1000")
    summary = train.train_and_evaluate(
        _config(source="official", dir=str(directory)), tmp_path / "run"
    )
    assert summary["data"]["source"] == "official"
    assert summary["data"]["dir"] == str(directory)
    assert summary["num_examples"] == {"train": 64, "val": 16, "test": 24}
    assert summary["metrics"]["test_best"]["num_examples"] == 24
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["steps"] == 12


def test_official_without_a_directory_says_what_to_set(tmp_path, monkeypatch):
    from attnbench import tasks

    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))  # an empty data root: nothing fetched
    with pytest.raises(listops.ListOpsDataError, match="config.data.dir.*basic_train.tsv"):
        tasks.get("lra.listops").load_data(_config(source="official", dir=""))


def test_official_missing_directory_names_it(tmp_path):
    from attnbench import tasks

    missing = tmp_path / "nowhere"
    with pytest.raises(listops.ListOpsDataError, match=str(missing)):
        tasks.get("lra.listops").load_data(_config(source="official", dir=str(missing)))


def test_unknown_data_source():
    from attnbench import tasks

    with pytest.raises(ValueError, match="'generated' and 'official'"):
        tasks.get("lra.listops").load_data(_config(source="standin"))


def test_unknown_task_lists_known_ones():
    from attnbench import tasks

    with pytest.raises(tasks.UnknownTaskError, match="known tasks: .*lra.listops"):
        tasks.get("lra.listop")
