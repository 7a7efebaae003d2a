"""Input pipelines (grain) over random-access sources, in memory or read lazily.

A source is anything with `len(source)` and `source[i] -> {name: np.ndarray}` (grain's
random-access protocol): `attnbench.tasks.Split` holds in-memory arrays and also gathers a whole
batch with one vectorised index; a domain's lazy reader (JPEG folders, molecule files) decodes
one example per `__getitem__`.

Training: a global shuffle with a fresh permutation every epoch (grain `shuffle().repeat()`),
batched, each process taking its slice of every global batch. Optional per-example
`transform(example, rng)` (augmentation, resampling) gets a numpy Generator seeded by
`(seed, position)`, the example's position (its slot) in the endless stream of batches: a new
draw every epoch, and the same draw when a resumed run reaches the same position. Repeated
augmentation (`repeats=r`, DeiT's RASampler): the stream holds every example of the shuffle `r`
times in consecutive slots (batches cut it at any slot, so `r` need not divide the batch), each
copy with its own position and so its own transform draw; a pass over the shuffle then takes
`r` times as many steps. Optional
`collate(examples) -> batch` pads variable-size examples (graphs, point sets) into a few
bucketed shapes (`pad_to_bucket`), so jit compiles a bounded number of times; the default
stacks. With several processes a collate sees the whole global batch (every process collates it
and keeps its rows), so that every process's rows have the same shapes. The iterator's state
(grain's, `{"next_index": k}`) goes into every checkpoint, so a resumed run sees the same
batches. `workers > 0` decodes in that many worker processes (grain `mp_prefetch`); 0 uses one
prefetch thread.

Evaluation: every example exactly once, in order; the last batch is padded with weight-0 copies
of the split's first example (LRA dropped it, so its reported counts were short). Each process
reads its own slice of every global batch; `workers > 0` decodes lazy sources in that many
worker processes (ImageNet's 50,000 validation JPEGs), in order.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

import grain
import numpy as np

__all__ = ["train_iterator", "eval_batches", "stack", "pad_to_bucket", "example_rng"]

Example = Mapping[str, np.ndarray]
Transform = Callable[[dict, np.random.Generator], dict]
Collate = Callable[[list], dict]


def example_rng(seed: int, position: int) -> np.random.Generator:
    """The Generator of the example at `position` of a stream seeded with `seed`."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, int(position)])


def stack(examples: Sequence[Example]) -> dict:
    """The default collate: stacks each field (examples of one shape)."""
    return {k: np.stack([e[k] for e in examples]) for k in examples[0]}


def pad_to_bucket(n: int, buckets: Sequence[int]) -> int:
    """The smallest bucket >= n (buckets ascending); n above the largest is an error."""
    for b in buckets:
        if n <= b:
            return int(b)
    raise ValueError(f"size {n} exceeds the largest bucket {buckets[-1]}")


def _load(source, idx, positions, seed, transform, collate) -> dict:
    if transform is None and collate is None and hasattr(source, "gather"):
        batch = source.gather(idx)  # in-memory arrays: one vectorised index per field
    else:
        examples = [dict(source[int(i)]) for i in idx]
        if transform is not None:
            examples = [
                transform(e, example_rng(seed, p)) for e, p in zip(examples, positions, strict=True)
            ]
        batch = (collate or stack)(examples)
    batch = dict(batch)
    if "weight" not in batch:
        batch["weight"] = np.ones(len(idx), np.float32)
    return batch


class _Repeated:
    """Slot s of the repeated stream -> example `stream[s // repeats]`; picklable."""

    def __init__(self, stream, repeats: int):
        self.stream, self.repeats = stream, repeats

    def __call__(self, slot: int) -> int:
        return self.stream[slot // self.repeats]


def _rows(source, idx, positions, seed, transform, collate, rows: slice) -> dict:
    """Rows `rows` of the batch of examples `idx`. A collate pads to a size taken from the whole
    batch (a bucket): with several processes, slices collated apart could get different shapes,
    and each process would run the step compiled for its own idea of the global shape (jax does
    not check). So each process collates the whole global batch and keeps its rows, loading and
    transforming every example of it (process-count times the data work, for collate tasks
    only). Without a collate, each loads only its rows."""
    if collate is None:
        return _load(source, idx[rows], positions[rows], seed, transform, collate)
    batch = _load(source, idx, positions, seed, transform, collate)
    return {k: v[rows] for k, v in batch.items()}


class _Loader:
    """`(batch index, global batch of example indices)` -> this process's batch; picklable, for
    grain worker processes."""

    def __init__(self, source, *, batch_size, local, process_index, seed, transform, collate):
        self.source, self.batch_size, self.local = source, batch_size, local
        self.process_index, self.seed = process_index, seed
        self.transform, self.collate = transform, collate

    def __call__(self, batch_index: int, idx: np.ndarray) -> dict:
        lo = self.process_index * self.local
        positions = batch_index * self.batch_size + np.arange(self.batch_size)
        rows = slice(lo, lo + self.local)
        return _rows(self.source, idx, positions, self.seed, self.transform, self.collate, rows)


def train_iterator(
    source,
    *,
    batch_size: int,
    seed: int,
    process_index: int = 0,
    process_count: int = 1,
    transform: Transform | None = None,
    collate: Collate | None = None,
    workers: int = 0,
    prefetch: int = 4,
    repeats: int = 1,
) -> grain.DatasetIterator:
    """An endless, checkpointable iterator of this process's share of each global batch of
    `batch_size` slots of the shuffled stream of `source`'s examples, each example in `repeats`
    consecutive slots (1: every example once per pass)."""
    if batch_size % process_count:
        raise ValueError(f"batch_size {batch_size} is not divisible by {process_count} processes")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    n = len(source)
    if n * repeats < batch_size:
        raise ValueError(
            f"the train split has {n} examples, fewer than one batch ({batch_size}) holds"
            + (f" with {repeats} repeats" if repeats > 1 else "")
        )
    local = batch_size // process_count
    ds = grain.MapDataset.range(n).shuffle(seed=seed).repeat()
    if repeats > 1:
        # Slot s holds example s // repeats of the shuffled stream (RASampler's index list).
        ds = grain.MapDataset.range(len(ds)).map(_Repeated(ds, repeats))
    ds = ds.batch(batch_size, drop_remainder=True)  # batch b: slots b*B .. b*B+B-1
    ds = ds.map_with_index(
        _Loader(
            source,
            batch_size=batch_size,
            local=local,
            process_index=process_index,
            seed=seed,
            transform=transform,
            collate=collate,
        )
    )
    if workers > 0:
        return _in_workers(ds, workers)
    options = grain.ReadOptions(num_threads=1 if prefetch else 0, prefetch_buffer_size=prefetch)
    return iter(ds.to_iter_dataset(options))


def _in_workers(ds: grain.MapDataset, workers: int) -> grain.DatasetIterator:
    """Iterates `ds` in order with its elements computed by `workers` processes (grain)."""
    from absl import flags

    if not flags.FLAGS.is_parsed():  # grain's workers read absl flags; we parse none
        flags.FLAGS.mark_as_parsed()
    it = ds.to_iter_dataset(grain.ReadOptions(num_threads=0, prefetch_buffer_size=0))
    options = grain.MultiprocessingOptions(num_workers=workers)
    return iter(it.mp_prefetch(options, worker_init_fn=_die_with_parent))


# How often a worker process looks whether its trainer is still there (seconds).
_PARENT_POLL_S = 0.5


def _die_with_parent(worker_index: int, worker_count: int) -> None:
    """Run in each grain worker process as it starts: a daemon thread ends the worker when
    the process that started it is gone (a SIGKILLed trainer cannot stop its workers, which
    would otherwise live on, adopted by init, each holding its decoded batches and keeping
    multiprocessing's resource tracker alive). Polling the parent id works wherever Python
    runs; Linux's PR_SET_PDEATHSIG would fire when the *thread* that started the worker ends,
    and grain starts its workers from helper threads."""
    del worker_index, worker_count
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="attnbench-parent-watch", daemon=True).start()


class _EvalLoader:
    """Global batch `b` of evaluation -> this process's rows, padded with weight-0 copies of
    example 0 past the split's end; picklable, for grain worker processes."""

    def __init__(self, source, *, batch_size, local, process_index, collate):
        self.source, self.batch_size, self.local = source, batch_size, local
        self.process_index, self.collate = process_index, collate

    def __call__(self, b: int) -> dict:
        n = len(self.source)
        idx = np.arange(b * self.batch_size, (b + 1) * self.batch_size)
        weight = (idx < n).astype(np.float32)
        idx = np.where(idx < n, idx, 0)
        rows = slice(self.process_index * self.local, (self.process_index + 1) * self.local)
        batch = _rows(self.source, idx, idx, 0, None, self.collate, rows)
        batch["weight"] = batch["weight"] * weight[rows]
        return batch


def eval_batches(
    source,
    *,
    batch_size: int,
    process_index: int = 0,
    process_count: int = 1,
    collate: Collate | None = None,
    workers: int = 0,
) -> Iterator[dict]:
    """Yields this process's share of padded global batches covering every example once:
    process `p` of `P` gets rows `p*B/P .. (p+1)*B/P - 1` of each global batch of `B`. With
    `workers > 0` a lazy source (one without `gather`, e.g. JPEG folders) is decoded by that
    many worker processes, in order; in-memory sources are gathered in this process."""
    if batch_size % process_count:
        raise ValueError(f"batch_size {batch_size} is not divisible by {process_count} processes")
    loader = _EvalLoader(
        source,
        batch_size=batch_size,
        local=batch_size // process_count,
        process_index=process_index,
        collate=collate,
    )
    num_batches = -(-len(source) // batch_size)
    if workers > 0 and not hasattr(source, "gather"):
        it = _in_workers(grain.MapDataset.range(num_batches).map(loader), workers)
        try:
            yield from it
        finally:
            it.close()  # its worker processes and shared memory, now, not at garbage collection
        return
    for b in range(num_batches):
        yield loader(b)
