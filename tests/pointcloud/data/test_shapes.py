"""pointcloud.data.shapes: primitives on their surfaces with unit outward normals and area-uniform
density (hand-computed moments), the classification and segmentation sets (labels, part ids
in their category's range, optional parts), determinism, and the stand-in through
pointcloud.data."""

import math
import time

import ml_collections
import numpy as np
import pytest

from pointcloud import data
from pointcloud.data import shapes

RNG = np.random.default_rng


def test_sphere_points_on_surface_with_outward_normals():
    pts, nrm = shapes._sample("zone", (2.0, -2.0, 2.0, 1.0), 4000, RNG(0))
    np.testing.assert_allclose(np.linalg.norm(pts, axis=1), 2.0, rtol=1e-12)
    np.testing.assert_allclose(nrm, pts / 2.0, atol=1e-12)  # outward: the radial direction
    # Area-uniform on a sphere: each coordinate has mean 0 and E[z^2] = r^2 / 3.
    assert abs(pts[:, 2].mean()) < 0.06 and abs((pts[:, 2] ** 2).mean() - 4 / 3) < 0.08
    _, inward = shapes._sample("zone", (2.0, -2.0, 0.0, -1.0), 100, RNG(1))
    assert (inward[:, 2] > -1e-12).all()  # inside of a lower hemisphere faces up


def test_box_faces_normals_and_area_shares():
    half = np.array([1.0, 2.0, 3.0])
    pts, nrm = shapes._sample("box", tuple(half), 30000, RNG(0))
    np.testing.assert_allclose(np.linalg.norm(nrm, axis=1), 1.0)
    axis = np.argmax(np.abs(nrm), axis=1)
    rows = np.arange(len(pts))
    # On the face the normal names, outward (same sign as the coordinate), inside the others.
    np.testing.assert_allclose(pts[rows, axis], nrm[rows, axis] * half[axis])
    assert (np.abs(pts) <= half + 1e-12).all()
    # Face-pair areas 4bc = 24, 4ac = 12, 4ab = 8 of 44 in total.
    shares = np.bincount(axis, minlength=3) / len(pts)
    np.testing.assert_allclose(shares, [24 / 44, 12 / 44, 8 / 44], atol=0.01)
    assert shapes._area("box", (1.0, 2.0, 3.0)) == pytest.approx(88.0)


def test_cone_surface_normals_and_density():
    r0, h = 1.0, 2.0
    pts, nrm = shapes._sample("frustum", (r0, 0.0, h, 1.0), 40000, RNG(0))
    radius = np.hypot(pts[:, 0], pts[:, 1])
    np.testing.assert_allclose(radius, r0 * (1 - pts[:, 2] / h), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(nrm, axis=1), 1.0)
    # Normal _|_ the generator line (direction (-r0 cos, -r0 sin, h)) and pointing outwards.
    phi = np.arctan2(pts[:, 1], pts[:, 0])
    along = np.stack([-r0 * np.cos(phi), -r0 * np.sin(phi), np.full_like(phi, h)], 1)
    np.testing.assert_allclose((nrm * along).sum(1), 0, atol=1e-12)
    assert ((nrm[:, 0] * np.cos(phi) + nrm[:, 1] * np.sin(phi)) > 0).all()
    # Area density proportional to the radius (1 - z/h): E[z] = h / 3.
    assert abs(pts[:, 2].mean() - h / 3) < 0.02
    assert shapes._area("frustum", (1.0, 0.0, 2.0, 1.0)) == pytest.approx(math.pi * math.sqrt(5))


def test_torus_surface_normals_and_density():
    big, r = 1.0, 0.5
    pts, nrm = shapes._sample("torus", (big, r, 0.0, 2 * math.pi), 40000, RNG(0))
    rho = np.hypot(pts[:, 0], pts[:, 1])
    centre = np.stack([pts[:, 0] * big / rho, pts[:, 1] * big / rho, 0 * rho], 1)
    np.testing.assert_allclose(np.linalg.norm(pts - centre, axis=1), r, atol=1e-12)
    np.testing.assert_allclose(nrm, (pts - centre) / r, atol=1e-12)  # outward from the tube
    # Area element (R + r cos t): E[cos t] = (pi r) / (2 pi R) = r / (2R) = 0.25.
    cos_t = (rho - big) / r
    assert abs(cos_t.mean() - 0.25) < 0.015


def test_annulus_radius_density():
    pts, nrm = shapes._sample("annulus", (1.0, 2.0, -1.0), 40000, RNG(0))
    rad = np.hypot(pts[:, 0], pts[:, 1])
    assert rad.min() >= 1.0 and rad.max() <= 2.0 and (nrm == [0, 0, -1]).all()
    # Density proportional to r on [1, 2]: E[r] = (2/3)(8 - 1) / (4 - 1) = 14/9.
    assert abs(rad.mean() - 14 / 9) < 0.01


@pytest.mark.parametrize("name", shapes.CLASSES)
def test_every_class_gives_a_normalised_cloud_with_unit_normals(name):
    points, names, part = shapes.sample_shape(name, 256, RNG(4))
    assert points.shape == (256, 6) and points.dtype == np.float32
    assert np.isfinite(points).all() and part.shape == (256,)
    np.testing.assert_allclose(points[:, :3].mean(0), 0, atol=1e-5)
    assert np.linalg.norm(points[:, :3], axis=1).max() == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(np.linalg.norm(points[:, 3:], axis=1), 1.0, atol=1e-5)
    assert set(part.tolist()) <= set(range(len(names)))


def test_convex_cone_normals_point_away_from_the_inside():
    points, _, _ = shapes.sample_shape("cone", 512, RNG(0), random_pose=True)
    xyz, nrm = points[:, :3].astype(np.float64), points[:, 3:].astype(np.float64)
    inside = xyz.mean(0)  # the surface centroid of a convex solid is inside it
    assert ((xyz - inside) * nrm).sum(1).min() > 0


def test_random_pose_rotates_points_and_normals_together():
    a, _, _ = shapes.sample_shape("chair", 128, RNG(9))
    b, _, _ = shapes.sample_shape("chair", 128, RNG(9), random_pose=True)
    # Same draws, rotated: pairwise distances and point-normal products are kept.
    da = np.linalg.norm(a[:, None, :3] - a[None, :, :3], axis=-1)
    db = np.linalg.norm(b[:, None, :3] - b[None, :, :3], axis=-1)
    np.testing.assert_allclose(da, db, atol=1e-5)
    np.testing.assert_allclose(a[:, 3:] @ a[:, 3:].T, b[:, 3:] @ b[:, 3:].T, atol=1e-5)


def test_part_id_space_is_contiguous_like_shapenet():
    flat = [p for ps in shapes.PARTS_PER_CATEGORY for p in ps]
    assert flat == list(range(shapes.NUM_PARTS)) == list(range(24))
    assert list(shapes.CATEGORIES) == sorted(shapes.CATEGORIES)
    for cat, parts in zip(shapes.CATEGORIES, shapes.PARTS_PER_CATEGORY, strict=True):
        assert len(parts) == len(shapes.PART_NAMES[cat])
    assert len(shapes.CLASSES) >= 10
    doc = shapes.__doc__
    for name, params in shapes.PARAMS.items():
        assert name in doc and all(k in doc for k in params)


def test_modelnet_like_labels_and_determinism():
    sets = shapes.modelnet_like(26, 13, num_points=64, seed=1)
    train, test = sets["train"], sets["test"]
    assert set(sets) == {"train", "test"}
    np.testing.assert_array_equal(train.arrays["label"], np.arange(26) % 13)
    assert train.arrays["points"].shape == (26, 64, 6) and train[3]["label"].dtype == np.int32
    smaller = shapes.modelnet_like(5, 1, num_points=64, seed=1)
    np.testing.assert_array_equal(smaller["train"].arrays["points"], train.arrays["points"][:5])
    other = shapes.modelnet_like(5, 1, num_points=64, seed=2)
    assert not np.array_equal(other["train"].arrays["points"], smaller["train"].arrays["points"])
    assert not np.array_equal(test.arrays["points"][:5], train.arrays["points"][:5])
    assert "val" in shapes.modelnet_like(2, 1, num_points=8, num_val=2)


def test_shapenetpart_like_parts_in_category_ranges_and_optional_parts():
    per_cat = 12
    sets = shapes.shapenetpart_like(7 * per_cat, 2, 3, num_points=256, seed=0)
    train = sets["train"].arrays
    assert len(sets["val"]) == 2 and len(sets["test"]) == 3
    np.testing.assert_array_equal(train["category"], np.arange(7 * per_cat) % 7)
    for c, cat in enumerate(shapes.CATEGORIES):
        rows = np.flatnonzero(train["category"] == c)
        present = np.array([[(train["part"][i] == p).any() for p in shapes.PARTS_PER_CATEGORY[c]]
                            for i in rows])  # fmt: skip
        assert np.isin(train["part"][rows], shapes.PARTS_PER_CATEGORY[c]).all()
        for k, part in enumerate(shapes.PART_NAMES[cat]):
            if (cat, part) in shapes.OPTIONAL:  # absent in some, present in most
                assert 0.5 <= present[:, k].mean() < 1.0, (cat, part)
            else:
                assert present[:, k].all(), (cat, part)


def test_standin_through_data_load(tmp_path):
    cfg = ml_collections.ConfigDict(
        dict(dataset="modelnet40", source="standin", dir=str(tmp_path), num_points=32,
             num_train=13, num_test=13, seed=0)
    )  # fmt: skip
    splits, desc = data.load(cfg)
    assert splits["val"] is splits["test"] and "selection on test" in desc["val"]
    assert desc["source"] == "standin" and desc["num_classes"] == 13 and "NOT" in desc["data"]
    example = splits["train"][5]
    assert example["points"].shape == (32, 6) and int(example["label"]) == 5
    again, _ = data.load(cfg)  # from the cache
    np.testing.assert_array_equal(again["train"].arrays["points"], splits["train"].arrays["points"])
    cfg = ml_collections.ConfigDict(
        dict(dataset="shapenetpart", source="standin", dir=str(tmp_path), num_points=32,
             num_train=7, num_val=7, num_test=7, seed=0, cache=False, trainval=True)
    )  # fmt: skip
    splits, desc = data.load(cfg)
    assert len(splits["train"]) == 14 and len(splits["val"]) == 7
    assert desc["parts_per_category"] == shapes.PARTS_PER_CATEGORY
    assert set(splits["train"][9]) == {"points", "part", "category"}


@pytest.mark.slow
def test_generation_speed():
    start = time.perf_counter()
    shapes.modelnet_like(1000, 0, num_points=1024, seed=0)
    assert time.perf_counter() - start < 5.0
