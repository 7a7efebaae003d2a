"""Long Range Arena tasks registered with the trainer (`config.task = "lra.<name>"`)."""

from __future__ import annotations

import os
import pathlib

import numpy as np

from core import tasks
from lra import listops, models

__all__ = ["ListOps", "data_root"]


def data_root(config_dir: str) -> pathlib.Path:
    """Where generated data is cached: `config.data.dir`, else `$ATTNBENCH_DATA`, else
    `~/.cache/attnbench`."""
    if config_dir:
        return pathlib.Path(config_dir).expanduser()
    return pathlib.Path(os.environ.get("ATTNBENCH_DATA", "~/.cache/attnbench")).expanduser()


@tasks.register("lra.listops")
class ListOps:
    """LRA ListOps: 10-way classification of the value of a nested list expression."""

    def load_data(self, config) -> tasks.Data:
        d = config.data
        if d.source == "generated":
            params = dict(
                max_depth=d.max_depth,
                max_args=d.max_args,
                min_length=d.min_length,
                max_length=d.max_length,
                value_p=d.value_p,
            )
            sizes = dict(train=d.num_train, val=d.num_val, test=d.num_test)
            directory = listops.ensure_generated(
                data_root(d.dir) / "lra", seed=d.seed, sizes=sizes, **params
            )
            description = {  # relative to the data root: no machine-specific paths in summaries
                "cache": f"lra/{directory.name}",
                "generator": {"seed": d.seed, **params, **sizes},
            }
        elif d.source == "official":
            if not d.dir:
                raise listops.ListOpsDataError(
                    "config.data.source='official' needs config.data.dir: the directory "
                    f"holding {', '.join(listops.SPLIT_FILES.values())} (LRA release, "
                    "listops-1000/)"
                )
            directory = pathlib.Path(d.dir).expanduser()
            description = {"dir": str(directory)}
        else:
            raise ValueError(
                f"config.data.source={d.source!r}; ListOps knows 'generated' and 'official'"
            )
        splits = {}
        for name in ("train", "val", "test"):
            tokens, labels = listops.load_split(directory, name, max_length=d.max_length)
            # 16 token ids fit in uint8: a quarter of the host memory of int32.
            splits[name] = tasks.Split({"tokens": tokens.astype(np.uint8), "label": labels})
        return tasks.Data(
            splits["train"], splits["val"], splits["test"], source=d.source, description=description
        )

    def build_model(self, config, rngs):
        return models.SequenceClassifier(
            vocab_size=len(listops.VOCAB),
            num_classes=listops.NUM_CLASSES,
            max_len=config.data.max_length,
            model_cfg=config.model,
            attention_cfg=config.attention,
            rngs=rngs,
        )

    def loss_and_metrics(self, model, batch, *, train: bool, key):
        logits = model(batch["tokens"], train=train, key=key)
        return tasks.classification_loss(logits, batch["label"], batch["weight"])
