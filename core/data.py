"""Input pipelines (grain) over in-memory splits.

Training: a global shuffle with a fresh permutation every epoch (grain `shuffle().repeat()`),
sharded by process, batched, gathered with one vectorised index per batch. The iterator's state
(`{"next_index": k}`) goes into every checkpoint, so a resumed run sees the same batches.
Evaluation: every example exactly once, in order; the last batch is padded with weight-0
examples (LRA dropped it, so its reported counts were short).
"""

from __future__ import annotations

from collections.abc import Iterator

import grain
import numpy as np

from core import tasks

__all__ = ["train_iterator", "eval_batches"]


class _Gather:
    """Batch of indices -> dict of arrays (picklable, for grain worker threads)."""

    def __init__(self, arrays):
        self.arrays = arrays

    def __call__(self, idx):
        out = {k: v[idx] for k, v in self.arrays.items()}
        out["weight"] = np.ones(len(idx), np.float32)
        return out


def train_iterator(
    split: tasks.Split,
    *,
    batch_size: int,
    seed: int,
    process_index: int = 0,
    process_count: int = 1,
    prefetch: int = 4,
) -> grain.DatasetIterator:
    """An endless iterator of this process's share of each global batch of `batch_size`."""
    if batch_size % process_count:
        raise ValueError(f"batch_size {batch_size} is not divisible by {process_count} processes")
    if len(split) < batch_size:
        raise ValueError(
            f"the train split has {len(split)} examples, fewer than one batch ({batch_size})"
        )
    local = batch_size // process_count
    ds = grain.MapDataset.range(len(split)).shuffle(seed=seed).repeat()
    ds = ds.batch(batch_size, drop_remainder=True)
    ds = ds.map(lambda idx: idx[process_index * local : (process_index + 1) * local])
    ds = ds.map(_Gather(split.arrays))
    options = grain.ReadOptions(num_threads=1 if prefetch else 0, prefetch_buffer_size=prefetch)
    return iter(ds.to_iter_dataset(options))


def eval_batches(
    split: tasks.Split, *, batch_size: int, process_index: int = 0, process_count: int = 1
) -> Iterator[dict]:
    """Yields this process's share of padded global batches covering every example once."""
    n = len(split)
    local = batch_size // process_count
    gather = _Gather(split.arrays)
    for start in range(0, n, batch_size):
        idx = np.arange(start, start + batch_size)
        weight = (idx < n).astype(np.float32)
        idx = np.where(idx < n, idx, 0)
        sl = slice(process_index * local, (process_index + 1) * local)
        batch = gather(idx[sl])
        batch["weight"] = weight[sl]
        yield batch
