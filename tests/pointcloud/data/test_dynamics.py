"""pointcloud.data.dynamics, the particle simulator of GRF's HD-VPD substitute: simulator
invariants (rigid objects, floor, determinism, the scripted gripper), contacts, the windows and
the cache."""

import numpy as np
import pytest

from attnbench import errors
from pointcloud.data import dynamics

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
