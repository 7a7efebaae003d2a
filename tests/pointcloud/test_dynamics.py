"""The particle-dynamics task of GRF's HD-VPD substitute (`pointcloud.dynamics`, in
pointcloud.tasks): the recipe and its config checks, the three models (shapes, kinematic
particles, gradients, jit), smoke trainings of each through the trainer, and the reference errors
of trivial predictors. The simulator's own tests: tests/pointcloud/data/test_dynamics.py."""

import numpy as np
import pytest

import pointcloud.tasks  # noqa: F401  (registers "pointcloud.dynamics")
from attnbench import config as config_lib
from attnbench import errors, tasks, validate


def test_recipes_and_config_checks():
    paper = config_lib.load("pointcloud/dynamics.py")
    assert paper.data.num_particles == 32_768 and paper.batch_size == 16  # GRF App. C.3
    assert paper.optimizer.grad_clip_norm == 0.01 and paper.optimizer.weight_decay == 1e-3
    assert paper.model.interlacer == "grf" and paper.model.local_attention.knn_k == 3
    assert (paper.best_metric, paper.best_mode) == ("rollout_mse", "min")
    cpu = config_lib.load("pointcloud/dynamics.py:preset=cpu,model=mp")
    assert cpu.data.num_particles == 1024 and cpu.model.interlacer == "mp"
    task = tasks.get("pointcloud.dynamics")
    assert task.check_config(cpu) == []
    cpu.data.frames, cpu.best_metric, cpu.model.interlacer = 5, "rollout_mse_9", "gnn"
    problems = "; ".join(task.check_config(cpu))
    assert "config.model.interlacer='gnn'" in problems
    cpu.model.interlacer = "mp"
    problems = "; ".join(task.check_config(cpu))
    assert "config.data.frames=5" in problems
    # best_metric is checked against the task's evaluators (attnbench.validate)
    problems = "; ".join(validate.problems(cpu, task))
    assert "config.best_metric='rollout_mse_9'" in problems and "rollout_mse_4" in problems
    with pytest.raises(errors.ConfigError, match="unknown model 'gnn'"):
        config_lib.load("pointcloud/dynamics.py:model=gnn")


def _model_and_batch(kind):
    from flax import nnx

    c = config_lib.load(f"pointcloud/dynamics.py:preset=smoke,model={kind}")
    c.unlock()
    c.data.num_particles = 40
    task = tasks.get("pointcloud.dynamics")
    model = task.build_model(c, nnx.Rngs(params=0))
    return task, model, task.example_batch(c, 2, seed=5)


@pytest.mark.slow  # ~10 s: compiles three models forward, backward and rollout
@pytest.mark.parametrize("kind", ["unmasked", "mp", "grf"])
def test_models_shapes_gradients_jit_and_rollout(kind):
    import jax
    import jax.numpy as jnp
    from flax import nnx

    task, model, batch = _model_and_batch(kind)
    pos, kin = jnp.asarray(batch["positions"]), jnp.asarray(batch["kinematic"])
    out = model(pos[:, 0], pos[:, 1], pos[:, 2], batch["features"], kin)
    assert out.shape == (2, 40, 3)
    np.testing.assert_array_equal(np.asarray(out)[kin > 0], np.asarray(pos[:, 2])[kin > 0])
    np.testing.assert_allclose(out[kin == 0], pos[:, 1][kin == 0], atol=1e-7)  # zero-init head
    graphdef, params = nnx.split(model, nnx.Param)

    def loss(p, batch):
        return task.loss(nnx.merge(graphdef, p), batch, train=True, key=None)[0]

    grad_fn = jax.jit(jax.grad(loss))
    grads = grad_fn(params, batch)
    leaves = jax.tree.leaves(grads)
    assert all(np.all(np.isfinite(g)) for g in leaves)
    assert np.abs(np.asarray(grads["head"]["kernel"][...])).max() > 0
    # a step away from zero: every parameter then receives gradient
    params2 = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    grads2 = grad_fn(params2, batch)
    assert sum(float(np.abs(np.asarray(g)).sum() > 0) for g in jax.tree.leaves(grads2)) > 0.8 * len(
        leaves
    )

    @jax.jit
    def evaluate(p, batch):
        return task.loss(nnx.merge(graphdef, p), batch, train=False, key=None)[1]

    m = jax.device_get(evaluate(params2, batch))
    ks = [f"rollout_mse_{k}" for k in range(1, 4)]
    assert set(ks) | {"mse", "rollout_mse", "loss"} == set(m)
    assert m["rollout_mse_1"][0] == pytest.approx(m["mse"][0], rel=1e-5)
    assert m["rollout_mse"][0] == pytest.approx(sum(m[k][0] for k in ks), rel=1e-5)


@pytest.mark.slow  # ~15-20 s each: the real pipeline and trainer on the smoke preset
@pytest.mark.parametrize("kind", ["unmasked", "mp", "grf"])
def test_smoke_trains(kind, tmp_path):
    from attnbench import train

    c = config_lib.load(f"pointcloud/dynamics.py:preset=smoke,model={kind}")
    c.unlock()
    c.data.dir = str(tmp_path / "data")
    summary = train.train_and_evaluate(c, tmp_path / "run")
    assert summary["data"]["source"] == "generated"
    test = summary["metrics"]["test_best"]
    assert np.isfinite(test["rollout_mse"]) and test["rollout_mse_1"] == pytest.approx(test["mse"])


def test_rollout_metric_names_are_ones_the_tables_can_read():
    from attnbench import evaluators
    from pointcloud import tasks as point_tasks

    assert set(point_tasks.rollout_metric_names(8)) <= set(evaluators.METRICS)


def test_reference_errors_of_trivial_predictors_by_hand():
    """One episode of 5 frames, 3 particles (the last kinematic), rollout 2: windows start at
    frames 0 and 1. Particle 0 moves +1 in x per frame (constant velocity is exact: 0 error;
    static is off by k^2), particle 1 is still (both exact)."""
    from pointcloud import tasks as point_tasks
    from pointcloud.data import dynamics

    t = np.arange(5, dtype=np.float32)
    pos = np.zeros((1, 5, 3, 3), np.float32)
    pos[0, :, 0, 0] = t  # particle 0 moves in x
    pos[0, :, 2, 1] = 7 * t  # the gripper moves fast: never scored
    episodes = {
        "positions": pos,
        "features": np.zeros((1, 3, 16), np.float32),
        "kinematic": np.array([[0, 0, 1]], np.float32),
    }
    ref = point_tasks.reference_errors(dynamics.DynamicsWindows(episodes, 2))
    # static: step k error of particle 0 is k^2, particle 1 is 0; mean over 2 particles
    assert ref["static"]["rollout_mse_1"] == pytest.approx(0.5)
    assert ref["static"]["rollout_mse_2"] == pytest.approx(2.0)
    assert ref["static"]["rollout_mse"] == pytest.approx(1.25)
    assert ref["constant_velocity"]["rollout_mse"] == pytest.approx(0.0)
