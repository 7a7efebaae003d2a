"""Per-image statistics of Pathfinder images, and the flood-fill "solver" they are judged by.

Used by the generator's tests (`tests/lra/data/test_pathfinder_generator.py`) and by

    python -m lra.data.pathfinder_stats [--n 1000] [--seed 0] [--out results/lra]

which generates `n` images with LRA's Pathfinder32 "hard" parameters and writes
`pathfinder_grid.png` (a 4x4 grid of generated images, 8x enlarged, markers circled in
green for label 1 and red for label 0) and `pathfinder_stats.md` (the statistics below beside
those of the original generator).

Statistics (all on the uint8 images as written to disk)
------------------------------------------------------
flood_fill_acc_0 / _64   accuracy of the solver "label 1 iff the two marker pixels lie in one
                         8-connected blob of pixels > 0 (resp. > 64)".
components               8-connected components of the pixels > 10 per image (mean, min, max).
nonzero_fraction         fraction of pixels > 0.
halo_share               share of the non-zero pixels with values 1..10 (the faint halo that
                         anti-aliasing and Lanczos resampling leave around every stroke).
nonzero_mean             mean value of the non-zero pixels.
marker_distance          Euclidean distance between the two marker centres in pixels (mean and
                         5% / 50% / 95% quantiles).
target / distractor      mean of the pixels > 10 drawn by the target (resp. distractor)
                         contours, pixels within marker_radius + 1 of a marker centre excluded
                         (needs the generator's contour map: `generate_debug`).
marker_centre            mean pixel value at the marker centres.

ORIGINAL holds these figures for the original generator (drewlinsley/pathfinder `snakes2.py`
run with the Pathfinder32 parameters of LRA's `lra_benchmarks/data/pathfinder.py` docstring,
contour length 14, 600 images; issue 18). ORIGINAL_RERUN: the same measured here on 600 more
images of the original (run outside the repository with LRA-era scipy.misc and OpenCV
semantics), which shows the sampling spread. OLD: our generator before issue 18.
"""

from __future__ import annotations

import argparse
import pathlib
import time
from collections.abc import Mapping

import numpy as np

__all__ = [
    "ORIGINAL",
    "ORIGINAL_RERUN",
    "OLD",
    "measure",
    "label_components",
    "count_components",
    "flood_fill_predict",
    "image_statistics",
    "stats_table",
    "grid_image",
    "main",
]

# The original generator at LRA's Pathfinder32 hard parameters (600 images; issue 18).
ORIGINAL: Mapping[str, float] = {
    "flood_fill_acc_0": 0.48,
    "flood_fill_acc_64": 0.49,
    "components_mean": 12.2,
    "components_min": 1,
    "components_max": 22,
    "nonzero_fraction": 0.340,
    "halo_share": 0.53,
    "nonzero_mean": 59.5,
    "marker_distance_mean": 13.0,
    "marker_distance_p5": 4.1,
    "marker_distance_p50": 13.2,
    "marker_distance_p95": 21.9,
    "target_intensity": 118.0,
    "distractor_intensity": 144.0,
    "marker_centre": 239.0,
}
ORIGINAL_RERUN: Mapping[str, float] = {
    "flood_fill_acc_0": 0.452,
    "flood_fill_acc_64": 0.477,
    "components_mean": 12.6,
    "components_min": 1,
    "components_max": 21,
    "nonzero_fraction": 0.339,
    "halo_share": 0.536,
    "nonzero_mean": 59.2,
    "marker_distance_mean": 13.1,
    "marker_distance_p5": 4.1,
    "marker_distance_p50": 13.0,
    "marker_distance_p95": 21.5,
    "target_intensity": 117.1,
    "distractor_intensity": 143.4,
    "marker_centre": 239.9,
}
OLD: Mapping[str, float] = {
    "flood_fill_acc_0": 1.00,
    "flood_fill_acc_64": 0.87,
    "components_mean": 7.0,
    "components_min": 7,
    "components_max": 7,
    "nonzero_fraction": 0.240,
    "halo_share": 0.05,
    "nonzero_mean": 132.6,
    "marker_distance_mean": 19.4,
    "marker_distance_p5": 6.5,
    "marker_distance_p50": 19.7,
    "marker_distance_p95": 31.2,
    "target_intensity": 138.0,
    "distractor_intensity": 138.0,
    "marker_centre": 255.0,
}


def label_components(mask: np.ndarray) -> np.ndarray:
    """8-connected components of boolean images.

    Args:
      mask: bool [n, H, W].

    Returns:
      int32 [n, H, W]: 0 on background, else a component id (unique within the batch), so two
      pixels of one image are connected iff their ids are equal and > 0.
    """
    from scipy import ndimage  # a dependency of jax

    mask = np.asarray(mask, bool)
    structure = np.zeros((3, 3, 3), bool)
    structure[1] = True  # 8-neighbours within an image, never across images
    lab, _ = ndimage.label(mask, structure=structure)
    return lab.astype(np.int32)


def count_components(mask: np.ndarray) -> np.ndarray:
    """Number of 8-connected components of each boolean image [n, H, W] -> int [n]."""
    lab = label_components(mask)
    ids = np.unique(lab[lab > 0])
    # Component ids are unique within the batch: count each id once, in its image.
    first = np.zeros(lab.max() + 1, np.int64)
    first[lab.reshape(-1)] = np.repeat(np.arange(len(lab)), lab[0].size)
    return np.bincount(first[ids], minlength=len(lab))


def flood_fill_predict(images: np.ndarray, markers: np.ndarray, threshold: int = 0) -> np.ndarray:
    """The flood-fill solver: 1 iff both marker pixels are > threshold and 8-connected through
    pixels > threshold.

    Args:
      images: uint8 [n, H, W]; markers: int [n, 2, 2] marker centres as (row, col).

    Returns:
      int32 [n] predicted labels.
    """
    images = np.asarray(images)
    markers = np.asarray(markers).astype(np.int64)
    lab = label_components(images > threshold)
    idx = np.arange(len(images))
    a = lab[idx, markers[:, 0, 0], markers[:, 0, 1]]
    b = lab[idx, markers[:, 1, 0], markers[:, 1, 1]]
    return ((a > 0) & (a == b)).astype(np.int32)


def _layer_mean(images, layer, markers, radius) -> float:
    n, h, w = images.shape
    yy, xx = np.mgrid[0:h, 0:w]
    far = np.ones(images.shape, bool)
    for k in range(2):
        dy = yy[None] - markers[:, k, 0, None, None]
        dx = xx[None] - markers[:, k, 1, None, None]
        far &= dy * dy + dx * dx > (radius + 1) ** 2
    sel = layer & far & (images > 10)
    return float(images[sel].mean()) if sel.any() else float("nan")


def image_statistics(
    images: np.ndarray,
    labels: np.ndarray,
    markers: np.ndarray,
    *,
    target: np.ndarray | None = None,
    distractor: np.ndarray | None = None,
    marker_radius: float = 1.5,
) -> dict[str, float]:
    """The statistics of the module docstring.

    Args:
      images: uint8 [n, H, W]; labels: [n] in {0, 1}; markers: int [n, 2, 2] (row, col).
      target, distractor: bool [n, H, W], the pixels drawn by the target (resp. distractor)
        contours (e.g. `info["contour_map"]` of `generate_debug`); optional.
      marker_radius: pixels around a marker excluded from the contour intensities.

    Returns:
      {name: value}, names as in `ORIGINAL`.
    """
    images = np.asarray(images)
    labels = np.asarray(labels)
    markers = np.asarray(markers).astype(np.int64)
    nonzero = images > 0
    comps = count_components(images > 10)
    dist = np.hypot(*(markers[:, 0] - markers[:, 1]).T.astype(np.float64))
    idx = np.arange(len(images))
    centre = np.concatenate(
        [images[idx, markers[:, k, 0], markers[:, k, 1]] for k in range(2)]
    ).astype(np.float64)
    out = {
        "flood_fill_acc_0": float(np.mean(flood_fill_predict(images, markers, 0) == labels)),
        "flood_fill_acc_64": float(np.mean(flood_fill_predict(images, markers, 64) == labels)),
        "components_mean": float(comps.mean()),
        "components_min": int(comps.min()),
        "components_max": int(comps.max()),
        "nonzero_fraction": float(nonzero.mean()),
        "halo_share": float(((images >= 1) & (images <= 10)).sum() / max(nonzero.sum(), 1)),
        "nonzero_mean": float(images[nonzero].mean()),
        "marker_distance_mean": float(dist.mean()),
        "marker_distance_p5": float(np.quantile(dist, 0.05)),
        "marker_distance_p50": float(np.quantile(dist, 0.50)),
        "marker_distance_p95": float(np.quantile(dist, 0.95)),
        "marker_centre": float(centre.mean()),
        "label_1_fraction": float(labels.mean()),
    }
    if target is not None:
        out["target_intensity"] = _layer_mean(images, target, markers, marker_radius)
    if distractor is not None:
        out["distractor_intensity"] = _layer_mean(images, distractor, markers, marker_radius)
    return out


def measure(n: int, seed: int = 0, params: Mapping[str, object] | None = None) -> dict:
    """Generates n images (Pathfinder32 hard by default) and returns their statistics, plus
    `images_per_s` (CPU time of the generation), `pair_attempts` and `distractors` (means)."""
    from lra.data import pathfinder, pathfinder_generator

    params = pathfinder.params_for(32, "hard") if params is None else params
    t0 = time.process_time()
    images, labels, info = pathfinder_generator.generate_debug(n, seed=seed, params=params)
    seconds = time.process_time() - t0
    cmap = info["contour_map"]
    out = image_statistics(
        images,
        labels,
        info["markers"],
        target=(cmap == 1) | (cmap == 2),
        distractor=cmap >= 3,
        marker_radius=float(params["marker_radius"]),
    )
    out.update(
        images_per_s=n / max(seconds, 1e-9),
        pair_attempts=float(info["pair_attempts"].mean()),
        distractors=float(info["distractors"].mean()),
    )
    return out


_ROWS = (
    ("flood-fill solver accuracy (markers in one 8-connected blob of pixels > 0)", "ff0"),
    ("same, pixels > 64", "ff64"),
    ("8-connected components per image (pixels > 10)", "comp"),
    ("fraction of non-zero pixels", "nonzero_fraction"),
    ("share of non-zero pixels at 1..10 (resampling halo)", "halo_share"),
    ("mean intensity of non-zero pixels", "nonzero_mean"),
    ("marker distance px, mean (5% / 50% / 95%)", "dist"),
    ("target / distractor contour intensity (pixels > 10)", "contrast"),
    ("pixel at a marker's centre", "marker_centre"),
)


def _cell(s: Mapping[str, float], key: str) -> str:
    if key == "ff0":
        return f"{s['flood_fill_acc_0']:.2f}"
    if key == "ff64":
        return f"{s['flood_fill_acc_64']:.2f}"
    if key == "comp":
        lo, hi = int(s["components_min"]), int(s["components_max"])
        return f"{s['components_mean']:.1f} ({lo}-{hi})" if lo != hi else f"{lo} in every image"
    if key == "nonzero_fraction":
        return f"{s[key]:.3f}"
    if key == "halo_share":
        return f"{100 * s[key]:.0f}%"
    if key == "nonzero_mean":
        return f"{s[key]:.1f}"
    if key == "dist":
        return (
            f"{s['marker_distance_mean']:.1f} ({s['marker_distance_p5']:.1f} / "
            f"{s['marker_distance_p50']:.1f} / {s['marker_distance_p95']:.1f})"
        )
    if key == "contrast":
        return f"{s['target_intensity']:.0f} / {s['distractor_intensity']:.0f}"
    return f"{s[key]:.0f}"


def stats_table(ours: Mapping[str, float]) -> str:
    """Markdown table: original (issue 18), original re-run, ours, our generator before."""
    lines = [
        "| statistic | original (issue 18) | original, re-run here | ours | ours before issue 18 |",
        "|---|---|---|---|---|",
    ]
    for name, key in _ROWS:
        cells = [_cell(t, key) for t in (ORIGINAL, ORIGINAL_RERUN, ours, OLD)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def grid_image(images: np.ndarray, labels: np.ndarray, markers: np.ndarray, scale: int = 8):
    """A 4x4 grid (PIL RGB image) of the first 16 images, enlarged `scale` times (nearest),
    each marker circled in green (label 1) or red (label 0)."""
    from PIL import Image, ImageDraw

    n, h, w = images.shape
    k = min(4, int(np.ceil(np.sqrt(min(n, 16)))))
    gap = 4
    side = h * scale
    grid = Image.new("RGB", (k * side + (k + 1) * gap, k * side + (k + 1) * gap), (40, 40, 40))
    for i in range(min(n, k * k)):
        tile = Image.fromarray(images[i]).resize((side, side), Image.Resampling.NEAREST)
        tile = tile.convert("RGB")
        draw = ImageDraw.Draw(tile)
        colour = (0, 200, 0) if labels[i] == 1 else (230, 0, 0)
        for r, c in markers[i]:
            cy, cx = (r + 0.5) * scale, (c + 0.5) * scale
            rad = 3 * scale
            draw.ellipse([cx - rad, cy - rad, cx + rad, cy + rad], outline=colour, width=2)
        row, col = divmod(i, k)
        grid.paste(tile, (gap + col * (side + gap), gap + row * (side + gap)))
    return grid


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="images to measure")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/lra", help="folder for the PNG and the table")
    args = parser.parse_args(argv)
    from lra.data import pathfinder, pathfinder_generator

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    params = pathfinder.params_for(32, "hard")
    stats = measure(args.n, args.seed, params)
    images, labels, info = pathfinder_generator.generate_debug(16, seed=args.seed, params=params)
    grid_image(images, labels, info["markers"]).save(out / "pathfinder_grid.png")
    text = (
        "# Pathfinder32 (hard): our generator against the original\n\n"
        "Written by `python -m lra.data.pathfinder_stats "
        f"--n {args.n} --seed {args.seed}` (issue 18). Ours: {args.n} images of "
        "`lra.data.pathfinder_generator.generate` with `params_for(32, 'hard')`; the original: "
        "drewlinsley/pathfinder `snakes2.py` with LRA's Pathfinder32 parameters, 600 images "
        "(see `lra/data/pathfinder_stats.py` for the definitions). Only the `ours` column is "
        "measured by this command; the two `original` columns are quoted constants "
        "(`ORIGINAL`: issue 18's measurement; `ORIGINAL_RERUN`: a run of the original's code "
        "made outside this repository, not reproducible from it) and `ours before issue 18` "
        "is issue 18's measurement of the old generator.\n\n"
        + stats_table(stats)
        + f"\nOurs: {stats['pair_attempts']:.0f} target-pair attempts and "
        f"{stats['distractors']:.2f} distractor contours per image; label-1 fraction "
        f"{stats['label_1_fraction']:.3f}; {stats['images_per_s']:.0f} images/s (CPU time, "
        "one core, debug output included).\n\n"
        "`pathfinder_grid.png`: the first 16 images of seed "
        f"{args.seed}, 8x enlarged; markers circled in green (label 1: same contour) or red "
        "(label 0).\n"
    )
    (out / "pathfinder_stats.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
