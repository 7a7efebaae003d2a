"""pointcloud.data's loader on the official layouts (tests/pointcloud/data/layouts.py): the
val split of ModelNet40 is its test split, ShapeNetPart's train + val, config errors, and the
scale-and-shift augmentation."""

import ml_collections
import numpy as np
import pytest

from attnbench import errors
from pointcloud import data
from tests.pointcloud.data.layouts import SHAPENET_FILES, SHAPENET_SPLITS, write_shapenet


def config(**fields):
    return ml_collections.ConfigDict(fields)


def test_data_load_official_modelnet_val_is_test(modelnet, tmp_path):
    cfg = config(dataset="modelnet40", source="official", dir=str(tmp_path), num_points=4,
                 sampling="first", seed=0, cache_dir=str(tmp_path / "c"))  # fmt: skip
    splits, desc = data.load(cfg)
    assert splits["val"] is splits["test"] and "selection on test" in desc["val"]
    assert desc["source"] == "official" and desc["num_classes"] == 3
    assert desc["dir"] == str(modelnet.resolve())


def test_data_load_official_shapenet_trainval(tmp_path):
    write_shapenet(tmp_path, SHAPENET_FILES, SHAPENET_SPLITS)
    cfg = config(dataset="shapenetpart", source="official", dir=str(tmp_path), num_points=4,
                 seed=0, cache=False, trainval=True)  # fmt: skip
    splits, desc = data.load(cfg)
    assert len(splits["train"]) == 4 and len(splits["val"]) == 1
    assert int(splits["train"][3]["category"]) == 11  # the val shape, appended
    assert desc["num_parts"] == 50


def test_data_config_errors(tmp_path):
    with pytest.raises(errors.ConfigError, match="config.data.dataset='modelnet10'"):
        data.load(config(dataset="modelnet10", source="standin", num_points=4))
    with pytest.raises(errors.ConfigError, match="config.data.source='web'"):
        data.load(config(dataset="modelnet40", source="web", num_points=4))
    with pytest.raises(errors.ConfigError, match="config.data.layout='ply'"):
        data.load(config(dataset="modelnet40", source="official", dir=str(tmp_path),
                         num_points=4, layout="ply"))  # fmt: skip
    with pytest.raises(errors.ConfigError, match="config.data.augment='rotate'"):
        data.train_transform(config(augment="rotate"))


def test_train_transform_scale_shift():
    assert data.train_transform(config(augment="")) is None
    assert data.train_transform(config()) is None
    transform = data.train_transform(config(augment="scale_shift"))
    points = np.random.default_rng(0).normal(size=(16, 6)).astype(np.float32)
    points.setflags(write=False)  # sources may be read-only memmaps
    out = transform({"points": points, "label": np.int32(1)}, np.random.default_rng(1))
    np.testing.assert_array_equal(out["points"][:, 3:], points[:, 3:])
    # xyz' = s xyz + t: recover s and t by least squares, check their ranges.
    a = np.concatenate([points[:, :3].reshape(-1, 1), np.tile(np.eye(3), (16, 1))], axis=1)
    coef = np.linalg.lstsq(a, out["points"][:, :3].reshape(-1), rcond=None)[0]
    assert 0.8 <= coef[0] <= 1.25 and (np.abs(coef[1:]) <= 0.1 + 1e-6).all()
    np.testing.assert_allclose(a @ coef, out["points"][:, :3].reshape(-1), atol=1e-5)
