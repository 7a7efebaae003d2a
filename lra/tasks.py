"""Long Range Arena tasks registered with the trainer (`config.task = "lra.<name>"`).

Each task's `check_config` holds the probabilities and shares of its data section to their
ranges before anything is generated or read (ListOps' `value_p`; Text's `val_fraction` and the
stand-in's `standin_test_fraction`; the Retrieval stand-in's `val_fraction` and
`test_fraction`), as its loader would refuse them later.
"""

from __future__ import annotations

import math

import numpy as np

from attnbench import errors, tasks
from attnbench.data import cache, catalog
from lra import models
from lra.data import image, listops, pathfinder, retrieval, text

__all__ = ["ListOps", "Text", "Retrieval", "Image", "Pathfinder"]


def _number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _share(d, field: str, lo: float, hi: float, *, open_lo: bool, why: str) -> list[str]:
    """`config.data.<field>` in (lo, hi) (or [lo, hi) with `open_lo=False`), else the problem."""
    v = d.get(field)
    if _number(v) and (lo < v if open_lo else lo <= v) and v < hi:
        return []
    bracket = "(" if open_lo else "["
    return [f"config.data.{field}={v!r}: must be in {bracket}{lo:g}, {hi:g}) ({why})"]


def _synthetic(config, batch_size: int, seed: int, vocab: int, classes: int, fields) -> dict:
    """A batch of uniformly random non-padding tokens (ids 1..vocab-1) at the config's full
    length, random labels and unit weights: the shapes and dtypes of real batches, for timing."""
    rng = np.random.default_rng(seed)
    shape = (batch_size, config.data.max_length)
    batch = {f: rng.integers(1, vocab, shape).astype(np.int32) for f in fields}
    batch["label"] = rng.integers(0, classes, batch_size).astype(np.int32)
    batch["weight"] = np.ones(batch_size, np.float32)
    return batch


@tasks.register("lra.listops")
class ListOps(tasks.ClassificationTask):
    """LRA ListOps: 10-way classification of the value of a nested list expression."""

    def check_config(self, config) -> list[str]:
        d = config.data
        v = d.get("value_p")
        if d.get("source") == "generated" and not (_number(v) and 0 <= v <= 1):
            return [
                f"config.data.value_p={v!r}: must be in [0, 1] (the probability of an operator "
                "node below max_depth)"
            ]
        return []

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
                cache.data_root(d.dir) / "lra", seed=d.seed, sizes=sizes, **params
            )
            description = {  # relative to the data root: no machine-specific paths in summaries
                "cache": f"lra/{directory.name}",
                "generator": {"seed": d.seed, **params, **sizes},
            }
        elif d.source == "official":
            directory = listops.official_dir(d.dir)  # the fetched release when d.dir is ""
            # relative to the data root when fetched: no machine-specific paths in summaries
            description = (
                {"dir": str(directory)}
                if d.dir
                else {"fetched": f"listops (<data root>/{catalog.get('listops').folder})"}
            )
        else:
            raise errors.ConfigError(
                f"config.data.source={d.source!r}: ListOps knows 'generated' and 'official'"
            )
        splits = {}
        for name in ("train", "val", "test"):
            try:
                tokens, labels = listops.load_split(directory, name, max_length=d.max_length)
            except listops.SourceTooLongError as e:
                raise listops.SourceTooLongError(
                    f"{e} (config.data.max_length, which preset={config.preset} sets to "
                    f"{d.max_length} for generated data); for these files add "
                    "--config.data.max_length=2000, LRA's ListOps length"
                ) from None
            # 16 token ids fit in uint8: a quarter of the host memory of int32.
            splits[name] = tasks.Split({"tokens": tokens.astype(np.uint8), "label": labels})
        return tasks.Data(
            splits["train"], splits["val"], splits["test"], source=d.source, description=description
        )

    def example_batch(self, config, batch_size: int, seed: int = 0) -> dict:
        vocab = len(listops.VOCAB)
        return _synthetic(config, batch_size, seed, vocab, listops.NUM_CLASSES, ["tokens"])

    def build_model(self, config, rngs):
        return models.SequenceClassifier(
            vocab_size=len(listops.VOCAB),
            num_classes=listops.NUM_CLASSES,
            max_len=config.data.max_length,
            model_cfg=config.model,
            attention_cfg=config.attention,
            rngs=rngs,
        )

    def logits(self, model, batch, *, train: bool, key, **inputs):
        return model(batch["tokens"], train=train, key=key, **inputs)


class _ModuleTask(tasks.ClassificationTask):
    """A task whose data module follows the LRA data-module API (`NUM_CLASSES`, `VOCAB_SIZE`,
    `data_config()`, `load(config.data, cache_root) -> (splits, description)`)."""

    module = None  # the data module
    sources = ("official", "standin")

    def load_data(self, config) -> tasks.Data:
        d = config.data
        if d.source not in self.sources:
            raise errors.ConfigError(
                f"config.data.source={d.source!r}: {self.module.__name__} knows "
                f"{', '.join(self.sources)}"
            )
        # Official data is read from config.data.dir; built data is cached under the data root.
        root = cache.data_root("" if d.source == "official" else d.dir) / "lra"
        splits, description = self.module.load(d, root)
        return tasks.Data(
            *(tasks.Split(splits[name]) for name in ("train", "val", "test")),
            source=d.source,
            description=description,
        )

    def example_batch(self, config, batch_size: int, seed: int = 0) -> dict:
        m = self.module
        return _synthetic(config, batch_size, seed, m.VOCAB_SIZE, m.NUM_CLASSES, ["tokens"])

    def build_model(self, config, rngs):
        return models.SequenceClassifier(
            vocab_size=self.module.VOCAB_SIZE,
            num_classes=self.module.NUM_CLASSES,
            max_len=config.data.max_length,
            model_cfg=config.model,
            attention_cfg=config.attention,
            rngs=rngs,
        )

    def logits(self, model, batch, *, train: bool, key, **inputs):
        return model(batch["tokens"], train=train, key=key, **inputs)


@tasks.register("lra.text")
class Text(_ModuleTask):
    """LRA Text: byte-level binary classification of IMDB reviews (or the offline stand-in)."""

    module = text

    def check_config(self, config) -> list[str]:
        d = config.data
        out = _share(d, "val_fraction", 0, 1, open_lo=True, why="the share held out for val")
        if not out and d.get("source") == "standin":
            out += _share(
                d, "standin_test_fraction", 0, 1 - d.val_fraction, open_lo=True,
                why="the stand-in's test share, below 1 - config.data.val_fraction",
            )  # fmt: skip
        return out


@tasks.register("lra.image")
class Image(_ModuleTask):
    """LRA Image: grayscale CIFAR-10 as 1024 pixel tokens (or Fashion-MNIST, the stand-in)."""

    module = image


@tasks.register("lra.pathfinder")
class Pathfinder(_ModuleTask):
    """LRA Pathfinder (and Path-X): are the two markers connected by a contour?"""

    module = pathfinder
    sources = ("official", "generated")


@tasks.register("lra.retrieval")
class Retrieval(_ModuleTask):
    """LRA Retrieval: does one document cite the other? A weight-shared dual encoder."""

    module = retrieval

    def check_config(self, config) -> list[str]:
        d = config.data
        if d.get("source") != "standin":
            return []
        why = "the stand-in's share of linked page pairs"
        out = _share(d, "val_fraction", 0, 1, open_lo=False, why=why + " in val")
        out += _share(d, "test_fraction", 0, 1, open_lo=False, why=why + " in test")
        if not out and d.val_fraction + d.test_fraction >= 1:
            out.append(
                f"config.data.val_fraction={d.val_fraction!r} + config.data.test_fraction="
                f"{d.test_fraction!r}: must be below 1 (the rest is the training split)"
            )
        return out

    def example_batch(self, config, batch_size: int, seed: int = 0) -> dict:
        m = self.module
        fields = ["tokens1", "tokens2"]
        return _synthetic(config, batch_size, seed, m.VOCAB_SIZE, m.NUM_CLASSES, fields)

    def build_model(self, config, rngs):
        return models.DualEncoderClassifier(
            vocab_size=self.module.VOCAB_SIZE,
            num_classes=self.module.NUM_CLASSES,
            max_len=config.data.max_length,
            model_cfg=config.model,
            attention_cfg=config.attention,
            interaction=config.model.interaction,
            rngs=rngs,
        )

    def logits(self, model, batch, *, train: bool, key, **inputs):
        return model(batch["tokens1"], batch["tokens2"], train=train, key=key, **inputs)
