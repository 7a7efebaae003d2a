"""A seeded particle-dynamics simulator: rigid objects on a plane pushed by a kinematic gripper.

The public substitute for GRF's HD-VPD robotics data (Reid et al. 2024, arXiv 2410.03462, Sec. 4
and App. C.3; the data is not public, Sec. 6: "Apart from the robotics dataset, all datasets are
standard and freely available online"): our own numpy code, deterministic given the seed; the
paper describes no substitute. Scene units are metres-like; the table is the plane z = 0 and
objects start inside `[-TABLE, TABLE]^2`.

Scene (`simulate_episode`):
  * `num_objects` rigid objects (boxes and upright cylinders, half each on average), each made
    of particles in its body frame: `SURFACE_FRACTION` on the surface (area-uniform over the
    faces) and the rest uniform in the volume. Sizes: half-extents / radius in [0.05, 0.14],
    heights in [0.06, 0.2].
  * a kinematic "gripper": the surface particles of an upright cylinder (radius
    `GRIPPER_RADIUS`, height 0.15) moved along a piecewise-linear path on the plane through the
    objects' centres (so it makes contact), at a constant `speed` per frame. Its particles are
    the kinematic ones; `max(8, N // 16)` of the N particles.
  * Rigid response, planar (SE(2): translation on the plane and rotation about the vertical
    axis, so particles keep their heights and never go below the floor, and distances within an
    object are exact): every frame an object first slides by `DAMPING` times its previous
    frame's motion (friction-like decay), then the gripper disk pushes it out along the contact
    normal by the penetration depth (box: closest point of the rotated rectangle; cylinder:
    centre line), turning it by `ROT_GAIN * (r x push) / R^2` (r the contact point from the
    centre, R the object's bounding radius; at most `MAX_TURN` rad per frame), then overlapping
    objects' bounding circles are pushed apart half each (`SEPARATION_PASSES` passes). Simple
    and deterministic; not a physics engine.
  * Features per particle: `FEATURE_DIM = 16` (HD-VPD's per-pixel features are 16-dim, App.
    C.3): a random per-object colour embedding N(0, 1/4) plus per-particle N(0, 1/100)
    texture; the kinematic flag is a separate array.

Examples (`DynamicsWindows`): windows of `2 + rollout_steps` consecutive frames: the model sees
frames t-2 and t-1 and the gripper at t (t = 2 of the window) and predicts the other particles
at t; a rollout feeds its predictions back for `rollout_steps` steps (HD-VPD trains on 6-step
rollouts, App. C.3). `dynamics_dataset` builds every split's episodes once
(`attnbench.data.cache.build_once` when given a cache root).
"""

from __future__ import annotations

import math
import pathlib

import numpy as np

from attnbench import errors
from attnbench.data import cache

__all__ = [
    "FEATURE_DIM",
    "simulate_episode",
    "dynamics_dataset",
    "DynamicsWindows",
    "gripper_count",
]

FEATURE_DIM = 16  # GRF App. C.3: per-particle features f in R^16
TABLE = 0.6  # objects start with centres in [-TABLE, TABLE]^2
GRIPPER_RADIUS = 0.04
GRIPPER_HEIGHT = 0.15
SURFACE_FRACTION = 0.7
DAMPING = 0.5  # share of the previous frame's motion an object keeps (friction-like decay)
ROT_GAIN = 1.0
MAX_TURN = 0.3  # rad per frame
SEPARATION_PASSES = 2
DEFAULT_SPEED = 0.03  # gripper path length per frame


def gripper_count(num_particles: int) -> int:
    """Gripper (kinematic) particles of a scene of `num_particles`: max(8, N // 16)."""
    return max(8, num_particles // 16)


def _rot(theta) -> np.ndarray:
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s], [s, c]])


def _box_points(rng, n, half, height):
    """Body-frame particles of a box `[-hx, hx] x [-hy, hy] x [0, height]`."""
    hx, hy = half
    n_surf = int(round(n * SURFACE_FRACTION))
    faces = np.array([hy * height, hy * height, hx * height, hx * height, hx * hy, hx * hy])
    face = rng.choice(6, size=n_surf, p=faces / faces.sum())
    u = rng.uniform(-1, 1, size=(n_surf, 2))
    z01 = (u[:, 1] + 1) / 2
    pts = np.empty((n_surf, 3))
    sign = np.where(face % 2 == 0, 1.0, -1.0)
    side_x, side_y, cap = face < 2, (face >= 2) & (face < 4), face >= 4
    pts[side_x] = np.c_[sign[side_x] * hx, u[side_x, 0] * hy, z01[side_x] * height]
    pts[side_y] = np.c_[u[side_y, 0] * hx, sign[side_y] * hy, z01[side_y] * height]
    pts[cap] = np.c_[u[cap, 0] * hx, u[cap, 1] * hy, np.where(sign[cap] > 0, height, 0.0)]
    vol = rng.uniform([-hx, -hy, 0.0], [hx, hy, height], size=(n - n_surf, 3))
    return np.concatenate([pts, vol])


def _cylinder_points(rng, n, radius, height, surface_fraction=SURFACE_FRACTION):
    """Body-frame particles of an upright cylinder of `radius`, z in [0, height]."""
    n_surf = int(round(n * surface_fraction))
    side, cap = 2 * math.pi * radius * height, math.pi * radius**2
    on_side = rng.uniform(size=n_surf) < side / (side + 2 * cap)
    phi = rng.uniform(0, 2 * math.pi, size=n_surf)
    rad = np.where(on_side, radius, radius * np.sqrt(rng.uniform(size=n_surf)))
    z = np.where(on_side, rng.uniform(0, height, n_surf), (rng.uniform(size=n_surf) < 0.5) * height)
    pts = np.c_[rad * np.cos(phi), rad * np.sin(phi), z]
    m = n - n_surf
    phi, rad = rng.uniform(0, 2 * math.pi, m), radius * np.sqrt(rng.uniform(size=m))
    vol = np.c_[rad * np.cos(phi), rad * np.sin(phi), rng.uniform(0, height, m)]
    return np.concatenate([pts, vol])


def _penetration(kind, size, pose, g):
    """Gripper disk (centre g, GRIPPER_RADIUS) against an object's footprint: `(depth,
    normal, contact)`; normal points from the gripper into the object (the push direction)."""
    c, theta = pose[:2], pose[2]
    if kind == "cylinder":
        d = g - c
        dist = float(np.hypot(*d))
        depth = size[0] + GRIPPER_RADIUS - dist
        normal = -d / dist if dist > 1e-12 else np.array([1.0, 0.0])
        return depth, normal, g + normal * GRIPPER_RADIUS
    rot = _rot(theta)
    half = np.asarray(size[:2])
    p = rot.T @ (g - c)
    q = np.clip(p, -half, half)
    if np.any(np.abs(p) > half):
        diff = q - p
        dist = float(np.hypot(*diff))
        depth = GRIPPER_RADIUS - dist
        normal_local = diff / max(dist, 1e-12)
        contact = c + rot @ q
    else:  # the gripper's centre is inside: leave through the nearest face
        axis = int(np.argmin(half - np.abs(p)))
        depth = half[axis] - abs(p[axis]) + GRIPPER_RADIUS
        normal_local = np.zeros(2)
        normal_local[axis] = -1.0 if p[axis] >= 0 else 1.0
        contact = g.copy()
    return depth, rot @ normal_local, contact


def _path(rng, centres, frames, speed):
    """Gripper centre `[frames, 2]`: a polyline through the objects' centres (random order),
    starting 0.3 before the first one, walked at `speed` per frame (clamped at its end)."""
    order = rng.permutation(len(centres))
    pts = [centres[i] for i in order]
    angle = rng.uniform(0, 2 * math.pi)
    start = pts[0] + 0.3 * np.array([math.cos(angle), math.sin(angle)])
    end = pts[-1] + (pts[-1] - (pts[-2] if len(pts) > 1 else start)) * 0.5
    way = np.array([start, *pts, end])
    seg = np.linalg.norm(np.diff(way, axis=0), axis=1)
    cum = np.r_[0.0, np.cumsum(seg)]
    s = np.minimum(np.arange(frames) * speed, cum[-1])
    out = np.empty((frames, 2))
    for d in range(2):
        out[:, d] = np.interp(s, cum, way[:, d])
    return out


def simulate_episode(
    seed,
    *,
    num_particles: int,
    frames: int,
    num_objects: int = 3,
    speed: float = DEFAULT_SPEED,
) -> dict[str, np.ndarray]:
    """One episode of the pushing scene.

    Args:
      seed: an int or a sequence of ints (numpy `default_rng`).
      num_particles: N, all particles (objects and gripper).
      frames: T frames.
      num_objects: rigid objects on the table.
      speed: gripper path length per frame.

    Returns:
      `positions` float32 `[T, N, 3]`, `features` float32 `[N, 16]`, `kinematic` bool `[N]`
      (the gripper's particles, the last `gripper_count(N)`), `object_id` int32 `[N]` (-1 for
      the gripper), `gripper_path` float64 `[T, 2]`, `poses` float64 `[T, num_objects, 3]`
      (centre x, y, angle).
    """
    n_grip = gripper_count(num_particles)
    n_obj = num_particles - n_grip
    if num_objects < 1 or n_obj < 4 * num_objects or frames < 1:
        raise errors.ConfigError(
            f"dynamics scene: num_particles={num_particles} with num_objects={num_objects} and "
            f"frames={frames}: need num_objects >= 1, frames >= 1 and at least 4 particles per "
            f"object after the gripper's {n_grip}"
        )
    rng = np.random.default_rng(seed)
    counts = np.full(num_objects, n_obj // num_objects)
    counts[: n_obj % num_objects] += 1
    kinds, sizes, bodies, radii = [], [], [], []
    for i in range(num_objects):
        if rng.uniform() < 0.5:
            half = rng.uniform(0.05, 0.14, size=2)
            height = rng.uniform(0.06, 0.2)
            kinds.append("box")
            sizes.append((half[0], half[1]))
            bodies.append(_box_points(rng, counts[i], half, height))
            radii.append(float(np.hypot(*half)))
        else:
            radius, height = rng.uniform(0.05, 0.14), rng.uniform(0.06, 0.2)
            kinds.append("cylinder")
            sizes.append((radius,))
            bodies.append(_cylinder_points(rng, counts[i], radius, height))
            radii.append(radius)
    poses = np.zeros((num_objects, 3))
    for i in range(num_objects):  # rejection sampling of non-overlapping bounding circles
        for _ in range(200):
            poses[i, :2] = rng.uniform(-TABLE, TABLE, size=2)
            if all(
                np.hypot(*(poses[i, :2] - poses[j, :2])) > radii[i] + radii[j] + 0.02
                for j in range(i)
            ):
                break
        poses[i, 2] = rng.uniform(-math.pi, math.pi)
    grip_body = _cylinder_points(rng, n_grip, GRIPPER_RADIUS, GRIPPER_HEIGHT, 1.0)
    path = _path(rng, poses[:, :2].copy(), frames, speed)
    colours = rng.normal(0, 0.5, size=(num_objects + 1, FEATURE_DIM))
    owner = np.concatenate([np.full(c, i) for i, c in enumerate(counts)] + [np.full(n_grip, -1)])
    features = colours[owner] + rng.normal(0, 0.1, size=(num_particles, FEATURE_DIM))

    all_poses = np.empty((frames, num_objects, 3))
    vel = np.zeros((num_objects, 3))
    for t in range(frames):
        if t > 0:
            before = poses.copy()
            poses = poses + DAMPING * vel
            for i in range(num_objects):
                depth, normal, contact = _penetration(kinds[i], sizes[i], poses[i], path[t])
                if depth > 0:
                    push = normal * depth
                    r = contact - poses[i, :2]
                    turn = ROT_GAIN * (r[0] * push[1] - r[1] * push[0]) / radii[i] ** 2
                    poses[i, :2] += push
                    poses[i, 2] += float(np.clip(turn, -MAX_TURN, MAX_TURN))
            for _ in range(SEPARATION_PASSES):
                for i in range(num_objects):
                    for j in range(i + 1, num_objects):
                        d = poses[j, :2] - poses[i, :2]
                        dist = float(np.hypot(*d))
                        overlap = radii[i] + radii[j] - dist
                        if overlap > 0:
                            u = d / dist if dist > 1e-12 else np.array([1.0, 0.0])
                            poses[i, :2] -= u * overlap / 2
                            poses[j, :2] += u * overlap / 2
            vel = poses - before
        all_poses[t] = poses

    positions = np.empty((frames, num_particles, 3), np.float64)
    start = 0
    for i in range(num_objects):
        body = bodies[i]
        c, s = np.cos(all_poses[:, i, 2]), np.sin(all_poses[:, i, 2])  # [T]
        x = c[:, None] * body[None, :, 0] - s[:, None] * body[None, :, 1]
        y = s[:, None] * body[None, :, 0] + c[:, None] * body[None, :, 1]
        sl = slice(start, start + counts[i])
        positions[:, sl, 0] = x + all_poses[:, i, None, 0]
        positions[:, sl, 1] = y + all_poses[:, i, None, 1]
        positions[:, sl, 2] = body[None, :, 2]
        start += counts[i]
    positions[:, n_obj:, :2] = grip_body[None, :, :2] + path[:, None, :]
    positions[:, n_obj:, 2] = grip_body[None, :, 2]
    return {
        "positions": positions.astype(np.float32),
        "features": features.astype(np.float32),
        "kinematic": owner < 0,
        "object_id": owner.astype(np.int32),
        "gripper_path": path,
        "gripper_body": grip_body,
        "poses": all_poses,
    }


class DynamicsWindows:
    """Random-access examples (windows of `2 + rollout_steps` frames) over a split's episodes.

    Example `j`: `positions` float32 `[2 + K, N, 3]` (frames t-2, t-1, t, ..., t+K-1 of one
    episode), `features` float32 `[N, 16]`, `kinematic` float32 `[N]` (1 = gripper). Every
    start frame of every episode is an example: `E * (T - K - 1)` of them.
    """

    def __init__(self, episodes: dict[str, np.ndarray], rollout_steps: int):
        self.positions = episodes["positions"]  # [E, T, N, 3]
        self.features = episodes["features"]  # [E, N, F]
        self.kinematic = episodes["kinematic"].astype(np.float32)  # [E, N]
        self.window = 2 + rollout_steps
        e, t = self.positions.shape[:2]
        self.per_episode = t - self.window + 1
        if self.per_episode < 1 and e:
            raise errors.ConfigError(
                f"dynamics data: episodes of {t} frames are shorter than 2 + rollout_steps = "
                f"{self.window}; raise config.data.frames or lower config.data.rollout_steps"
            )
        self.n = e * max(self.per_episode, 0)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict[str, np.ndarray]:
        return {k: v[0] for k, v in self.gather(np.array([i])).items()}

    def gather(self, idx) -> dict[str, np.ndarray]:
        idx = np.asarray(idx, np.int64)
        if np.any((idx < 0) | (idx >= self.n)):
            raise IndexError(f"example index out of range [0, {self.n})")
        ep, start = np.divmod(idx, self.per_episode)
        frames = start[:, None] + np.arange(self.window)[None]
        return {
            "positions": self.positions[ep[:, None], frames],
            "features": self.features[ep],
            "kinematic": self.kinematic[ep],
        }


_KEYS = ("positions", "features", "kinematic")


def _episodes(count, seed, split_id, num_particles, frames, num_objects, speed):
    eps = [
        simulate_episode(
            (seed, split_id, e),
            num_particles=num_particles,
            frames=frames,
            num_objects=num_objects,
            speed=speed,
        )
        for e in range(count)
    ]
    if not eps:
        return {
            "positions": np.zeros((0, frames, num_particles, 3), np.float32),
            "features": np.zeros((0, num_particles, FEATURE_DIM), np.float32),
            "kinematic": np.zeros((0, num_particles), bool),
        }
    return {k: np.stack([e[k] for e in eps]) for k in _KEYS}


def dynamics_dataset(
    num_train: int,
    num_val: int,
    num_test: int,
    *,
    num_particles: int,
    frames: int,
    seed: int = 0,
    num_objects: int = 3,
    speed: float = DEFAULT_SPEED,
    cache_root: str | pathlib.Path | None = None,
) -> dict[str, dict[str, np.ndarray]]:
    """Episodes of every split: `{"train"|"val"|"test": {positions [E, T, N, 3], features
    [E, N, 16], kinematic [E, N]}}`, `num_*` episodes each, seeded by `(seed, split, episode)`
    (so a split does not change with the others' sizes). With `cache_root`, built once into
    `cache_root/dynamics-<hash>` (`attnbench.data.cache.build_once`) and read back from there."""
    sizes = {"train": num_train, "val": num_val, "test": num_test}
    args = dict(num_particles=num_particles, frames=frames, num_objects=num_objects, speed=speed)

    def build(directory=None):
        out = {}
        for split_id, (split, count) in enumerate(sizes.items()):
            out[split] = _episodes(count, seed, split_id, **args)
            if directory is not None:
                cache.save_arrays(pathlib.Path(directory) / f"{split}.npz", out[split])
        return out

    if cache_root is None:
        return build()
    # The cache key keeps the generator's old name (this module was `pointcloud.dynamics`), so
    # episodes built before the move are found again.
    spec = {"generator": "pointcloud.dynamics v1", "seed": seed, **sizes, **args}
    path = cache.build_once(pathlib.Path(cache_root), "dynamics", spec, build)
    return {s: cache.load_arrays(path / f"{s}.npz", _KEYS) for s in sizes}
