"""Tests of lra/data/pathfinder.py: the parameters of each size and difficulty, load + cache
(generated and official)."""

from __future__ import annotations

import numpy as np
import pytest

from attnbench.data import cache
from lra.data import pathfinder, pathfinder_generator, pathfinder_release


def _images(n, size=32, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, size, size), dtype=np.uint8)


# ----------------------------------------------------------------------------------------------
# Parameters
# ----------------------------------------------------------------------------------------------


def test_parameters_follow_lra_and_the_original():
    # LRA lra_benchmarks/data/pathfinder.py docstrings; the rest: snakes2_wrapper.py defaults.
    p = pathfinder_generator.PATHFINDER32
    assert (p["window_size"], p["padding"], p["paddle_length"], p["paddle_thickness"]) == (
        32,
        1,
        2,
        0.5,
    )
    assert (p["marker_radius"], p["seed_distance"], p["continuity"]) == (1.5, 7, 1.0)
    assert p["paddle_margin_list"] == (1,) and p["antialias_scale"] == 2
    assert p["snake_contrast_list"] == (2.0,) and p["paddle_contrast_list"] == (0.75,)
    assert p["num_single_paddles"] == 0
    assert (p["max_paddle_retrial"], p["max_distractor_contour_retrial"]) == (2, 4)
    with pytest.raises(TypeError):
        p["contour_length"] = 6  # frozen
    expected = {"easy": (6, 2, 10), "intermediate": (9, 3, 6), "hard": (14, 4, 5)}
    for difficulty, (cl, dl, nd) in expected.items():
        q = pathfinder.params_for(32, difficulty)
        assert (q["contour_length"], q["distractor_length"], q["num_distractor_snakes"]) == (
            cl,
            dl,
            nd,
        )
    q = pathfinder.params_for(64)
    assert (q["window_size"], q["paddle_length"], q["paddle_thickness"]) == (64, 5, 1.0)
    assert (q["seed_distance"], q["marker_radius"], q["continuity"]) == (12, 2.5, 1.8)
    assert q["snake_contrast_list"] == (0.8,) and q["num_distractor_snakes"] == 22 // 4
    q = pathfinder.params_for(128, "hard")  # Path-X
    assert (q["window_size"], q["seed_distance"], q["marker_radius"]) == (128, 20, 3.0)
    assert q["paddle_margin_list"] == (2, 3) and q["num_distractor_snakes"] == 35 // 4
    assert (q["paddle_thickness"], q["snake_contrast_list"], q["paddle_contrast_list"]) == (
        1.5,
        (0.9,),
        (1.0,),
    )
    q = pathfinder.params_for(256)
    assert (q["padding"], q["seed_distance"], q["marker_radius"], q["paddle_thickness"]) == (
        22,
        27,
        5.0,
        2.0,
    )
    assert q["paddle_margin_list"] == (3,) and q["num_distractor_snakes"] == 30 // 4
    assert pathfinder.params_for() == dict(pathfinder_generator.PATHFINDER32)
    with pytest.raises(ValueError, match="difficulty"):
        pathfinder.params_for(32, "medium")
    with pytest.raises(ValueError, match="resolution"):
        pathfinder.params_for(48)


# ----------------------------------------------------------------------------------------------
# load
# ----------------------------------------------------------------------------------------------


def _config(**kw):
    d = pathfinder.data_config()
    d.num_train, d.num_val, d.num_test = 24, 8, 8
    d.update(kw)
    return d


def test_data_config_defaults():
    d = pathfinder.data_config()
    assert (d.source, d.resolution, d.difficulty, d.max_length) == ("generated", 32, "hard", 1024)
    assert (d.num_train, d.num_val, d.num_test) == (160_000, 20_000, 20_000)
    assert d.zero_is_padding is False


def test_load_generated_and_cache_hit(tmp_path, monkeypatch, capsys):
    d = _config()
    splits, desc = pathfinder.load(d, tmp_path)
    assert "generating Pathfinder32 (hard): 40/40 images" in capsys.readouterr().out
    for name, n in (("train", 24), ("val", 8), ("test", 8)):
        tokens, labels = splits[name]["tokens"], splits[name]["label"]
        assert tokens.shape == (n, 1024) and tokens.dtype == np.uint16
        assert labels.dtype == np.int32 and tokens.min() >= 1
    # Splits are separate streams of the seed: train = stream 0.
    params = pathfinder.params_for(32, "hard")
    images, labels = pathfinder_generator.generate(24, seed=0, params=params)
    assert np.array_equal(splits["train"]["tokens"], images.reshape(24, -1).astype(np.uint16) + 1)
    assert np.array_equal(splits["train"]["label"], labels)
    assert not np.array_equal(splits["val"]["tokens"], splits["train"]["tokens"][:8])
    assert desc["cache"].startswith("lra/pathfinder32-hard-generated-")
    assert desc["sizes"] == {"train": 24, "val": 8, "test": 8}
    assert desc["params"]["contour_length"] == 14 and desc["source"] == "generated"
    assert str(tmp_path) not in str(desc)

    def boom(*args, **kwargs):
        raise AssertionError("rebuilt instead of reading the cache")

    monkeypatch.setattr(pathfinder_generator, "generate", boom)
    again, _ = pathfinder.load(d, tmp_path)
    for name in splits:
        for key in ("tokens", "label"):
            assert np.array_equal(again[name][key], splits[name][key])
    # The quirk is applied at load time, from the same cache.
    quirk, desc_q = pathfinder.load(_config(zero_is_padding=True), tmp_path)
    assert np.array_equal(quirk["train"]["tokens"], splits["train"]["tokens"] - 1)
    assert "pad id 0" in desc_q["tokens"]


def test_load_official_and_cache_hit(tmp_path, monkeypatch):
    release = tmp_path / "release"
    images, labels = _images(20, seed=1), np.arange(20) % 2
    base = pathfinder_release.write_official(release, "curv_contour_length_9", images, labels)
    (base / "imgs" / "0" / "sample_0.png").write_bytes(b"")
    d = _config(source="official", dir=str(release), difficulty="intermediate", num_train=0)
    splits, desc = pathfinder.load(d, tmp_path / "cache")
    assert np.array_equal(
        splits["train"]["tokens"], images[1:16].reshape(15, -1).astype(np.uint16) + 1
    )
    assert np.array_equal(splits["test"]["label"], labels[18:])
    assert desc["empty_images_skipped"] == 1 and desc["num_records"] == 20
    assert desc["sizes"] == {"train": 15, "val": 2, "test": 2}
    assert desc["dir"] == str(release) and desc["pattern"] == "curv_contour_length_9"

    monkeypatch.setattr(pathfinder_release, "read_official", lambda *a, **k: 1 / 0)
    again, _ = pathfinder.load(d, tmp_path / "cache")
    assert np.array_equal(again["train"]["tokens"], splits["train"]["tokens"])
    # num_* > 0 keeps at most the first n of a split.
    d.num_train = 4
    small, _ = pathfinder.load(d, tmp_path / "cache")
    assert np.array_equal(small["train"]["tokens"], splits["train"]["tokens"][:4])


def test_load_errors(tmp_path):
    with pytest.raises(cache.DataError, match="`attnbench-data fetch pathfinder32`.*'generated'"):
        pathfinder.load(_config(source="official"), tmp_path)
    with pytest.raises(cache.DataError, match="needs config.data.dir"):  # not fetched: 64, 256
        pathfinder.load(_config(source="official", resolution=64, max_length=64**2), tmp_path)
    with pytest.raises(cache.DataError, match="curv_contour_length_14"):
        pathfinder.load(_config(source="official", dir=str(tmp_path)), tmp_path)
    with pytest.raises(ValueError, match="max_length=1024"):
        pathfinder.load(_config(resolution=128), tmp_path)
    with pytest.raises(ValueError, match="source"):
        pathfinder.load(_config(source="standin"), tmp_path)
    with pytest.raises(ValueError, match="difficulty"):
        pathfinder.load(_config(difficulty="medium"), tmp_path)
