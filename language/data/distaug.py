"""Distribution Augmentation (Jun et al. 2020, "Distribution Augmentation for Generative
Modeling", ICML) for sub-pixel image sequences: SSA's CIFAR-10 recipe trains with it instead of
dropout (SSA, arXiv:2306.01705, App. B.2).

DistAug transforms a training image with functions that may change the data distribution and
conditions the model on which function was used; evaluation conditions on the identity, so the
reported bits per dim are those of the unaugmented data. The rules below are the ones of the
authors' release (openai/distribution_augmentation, `train.py`, read for facts, not copied):

* Each augmentation type in use draws its own index uniformly, index 0 being the identity:
  rotation by k x 90 degrees (4 indices; numpy's ``rot90(image, k, axes=(1, 0))``, i.e.
  clockwise), a channel permutation (6 indices, in ``itertools.permutations((0, 1, 2))`` order;
  colour images only) and transposition of rows and columns (2 indices). They are applied in
  that order (rotation, colour, transposition), as the release lists them.
* The model is conditioned through its start-of-sequence input: the release adds one learned
  start embedding per type (a table of that type's size, indexed by its draw). Here the start
  symbol itself carries the condition: one start symbol per combination of draws (8 for
  rotation + transposition), which is the same conditioning with one embedding per combination
  instead of a sum of per-type embeddings. The identity combination is the plain start symbol,
  so evaluation (`language.data.windows.ImageWindows`) is unchanged.
* The release can also permute the position embeddings with the pixels
  (``--permute_embeddings``); not done here: the decoder's 2-D relative bias stays in raster
  coordinates.

SSA does not say which DistAug functions it used. The recipe (configs/language/cifar10.py)
takes rotation and transposition, the eight symmetries of the square; the release's CIFAR-10
models include rotation, rotation + transposition and rotation + transposition + colour +
jigsaw. Jigsaw, random orders and RandAugment conditioning are not built.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from attnbench import errors

__all__ = ["TYPES", "DistAug", "apply", "conditions", "parse"]

# type: number of indices (index 0 is the identity), in the release's order of application
TYPES = {"rotation": 4, "color": 6, "transposition": 2}
_COLOR_PERMS = tuple(itertools.permutations(range(3)))


def parse(spec: str | Sequence[str]) -> tuple[str, ...]:
    """`"rotation,transposition"` (or a sequence) -> the types in the order of application;
    "" or "none" -> (). ConfigError for an unknown type."""
    names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else list(spec)
    names = [n for n in names if n and n != "none"]
    unknown = [n for n in names if n not in TYPES]
    if unknown:
        raise errors.ConfigError(
            f"config.data.distaug: unknown augmentation {unknown[0]!r}; known: "
            f"{', '.join(TYPES)} (comma-separated), or '' for none"
        )
    return tuple(t for t in TYPES if t in names)


def conditions(types: Sequence[str]) -> int:
    """Number of start symbols the types need (1 with no augmentation)."""
    return math.prod(TYPES[t] for t in types)


def apply(image: np.ndarray, types: Sequence[str], draws: Sequence[int]) -> np.ndarray:
    """`image` [rows, cols, channels] transformed by one draw per type (in `types` order)."""
    for t, k in zip(types, draws, strict=True):
        if t == "rotation":
            image = np.rot90(image, int(k), axes=(1, 0))
        elif t == "color":
            image = image[..., list(_COLOR_PERMS[int(k)])]
        elif int(k):  # transposition
            image = image.transpose(1, 0, 2)
    return np.ascontiguousarray(image)


class DistAug:
    """`transform(example, rng)` for `attnbench.tasks.Data`: draws one index per type, transforms
    the example's image (`targets`, [D] in raster order over `shape`) and sets the start
    symbol to ``start_token + combination`` (mixed radix over `types`, the first type varying
    fastest; 0 = identity). Picklable (grain workers)."""

    def __init__(self, shape: Sequence[int], types: Sequence[str], *, start_token: int = 256):
        self.shape = tuple(int(s) for s in shape)
        self.types = parse(types)
        self.start_token = int(start_token)
        rows, cols, channels = self.shape
        if ("rotation" in self.types or "transposition" in self.types) and rows != cols:
            raise errors.ConfigError(
                f"config.data.distaug: rotation and transposition need square images; these "
                f"are {rows} x {cols}"
            )
        if "color" in self.types and channels != 3:
            raise errors.ConfigError(
                f"config.data.distaug: colour permutation needs 3 channels; these images have "
                f"{channels} (the Fashion-MNIST stand-in is grey)"
            )

    @property
    def num_conditions(self) -> int:
        return conditions(self.types)

    def draw(self, rng: np.random.Generator) -> tuple[int, ...]:
        return tuple(int(rng.integers(TYPES[t])) for t in self.types)

    def combination(self, draws: Sequence[int]) -> int:
        index, radix = 0, 1
        for t, k in zip(self.types, draws, strict=True):
            index += int(k) * radix
            radix *= TYPES[t]
        return index

    def __call__(self, example: dict, rng: np.random.Generator) -> dict:
        draws = self.draw(rng)
        x = np.asarray(example["targets"])
        image = apply(x.reshape(self.shape), self.types, draws).reshape(x.shape)
        out = dict(example)
        out["targets"] = image.astype(x.dtype)
        tokens = np.empty_like(np.asarray(example["tokens"]))
        tokens[0] = self.start_token + self.combination(draws)
        tokens[1:] = image[:-1]
        out["tokens"] = tokens
        return out
