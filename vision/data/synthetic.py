"""A small ImageNet-style JPEG folder, generated: the offline end-to-end path of the class-folder
readers, and the input of the 224 x 224 pipeline benchmark. Not a dataset of any paper: runs
that read it say `official` source with the folder's path, and nobody should report them.

    python -m vision.data.synthetic runs/synthetic-jpegs --classes 10 --per-class 50 --val 10

Each image is a smooth random field (a few low-frequency cosines per channel plus mild noise, so
JPEG sizes and decode times are those of photographs, about 0.3-1 bit per pixel, not of noise)
tinted by its class, at ImageNet's typical 500 x 375 (landscape) or 375 x 500, saved at
quality 90. Classes are named like synsets (`n00000000`, ...), sorted as ImageNet's.
"""

from __future__ import annotations

import argparse
import os
import pathlib

import numpy as np

__all__ = ["image", "write_folder"]


def image(rng: np.random.Generator, label: int, classes: int, size=(375, 500)) -> np.ndarray:
    """One uint8 [H, W, 3] image of class `label` (of `classes`)."""
    h, w = size
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    out = np.zeros((h, w, 3), np.float32)
    for c in range(3):
        for _ in range(4):
            fy, fx = rng.uniform(0.5, 6.0, 2) / np.array([h, w])
            phase = rng.uniform(0, 2 * np.pi)
            out[..., c] += np.cos(2 * np.pi * (fy * y + fx * x) + phase)
    hue = 2 * np.pi * label / max(classes, 1)
    tint = 60 * np.cos(hue + np.array([0.0, 2.1, 4.2], np.float32))
    out = 128 + 25 * out + tint + rng.normal(0, 4, out.shape).astype(np.float32)
    return np.clip(out, 0, 255).astype(np.uint8)


def write_folder(
    root: str | os.PathLike,
    *,
    classes: int = 4,
    per_class: int = 8,
    val_per_class: int = 2,
    seed: int = 0,
    size: tuple[int, int] | None = None,
) -> pathlib.Path:
    """Writes `root/{train,val}/<synset>/<name>.JPEG`; returns `root`. `size` (H, W) fixes every
    image's size; None alternates 375 x 500 and 500 x 375."""
    from PIL import Image

    root = pathlib.Path(root)
    rng = np.random.default_rng(seed)
    for split, count in (("train", per_class), ("val", val_per_class)):
        for label in range(classes):
            folder = root / split / f"n{label:08d}"
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                shape = size or ((375, 500) if i % 2 == 0 else (500, 375))
                pixels = image(rng, label, classes, shape)
                Image.fromarray(pixels).save(folder / f"n{label:08d}_{i}.JPEG", quality=90)
    return root


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m vision.data.synthetic", description=__doc__)
    parser.add_argument("root")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--per-class", type=int, default=50)
    parser.add_argument("--val", type=int, default=10, help="validation images per class")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    write_folder(
        args.root,
        classes=args.classes,
        per_class=args.per_class,
        val_per_class=args.val,
        seed=args.seed,
    )
    print(f"wrote {args.root}/train and {args.root}/val")


if __name__ == "__main__":
    main()
