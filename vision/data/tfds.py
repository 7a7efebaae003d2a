"""The TFDS source (`config.data.source="tfds"`): the TFDS dataset `config.data.tfds_name` from
`config.data.dir` (optional: needs `tensorflow-datasets`, the `tfds` extra), read through
`tfds.data_source`."""

from __future__ import annotations

import numpy as np

from attnbench import errors, extras
from vision.data.views import Mapped


def _read_tfds(d) -> dict:
    tfds = extras.require("tensorflow_datasets", "config.data.source='tfds'")
    if not d.tfds_name:
        raise errors.ConfigError("config.data.source='tfds' needs config.data.tfds_name")
    out = {}
    builder = tfds.builder(d.tfds_name, data_dir=d.dir or None)
    # The evaluation split these papers report: "test" where the release has one (CIFAR),
    # else "validation" (ImageNet, Places365, iNaturalist).
    test = "test" if "test" in builder.info.splits else "validation"
    for split, name in (("train", "train"), ("test", test)):
        source = tfds.data_source(d.tfds_name, split=name, data_dir=d.dir or None)
        out[split] = Mapped(source, _from_tfds)
    return out


def _from_tfds(example: dict) -> dict:
    return {"image": np.asarray(example["image"], np.uint8), "label": np.int32(example["label"])}
