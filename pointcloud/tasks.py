"""Point-cloud tasks registered with the trainer (`config.task = "pointcloud.<name>"`):

  pointcloud.modelnet40    shape classification: cross-entropy; overall accuracy and mean
                           per-class accuracy (`config.evals`, `classification`), SAMSA Tables
                           1, 5, 6
  pointcloud.shapenetpart  part segmentation: per-point cross-entropy over every part id; the
                           per-point accuracy, and class- and instance-mean IoU with the
                           prediction restricted to the object's parts (`config.evals`,
                           `segmentation`), SAMSA Tables 1, 6
  pointcloud.dynamics      particle dynamics, GRF's HD-VPD substitute (`ParticleDynamics`, the
                           last section of this module): next-step positions, rollout errors

Models (`config.model.encoder`, `pointcloud.models`): "samsa" and "transformer" (a point
Transformer with any mechanism, the point coordinates passed to it as `coords`), "pointnet" and
"dgcnn" (classification baselines). Data (`config.data.source`, `pointcloud.data`): the official
files under `config.data.dir` or the offline generated shapes (`pointcloud.data.shapes`), named
in every summary. The dynamics task's model is `pointcloud.interlacer`
(`config.model.interlacer`), its data the simulator `pointcloud.data.dynamics`.

Test-time protocol, stated because ModelNet40 numbers depend on it: one pass over the test split
at the points the data gives (no voting over rotated or re-sampled copies, no best-of-N seeds);
`config.data.vote` is not implemented and must stay 0.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

import attention
from attnbench import errors, tasks
from attnbench.data import cache
from pointcloud import interlacer, models
from pointcloud.data import dynamics

__all__ = [
    "ModelNetClassification",
    "ShapeNetPartSegmentation",
    "ParticleDynamics",
    "rollout_metric_names",
    "position_errors",
]


def _in_features(config) -> int:
    return 6 if config.data.get("normals", True) else 3


def _points(batch):
    mask = batch.get("point_mask")
    return batch["points"], (None if mask is None else mask > 0)


class _PointTask(tasks.Task):
    """Shared plumbing: data loading through `pointcloud.data`, config checks."""

    dataset = ""
    attention_inputs = ("coords",)  # the point Transformer passes the points' xyz

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
        n = d.num_points
        att = config.get("attention")
        k = None if att is None else att.get("knn_k")
        # grf / grf_dense with graph="knn", and grf_asym (always a k-NN graph): each point links
        # to its knn_k nearest other points; a CLS token, if any, is not a graph node
        if _int(k, 1) and att.get("graph", "knn") == "knn":
            cls = bool(att.get("cls_token", False))
            if k >= n - cls:
                out.append(
                    f"config.attention.knn_k={k}: must be below the {n - cls} points of a cloud "
                    f"(config.data.num_points={n}{', less the CLS token' if cls else ''}); the "
                    "k-NN graph links each point to its knn_k nearest other points"
                )
        dgcnn_k = m.get("dgcnn_k")
        if m.encoder == "dgcnn" and not (_int(dgcnn_k, 1) and dgcnn_k <= n):
            out.append(
                f"config.model.dgcnn_k={dgcnn_k!r}: must be an integer in [1, "
                f"config.data.num_points={n}] (DGCNN's neighbours, the point itself included)"
            )
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


# --------------------------------------------------------------------------------------------
# pointcloud.dynamics: particle dynamics, GRF's HD-VPD substitute.
#
# Data: episodes of the seeded simulator `pointcloud.data.dynamics` (rigid boxes and cylinders
# pushed by a kinematic gripper; our own generator, not HD-VPD's robot data, which is not public:
# GRF, arXiv 2410.03462, Sec. 6), `config.data.num_{train,val,test}` episodes of
# `config.data.frames` frames and `config.data.num_particles` particles, cut into windows of
# `2 + rollout_steps` frames (`dynamics.DynamicsWindows`), built once under
# `<data root>/pointcloud/dynamics-<hash>`. Models: `pointcloud.interlacer`
# (`config.model.interlacer` = unmasked | mp | grf).
#
# Loss (training): one step, frames t-2 and t-1 and the gripper at t in, the positions at t out;
# the mean over non-kinematic particles of the squared position error (summed over x, y, z),
# divided by `config.model.delta_scale ** 2` (the typical step, so the loss is O(1)). HD-VPD
# trains through 6-step rollouts of a rendering loss (GRF App. C.3); we train one step and
# evaluate rollouts.
#
# Metrics, `{name: (sum, count)}` over non-kinematic particles (scene units squared):
#   loss             the training loss;
#   mse              one-step position error (teacher-forced inputs);
#   rollout_mse_k    (evaluation only) the position error after k autoregressive steps: the
#                    model's predictions are fed back as the next step's frames t-1 and t-2 (the
#                    gripper's positions always come from the data), k = 1..rollout_steps
#                    (`config.data.rollout_steps`, default 6 as HD-VPD's rollouts, GRF App.
#                    C.3); computed in the jitted evaluation step by a `lax.scan` over the steps;
#   rollout_mse      their mean over the k steps (the default `best_metric`, mode min).


def rollout_metric_names(rollout_steps: int) -> tuple[str, ...]:
    """The validation metrics of a config with `rollout_steps`."""
    steps = tuple(f"rollout_mse_{k}" for k in range(1, rollout_steps + 1))
    return ("loss", "mse", "rollout_mse", *steps)


def position_errors(pred, target, kinematic, weight):
    """`(sum, count)` of squared position errors (summed over xyz) of the non-kinematic
    particles of the weighted examples: pred/target `[B, N, 3]`, kinematic `[B, N]`,
    weight `[B]`."""
    err = jnp.sum(jnp.square(pred.astype(jnp.float32) - target.astype(jnp.float32)), -1)
    m = (1.0 - kinematic.astype(jnp.float32)) * weight.astype(jnp.float32)[:, None]
    return (err * m).sum(), m.sum()


def reference_errors(windows: dynamics.DynamicsWindows) -> dict[str, dict[str, float]]:
    """`rollout_mse_k` and their mean (as the task reports them: squared position error summed
    over xyz, averaged over the non-kinematic particles of every window) of two predictors
    that learn nothing: "static" (every particle stays at frame t-1) and "constant_velocity"
    (every particle keeps its t-2 -> t-1 displacement)."""
    out: dict[str, dict[str, float]] = {}
    steps = windows.window - 2
    for name in ("static", "constant_velocity"):
        sums, count = np.zeros(steps), 0.0
        for start in range(0, len(windows), 64):
            w = windows.gather(np.arange(start, min(start + 64, len(windows))))
            x = w["positions"].astype(np.float64)  # [B, 2 + K, N, 3]
            moving = 1.0 - w["kinematic"]  # [B, N]
            step = x[:, 1] - x[:, 0] if name == "constant_velocity" else 0.0
            for k in range(1, steps + 1):
                pred = x[:, 1] + k * step
                err = ((pred - x[:, 1 + k]) ** 2).sum(-1)
                sums[k - 1] += float((err * moving).sum())
            count += float(moving.sum())
        per = sums / max(count, 1.0)
        out[name] = {"rollout_mse": float(per.mean())}
        out[name].update({f"rollout_mse_{k}": float(v) for k, v in enumerate(per, 1)})
    return out


def _int(v, lo):
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


@tasks.register("pointcloud.dynamics")
class ParticleDynamics(tasks.Task):
    """Next-step particle positions; rollout errors per step at evaluation."""

    attention_inputs = ("coords", "neighbors")  # the interlacer's positions and k-NN graph

    def check_config(self, config) -> list[str]:
        d, m, out = config.data, config.model, []
        if m.get("interlacer") not in interlacer.MODELS:
            out.append(
                f"config.model.interlacer={m.get('interlacer')!r}: must be one of "
                f"{', '.join(interlacer.MODELS)}"
            )
        if m.get("mp_reduce") not in interlacer.REDUCES:
            out.append(
                f"config.model.mp_reduce={m.get('mp_reduce')!r}: must be one of "
                f"{', '.join(interlacer.REDUCES)}"
            )
        for field, lo in (("rollout_steps", 1), ("frames", 3), ("num_objects", 1),
                          ("num_particles", 16)):  # fmt: skip
            if not _int(d.get(field), lo):
                out.append(f"config.data.{field}={d.get(field)!r}: must be an integer >= {lo}")
        if not _int(m.get("mp_k"), 1):
            out.append(f"config.model.mp_k={m.get('mp_k')!r}: must be an integer >= 1")
        local = m.get("local_attention")
        if m.get("interlacer") == "grf" and local is not None and "name" in local:
            # the GRF blocks' mechanism rules (p_halt a probability, ...); its knn_k against
            # the particles is checked below, naming config.data.num_particles
            if local.name not in attention.names():
                out.append(
                    f"config.model.local_attention.name={local.name!r}: unknown; known: "
                    f"{', '.join(attention.names())}"
                )
            else:
                hparams = {key: v for key, v in local.items() if key != "name"}
                for problem in attention.check(local.name, hparams, num_tokens=None):
                    out.append(f"config.model.local_attention ({problem})")
        for field in ("delta_max", "delta_scale"):
            v = m.get(field)
            if not (isinstance(v, int | float) and not isinstance(v, bool) and v > 0):
                out.append(f"config.model.{field}={v!r}: must be a positive number")
        if not out:
            if d.frames < d.rollout_steps + 2:
                out.append(
                    f"config.data.frames={d.frames}: episodes need at least rollout_steps + 2 = "
                    f"{d.rollout_steps + 2} frames"
                )
            n_obj = d.num_particles - dynamics.gripper_count(d.num_particles)
            if n_obj < 4 * d.num_objects:
                out.append(
                    f"config.data.num_particles={d.num_particles}: too few for "
                    f"{d.num_objects} objects (4 particles each after the gripper's)"
                )
            local = m.get("local_attention")
            if m.interlacer == "grf" and local is not None:
                k = local.get("knn_k", 3)
                if _int(k, 1) and k > d.num_particles - 1:
                    out.append(
                        f"config.model.local_attention.knn_k={k}: above config.data."
                        f"num_particles - 1 = {d.num_particles - 1}"
                    )
            if m.interlacer == "mp" and m.mp_k > d.num_particles - 1:
                out.append(f"config.model.mp_k={m.mp_k}: above num_particles - 1")
        return out

    def default_evals(self, config) -> dict:
        """The task's metrics, one rollout error per step of `config.data.rollout_steps` (the
        config check names a bad value; `attnbench.validate` checks `best_metric` against
        these)."""
        steps = config.data.get("rollout_steps")
        names = rollout_metric_names(steps if _int(steps, 1) else 0)
        return {"metrics": {"type": "task_metrics", "names": names}}

    def attention_length(self, config) -> int | None:
        return config.data.get("num_particles")

    def load_data(self, config) -> tasks.Data:
        self.check(config)
        d = config.data
        args = dict(
            num_particles=d.num_particles, frames=d.frames, seed=d.seed,
            num_objects=d.num_objects, speed=d.speed,
        )  # fmt: skip
        root = cache.data_root(d.dir) / "pointcloud" if d.get("cache", True) else None
        episodes = dynamics.dynamics_dataset(
            d.num_train, d.num_val, d.num_test, cache_root=root, **args
        )
        splits = {s: dynamics.DynamicsWindows(episodes[s], d.rollout_steps) for s in episodes}
        empty = [s for s, w in splits.items() if len(w) == 0]
        if empty:
            raise errors.ConfigError(
                f"config.data.num_{empty[0]}={d[f'num_{empty[0]}']}: the {empty[0]} split has "
                "no examples; use at least 1 episode"
            )
        return tasks.Data(
            train=splits["train"],
            val=splits["val"],
            test=splits["test"],
            source="generated",
            description={
                "generator": "pointcloud.data.dynamics: own seeded rigid-body pushing simulator "
                "(the substitute for GRF's HD-VPD robot data, which is not public)",
                "episodes": {"train": d.num_train, "val": d.num_val, "test": d.num_test},
                "rollout_steps": d.rollout_steps,
                **args,
                # what a model must beat: the same metrics for trivial predictors
                "reference_errors": {
                    split: reference_errors(splits[split]) for split in ("val", "test")
                },
            },
        )

    def build_model(self, config, rngs):
        self.check(config)
        return interlacer.build(
            config.model, config.attention, num_particles=config.data.num_particles, rngs=rngs
        )

    def loss(self, model, batch, *, train: bool, key, **inputs):
        pos = batch["positions"]  # [B, 2 + K, N, 3]
        feats, kin, weight = batch["features"], batch["kinematic"], batch["weight"]
        scale2 = float(model.delta_scale) ** 2
        if train:
            pred = model(pos[:, 0], pos[:, 1], pos[:, 2], feats, kin, train=True, key=key, **inputs)
            s, c = position_errors(pred, pos[:, 2], kin, weight)
            metrics = {}
        else:  # the rollout's first step is the one-step prediction
            metrics = self._rollout(model, pos, feats, kin, weight)
            s, c = metrics["rollout_mse_1"]
        metrics.update(loss=(s / scale2, c), mse=(s, c))
        return s / scale2 / jnp.maximum(c, 1.0), metrics

    @staticmethod
    def _rollout(model, pos, feats, kin, weight) -> dict:
        """Autoregressive rollout over the window's `K = T_window - 2` steps."""

        def step(carry, target):
            p2, p1 = carry
            pred = model(p2, p1, target, feats, kin, train=False, key=None)
            s, c = position_errors(pred, target, kin, weight)
            return (p1, pred), (s, c)

        xs = jnp.moveaxis(pos[:, 2:], 1, 0)  # [K, B, N, 3]
        _, (sums, counts) = jax.lax.scan(step, (pos[:, 0], pos[:, 1]), xs)
        out = {f"rollout_mse_{k + 1}": (sums[k], counts[k]) for k in range(xs.shape[0])}
        out["rollout_mse"] = (sums.sum(), counts.sum())
        return out

    def example_batch(self, config, batch_size: int, seed: int = 0) -> dict:
        """A window of one simulated episode, repeated `batch_size` times (timing, tests): the
        one starting at frame 12, by when the gripper (0.3 from the first object at frame 0,
        `speed` per frame) has reached it."""
        d = config.data
        start = 12
        ep = dynamics.simulate_episode(
            seed, num_particles=d.num_particles, frames=start + d.rollout_steps + 2,
            num_objects=d.num_objects, speed=d.speed,
        )  # fmt: skip
        rep = lambda x: np.repeat(np.asarray(x)[None], batch_size, 0)  # noqa: E731
        return {
            "positions": rep(ep["positions"][start:]),
            "features": rep(ep["features"]),
            "kinematic": rep(ep["kinematic"].astype(np.float32)),
            "weight": np.ones(batch_size, np.float32),
        }
