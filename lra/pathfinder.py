"""LRA Pathfinder (and Path-X): are the two markers joined by one contour? Binary, 2 classes.

The task (Linsley et al. 2018, "Learning long-range spatial dependencies with horizontal gated
recurrent units"; Kim et al. 2020, "Disentangling neural mechanisms for perceptual grouping";
LRA, Tay et al. 2021)
----------------------------------------------------------------------------------------------
A grayscale image shows dashed curves ("contours" or "snakes", chains of short line segments
called paddles) on black, and two bright round markers. Label 1 iff both markers sit on the two
ends of the same contour. LRA's Pathfinder is 32x32 (1024 pixel tokens); Path-X is 128x128
(16,384 tokens). LRA reported the "hard" difficulty (contour length 14) for both (maintainer in
LRA issue #11); easy = 6 and intermediate = 9 paddles per contour.

Generator (`generate`): written here from the published description, not from the original code
------------------------------------------------------------------------------------------------
Coordinates are in output pixels: pixel (row r, column c) covers [c, c+1) x [r, r+1).
1. Per image: label ~ Bernoulli(1/2); a paddle gap/margin `m` from `paddle_margin_list`, a
   contour gain from `snake_contrast_list` and a single-paddle gain from `paddle_contrast_list`
   (uniform choices); which target contour X carries the "start" marker (fair coin).
2. Target contour A: start point uniform in [padding, size - padding]^2, direction uniform.
   Target contour B starts exactly `seed_distance` from A's start, in a uniform direction.
   A contour is `contour_length` paddles, each a segment of length `paddle_length` and
   thickness `paddle_thickness`. Paddle k+1 turns by a uniform angle in
   [-continuity, +continuity] radians from paddle k and starts `m` pixels beyond paddle k's end
   in its own direction (the gap that makes contours dashed). Reading `continuity` as the
   largest turn in radians is ours; with Path-X's 1.8 (103 degrees) its contours zig-zag.
3. After a target contour, a disc of `marker_radius` is reserved at each of its two tips, so that
   no other contour comes near any possible marker position (all four tips are reserved in both
   classes, so the reservation carries no label information).
4. `num_distractor_snakes` distractor contours of `distractor_length` paddles start uniformly;
   `num_single_paddles` isolated paddles (0 here: see below) come last. (Images up to 64x64
   draw these starts uniformly among the pixels with nothing within the margin: the same
   uniform distribution over admissible starts, with far fewer rejections on crowded images.)
5. Non-overlap: every primitive (paddle or disc) is rasterised, and its footprint (the pixels it
   makes non-zero) must keep a Chebyshev distance > m from every pixel already occupied by
   another contour, or by its own contour except the paddle just before it (the margin-dilated
   occupancy mask of the description). A rejected paddle is re-drawn with a new turn (or, for the
   first paddle, a new start). After 20 failed turns of one paddle, or a blocked tip disc, the
   contour restarts; after 20 restarts of one contour, or 50 failed starts, the image restarts
   (same label). These limits are ours. So different contours are never 8-connected (they are
   at least m+1 pixels apart), while consecutive paddles of one contour are at most m pixels
   apart: the non-zero pixels, grouped with a Chebyshev linking radius m, are exactly the
   contours (tested).
6. Markers: a disc at the start tip of X, and one at the end tip of X (label 1) or at the end
   tip of the other target contour (label 0), as in the LRA notes ("one at the start tip of
   snake i, the other at the end tip of the same snake or of the other one").

Rendering: anti-aliased by supersampling. Each primitive is a capsule (a segment with round
caps; a disc is a capsule of length 0). Its coverage is evaluated on an `antialias_scale`^2 grid
of sub-pixel centres per pixel, with a linear edge ramp one sub-pixel wide
(clip(s * (half_width - distance) + 1/2, 0, 1)), then averaged over each pixel (area
averaging, not the original's Lanczos resize). Intensity = min(1, gain * coverage), composited
with max, stored as round(255 * intensity).

Contrast, our reading of the parameter names: a contrast is a *gain on the anti-aliased
coverage*, clipped at 1. LRA-32's `snake_contrast_list=[2]` with 0.5-pixel paddles turns a
half-covered pixel into full white (thin lines stay visible after downsampling), Path-X's [0.9]
with 1.5-pixel paddles draws light gray lines. `paddle_contrast_list` is the gain of the
optional single-paddle clutter; the LRA wrapper switched that clutter off
(`use_single_paddles=False` in its body, offline_data.md §2.2), so `num_single_paddles=0`.
Markers are drawn at gain 1 (the tip pixel is always 255).

Known cue: at 128x128 the distance between the markers alone separates the classes with
58% accuracy (label-0 markers lie farther apart on average: B starts 20 pixels from A); at
32x32 it gives 52.5% (chance; 2,000 images, best threshold). Models can exploit the former.

Speed: images are built in lock-step chunks (all images of a chunk propose their next
primitive together, numpy-vectorised); about 450-650 images/s at 32x32 and 400-600 at 128x128
on one core of this machine (2026-11, shared CPU).

Randomness: image i of (seed, stream) uses its own counter-based SplitMix64 stream, so an image
depends only on (seed, stream, i, params): output is identical for any chunking, prefix-stable
(`generate(10)` = `generate(20)[:10]`) and any index range can be built in parallel
(`start=`). Bit-identical results are expected on one numpy build; another CPU/numpy could in
principle round a coverage value differently.

Parameters (frozen dicts; `params_for(resolution, difficulty)` applies the difficulty)
-------------------------------------------------------------------------------------
`PATHFINDER32`: LRA's docstring of `lra_benchmarks/data/pathfinder.py` (Pathfinder32), all
values. `PATHFINDER128` (Path-X): the Pathfinder128 docstring gives padding 1, margins [2, 3],
seed_distance 20, marker_radius 3, contour_length 14, paddle_thickness 1.5, antialias_scale 2
(the docstring sets 4, then 2), continuity 1.8, distractor_length = contour_length / 3 (taken as
integer division: 4), num_distractor_snakes = 35 / distractor_length (-> 8) and
snake_contrast_list [0.9]. Ours: paddle_length 5 (the docstring leaves the generator default,
which we do not know) and paddle_contrast_list [0.75] (unused).

Official release (`source="official"`)
--------------------------------------
`<dir>/<pattern>/metadata/*.npy` are TEXT files, one image per line, fields split on
whitespace: field[0] = image subfolder (relative to `<pattern>/`), field[1] = PNG file name,
field[3] = label 0/1 (field[2] and further fields are ignored). Patterns: `curv_baseline` (easy),
`curv_contour_length_9` (intermediate), `curv_contour_length_14` (hard). Metadata files are
read in natural sorted order (`2.npy` before `10.npy`), lines in file order; PNGs are decoded
as 8-bit grayscale with PIL. Splits are train/val/test = records [:80%], [80%:90%], [90%:]
(boundaries rounded half up) of all records, then zero-byte images are dropped (LRA sliced its
TFDS split first and filtered `tf.strings.length(image) > 0` in the input pipeline); the
description counts them. TFDS stored examples in its own hashed order, so LRA's exact split
membership cannot be reproduced; the sizes and distribution are the same.

Tokens: pixel + 1 (ids 1-256, 0 = pad, unused), `VOCAB_SIZE = 257`. `zero_is_padding=True`
reproduces the LRA quirk (token = pixel; the LRA models mask `inputs > 0`, so every black
background pixel, most of a Pathfinder image, is masked out as padding).
"""

from __future__ import annotations

import math
import os
import pathlib
import re
import time
import types
from collections.abc import Callable, Mapping, Sequence

import ml_collections
import numpy as np

from lra import cache, image

__all__ = [
    "NUM_CLASSES",
    "VOCAB_SIZE",
    "PATHFINDER32",
    "PATHFINDER128",
    "CONTOUR_LENGTHS",
    "PATTERNS",
    "data_config",
    "params_for",
    "generate",
    "generate_debug",
    "write_official",
    "read_official",
    "official_splits",
    "load",
]

NUM_CLASSES = 2
VOCAB_SIZE = 257  # pixel + 1, and the pad id 0

# Source: LRA `lra_benchmarks/data/pathfinder.py`, docstring of Pathfinder32.
PATHFINDER32: Mapping[str, object] = types.MappingProxyType(
    dict(
        window_size=32,  # image side in pixels
        padding=1,  # paddle end points stay in [padding, window_size - padding]
        paddle_length=2.0,  # pixels
        paddle_thickness=0.5,  # pixels
        paddle_margin_list=(1,),  # gap between paddles = non-overlap margin, pixels (per image)
        marker_radius=1.5,  # pixels
        contour_length=14,  # paddles per target contour ("hard")
        distractor_length=14 // 3,  # contour_length // 3
        num_distractor_snakes=20 // (14 // 3),  # 20 // distractor_length
        num_single_paddles=0,  # the LRA wrapper disabled single-paddle clutter
        antialias_scale=2,  # supersampling factor per axis
        seed_distance=7.0,  # distance between the two target contours' starts, pixels
        continuity=1.0,  # max turn between consecutive paddles, radians
        snake_contrast_list=(2.0,),  # gain of contours (per image)
        paddle_contrast_list=(0.75,),  # gain of single paddles (per image)
    )
)
# Source: LRA docstring of Pathfinder128 (Path-X), except paddle_length and
# paddle_contrast_list, which are ours (see the module docstring).
PATHFINDER128: Mapping[str, object] = types.MappingProxyType(
    dict(
        window_size=128,
        padding=1,
        paddle_length=5.0,  # ours
        paddle_thickness=1.5,
        paddle_margin_list=(2, 3),
        marker_radius=3.0,
        contour_length=14,
        distractor_length=14 // 3,
        num_distractor_snakes=35 // (14 // 3),
        num_single_paddles=0,
        antialias_scale=2,
        seed_distance=20.0,
        continuity=1.8,
        snake_contrast_list=(0.9,),
        paddle_contrast_list=(0.75,),  # ours (unused)
    )
)
_BASE = {32: PATHFINDER32, 128: PATHFINDER128}
# Numerator of num_distractor_snakes = budget // distractor_length (LRA docstrings).
_DISTRACTOR_BUDGET = {32: 20, 128: 35}
CONTOUR_LENGTHS: Mapping[str, int] = types.MappingProxyType(dict(easy=6, intermediate=9, hard=14))
PATTERNS: Mapping[str, str] = types.MappingProxyType(
    dict(easy="curv_baseline", intermediate="curv_contour_length_9", hard="curv_contour_length_14")
)
_SPLITS = ("train", "val", "test")
_CACHE_VERSION = 1
# Bump when the generator's output for given (seed, params) changes: cached data is keyed on it.
_GENERATOR_VERSION = 1

# Retry limits (ours; the description only says "retry, then restart").
_MAX_TURN_TRIES = 20  # new turn angles for one paddle before its contour restarts
_MAX_START_TRIES = 50  # new start points for a contour before the image restarts
_MAX_CONTOUR_RESTARTS = 20  # restarts of one contour before the image restarts
_MAX_IMAGE_RESTARTS = 2000  # then the parameters are declared infeasible
# Images generated in lock-step: bigger chunks amortise numpy's per-call overhead (at 32x32,
# 4096 runs ~1.5x faster than 512); the chunk's state is capped at ~64 MB.
_CHUNK_BYTES = 64 << 20
_MAX_CHUNK = 4096
_PROGRESS_SECONDS = 5.0


def data_config() -> ml_collections.ConfigDict:
    """`config.data` of LRA Pathfinder, with the paper (LRA) values as defaults."""
    d = ml_collections.ConfigDict()
    d.source = "generated"  # generated (our generator, LRA parameters) | official (release PNGs)
    d.dir = ""  # official: folder holding curv_baseline/ etc.; generated: cache root ("" = default)
    d.max_length = 32 * 32  # tokens per image = resolution**2 (16,384 for Path-X)
    d.seed = 0  # generator seed (train/val/test use separate streams of it)
    d.resolution = 32  # 32 (LRA Pathfinder) | 128 (Path-X)
    d.difficulty = "hard"  # easy (6 paddles) | intermediate (9) | hard (14; what LRA reported)
    d.zero_is_padding = False  # True = LRA quirk: token = pixel, so black pixels are pad (masked)
    d.num_train = 160_000  # generated: images; official: at most this many (first n; 0 = all)
    d.num_val = 20_000  # as num_train (LRA: 80/10/10 of 200k per difficulty)
    d.num_test = 20_000  # as num_train
    return d


def params_for(resolution: int = 32, difficulty: str = "hard") -> dict:
    """Generator parameters of LRA's Pathfinder`resolution` at a difficulty (contour length 6,
    9 or 14; distractor_length = contour_length // 3, num_distractor_snakes = 20 (32) or 35
    (128) // distractor_length, as in the LRA docstrings)."""
    if resolution not in _BASE:
        raise ValueError(f"resolution={resolution!r}; known: 32 (Pathfinder), 128 (Path-X)")
    if difficulty not in CONTOUR_LENGTHS:
        raise ValueError(f"difficulty={difficulty!r}; known: {', '.join(CONTOUR_LENGTHS)}")
    p = dict(_BASE[resolution])
    length = CONTOUR_LENGTHS[difficulty]
    p["contour_length"] = length
    p["distractor_length"] = length // 3
    p["num_distractor_snakes"] = _DISTRACTOR_BUDGET[resolution] // (length // 3)
    return p


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------

_INT_KEYS = (
    "window_size",
    "contour_length",
    "distractor_length",
    "num_distractor_snakes",
    "num_single_paddles",
    "antialias_scale",
)
_FLOAT_KEYS = (
    "padding",
    "paddle_length",
    "paddle_thickness",
    "marker_radius",
    "seed_distance",
    "continuity",
)
_LIST_KEYS = ("paddle_margin_list", "snake_contrast_list", "paddle_contrast_list")


def _resolve(params: Mapping[str, object]) -> dict:
    keys = set(PATHFINDER32)
    unknown, missing = sorted(set(params) - keys), sorted(keys - set(params))
    if unknown or missing:
        raise TypeError(f"Pathfinder params: unknown {unknown}, missing {missing}")
    p: dict = {}
    for k in _INT_KEYS:
        v = params[k]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{k} must be an int, got {v!r}")
        p[k] = int(v)
    for k in _FLOAT_KEYS:
        p[k] = float(params[k])
    for k in _LIST_KEYS:
        values = tuple(params[k])
        if not values:
            raise ValueError(f"{k} must not be empty")
        p[k] = tuple(float(v) for v in values)
    margins = p["paddle_margin_list"]
    if any(v != int(v) or v < 1 for v in margins):
        # An integer margin m makes "consecutive paddles <= m pixels apart" exact (step 5).
        raise ValueError(f"paddle_margin_list must hold integers >= 1, got {list(margins)}")
    p["paddle_margin_list"] = tuple(int(v) for v in margins)
    if p["window_size"] < 8 or p["antialias_scale"] < 1 or p["contour_length"] < 1:
        raise ValueError("need window_size >= 8, antialias_scale >= 1, contour_length >= 1")
    if p["distractor_length"] < 1 and p["num_distractor_snakes"] > 0:
        raise ValueError("distractor_length must be >= 1 when there are distractors")
    if min(p["num_distractor_snakes"], p["num_single_paddles"]) < 0:
        raise ValueError("numbers of distractors / single paddles must be >= 0")
    if not 0 <= p["padding"] < p["window_size"] / 2 - 1:
        raise ValueError(f"padding={p['padding']} does not fit window_size={p['window_size']}")
    if p["paddle_length"] <= 0 or p["marker_radius"] <= 0 or p["continuity"] < 0:
        raise ValueError("need paddle_length > 0, marker_radius > 0, continuity >= 0")
    if not 0 < p["seed_distance"] < p["window_size"] - 2 * p["padding"]:
        raise ValueError(f"seed_distance={p['seed_distance']} does not fit the window")
    if min(p["snake_contrast_list"] + p["paddle_contrast_list"]) <= 0:
        raise ValueError("contrasts must be > 0")
    # Every pixel that a paddle's centre line crosses must render non-zero (the contours stay
    # connected, and the generator's cheap pre-check relies on it): the nearest sub-pixel
    # centre is within sqrt(2)/(2s) of any point, so its coverage s*(hw - sqrt(2)/(2s)) + 1/2
    # must be positive, and the pixel's mean coverage times the gain must round to >= 1/255.
    s, hw = p["antialias_scale"], p["paddle_thickness"] / 2
    worst = s * hw + 0.5 - math.sqrt(0.5)
    if worst <= 0:
        raise ValueError(
            f"paddle_thickness={p['paddle_thickness']} is too thin to render at "
            f"antialias_scale={s}: thin paddles would break into invisible pieces"
        )
    gains = p["snake_contrast_list"] + (
        p["paddle_contrast_list"] if p["num_single_paddles"] else ()
    )
    if min(gains) * min(worst, 1.0) / s**2 < 1 / 255:
        raise ValueError(f"contrast {min(gains)} is too low: thin paddles would round to black")
    return p


class _Layout:
    """The fixed sequence of primitives ("slots") of every image of one parameter set.

    Slots: target A (contour_length paddles, start-tip disc, end-tip disc), target B (same),
    the distractor paddles, the single paddles. `serial = slot + 1` marks occupancy; since
    slots are placed in order, a smaller serial means "placed earlier".
    """

    def __init__(self, p: dict):
        cl, dl = p["contour_length"], p["distractor_length"]
        kind, kidx, first, length, role, contour = [], [], [], [], [], []
        n_contours = 0

        def add_contour(n_paddles, role_id, discs):
            nonlocal n_contours
            base = len(kind)
            for k in range(n_paddles):
                kind.append(0)
                kidx.append(k)
                first.append(base)
                length.append(n_paddles)
                role.append(role_id)
                contour.append(n_contours)
            for disc in (1, 2)[: 2 if discs else 0]:
                kind.append(disc)
                kidx.append(n_paddles)
                first.append(base)
                length.append(n_paddles)
                role.append(role_id)
                contour.append(n_contours)
            n_contours += 1

        add_contour(cl, 0, True)
        add_contour(cl, 1, True)
        for _ in range(p["num_distractor_snakes"]):
            add_contour(dl, 2, False)
        for _ in range(p["num_single_paddles"]):
            add_contour(1, 3, False)
        self.kind = np.array(kind, np.int8)  # 0 paddle, 1 start-tip disc, 2 end-tip disc
        self.kidx = np.array(kidx, np.int32)  # paddle index within its contour
        self.first = np.array(first, np.int32)  # first slot of the contour
        self.length = np.array(length, np.int32)  # paddles of the contour
        self.role = np.array(role, np.int8)  # 0 target A, 1 target B, 2 distractor, 3 single
        self.contour = np.array(contour, np.int16)
        self.n_slots = len(kind)
        self.n_contours = n_contours
        # Slots of the start-tip and end-tip discs of targets A and B.
        self.disc_start = tuple(int(i) for i in np.flatnonzero(self.kind == 1))
        self.disc_end = tuple(int(i) for i in np.flatnonzero(self.kind == 2))
        s = p["antialias_scale"]
        self.reach_paddle = p["paddle_thickness"] / 2 + 0.5 / s  # coverage > 0 within this
        self.reach_disc = p["marker_radius"] + 0.5 / s
        extent = max(p["paddle_length"] + 2 * self.reach_paddle, 2 * self.reach_disc)
        self.patch = int(math.ceil(extent)) + 2  # pixels per side of a primitive's patch
        self.max_margin = max(p["paddle_margin_list"])
        # Canvas = the image plus a border that every patch window (patch + margin) fits in:
        # pixel y is canvas row y + offset.
        self.offset = self.max_margin + int(math.ceil(max(self.reach_paddle, self.reach_disc))) + 1
        self.canvas = p["window_size"] + self.offset + self.patch + self.max_margin + 1


# --------------------------------------------------------------------------------------------
# Counter-based random numbers (SplitMix64): image i has its own stream
# --------------------------------------------------------------------------------------------

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def _image_keys(seed: int, stream: int, start: int, n: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        head = np.array([int(seed) % 2**64, int(stream) % 2**64], np.uint64)
        base = _mix(_mix(head[:1] + _GOLDEN) ^ _mix(head[1:] * _M1 + _GOLDEN))
        index = np.arange(start, start + n, dtype=np.uint64)
        return _mix(base + _mix(index + _GOLDEN))


def _uniforms(keys: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Uniforms in [0, 1): draw number `index` (uint64 [n, ...]) of stream `keys` ([n])."""
    shape = (-1,) + (1,) * (index.ndim - 1)
    z = keys.reshape(shape) + (index + np.uint64(1)) * _GOLDEN
    return (_mix(z) >> np.uint64(11)).astype(np.float64) * (1.0 / 2**53)


# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------

_INF = np.int16(np.iinfo(np.int16).max)  # "no primitive near" in the serial grids
_HEAD_DRAWS = 8  # per-image draws before the placement attempts (label, margin, gains, ...)
_ATTEMPT_DRAWS = 4  # per placement attempt: cell/angle, x, y within the cell, turn
_BUDGET = 4096  # candidate placements evaluated per lock-step step (K per image = budget / n)
_MAX_K = 64
_FREE_CELL_PIXELS = 64 * 64  # images up to this size draw fresh starts among free pixels


def _min_filter1(x: np.ndarray) -> np.ndarray:
    # Chebyshev radius-1 minimum over the last two axes (separable 3x3).
    y = x.copy()
    np.minimum(y[..., 1:, :], x[..., :-1, :], out=y[..., 1:, :])
    np.minimum(y[..., :-1, :], x[..., 1:, :], out=y[..., :-1, :])
    z = y.copy()
    np.minimum(z[..., :, 1:], y[..., :, :-1], out=z[..., :, 1:])
    np.minimum(z[..., :, :-1], y[..., :, 1:], out=z[..., :, :-1])
    return z


def _spread(x: np.ndarray, radius: np.ndarray, max_radius: int) -> np.ndarray:
    """Minimum over Chebyshev distance <= radius[i] of x[i] (x: [n, h, w], radius: [n])."""
    out = step = x
    uniform = bool(np.all(radius == max_radius))
    for r in range(1, max_radius + 1):
        step = _min_filter1(step)
        out = step if uniform else np.where((radius >= r)[:, None, None], step, out)
    return out


def _render(ax, ay, dx, dy, hw, gain, s: int, patch: int) -> np.ndarray:
    """Quantised intensities uint8 [n, patch, patch] of n capsules in their patches.

    (ax, ay): segment start relative to the patch origin, (dx, dy): segment vector,
    hw: half width, gain: contrast; all float [n]."""
    n = len(ax)
    f32 = np.float32
    g = (np.arange(patch * s, dtype=f32) + f32(0.5)) / f32(s)
    px = g[None, None, :] - ax.astype(f32)[:, None, None]  # [n, 1, ps]
    py = g[None, :, None] - ay.astype(f32)[:, None, None]  # [n, ps, 1]
    dx = dx.astype(f32)[:, None, None]
    dy = dy.astype(f32)[:, None, None]
    inv = f32(1) / np.maximum(dx * dx + dy * dy, f32(1e-12))
    # Distance of every sub-pixel centre to the segment: project, clamp, measure.
    t = px * (dx * inv) + py * (dy * inv)  # [n, ps, ps]
    np.clip(t, 0.0, 1.0, out=t)
    qx = px - t * dx
    qy = py - t * dy
    qx *= qx
    qy *= qy
    qx += qy
    np.sqrt(qx, out=qx)
    # Coverage with a one-sub-pixel linear edge: s * (hw - d) + 1/2, clipped to [0, 1].
    qx *= f32(-s)
    qx += (f32(s) * hw.astype(f32) + f32(0.5))[:, None, None]
    np.clip(qx, 0.0, 1.0, out=qx)
    cov = qx.reshape(n, patch, s, patch * s).sum(axis=2).reshape(n, patch, patch, s).sum(axis=3)
    cov *= (gain.astype(f32) / f32(s * s))[:, None, None]
    np.minimum(cov, f32(1), out=cov)
    cov *= f32(255)
    cov += f32(0.5)
    return np.floor(cov, out=cov).astype(np.uint8)


def _pick(options: np.ndarray, u: np.ndarray) -> np.ndarray:
    return options[np.minimum((u * len(options)).astype(np.int64), len(options) - 1)]


def _generate_chunk(keys: np.ndarray, p: dict, lay: _Layout, debug: bool):
    """Images of the streams `keys` ([B] uint64), built in lock-step.

    Every step takes, for each unfinished image, its next K candidate placements of the current
    primitive (attempt numbers a, a+1, ..., each with its own draws), and accepts the first that
    passes. Candidates after the first passing one, or beyond the retry limit, are not used
    (not consumed): so the result is exactly that of trying the candidates one at a time, for
    any K, chunk size or batch composition.

    Occupancy: `occ` holds, per pixel, the smallest serial (slot + 1) of the primitives whose
    footprint covers it; `near` the smallest serial within Chebyshev distance `margin`. A
    primitive with limit l is blocked iff near < l on any pixel of its footprint.
    """
    B = len(keys)
    size, s, P, M, Q = p["window_size"], p["antialias_scale"], lay.patch, lay.max_margin, lay.offset
    pad, L = p["padding"], p["paddle_length"]
    T = lay.n_slots
    lo, hi = pad, size - pad

    head = _uniforms(keys, np.broadcast_to(np.arange(5, dtype=np.uint64), (B, 5)))
    label = (head[:, 0] < 0.5).astype(np.int32)
    margin = _pick(np.array(p["paddle_margin_list"], np.int64), head[:, 1])
    snake_gain = _pick(np.array(p["snake_contrast_list"]), head[:, 2])
    paddle_gain = _pick(np.array(p["paddle_contrast_list"]), head[:, 3])
    x_target = (head[:, 4] < 0.5).astype(np.int64)  # target contour carrying the start marker

    attempts = np.zeros(B, np.uint64)
    slot = np.zeros(B, np.int64)
    tries = np.zeros(B, np.int64)
    restarts = np.zeros(B, np.int64)  # of the current contour
    image_restarts = np.zeros(B, np.int64)
    sx, sy, ex, ey, th = (np.zeros((B, T)) for _ in range(5))
    ox = np.zeros((B, T), np.int64)
    oy = np.zeros((B, T), np.int64)
    vals = np.zeros((B, T, P, P), np.uint8)
    C = lay.canvas
    occ = np.zeros((B, C, C), np.int16)
    near = np.full((B, C, C), _INF, np.int16)
    # Flat views for windows: element (b, row, col) is b * C * C + row * C + col.
    occ_flat, near_flat = occ.reshape(-1), near.reshape(-1)
    patch_offsets = (np.arange(P)[:, None] * C + np.arange(P)[None, :]).reshape(-1)
    grow_offsets = (np.arange(P + 2 * M)[:, None] * C + np.arange(P + 2 * M)[None, :]).reshape(-1)

    # A fresh start is uniform in [lo, hi]^2 restricted to pixels with no primitive within the
    # margin (a necessary condition: the start pixel is part of the footprint): a cell is drawn
    # with probability proportional to its area inside [lo, hi]^2, then a point inside it.
    # Both ways give uniform starts over the admissible area; free-cell sampling needs a
    # cumulative sum over the image per try, which pays off only on small, crowded images.
    free_cells = size * size <= _FREE_CELL_PIXELS
    cell = np.arange(size, dtype=np.float64)
    cell_lo = np.maximum(cell, lo)
    cell_w = np.clip(np.minimum(cell + 1, hi) - cell_lo, 0, None)
    cell_area = (cell_w[:, None] * cell_w[None, :]).reshape(-1)
    line_t = np.linspace(0.0, 1.0, int(math.ceil(2 * L)) + 1)  # centre-line samples, <= 0.5 apart
    hw_of_kind = np.array([p["paddle_thickness"] / 2, p["marker_radius"], p["marker_radius"]])
    reach_of_kind = np.array([lay.reach_paddle, lay.reach_disc, lay.reach_disc])
    draw_ix = np.arange(_ATTEMPT_DRAWS, dtype=np.uint64)

    while True:
        act = np.flatnonzero(slot < T)
        if not len(act):
            break
        A = len(act)
        K = int(min(_MAX_K, max(1, _BUDGET // A)))
        j = slot[act]
        kind, k, role, first = lay.kind[j], lay.kidx[j], lay.role[j], lay.first[j]
        paddle = kind == 0
        fresh = paddle & (k == 0)
        jm1 = np.maximum(j - 1, 0)
        # Serials below `limit` block: all for a contour's first paddle, all but the previous
        # paddle for the next ones, all other contours' for a tip disc.
        limit = np.where(fresh, j + 1, np.where(paddle, j, first + 1))
        max_tries = np.where(kind > 0, 1, np.where(fresh, _MAX_START_TRIES, _MAX_TURN_TRIES))
        remaining = max_tries - tries[act]
        n_try = np.where(kind > 0, 1, np.minimum(K, remaining))  # candidates that may be used

        index = (
            np.uint64(_HEAD_DRAWS)
            + (attempts[act][:, None] + np.arange(K, dtype=np.uint64)[None, :])[:, :, None]
            * np.uint64(_ATTEMPT_DRAWS)
            + draw_ix
        )
        u = _uniforms(keys[act], index)  # [A, K, 4]
        bb = act[:, None]

        theta = np.where(
            fresh[:, None],
            2 * np.pi * u[..., 3],
            th[act, jm1][:, None] + p["continuity"] * (2 * u[..., 3] - 1),
        )
        cos, sin = np.cos(theta), np.sin(theta)
        m = margin[act][:, None]
        xs = ex[act, jm1][:, None] + m * cos
        ys = ey[act, jm1][:, None] + m * sin
        valid = np.ones((A, K), bool)
        # Target B: seed_distance from target A's start.
        sel = np.flatnonzero(fresh & (role == 1))
        if len(sel):
            phi = 2 * np.pi * u[sel, :, 0]
            xs[sel] = sx[act[sel], 0][:, None] + p["seed_distance"] * np.cos(phi)
            ys[sel] = sy[act[sel], 0][:, None] + p["seed_distance"] * np.sin(phi)
        # Other contours: uniform over the free cells.
        sel = np.flatnonzero(fresh & (role != 1))
        if len(sel) and not free_cells:
            xs[sel] = lo + (hi - lo) * u[sel, :, 1]
            ys[sel] = lo + (hi - lo) * u[sel, :, 2]
        elif len(sel):
            free = near[act[sel], Q : Q + size, Q : Q + size].reshape(len(sel), -1) == _INF
            cum = np.cumsum(free * cell_area, axis=1)
            total = cum[:, -1]
            # One sorted array over all images: image i's cumulative areas shifted by i * span.
            span = float(size * size + 1)
            shift = np.arange(len(sel))[:, None] * span
            target = u[sel, :, 0] * total[:, None] + shift
            c = np.searchsorted((cum + shift).reshape(-1), target.reshape(-1), side="right")
            c = c.reshape(len(sel), K) - np.arange(len(sel))[:, None] * (size * size)
            c = np.minimum(c, size * size - 1)
            cy, cx = np.divmod(c, size)
            xs[sel] = cell_lo[cx] + u[sel, :, 1] * cell_w[cx]
            ys[sel] = cell_lo[cy] + u[sel, :, 2] * cell_w[cy]
            valid[sel] &= (total > 0)[:, None]
        # Tip discs.
        sel = np.flatnonzero(~paddle)
        if len(sel):
            tip = np.where(kind[sel] == 1, first[sel], first[sel] + lay.length[j[sel]] - 1)
            start_tip = kind[sel] == 1
            xs[sel] = np.where(start_tip, sx[act[sel], tip], ex[act[sel], tip])[:, None]
            ys[sel] = np.where(start_tip, sy[act[sel], tip], ey[act[sel], tip])[:, None]
        length = np.where(paddle, L, 0.0)[:, None]
        xe = xs + length * cos
        ye = ys + length * sin

        # Cheap exact pre-check: bounds, and the pixels under the centre line (all part of
        # the footprint) must not be blocked.
        valid &= (np.minimum(xs, xe) >= lo) & (np.maximum(xs, xe) <= hi)
        valid &= (np.minimum(ys, ye) >= lo) & (np.maximum(ys, ye) <= hi)
        valid &= np.arange(K)[None, :] < n_try[:, None]
        px = np.floor(xs[..., None] + line_t * (xe - xs)[..., None]).astype(np.int64)
        py = np.floor(ys[..., None] + line_t * (ye - ys)[..., None]).astype(np.int64)
        np.clip(px, -Q, C - 1 - Q, out=px)
        np.clip(py, -Q, C - 1 - Q, out=py)
        under = near_flat[(bb * (C * C) + Q * C + Q)[:, :, None] + py * C + px]
        valid &= ~(under < limit[:, None, None]).any(axis=2)

        has = valid.any(axis=1)
        pick = np.argmax(valid, axis=1)
        consumed = np.where(has, pick + 1, n_try).astype(np.uint64)
        attempts[act] += consumed

        # Full check of each image's first surviving candidate.
        ok = np.zeros(A, bool)
        cand = np.flatnonzero(has)
        if len(cand):
            ci = pick[cand]
            cx0, cy0 = xs[cand, ci], ys[cand, ci]
            cx1, cy1 = xe[cand, ci], ye[cand, ci]
            kc = kind[cand]
            reach = reach_of_kind[kc]
            px0 = np.floor(np.minimum(cx0, cx1) - reach).astype(np.int64)
            py0 = np.floor(np.minimum(cy0, cy1) - reach).astype(np.int64)
            gain = np.where(
                kc > 0,
                1.0,
                np.where(role[cand] == 3, paddle_gain[act[cand]], snake_gain[act[cand]]),
            )
            q = _render(cx0 - px0, cy0 - py0, cx1 - cx0, cy1 - cy0, hw_of_kind[kc], gain, s, P)
            foot = q > 0
            corner = act[cand] * (C * C) + (py0 + Q) * C + (px0 + Q)
            where = corner[:, None] + patch_offsets  # [n, P * P]
            seen = near_flat[where].reshape(-1, P, P)
            passed = ~(foot & (seen < limit[cand][:, None, None])).any(axis=(1, 2))
            ok[cand] = passed

            acc = np.flatnonzero(passed)
            if len(acc):
                b1 = act[cand[acc]]
                ja = j[cand[acc]]
                serial = (ja + 1).astype(np.int16)
                sx[b1, ja], sy[b1, ja] = cx0[acc], cy0[acc]
                ex[b1, ja], ey[b1, ja] = cx1[acc], cy1[acc]
                th[b1, ja] = theta[cand[acc], ci[acc]]
                ox[b1, ja], oy[b1, ja] = px0[acc], py0[acc]
                vals[b1, ja] = q[acc]
                fa = foot[acc]
                wa = where[acc]
                cur = occ_flat[wa]
                occ_flat[wa] = np.where(fa.reshape(len(acc), -1) & (cur == 0), serial[:, None], cur)
                grown = np.full((len(acc), P + 2 * M, P + 2 * M), _INF, np.int16)
                grown[:, M : M + P, M : M + P] = np.where(fa, serial[:, None, None], _INF)
                grown = _spread(grown, margin[b1], M).reshape(len(acc), -1)
                wg = (corner[acc] - M * C - M)[:, None] + grow_offsets
                near_flat[wg] = np.minimum(near_flat[wg], grown)
                slot[b1] += 1
                tries[b1] = 0
                nxt = slot[b1]
                starts_contour = (nxt >= T) | (lay.first[np.minimum(nxt, T - 1)] == nxt)
                restarts[b1[starts_contour]] = 0

        failed = np.flatnonzero(~ok)
        if len(failed):
            b = act[failed]
            tries[b] += consumed[failed].astype(np.int64)
            out_of_tries = tries[b] >= max_tries[failed]
            is_fresh = fresh[failed]
            give_up_image = out_of_tries & is_fresh
            give_up_contour = out_of_tries & ~is_fresh
            rc = b[give_up_contour]
            restarts[rc] += 1
            give_up_image[np.flatnonzero(give_up_contour)[restarts[rc] > _MAX_CONTOUR_RESTARTS]] = (
                True
            )
            redo = np.flatnonzero(give_up_contour & ~give_up_image)
            if len(redo):
                br, fr = b[redo], first[failed[redo]]
                grid = occ[br]
                grid[grid > fr[:, None, None]] = 0  # drop the contour's own primitives
                occ[br] = grid
                near[br] = _spread(np.where(grid > 0, grid, _INF), margin[br], M)
                slot[br], tries[br] = fr, 0
            gone = b[give_up_image]
            if len(gone):
                image_restarts[gone] += 1
                if image_restarts[gone].max() > _MAX_IMAGE_RESTARTS:
                    raise RuntimeError(
                        f"Pathfinder: could not place all contours in {_MAX_IMAGE_RESTARTS} "
                        "attempts; the parameters leave too little room (fewer/shorter "
                        "distractors or a larger window)"
                    )
                occ[gone] = 0
                near[gone] = _INF
                slot[gone], tries[gone], restarts[gone] = 0, 0, 0

    # Compose: max over primitives; tip discs only where a marker goes.
    rows_all = np.arange(P)
    mark_start = np.array(lay.disc_start)[x_target]
    other = np.where(label == 1, x_target, 1 - x_target)
    mark_end = np.array(lay.disc_end)[other]
    canvas = np.zeros((B, lay.canvas, lay.canvas), np.uint8)
    ids = np.zeros((B, lay.canvas, lay.canvas), np.int16) if debug else None
    every = np.arange(B)
    for jj in range(T):
        if lay.kind[jj] > 0:
            use = np.flatnonzero((mark_start == jj) | (mark_end == jj))
        else:
            use = every
        if not len(use):
            continue
        rr = (oy[use, jj] + Q)[:, None, None] + rows_all[None, :, None]
        cc = (ox[use, jj] + Q)[:, None, None] + rows_all[None, None, :]
        bb = use[:, None, None]
        v = vals[use, jj]
        canvas[bb, rr, cc] = np.maximum(canvas[bb, rr, cc], v)
        if debug:
            cur = ids[bb, rr, cc]
            ids[bb, rr, cc] = np.where(v > 0, lay.contour[jj] + 1, cur)
    images = canvas[:, Q : Q + size, Q : Q + size].copy()
    if not debug:
        return images, label, None
    tips = np.zeros((B, lay.n_contours, 2, 2))
    for c in range(lay.n_contours):
        slots = np.flatnonzero((lay.contour == c) & (lay.kind == 0))
        tips[:, c, 0] = np.stack([sx[:, slots[0]], sy[:, slots[0]]], -1)
        tips[:, c, 1] = np.stack([ex[:, slots[-1]], ey[:, slots[-1]]], -1)
    markers = np.stack([tips[every, x_target, 0], tips[every, other, 1]], axis=1)  # [B, 2, (x, y)]
    info = dict(
        contour_map=ids[:, Q : Q + size, Q : Q + size].copy(),
        tips=tips,
        markers=markers,
        marker_contours=np.stack([x_target, other], axis=1),
        margin=margin,
        snake_contrast=snake_gain,
        image_restarts=image_restarts,
        segments=np.stack([sx, sy, ex, ey], axis=-1)[:, lay.kind == 0],
    )
    return images, label, info


def _generate(n, seed, params, start, stream, progress, debug, chunk_size):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    p = _resolve(params)
    lay = _Layout(p)
    size = p["window_size"]
    images = np.zeros((n, size, size), np.uint8)
    labels = np.zeros(n, np.int32)
    if chunk_size is None:
        per_image = 4 * lay.canvas**2 + lay.n_slots * (lay.patch**2 + 64)  # occ, near, vals, ...
        chunk_size = int(min(_MAX_CHUNK, max(64, _CHUNK_BYTES // per_image)))
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    parts = []
    for lo in range(0, n, chunk_size):
        hi = min(n, lo + chunk_size)
        keys = _image_keys(seed, stream, start + lo, hi - lo)
        img, lab, info = _generate_chunk(keys, p, lay, debug)
        images[lo:hi], labels[lo:hi] = img, lab
        if debug:
            parts.append(info)
        if progress is not None:
            progress(hi, n)
    if not debug:
        return images, labels, None
    if not parts:
        return images, labels, {}
    info = {k: np.concatenate([part[k] for part in parts]) for k in parts[0]}
    return images, labels, info


def generate(
    n: int,
    *,
    seed: int,
    params: Mapping[str, object] = PATHFINDER32,
    start: int = 0,
    stream: int = 0,
    progress: Callable[[int, int], None] | None = None,
    chunk_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Pathfinder images `start .. start + n - 1` of the stream (seed, stream).

    Args:
      n: number of images.
      seed, stream: select the random stream; image i depends only on (seed, stream, i,
        params), so chunks (`start`) can be generated in parallel and concatenated.
      params: e.g. `PATHFINDER32`, `PATHFINDER128` or `params_for(resolution, difficulty)`.
      progress: called as progress(done, n) after every chunk.
      chunk_size: images generated in lock-step (speed/memory only; the output is the same);
        None = as many as fit in ~64 MB of state (at most 4096).

    Returns:
      images: uint8 [n, window_size, window_size].
      labels: int32 [n] (1 = the markers are on the same contour).
    """
    images, labels, _ = _generate(n, seed, params, start, stream, progress, False, chunk_size)
    return images, labels


def generate_debug(
    n: int,
    *,
    seed: int,
    params: Mapping[str, object] = PATHFINDER32,
    start: int = 0,
    stream: int = 0,
    chunk_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """`generate` (identical images and labels) plus the geometry, for tests.

    Returns (images, labels, info) with info (C = number of contours: 2 targets, then the
    distractors, then the single paddles):
      contour_map: int16 [n, H, W], 1 + the contour drawn at each pixel (0 = background);
        targets are 1 and 2, markers count as their contour.
      tips: float [n, C, 2 (start, end), 2 (x, y)] tip coordinates in pixels.
      markers: float [n, 2, 2 (x, y)], the two marker centres.
      marker_contours: int [n, 2], the contour (0 or 1) of each marker.
      margin: int [n], the paddle margin used; snake_contrast: float [n].
      image_restarts: int [n]; segments: float [n, paddles, 4 (x0, y0, x1, y1)].
    """
    return _generate(n, seed, params, start, stream, None, True, chunk_size)


# --------------------------------------------------------------------------------------------
# Official release: metadata text files + PNGs
# --------------------------------------------------------------------------------------------


def _natural_key(name: str):
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name) if t]


def write_official(
    root: str | os.PathLike,
    pattern: str,
    images: np.ndarray,
    labels: Sequence[int],
    *,
    images_per_file: int = 1000,
) -> pathlib.Path:
    """Writes images in the layout of the official release (for tests and exports).

    `root/pattern/imgs/<f>/sample_<i>.png` (8-bit grayscale PNG) and
    `root/pattern/metadata/<f>.npy`, a text file with one line per image:
    `imgs/<f> sample_<i>.png <i> <label>`.

    Args:
      images: uint8 [n, H, W]; labels: n values in {0, 1}.

    Returns:
      `root/pattern`.
    """
    from PIL import Image

    images = np.asarray(images)
    labels = [int(v) for v in labels]
    if images.ndim != 3 or images.dtype != np.uint8 or len(images) != len(labels):
        raise ValueError(
            f"need uint8 images [n, H, W] and n labels, got {images.shape} {len(labels)}"
        )
    if any(v not in (0, 1) for v in labels):
        raise ValueError("labels must be 0 or 1")
    base = pathlib.Path(root) / pattern
    (base / "metadata").mkdir(parents=True, exist_ok=True)
    for f, lo in enumerate(range(0, len(images), images_per_file)):
        sub = f"imgs/{f}"
        (base / sub).mkdir(parents=True, exist_ok=True)
        lines = []
        for i in range(lo, min(len(images), lo + images_per_file)):
            name = f"sample_{i}.png"
            Image.fromarray(images[i]).save(base / sub / name)
            lines.append(f"{sub} {name} {i} {labels[i]}\n")
        (base / "metadata" / f"{f}.npy").write_text("".join(lines))
    return base


def _pattern_dir(root: pathlib.Path, pattern: str) -> pathlib.Path:
    if not root.is_dir():
        raise cache.DataError(
            f"{root}: Pathfinder release folder not found (expected {', '.join(PATTERNS.values())}"
            " inside, each with metadata/*.npy)"
        )
    base = root / pattern
    if not base.is_dir():
        found = sorted(q.name for q in root.iterdir() if q.is_dir())
        raise cache.DataError(
            f"{base}: Pathfinder pattern folder not found; folders in {root}: "
            f"{', '.join(found) if found else 'none'} (expected {', '.join(PATTERNS.values())})"
        )
    return base


def _metadata_files(base: pathlib.Path) -> list[pathlib.Path]:
    files = sorted((base / "metadata").glob("*.npy"), key=lambda q: _natural_key(q.name))
    if not files:
        raise cache.DataError(f"{base / 'metadata'}: no metadata/*.npy files")
    return files


def _parse_metadata(path: pathlib.Path) -> list[tuple[str, str, int, int]]:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise cache.DataError(f"{path}: metadata is not a UTF-8 text file ({e})") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline (LRA drops the last split piece likewise)
    out = []
    for lineno, line in enumerate(lines, start=1):
        fields = line.split()
        if len(fields) < 4:
            raise cache.DataError(
                f"{path}:{lineno}: expected at least 4 space-separated fields (subdir, file, "
                f"index, label), found {len(fields)}: {line[:80]!r}"
            )
        if fields[3] not in ("0", "1"):
            raise cache.DataError(f"{path}:{lineno}: label {fields[3][:20]!r} is not 0 or 1")
        out.append((fields[0], fields[1], int(fields[3]), lineno))
    return out


def read_official(
    root: str | os.PathLike,
    pattern: str,
    *,
    resolution: int = 32,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Reads all records of one difficulty of the official release.

    Returns a dict with
      images: uint8 [m, resolution, resolution] of the non-empty images, in record order;
      label: int32 [m];
      record: int64 [m], each image's index among all records (empty ones included);
      num_records: int, all records; empty: list of the zero-byte PNGs' relative paths.

    Raises:
      DataError: missing folder (lists the patterns found), no metadata, malformed metadata
        line (path:line), missing / undecodable PNG (its path), wrong image size.
    """
    from PIL import Image

    root = pathlib.Path(root)
    base = _pattern_dir(root, pattern)
    records = []
    for meta in _metadata_files(base):
        records += [
            (sub, name, label, meta, lineno) for sub, name, label, lineno in _parse_metadata(meta)
        ]
    if not records:
        raise cache.DataError(f"{base / 'metadata'}: the metadata files list no images")
    n = len(records)
    images = np.zeros((n, resolution, resolution), np.uint8)
    keep = np.zeros(n, bool)
    labels = np.zeros(n, np.int32)
    empty = []
    for i, (sub, name, label, meta, lineno) in enumerate(records):
        path = base / sub / name
        try:
            nbytes = path.stat().st_size
        except FileNotFoundError:
            raise cache.DataError(
                f"{path}: image file not found (listed in {meta}:{lineno})"
            ) from None
        if nbytes == 0:  # LRA filtered empty images out
            empty.append(f"{sub}/{name}")
            continue
        try:
            with Image.open(path) as im:
                im.load()
                gray = np.asarray(im if im.mode == "L" else im.convert("L"))
        except (OSError, ValueError, SyntaxError) as e:
            raise cache.DataError(f"{path}: cannot decode the PNG ({e})") from None
        if gray.shape != (resolution, resolution):
            raise cache.DataError(
                f"{path}: image is {gray.shape[1]}x{gray.shape[0]}, expected "
                f"{resolution}x{resolution} (listed in {meta}:{lineno})"
            )
        images[i], labels[i], keep[i] = gray, label, True
        if progress is not None and (i + 1) % 1000 == 0:
            progress(i + 1, n)
    if progress is not None:
        progress(n, n)
    idx = np.flatnonzero(keep)
    return dict(images=images[idx], label=labels[idx], record=idx, num_records=n, empty=empty)


def official_splits(data: dict) -> dict[str, dict[str, np.ndarray]]:
    """LRA's [:80%], [80%:90%], [90%:] of the records (`read_official` output), each without
    its empty images: {split: {"images": uint8 [n, H, W], "label": int32 [n]}}."""
    n = data["num_records"]
    # Percent boundaries rounded half up (TFDS rounds percent slices to the closest record).
    b1, b2 = (n * 80 + 50) // 100, (n * 90 + 50) // 100
    out = {}
    for split, (lo, hi) in zip(_SPLITS, ((0, b1), (b1, b2), (b2, n)), strict=True):
        sel = (data["record"] >= lo) & (data["record"] < hi)
        out[split] = {"images": data["images"][sel], "label": data["label"][sel]}
    return out


# --------------------------------------------------------------------------------------------
# load
# --------------------------------------------------------------------------------------------


class _Progress:
    """Prints "what: n/total, x/s" at most every few seconds (and at the end)."""

    def __init__(self, what: str, total: int):
        self.what, self.total = what, total
        self.t0 = self.last = time.perf_counter()
        self.offset = 0

    def __call__(self, done: int, n_call: int) -> None:
        now = time.perf_counter()
        self.total = self.total or n_call  # 0 = unknown until the first call
        n = self.offset + done
        if now - self.last >= _PROGRESS_SECONDS or n == self.total:
            rate = n / max(now - self.t0, 1e-9)
            print(f"{self.what}: {n}/{self.total} images, {rate:.0f} images/s", flush=True)
            self.last = now


def _check(d) -> None:
    if d.resolution not in _BASE:
        raise ValueError(f"config.data.resolution={d.resolution}; known: 32, 128 (Path-X)")
    if d.difficulty not in PATTERNS:
        raise ValueError(f"config.data.difficulty={d.difficulty!r}; known: {', '.join(PATTERNS)}")
    if d.max_length != d.resolution**2:
        raise ValueError(
            f"config.data.max_length={d.max_length}: Pathfinder sequences are the "
            f"{d.resolution}x{d.resolution} = {d.resolution**2} pixels of an image"
        )
    for split in _SPLITS:
        if int(d[f"num_{split}"]) < 0:
            raise ValueError(f"config.data.num_{split} must be >= 0")


def load(
    d: ml_collections.ConfigDict, cache_root: pathlib.Path
) -> tuple[dict[str, dict[str, np.ndarray]], dict]:
    """Pathfinder splits (see the module docstring).

    Args:
      d: `config.data` (fields of `data_config()`).
      cache_root: where built data is cached (`<data root>/lra`).

    Returns:
      ({"train", "val", "test"} -> {"tokens": uint16 [n, resolution**2], "label": int32 [n]},
       a JSON-able description).
    """
    _check(d)
    res, difficulty = int(d.resolution), str(d.difficulty)
    params = params_for(res, difficulty)
    if d.source == "generated":
        sizes = {split: int(d[f"num_{split}"]) for split in _SPLITS}
        spec = dict(
            version=_CACHE_VERSION,
            generator_version=_GENERATOR_VERSION,
            source="generated",
            seed=int(d.seed),
            sizes=sizes,
            params=_resolve(params),
        )
        total = sum(sizes.values())

        def build(tmp: pathlib.Path) -> None:
            report = _Progress(f"generating Pathfinder{res} ({difficulty})", total)
            for stream, split in enumerate(_SPLITS):
                images, labels = generate(
                    sizes[split], seed=int(d.seed), params=params, stream=stream, progress=report
                )
                report.offset += sizes[split]
                cache.save_arrays(tmp / f"{split}.npz", {"pixels": images, "label": labels})

        name = f"pathfinder{res}-{difficulty}-generated"
    elif d.source == "official":
        if not d.dir:
            raise cache.DataError(
                "config.data.source='official' needs config.data.dir: the Pathfinder release "
                f"folder (e.g. lra_release/pathfinder{res}) holding "
                f"{PATTERNS[difficulty]}/metadata/*.npy and the PNGs it lists"
            )
        root = pathlib.Path(d.dir).expanduser().resolve()
        base = _pattern_dir(root, PATTERNS[difficulty])
        metas = _metadata_files(base)
        spec = dict(
            version=_CACHE_VERSION,
            source="official",
            dir=str(root),
            pattern=PATTERNS[difficulty],
            resolution=res,
            # A changed metadata file gets a new cache (PNGs are not stat-ed: 200k files).
            metadata={q.name: [q.stat().st_size, q.stat().st_mtime_ns] for q in metas},
        )

        def build(tmp: pathlib.Path) -> None:
            data = read_official(
                root,
                PATTERNS[difficulty],
                resolution=res,
                progress=_Progress(f"reading Pathfinder{res} {PATTERNS[difficulty]}", 0),
            )
            for split, arrays in official_splits(data).items():
                cache.save_arrays(
                    tmp / f"{split}.npz", {"pixels": arrays["images"], "label": arrays["label"]}
                )
            cache.save_arrays(
                tmp / "records.npz",
                {
                    "num_records": np.array(data["num_records"]),
                    "empty": np.array(data["empty"], str),
                },
            )

        name = f"pathfinder{res}-{difficulty}-official"
    else:
        raise ValueError(
            f"config.data.source={d.source!r}; Pathfinder knows 'generated' and 'official'"
        )

    directory = cache.build_once(cache_root, name, spec, build)
    splits, sizes, positive, zero_fraction = {}, {}, {}, {}
    for split in _SPLITS:
        arrays = cache.load_arrays(directory / f"{split}.npz", keys=("pixels", "label"))
        pixels, labels = arrays["pixels"], arrays["label"].astype(np.int32)
        limit = int(d[f"num_{split}"])
        if d.source == "official" and limit:
            pixels, labels = pixels[:limit], labels[:limit]
        tokens = image.pixels_to_tokens(pixels, d.zero_is_padding)
        splits[split] = {"tokens": tokens, "label": labels}
        sizes[split] = len(labels)
        positive[split] = round(float(labels.mean()), 4) if len(labels) else 0.0
        zero_fraction[split] = round(float(np.mean(pixels == 0)), 4) if pixels.size else 0.0

    description = {
        "cache": f"lra/{directory.name}",
        "source": d.source,
        "resolution": res,
        "difficulty": difficulty,
        "contour_length": CONTOUR_LENGTHS[difficulty],
        "sizes": sizes,
        "label_1_fraction": positive,
        "image": f"{res}x{res} grayscale, read row by row",
        "tokens": (
            "pixel (LRA quirk: black pixels are pad id 0 and masked)"
            if d.zero_is_padding
            else "pixel + 1 (0 = pad, unused)"
        ),
        "vocab_size": VOCAB_SIZE,
        "zero_pixel_fraction": zero_fraction,
    }
    if d.source == "generated":
        description.update(
            dataset=f"Pathfinder{res} ({difficulty}), generated",
            generator=(
                "own re-implementation from the published description (Linsley et al. 2018, "
                "Kim et al. 2020) with LRA's parameters; not the official release"
            ),
            seed=int(d.seed),
            params={k: list(v) if isinstance(v, tuple) else v for k, v in params.items()},
        )
    else:
        records = cache.load_arrays(directory / "records.npz")
        description.update(
            dataset=f"Pathfinder{res} ({difficulty}), official LRA release",
            dir=str(pathlib.Path(d.dir).expanduser()),
            pattern=PATTERNS[difficulty],
            num_records=int(records["num_records"]),
            empty_images_skipped=len(records["empty"]),
            split="records [:80%] / [80%:90%] / [90%:] in metadata order, empty images dropped",
        )
    return splits, description
