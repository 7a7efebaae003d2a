"""Tests of vision/data/transforms.py: each transform against an independent reference (numpy
formulas, or Pillow called directly with the argument worked out by hand) or an exact property,
and the determinism a resumed run relies on (same Generator seed -> same output)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from PIL import Image, ImageEnhance, ImageOps

from attnbench import tasks
from attnbench.data import pipeline
from vision.data import transforms

BICUBIC = Image.Resampling.BICUBIC
FILL = (124, 116, 104)


def _image(h, w, channels=3, seed=0):
    shape = (h, w, channels) if channels else (h, w)
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def _ex(image):
    return {"image": image, "label": np.int32(7)}


def _run(transform, image, seed=0):
    return transform(_ex(image), np.random.default_rng(seed))["image"]


# ----------------------------------------------------------------------------- crops and flips


@pytest.mark.parametrize("channels", [3, 0])
def test_random_crop_is_the_window_of_the_zero_padded_image_at_the_drawn_offset(channels):
    image = _image(10, 12, channels)
    before = image.copy()
    t = transforms.random_crop((8, 9), padding=4)
    padded = np.zeros((18, 20) + image.shape[2:], np.uint8)
    padded[4:14, 4:16] = image
    seen = set()
    for seed in range(60):
        out = t(_ex(image), np.random.default_rng(seed))
        assert out["label"] == 7 and out["image"].shape == (8, 9) + image.shape[2:]
        g = np.random.default_rng(seed)  # the offset drawn: top, then left, uniform
        top, left = int(g.integers(0, 18 - 8 + 1)), int(g.integers(0, 20 - 9 + 1))
        np.testing.assert_array_equal(out["image"], padded[top : top + 8, left : left + 9])
        seen.add((top, left))
    assert len(seen) > 30  # offsets spread over the 11 x 12 possible ones
    np.testing.assert_array_equal(image, before)  # the source's array is never written


def test_random_crop_without_padding_and_too_large():
    image = _image(6, 6)
    np.testing.assert_array_equal(_run(transforms.random_crop(6), image), image)
    with pytest.raises(ValueError, match="larger"):
        _run(transforms.random_crop(7), image)


def test_horizontal_flip():
    image = _image(5, 7)
    np.testing.assert_array_equal(_run(transforms.horizontal_flip(1.0), image), image[:, ::-1])
    np.testing.assert_array_equal(_run(transforms.horizontal_flip(0.0), image), image)
    t = transforms.horizontal_flip()
    flips = 0
    for seed in range(400):
        out = _run(t, image, seed)
        flipped = np.array_equal(out, image[:, ::-1])
        assert flipped or np.array_equal(out, image)
        flips += flipped
    assert 160 < flips < 240  # p = 0.5 (binomial sd 10)


def test_resized_crop_window_area_and_ratio_within_bounds():
    height, width, scale, ratio = 40, 50, (0.08, 1.0), (3 / 4, 4 / 3)
    rng = np.random.default_rng(0)
    areas, ratios = [], []
    for _ in range(2000):
        top, left, h, w = transforms.resized_crop_window(height, width, rng, scale, ratio)
        assert 0 < h and 0 < w and 0 <= top and top + h <= height and 0 <= left
        assert left + w <= width
        # w = round(a), h = round(b) with a * b = area fraction * H * W and a / b = ratio:
        # these bounds follow exactly from |w - a|, |h - b| <= 1/2.
        assert (w - 0.5) * (h - 0.5) <= scale[1] * height * width
        assert (w + 0.5) * (h + 0.5) >= scale[0] * height * width
        assert (w - 0.5) / (h + 0.5) <= ratio[1] and (w + 0.5) / (h - 0.5) >= ratio[0]
        areas.append(h * w / (height * width))
        ratios.append(w / h)
    assert min(areas) < 0.12 and max(areas) > 0.9  # the whole range is drawn
    assert min(ratios) < 0.8 and max(ratios) > 1.25


@pytest.mark.parametrize(
    "height, width, expected",
    [
        (30, 90, (0, 25, 30, 40)),  # too wide: h = H, w = round(30 * 4/3) = 40, centred
        (90, 30, (25, 0, 40, 30)),  # too tall: w = W, h = round(30 / (3/4)) = 40, centred
        (40, 50, (0, 0, 40, 50)),  # ratio in range: the whole image
    ],
)
def test_resized_crop_window_falls_back_to_the_central_crop(height, width, expected):
    rng = np.random.default_rng(0)  # an area of 2-3x the image never fits: all 10 tries fail
    assert transforms.resized_crop_window(height, width, rng, (2.0, 3.0)) == expected


@pytest.mark.parametrize("shape", [(40, 50, 3), (40, 50), (40, 50, 1)])
def test_random_resized_crop_resamples_the_drawn_window(shape):
    image = _image(*shape[:2], shape[2] if len(shape) == 3 else 0)
    t = transforms.random_resized_crop(16)
    for seed in range(5):
        out = _run(t, image, seed)
        top, left, h, w = transforms.resized_crop_window(40, 50, np.random.default_rng(seed))
        window = image[top : top + h, left : left + w]
        ref = np.asarray(Image.fromarray(window.squeeze()).resize((16, 16), BICUBIC))
        assert out.shape == (16, 16) + shape[2:] and out.dtype == np.uint8
        np.testing.assert_array_equal(out.reshape(ref.shape), ref)
    with pytest.raises(TypeError, match="uint8"):
        _run(t, image.astype(np.float32))


def test_resize_center_crop_geometry():
    # 50 x 70 to 32 with crop_pct 0.875: short side floor(32 / 0.875) = 36, long side
    # int(36 * 70 / 50) = 50; crop at (round(4 / 2), round(18 / 2)) = (2, 9).
    image = _image(50, 70)
    out = _run(transforms.resize_center_crop(32), image)
    ref = np.asarray(Image.fromarray(image).resize((50, 36), BICUBIC))[2:34, 9:41]
    np.testing.assert_array_equal(out, ref)
    # 69 x 50 (tall): width 36, height int(36 * 69 / 50) = 49; top = round(17 / 2) = 8 (Python
    # rounds half to even, as torchvision's CenterCrop does), left = 2.
    image = _image(69, 50, 0)
    out = _run(transforms.resize_center_crop(32), image)
    ref = np.asarray(Image.fromarray(image).resize((36, 49), BICUBIC))[8:40, 2:34]
    np.testing.assert_array_equal(out, ref)
    # DeiT at 224: the short side becomes 256.
    assert math.floor(224 / 0.875) == 256
    # crop_pct > 1: the crop is larger than the resized image and is zero-padded around it.
    image = _image(16, 16)  # short side floor(20 / 1.25) = 16: no resize
    out = _run(transforms.resize_center_crop(20, crop_pct=1.25), image)
    expected = np.zeros((20, 20, 3), np.uint8)
    expected[2:18, 2:18] = image
    np.testing.assert_array_equal(out, expected)


def test_resize_short_side_and_exact():
    image = _image(30, 45)
    out = _run(transforms.resize(20), image)  # short side 20, long int(20 * 45 / 30) = 30
    np.testing.assert_array_equal(out, np.asarray(Image.fromarray(image).resize((30, 20), BICUBIC)))
    out = _run(transforms.resize((10, 12), interpolation="bilinear"), image)
    ref = Image.fromarray(image).resize((12, 10), Image.Resampling.BILINEAR)
    np.testing.assert_array_equal(out, np.asarray(ref))
    with pytest.raises(ValueError, match="interpolation"):
        transforms.resize(8, interpolation="cubic")


# ----------------------------------------------------------------------------- RandAugment


@pytest.mark.parametrize(
    "name, magnitude, negate, expected",
    [
        ("AutoContrast", 9, False, None),
        ("Rotate", 9, False, 27.0),
        ("Rotate", 9, True, -27.0),
        ("Posterize", 9, False, 3),  # int(0.9 * 4)
        ("PosterizeIncreasing", 9, False, 1),
        ("PosterizeIncreasing", 10, False, 0),
        ("Solarize", 9, False, 230),  # int(0.9 * 256)
        ("SolarizeIncreasing", 9, False, 26),
        ("SolarizeIncreasing", 10, False, 0),
        ("SolarizeAdd", 9, False, 99),  # int(0.9 * 110)
        ("SolarizeAdd", 10, False, 110),
        ("Color", 9, True, 1.72),  # 1.8 * 0.9 + 0.1, unsigned
        ("ColorIncreasing", 9, False, 1.81),  # 1 + 0.9 * 0.9
        ("ContrastIncreasing", 9, True, 0.19),
        ("BrightnessIncreasing", 10, True, 0.1),
        ("SharpnessIncreasing", 5, False, 1.45),
        ("ShearX", 9, True, -0.27),
        ("ShearY", 5, False, 0.15),
        ("TranslateXRel", 9, False, 0.405),  # 0.45 * 0.9 of the width
        ("TranslateYRel", 10, True, -0.45),
    ],
)
def test_op_argument_follows_timm(name, magnitude, negate, expected):
    got = transforms.op_argument(name, magnitude, negate)
    if expected is None or isinstance(expected, int):
        assert got == expected
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def test_op_lists_are_timms():
    assert len(transforms.RAND_OPS) == len(transforms.RAND_INCREASING_OPS) == 15
    inc = [n for n in transforms.RAND_INCREASING_OPS if n.endswith("Increasing")]
    assert inc == [
        "PosterizeIncreasing",
        "SolarizeIncreasing",
        "ColorIncreasing",
        "ContrastIncreasing",
        "BrightnessIncreasing",
        "SharpnessIncreasing",
    ]
    assert transforms.DEIT_FILL == FILL
    with pytest.raises(ValueError, match="unknown RandAugment op"):
        transforms.op_argument("Cutout", 9)


def _luma(x):
    """Pillow's RGB -> L (ITU-R 601-2 in 16-bit fixed point)."""
    x = x.astype(np.int64)
    return ((x[..., 0] * 19595 + x[..., 1] * 38470 + x[..., 2] * 7471 + 0x8000) >> 16).astype(
        np.int64
    )


def _blend(degenerate, x, factor):
    """Pillow's Image.blend (what ImageEnhance does): float32 `d + f (x - d)`, truncated,
    clipped to 0..255."""
    d = np.broadcast_to(np.asarray(degenerate, np.float32), x.shape)
    v = d + np.float32(factor) * (x.astype(np.float32) - d)
    return np.clip(np.trunc(v), 0, 255).astype(np.uint8)


def _ref_autocontrast(x):
    out = np.empty_like(x)
    for c in range(x.shape[-1]):
        lo, hi = int(x[..., c].min()), int(x[..., c].max())
        if hi <= lo:
            lut = np.arange(256)
        else:
            scale = 255.0 / (hi - lo)
            lut = np.array([min(max(int(i * scale - lo * scale), 0), 255) for i in range(256)])
        out[..., c] = lut[x[..., c]]
    return out


def _ref_equalize(x):
    out = np.empty_like(x)
    for c in range(x.shape[-1]):
        hist = np.bincount(x[..., c].ravel(), minlength=256)
        used = hist[hist > 0]
        step = (used.sum() - used[-1]) // 255 if len(used) > 1 else 0
        if step == 0:
            lut = np.arange(256)
        else:  # level i -> (step // 2 + number of pixels below i) // step
            below = np.concatenate([[0], np.cumsum(hist)[:-1]])
            lut = np.minimum((step // 2 + below) // step, 255)
        out[..., c] = lut[x[..., c]]
    return out


def _affine_nearest(x, matrix, fill):
    """Nearest-neighbour affine warp: output pixel (i, j) samples the input at
    floor(M @ (j + 1/2, i + 1/2, 1)) (Pillow's convention), the fill outside."""
    a, b, c, d, e, f = matrix
    h, w = x.shape[:2]
    jj, ii = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
    xs = np.floor(a * jj + b * ii + c).astype(int)
    ys = np.floor(d * jj + e * ii + f).astype(int)
    inside = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
    out = np.empty_like(x)
    out[...] = np.asarray(fill, np.uint8)
    out[inside] = x[ys[inside], xs[inside]]
    return out


def _rotation_matrix(degrees, w, h):
    """Pillow's `rotate` matrix: counter-clockwise by `degrees` about (w / 2, h / 2)."""
    t = -math.radians(degrees)
    cos, sin = round(math.cos(t), 15), round(math.sin(t), 15)
    cx, cy = w / 2, h / 2
    return (cos, sin, cos * -cx + sin * -cy + cx, -sin, cos, -sin * -cx + cos * -cy + cy)


IMG = _image(12, 16, seed=3)
PIL_IMG = Image.fromarray(IMG)


def _pil_affine(matrix):
    """Pillow's affine warp of PIL_IMG, bicubic, DeiT's fill."""
    return np.asarray(PIL_IMG.transform((16, 12), Image.Transform.AFFINE, matrix, BICUBIC, 1, FILL))


SOLARIZE_ADD_LUT = [min(255, i + 99) if i < 128 else i for i in range(256)] * 3

# (op, negate) at magnitude 9 -> its reference, computed from the argument worked out by hand.
OP_REFERENCES = {
    ("Invert", False): lambda: np.asarray(ImageOps.invert(PIL_IMG)),
    ("Posterize", False): lambda: np.asarray(ImageOps.posterize(PIL_IMG, 3)),
    ("PosterizeIncreasing", False): lambda: np.asarray(ImageOps.posterize(PIL_IMG, 1)),
    ("Solarize", False): lambda: np.asarray(ImageOps.solarize(PIL_IMG, 230)),
    ("SolarizeIncreasing", False): lambda: np.asarray(ImageOps.solarize(PIL_IMG, 26)),
    ("SolarizeAdd", False): lambda: np.asarray(PIL_IMG.point(SOLARIZE_ADD_LUT)),
    ("AutoContrast", False): lambda: _ref_autocontrast(IMG),
    ("Brightness", False): lambda: _blend(0, IMG, 1.72),
    ("BrightnessIncreasing", True): lambda: _blend(0, IMG, 0.19),
    ("Color", False): lambda: _blend(_luma(IMG)[..., None], IMG, 1.72),
    ("ColorIncreasing", False): lambda: _blend(_luma(IMG)[..., None], IMG, 1.81),
    ("Contrast", False): lambda: _blend(int(_luma(IMG).mean() + 0.5), IMG, 1.72),
    ("ContrastIncreasing", True): lambda: _blend(int(_luma(IMG).mean() + 0.5), IMG, 0.19),
    ("Sharpness", False): lambda: np.asarray(ImageEnhance.Sharpness(PIL_IMG).enhance(1.72)),
    ("SharpnessIncreasing", True): lambda: np.asarray(
        ImageEnhance.Sharpness(PIL_IMG).enhance(0.19)
    ),
    ("Rotate", False): lambda: np.asarray(PIL_IMG.rotate(27.0, resample=BICUBIC, fillcolor=FILL)),
    ("Rotate", True): lambda: np.asarray(PIL_IMG.rotate(-27.0, resample=BICUBIC, fillcolor=FILL)),
    ("ShearX", True): lambda: _pil_affine((1, -0.27, 0, 0, 1, 0)),
    ("ShearY", False): lambda: _pil_affine((1, 0, 0, 0.27, 1, 0)),
    ("TranslateXRel", False): lambda: _pil_affine((1, 0, 6.48, 0, 1, 0)),
    ("TranslateYRel", True): lambda: _pil_affine((1, 0, 0, 0, 1, -4.86)),
}


def test_every_op_has_a_reference():
    covered = {name for name, _ in OP_REFERENCES} | {"Equalize"}  # Equalize: a larger image
    assert covered == set(transforms.RAND_OPS) | set(transforms.RAND_INCREASING_OPS)


@pytest.mark.parametrize("name, negate", sorted(OP_REFERENCES))
def test_op_at_magnitude_9_matches_its_reference(name, negate):
    before = IMG.copy()
    out = transforms.apply_op(IMG, name, 9, negate)
    assert out.dtype == np.uint8 and out.shape == IMG.shape
    np.testing.assert_array_equal(out, OP_REFERENCES[(name, negate)]())
    np.testing.assert_array_equal(IMG, before)


def test_equalize_matches_the_histogram_reference():
    image = _image(48, 48, seed=5) // 3 + 40  # a narrow histogram that equalize stretches
    out = transforms.apply_op(image, "Equalize", 9)
    np.testing.assert_array_equal(out, _ref_equalize(image))
    assert out.max() - out.min() > image.max() - image.min()


def test_posterize_to_zero_bits_is_black():
    out = transforms.apply_op(IMG, "PosterizeIncreasing", 10)
    np.testing.assert_array_equal(out, np.zeros_like(IMG))
    np.testing.assert_array_equal(transforms.apply_op(IMG, "Posterize", 10), IMG & 0xF0)


@pytest.mark.parametrize(
    "name, negate, matrix",
    [
        ("ShearX", False, (1, 0.27, 0, 0, 1, 0)),
        ("ShearY", True, (1, 0, 0, -0.27, 1, 0)),
        ("TranslateXRel", True, (1, 0, -0.405 * 16, 0, 1, 0)),
        ("TranslateYRel", False, (1, 0, 0, 0, 1, 0.405 * 12)),
        ("Rotate", False, _rotation_matrix(27.0, 16, 12)),
        ("Rotate", True, _rotation_matrix(-27.0, 16, 12)),
    ],
)
def test_geometric_ops_against_a_numpy_warp(name, negate, matrix):
    out = transforms.apply_op(IMG, name, 9, negate, interpolation="nearest")
    np.testing.assert_array_equal(out, _affine_nearest(IMG, matrix, FILL))


@pytest.mark.parametrize("name", transforms.RAND_OPS + transforms.RAND_INCREASING_OPS[4:11])
def test_ops_on_grayscale_keep_the_layout(name):
    gray = _image(12, 16, 0, seed=4)
    out = transforms.apply_op(gray, name, 9)
    assert out.shape == gray.shape and out.dtype == np.uint8
    np.testing.assert_array_equal(transforms.apply_op(gray[..., None], name, 9), out[..., None])


def test_grayscale_fill_is_the_luma_of_the_fill_colour():
    gray = _image(12, 16, 0)
    out = transforms.apply_op(gray, "TranslateXRel", 10)  # 0.45 * 16 = 7.2 px left
    assert (out[:, -7:] == 117).all()  # (124 * 299 + 116 * 587 + 104 * 114) / 1000 = 117.0


def test_rand_augment_draws_ops_magnitudes_and_signs_from_the_generator():
    # One op, always applied, fixed magnitude: the op is index U{0..14}, then the sign draw.
    t = transforms.rand_augment(num_ops=1, magnitude=9, magnitude_std=0, prob=1.0)
    names = set()
    for seed in range(30):
        g = np.random.default_rng(seed)
        name = transforms.RAND_INCREASING_OPS[int(g.integers(0, 15, size=1)[0])]
        negate = bool(g.random() < 0.5)
        names.add(name)
        np.testing.assert_array_equal(_run(t, IMG, seed), transforms.apply_op(IMG, name, 9, negate))
    assert len(names) > 10
    assert np.array_equal(_run(transforms.rand_augment(num_ops=0), IMG), IMG)
    assert np.array_equal(_run(transforms.rand_augment(prob=0.0), IMG), IMG)


def test_rand_augment_default_is_deits_and_skips_half_the_ops():
    t = transforms.rand_augment()  # rand-m9-mstd0.5-inc1
    unchanged = 0
    for seed in range(80):
        out = _run(t, IMG, seed)
        assert out.shape == IMG.shape and out.dtype == np.uint8
        unchanged += np.array_equal(out, IMG)
    # Both ops skipped with probability 1/4 (an applied op rarely leaves every pixel as is).
    assert 8 <= unchanged <= 35


# ----------------------------------------------------------------------------- float stage


def test_normalize_against_float64():
    image = _image(9, 11, seed=1)
    out = _run(transforms.normalize(), image)
    mean, std = np.array(transforms.IMAGENET_MEAN), np.array(transforms.IMAGENET_STD)
    ref = (image.astype(np.float64) / 255.0 - mean) / std
    assert out.dtype == np.float32 and out.shape == (9, 11, 3)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
    gray = _image(9, 11, 0)
    out = _run(transforms.normalize((0.5,), (0.25,)), gray)
    assert out.shape == (9, 11, 1)
    np.testing.assert_allclose(out[..., 0], (gray / 255.0 - 0.5) / 0.25, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="channels"):
        _run(transforms.normalize(), gray)  # ImageNet's 3 means on a 1-channel image
    out = _run(transforms.to_float(), image)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, image / 255.0, rtol=1e-7, atol=0)


def _erased_box(out, original):
    """(h, w) of the single erased rectangle (where `out` differs), or None."""
    diff = np.any(out != original, axis=-1)
    if not diff.any():
        return None
    rows, cols = np.flatnonzero(diff.any(1)), np.flatnonzero(diff.any(0))
    h, w = rows[-1] - rows[0] + 1, cols[-1] - cols[0] + 1
    assert diff.sum() == h * w, "the erased region is one rectangle"
    return int(h), int(w)


def test_random_erasing_box_area_and_aspect_bounds():
    height = width = 48
    ones = np.ones((height, width, 3), np.float32)
    t = transforms.random_erasing(p=1.0, mode="const")
    areas, aspects = [], []
    for seed in range(300):
        out = _run(t, ones, seed)
        box = _erased_box(out, ones)
        if box is None:  # all 10 attempts failed (a box as large as the image): rare
            continue
        h, w = box
        assert h < height and w < width
        erased = out[out[..., 0] != 1]
        assert (erased == 0).all()
        # h = round(sqrt(A r)), w = round(sqrt(A / r)), A in [0.02, 1/3] H W, r = h / w in
        # [0.3, 1 / 0.3]: exact bounds given |h - sqrt(A r)|, |w - sqrt(A / r)| <= 1/2.
        assert (h - 0.5) * (w - 0.5) <= height * width / 3
        assert (h + 0.5) * (w + 0.5) >= 0.02 * height * width
        assert (h - 0.5) / (w + 0.5) <= 1 / 0.3 and (h + 0.5) / (w - 0.5) >= 0.3
        areas.append(h * w / (height * width))
        aspects.append(h / w)
    assert len(areas) > 250
    assert min(areas) < 0.05 and max(areas) > 0.28
    assert min(aspects) < 0.45 and max(aspects) > 2.2


def test_random_erasing_probability_noise_and_purity():
    x = np.zeros((32, 32, 3), np.float32) + 5.0
    t = transforms.random_erasing()  # DeiT: p 0.25, per-pixel N(0, 1)
    erased, noise = 0, []
    for seed in range(400):
        out = _run(t, x, seed)
        assert out.dtype == np.float32 and out.shape == x.shape
        changed = out != 5.0
        erased += changed.any()
        noise.append(out[changed])
    assert 70 < erased < 130  # p = 0.25 of 400 (binomial sd 8.7)
    noise = np.concatenate(noise)
    assert abs(noise.mean()) < 0.05 and abs(noise.std() - 1.0) < 0.05
    assert (x == 5.0).all()  # the input is never written
    gray = _run(transforms.random_erasing(p=1.0, mode="rand"), np.ones((20, 20), np.float32))
    assert gray.shape == (20, 20)
    with pytest.raises(TypeError, match="float"):
        _run(t, _image(8, 8))
    with pytest.raises(ValueError, match="mode"):
        transforms.random_erasing(mode="zeros")


# ----------------------------------------------------------------------------- composition


def test_compose_threads_one_generator_in_order():
    crop, flip = transforms.random_crop(8, padding=2), transforms.horizontal_flip()
    image = _image(10, 10)
    for seed in range(10):
        g = np.random.default_rng(seed)
        expected = flip(crop(_ex(image), g), g)["image"]
        np.testing.assert_array_equal(_run(transforms.compose(crop, flip), image, seed), expected)


RANDOM_TRANSFORMS = {
    "random_crop": (transforms.random_crop(8, padding=4), _image(8, 8)),
    "horizontal_flip": (transforms.horizontal_flip(), _image(8, 8)),
    "random_resized_crop": (transforms.random_resized_crop(12), _image(20, 24)),
    "rand_augment": (transforms.rand_augment(), _image(12, 12)),
    "random_erasing": (
        transforms.random_erasing(p=0.5),
        np.random.default_rng(0).normal(size=(12, 12, 3)).astype(np.float32),
    ),
    "deit_train_32": (transforms.deit_train(32), _image(32, 32)),
    "deit_train_64": (transforms.deit_train(64), _image(80, 72)),
}


@pytest.mark.parametrize("name", sorted(RANDOM_TRANSFORMS))
def test_same_seed_same_output_and_seeds_differ(name):
    t, image = RANDOM_TRANSFORMS[name]
    again = pickle.loads(pickle.dumps(t))  # grain workers receive pickled transforms
    outs = []
    for seed in range(8):
        out = _run(t, image, seed)
        np.testing.assert_array_equal(out, _run(t, image, seed))
        np.testing.assert_array_equal(out, _run(again, image, seed))
        outs.append(out.tobytes())
    assert len(set(outs)) > 1


def test_deit_recipes_shapes_and_the_data_pipeline():
    assert _run(transforms.deit_eval(64), _image(90, 70)).shape == (64, 64, 3)
    assert _run(transforms.deit_eval(32), _image(32, 32)).dtype == np.float32
    images = np.stack([_image(32, 32, seed=s) for s in range(8)])
    split = tasks.Split({"image": images, "label": np.arange(8, dtype=np.int32)})

    def first_batches(n):
        it = pipeline.train_iterator(
            split, batch_size=4, seed=3, transform=transforms.deit_train(32), prefetch=0
        )
        return [next(it) for _ in range(n)]

    a, b = first_batches(3), first_batches(3)
    for x, y in zip(a, b, strict=True):
        assert x["image"].shape == (4, 32, 32, 3) and x["image"].dtype == np.float32
        np.testing.assert_array_equal(x["image"], y["image"])
        np.testing.assert_array_equal(x["label"], y["label"])
    np.testing.assert_array_equal(split.arrays["image"], images)  # augmentation never writes
