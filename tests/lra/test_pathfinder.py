"""Tests of lra/pathfinder.py: generator invariants, official reader/writer, load + cache."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from lra import cache, pathfinder

# ----------------------------------------------------------------------------------------------
# Helpers independent of the generator: Chebyshev dilation and flood fill on boolean images.
# ----------------------------------------------------------------------------------------------


def _dilate(mask: np.ndarray, r: int) -> np.ndarray:
    out = mask.copy()
    for _ in range(r):
        x = out.copy()
        x[1:, :] |= out[:-1, :]
        x[:-1, :] |= out[1:, :]
        y = x.copy()
        y[:, 1:] |= x[:, :-1]
        y[:, :-1] |= x[:, 1:]
        out = y
    return out


def _flood(mask: np.ndarray, seed: tuple[int, int], r: int) -> np.ndarray:
    """Pixels of `mask` reachable from `seed` in steps of Chebyshev length <= r."""
    region = np.zeros_like(mask)
    region[seed] = True
    while True:
        grown = _dilate(region, r) & mask
        if (grown == region).all():
            return region
        region = grown


def _pixel(point) -> tuple[int, int]:
    x, y = point
    return int(math.floor(y)), int(math.floor(x))


@pytest.fixture(scope="module")
def batch32():
    params = pathfinder.params_for(32, "hard")
    return params, pathfinder.generate_debug(48, seed=7, params=params)


# ----------------------------------------------------------------------------------------------
# Parameters
# ----------------------------------------------------------------------------------------------


def test_parameters_follow_lra():
    # LRA lra_benchmarks/data/pathfinder.py docstrings.
    p = pathfinder.PATHFINDER32
    assert (p["window_size"], p["paddle_length"], p["paddle_thickness"]) == (32, 2.0, 0.5)
    assert (p["marker_radius"], p["seed_distance"], p["continuity"]) == (1.5, 7.0, 1.0)
    assert p["paddle_margin_list"] == (1,) and p["snake_contrast_list"] == (2.0,)
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
    q = pathfinder.params_for(128, "hard")
    assert (q["window_size"], q["seed_distance"], q["marker_radius"]) == (128, 20.0, 3.0)
    assert q["paddle_margin_list"] == (2, 3) and q["num_distractor_snakes"] == 35 // 4
    assert pathfinder.params_for() == dict(pathfinder.PATHFINDER32)
    with pytest.raises(ValueError, match="difficulty"):
        pathfinder.params_for(32, "medium")
    with pytest.raises(ValueError, match="resolution"):
        pathfinder.params_for(64)


def test_bad_parameters_are_rejected():
    p = dict(pathfinder.PATHFINDER32)
    with pytest.raises(TypeError, match="unknown"):
        pathfinder.generate(1, seed=0, params={**p, "colour": 1})
    with pytest.raises(ValueError, match="too thin"):
        pathfinder.generate(1, seed=0, params={**p, "paddle_thickness": 0.05})
    with pytest.raises(ValueError, match="paddle_margin_list"):
        pathfinder.generate(1, seed=0, params={**p, "paddle_margin_list": (1.5,)})


# ----------------------------------------------------------------------------------------------
# Generator
# ----------------------------------------------------------------------------------------------


def test_shapes_and_dtypes(batch32):
    _, (images, labels, info) = batch32
    assert images.shape == (48, 32, 32) and images.dtype == np.uint8
    assert labels.shape == (48,) and labels.dtype == np.int32
    assert set(np.unique(labels)) <= {0, 1}
    assert info["contour_map"].shape == (48, 32, 32)
    assert info["markers"].shape == (48, 2, 2)


def test_deterministic_and_chunk_independent():
    a, la = pathfinder.generate(24, seed=3)
    b, lb = pathfinder.generate(24, seed=3, chunk_size=5)
    assert np.array_equal(a, b) and np.array_equal(la, lb)
    # Image i depends only on (seed, stream, i): a later range alone gives the same images.
    c, lc = pathfinder.generate(8, seed=3, start=16)
    assert np.array_equal(c, a[16:]) and np.array_equal(lc, la[16:])
    d, _ = pathfinder.generate(24, seed=4)
    e, _ = pathfinder.generate(24, seed=3, stream=1)
    assert not any(np.array_equal(a[i], d[i]) for i in range(24))
    assert not any(np.array_equal(a[i], e[i]) for i in range(24))
    # No two images of one stream are equal.
    assert len({img.tobytes() for img in a}) == 24
    # generate_debug gives the same images.
    f, lf, _ = pathfinder.generate_debug(24, seed=3)
    assert np.array_equal(a, f) and np.array_equal(la, lf)


def test_labels_balanced():
    _, labels = pathfinder.generate(400, seed=11)
    # Bernoulli(1/2): sd of the mean is 0.025; 0.1 is 4 sd.
    assert abs(labels.mean() - 0.5) < 0.1


def _check_invariants(params, images, labels, info):
    n_contours = 2 + params["num_distractor_snakes"] + params["num_single_paddles"]
    for i in range(len(images)):
        image, cmap, m = images[i], info["contour_map"][i], int(info["margin"][i])
        nonzero = image > 0
        # The contour map explains every drawn pixel, and every contour is drawn.
        assert np.array_equal(nonzero, cmap > 0)
        assert set(np.unique(cmap[nonzero])) == set(range(1, n_contours + 1))
        for c in range(1, n_contours + 1):
            mask = cmap == c
            # One contour = one group of pixels linked within the margin (dashes included) ...
            start = tuple(np.argwhere(mask)[0])
            assert np.array_equal(_flood(mask, start, m), mask), (i, c)
            # ... and at least margin + 1 pixels from every other contour.
            assert not (_dilate(mask, m) & nonzero & ~mask).any(), (i, c)
        # Every pixel under a paddle's centre line is drawn (the contours have no holes).
        for x0, y0, x1, y1 in info["segments"][i]:
            for t in np.linspace(0, 1, 9):
                assert nonzero[_pixel((x0 + t * (x1 - x0), y0 + t * (y1 - y0)))]
        # Markers: on the tips named in the debug output, full white, start tip of one target
        # and end tip of the same target iff label 1.
        (ca, cb) = info["marker_contours"][i]
        assert np.allclose(info["markers"][i, 0], info["tips"][i, ca, 0])
        assert np.allclose(info["markers"][i, 1], info["tips"][i, cb, 1])
        assert (ca == cb) == bool(labels[i])
        pa, pb = _pixel(info["markers"][i, 0]), _pixel(info["markers"][i, 1])
        assert image[pa] == 255 and image[pb] == 255
        assert cmap[pa] == ca + 1 and cmap[pb] == cb + 1
        # The label from the pixels alone: the markers are linked through drawn pixels.
        assert bool(_flood(nonzero, pa, m)[pb]) == bool(labels[i]), i


def test_markers_connected_iff_label_32(batch32):
    params, (images, labels, info) = batch32
    assert 0 < labels.sum() < len(labels)
    _check_invariants(params, images, labels, info)


@pytest.mark.parametrize("difficulty", ["easy", "intermediate"])
def test_markers_connected_iff_label_easier(difficulty):
    params = pathfinder.params_for(32, difficulty)
    images, labels, info = pathfinder.generate_debug(12, seed=2, params=params)
    _check_invariants(params, images, labels, info)
    assert np.all(info["tips"].shape[1] == 2 + params["num_distractor_snakes"])


def test_markers_connected_iff_label_path_x():
    params = pathfinder.params_for(128, "hard")
    images, labels, info = pathfinder.generate_debug(6, seed=5, params=params)
    assert images.shape == (6, 128, 128)
    assert set(info["margin"].tolist()) <= {2, 3}
    _check_invariants(params, images, labels, info)
    # Contours are drawn at gain 0.9 (never full white), markers at 255: away from the two
    # marker discs nothing is brighter than 0.9 * 255.
    yy, xx = np.mgrid[0:128, 0:128] + 0.5
    for i in range(6):
        far = np.ones((128, 128), bool)
        for x, y in info["markers"][i]:
            far &= np.hypot(xx - x, yy - y) > params["marker_radius"] + 1.5
        assert images[i][far].max() <= round(255 * 0.9)
        assert images[i][~far].max() == 255


def _upper_bound_nonzero(p) -> float:
    # A drawn pixel has a sub-pixel centre within `reach` of its primitive's segment, hence its
    # pixel centre within reach + sqrt(2)/2; pixel centres within rho of a segment of length L
    # own disjoint unit squares inside the capsule of radius rho + sqrt(2)/2:
    # count <= 2 R L + pi R^2 with R = reach + sqrt(2).
    s = p["antialias_scale"]
    r_paddle = p["paddle_thickness"] / 2 + 0.5 / s + math.sqrt(2)
    r_disc = p["marker_radius"] + 0.5 / s + math.sqrt(2)
    paddles = 2 * p["contour_length"] + p["num_distractor_snakes"] * p["distractor_length"]
    per_paddle = 2 * r_paddle * p["paddle_length"] + math.pi * r_paddle**2
    return paddles * per_paddle + 2 * math.pi * r_disc**2


def test_image_statistics_within_parameter_bounds(batch32):
    params, (images, labels, info) = batch32
    nonzero = (images > 0).sum(axis=(1, 2))
    # Lower bound: the centre lines (total length sum L) cross >= length / (2 sqrt 2) distinct
    # pixels (a pixel holds <= sqrt 2 of a segment, and at most two paddles of one contour;
    # different contours never share pixels).
    paddles = 2 * params["contour_length"] + (
        params["num_distractor_snakes"] * params["distractor_length"]
    )
    lower = paddles * params["paddle_length"] / (2 * math.sqrt(2))
    upper = _upper_bound_nonzero(params)
    assert (nonzero >= lower).all() and (nonzero <= upper).all(), (lower, upper, nonzero)
    # The image is mostly background (what LRA's zero_is_padding quirk masks): here ~24% ink.
    assert 0.05 < (images > 0).mean() < 0.5
    assert images.max() == 255 and images.min() == 0
    # Both classes look alike: the same amount of ink on average (within 15%).
    ink1, ink0 = nonzero[labels == 1].mean(), nonzero[labels == 0].mean()
    assert abs(ink1 - ink0) < 0.15 * max(ink0, ink1)


# ----------------------------------------------------------------------------------------------
# Official release: writer and reader
# ----------------------------------------------------------------------------------------------


def _images(n, size=32, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, size, size), dtype=np.uint8)


def test_official_roundtrip_order_and_splits(tmp_path):
    images, labels = _images(20), np.arange(20) % 2
    pattern = "curv_contour_length_14"
    base = pathfinder.write_official(tmp_path, pattern, images, labels, images_per_file=3)
    assert base == tmp_path / pattern
    meta = sorted(p.name for p in (base / "metadata").iterdir())
    assert meta == [f"{i}.npy" for i in range(7)]
    line = (base / "metadata" / "0.npy").read_text().splitlines()[1]
    assert line == "imgs/0 sample_1.png 1 1"
    data = pathfinder.read_official(tmp_path, pattern)
    assert data["num_records"] == 20 and data["empty"] == []
    assert np.array_equal(data["images"], images) and np.array_equal(data["label"], labels)
    splits = pathfinder.official_splits(data)
    assert [len(splits[k]["label"]) for k in ("train", "val", "test")] == [16, 2, 2]
    assert np.array_equal(splits["val"]["images"], images[16:18])
    assert np.array_equal(splits["test"]["label"], labels[18:])


def test_official_natural_file_order_and_extra_fields(tmp_path):
    base = tmp_path / "curv_baseline"
    (base / "metadata").mkdir(parents=True)
    (base / "imgs").mkdir()
    images = _images(3)
    for i, name in enumerate(["a.png", "b.png", "c.png"]):
        Image.fromarray(images[i]).save(base / "imgs" / name)
    # Written in the order 10, 2, 1: read as 1, 2, 10. Extra fields are ignored.
    (base / "metadata" / "10.npy").write_text("imgs c.png 0 0 extra fields\n")
    (base / "metadata" / "2.npy").write_text("imgs b.png 0 1 14\n")
    (base / "metadata" / "1.npy").write_text("imgs a.png 0 0 14\n")
    data = pathfinder.read_official(tmp_path, "curv_baseline")
    assert np.array_equal(data["images"], images)
    assert data["label"].tolist() == [0, 1, 0]


def test_official_empty_images_skipped_after_split(tmp_path):
    images, labels = _images(10), np.array([1, 0] * 5)
    base = pathfinder.write_official(tmp_path, "curv_baseline", images, labels)
    (base / "imgs" / "0" / "sample_3.png").write_bytes(b"")  # train
    (base / "imgs" / "0" / "sample_9.png").write_bytes(b"")  # test
    data = pathfinder.read_official(tmp_path, "curv_baseline")
    assert data["num_records"] == 10
    assert data["empty"] == ["imgs/0/sample_3.png", "imgs/0/sample_9.png"]
    splits = pathfinder.official_splits(data)
    # Boundaries over all 10 records (8 / 1 / 1), then the empty ones dropped.
    assert np.array_equal(splits["train"]["images"], images[[0, 1, 2, 4, 5, 6, 7]])
    assert np.array_equal(splits["val"]["images"], images[[8]])
    assert len(splits["test"]["label"]) == 0


def test_official_errors(tmp_path):
    with pytest.raises(cache.DataError, match="release folder not found"):
        pathfinder.read_official(tmp_path / "nope", "curv_baseline")
    pathfinder.write_official(tmp_path, "curv_baseline", _images(4), [0, 1, 0, 1])
    with pytest.raises(cache.DataError, match=r"curv_contour_length_14: .*curv_baseline"):
        pathfinder.read_official(tmp_path, "curv_contour_length_14")  # lists what was found
    (tmp_path / "curv_contour_length_9" / "metadata").mkdir(parents=True)
    with pytest.raises(cache.DataError, match=r"metadata: no metadata/\*\.npy"):
        pathfinder.read_official(tmp_path, "curv_contour_length_9")

    meta = tmp_path / "curv_baseline" / "metadata" / "0.npy"
    good = meta.read_text()
    meta.write_text(good + "imgs/0 sample_9.png 9\n")
    with pytest.raises(cache.DataError, match=rf"{meta}:5: expected at least 4"):
        pathfinder.read_official(tmp_path, "curv_baseline")
    meta.write_text(good.replace("sample_2.png 2 0", "sample_2.png 2 7"))
    with pytest.raises(cache.DataError, match=rf"{meta}:3: label '7' is not 0 or 1"):
        pathfinder.read_official(tmp_path, "curv_baseline")
    meta.write_text(good + "imgs/0 sample_9.png 9 1\n")
    missing = tmp_path / "curv_baseline" / "imgs" / "0" / "sample_9.png"
    with pytest.raises(cache.DataError, match=rf"{missing}: image file not found .*0.npy:5"):
        pathfinder.read_official(tmp_path, "curv_baseline")
    meta.write_text(good)
    png = tmp_path / "curv_baseline" / "imgs" / "0" / "sample_1.png"
    png.write_bytes(b"not a png at all")
    with pytest.raises(cache.DataError, match=rf"{png}: cannot decode"):
        pathfinder.read_official(tmp_path, "curv_baseline")
    Image.fromarray(_images(1, size=31)[0]).save(png)
    with pytest.raises(cache.DataError, match=rf"{png}: image is 31x31, expected 32x32"):
        pathfinder.read_official(tmp_path, "curv_baseline")
    # An RGB PNG is read as grayscale (PIL luma), like tf.io.decode_png(channels=1).
    Image.fromarray(np.full((32, 32, 3), 200, np.uint8)).save(png)
    data = pathfinder.read_official(tmp_path, "curv_baseline")
    assert (data["images"][1] == 200).all()


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
    images, labels = pathfinder.generate(24, seed=0, params=pathfinder.params_for(32, "hard"))
    assert np.array_equal(splits["train"]["tokens"], images.reshape(24, -1).astype(np.uint16) + 1)
    assert np.array_equal(splits["train"]["label"], labels)
    assert not np.array_equal(splits["val"]["tokens"], splits["train"]["tokens"][:8])
    assert desc["cache"].startswith("lra/pathfinder32-hard-generated-")
    assert desc["sizes"] == {"train": 24, "val": 8, "test": 8}
    assert desc["params"]["contour_length"] == 14 and desc["source"] == "generated"
    assert str(tmp_path) not in str(desc)

    def boom(*args, **kwargs):
        raise AssertionError("rebuilt instead of reading the cache")

    monkeypatch.setattr(pathfinder, "generate", boom)
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
    base = pathfinder.write_official(release, "curv_contour_length_9", images, labels)
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

    monkeypatch.setattr(pathfinder, "read_official", lambda *a, **k: 1 / 0)
    again, _ = pathfinder.load(d, tmp_path / "cache")
    assert np.array_equal(again["train"]["tokens"], splits["train"]["tokens"])
    # num_* > 0 keeps at most the first n of a split.
    d.num_train = 4
    small, _ = pathfinder.load(d, tmp_path / "cache")
    assert np.array_equal(small["train"]["tokens"], splits["train"]["tokens"][:4])


def test_load_errors(tmp_path):
    with pytest.raises(cache.DataError, match="needs config.data.dir"):
        pathfinder.load(_config(source="official"), tmp_path)
    with pytest.raises(cache.DataError, match="curv_contour_length_14"):
        pathfinder.load(_config(source="official", dir=str(tmp_path)), tmp_path)
    with pytest.raises(ValueError, match="max_length=1024"):
        pathfinder.load(_config(resolution=128), tmp_path)
    with pytest.raises(ValueError, match="source"):
        pathfinder.load(_config(source="standin"), tmp_path)
    with pytest.raises(ValueError, match="difficulty"):
        pathfinder.load(_config(difficulty="medium"), tmp_path)
