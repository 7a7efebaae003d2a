"""The LRA Pathfinder contour generator: `generate`, `generate_debug`, and the parameter sets
PATHFINDER32/64/128/256 (LRA's Pathfinder32/64/128/256 at the hard difficulty).

`lra.data.pathfinder` builds the task's generated splits with it (its `params_for` applies a
resolution and difficulty); `lra.data.pathfinder_stats` measures its images against the
original generator's.

Generator (`generate`): our code, following the original's algorithm
--------------------------------------------------------------------
The facts below were read from the original generator, drewlinsley/pathfinder (`snakes2.py`,
`snakes.py`, `snakes2_wrapper.py`; MIT, (c) 2018 Junkyung Kim), which LRA used; the code here is
our own. Coordinates are integer pixels (row, col); a paddle is drawn from a pixel P in an
orientation phi and ends at its "head", ceil(P + paddle_length * (sin phi, cos phi)).

Rendering (as the original's paddle/marker drawing, with LRA-era `scipy.misc` semantics):
* A paddle is a straight line of width round(paddle_thickness * antialias_scale) drawn with PIL
  at `antialias_scale` times the resolution, from the centre of a (2R*aa + 1)^2 canvas (R =
  paddle_length + ceil(paddle_thickness) + margin) to the ceil-rounded scaled head, then
  resized to (2R + 1)^2 pixels with PIL's Lanczos filter as 8-bit gray, /255 and times its
  contrast. Its *guard* is the same line dilated by a disc of radius margin * aa, resized the
  same way (a fuzzy footprint, in [0, 1], used only for the non-overlap tests).
* A marker is a disc of radius marker_radius * aa around the scaled tip pixel, Lanczos-resized
  by 1/aa as 8-bit gray, /255.
* The image is the pixelwise max of all paddles and the markers, finally scaled so that its
  maximum is 255 (scipy's `bytescale`, which `scipy.misc.imsave` applied). Lanczos leaves a halo
  of faint values around every stroke, so pixel 0 is not a stroke boundary; and since the
  brightest paddle (contrast up to 2) sets the scale, a marker's centre is ~239, not 255.
* Contrast: a target paddle has paddle_contrast * snake_contrast (LRA-32: 0.75 * 2 = 1.5), a
  distractor paddle snake_contrast (2): the targets are dimmer than the distractors.

Per image: label ~ Bernoulli(1/2); a margin m from `paddle_margin_list`. Then:
1. Target pair (retried from scratch until it succeeds, as the original's loop does; this
   favours pairs that fit, i.e. compact ones; ~330 attempts per image at 32x32, most of them
   ending at seed A):
   a. Seed A: orientation = a uniform integer degree; its tail is uniform among the pixels
      where the paddle's guard (its pixels at full strength, shifted by one pixel as the
      original's dilation kernel anchor does) avoids the padding border and a band of width
      2 * seed_distance along every edge (so target A starts near the centre at 32x32). No
      such pixel: the attempt fails. The same happens for every orientation whose test kernel,
      placed at some pixel of the image, lies entirely outside it: OpenCV's dilation then
      returns the lowest float there and the original's coordinate search gives up (330 of
      the 360 orientations at 32x32, whose small kernels lie on one side of the tail). Head or
      "pivot" (the point margin behind the tail) outside the image: a new orientation, at most
      1 + max_paddle_retrial tries.
   b. Seed B: tail = round(tail A + seed_distance * (sin, cos) of a uniform integer degree),
      uniform integer-degree orientation, same bounds test and tries (no overlap test).
   c. Both snakes grow alternately, one paddle each per round, to contour_length paddles.
2. Growing a snake by one paddle (the turn rule): the next pivot is ceil(pivot + (paddle_length
   + 2m) * direction), i.e. m beyond the last head along the last direction. Candidates are the
   distinct pixels floor(pivot + (paddle_length + m) * (sin a, cos a)) for a sampled one pixel of
   arc apart around the full circle, inside the image. Candidate k, at orientation w_k from the
   pivot, has weight (1 - D(k)) * cos(min(continuity * |w_k - phi|, pi/2))^2, where phi is the
   last orientation and D the occupancy mask dilated by a disc of radius m. So `continuity` is
   a *straightness* (1.0: turns up to 90 degrees, 1.8: up to 50), not a maximum turn. All
   weights ~0: the snake fails. Else a candidate is drawn and the paddle is drawn from it back
   towards the pivot (so consecutive paddles are separated by a gap of ~2m pixels); it is kept
   if max(mask + its guard) < 1.8, else another candidate is drawn (1 + max_paddle_retrial
   tries, then the snake fails). On success the snake's *previous* paddle's guard joins the
   mask: a paddle is never tested against its own predecessor, nor (for the targets) against
   the other target's newest paddle, and target A's last paddle never joins the mask. With the
   fuzzy guards and the 1.8 threshold, contours can touch and cross.
3. Distractors: `num_distractor_snakes` snakes of `distractor_length` paddles (contrast from
   snake_contrast_list). A seed is placed like seed A but among pixels avoiding the mask > 0.3
   and the outermost pixel ring; the attempt fails if no pixel qualifies (or the orientation
   is one of the failing ones of 1a), or if < 1% of the image has mask <= 0.3. A failed snake
   is removed and retried, at most 1 + max_distractor_contour_retrial times, then skipped (so
   at 32x32 an image has 0-5 distractors, 1.2 on average, as in the original).
   `num_single_paddles` single paddles (0 in LRA, whose wrapper set use_single_paddles=False)
   would follow, 1 + max_paddle_retrial tries each.
4. Markers: a fair coin picks the target whose seed tail gets a marker; the other marker goes
   on the last head of the same target (label 1) or of the other one (label 0).

Pair retries (unbounded in the original) are capped at _MAX_PAIR_ATTEMPTS (ours), after which
the parameters are declared infeasible. Markers and paddles are stamped locally (the original
resizes the marker's whole image, which differs only within ~3 pixels of the border).

What this gives at 32x32 hard: the statistics of the original's images (issue 18; measured
by `lra.data.pathfinder_stats`, compared in `results/lra/pathfinder_stats.md`): a flood-fill solver
is at chance (markers in one 8-connected blob of pixels > 0 or > 64: ~0.5 accuracy), 12
components of pixels > 10 per image, 34% non-zero pixels of which half are halo values 1..10,
marker distances 13 px on average, targets dimmer than distractors (~118 vs ~144), marker
centres ~239.

Speed: numpy-vectorised lock-step over image slots (a finished slot takes the next image);
each image's target-pair attempts are evaluated many at a time, and the seeded ones are grown
in parallel "lanes" (the first attempt by number that succeeds wins, as in a sequential run;
later lanes are dropped). Measured on this machine (2 shared cores, 2026-11, CPU time of one
process): about 300 images/s at 32x32 (hard) for 1,000 images, 500 for 4,000; about 19 at
128x128 (Path-X: ~370 target-pair attempts and ~3,500 paddle placements per image). At 64x64
the original's rules make a pair fit rarely (thousands of attempts): a few images/s.

Randomness: image i of (seed, stream) uses its own counter-based SplitMix64 stream, with its
draws laid out by role (head, attempt j of the target pair, distractors), so an image depends
only on (seed, stream, i, params): output is identical for any chunking and schedule,
prefix-stable (`generate(10)` = `generate(20)[:10]`) and any index range can be built in
parallel (`start=`). The original used one global numpy stream; our images are a different
sample of the same process.

Parameters (frozen dicts; `lra.data.pathfinder.params_for` applies a difficulty)
--------------------------------------------------------------------------------
Values that LRA's `lra_benchmarks/data/pathfinder.py` docstrings list for Pathfinder32/64/128/256
("LRA" below) override the defaults of the original's driver `snakes2_wrapper.py` (its Args
defaults, then the settings in its body: "wrapper"). Python-2 integer division, which the
generator ran under, gives distractor_length = 14 / 3 = 4 at every size.

| key | 32 | 64 | 128 (Path-X) | 256 |
|---|---|---|---|---|
| window_size | 32 LRA | 64 LRA | 128 LRA | 256 LRA |
| padding | 1 LRA | 1 LRA | 1 LRA | 22 wrapper |
| paddle_length | 2 LRA | 5 wrapper | 5 wrapper | 5 wrapper |
| paddle_thickness | 0.5 LRA | 1 LRA | 1.5 LRA | 2 LRA |
| paddle_margin_list | [1] LRA | [1] LRA | [2, 3] LRA | [3] LRA |
| marker_radius | 1.5 LRA | 2.5 LRA | 3 LRA | 5 LRA |
| seed_distance | 7 LRA | 12 LRA | 20 LRA | 27 wrapper |
| continuity | 1.0 LRA | 1.8 LRA | 1.8 LRA | 1.8 LRA |
| antialias_scale | 2 LRA | 2 LRA | 2 LRA | 2 LRA |
| num_distractor_snakes | 20 // dl LRA | 22 // dl LRA | 35 // dl LRA | 30 // dl LRA |
| snake_contrast_list | [2] LRA | [0.8] LRA | [0.9] LRA | [1.0] LRA |
| paddle_contrast_list | [0.75] LRA | [1] wrapper | [1] wrapper | [1] wrapper |

All sizes: contour_length 14 (hard; LRA), distractor_length = contour_length // 3 (LRA),
num_single_paddles 0 (wrapper), max_paddle_retrial 2 and max_distractor_contour_retrial 4
(wrapper). The docstrings set antialias_scale twice (4, then 2): the last value counts.
"""

from __future__ import annotations

import functools
import math
import types
from collections.abc import Callable, Mapping

import numpy as np

__all__ = [
    "PATHFINDER32",
    "PATHFINDER64",
    "PATHFINDER128",
    "PATHFINDER256",
    "generate",
    "generate_debug",
]


def _frozen(**kw) -> Mapping[str, object]:
    return types.MappingProxyType(kw)


# Sources: see the table in the module docstring ("LRA" = the LRA docstring of that size,
# "wrapper" = the original's snakes2_wrapper.py).
PATHFINDER32 = _frozen(
    window_size=32,  # LRA
    padding=1,  # LRA
    paddle_length=2,  # LRA
    paddle_thickness=0.5,  # LRA
    paddle_margin_list=(1,),  # LRA (one margin drawn per image)
    marker_radius=1.5,  # LRA
    contour_length=14,  # LRA ("hard")
    distractor_length=14 // 3,  # LRA: contour_length // 3
    num_distractor_snakes=20 // (14 // 3),  # LRA: 20 // distractor_length
    num_single_paddles=0,  # wrapper: use_single_paddles = False
    antialias_scale=2,  # LRA
    seed_distance=7,  # LRA
    continuity=1.0,  # LRA
    snake_contrast_list=(2.0,),  # LRA
    paddle_contrast_list=(0.75,),  # LRA (target paddles only)
    max_paddle_retrial=2,  # wrapper (Args default)
    max_distractor_contour_retrial=4,  # wrapper (Args default)
)
PATHFINDER64 = _frozen(
    **{
        **PATHFINDER32,
        **dict(
            window_size=64,  # LRA
            paddle_length=5,  # wrapper (Args default)
            paddle_thickness=1.0,  # LRA
            marker_radius=2.5,  # LRA
            num_distractor_snakes=22 // (14 // 3),  # LRA
            seed_distance=12,  # LRA
            continuity=1.8,  # LRA
            snake_contrast_list=(0.8,),  # LRA
            paddle_contrast_list=(1.0,),  # wrapper (Args default)
        ),
    }
)
PATHFINDER128 = _frozen(
    **{
        **PATHFINDER64,
        **dict(
            window_size=128,  # LRA
            paddle_thickness=1.5,  # LRA
            paddle_margin_list=(2, 3),  # LRA
            marker_radius=3.0,  # LRA
            num_distractor_snakes=35 // (14 // 3),  # LRA
            seed_distance=20,  # LRA
            snake_contrast_list=(0.9,),  # LRA
        ),
    }
)
PATHFINDER256 = _frozen(
    **{
        **PATHFINDER64,
        **dict(
            window_size=256,  # LRA
            padding=22,  # wrapper (Args default)
            paddle_thickness=2.0,  # LRA
            paddle_margin_list=(3,),  # LRA
            marker_radius=5.0,  # LRA
            num_distractor_snakes=30 // (14 // 3),  # LRA
            seed_distance=27,  # wrapper (Args default)
            snake_contrast_list=(1.0,),  # LRA
        ),
    }
)
# Bump when the generator's output for given (seed, params) changes: cached data is keyed on it.
_GENERATOR_VERSION = 2

_MAX_PAIR_ATTEMPTS = 100_000  # ours: the original retries the target pair forever
# Images generated in lock-step: bigger chunks amortise numpy's per-call overhead; the chunk's
# state is capped at ~64 MB.
_CHUNK_BYTES = 64 << 20
_MAX_CHUNK = 2048


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------

_INT_KEYS = (
    "window_size",
    "padding",
    "paddle_length",
    "contour_length",
    "distractor_length",
    "num_distractor_snakes",
    "num_single_paddles",
    "antialias_scale",
    "seed_distance",
    "max_paddle_retrial",
    "max_distractor_contour_retrial",
)
_FLOAT_KEYS = ("paddle_thickness", "marker_radius", "continuity")
_LIST_KEYS = ("paddle_margin_list", "snake_contrast_list", "paddle_contrast_list")


def _as_int(key, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer, float, np.floating)):
        raise TypeError(f"{key} must be an integer, got {v!r}")
    if v != int(v):
        raise ValueError(f"{key} must be a whole number, got {v!r}")
    return int(v)


def _resolve(params: Mapping[str, object]) -> dict:
    keys = set(PATHFINDER32)
    unknown, missing = sorted(set(params) - keys), sorted(keys - set(params))
    if unknown or missing:
        raise TypeError(f"Pathfinder params: unknown {unknown}, missing {missing}")
    p: dict = {}
    for k in _INT_KEYS:
        p[k] = _as_int(k, params[k])
    for k in _FLOAT_KEYS:
        p[k] = float(params[k])
    for k in _LIST_KEYS:
        values = tuple(params[k])
        if not values:
            raise ValueError(f"{k} must not be empty")
        p[k] = tuple(float(v) for v in values)
    margins = p["paddle_margin_list"]
    if any(v != int(v) or v < 1 for v in margins):
        raise ValueError(f"paddle_margin_list must hold integers >= 1, got {list(margins)}")
    p["paddle_margin_list"] = tuple(int(v) for v in margins)
    if p["window_size"] < 8 or p["antialias_scale"] < 1 or p["contour_length"] < 1:
        raise ValueError("need window_size >= 8, antialias_scale >= 1, contour_length >= 1")
    if p["paddle_length"] < 1:
        raise ValueError("paddle_length must be >= 1")
    if p["distractor_length"] < 1 and p["num_distractor_snakes"] > 0:
        raise ValueError("distractor_length must be >= 1 when there are distractors")
    if min(p["num_distractor_snakes"], p["num_single_paddles"]) < 0:
        raise ValueError("numbers of distractors / single paddles must be >= 0")
    if min(p["max_paddle_retrial"], p["max_distractor_contour_retrial"]) < 0:
        raise ValueError("retrial counts must be >= 0")
    if not 0 <= p["padding"] < p["window_size"] / 2 - 1:
        raise ValueError(f"padding={p['padding']} does not fit window_size={p['window_size']}")
    if p["marker_radius"] <= 0 or p["continuity"] < 0 or p["seed_distance"] < 1:
        raise ValueError("need marker_radius > 0, continuity >= 0, seed_distance >= 1")
    if 4 * p["seed_distance"] >= p["window_size"]:
        raise ValueError(
            f"seed_distance={p['seed_distance']} leaves no room for the first target: its start "
            f"must be 2 * seed_distance from every edge of the {p['window_size']}-pixel window"
        )
    if min(p["snake_contrast_list"] + p["paddle_contrast_list"]) <= 0:
        raise ValueError("contrasts must be > 0")
    width = p["paddle_thickness"] * p["antialias_scale"]
    if width < 1 or width != round(width):
        # The original's check ("thickness does not break even"); >= 1 so lines are drawn.
        raise ValueError(
            f"paddle_thickness * antialias_scale = {width} must be a whole number >= 1 (the "
            "line width in supersampled pixels)"
        )
    return p


# --------------------------------------------------------------------------------------------
# Stamps: rendered paddles, guards and marker discs (per parameter set and margin)
# --------------------------------------------------------------------------------------------


def _lanczos_gray(blown: np.ndarray, size: int) -> np.ndarray:
    """8-bit gray image resized to size x size with PIL's Lanczos filter (uint8)."""
    from PIL import Image

    im = Image.fromarray(np.ascontiguousarray(blown, np.uint8))
    return np.asarray(im.resize((size, size), Image.Resampling.LANCZOS))


def _disc(radius: float) -> np.ndarray:
    r = int(math.floor(radius))
    yy, xx = np.mgrid[-r : r + 1, -r : r + 1]
    return yy * yy + xx * xx <= radius * radius


def _dilate(img: np.ndarray, struct: np.ndarray) -> np.ndarray:
    """Max of img over a centred structuring element (out-of-image cells ignored)."""
    h, w = img.shape
    cy, cx = struct.shape[0] // 2, struct.shape[1] // 2
    out = np.zeros_like(img)
    for dy, dx in zip(*np.nonzero(struct), strict=True):
        oy, ox = dy - cy, dx - cx
        ys, xs = slice(max(0, -oy), min(h, h - oy)), slice(max(0, -ox), min(w, w - ox))
        yt, xt = slice(max(0, oy), min(h, h + oy)), slice(max(0, ox), min(w, w + ox))
        np.maximum(out[ys, xs], img[yt, xt], out=out[ys, xs])
    return out


def _translate(y, x, phi, dist):
    """ceil(point + dist * (sin phi, cos phi)), elementwise (float64 arithmetic)."""
    return np.ceil(y + dist * np.sin(phi)), np.ceil(x + dist * np.cos(phi))


def _flip(phi):
    """The opposite orientation, kept in (-pi, pi]."""
    return np.where(phi < 0, phi + np.pi, phi - np.pi)


class _Setup:
    """Everything that depends only on (params, margin): stamps and lookup tables."""

    def __init__(self, p: dict, margin: int):
        from PIL import Image, ImageDraw

        L, aa, m = p["paddle_length"], p["antialias_scale"], margin
        H = p["window_size"]
        self.H, self.L, self.m = H, L, m
        self.R = R = L + int(math.ceil(p["paddle_thickness"])) + m  # stamp radius (pixels)
        self.S = S = 2 * R + 1
        width = int(round(p["paddle_thickness"] * aa))
        centre = R * aa
        disc_blown = _disc(m * aa)

        # Orientations used: seeds take integer degrees; a grown paddle is drawn from a
        # candidate pixel back towards the pivot (the flipped candidate orientation).
        step = L + m
        arc = 360.0 / (2 * step * np.pi)  # degrees per pixel of arc
        a = np.arange(0, 360, arc) * np.pi / 180
        off = np.floor(np.stack([step * np.sin(a), step * np.cos(a)], 1)).astype(np.int64)
        self.cand_off = np.unique(off, axis=0)  # sorted by (row, col), like the original
        self.cand_omega = np.arctan2(self.cand_off[:, 0], self.cand_off[:, 1]).astype(np.float64)
        seed_phi = np.arange(-180, 180) * np.pi / 180  # as the original computes it
        phis = np.concatenate([seed_phi, _flip(self.cand_omega)])
        # Orientations of a snake's last paddle: id d < 360 = seed degree d - 180, id 360 + k =
        # candidate k. Per id: the step to the next pivot and the turn weights of candidates.
        self.phi_table = np.concatenate([seed_phi, self.cand_omega])
        self.step = (L + 2 * m) * np.stack([np.sin(self.phi_table), np.cos(self.phi_table)], 1)
        turn = np.abs(self.cand_omega[None, :] - self.phi_table[:, None])
        turn = np.minimum(turn, 2 * np.pi - turn)
        turn = np.minimum(turn * p["continuity"], np.pi / 2)
        turn_w = np.maximum(np.cos(turn), 0) ** 2  # [360 + K, K]
        # Only candidates of non-zero weight can be drawn: per orientation id, their indices
        # (in candidate order, padded with weight-0 repeats) and weights.
        live = [np.flatnonzero(w > 0) for w in turn_w]
        k_live = max(1, max(len(v) for v in live))
        self.cand_idx = np.zeros((len(turn_w), k_live), np.int64)
        self.cand_w = np.zeros((len(turn_w), k_live))
        for i, v in enumerate(live):
            if len(v):
                self.cand_idx[i] = np.resize(v, k_live)
                self.cand_w[i, : len(v)] = turn_w[i, v]
        hy, hx = _translate(float(centre), float(centre), phis, L * aa)
        heads = np.stack([hy, hx], 1).astype(np.int64) - centre  # blown head offsets
        keys, inverse = np.unique(heads, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        self.seed_stamp = inverse[:360]
        self.cand_stamp = inverse[360:]

        ink, guard = [], []
        for oy, ox in keys:
            im = Image.new("L", (2 * centre + 1, 2 * centre + 1), 0)
            ImageDraw.Draw(im).line(
                [(centre, centre), (centre + int(ox), centre + int(oy))], fill=255, width=width
            )
            line = np.asarray(im)
            ink.append(_lanczos_gray(line, S))
            guard.append(_lanczos_gray(_dilate(line, disc_blown), S))
        self.ink = np.stack(ink).astype(np.float32) / 255  # [stamps, S, S]
        # Guards and occupancy masks are kept as 8-bit levels (value = level / 255, as the
        # original's resized masks are): the mask is a max of guards and the border.
        self.guard = np.stack(guard)  # uint8 [stamps, S, S]
        self.guard_flat = self.guard.reshape(len(keys), -1)
        # The original's tests on float32 levels: a + b < 1.8 (a new paddle fits), a > 0.3
        # (occupied for seeds). fit_max[a] = the largest guard level b that fits on mask a.
        level = (np.arange(256, dtype=np.float32) / np.float32(255)).astype(np.float64)
        fits = level[:, None] + level[None, :] < 1.8
        self.fit_max = (fits.sum(1) - 1).astype(np.int16)  # [256], -1: nothing fits
        self.level = level
        self.occupied_level = int(np.flatnonzero(level > 0.3)[0])  # levels >= this: > 0.3

        # Canvas: the image with a border of G pixels (kept at 0) so windows never wrap.
        self.G = G = R + 2
        self.W = Wp = H + 2 * G
        self.area = Wp * Wp
        win = np.arange(S) - R
        self.win_off = (win[:, None] * Wp + win[None, :]).reshape(-1)
        inside = np.zeros((Wp, Wp), np.uint8)
        inside[G : G + H, G : G + H] = 1
        self.inside_flat = inside.reshape(-1)
        border = np.zeros((H, H), np.float32)
        pad = p["padding"]
        if pad:
            border[:pad, :] = border[-pad:, :] = border[:, :pad] = border[:, -pad:] = 1
        self.border = np.zeros((Wp, Wp), np.uint8)
        self.border[G : G + H, G : G + H] = border * 255
        ring = np.zeros((H, H), bool)
        ring[0, :] = ring[-1, :] = ring[:, 0] = ring[:, -1] = True
        self.ring = np.zeros((Wp, Wp), bool)
        self.ring[G : G + H, G : G + H] = ring
        dy, dx = np.nonzero(_disc(m))
        self.disc_off = (dy - m) * Wp + (dx - m)

        # A seed's test kernel: the guard's full-strength pixels, as placed by the original (a
        # (2(L+m)+1)^2 grid with the tail at (L+m+1, L+m+1), applied with its centre as anchor:
        # offsets from the tail + 1, clipped to the grid).
        self.seed_kernel = []
        for d in range(360):
            gy, gx = np.nonzero(self.guard[self.seed_stamp[d]] == 255)
            gy, gx = gy - R, gx - R
            keep = (gy >= -(step + 1)) & (gy <= step - 1) & (gx >= -(step + 1)) & (gx <= step - 1)
            self.seed_kernel.append(np.stack([gy[keep] + 1, gx[keep] + 1], 1))
        # OpenCV's dilation gives the lowest float where the kernel misses the image entirely,
        # and the original then finds no admissible pixel at all: such an orientation always
        # fails (e.g. a kernel whose cells all lie below and right of the tail). With kernels
        # smaller than half the image, if any pixel is such a place, an image corner is.
        corners = np.array([[0, 0], [0, H - 1], [H - 1, 0], [H - 1, H - 1]])
        self.seed_dead = np.zeros(360, bool)
        for d, k in enumerate(self.seed_kernel):
            y, x = corners[:, None, 0] + k[None, :, 0], corners[:, None, 1] + k[None, :, 1]
            out = (y < 0) | (y >= H) | (x < 0) | (x >= H)
            self.seed_dead[d] = bool(out.all(1).any())
        n_k = max(max(len(k) for k in self.seed_kernel), 1)
        kern = np.zeros((360, n_k), np.int64)
        for d, k in enumerate(self.seed_kernel):
            flat = k[:, 0] * Wp + k[:, 1]
            kern[d] = np.resize(flat, n_k) if len(flat) else 0  # repeats are harmless
        self.kernel_flat = kern

        # Seed A: the lined mask is fixed: the border and bands of 2 * seed_distance at every
        # edge. Where the kernels are narrower than half the band, a tail is admissible iff its
        # kernel lies inside the free centre square (a rectangle of tails per orientation).
        band = 2 * p["seed_distance"]
        pix = (np.arange(H)[:, None] + G) * Wp + np.arange(H)[None, :] + G
        reach = max((int(np.abs(k).max()) for k in self.seed_kernel if len(k)), default=0)
        avail = []
        if 2 * reach < band and p["padding"] <= band:
            for d, k in enumerate(self.seed_kernel):
                if self.seed_dead[d]:
                    avail.append(pix[:0, 0])
                    continue
                y0, y1 = band - k[:, 0].min(), H - band - 1 - k[:, 0].max()
                x0, x1 = band - k[:, 1].min(), H - band - 1 - k[:, 1].max()
                yy, xx = np.mgrid[y0 : y1 + 1, x0 : x1 + 1]
                avail.append((yy * H + xx).reshape(-1))
        else:
            lined = border.copy()
            lined[:band, :] = lined[H - band :, :] = lined[:, :band] = lined[:, H - band :] = 1
            canvas = np.zeros((Wp, Wp), bool)
            canvas[G : G + H, G : G + H] = lined > 0.3
            for d in range(360):
                hit = canvas.reshape(-1)[pix.reshape(-1)[:, None] + kern[d][None, :]].any(1)
                avail.append(np.flatnonzero(~hit) if not self.seed_dead[d] else pix[:0, 0])
        self.seed_a_count = np.array([len(v) for v in avail], np.int64)
        self.seed_a = np.zeros((360, max(1, self.seed_a_count.max())), np.int64)
        for d, v in enumerate(avail):
            self.seed_a[d, : len(v)] = v
        self.pix_canvas = pix.reshape(-1)  # image pixel (flat) -> canvas index

        # Marker disc: radius marker_radius * aa around the tip's supersampled pixel.
        r = p["marker_radius"]
        Q = int(math.ceil(r)) + 4
        n = (2 * Q + 1) * aa
        yy, xx = np.mgrid[0:n, 0:n] - Q * aa
        disc = ((yy * yy + xx * xx) <= (r * aa) ** 2).astype(np.uint8) * 255
        self.Q = Q
        self.marker = _lanczos_gray(disc, 2 * Q + 1).astype(np.float32) / 255


@functools.lru_cache(maxsize=16)
def _setup_cached(items: tuple, margin: int) -> _Setup:
    return _Setup(dict(items), margin)


def _setup(p: dict, margin: int) -> _Setup:
    return _setup_cached(tuple(sorted(p.items())), margin)


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


def _uniforms(keys: np.ndarray, counter: np.ndarray, n: int) -> np.ndarray:
    """float64 [len(keys), n] in [0, 1): draws counter .. counter + n - 1 of each stream."""
    index = counter[:, None] + np.arange(n, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        z = keys[:, None] + (index + np.uint64(1)) * _GOLDEN
        return (_mix(z) >> np.uint64(11)).astype(np.float64) * (1.0 / 2**53)


def _choice(u: np.ndarray, n: int) -> np.ndarray:
    return np.minimum((u * n).astype(np.int64), n - 1)


# --------------------------------------------------------------------------------------------
# Generation: image slots and target-pair "lanes", in lock-step
# --------------------------------------------------------------------------------------------

# Random draws of image i (its own stream) are laid out by role, so that any schedule gives the
# same image: the head (label, margin, marker coin); target-pair attempt j at
# _HEAD_DRAWS + j * stride (its seeds, then each growth step); the distractors from
# _DISTRACTOR_DRAWS on. With T = 1 + max_paddle_retrial tries: seeds 4 + 4T (2 snake contrasts,
# 2 seed paddle contrasts, per try an orientation and a position for A and for B), a growth
# step 1 + T (a paddle contrast, a candidate per try), a distractor seed 1 + T (2 + _REJECT) (a
# contrast; per try an orientation, _REJECT uniform candidate pixels, a draw for the fallback).
_HEAD_DRAWS = 8
_REJECT = 8
_DISTRACTOR_DRAWS = 1 << 48
# Target-pair attempts of one image grown at once (speculatively): 2 + (its failed lanes) / 2,
# at most _LANES_PER_IMAGE, so images whose attempts keep failing get more lanes.
_LANES_PER_IMAGE = 32
_MAX_K = 32  # seed attempts of one image evaluated per step

# Image phases; lane phases.
_SEARCH, _SEED_D, _GROW_D, _DONE, _IDLE = range(5)
_FREE, _GROWING, _WON = range(3)
_NEVER = np.iinfo(np.int64).max


class _State:
    """Slots that grow contours: per slot an occupancy mask (canvas), the snakes being grown
    (pivot, orientation, pending guard) and the paddles drawn so far."""

    def __init__(self, capacity: int, snakes: int, paddles: int, p: dict, st: _Setup):
        self.p, self.st, self.B = p, st, capacity
        B = capacity
        self.tries = T = 1 + p["max_paddle_retrial"]
        self.pair_draws, self.grow_draws = 4 + 4 * T, 1 + T
        self.seed_draws = 1 + T * (2 + _REJECT)
        self.keys = np.zeros(B, np.uint64)
        self.ctr = np.zeros(B, np.uint64)
        self.mask = np.zeros((B, st.area), np.uint8)  # levels / 255
        self.mflat = self.mask.reshape(-1)  # a view
        self.piv = np.zeros((B, snakes, 2), np.int64)
        self.phi_id = np.zeros((B, snakes), np.int64)  # orientation ids (_Setup.phi_table)
        self.pend = np.zeros((B, snakes), np.int64)  # pending guard: stamp, at pend_at
        self.pend_at = np.zeros((B, snakes), np.int64)  # canvas index within the slot
        self.tail = np.zeros((B, 2, 2), np.int64)  # targets' start tips (row, col)
        self.head = np.zeros((B, 2, 2), np.int64)  # targets' end tips
        # Paddles drawn: stamp, canvas index, contrast, contour (0, 1 targets; 2 + d).
        self.pad_stamp = np.zeros((B, paddles), np.int64)
        self.pad_at = np.zeros((B, paddles), np.int64)
        self.pad_gain = np.zeros((B, paddles), np.float32)
        self.pad_contour = np.zeros((B, paddles), np.int64)
        self.count = np.zeros(B, np.int64)

    def _draws(self, b, n):
        u = _uniforms(self.keys[b], self.ctr[b], n)
        self.ctr[b] += np.uint64(n)
        return u

    def _at(self, rows, cols):
        G, W = self.st.G, self.st.W
        return (rows + G) * W + (cols + G)

    def _merge(self, b, stamp, at):
        """mask = max(mask, guard) for the guards `stamp` at canvas indices `at` (images b)."""
        st = self.st
        idx = at[:, None] + st.win_off[None, :]
        g = st.guard_flat[stamp] * st.inside_flat[idx]
        idx += (b * st.area)[:, None]
        self.mflat[idx] = np.maximum(self.mflat[idx], g)

    def _add_paddle(self, b, stamp, at, gain, contour):
        j = self.count[b]
        self.pad_stamp[b, j], self.pad_at[b, j] = stamp, at
        self.pad_gain[b, j], self.pad_contour[b, j] = gain, contour
        self.count[b] += 1

    def _bounds(self, y, x):
        H = self.st.H
        return (y >= 0) & (y < H) & (x >= 0) & (x < H)

    def _seed_ends(self, ty, tx, deg):
        """Head and pivot of a seed paddle from tail (ty, tx) in orientation id `deg` (degree
        + 180), and whether both are inside the image (the original's seed test)."""
        L, m = self.st.L, self.st.m
        phi = self.st.phi_table[deg]
        hy, hx = _translate(ty, tx, phi, L)
        rev = np.where(phi + np.pi < np.pi, phi + np.pi, phi - np.pi)
        py, px = _translate(hy, hx, rev, L + m)
        ok = self._bounds(hy, hx) & self._bounds(py, px)
        return np.stack([py, px], -1).astype(np.int64), ok

    def _seeds(self, u):
        """One target-pair seeding attempt per row of draws u [r, pair_draws]: dict of the
        seeds, with `good` [r] where both were placed."""
        p, st = self.p, self.st
        r = len(u)
        sc, pc = np.array(p["snake_contrast_list"]), np.array(p["paddle_contrast_list"])
        # Two snake contrasts drawn without replacement from the list taken twice.
        i1 = _choice(u[:, 0], 2 * len(sc))
        i2 = _choice(u[:, 1], 2 * len(sc) - 1)
        i2 = i2 + (i2 >= i1)
        mu = np.stack([sc[i1 % len(sc)], sc[i2 % len(sc)]], 1)
        c0 = pc[_choice(u[:, 2], len(pc))]
        c1 = pc[_choice(u[:, 3], len(pc))]
        tries, H = self.tries, st.H
        # Target A: up to `tries` orientations; no admissible pixel ends the attempt.
        state = np.zeros(r, np.int8)  # 0 trying, 1 placed, 2 failed
        deg_a = np.zeros(r, np.int64)
        ta = np.zeros((r, 2), np.int64)
        piv_a = np.zeros((r, 2), np.int64)
        for t in range(tries):
            live = state == 0
            deg = _choice(u[:, 4 + 2 * t], 360)
            cnt = st.seed_a_count[deg]
            state[live & (cnt == 0)] = 2
            live &= cnt > 0
            pix = st.seed_a[deg, _choice(u[:, 5 + 2 * t], np.maximum(cnt, 1))]
            y, x = np.divmod(pix, H)
            piv, ok = self._seed_ends(y.astype(np.float64), x.astype(np.float64), deg)
            put = live & ok
            deg_a[put], piv_a[put] = deg[put], piv[put]
            ta[put, 0], ta[put, 1] = y[put], x[put]
            state[put] = 1
        good = state == 1
        # Target B: seed_distance from A's tail in a uniform integer-degree direction.
        state[:] = np.where(good, 0, 2)
        deg_b = np.zeros(r, np.int64)
        tb = np.zeros((r, 2), np.int64)
        piv_b = np.zeros((r, 2), np.int64)
        sd = p["seed_distance"]
        for t in range(tries):
            live = state == 0
            if not live.any():
                break
            deg = _choice(u[:, 4 + 2 * tries + 2 * t], 360)
            ang = _choice(u[:, 5 + 2 * tries + 2 * t], 360) * np.pi / 180
            y = np.round(ta[:, 0] + sd * np.sin(ang))
            x = np.round(ta[:, 1] + sd * np.cos(ang))
            piv, ok = self._seed_ends(y, x, deg)
            put = live & ok
            deg_b[put], piv_b[put] = deg[put], piv[put]
            tb[put, 0], tb[put, 1] = y[put], x[put]
            state[put] = 1
        good &= state == 1
        return dict(
            good=good,
            mu=mu,
            c0=c0,
            c1=c1,
            deg_a=deg_a,
            deg_b=deg_b,
            ta=ta,
            tb=tb,
            piv_a=piv_a,
            piv_b=piv_b,
        )

    def _grow(self, b, snake, u):
        """One paddle for snake `snake` [n] of images b: (success, head [n, 2], orientation,
        new pivot [n, 2], stamp, canvas index of the head). u: [n, tries] candidate draws."""
        st = self.st
        n, H = len(b), st.H
        piv, phi_id = self.piv[b, snake], self.phi_id[b, snake]
        step = st.step[phi_id]
        npiv = np.ceil(piv + step).astype(np.int64)
        cidx = st.cand_idx[phi_id]  # [n, K] candidates of non-zero weight
        cand = npiv[:, None, :] + st.cand_off[cidx]  # [n, K, 2]
        cy, cx = cand[..., 0], cand[..., 1]
        inb = (cy >= 0) & (cy < H) & (cx >= 0) & (cx < H)
        lim = st.G - st.R  # OOB candidates (never drawn) are clipped so windows stay inside
        at = self._at(np.clip(cy, -lim, H - 1 + lim), np.clip(cx, -lim, H - 1 + lim))  # [n, K]
        base = (b * st.area)[:, None]
        flat = base + at
        occupied = self.mflat[flat]  # the mask dilated by a disc of radius m, at candidates
        for o in st.disc_off:
            np.maximum(occupied, self.mflat[flat + o], out=occupied)
        pmf = (1 - st.level[occupied]) * st.cand_w[phi_id] * inb
        total = pmf.sum(1)
        alive = total >= 1e-4
        cmf = np.cumsum(pmf / np.where(alive, total, 1)[:, None], axis=1)
        rr = np.arange(n)
        # Tries in order, a later one only where the earlier ones failed. The candidate drawn
        # is the first whose cumulative probability exceeds the draw.
        k = np.zeros(n, np.int64)
        ok = np.zeros(n, bool)
        todo = np.flatnonzero(alive)
        for t in range(u.shape[1]):
            if not len(todo):
                break
            kt = np.minimum((cmf[todo] <= u[todo, t : t + 1]).sum(1), cmf.shape[1] - 1)
            stamp = st.cand_stamp[cidx[todo, kt]]
            win = (base[todo, 0] + at[todo, kt])[:, None] + st.win_off  # [l, S*S]
            fits = (st.guard_flat[stamp] <= st.fit_max[self.mflat[win]]).all(-1)
            fits &= pmf[todo, kt] > 0
            k[todo[fits]] = kt[fits]
            ok[todo[fits]] = True
            todo = todo[~fits]
        kk = cidx[rr, k]
        return ok, cand[rr, k], 360 + kk, npiv, st.cand_stamp[kk], at[rr, k]


class _Lanes(_State):
    """Target-pair attempts: lane = (image slot, attempt number), grown in lock-step."""

    def __init__(self, capacity: int, p: dict, st: _Setup):
        super().__init__(capacity, 2, 2 * p["contour_length"], p, st)
        B = capacity
        self.phase = np.full(B, _FREE, np.int8)
        self.owner = np.zeros(B, np.int64)
        self.attempt = np.zeros(B, np.int64)
        self.mu = np.zeros((B, 2))  # the targets' snake contrasts
        self.seg_contrast = np.zeros(B)
        self.k = np.zeros(B, np.int64)  # paddles of each target so far
        self.s = np.zeros(B, np.int64)  # target growing next

    def spawn(self, g, owner, attempt, keys, ctr, v):
        """Lanes g start attempts whose seeds v (rows of `_seeds`) were placed."""
        st = self.st
        self.phase[g], self.owner[g], self.attempt[g] = _GROWING, owner, attempt
        self.keys[g], self.ctr[g] = keys, ctr
        deg_a, deg_b, ta, tb, mu = v["deg_a"], v["deg_b"], v["ta"], v["tb"], v["mu"]
        self.mask[g] = st.border.reshape(-1)
        self.count[g] = 0
        at_a, at_b = self._at(ta[:, 0], ta[:, 1]), self._at(tb[:, 0], tb[:, 1])
        sa, sb = st.seed_stamp[deg_a], st.seed_stamp[deg_b]
        self.mu[g] = mu
        self._add_paddle(g, sa, at_a, v["c0"] * mu[:, 0], 0)
        self._add_paddle(g, sb, at_b, v["c1"] * mu[:, 1], 1)
        self.pend[g, 0], self.pend_at[g, 0] = sa, at_a
        self.pend[g, 1], self.pend_at[g, 1] = sb, at_b
        self.piv[g, 0], self.piv[g, 1] = v["piv_a"], v["piv_b"]
        self.phi_id[g, 0], self.phi_id[g, 1] = deg_a, deg_b
        self.tail[g, 0], self.tail[g, 1] = ta, tb
        self.head[g, 0], self.head[g, 1] = ta, tb
        self.k[g], self.s[g] = 1, 0
        self._finish(g[self.k[g] >= self.p["contour_length"]])

    def _finish(self, g):
        # As the original: only target B's newest guard joins the mask (A's never does).
        self._merge(g, self.pend[g, 1], self.pend_at[g, 1])
        self.phase[g] = _WON

    def grow(self, b):
        """One paddle for each lane b (the targets alternate); failed lanes become _FREE,
        completed ones _WON. Returns (failed lanes, completed lanes)."""
        p = self.p
        u = self._draws(b, self.grow_draws)
        s = self.s[b]
        pc = np.array(p["paddle_contrast_list"])
        first = s == 0  # one paddle contrast per round, shared by both targets
        self.seg_contrast[b[first]] = pc[_choice(u[first, 0], len(pc))]
        ok, head, omega, npiv, stamp, at = self._grow(b, s, u[:, 1:])
        self.phase[b[~ok]] = _FREE
        g, s = b[ok], s[ok]
        if len(g):
            stamp, at = stamp[ok], at[ok]
            self._add_paddle(g, stamp, at, self.seg_contrast[g] * self.mu[g, s], s)
            self._merge(g, self.pend[g, s], self.pend_at[g, s])
            self.pend[g, s], self.pend_at[g, s] = stamp, at
            self.piv[g, s], self.phi_id[g, s], self.head[g, s] = npiv[ok], omega[ok], head[ok]
            wrap = s == 1
            self.s[g] = 1 - s
            self.k[g[wrap]] += 1
            done = g[wrap & (self.k[g] >= p["contour_length"])]
            self._finish(done)
        else:
            done = g
        return b[~ok], done


class _Images(_State):
    """Image slots: the head draws, the search for the target pair, then the distractors."""

    def __init__(self, capacity: int, p: dict, st: _Setup, debug: bool):
        nd, ns = p["num_distractor_snakes"], p["num_single_paddles"]
        P = 2 * p["contour_length"] + nd * p["distractor_length"] + ns
        super().__init__(capacity, 1, P, p, st)
        B = capacity
        self.debug = debug
        self.label = np.zeros(B, np.int32)
        self.coin = np.zeros(B, np.int64)
        self.phase = np.full(B, _IDLE, np.int8)
        self.a_next = np.zeros(B, np.int64)  # next target-pair attempt to try
        self.best = np.zeros(B, np.int64)  # smallest attempt known to succeed
        self.active = np.zeros(B, np.int64)  # lanes growing for the image
        self.failed = np.zeros(B, np.int64)  # lanes of the image that failed
        self.attempts = np.zeros(B, np.int64)
        self.snap = np.zeros((B, st.area), np.uint8)
        self.count_snap = np.zeros(B, np.int64)
        # Distractors (snakes, then single paddles).
        self.d_len = np.array([p["distractor_length"]] * nd + [1] * ns, np.int64)
        retry = p["max_distractor_contour_retrial"], p["max_paddle_retrial"]
        self.d_retry = np.array([retry[0]] * nd + [retry[1]] * ns, np.int64)
        self.n_d = nd + ns
        self.d = np.zeros(B, np.int64)
        self.d_try = np.zeros(B, np.int64)
        self.d_seg = np.zeros(B, np.int64)
        self.placed = np.zeros(B, np.int64)

    def start(self, slots, keys, label, coin):
        """Slots `slots` begin the images with these keys (and head draws)."""
        self.keys[slots], self.label[slots], self.coin[slots] = keys, label, coin
        self.phase[slots] = _SEARCH
        self.a_next[slots] = 0
        self.best[slots] = _NEVER
        self.active[slots] = 0
        self.failed[slots] = 0
        self.placed[slots] = 0
        self.count[slots] = 0

    def targets_placed(self, g, lanes, won):
        """Images g take the targets of their winning lanes `won`."""
        n = 2 * self.p["contour_length"]
        self.mask[g] = lanes.mask[won]
        self.count[g] = lanes.count[won]
        for name in ("pad_stamp", "pad_at", "pad_gain", "pad_contour"):
            getattr(self, name)[g, :n] = getattr(lanes, name)[won]
        self.tail[g], self.head[g] = lanes.tail[won], lanes.head[won]
        self.attempts[g] = lanes.attempt[won] + 1
        self.ctr[g] = _DISTRACTOR_DRAWS
        self.d[g], self.d_try[g] = 0, 0
        self.phase[g] = _SEED_D if self.n_d else _DONE

    def _next_distractor(self, g):
        self.d[g] += 1
        self.d_try[g] = 0
        self.phase[g] = np.where(self.d[g] >= self.n_d, _DONE, _SEED_D)

    def _distractor_failed(self, g):
        self.mask[g] = self.snap[g]
        self.count[g] = self.count_snap[g]
        self.d_try[g] += 1
        out = self.d_try[g] > self.d_retry[self.d[g]]
        self._next_distractor(g[out])
        self.phase[g[~out]] = _SEED_D

    def seed_distractor(self, b):
        p, st = self.p, self.st
        H = st.H
        u = self._draws(b, self.seed_draws)
        self.snap[b] = self.mask[b]
        self.count_snap[b] = self.count[b]
        n = len(b)
        img = self.mask[b][:, st.pix_canvas]  # [n, H*H]
        room = (img < st.occupied_level).mean(1) >= 0.01
        blocked = (self.mask[b] >= st.occupied_level) | st.ring.reshape(1, -1)  # lined mask
        state = np.where(room, 0, 2).astype(np.int8)
        tail = np.zeros(n, np.int64)
        deg_ok = np.zeros(n, np.int64)
        piv_ok = np.zeros((n, 2), np.int64)
        for t in range(self.tries):
            live = np.flatnonzero(state == 0)
            if not len(live):
                break
            base = 1 + (2 + _REJECT) * t
            deg = _choice(u[live, base], 360)
            state[live[st.seed_dead[deg]]] = 2
            kern = st.kernel_flat[deg]  # [l, n_k]
            # Uniform candidates; the first admissible one is uniform among admissible pixels.
            cpix = _choice(u[live, base + 1 : base + 1 + _REJECT], H * H)  # [l, R]
            cat = st.pix_canvas[cpix]
            free = ~blocked[live[:, None, None], cat[..., None] + kern[:, None, :]].any(-1)
            has = free.any(1)
            pix = cpix[np.arange(len(live)), np.argmax(free, 1)]
            need = np.flatnonzero(~has & (state[live] == 0))
            if len(need):
                # Exact fallback: the full map of admissible pixels.
                li = live[need]
                at = st.pix_canvas[None, :, None] + kern[need][:, None, :]  # [f, H*H, n_k]
                ok_map = ~blocked[li[:, None, None], at].any(-1)
                cnt = ok_map.sum(1)
                j = _choice(u[li, base + 1 + _REJECT], np.maximum(cnt, 1))
                order = np.argsort(~ok_map, axis=1, kind="stable")
                pix[need] = order[np.arange(len(need)), j]
                dead = li[cnt == 0]
                state[dead] = 2
            sel = state[live] == 0
            alive = live[sel]
            y, x = np.divmod(pix[sel], H)
            piv, ok = self._seed_ends(y.astype(np.float64), x.astype(np.float64), deg[sel])
            put = alive[ok]
            tail[put] = pix[sel][ok]
            deg_ok[put] = deg[sel][ok]
            piv_ok[put] = piv[ok]
            state[put] = 1
        failed = b[state != 1]
        self._distractor_failed(failed)
        good = state == 1
        g = b[good]
        if not len(g):
            return
        sc = np.array(p["snake_contrast_list"])
        gain = sc[_choice(u[good, 0], len(sc))]
        y, x = np.divmod(tail[good], H)
        at = self._at(y, x)
        stamp = st.seed_stamp[deg_ok[good]]
        self._add_paddle(g, stamp, at, gain, 2 + self.d[g])
        self.pend[g, 0], self.pend_at[g, 0] = stamp, at
        self.piv[g, 0] = piv_ok[good]
        self.phi_id[g, 0] = deg_ok[good]
        self.d_seg[g] = 1
        whole = self.d_len[self.d[g]] <= 1
        self._distractor_done(g[whole])
        self.phase[g[~whole]] = _GROW_D

    def _distractor_done(self, g):
        self._merge(g, self.pend[g, 0], self.pend_at[g, 0])
        self.placed[g] += 1
        self._next_distractor(g)

    def grow_distractor(self, b):
        p = self.p
        u = self._draws(b, self.grow_draws)
        ok, head, omega, npiv, stamp, at = self._grow(b, np.zeros(len(b), np.int64), u[:, 1:])
        self._distractor_failed(b[~ok])
        g = b[ok]
        if not len(g):
            return
        sc = np.array(p["snake_contrast_list"])
        gain = sc[_choice(u[ok, 0], len(sc))]
        stamp, at = stamp[ok], at[ok]
        self._add_paddle(g, stamp, at, gain, 2 + self.d[g])
        self._merge(g, self.pend[g, 0], self.pend_at[g, 0])
        self.pend[g, 0], self.pend_at[g, 0] = stamp, at
        self.piv[g, 0], self.phi_id[g, 0] = npiv[ok], omega[ok]
        self.d_seg[g] += 1
        whole = self.d_seg[g] >= self.d_len[self.d[g]]
        self._distractor_done(g[whole])

    def render(self, slots):
        """Images uint8 [len(slots), H, H] of finished slots (+ debug info)."""
        st, H = self.st, self.st.H
        B = len(slots)
        n_c = 2 + self.n_d
        ink = np.zeros((B, st.area), np.float64)
        layers = np.zeros((B, n_c, st.area), np.float32) if self.debug else None
        ink_stamps = st.ink.reshape(len(st.ink), -1)
        count = self.count[slots]
        for j in range(self.pad_stamp.shape[1]):
            b = np.flatnonzero(count > j)
            if not len(b):
                break
            sb = slots[b]
            idx = self.pad_at[sb, j][:, None] + st.win_off[None, :]
            v = ink_stamps[self.pad_stamp[sb, j]] * self.pad_gain[sb, j][:, None]
            rows = b[:, None]
            ink[rows, idx] = np.maximum(ink[rows, idx], v)
            if self.debug:
                c = self.pad_contour[sb, j][:, None]
                layers[rows, c, idx] = np.maximum(layers[rows, c, idx], v)
        G, W = st.G, st.W
        ink = ink.reshape(B, W, W)[:, G : G + H, G : G + H]
        # Markers: the start tip of target `coin`, the end tip of the same target (label 1) or
        # of the other one (label 0).
        rr = np.arange(B)
        coin = self.coin[slots]
        other = np.where(self.label[slots] == 1, coin, 1 - coin)
        tail, head = self.tail[slots], self.head[slots]
        markers = np.stack([tail[rr, coin], head[rr, other]], 1)  # [B, 2, (row, col)]
        Q = st.Q
        canvas = np.zeros((B, H + 2 * Q, H + 2 * Q))
        canvas[:, Q : Q + H, Q : Q + H] = ink
        win = np.arange(2 * Q + 1)
        for k in range(2):
            ry = markers[:, k, 0][:, None, None] + win[None, :, None]
            rx = markers[:, k, 1][:, None, None] + win[None, None, :]
            rows = rr[:, None, None]
            canvas[rows, ry, rx] = np.maximum(canvas[rows, ry, rx], st.marker[None])
        full = canvas[:, Q : Q + H, Q : Q + H]
        images = _bytescale(full)
        if not self.debug:
            return images, None
        layers = layers.reshape(B, n_c, W, W)[:, :, G : G + H, G : G + H]
        scale = 255.0 / np.maximum(full.reshape(B, -1).max(1), 1e-12)
        drawn = np.floor(layers * scale[:, None, None, None] + 0.5) >= 1
        strongest = layers.argmax(1)
        contour_map = np.where(drawn.any(1), strongest + 1, 0).astype(np.int16)
        info = dict(
            contour_map=contour_map,
            tips=np.stack([tail, head], 2),  # [B, 2 targets, (start, end), (row, col)]
            markers=markers,
            marker_contours=np.stack([coin, other], 1),
            margin=np.full(B, st.m),
            pair_attempts=self.attempts[slots],
            distractors=self.placed[slots],
        )
        return images, info


def _bytescale(x: np.ndarray) -> np.ndarray:
    """Per image: (x - min) scaled to 0..255, rounded half up (scipy's bytescale)."""
    n = len(x)
    lo = x.reshape(n, -1).min(1)[:, None, None]
    hi = x.reshape(n, -1).max(1)[:, None, None]
    span = np.where(hi > lo, hi - lo, 1.0)
    return (np.clip((x - lo) * (255.0 / span), 0, 255) + 0.5).astype(np.uint8)


class _Builder:
    """Builds images of one margin: image slots take images from a queue; an image's target
    pair is searched by evaluating many seed attempts at once and growing each seeded attempt
    in its own lane, up to _LANES_PER_IMAGE at a time. The first attempt (by number) that
    succeeds wins, exactly as if attempts were made one after another; later lanes are
    dropped. So every image depends only on its own random stream."""

    def __init__(self, p: dict, st: _Setup, slots: int, lanes: int, debug: bool):
        self.p, self.st = p, st
        self.img = _Images(slots, p, st, debug)
        self.lanes = _Lanes(lanes, p, st)
        self.stride = self.img.pair_draws + 2 * max(p["contour_length"] - 1, 0) * (
            self.img.grow_draws
        )

    def search(self, b):
        """More seed attempts for images b; the seeded ones get lanes."""
        img, lanes = self.img, self.lanes
        free = np.flatnonzero(lanes.phase == _FREE)
        room = np.minimum(_LANES_PER_IMAGE, 2 + img.failed[b] // 2) - img.active[b]
        b, room = b[room > 0], room[room > 0]
        if not len(free) or not len(b):
            return
        n, D = len(b), img.pair_draws
        K = int(min(_MAX_K, max(1, 8192 // n)))
        attempt = img.a_next[b][:, None] + np.arange(K)  # [n, K]
        ctr = (_HEAD_DRAWS + attempt * self.stride).astype(np.uint64)
        u = _uniforms(np.repeat(img.keys[b], K), ctr.reshape(-1), D)
        seeds = lanes._seeds(u)
        good = seeds["good"].reshape(n, K)
        quota = np.minimum(room, max(1, len(free) // n))
        spawn = good & (np.cumsum(good, 1) <= quota[:, None])
        rows, cols = np.nonzero(spawn)
        if len(rows) > len(free):  # more seeded attempts than free lanes: the first ones
            spawn[rows[len(free) :], cols[len(free) :]] = False
            rows, cols = rows[: len(free)], cols[: len(free)]
        left = good & ~spawn
        img.a_next[b] = np.where(
            left.any(1), img.a_next[b] + np.argmax(left, 1), attempt[:, -1] + 1
        )
        if img.a_next[b].max() > _MAX_PAIR_ATTEMPTS:
            raise RuntimeError(
                f"Pathfinder: no target pair fitted in {_MAX_PAIR_ATTEMPTS} attempts; the "
                "parameters leave too little room (shorter contours or a larger window)"
            )
        if not len(rows):
            return
        g = free[: len(rows)]
        flat = rows * K + cols
        v = {key: a[flat] for key, a in seeds.items()}
        lane_ctr = ctr[rows, cols] + np.uint64(D)
        lanes.spawn(g, b[rows], attempt[rows, cols], img.keys[b[rows]], lane_ctr, v)
        np.add.at(img.active, b[rows], 1)
        won = g[lanes.phase[g] == _WON]  # contour_length 1
        if len(won):
            np.add.at(img.active, lanes.owner[won], -1)
            np.minimum.at(img.best, lanes.owner[won], lanes.attempt[won])

    def grow(self):
        img, lanes = self.img, self.lanes
        b = np.flatnonzero(lanes.phase == _GROWING)
        if len(b):
            failed, won = lanes.grow(b)
            np.add.at(img.active, lanes.owner[failed], -1)
            np.add.at(img.failed, lanes.owner[failed], 1)
            np.add.at(img.active, lanes.owner[won], -1)
            np.minimum.at(img.best, lanes.owner[won], lanes.attempt[won])

    def resolve(self):
        """Drops lanes behind a known success; an image whose earlier attempts have all
        failed takes its winning lane's targets."""
        img, lanes = self.img, self.lanes
        busy = np.flatnonzero(lanes.phase != _FREE)
        if not len(busy):
            return
        best = img.best[lanes.owner[busy]]
        late = busy[(lanes.phase[busy] == _GROWING) & (lanes.attempt[busy] > best)]
        if len(late):
            lanes.phase[late] = _FREE
            np.add.at(img.active, lanes.owner[late], -1)
        growing = busy[lanes.phase[busy] == _GROWING]
        early = np.zeros(img.B, bool)  # an attempt before the best one is still growing
        early[lanes.owner[growing]] = True
        won = busy[(lanes.phase[busy] == _WON) & (lanes.attempt[busy] == best)]
        won = won[~early[lanes.owner[won]]]
        if not len(won):
            return
        g = lanes.owner[won]
        img.targets_placed(g, lanes, won)
        mine = np.zeros(img.B, bool)
        mine[g] = True
        drop = busy[mine[lanes.owner[busy]]]
        lanes.phase[drop] = _FREE
        img.active[g] = 0

    def run(self, keys, label, coin, done: Callable) -> None:
        """Builds the images keys[i] (head draws label[i], coin[i]); calls done(indices,
        images, info) for each finished batch."""
        img = self.img
        n = len(keys)
        slot_image = np.full(img.B, -1, np.int64)
        first = min(n, img.B)
        slot_image[:first] = np.arange(first)
        img.start(np.arange(first), keys[:first], label[:first], coin[:first])
        queued = first
        refill = max(1, img.B // 8)
        while True:
            b = np.flatnonzero((img.phase == _SEARCH) & (img.best == _NEVER))
            if len(b):
                self.search(b)
            self.grow()
            self.resolve()
            b = np.flatnonzero(img.phase == _SEED_D)
            if len(b):
                img.seed_distractor(b)
            b = np.flatnonzero(img.phase == _GROW_D)
            if len(b):
                img.grow_distractor(b)
            finished = np.flatnonzero(img.phase == _DONE)
            working = int(np.count_nonzero(img.phase < _DONE))
            if len(finished) >= refill or (len(finished) and not working):
                images, info = img.render(finished)
                done(slot_image[finished], images, info)
                img.phase[finished] = _IDLE
                take = min(len(finished), n - queued)
                if take:
                    slots = finished[:take]
                    slot_image[slots] = np.arange(queued, queued + take)
                    new = slice(queued, queued + take)
                    img.start(slots, keys[new], label[new], coin[new])
                    queued += take
                    working += take
            if not working and queued >= n:
                return


def _generate(n, seed, params, start, stream, progress, debug, chunk_size):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    p = _resolve(params)
    size = p["window_size"]
    images = np.zeros((n, size, size), np.uint8)
    st_max = _setup(p, max(p["paddle_margin_list"]))
    if chunk_size is None:
        per_image = 2 * st_max.area + 32 * (2 * p["contour_length"] + 64)  # masks, paddles
        if debug:
            layers = 3 + p["num_distractor_snakes"] + p["num_single_paddles"]
            per_image += 4 * st_max.area * layers
        chunk_size = int(min(_MAX_CHUNK, max(16, _CHUNK_BYTES // 4 // per_image)))
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    # Lanes: 3/4 of the memory budget, at least 4 per image slot.
    per_lane = st_max.area + 64 * p["contour_length"]
    lanes = int(max(4 * chunk_size, min(16 * _MAX_CHUNK, 3 * _CHUNK_BYTES // 4 // per_lane)))
    keys = _image_keys(seed, stream, start, n)
    head = _uniforms(keys, np.zeros(n, np.uint64), 3)
    labels = (head[:, 0] < 0.5).astype(np.int32)
    margins = np.array(p["paddle_margin_list"], np.int64)
    margin = margins[_choice(head[:, 1], len(margins))]
    coin = (head[:, 2] < 0.5).astype(np.int64)
    info: dict[str, np.ndarray] = {}
    finished = 0

    for m in np.unique(margin):
        sel = np.flatnonzero(margin == m)

        def done(idx, img, part, sel=sel):
            nonlocal finished
            images[sel[idx]] = img
            for key, v in (part or {}).items():
                if key not in info:
                    info[key] = np.zeros((n,) + v.shape[1:], v.dtype)
                info[key][sel[idx]] = v
            finished += len(idx)
            if progress is not None:
                progress(finished, n)

        slots = min(chunk_size, len(sel))
        builder = _Builder(p, _setup(p, int(m)), slots, min(lanes, 16 * slots), debug)
        builder.run(keys[sel], labels[sel], coin[sel], done)
    return images, labels, info if debug else None


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
      params: e.g. `PATHFINDER32`, `PATHFINDER128` or
        `lra.data.pathfinder.params_for(resolution, difficulty)`.
      progress: called as progress(done, n) whenever a batch of images is finished.
      chunk_size: images built in lock-step (speed/memory only; the output is the same);
        None = as many as fit in ~64 MB of state (at most 2048).

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
    """`generate` (identical images and labels) plus the geometry, for tests and statistics.

    Returns (images, labels, info) with info:
      contour_map: int16 [n, H, W]: 0 where no paddle is drawn (as rounded in the image), else
        1 + the contour with the strongest ink there: 1, 2 = the targets, 3.. = distractors
        (markers not included).
      tips: int [n, 2, 2 (start, end), 2 (row, col)], the two targets' tips.
      markers: int [n, 2, 2 (row, col)], the marker centres: markers[:, 0] is the start tip of
        target marker_contours[:, 0], markers[:, 1] the end tip of target marker_contours[:, 1].
      marker_contours: int [n, 2]; margin: int [n]; pair_attempts: int [n] (target pairs tried);
      distractors: int [n] (distractor contours placed).
    """
    return _generate(n, seed, params, start, stream, None, True, chunk_size)
