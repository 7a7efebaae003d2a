"""CIFAR-10 and CIFAR-100, the official source (`config.data.source="official"`): the "python
version" pickles under `config.data.dir` (`attnbench.data.formats.cifar`; CIFAR-100's fine
labels), read into memory. The test split is the release's test set."""

from __future__ import annotations

from attnbench.data.formats import cifar


def _read_cifar(dataset: str, directory: str) -> dict:
    if dataset == "cifar10":
        splits = cifar.read_cifar10(directory)
        return {s: (cifar.planar_to_hwc(x), y) for s, (x, y) in splits.items()}
    splits = cifar.read_cifar100(directory)
    return {s: (cifar.planar_to_hwc(v[0]), v[1]) for s, v in splits.items()}  # fine labels
