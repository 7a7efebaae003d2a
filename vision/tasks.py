"""Image classification tasks registered with the trainer: `config.task = "vision.<dataset>"`
for every dataset of `vision.data.DATASETS` (cifar10, cifar100, tiny_imagenet, imagenet,
places365, inaturalist, folder).

`config.model.checkpoint` (a vision recipe's `checkpoint=` argument sets it; absent otherwise):
a timm checkpoint, folder or file, loaded into the model when it is built
(`vision.timm_checkpoints`); a model that does not fit it is a ConfigError naming each
differing field."""

from __future__ import annotations

import math
import os

import jax
import numpy as np

from attnbench import errors, tasks
from vision import data, mixup, models, timm_checkpoints

__all__ = ["ImageClassification"]


def _number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _holds(ok, value) -> bool:
    try:
        return bool(ok(value))
    except (TypeError, ValueError):
        return False


# config.data's augmentation numbers (`vision.data.data_config`; `vision.mixup`): field, rule, why
_DATA_RULES = (
    ("mixup", lambda v: _number(v) and v >= 0, "must be >= 0 (Mixup's Beta alpha; 0 is off)"),
    ("cutmix", lambda v: _number(v) and v >= 0, "must be >= 0 (CutMix's Beta alpha; 0 is off)"),
    ("mix_prob", lambda v: _number(v) and 0 <= v <= 1, "must be in [0, 1] (a probability)"),
    ("switch_prob", lambda v: _number(v) and 0 <= v <= 1, "must be in [0, 1] (a probability)"),
    ("random_erasing", lambda v: _number(v) and 0 <= v <= 1, "must be in [0, 1] (a probability)"),
    (
        "label_smoothing",
        lambda v: _number(v) and 0 <= v < 1,
        "must be in [0, 1) (1 would make every target uniform)",
    ),
)


class ImageClassification(tasks.ClassificationTask):
    """One dataset of `vision.data`: images -> `vision.models.ImageClassifier` -> class.

    Training minimises cross-entropy against the labels, or against soft targets when the
    recipe mixes batches or smooths labels (`config.data.mixup / cutmix / label_smoothing`,
    `vision.mixup`); the reported accuracy is always against the true labels.
    """

    dataset = ""

    def __init__(self):
        self._mix: dict | None = None  # set by build_model from the config

    def load_data(self, config) -> tasks.Data:
        d = config.data
        self.check(config)
        splits, description = data.load(d, evaluate_only=config.get("total_steps") == 0)
        train_fn, eval_fn = data.transforms_for(d)
        if description["num_classes"] > d.num_classes:
            raise errors.ConfigError(
                f"the data has {description['num_classes']} classes, more than the model's "
                f"config.data.num_classes={d.num_classes}"
            )
        val = data.Mapped(splits["val"], eval_fn)
        test = val if splits["test"] is splits["val"] else data.Mapped(splits["test"], eval_fn)
        return tasks.Data(
            splits["train"],
            val,
            test,
            source=d.source,
            description=description,
            transform=train_fn,
        )

    def check_config(self, config) -> list[str]:
        """The task's own problems of `config` (`attnbench.validate` adds them to its own)."""
        d, m, out = config.data, config.model, []
        if d.dataset != self.dataset:
            out.append(f"config.data.dataset={d.dataset!r}: the task is {config.task!r}")
        if d.num_classes < 1:
            out.append(
                f"config.data.num_classes={d.num_classes}: {self.dataset} takes its classes "
                "from the class folders; set config.data.num_classes to their number"
            )
        if d.image_size < 1 or m.patch_size < 1 or d.image_size % m.patch_size:
            out.append(
                f"config.data.image_size={d.image_size}: must be a positive multiple of "
                f"config.model.patch_size={m.patch_size}"
            )
        if d.augment not in data.AUGMENTS:
            out.append(f"config.data.augment={d.augment!r}: known: {', '.join(data.AUGMENTS)}")
        for field, ok, what in _DATA_RULES:
            value = d.get(field)
            if field in d and not _holds(ok, value):
                out.append(f"config.data.{field}={value!r}: {what}")
        checkpoint = m.get("checkpoint", "")
        if checkpoint and not os.path.exists(os.path.expanduser(checkpoint)):
            out.append(
                f"config.model.checkpoint={checkpoint!r}: no such file or folder (a timm "
                "checkpoint: a Hugging Face timm/<model> folder, its model.safetensors, or a "
                ".pth state dict)"
            )
        return out

    def attention_length(self, config) -> int | None:
        """Tokens one attention call sees: the patches (and class token); a window for Swin."""
        m = config.model
        if m.encoder == "swin":
            return m.window_size**2
        if config.data.image_size % max(m.patch_size, 1):
            return None
        return models.num_tokens(m, config.data.image_size)

    def build_model(self, config, rngs):
        self.check(config)
        d = config.data
        self._mix = dict(
            num_classes=int(d.num_classes),
            mixup_alpha=float(d.mixup),
            cutmix_alpha=float(d.cutmix),
            prob=float(d.mix_prob),
            switch_prob=float(d.switch_prob),
            label_smoothing=float(d.label_smoothing),
        )
        head = config.model.get("head_classes", 0) or d.num_classes
        if head < d.num_classes:
            raise errors.ConfigError(
                f"config.model.head_classes={head} is below config.data.num_classes={d.num_classes}"
            )

        def build(rngs):
            return models.ImageClassifier(
                num_classes=head,
                image_size=d.image_size,
                channels=3,
                model_cfg=config.model,
                attention_cfg=config.attention,
                rngs=rngs,
            )

        checkpoint = config.model.get("checkpoint", "")
        if not checkpoint:
            return build(rngs)
        model, info = timm_checkpoints.build_loaded(
            build, checkpoint, config.model, rngs, mean=d.get("mean"), std=d.get("std")
        )
        if jax.process_index() == 0:
            fresh = info["initialised"]
            print(
                f"checkpoint: {info['file']} ({info['architecture'] or info['kind']}, "
                f"{info['tensors']} tensors)"
                + (f"; initial values kept for {', '.join(fresh)}" if fresh else ""),
                flush=True,
            )
        return model

    def _soft(self) -> bool:
        m = self._mix or {}
        return bool(m.get("mixup_alpha") or m.get("cutmix_alpha") or m.get("label_smoothing"))

    def logits(self, model, batch, *, train: bool, key, **inputs):
        return model(batch["image"], train=train, key=key, **inputs)

    def loss(self, model, batch, *, train: bool, key, **inputs):
        """Cross-entropy against the labels, or against soft targets where the recipe mixes
        the batch or smooths the labels (training only)."""
        if not (train and self._soft()):
            return super().loss(model, batch, train=train, key=key, **inputs)
        images, labels, weight = batch["image"], batch["label"], batch["weight"]
        mix_key, key = jax.random.split(key)
        m = self._mix
        if m["mixup_alpha"] or m["cutmix_alpha"]:
            images, targets = mixup.mix(images, labels, mix_key, **m)
        else:
            targets = mixup.one_hot_smooth(labels, m["num_classes"], m["label_smoothing"])
        logits = model(images, train=True, key=key, **inputs)
        return tasks.classification_loss(logits, labels, weight, targets=targets)

    def example_batch(self, config, batch_size: int, seed: int = 0) -> dict:
        """Normalised-looking random images and labels of the config's shapes (for timing)."""
        rng = np.random.default_rng(seed)
        s = config.data.image_size
        return {
            "image": rng.standard_normal((batch_size, s, s, 3)).astype(np.float32),
            "label": rng.integers(0, config.data.num_classes, batch_size).astype(np.int32),
            "weight": np.ones(batch_size, np.float32),
        }


def _register(dataset: str) -> None:
    cls = type(
        f"ImageClassification_{dataset}",
        (ImageClassification,),
        {"dataset": dataset, "__doc__": f"`vision.{dataset}`: {ImageClassification.__doc__}"},
    )
    tasks.register(f"vision.{dataset}")(cls)


for _dataset in data.DATASETS:
    _register(_dataset)
