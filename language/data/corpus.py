"""The corpus every reader returns (`Corpus`) and the split names: the type the readers of
`language.data.corpora` and the offline stand-in (`language.data.standin`) share."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["SPLITS", "Corpus"]

SPLITS = ("train", "val", "test")


@dataclasses.dataclass(frozen=True)
class Corpus:
    """Token streams or image sequences per split.

    Attributes:
      splits: {"train", "val", "test"} -> a 1-D stream (uint8 bytes/pixels, uint16 or int32
        word ids) or, for images, uint8 [n, D] sequences.
      vocab_size: ids lie in 0..vocab_size-1.
      unit: what a token is, for the evaluator: "token" (words, BPE), "byte", "dim" (sub-pixel).
      source: "official" or "standin".
      description: JSON-able: dataset, files, sizes, rules.
      symbols: the word of each id (word-level and BPE corpora), else None.
      image_shape: (height, width, channels) for image corpora, else None.
    """

    splits: Mapping[str, np.ndarray]
    vocab_size: int
    unit: str
    source: str
    description: Mapping[str, Any]
    symbols: tuple[str, ...] | None = None
    image_shape: tuple[int, int, int] | None = None

    @property
    def is_images(self) -> bool:
        return self.image_shape is not None
