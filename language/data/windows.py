"""Model inputs from token streams and image sequences: training windows, sliding evaluation.

    train = windows.TrainWindows(corpus.splits["train"], length=3072)
    it = pipeline.train_iterator(train, batch_size=64, seed=0, transform=train.random_offset)
    val = windows.SlidingWindows(corpus.splits["val"], window=3072, stride=1024)
    for batch in pipeline.eval_batches(val, batch_size=8): ...      # attnbench.data.pipeline
    images = windows.ImageWindows(corpus.splits["train"])        # one window per image

Every example is a dict of `tokens` (int32 [N], the model's inputs), `targets` (int32 [N], the
next token of each input) and `mask` (float32 [N], 1 where the target is scored); a batch from
`attnbench.data.pipeline` adds `weight` ([B], 0 for the padding copies that fill the last
evaluation batch). A stream of n tokens has n - 1 targets: position t predicts ``stream[t + 1]``
from ``stream[:t + 1]``; the first token is only context (prepend a start symbol to score it too,
as fairseq's ``</s>``-initial blocks do).

Training (`TrainWindows`, `random_windows`)
-------------------------------------------
Windows of ``length + 1`` consecutive tokens (inputs and targets shifted by one). Choice made
for the trainer: `TrainWindows` is a random-access dataset (grain's protocol, as
`attnbench.data.pipeline.train_iterator` expects) of the ``T = (n - 1) // length`` tiles of a
fixed non-overlapping tiling (fairseq's ``TokenBlockDataset`` with ``break_mode="none"`` blocks
the stream the same way; the trainer's epoch shuffle then orders them). Its `random_offset`
transform moves tile i's start to a uniformly random position in
``[i * length, min((i + 1) * length, n - 1 - length)]``: together the tiles' draws cover every
valid start, so over epochs the model sees windows at every alignment, not only the tiling's.
The transform draws from the Generator `attnbench.data.pipeline` derives from
``(seed, position in the stream of batches)``, and the iterator's state is checkpointed, so a
resumed run sees exactly the same windows (tested). (A per-epoch offset of the whole tiling
would need the epoch number, which a grain transform does not receive.)
`random_windows(stream, length, batch, seed, step)` is the same idea without the trainer:
uniformly random starts, a pure function of ``(seed, step)``.

Evaluation (`SlidingWindows`)
-----------------------------
Windows of ``window`` inputs starting every ``stride`` tokens (window 3,072 / stride 1,024 in
SSA's WikiText-103 evaluation: input length 3072, "sliding window inference (overlap length
2048)", arXiv:2306.01705, Sec. 4.1; i.e. fairseq
``--tokens-per-sample 3072 --context-window 2048``). Every target is scored exactly once, with
the most left context the windows give it: window 0 (inputs ``stream[0:window]``) scores all its
targets, so target t < window sees t + 1 tokens (itself and all before it); window k >= 1
(inputs ``stream[k*stride : k*stride + window]``) scores only its last ``stride`` targets, so
each of those sees between ``window - stride + 1`` and ``window`` tokens. fairseq's eval-lm
scores the same tokens with the same contexts (its blocks of ``stride`` tokens each get up to
``window - stride`` tokens of context, so a token t < window also sees all t tokens before
it). The last window is padded past the end of the stream (tokens and targets 0, mask 0); a
stream shorter than one window gives one padded window. Windows are cut lazily
(``__getitem__`` / vectorised ``gather``), so a 5M-byte split costs no extra memory.

Images (`ImageWindows`)
-----------------------
One window per image of D sub-pixels: ``tokens = [start, x_0, ..., x_{D-2}]``,
``targets = [x_0, ..., x_{D-1}]``, every position scored, so bits per dim averages over all D
values. The start symbol is ``start_token`` (default 256, one past the 256 pixel values: the
input vocabulary is 257, the output vocabulary 256).
"""

from __future__ import annotations

import numpy as np

from attnbench import errors

__all__ = ["TrainWindows", "RandomOffset", "random_windows", "SlidingWindows", "ImageWindows"]


def _stream(stream, what: str) -> np.ndarray:
    stream = np.asarray(stream)
    if stream.ndim != 1:
        raise errors.DataError(f"{what}: expected a 1-D token stream, got shape {stream.shape}")
    if not np.issubdtype(stream.dtype, np.integer):
        raise errors.DataError(f"{what}: expected integer token ids, got {stream.dtype}")
    return stream


def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise errors.ConfigError(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


def _cut(stream: np.ndarray, starts: np.ndarray, length: int) -> dict[str, np.ndarray]:
    """Windows at `starts` (all complete): tokens/targets int32 [len(starts), length]."""
    idx = np.asarray(starts, np.int64)[..., None] + np.arange(length + 1)
    block = stream[idx].astype(np.int32)
    return {
        "tokens": block[..., :-1],
        "targets": block[..., 1:],
        "mask": np.ones(block[..., 1:].shape, np.float32),
    }


# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------


class TrainWindows:
    """The tiles of a stream as a random-access training dataset (see the module docstring).

    Example i: the window starting at ``i * length`` (``tokens``, ``targets``, ``mask`` and
    ``start``, int32: the stream position of its first input); `random_offset` (a
    `Data.transform`) re-draws its start.
    """

    def __init__(self, stream, length: int, *, what: str = "train split"):
        self.stream = _stream(stream, what)
        self.length = _positive("length", length)
        if len(self.stream) < self.length + 1:
            raise errors.DataError(
                f"{what}: {len(self.stream)} tokens, fewer than one training window of "
                f"{self.length} + 1; use a shorter sequence length"
            )
        if len(self.stream) >= 1 << 31:
            raise errors.DataError(f"{what}: {len(self.stream)} tokens; at most 2^31 - 1 fit")
        self.last_start = len(self.stream) - 1 - self.length  # the largest valid start
        self.count = (len(self.stream) - 1) // self.length

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> dict[str, np.ndarray]:
        i = int(i)
        if not 0 <= i < self.count:
            raise IndexError(f"window {i} of {self.count}")
        out = _cut(self.stream, np.int64(i * self.length), self.length)
        out["start"] = np.int32(i * self.length)
        return out

    def gather(self, idx) -> dict[str, np.ndarray]:
        starts = np.asarray(idx, np.int64) * self.length
        out = _cut(self.stream, starts, self.length)
        out["start"] = starts.astype(np.int32)
        return out

    @property
    def random_offset(self) -> RandomOffset:
        return RandomOffset(self)


class RandomOffset:
    """`transform(example, rng)`: tile ``start // length`` re-drawn uniformly in
    ``[start, min(start + length - 1, last_start)]``; picklable (grain workers)."""

    def __init__(self, windows: TrainWindows):
        self.windows = windows

    def __call__(self, example: dict, rng: np.random.Generator) -> dict:
        w = self.windows
        lo = int(example["start"]) // w.length * w.length
        hi = min(lo + w.length - 1, w.last_start)
        start = int(rng.integers(lo, hi + 1))
        out = _cut(w.stream, np.int64(start), w.length)
        out["start"] = np.int32(start)
        return out


def random_windows(stream, length: int, batch_size: int, seed: int, step: int) -> dict:
    """Batch `step` of a seeded stream of training windows with uniformly random starts in
    ``[0, n - 1 - length]``: a pure function of ``(seed, step)`` (a resumed run passes the
    step it resumes at). Returns tokens, targets (int32 [B, length]), mask and start [B]."""
    stream = _stream(stream, "stream")
    length, batch_size = _positive("length", length), _positive("batch_size", batch_size)
    last = len(stream) - 1 - length
    if last < 0:
        raise errors.DataError(
            f"stream: {len(stream)} tokens, fewer than one window of {length} + 1"
        )
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, int(step)])
    starts = rng.integers(0, last + 1, size=batch_size)
    out = _cut(stream, starts, length)
    out["start"] = starts.astype(np.int32)
    return out


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


class SlidingWindows:
    """Sliding evaluation windows of a stream (see the module docstring): example k has
    ``tokens``, ``targets`` (int32 [window], 0 past the end) and ``mask`` (float32 [window],
    1 on the targets this window scores)."""

    def __init__(self, stream, window: int, stride: int, *, what: str = "evaluation split"):
        self.stream = _stream(stream, what)
        self.window = _positive("window", window)
        self.stride = _positive("stride", stride)
        if self.stride > self.window:
            raise errors.ConfigError(
                f"stride {self.stride} > window {self.window}: tokens between windows would "
                "never be scored"
            )
        self.targets = len(self.stream) - 1  # m: positions 0..m-1 predict stream[1..m]
        if self.targets < 1:
            raise errors.DataError(f"{what}: {len(self.stream)} tokens, nothing to predict")
        extra = max(self.targets - self.window, 0)
        self.count = 1 + -(-extra // self.stride)

    def __len__(self) -> int:
        return self.count

    def starts(self) -> np.ndarray:
        """int64 [count]: the stream position of each window's first input."""
        return np.arange(self.count, dtype=np.int64) * self.stride

    def gather(self, idx) -> dict[str, np.ndarray]:
        idx = np.asarray(idx, np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self.count):
            raise IndexError(f"windows {idx.tolist()} of {self.count}")
        pos = (idx * self.stride)[..., None] + np.arange(self.window)  # input positions
        inside = pos < self.targets
        safe = np.where(inside, pos, 0)
        tokens = np.where(inside, self.stream[safe], 0).astype(np.int32)
        targets = np.where(inside, self.stream[safe + 1], 0).astype(np.int32)
        scored = (np.arange(self.window) >= self.window - self.stride) | (idx[..., None] == 0)
        return {"tokens": tokens, "targets": targets, "mask": (inside & scored).astype(np.float32)}

    def __getitem__(self, k: int) -> dict[str, np.ndarray]:
        return self.gather(np.int64(k))


class ImageWindows:
    """One window per image: tokens ``[start_token, x_0 .. x_{D-2}]``, targets ``x``, all
    scored. `images`: uint8 [n, D] sub-pixel sequences."""

    def __init__(self, images, *, start_token: int = 256, what: str = "image split"):
        images = np.asarray(images)
        if images.ndim != 2 or images.shape[1] < 1 or not np.issubdtype(images.dtype, np.integer):
            raise errors.DataError(
                f"{what}: expected integer sequences [n, D], got {images.dtype} {images.shape}"
            )
        self.images, self.start_token = images, int(start_token)

    def __len__(self) -> int:
        return len(self.images)

    def gather(self, idx) -> dict[str, np.ndarray]:
        x = self.images[np.asarray(idx, np.int64)].astype(np.int32)
        start = np.full((*x.shape[:-1], 1), self.start_token, np.int32)
        return {
            "tokens": np.concatenate([start, x[..., :-1]], axis=-1),
            "targets": x,
            "mask": np.ones(x.shape, np.float32),
        }

    def __getitem__(self, i: int) -> dict[str, np.ndarray]:
        return self.gather(np.int64(i))
