"""The particle-dynamics substitute for GRF's HD-VPD task: simulator invariants (rigid objects,
floor, determinism, the scripted gripper), the windows and cache, the recipe, the three models
(shapes, kinematic particles, gradients, jit) and smoke trainings of each through the trainer."""

import numpy as np
import pytest

import pointcloud.dynamics_task  # noqa: F401  (registers "pointcloud.dynamics")
from attnbench import config as config_lib
from attnbench import errors, tasks, validate
from pointcloud import dynamics

N, T = 200, 12


@pytest.fixture(scope="module")
def episode():
    return dynamics.simulate_episode(3, num_particles=N, frames=T, num_objects=3)


def test_rigid_objects_keep_their_shape_and_stay_above_the_floor(episode):
    pos = episode["positions"].astype(np.float64)
    assert pos.shape == (T, N, 3) and episode["features"].shape == (N, dynamics.FEATURE_DIM)
    assert pos[..., 2].min() >= 0.0  # nothing below the floor z = 0
    for obj in range(3):
        x = pos[:, episode["object_id"] == obj]
        d = np.linalg.norm(x[:, :, None] - x[:, None], axis=-1)  # [T, n, n]
        np.testing.assert_allclose(d, np.broadcast_to(d[0], d.shape), atol=2e-6)
        np.testing.assert_array_equal(x[..., 2], np.broadcast_to(x[0, :, 2], x[..., 2].shape))
    moved = np.abs(np.diff(episode["poses"], axis=0)).max()
    assert moved > 1e-3  # the gripper's path through the objects' centres pushes something


def test_gripper_moves_as_scripted_and_is_the_kinematic_set(episode):
    kin = episode["kinematic"]
    assert kin.sum() == dynamics.gripper_count(N) and np.all(episode["object_id"][kin] == -1)
    path, body = episode["gripper_path"], episode["gripper_body"]
    g = episode["positions"][:, kin]
    np.testing.assert_allclose(g[..., :2], body[None, :, :2] + path[:, None], atol=1e-6)
    np.testing.assert_allclose(g[..., 2], np.broadcast_to(body[:, 2], g[..., 2].shape), atol=1e-7)
    steps = np.linalg.norm(np.diff(path, axis=0), axis=1)
    moving = steps > 1e-9  # constant speed along the polyline until its end (corners shorten)
    assert np.all(steps[moving] <= dynamics.DEFAULT_SPEED + 1e-9)
    assert np.median(steps[moving]) == pytest.approx(dynamics.DEFAULT_SPEED, rel=1e-6)


def test_seeded_determinism(episode):
    again = dynamics.simulate_episode(3, num_particles=N, frames=T, num_objects=3)
    other = dynamics.simulate_episode(4, num_particles=N, frames=T, num_objects=3)
    for key in ("positions", "features", "kinematic"):
        np.testing.assert_array_equal(episode[key], again[key])
    assert not np.allclose(episode["positions"], other["positions"])


def test_box_contact_pushes_away_from_the_gripper():
    # A box at the origin, the gripper disk overlapping its +x face: pushed along -x by the depth.
    depth, normal, _ = dynamics._penetration("box", (0.1, 0.05), np.zeros(3), np.array([0.12, 0]))
    assert depth == pytest.approx(dynamics.GRIPPER_RADIUS - 0.02)
    np.testing.assert_allclose(normal, [-1.0, 0.0])
    depth, normal, _ = dynamics._penetration("cylinder", (0.1,), np.zeros(3), np.array([0, 0.13]))
    assert depth == pytest.approx(0.1 + dynamics.GRIPPER_RADIUS - 0.13)
    np.testing.assert_allclose(normal, [0.0, -1.0])


def test_windows_gather_episode_slices_and_the_cache_round_trips(tmp_path):
    kw = dict(num_particles=64, frames=9, seed=1)
    eps = dynamics.dynamics_dataset(2, 1, 1, cache_root=tmp_path, **kw)
    again = dynamics.dynamics_dataset(2, 1, 1, cache_root=tmp_path, **kw)
    assert len(list(tmp_path.glob("dynamics-*"))) == 1
    np.testing.assert_array_equal(eps["train"]["positions"], again["train"]["positions"])
    np.testing.assert_array_equal(
        eps["val"]["positions"], dynamics.dynamics_dataset(0, 1, 0, **kw)["val"]["positions"]
    )  # a split does not depend on the others' sizes
    win = dynamics.DynamicsWindows(eps["train"], rollout_steps=3)
    assert len(win) == 2 * (9 - 5 + 1)
    ex = win[6]  # episode 1, start frame 1
    np.testing.assert_array_equal(ex["positions"], eps["train"]["positions"][1, 1:6])
    np.testing.assert_array_equal(ex["features"], eps["train"]["features"][1])
    with pytest.raises(errors.ConfigError, match="shorter than 2 \\+ rollout_steps"):
        dynamics.DynamicsWindows(eps["train"], rollout_steps=9)


def test_recipes_and_config_checks():
    paper = config_lib.load("pointcloud/dynamics.py")
    assert paper.data.num_particles == 32_768 and paper.batch_size == 16  # [E4]
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
    from pointcloud import dynamics_task

    assert set(dynamics_task.rollout_metric_names(8)) <= set(evaluators.METRICS)


def test_reference_errors_of_trivial_predictors_by_hand():
    """One episode of 5 frames, 3 particles (the last kinematic), rollout 2: windows start at
    frames 0 and 1. Particle 0 moves +1 in x per frame (constant velocity is exact: 0 error;
    static is off by k^2), particle 1 is still (both exact)."""
    from pointcloud import dynamics, dynamics_task

    t = np.arange(5, dtype=np.float32)
    pos = np.zeros((1, 5, 3, 3), np.float32)
    pos[0, :, 0, 0] = t  # particle 0 moves in x
    pos[0, :, 2, 1] = 7 * t  # the gripper moves fast: never scored
    episodes = {
        "positions": pos,
        "features": np.zeros((1, 3, 16), np.float32),
        "kinematic": np.array([[0, 0, 1]], np.float32),
    }
    ref = dynamics_task.reference_errors(dynamics.DynamicsWindows(episodes, 2))
    # static: step k error of particle 0 is k^2, particle 1 is 0; mean over 2 particles
    assert ref["static"]["rollout_mse_1"] == pytest.approx(0.5)
    assert ref["static"]["rollout_mse_2"] == pytest.approx(2.0)
    assert ref["static"]["rollout_mse"] == pytest.approx(1.25)
    assert ref["constant_velocity"]["rollout_mse"] == pytest.approx(0.0)
