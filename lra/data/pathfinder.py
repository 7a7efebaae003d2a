"""LRA Pathfinder (and Path-X): are the two markers joined by one contour? Binary, 2 classes.

The task (Linsley et al. 2018, "Learning long-range spatial dependencies with horizontal gated
recurrent units"; Kim et al. 2020, "Disentangling neural mechanisms for perceptual grouping";
LRA, Tay et al. 2021)
----------------------------------------------------------------------------------------------
A grayscale image shows dashed curves ("contours" or "snakes", chains of short line segments
called paddles, separated by gaps) on black, and two round markers. Label 1 iff both markers
sit on the two ends of the same contour. LRA's Pathfinder is 32x32 (1024 pixel tokens); Path-X
is 128x128 (16,384 tokens). LRA reported the "hard" difficulty (contour length 14) for both
(maintainer in LRA issue #11); easy = 6 and intermediate = 9 paddles per contour.

This is the task's data module (the LRA data-module API that `lra.tasks` uses: `NUM_CLASSES`,
`VOCAB_SIZE`, `data_config()`, `load(config.data, cache_root)`), with `params_for`, the
generator parameters of a resolution and difficulty. The images come from
`lra.data.pathfinder_generator` (`source="generated"`: our generator with LRA's parameters) or
from `lra.data.pathfinder_release` (`source="official"`: the release's metadata files and PNGs).

Splits and cache
----------------
generated: train / val / test are the streams 0 / 1 / 2 of `config.data.seed`, with
num_train / num_val / num_test images. official: the release folder `config.data.dir`, else
`<data root>/lra_release/pathfinder{32,128}` where `attnbench-data fetch pathfinder32` (or
`pathfinder128`, Path-X) puts it; the release's records split [:80%],
[80%:90%], [90%:] (`official_splits`), each cut to its first num_* images when num_* > 0. The
pixels are built once and cached under `cache_root` (`attnbench.data.cache.build_once`), keyed on
the generator version, seed, sizes and parameters, or on the release folder, pattern and its
metadata files' sizes and mtimes; tokens are made at load time, so both token schemes below
share one cache.

Tokens: pixel + 1 (ids 1-256, 0 = pad, unused), `VOCAB_SIZE = 257`. `zero_is_padding=True`
reproduces the LRA quirk (token = pixel; the LRA models mask `inputs > 0`, so every black
background pixel is masked out as padding; the faint halo pixels are not).
"""

from __future__ import annotations

import pathlib
import time
import types
from collections.abc import Mapping

import ml_collections
import numpy as np

from attnbench.data import cache, catalog
from lra.data import image
from lra.data import pathfinder_generator as generator
from lra.data import pathfinder_release as release
from lra.data.pathfinder_release import PATTERNS

__all__ = [
    "NUM_CLASSES",
    "VOCAB_SIZE",
    "CONTOUR_LENGTHS",
    "data_config",
    "params_for",
    "load",
]

NUM_CLASSES = 2
VOCAB_SIZE = 257  # pixel + 1, and the pad id 0

_BASE = {
    32: generator.PATHFINDER32,
    64: generator.PATHFINDER64,
    128: generator.PATHFINDER128,
    256: generator.PATHFINDER256,
}
# Numerator of num_distractor_snakes = budget // distractor_length (the docstrings of LRA's
# lra_benchmarks/data/pathfinder.py).
_DISTRACTOR_BUDGET = {32: 20, 64: 22, 128: 35, 256: 30}
CONTOUR_LENGTHS: Mapping[str, int] = types.MappingProxyType(dict(easy=6, intermediate=9, hard=14))
_SPLITS = ("train", "val", "test")
_CACHE_VERSION = 1
_PROGRESS_SECONDS = 5.0
# The resolutions `attnbench-data` fetches (lra/data/sources.py), by their catalog names.
_FETCHED = {32: "pathfinder32", 128: "pathfinder128"}


def data_config() -> ml_collections.ConfigDict:
    """`config.data` of LRA Pathfinder, with the paper (LRA) values as defaults."""
    d = ml_collections.ConfigDict()
    d.source = "generated"  # generated (our generator, LRA parameters) | official (release PNGs)
    d.dir = ""  # official: folder holding curv_baseline/ etc.; generated: cache root ("" = default)
    d.max_length = 32 * 32  # tokens per image = resolution**2 (16,384 for Path-X)
    d.seed = 0  # generator seed (train/val/test use separate streams of it)
    d.resolution = 32  # 32 (LRA Pathfinder) | 64 | 128 (Path-X) | 256
    d.difficulty = "hard"  # easy (6 paddles) | intermediate (9) | hard (14; what LRA reported)
    d.zero_is_padding = False  # True = LRA quirk: token = pixel, so black pixels are pad (masked)
    d.num_train = 160_000  # generated: images; official: at most this many (first n; 0 = all)
    d.num_val = 20_000  # as num_train (LRA: 80/10/10 of 200k per difficulty)
    d.num_test = 20_000  # as num_train
    return d


def params_for(resolution: int = 32, difficulty: str = "hard") -> dict:
    """Generator parameters of LRA's Pathfinder`resolution` (32, 64, 128 = Path-X, 256) at a
    difficulty (contour length 6, 9 or 14; distractor_length = contour_length // 3,
    num_distractor_snakes = 20 / 22 / 35 / 30 // distractor_length, as in the LRA docstrings).
    The other parameters are those of `lra.data.pathfinder_generator.PATHFINDER32` etc."""
    if resolution not in _BASE:
        raise ValueError(f"resolution={resolution!r}; known: 32, 64, 128 (Path-X), 256")
    if difficulty not in CONTOUR_LENGTHS:
        raise ValueError(f"difficulty={difficulty!r}; known: {', '.join(CONTOUR_LENGTHS)}")
    p = dict(_BASE[resolution])
    length = CONTOUR_LENGTHS[difficulty]
    p["contour_length"] = length
    p["distractor_length"] = length // 3
    p["num_distractor_snakes"] = _DISTRACTOR_BUDGET[resolution] // (length // 3)
    return p


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
        raise ValueError(f"config.data.resolution={d.resolution}; known: 32, 64, 128 (Path-X), 256")
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


def _official_root(config_dir: str, res: int, difficulty: str) -> pathlib.Path:
    """The release folder of resolution `res`: `config_dir`, else where `attnbench-data fetch
    pathfinder<res>` puts it (`catalog.official_dir`; 32 and 128, what the configs read)."""
    if res in _FETCHED:
        offline = "config.data.source='generated' for generated images"
        holding = ", ".join(PATTERNS.values())
        folder = catalog.official_dir(_FETCHED[res], config_dir, offline=offline, holding=holding)
        return pathlib.Path(folder).expanduser().resolve()
    if not config_dir:
        raise cache.DataError(
            "config.data.source='official' needs config.data.dir: the Pathfinder release "
            f"folder (e.g. lra_release/pathfinder{res}) holding "
            f"{PATTERNS[difficulty]}/metadata/*.npy and the PNGs it lists (attnbench-data "
            f"fetches {' and '.join(_FETCHED.values())} only)"
        )
    return pathlib.Path(config_dir).expanduser().resolve()


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
            generator_version=generator._GENERATOR_VERSION,
            source="generated",
            seed=int(d.seed),
            sizes=sizes,
            params=generator._resolve(params),
        )
        total = sum(sizes.values())

        def build(tmp: pathlib.Path) -> None:
            report = _Progress(f"generating Pathfinder{res} ({difficulty})", total)
            for stream, split in enumerate(_SPLITS):
                images, labels = generator.generate(
                    sizes[split], seed=int(d.seed), params=params, stream=stream, progress=report
                )
                report.offset += sizes[split]
                cache.save_arrays(tmp / f"{split}.npz", {"pixels": images, "label": labels})

        name = f"pathfinder{res}-{difficulty}-generated"
    elif d.source == "official":
        root = _official_root(d.dir, res, difficulty)
        base = release._pattern_dir(root, PATTERNS[difficulty], fetch=_FETCHED.get(res, ""))
        metas = release._metadata_files(base, fetch=_FETCHED.get(res, ""))
        spec = dict(
            version=_CACHE_VERSION,
            source="official",
            dir=str(pathlib.Path(d.dir).expanduser()) if d.dir else str(root),
            pattern=PATTERNS[difficulty],
            resolution=res,
            # A changed metadata file gets a new cache (PNGs are not stat-ed: 200k files).
            metadata={q.name: [q.stat().st_size, q.stat().st_mtime_ns] for q in metas},
        )

        def build(tmp: pathlib.Path) -> None:
            data = release.read_official(
                root,
                PATTERNS[difficulty],
                resolution=res,
                progress=_Progress(f"reading Pathfinder{res} {PATTERNS[difficulty]}", 0),
            )
            for split, arrays in release.official_splits(data).items():
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
                "own re-implementation of the original generator's algorithm (drewlinsley/"
                "pathfinder snakes2; Linsley et al. 2018, Kim et al. 2020) with LRA's "
                "parameters; not the official release"
            ),
            seed=int(d.seed),
            params={k: list(v) if isinstance(v, tuple) else v for k, v in params.items()},
        )
    else:
        records = cache.load_arrays(directory / "records.npz")
        description.update(
            dataset=f"Pathfinder{res} ({difficulty}), official LRA release",
            dir=str(pathlib.Path(d.dir).expanduser()) if d.dir else str(root),
            pattern=PATTERNS[difficulty],
            num_records=int(records["num_records"]),
            empty_images_skipped=len(records["empty"]),
            split="records [:80%] / [80%:90%] / [90%:] in metadata order, empty images dropped",
        )
    return splits, description
