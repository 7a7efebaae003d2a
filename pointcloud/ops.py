"""Point-cloud preprocessing in numpy (and farthest-point sampling in JAX): farthest-point and
random sampling, normalisation to the unit sphere.

Facts restated from the loaders the papers follow (yanx27/Pointnet_Pointnet2_pytorch,
`data_utils/ModelNetDataLoader.py`, read for facts only):

* farthest-point sampling (FPS) is the greedy max-min rule on xyz (the first three columns):
  the first pick is one point (yanx27 draws it at random; here `start`, default 0, so the
  result is deterministic), then each next pick is the point whose squared distance to the
  nearest picked point is largest (ties: the lowest index, numpy's `argmax`).
* `pc_normalize`: centre xyz on their centroid (the mean of the points), then divide by the
  largest distance of a point to it, so the cloud fits the unit ball and touches its sphere.
  Normals are unchanged (a translation and a uniform scale keep them).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "farthest_point_sample",
    "farthest_point_sample_jax",
    "random_sample",
    "normalize_unit_sphere",
]


def farthest_point_sample(points: np.ndarray, m: int, *, start: int = 0) -> np.ndarray:
    """Indices (int64 [m]) of `m` points of `points [N, C]` picked greedily by farthest-point
    sampling on xyz (`points[:, :3]`), starting from point `start`.

    Memory O(N): one running minimum distance per point; time O(N m). The distances are
    computed in float64. `m > N` is an error (FPS cannot repeat points; pad with
    `random_sample` instead)."""
    points = np.asarray(points)
    if points.ndim != 2 or points.shape[1] < 3:
        raise ValueError(f"points must be [N, C>=3], got shape {points.shape}")
    n, m = points.shape[0], int(m)
    if not 1 <= m <= n:
        raise ValueError(f"cannot pick m={m} points by FPS from a cloud of {n} (need 1 <= m <= N)")
    if not 0 <= start < n:
        raise ValueError(f"start={start} is not a point index of a cloud of {n}")
    x, y, z = np.array(points[:, :3].T, dtype=np.float64)  # contiguous coordinate rows
    out = np.empty(m, np.int64)
    nearest = np.full(n, np.inf)
    d, t = np.empty(n), np.empty(n)  # buffers: no allocation per pick (4x faster at N = 10k)
    pick = int(start)
    for i in range(m):
        out[i] = pick
        np.subtract(x, x[pick], out=d)
        np.multiply(d, d, out=d)
        for coord in (y, z):
            np.subtract(coord, coord[pick], out=t)
            np.multiply(t, t, out=t)
            np.add(d, t, out=d)
        np.minimum(nearest, d, out=nearest)
        pick = int(np.argmax(nearest))
    return out


def farthest_point_sample_jax(points, m: int):
    """Batched FPS in JAX: `points [B, N, >=3]` -> int32 indices `[B, m]`, starting from point 0
    of each cloud (the same picks as `farthest_point_sample(..., start=0)`, up to float32 ties).
    A `lax.fori_loop` over the `m` picks, memory O(B N)."""
    import jax
    import jax.numpy as jnp

    xyz = jnp.asarray(points)[..., :3].astype(jnp.float32)
    b, n = xyz.shape[0], xyz.shape[1]
    m = int(m)
    if not 1 <= m <= n:
        raise ValueError(f"cannot pick m={m} points by FPS from clouds of {n} (need 1 <= m <= N)")

    def body(i, state):
        idx, nearest, pick = state
        idx = idx.at[:, i].set(pick)
        centre = jnp.take_along_axis(xyz, pick[:, None, None], axis=1)  # [B, 1, 3]
        d = jnp.sum((xyz - centre) ** 2, axis=-1)
        nearest = jnp.minimum(nearest, d)
        return idx, nearest, jnp.argmax(nearest, axis=-1).astype(jnp.int32)

    state = (
        jnp.zeros((b, m), jnp.int32),
        jnp.full((b, n), jnp.inf, jnp.float32),
        jnp.zeros((b,), jnp.int32),
    )
    idx, _, _ = jax.lax.fori_loop(0, m, body, state)
    return idx


def random_sample(n: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """Indices (int64 [m]) of `m` of `n` points: without replacement when `m <= n` (a random
    subset, in random order), else all `n` points (in random order) followed by `m - n` drawn
    with replacement, so every point appears at least once."""
    n, m = int(n), int(m)
    if n < 1 or m < 1:
        raise ValueError(f"random_sample needs n >= 1 and m >= 1, got n={n}, m={m}")
    if m <= n:
        return rng.choice(n, m, replace=False).astype(np.int64)
    return np.concatenate([rng.permutation(n), rng.integers(0, n, m - n)]).astype(np.int64)


def normalize_unit_sphere(xyz: np.ndarray) -> np.ndarray:
    """`xyz [N, 3]` centred on its centroid and divided by the largest norm (PointNet++'s
    `pc_normalize`), in the input's float dtype. A cloud of coincident points is only
    centred (no division by zero)."""
    xyz = np.asarray(xyz)
    dtype = xyz.dtype if np.issubdtype(xyz.dtype, np.floating) else np.float64
    x = xyz.astype(np.float64)
    x = x - x.mean(axis=0)
    scale = np.sqrt((x * x).sum(axis=1)).max() if len(x) else 0.0
    if scale > 0:
        x = x / scale
    return x.astype(dtype)
