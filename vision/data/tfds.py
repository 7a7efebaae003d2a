"""The TFDS source (`config.data.source="tfds"`): the TFDS dataset `config.data.tfds_name` from
`config.data.dir` (optional: needs `tensorflow-datasets`, the `tfds` extra), read through
`tfds.data_source`.

Selecting it: `--config.data.source=tfds`, with `config.data.tfds_name` as each recipe sets it
(cifar10, cifar100, imagenet2012, places365_small, i_naturalist2021; Tiny-ImageNet is not in
TFDS) and `config.data.dir` the TFDS data_dir ("" = TFDS's default, `$TFDS_DATA_DIR` else
`~/tensorflow_datasets`). Train is TFDS's "train"; test (and val, unless held out) is "test"
where the dataset has one, else "validation".

Prepared format: `tfds.data_source` gives random access (what the grain pipeline samples) to the
ArrayRecord file format only: it builds the dataset with `file_format="array_record"` and
refuses any other format with NotImplementedError (tensorflow_datasets/core/load.py). A dataset
prepared the default way (TFRecord, e.g. by `tfds.load`) is not read; prepare it with

    tfds build NAME --file_format=array_record --data_dir DIR

(tensorflow_datasets/scripts/cli/cli_utils.py), or in Python
`tfds.builder(NAME, data_dir=DIR, file_format="array_record").download_and_prepare()` (which is
what `tfds.data_source` itself runs; `download_and_prepare_kwargs=` passes options to that step),
or convert a TFRecord preparation with `tfds convert_format --dataset_dir=DIR/NAME/VERSION
--out_file_format=array_record --out_dir=...`. imagenet2012 is prepared from
ILSVRC2012_img_train.tar and ILSVRC2012_img_val.tar put by hand in the manual folder
(`DIR/downloads/manual/` by default; TFDS's manual download instructions); places365_small and
i_naturalist2021 download their releases themselves.

What it needs: `tensorflow-datasets`, which installs `array_record` on Linux (the `tfds`
extra). Reading prepared ArrayRecord files does not import TensorFlow (TFDS's guide "TFDS for Jax
and PyTorch", docs/tfless_tfds.ipynb: "TensorFlow is no longer a dependency to read datasets");
preparing a dataset still does (the same guide): the `tfds-prepare` extra adds it. A run never
prepares a dataset itself (a download of up to hundreds of GB, started by loading a config):
one not prepared as ArrayRecord in `config.data.dir` is a `DataError` naming the `tfds build`
command.

Labels are TFDS's (its label files), which need not be the order of the class folders the
official source reads (`vision.data.folders`).
"""

from __future__ import annotations

import numpy as np

from attnbench import errors, extras
from vision.data.views import Mapped


def _read_tfds(d) -> dict:
    tfds = extras.require("tensorflow_datasets", "config.data.source='tfds'")
    if not d.tfds_name:
        raise errors.ConfigError("config.data.source='tfds' needs config.data.tfds_name")
    out = {}
    builder = tfds.builder(d.tfds_name, data_dir=d.dir or None, file_format="array_record")
    if not builder.is_prepared():
        where = f" --data_dir {d.dir}" if d.dir else ""
        raise errors.DataError(
            f"TFDS {d.tfds_name} is not prepared as ArrayRecord in {builder.data_dir}: prepare it "
            f"with `tfds build {d.tfds_name} --file_format=array_record{where}` (needs "
            "TensorFlow: pip install 'attnbench[tfds-prepare]'), or use "
            "config.data.source='official' (attnbench-data fetch)"
        )
    # The evaluation split these papers report: "test" where the release has one (CIFAR),
    # else "validation" (ImageNet, Places365, iNaturalist).
    test = "test" if "test" in builder.info.splits else "validation"
    for split, name in (("train", "train"), ("test", test)):
        source = tfds.data_source(d.tfds_name, split=name, data_dir=d.dir or None, download=False)
        out[split] = Mapped(source, _from_tfds)
    return out


def _from_tfds(example: dict) -> dict:
    return {"image": np.asarray(example["image"], np.uint8), "label": np.int32(example["label"])}
