"""The particle-dynamics task (`config.task = "pointcloud.dynamics"`): GRF's HD-VPD substitute.

Data: episodes of the seeded simulator `pointcloud.dynamics` (rigid boxes and cylinders pushed by
a kinematic gripper; our own generator, not HD-VPD's robot data, which is not public: notes
`grf_masking.md` E4), `config.data.num_{train,val,test}` episodes of `config.data.frames`
frames and `config.data.num_particles` particles, cut into windows of `2 + rollout_steps`
frames (`pointcloud.dynamics.DynamicsWindows`), built once under
`<data root>/pointcloud/dynamics-<hash>`. Models: `pointcloud.interlacer` (`config.model.
interlacer` = unmasked | mp | grf).

Loss (training): one step, frames t-2 and t-1 and the gripper at t in, the positions at t out;
the mean over non-kinematic particles of the squared position error (summed over x, y, z),
divided by `config.model.delta_scale ** 2` (the typical step, so the loss is O(1)). HD-VPD
trains through 6-step rollouts of a rendering loss [E4]; we train one step and evaluate
rollouts.

Metrics, `{name: (sum, count)}` over non-kinematic particles (scene units squared):
  loss             the training loss;
  mse              one-step position error (teacher-forced inputs);
  rollout_mse_k    (evaluation only) the position error after k autoregressive steps: the
                   model's predictions are fed back as the next step's frames t-1 and t-2 (the
                   gripper's positions always come from the data), k = 1..rollout_steps
                   (`config.data.rollout_steps`, default 6 as HD-VPD's rollouts [E4]); computed
                   in the jitted evaluation step by a `lax.scan` over the steps;
  rollout_mse      their mean over the k steps (the default `best_metric`, mode min).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from attnbench import errors, tasks
from attnbench.data import cache
from pointcloud import dynamics, interlacer

__all__ = ["ParticleDynamics", "rollout_metric_names", "position_errors"]


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
                    out.append(f"config.model.local_attention.knn_k={k}: above num_particles - 1")
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
                "generator": "pointcloud.dynamics: own seeded rigid-body pushing simulator "
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
