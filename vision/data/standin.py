"""The offline stand-in (`config.data.source="standin"`): Fashion-MNIST
(`attnbench.data.formats.fashion_mnist`, Debian `dataset-fashion-mnist`), zero-padded to 32x32
and repeated to 3 channels: 10 classes whatever the recipe's dataset (the model keeps the
recipe's head; labels 0-9). Read into memory; labelled as a stand-in everywhere. Its test split
is Fashion-MNIST's test set."""

from __future__ import annotations

import numpy as np

from attnbench.data.formats import fashion_mnist

_STANDIN_SIDE = 32  # Fashion-MNIST's 28 pixels + 2 zero pixels on every side, as LRA Image's


def _read_standin(directory: str) -> dict:
    pad = (_STANDIN_SIDE - fashion_mnist.SIZE) // 2
    out = {}
    for split, (images, labels) in fashion_mnist.read(directory).items():
        images = np.pad(images, ((0, 0), (pad, pad), (pad, pad)))
        out[split] = (np.repeat(images[..., None], 3, axis=-1), labels)
    return out
