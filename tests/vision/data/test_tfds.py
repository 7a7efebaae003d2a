"""The TFDS source (vision/data/tfds.py) against a stand-in `tensorflow_datasets` module: a
dataset not prepared as ArrayRecord is one error naming the `tfds build` command (a run never
starts a download), and a prepared one is read with download=False through `data_source`."""

import sys
import types

import numpy as np
import pytest

from attnbench import errors
from vision.data import loader


class _Builder:
    def __init__(self, name, data_dir, file_format, prepared):
        assert file_format == "array_record"
        self.data_dir = f"{data_dir or '/home/u/tensorflow_datasets'}/{name}/1.0.0"
        self.prepared = prepared
        self.info = types.SimpleNamespace(splits={"train": 3, "test": 2})

    def is_prepared(self):
        return self.prepared


def _fake_tfds(monkeypatch, prepared):
    calls = []
    images = np.zeros((3, 32, 32, 3), np.uint8)

    def data_source(name, split, data_dir, download):
        calls.append((name, split, data_dir, download))
        return [{"image": images[i], "label": i} for i in range(3 if split == "train" else 2)]

    fake = types.ModuleType("tensorflow_datasets")
    fake.builder = lambda name, data_dir, file_format: _Builder(
        name, data_dir, file_format, prepared
    )
    fake.data_source = data_source
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", fake)
    return calls


def _config(directory=""):
    d = loader.data_config("cifar10")
    d.source, d.tfds_name, d.dir = "tfds", "cifar10", directory
    return d


def test_an_unprepared_dataset_names_the_build_command(monkeypatch):
    calls = _fake_tfds(monkeypatch, prepared=False)
    with pytest.raises(errors.DataError) as e:
        loader.load(_config("/data/tfds"))
    message = str(e.value)
    assert "tfds build cifar10 --file_format=array_record --data_dir /data/tfds" in message
    assert "attnbench[tfds-prepare]" in message and "\n" not in message
    assert calls == []  # nothing read, nothing downloaded


def test_a_prepared_dataset_is_read_without_download(monkeypatch):
    calls = _fake_tfds(monkeypatch, prepared=True)
    loader.load(_config())
    assert calls and all(download is False for *_, download in calls)
    assert {split for _, split, _, _ in calls} == {"train", "test"}
