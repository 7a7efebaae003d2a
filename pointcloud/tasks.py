"""Point-cloud tasks registered with the trainer (`config.task = "pointcloud.<name>"`):

  pointcloud.modelnet40    shape classification: cross-entropy; overall accuracy and mean
                           per-class accuracy (`config.evals`, `classification`), SAMSA Tables
                           1, 5, 6
  pointcloud.shapenetpart  part segmentation: per-point cross-entropy over every part id; the
                           per-point accuracy, and class- and instance-mean IoU with the
                           prediction restricted to the object's parts (`config.evals`,
                           `segmentation`), SAMSA Tables 1, 6
  pointcloud.dynamics      particle dynamics for GRF (`pointcloud.dynamics_task`)

Models (`config.model.encoder`, `pointcloud.models`): "samsa" and "transformer" (a point
Transformer with any mechanism, the point coordinates passed to it as `coords`), "pointnet" and
"dgcnn" (classification baselines). Data (`config.data.source`, `pointcloud.data`): the official
files under `config.data.dir` or the offline generated shapes (`pointcloud.shapes`), named in
every summary.

Test-time protocol, stated because ModelNet40 numbers depend on it: one pass over the test split
at the points the data gives (no voting over rotated or re-sampled copies, no best-of-N seeds);
`config.data.vote` is not implemented and must stay 0.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import optax

from attnbench import errors, tasks
from pointcloud import models

__all__ = ["ModelNetClassification", "ShapeNetPartSegmentation"]


def _in_features(config) -> int:
    return 6 if config.data.get("normals", True) else 3


def _points(batch):
    mask = batch.get("point_mask")
    return batch["points"], (None if mask is None else mask > 0)


class _PointTask(tasks.Task):
    """Shared plumbing: data loading through `pointcloud.data`, config checks."""

    dataset = ""

    def load_data(self, config) -> tasks.Data:
        from pointcloud import data

        self.check(config)
        splits, description = data.load(config.data)
        self._check_description(config, description)
        return tasks.Data(
            splits["train"],
            splits["val"],
            splits["test"],
            source=config.data.source,
            description=description,
            transform=data.train_transform(config.data),
        )

    def _check_description(self, config, description) -> None:
        pass

    def check_config(self, config) -> list[str]:
        d, m, out = config.data, config.model, []
        if d.get("dataset") != self.dataset:
            out.append(f"config.data.dataset={d.get('dataset')!r}: the task is {config.task!r}")
        if m.encoder not in self.archs:
            out.append(f"config.model.encoder={m.encoder!r}: known: {', '.join(self.archs)}")
        if m.get("readout", "mean") not in models.READOUTS:
            out.append(f"config.model.readout={m.readout!r}: known: {', '.join(models.READOUTS)}")
        if d.get("vote", 0):
            out.append(
                f"config.data.vote={d.vote}: test-time voting is not implemented; every "
                "reported number is one pass over the test split (set it to 0)"
            )
        if not isinstance(d.get("num_points"), int) or d.num_points < 1:
            out.append(f"config.data.num_points={d.get('num_points')!r}: must be an integer >= 1")
        return out

    def attention_length(self, config) -> int | None:
        """Every point is a token."""
        return int(config.data.num_points)


@tasks.register("pointcloud.modelnet40")
class ModelNetClassification(_PointTask, tasks.ClassificationTask):
    """Clouds `points [B, N, 6]` -> one of `config.data.num_classes` shape classes."""

    dataset = "modelnet40"
    archs = models.ARCHS

    def _check_description(self, config, description) -> None:
        found = int(description.get("num_classes", 0))
        if found > config.data.num_classes:
            raise errors.ConfigError(
                f"the data has {found} classes, more than config.data.num_classes="
                f"{config.data.num_classes}"
            )

    def build_model(self, config, rngs):
        self.check(config)
        return models.build_classifier(
            in_features=_in_features(config),
            num_points=int(config.data.num_points),
            num_classes=int(config.data.num_classes),
            model_cfg=config.model,
            attention_cfg=config.attention,
            rngs=rngs,
        )

    def logits(self, model, batch, *, train: bool, key, **inputs):
        points, mask = _points(batch)
        return model(points, mask=mask, train=train, key=key, **inputs)

    def loss(self, model, batch, *, train: bool, key, **inputs):
        """Cross-entropy; PointNet adds its feature-transform regulariser."""
        if not isinstance(model, models.PointNet):
            return super().loss(model, batch, train=train, key=key, **inputs)
        points, mask = _points(batch)
        logits, reg = model.logits_and_regularizer(points, mask=mask, train=train, key=key)
        loss, metrics = tasks.classification_loss(logits, batch["label"], batch["weight"])
        return loss + reg, metrics

    def example_batch(self, config, batch_size: int, seed: int = 0) -> dict:
        """Random unit-sphere clouds with unit normals of the config's shapes (for timing)."""
        rng = np.random.default_rng(seed)
        n = config.data.num_points
        xyz = rng.standard_normal((batch_size, n, 3))
        xyz /= np.linalg.norm(xyz, axis=-1, keepdims=True)
        parts = [xyz, xyz] if _in_features(config) == 6 else [xyz]
        return {
            "points": np.concatenate(parts, -1).astype(np.float32),
            "label": rng.integers(0, config.data.num_classes, batch_size).astype(np.int32),
            "weight": np.ones(batch_size, np.float32),
        }


def segmentation_loss(logits, parts, weight, point_mask=None):
    """Per-point cross-entropy over every part id, averaged over the real points of the real
    clouds, and the per-point accuracy, as `(mean loss, {"loss", "accuracy": (sum, count)})`."""
    w = jnp.broadcast_to(weight.astype(jnp.float32)[:, None], parts.shape)
    if point_mask is not None:
        w = w * point_mask.astype(jnp.float32)
    logits = logits.astype(jnp.float32)
    losses = optax.softmax_cross_entropy_with_integer_labels(logits, parts.astype(jnp.int32))
    correct = (jnp.argmax(logits, -1) == parts).astype(jnp.float32)
    count = w.sum()
    total = (losses * w).sum()
    metrics = {"loss": (total, count), "accuracy": ((correct * w).sum(), count)}
    return total / jnp.maximum(count, 1.0), metrics


@tasks.register("pointcloud.shapenetpart")
class ShapeNetPartSegmentation(_PointTask):
    """Clouds `points [B, N, 6]` and their category -> a part id per point."""

    dataset = "shapenetpart"
    archs = ("samsa", "transformer")
    metric_names = ("loss", "accuracy")  # per point (`segmentation_loss`)

    def check_config(self, config) -> list[str]:
        out = super().check_config(config)
        parts = config.data.get("parts_per_category")
        if not parts:
            out.append("config.data.parts_per_category is empty: the recipe sets it per source")
        else:
            ids = sorted(p for ps in parts for p in ps)
            if ids != list(range(len(ids))) or len(ids) != config.data.num_parts:
                out.append(
                    f"config.data.parts_per_category: the part ids must be 0..num_parts-1 "
                    f"(config.data.num_parts={config.data.num_parts}), each in one category"
                )
        return out

    def _check_description(self, config, description) -> None:
        found = description.get("parts_per_category")
        if found is not None:
            want = [list(p) for p in config.data.parts_per_category]
            if [list(p) for p in found] != want:
                raise errors.ConfigError(
                    "the data's parts per category differ from config.data.parts_per_category "
                    f"({len(found)} vs {len(want)} categories): the recipe sets them from "
                    "config.data.source"
                )

    def build_model(self, config, rngs):
        self.check(config)
        return models.PointSegmenter(
            in_features=_in_features(config),
            num_points=int(config.data.num_points),
            num_parts=int(config.data.num_parts),
            num_categories=len(config.data.parts_per_category),
            model_cfg=config.model,
            attention_cfg=config.attention,
            rngs=rngs,
        )

    def loss(self, model, batch, *, train: bool, key, **inputs):
        points, mask = _points(batch)
        logits = model(points, batch["category"], mask=mask, train=train, key=key, **inputs)
        return segmentation_loss(logits, batch["part"], batch["weight"], mask)

    def eval_outputs(self, model, batch):
        points, mask = _points(batch)
        return {"logits": model(points, batch["category"], mask=mask, train=False, key=None)}

    def example_batch(self, config, batch_size: int, seed: int = 0) -> dict:
        rng = np.random.default_rng(seed)
        n = config.data.num_points
        parts = config.data.parts_per_category
        cats = rng.integers(0, len(parts), batch_size)
        xyz = rng.standard_normal((batch_size, n, 3))
        xyz /= np.linalg.norm(xyz, axis=-1, keepdims=True)
        feats = [xyz, xyz] if _in_features(config) == 6 else [xyz]
        labels = np.stack([rng.choice(np.asarray(parts[c]), n) for c in cats])
        return {
            "points": np.concatenate(feats, -1).astype(np.float32),
            "category": cats.astype(np.int32),
            "part": labels.astype(np.int32),
            "weight": np.ones(batch_size, np.float32),
        }


# The particle-dynamics task registers itself on import.
from pointcloud import dynamics_task as _dynamics_task  # noqa: E402, F401
