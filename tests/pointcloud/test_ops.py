"""pointcloud.ops against explicit float64 references: farthest-point sampling (greedy max-min
recomputed from scratch at every pick), random sampling, unit-sphere normalisation."""

import numpy as np
import pytest

from pointcloud import ops


def fps_reference(points, m, start):
    """Greedy max-min FPS, float64, recomputing every point's distance to its nearest picked
    point from scratch (O(N m^2)); ties to the lowest index."""
    xyz = np.asarray(points, np.float64)[:, :3]
    picked = [start]
    while len(picked) < m:
        best, best_d = -1, -1.0
        for i in range(len(xyz)):
            d = min(sum((xyz[i, k] - xyz[j, k]) ** 2 for k in range(3)) for j in picked)
            if d > best_d:
                best, best_d = i, d
        picked.append(best)
    return np.array(picked)


@pytest.mark.parametrize("start", [0, 7])
def test_fps_matches_bruteforce(start):
    rng = np.random.default_rng(start)
    points = rng.normal(size=(60, 6))  # extra columns are ignored
    got = ops.farthest_point_sample(points, 15, start=start)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, fps_reference(points, 15, start))


def test_fps_on_a_line_by_hand():
    # x = 0, 1, 2, 3, 10: from 0 the farthest is 10 (index 4); then min distances are
    # 1, 2, 3 (to 0) vs 9, 8, 7 (to 10) -> 3 at index 3; then 1 (idx 1: 1 vs 2) and 2 (2 vs 1)
    # tie at 1 -> the lower index, 1.
    points = np.array([[x, 0.0, 0.0] for x in (0, 1, 2, 3, 10)])
    np.testing.assert_array_equal(ops.farthest_point_sample(points, 4), [0, 4, 3, 1])
    assert sorted(ops.farthest_point_sample(points, 5)) == [0, 1, 2, 3, 4]


def test_fps_rejects_bad_arguments():
    points = np.zeros((5, 3))
    with pytest.raises(ValueError, match="m=6"):
        ops.farthest_point_sample(points, 6)
    with pytest.raises(ValueError, match="start=5"):
        ops.farthest_point_sample(points, 2, start=5)
    with pytest.raises(ValueError, match="shape"):
        ops.farthest_point_sample(np.zeros((5, 2)), 2)


def test_fps_jax_matches_numpy():
    rng = np.random.default_rng(3)
    points = rng.normal(size=(3, 50, 6)).astype(np.float32)
    got = np.asarray(ops.farthest_point_sample_jax(points, 12))
    assert got.shape == (3, 12)
    for b in range(3):
        np.testing.assert_array_equal(got[b], fps_reference(points[b], 12, 0))


def test_random_sample_without_and_with_replacement():
    rng = np.random.default_rng(0)
    idx = ops.random_sample(10, 6, rng)
    assert idx.dtype == np.int64 and len(idx) == 6 and len(set(idx.tolist())) == 6
    assert idx.min() >= 0 and idx.max() < 10
    idx = ops.random_sample(4, 9, rng)
    assert len(idx) == 9 and set(idx.tolist()) == {0, 1, 2, 3}  # every point at least once
    np.testing.assert_array_equal(
        ops.random_sample(10, 6, np.random.default_rng(5)),
        ops.random_sample(10, 6, np.random.default_rng(5)),
    )


def test_normalize_unit_sphere_by_hand():
    # centroid (1, 1, 0); offsets (-1, -1, 0), (3, -1, 0), (-1, 3, 0), (-1, -1, 0);
    # largest norm sqrt(10).
    xyz = np.array([[0, 0, 0], [4, 0, 0], [0, 4, 0], [0, 0, 0]], np.float32)
    want = np.array([[-1, -1, 0], [3, -1, 0], [-1, 3, 0], [-1, -1, 0]]) / np.sqrt(10)
    got = ops.normalize_unit_sphere(xyz)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)
    cloud = np.random.default_rng(1).normal(5, 3, size=(100, 3))
    got = ops.normalize_unit_sphere(cloud)
    np.testing.assert_allclose(got.mean(0), 0, atol=1e-12)
    assert np.isclose(np.linalg.norm(got, axis=1).max(), 1.0)
    same = ops.normalize_unit_sphere(np.ones((4, 3)))
    np.testing.assert_array_equal(same, np.zeros((4, 3)))  # no division by zero
