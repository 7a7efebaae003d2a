"""Offline stand-ins for ModelNet40 and ShapeNetPart: seeded shapes built from parametric
primitives, sampled on their surface with exact outward unit normals. NOT ModelNet40 or
ShapeNetPart data: they match the format (points with normals, class labels, per-point part
labels in a ShapeNet-style global part-id space), not the shapes, so accuracies and mIoUs are
comparable between models run here, never with the papers' numbers.

What the real sets are (facts restated from SAMSA, arXiv 2408.05391, App. A and B, and from
the loaders of yanx27/Pointnet_Pointnet2_pytorch, `data_utils/ModelNetDataLoader.py` and
`data_utils/ShapeNetDataLoader.py`): ModelNet40 has 12,311 pre-aligned CAD shapes in 40 classes
(9,843 train / 2,468 test), used as 1,024 surface points with normals, xyz normalised to the
unit sphere; ShapeNetPart has 16,881 shapes in 16 categories with 50 part labels (each
category owning a contiguous range of part ids), about 2,048-2,500 points per shape. Neither
set can be installed offline (our survey of the PyPI and Debian packages: none ships them,
their loaders download at run time).

Primitives (each with its area in closed form; points are drawn uniformly by area, so a
part's share of the points is its share of the object's area):

* sphere zone (radius r, heights z0..z1, normals outward or inward for the inside of a
  shell): z uniform on [z0, z1] (Archimedes' hat-box theorem), azimuth uniform; area
  2 pi r (z1 - z0).
* box (half extents a, b, c): a face pair chosen with probability proportional to its area,
  a side with probability 1/2, the point uniform on the face; area 8 (ab + bc + ca).
* frustum lateral surface (radii r0 at z = 0 and r1 at z = h; a cylinder when r0 = r1, a
  cone when r1 = 0), outward or inward: the radius from the area CDF, r^2 = r0^2 +
  u (r1^2 - r0^2), azimuth uniform; normal (h cos phi, h sin phi, r0 - r1) / slant; area
  pi (r0 + r1) slant, slant = sqrt(h^2 + (r0 - r1)^2).
* annulus / disk (radii ri..ro in a plane, normal +-z): r^2 uniform on [ri^2, ro^2]; area
  pi (ro^2 - ri^2).
* torus arc (major R, minor r, azimuth phi0..phi1): azimuth uniform, the tube angle theta by
  rejection with acceptance (R + r cos theta) / (R + r) (the area element); area
  2 pi r R (phi1 - phi0).

A shape is a list of primitives placed by rotations and translations only (so normals stay
exact): composite parts touch or overlap slightly and every primitive's whole surface is
sampled, contact faces included (as in ModelNet's non-watertight meshes). The `num_points`
points are split among the primitives by one multinomial draw on their areas, shuffled, and
the xyz are normalised with `pointcloud.ops.normalize_unit_sphere` (normals unchanged). A
part of very small area can receive no point in a small cloud (it is then absent from that
example, as mIoU's absent-part rule handles). Shapes are built z-up and returned y-up (the
rotation (x, y, z) -> (x, z, -y)), as ModelNet40 and ShapeNet are aligned (PointNet++
rotates them about y). `random_pose=True` applies a uniformly random rotation (SO(3)); off by
default because both real sets are pre-aligned.

Classification (`modelnet_like`, 13 classes, `CLASSES`): airplane, bench, bottle, bowl, car,
chair, cone, cup, lamp, monitor, rocket, stool, table. Several share primitives and differ
in proportions or composition: table / bench / stool / chair (a top on legs: box top and
round legs; long narrow top and box legs; round top, 3-4 legs, optional foot ring; seat,
legs and a back), lamp / monitor (a base, a pole or neck, a top part), bottle / cup / cone /
rocket / bowl (surfaces of revolution). Example i of a split has label `i % 13` (balanced;
the first k examples of a larger set equal a smaller set).

Segmentation (`shapenetpart_like`, 7 categories, `CATEGORIES` in sorted order with contiguous
global part ids as ShapeNetPart: `PARTS_PER_CATEGORY`): Airplane (body, wing, tail, engine),
Car (body, hood, roof, wheel), Chair (back, seat, leg, arm), Lamp (base, tube, shade, bulb),
Mug (body, handle), Rocket (body, fin, nose), Table (top, leg, support): 24 parts, ids 0-23.
Optional parts, absent from some instances (`OPTIONAL`): Airplane engine (present with
probability 0.7), Chair arm (0.6), Lamp bulb (0.7), Table support (0.6); every other part is
in every instance. Example i has category `i % 7`. Classification draws the same optional
parts with the same probabilities.

Randomness: example i of split s is drawn from `numpy.random.default_rng([seed, s, i])`
(s = 0 train, 1 val, 2 test), so examples do not depend on the split sizes. Each
shape's parameters are independent uniforms on the ranges in `PARAMS` (rendered below, in
the units the shapes are built in; the final normalisation removes the overall scale);
discrete choices are in `CHOICES`. Generation: about 1.3-2 ms per 1,024-point cloud on one core
(measured by the tests: 1,000 clouds in under 5 s).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from attnbench import tasks
from pointcloud import ops

__all__ = [
    "CLASSES",
    "CATEGORIES",
    "PART_NAMES",
    "PARTS_PER_CATEGORY",
    "NUM_PARTS",
    "OPTIONAL",
    "PARAMS",
    "CHOICES",
    "sample_shape",
    "modelnet_like",
    "shapenetpart_like",
]

SPLIT_CODES = {"train": 0, "val": 1, "test": 2}

# Uniform ranges (lo, hi) of each shape's parameters (lengths in arbitrary units, angles in
# radians; "*_ratio" parameters multiply the length named in their comment).
PARAMS: dict[str, dict[str, tuple[float, float]]] = {
    "airplane": {
        "fuselage_radius": (0.04, 0.08),
        "fuselage_length": (0.8, 1.2),
        "wing_half_span": (0.35, 0.7),
        "wing_chord": (0.1, 0.22),
        "wing_thickness": (0.01, 0.03),
        "wing_sweep": (0.0, 0.6),
        "wing_position": (-0.1, 0.15),  # x of the wing root, times fuselage_length
        "tail_chord": (0.08, 0.16),
        "fin_height": (0.1, 0.22),
        "stabilizer_half_span": (0.12, 0.25),
        "engine_radius": (0.025, 0.05),
        "engine_length": (0.1, 0.22),
    },
    "bench": {
        "length": (1.2, 2.0),
        "depth": (0.3, 0.5),
        "top_thickness": (0.03, 0.07),
        "height": (0.35, 0.5),
        "leg_side": (0.04, 0.08),
        "leg_inset": (0.0, 0.08),
    },
    "bottle": {
        "body_radius": (0.1, 0.2),
        "body_height": (0.35, 0.7),
        "shoulder_height": (0.04, 0.15),
        "neck_ratio": (0.2, 0.45),  # neck radius, times body_radius
        "neck_height": (0.06, 0.2),
    },
    "bowl": {
        "radius": (0.3, 0.5),
        "rim_cut": (0.0, 0.5),  # rim at height -rim_cut * radius below the centre
        "thickness": (0.02, 0.05),
    },
    "car": {
        "length": (0.9, 1.3),
        "width": (0.38, 0.5),
        "body_height": (0.12, 0.22),
        "wheel_radius": (0.08, 0.14),
        "wheel_width": (0.05, 0.1),
        "clearance_ratio": (0.4, 0.8),  # times wheel_radius
        "hood_ratio": (0.2, 0.35),  # hood length, times length
        "hood_height_ratio": (0.55, 0.9),  # times body_height
        "roof_ratio": (0.35, 0.6),  # roof length, times length
        "roof_height": (0.1, 0.2),
        "roof_offset": (-0.15, 0.1),  # times length
    },
    "chair": {
        "seat_width": (0.4, 0.6),
        "seat_depth": (0.4, 0.6),
        "seat_thickness": (0.04, 0.08),
        "seat_height": (0.38, 0.5),
        "leg_side": (0.03, 0.06),
        "back_height": (0.3, 0.6),
        "back_thickness": (0.03, 0.06),
        "back_tilt": (0.0, 0.3),
        "arm_height": (0.15, 0.28),
        "arm_width": (0.04, 0.08),
    },
    "cone": {
        "radius": (0.25, 0.6),
        "height": (0.4, 1.2),
    },
    "cup": {
        "radius": (0.3, 0.45),
        "height": (0.5, 1.1),
        "wall": (0.02, 0.05),
        "bottom": (0.02, 0.06),
        "handle_ratio": (0.2, 0.35),  # handle major radius, times height
        "handle_radius": (0.035, 0.07),
        "handle_angle": (1.2, 1.57),  # half-angle of the handle's arc
    },
    "lamp": {
        "base_radius": (0.1, 0.25),
        "base_height": (0.02, 0.06),
        "tube_radius": (0.01, 0.025),
        "tube_height": (0.35, 0.9),
        "shade_radius": (0.12, 0.3),
        "shade_top_ratio": (0.35, 0.8),  # times shade_radius
        "shade_height": (0.15, 0.35),
        "bulb_radius": (0.025, 0.05),
    },
    "monitor": {
        "screen_width": (0.5, 0.9),
        "screen_aspect": (0.5, 0.75),  # height / width
        "screen_thickness": (0.02, 0.06),
        "neck_height": (0.08, 0.25),
        "neck_width": (0.04, 0.1),
        "base_ratio": (0.3, 0.6),  # base width, times screen_width
        "base_depth": (0.15, 0.25),
        "base_thickness": (0.015, 0.04),
    },
    "rocket": {
        "radius": (0.06, 0.14),
        "length": (0.6, 1.2),
        "nose_ratio": (1.5, 4.0),  # nose height, times radius
        "fin_height": (0.12, 0.3),
        "fin_span": (0.06, 0.16),
        "fin_thickness": (0.008, 0.02),
    },
    "stool": {
        "top_radius": (0.15, 0.3),
        "top_thickness": (0.03, 0.07),
        "height": (0.45, 0.8),
        "leg_radius": (0.015, 0.035),
        "leg_ring_ratio": (0.55, 0.85),  # legs' distance from the axis, times top_radius
        "ring_height": (0.25, 0.4),  # foot ring height, times height
    },
    "table": {
        "width": (1.0, 2.0),
        "depth_ratio": (0.45, 0.9),  # times width
        "height": (0.6, 0.9),
        "top_thickness": (0.03, 0.08),
        "leg_radius": (0.025, 0.06),
        "leg_inset": (0.03, 0.15),
        "support_height": (0.1, 0.35),  # times the legs' height
    },
}

# Discrete choices: uniform over the values listed.
CHOICES: dict[str, dict[str, tuple[int, ...]]] = {
    "rocket": {"fins": (3, 4)},
    "stool": {"legs": (3, 4), "foot_ring": (0, 1)},
}

CATEGORIES = ("Airplane", "Car", "Chair", "Lamp", "Mug", "Rocket", "Table")
PART_NAMES: dict[str, tuple[str, ...]] = {
    "Airplane": ("body", "wing", "tail", "engine"),
    "Car": ("body", "hood", "roof", "wheel"),
    "Chair": ("back", "seat", "leg", "arm"),
    "Lamp": ("base", "tube", "shade", "bulb"),
    "Mug": ("body", "handle"),
    "Rocket": ("body", "fin", "nose"),
    "Table": ("top", "leg", "support"),
}
# Probability that an optional part is present (category, part) -> p.
OPTIONAL: dict[tuple[str, str], float] = {
    ("Airplane", "engine"): 0.7,
    ("Chair", "arm"): 0.6,
    ("Lamp", "bulb"): 0.7,
    ("Table", "support"): 0.6,
}
_CATEGORY_SHAPE = {
    "Airplane": "airplane",
    "Car": "car",
    "Chair": "chair",
    "Lamp": "lamp",
    "Mug": "cup",
    "Rocket": "rocket",
    "Table": "table",
}
_SHAPE_CATEGORY = {v: k for k, v in _CATEGORY_SHAPE.items()}


def _parts_per_category() -> list[list[int]]:
    out, first = [], 0
    for name in CATEGORIES:
        k = len(PART_NAMES[name])
        out.append(list(range(first, first + k)))
        first += k
    return out


PARTS_PER_CATEGORY = _parts_per_category()
NUM_PARTS = sum(len(p) for p in PARTS_PER_CATEGORY)
CLASSES = tuple(sorted(PARAMS))


# --------------------------------------------------------------------------------------------
# Primitives: (kind, params) in a local frame; a placed primitive adds (part, rotation, shift).

_I3 = np.eye(3)


def _rx(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1.0, 0], [-s, 0, c]])


def _rz(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


_Z_TO_X = _ry(math.pi / 2)  # local z axis along +x
_Z_TO_Y = _rx(-math.pi / 2)  # local z axis along +y
_Z_UP_TO_Y_UP = np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]])  # (x, y, z) -> (x, z, -y)


def _area(kind: str, p: tuple) -> float:
    if kind == "zone":
        r, z0, z1, _ = p
        return 2 * math.pi * r * (z1 - z0)
    if kind == "box":
        a, b, c = p
        return 8 * (a * b + b * c + c * a)
    if kind == "frustum":
        r0, r1, h, _ = p
        return math.pi * (r0 + r1) * math.hypot(h, r0 - r1)
    if kind == "annulus":
        ri, ro, _ = p
        return math.pi * (ro * ro - ri * ri)
    if kind == "torus":
        big, r, phi0, phi1 = p
        return 2 * math.pi * r * big * (phi1 - phi0)
    raise ValueError(f"unknown primitive {kind!r}")


def _sample(kind: str, p: tuple, n: int, rng: np.random.Generator):
    """`n` points area-uniform on primitive (kind, p) and their unit normals, local frame."""
    if kind == "box":
        half = np.asarray(p, np.float64)
        a, b, c = p
        w = np.array([b * c, a * c, a * b])
        axis = np.searchsorted(np.cumsum(w) / w.sum(), rng.random(n), side="right")
        axis = np.minimum(axis, 2)
        side = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        pts = (2 * rng.random((n, 3)) - 1) * half
        rows = np.arange(n)
        pts[rows, axis] = side * half[axis]
        nrm = np.zeros((n, 3))
        nrm[rows, axis] = side
        return pts, nrm
    u = rng.random((2, n))
    phi = 2 * math.pi * u[1]
    cos, sin = np.cos(phi), np.sin(phi)
    if kind == "zone":
        r, z0, z1, sign = p
        z = z0 + (z1 - z0) * u[0]
        rho = np.sqrt(np.maximum(r * r - z * z, 0.0))
        pts = np.stack([rho * cos, rho * sin, z], axis=1)
        return pts, pts * (sign / r)
    if kind == "frustum":
        r0, r1, h, sign = p
        if abs(r1 - r0) <= 1e-12 * max(r0, r1, 1e-300):
            rad, t = np.full(n, float(r0)), u[0]
        else:
            rad = np.sqrt(r0 * r0 + u[0] * (r1 * r1 - r0 * r0))
            t = (rad - r0) / (r1 - r0)
        pts = np.stack([rad * cos, rad * sin, t * h], axis=1)
        slant = math.hypot(h, r0 - r1)
        nrm = np.stack([h * cos, h * sin, np.full(n, float(r0 - r1))], axis=1) * (sign / slant)
        return pts, nrm
    if kind == "annulus":
        ri, ro, sign = p
        rad = np.sqrt(ri * ri + u[0] * (ro * ro - ri * ri))
        pts = np.stack([rad * cos, rad * sin, np.zeros(n)], axis=1)
        nrm = np.zeros((n, 3))
        nrm[:, 2] = sign
        return pts, nrm
    if kind == "torus":
        big, r, phi0, phi1 = p
        phi = phi0 + (phi1 - phi0) * u[0]
        cos, sin = np.cos(phi), np.sin(phi)
        theta = np.empty(0)
        while len(theta) < n:  # rejection on the area element (R + r cos t) / (R + r)
            cand = 2 * math.pi * rng.random(2 * (n - len(theta)) + 8)
            keep = rng.random(len(cand)) * (big + r) < big + r * np.cos(cand)
            theta = np.concatenate([theta, cand[keep]])
        theta = theta[:n]
        ct, st = np.cos(theta), np.sin(theta)
        nrm = np.stack([ct * cos, ct * sin, st], axis=1)
        rho = big + r * ct
        pts = np.stack([rho * cos, rho * sin, r * st], axis=1)
        return pts, nrm
    raise ValueError(f"unknown primitive {kind!r}")


class _Shape:
    """Placed primitives of one shape: (part name, kind, params, rotation, shift)."""

    def __init__(self):
        self.items: list[tuple[str, str, tuple, np.ndarray, np.ndarray]] = []

    def add(self, part, kind, params, rot=_I3, shift=(0.0, 0.0, 0.0)):
        self.items.append((part, kind, tuple(float(v) for v in params), rot, np.asarray(shift)))

    def box(self, part, center, half, rot=_I3):
        self.add(part, "box", half, rot, center)

    def cylinder(self, part, r, h, rot=_I3, base=(0.0, 0.0, 0.0), bottom=True, top=True, r1=None):
        """A (possibly truncated-cone) solid along local z from `base`, caps optional."""
        r1 = r if r1 is None else r1
        base = np.asarray(base, np.float64)
        self.add(part, "frustum", (r, r1, h, 1.0), rot, base)
        if bottom and r > 0:
            self.add(part, "annulus", (0.0, r, -1.0), rot, base)
        if top and r1 > 0:
            self.add(part, "annulus", (0.0, r1, 1.0), rot, base + rot @ np.array([0.0, 0, h]))

    def sphere(self, part, center, r):
        self.add(part, "zone", (r, -r, r, 1.0), _I3, center)


# --------------------------------------------------------------------------------------------
# Shape builders: (parameters, discrete choices, optional-part flags) -> _Shape, z-up.


def _airplane(p, c, opt) -> _Shape:
    s = _Shape()
    rf, lf = p["fuselage_radius"], p["fuselage_length"]
    s.cylinder("body", rf, lf, _Z_TO_X, (-lf / 2, 0, 0), bottom=False, top=False)
    s.add("body", "zone", (rf, 0.0, rf, 1.0), _Z_TO_X, (lf / 2, 0, 0))  # nose
    s.add("body", "zone", (rf, -rf, 0.0, 1.0), _Z_TO_X, (-lf / 2, 0, 0))  # tail end
    hs, ch, th = p["wing_half_span"], p["wing_chord"], p["wing_thickness"]
    xw = p["wing_position"] * lf
    for side in (1.0, -1.0):
        rot = _rz(side * p["wing_sweep"])
        root = np.array([xw, side * 0.5 * rf, 0.0])
        s.box("wing", root + rot @ np.array([0, side * hs / 2, 0]), (ch / 2, hs / 2, th / 2), rot)
        if opt.get("engine"):
            re, le = p["engine_radius"], p["engine_length"]
            mid = root + rot @ np.array([0, side * 0.45 * hs, -(th / 2 + re)])
            s.cylinder("engine", re, le, _Z_TO_X, mid - np.array([le / 2, 0, 0]))
    tc, fh = p["tail_chord"], p["fin_height"]
    xt = -lf / 2 + tc / 2
    s.box("tail", (xt, 0, rf + fh / 2 - 0.2 * rf), (tc / 2, th / 2, fh / 2))
    s.box("tail", (xt, 0, 0), (tc / 2, p["stabilizer_half_span"], th / 2))
    return s


def _bench(p, c, opt) -> _Shape:
    s = _Shape()
    length, depth, t, h = p["length"], p["depth"], p["top_thickness"], p["height"]
    s.box("top", (0, 0, h - t / 2), (length / 2, depth / 2, t / 2))
    ls, inset = p["leg_side"], p["leg_inset"]
    for sx in (1, -1):
        for sy in (1, -1):
            center = (sx * (length / 2 - ls / 2 - inset), sy * (depth / 2 - ls / 2 - inset / 2))
            s.box("leg", (*center, (h - t) / 2), (ls / 2, ls / 2, (h - t) / 2))
    return s


def _bottle(p, c, opt) -> _Shape:
    s = _Shape()
    rb, hb, hs = p["body_radius"], p["body_height"], p["shoulder_height"]
    rn, hn = rb * p["neck_ratio"], p["neck_height"]
    s.cylinder("body", rb, hb, top=False)
    s.cylinder("body", rb, hs, base=(0, 0, hb), bottom=False, top=False, r1=rn)
    s.cylinder("body", rn, hn, base=(0, 0, hb + hs), bottom=False)
    return s


def _bowl(p, c, opt) -> _Shape:
    s = _Shape()
    r, t = p["radius"], p["thickness"]
    zc = -p["rim_cut"] * r
    s.add("body", "zone", (r, -r, zc, 1.0))
    s.add("body", "zone", (r - t, -(r - t), zc, -1.0))
    ri, ro = math.sqrt((r - t) ** 2 - zc * zc), math.sqrt(r * r - zc * zc)
    s.add("body", "annulus", (ri, ro, 1.0), _I3, (0, 0, zc))
    return s


def _car(p, c, opt) -> _Shape:
    s = _Shape()
    length, width, hb = p["length"], p["width"], p["body_height"]
    rw, ww = p["wheel_radius"], p["wheel_width"]
    z0 = rw * p["clearance_ratio"]
    lh = p["hood_ratio"] * length
    body_len = length - lh
    s.box("body", (-length / 2 + body_len / 2, 0, z0 + hb / 2), (body_len / 2, width / 2, hb / 2))
    hh = hb * p["hood_height_ratio"]
    s.box("hood", (length / 2 - lh / 2, 0, z0 + hh / 2), (lh / 2, width / 2, hh / 2))
    lr, hr = p["roof_ratio"] * length, p["roof_height"]
    xr = -lh / 2 + p["roof_offset"] * length
    s.box("roof", (xr, 0, z0 + hb + hr / 2), (lr / 2, 0.45 * width, hr / 2))
    for x in (length / 2 - 1.3 * rw, -length / 2 + 1.3 * rw):
        for y in (width / 2 - ww / 2, -width / 2 - ww / 2):
            s.cylinder("wheel", rw, ww, _Z_TO_Y, (x, y, rw))
    return s


def _chair(p, c, opt) -> _Shape:
    s = _Shape()
    w, d, ts, hs = p["seat_width"], p["seat_depth"], p["seat_thickness"], p["seat_height"]
    s.box("seat", (0, 0, hs - ts / 2), (w / 2, d / 2, ts / 2))
    ls = p["leg_side"]
    for sx in (1, -1):
        for sy in (1, -1):
            s.box(
                "leg",
                (sx * (w / 2 - ls / 2), sy * (d / 2 - ls / 2), (hs - ts) / 2),
                (ls / 2, ls / 2, (hs - ts) / 2),
            )
    hb, tb = p["back_height"], p["back_thickness"]
    rot = _rx(p["back_tilt"])  # leans towards -y
    bottom = np.array([0, -d / 2 + tb / 2, hs])
    s.box("back", bottom + rot @ np.array([0, 0, hb / 2]), (w / 2, tb / 2, hb / 2), rot)
    if opt.get("arm"):
        ah, aw = p["arm_height"], p["arm_width"]
        for sx in (1, -1):
            x = sx * (w / 2 - aw / 2)
            s.box("arm", (x, 0, hs + ah), (aw / 2, 0.45 * d, aw / 4))
            s.box("arm", (x, 0.4 * d, hs + ah / 2), (aw / 4, aw / 4, ah / 2))
    return s


def _cone(p, c, opt) -> _Shape:
    s = _Shape()
    s.cylinder("body", p["radius"], p["height"], r1=0.0)
    return s


def _cup(p, c, opt) -> _Shape:
    s = _Shape()
    ro, h, wall, bottom = p["radius"], p["height"], p["wall"], p["bottom"]
    ri = ro - wall
    s.add("body", "frustum", (ro, ro, h, 1.0))
    s.add("body", "annulus", (0.0, ro, -1.0))
    s.add("body", "frustum", (ri, ri, h - bottom, -1.0), _I3, (0, 0, bottom))
    s.add("body", "annulus", (0.0, ri, 1.0), _I3, (0, 0, bottom))
    s.add("body", "annulus", (ri, ro, 1.0), _I3, (0, 0, h))
    big, alpha = p["handle_ratio"] * h, p["handle_angle"]
    center = (ro - big * math.cos(alpha), 0.0, h / 2)
    s.add("handle", "torus", (big, p["handle_radius"], -alpha, alpha), _Z_TO_Y, center)
    return s


def _lamp(p, c, opt) -> _Shape:
    s = _Shape()
    rb, hb = p["base_radius"], p["base_height"]
    s.cylinder("base", rb, hb)
    rt, ht = p["tube_radius"], p["tube_height"]
    s.cylinder("tube", rt, ht, base=(0, 0, hb), bottom=False, top=False)
    top = hb + ht
    rs, hs = p["shade_radius"], p["shade_height"]
    # An open shade: one sheet, outer side sampled, centred on the tube's top.
    s.add("shade", "frustum", (rs, rs * p["shade_top_ratio"], hs, 1.0), _I3, (0, 0, top - hs / 2))
    if opt.get("bulb"):
        rbulb = p["bulb_radius"]
        s.sphere("bulb", (0, 0, top + rbulb * 0.8), rbulb)
    return s


def _monitor(p, c, opt) -> _Shape:
    s = _Shape()
    ws, ts = p["screen_width"], p["screen_thickness"]
    hsc = ws * p["screen_aspect"]
    hn, wn = p["neck_height"], p["neck_width"]
    wb, db, tb = ws * p["base_ratio"], p["base_depth"], p["base_thickness"]
    s.box("base", (0, 0, tb / 2), (wb / 2, db / 2, tb / 2))
    s.box("neck", (0, 0, tb + hn / 2), (wn / 2, wn / 4, hn / 2))
    s.box("screen", (0, 0, tb + hn + hsc / 2), (ws / 2, ts / 2, hsc / 2))
    return s


def _rocket(p, c, opt) -> _Shape:
    s = _Shape()
    r, length = p["radius"], p["length"]
    s.cylinder("body", r, length, top=False)
    s.cylinder("nose", r, p["nose_ratio"] * r, base=(0, 0, length), bottom=False, r1=0.0)
    fh, fs, ft = p["fin_height"], p["fin_span"], p["fin_thickness"]
    for k in range(c["fins"]):
        rot = _rz(2 * math.pi * k / c["fins"])
        s.box("fin", rot @ np.array([r + fs / 2, 0, fh / 2]), (fs / 2, ft / 2, fh / 2), rot)
    return s


def _stool(p, c, opt) -> _Shape:
    s = _Shape()
    rt, t, h = p["top_radius"], p["top_thickness"], p["height"]
    s.cylinder("top", rt, t, base=(0, 0, h - t))
    lr, ring = p["leg_radius"], rt * p["leg_ring_ratio"]
    for k in range(c["legs"]):
        a = 2 * math.pi * k / c["legs"]
        s.cylinder("leg", lr, h - t, base=(ring * math.cos(a), ring * math.sin(a), 0), top=False)
    if c["foot_ring"]:
        s.add(
            "support",
            "torus",
            (ring, 0.8 * lr, 0.0, 2 * math.pi),
            _I3,
            (0, 0, p["ring_height"] * h),
        )
    return s


def _table(p, c, opt) -> _Shape:
    s = _Shape()
    w, h, t = p["width"], p["height"], p["top_thickness"]
    d = w * p["depth_ratio"]
    s.box("top", (0, 0, h - t / 2), (w / 2, d / 2, t / 2))
    lr, inset = p["leg_radius"], p["leg_inset"]
    lx, ly = w / 2 - inset - lr, d / 2 - inset - lr
    for sx in (1, -1):
        for sy in (1, -1):
            s.cylinder("leg", lr, h - t, base=(sx * lx, sy * ly, 0), top=False)
    if opt.get("support"):
        z, b = p["support_height"] * (h - t), 0.6 * lr
        for sy in (1, -1):
            s.box("support", (0, sy * ly, z), (lx, b, b))
        s.box("support", (0, 0, z), (b, ly, b))
    return s


_BUILDERS: dict[str, Callable] = {
    "airplane": _airplane,
    "bench": _bench,
    "bottle": _bottle,
    "bowl": _bowl,
    "car": _car,
    "chair": _chair,
    "cone": _cone,
    "cup": _cup,
    "lamp": _lamp,
    "monitor": _monitor,
    "rocket": _rocket,
    "stool": _stool,
    "table": _table,
}
assert tuple(sorted(_BUILDERS)) == CLASSES


def _draw(name: str, rng: np.random.Generator) -> tuple[dict, dict, dict]:
    spec = PARAMS[name]
    lo = np.array([a for a, _ in spec.values()])
    hi = np.array([b for _, b in spec.values()])
    values = lo + (hi - lo) * rng.random(len(spec))
    params = dict(zip(spec, values.tolist(), strict=True))
    choices = {k: int(v[rng.integers(len(v))]) for k, v in CHOICES.get(name, {}).items()}
    category = _SHAPE_CATEGORY.get(name)
    optional = {
        part: bool(rng.random() < prob) for (cat, part), prob in OPTIONAL.items() if cat == category
    }
    return params, choices, optional


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random rotation (QR of a Gaussian matrix with the sign fix)."""
    q, r = np.linalg.qr(rng.standard_normal((3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def sample_shape(
    name: str, num_points: int, rng: np.random.Generator, *, random_pose: bool = False
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """One random shape of class `name` (a key of `PARAMS`): `points` float32 [num_points, 6]
    (xyz normalised to the unit sphere, y up, then unit outward normals), the shape's part
    names in first-seen order and `part` int32 [num_points] indexing that list."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown shape {name!r}; known: {', '.join(CLASSES)}")
    num_points = int(num_points)
    if num_points < 1:
        raise ValueError(f"num_points must be >= 1, got {num_points}")
    params, choices, optional = _draw(name, rng)
    shape = _BUILDERS[name](params, choices, optional)
    areas = np.array([_area(kind, p) for _, kind, p, _, _ in shape.items])
    counts = rng.multinomial(num_points, areas / areas.sum())
    names: list[str] = []
    pts, nrm, part = [], [], []
    for (pname, kind, p, rot, shift), k in zip(shape.items, counts, strict=True):
        if pname not in names:
            names.append(pname)
        if k == 0:
            continue
        x, n = _sample(kind, p, int(k), rng)
        pts.append(x @ rot.T + shift)
        nrm.append(n @ rot.T)
        part.append(np.full(int(k), names.index(pname), np.int32))
    order = rng.permutation(num_points)
    rot = _Z_UP_TO_Y_UP
    if random_pose:
        rot = _random_rotation(rng) @ rot
    xyz = (np.concatenate(pts) @ rot.T)[order]
    normals = (np.concatenate(nrm) @ rot.T)[order]
    points = np.concatenate([ops.normalize_unit_sphere(xyz), normals], axis=1)
    return points.astype(np.float32), names, np.concatenate(part)[order]


def _example_rng(seed: int, split: str, i: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), SPLIT_CODES[split], int(i)])


def _classification_split(split, n, num_points, seed, random_pose) -> tasks.Split:
    n = int(n)
    points = np.empty((n, num_points, 6), np.float32)
    label = (np.arange(n) % len(CLASSES)).astype(np.int32)
    for i in range(n):
        points[i] = sample_shape(
            CLASSES[label[i]], num_points, _example_rng(seed, split, i), random_pose=random_pose
        )[0]
    return tasks.Split({"points": points, "label": label})


def modelnet_like(
    num_train: int,
    num_test: int,
    *,
    num_points: int = 1024,
    seed: int = 0,
    random_pose: bool = False,
    num_val: int = 0,
) -> dict[str, tasks.Split]:
    """ModelNet40-like classification splits `{"train", "test"}` (`attnbench.tasks.Split`s), and
    `"val"` when `num_val > 0`: example i is `{"points": float32 [num_points, 6], "label":
    int32 scalar}`, label `i % len(CLASSES)` (13 classes, `CLASSES`)."""
    num_points = int(num_points)
    sizes = [("train", num_train), ("val", num_val), ("test", num_test)]
    return {
        split: _classification_split(split, n, num_points, seed, random_pose)
        for split, n in sizes
        if split != "val" or n
    }


def _segmentation_split(split, n, num_points, seed, random_pose) -> tasks.Split:
    n = int(n)
    points = np.empty((n, num_points, 6), np.float32)
    part = np.empty((n, num_points), np.int32)
    category = (np.arange(n) % len(CATEGORIES)).astype(np.int32)
    for i in range(n):
        cat = CATEGORIES[category[i]]
        rng = _example_rng(seed, split, i)
        x, names, local = sample_shape(
            _CATEGORY_SHAPE[cat], num_points, rng, random_pose=random_pose
        )
        ids = np.array([PARTS_PER_CATEGORY[category[i]][PART_NAMES[cat].index(k)] for k in names])
        points[i], part[i] = x, ids[local]
    return tasks.Split({"points": points, "part": part, "category": category})


def shapenetpart_like(
    num_train: int,
    num_val: int,
    num_test: int,
    *,
    num_points: int = 2048,
    seed: int = 0,
    random_pose: bool = False,
) -> dict[str, tasks.Split]:
    """ShapeNetPart-like segmentation splits `{"train", "val", "test"}`: example i is
    `{"points": float32 [num_points, 6], "part": int32 [num_points] (global part id, in
    PARTS_PER_CATEGORY[category]), "category": int32 scalar}`, category `i % 7`."""
    num_points = int(num_points)
    return {
        split: _segmentation_split(split, n, num_points, seed, random_pose)
        for split, n in (("train", num_train), ("val", num_val), ("test", num_test))
    }


def _render_params() -> str:
    lines = ["", "Parameter ranges (`PARAMS`, uniform lo..hi) and choices (`CHOICES`):", ""]
    for name in CLASSES:
        items = ", ".join(f"{k} {lo:g}..{hi:g}" for k, (lo, hi) in PARAMS[name].items())
        extra = "; ".join(f"{k} in {set(v)}" for k, v in CHOICES.get(name, {}).items())
        lines.append(f"* {name}: {items}" + (f"; {extra}" if extra else ""))
    return "\n".join(lines) + "\n"


if __doc__ is not None:
    __doc__ += _render_params()
