"""Random-access views of a split's examples, as `vision.data.load` hands them out: `Mapped`
(a function applied on read: the deterministic preprocessing of eval splits), the seeded random
subsets of `config.data.num_train` / `num_val` / `num_test` and the held-out validation split
(`_Subset`, `_subset`), and in-memory splits (`_in_memory`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attnbench import errors, tasks

__all__ = ["Mapped"]


class Mapped:
    """`source` with `fn(example)` applied on read (deterministic preprocessing of eval splits)."""

    def __init__(self, source, fn: Callable[[dict], dict]):
        self.source, self.fn = source, fn

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, i: int) -> dict:
        return self.fn(dict(self.source[int(i)]))


class _Subset:
    """The examples `index` of `source` (a random-access view)."""

    def __init__(self, source, index: np.ndarray):
        self.source, self.index = source, np.asarray(index, np.int64)

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> dict:
        return self.source[int(self.index[i])]

    @property
    def arrays(self):  # majority-class rate in the summary, for in-memory sources
        arrays = getattr(self.source, "arrays", None)
        return None if arrays is None else {"label": arrays["label"][self.index]}


def _labels_of(source) -> np.ndarray | None:
    if hasattr(source, "labels"):
        return np.asarray(source.labels)
    arrays = getattr(source, "arrays", None)
    return None if arrays is None else np.asarray(arrays["label"])


def _subset(source, n: int, seed: int, what: str):
    if n == 0:
        return source
    if not 0 < n <= len(source):
        raise errors.ConfigError(f"config.data.{what}={n}: the split has {len(source)} examples")
    index = np.sort(np.random.default_rng([seed, 1]).permutation(len(source))[:n])
    return _Subset(source, index)


def _in_memory(pairs: dict) -> dict:
    return {
        split: tasks.Split({"image": np.ascontiguousarray(x), "label": np.asarray(y, np.int32)})
        for split, (x, y) in pairs.items()
    }
