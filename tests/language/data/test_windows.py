"""Tests of language/data/windows.py: sliding evaluation windows score every target exactly once
with the documented context, image windows, and seeded, resumable training windows."""

from __future__ import annotations

import numpy as np
import pytest

from attnbench import errors
from attnbench.data import pipeline
from language.data import windows


def _expected_context(t: int, window: int, stride: int) -> int:
    """Tokens a scored target t sees (itself and those before it in its window), from the
    rule in the module docstring, computed by walking the windows one by one."""
    start = 0
    k = 0
    while True:
        first = 0 if k == 0 else window - stride  # first scored offset of window k
        if start + first <= t < start + window:
            return t - start + 1
        start += stride
        k += 1


@pytest.mark.parametrize(
    "n, window, stride",
    [(2, 4, 2), (5, 8, 3), (9, 8, 8), (10, 8, 3), (17, 4, 1), (33, 8, 3), (40, 6, 6), (64, 16, 5)],
)
def test_sliding_windows_score_every_target_once(n, window, stride):
    rng = np.random.default_rng(n)
    stream = rng.integers(0, 50, n).astype(np.uint16)
    sw = windows.SlidingWindows(stream, window, stride)
    scored = np.zeros(n - 1, np.int64)
    batch = sw.gather(np.arange(len(sw)))
    for k in range(len(sw)):
        ex = sw[k]
        for key in ("tokens", "targets", "mask"):
            np.testing.assert_array_equal(ex[key], batch[key][k])
        assert ex["tokens"].dtype == np.int32 and ex["mask"].dtype == np.float32
        start = k * stride
        for j in range(window):
            t = start + j  # input position; its target is stream[t + 1]
            if t < n - 1:
                assert ex["tokens"][j] == stream[t] and ex["targets"][j] == stream[t + 1]
            else:
                assert ex["tokens"][j] == 0 and ex["targets"][j] == 0 and ex["mask"][j] == 0
            if ex["mask"][j]:
                scored[t] += 1
                assert j + 1 == _expected_context(t, window, stride)
                assert j + 1 >= min(t + 1, window - stride + 1)
    np.testing.assert_array_equal(scored, 1)
    # No window is wasted: each scores at least one target.
    assert (batch["mask"].sum(1) > 0).all()


def test_sliding_windows_counts_by_hand():
    # 3,072 / 1,024 on 10,001 tokens (10,000 targets): 1 + ceil((10000 - 3072) / 1024) = 8.
    sw = windows.SlidingWindows(np.zeros(10_001, np.int32), 3072, 1024)
    assert len(sw) == 8
    m = sw.gather(np.arange(8))["mask"]
    assert m[0].sum() == 3072 and m[1].sum() == 1024 and m.sum() == 10_000
    # A stream shorter than a window: one padded window scoring all its targets.
    sw = windows.SlidingWindows(np.arange(5), 8, 2)
    assert len(sw) == 1
    np.testing.assert_array_equal(sw[0]["mask"], [1, 1, 1, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(sw[0]["targets"], [1, 2, 3, 4, 0, 0, 0, 0])


def test_sliding_windows_with_eval_batches_pad_with_weight_zero():
    sw = windows.SlidingWindows(np.arange(30), 8, 4)  # 29 targets: 1 + ceil(21/4) = 7 windows
    batches = list(pipeline.eval_batches(sw, batch_size=4))
    assert [b["tokens"].shape for b in batches] == [(4, 8), (4, 8)]
    np.testing.assert_array_equal(batches[1]["weight"], [1, 1, 1, 0])
    total = sum(float((b["mask"] * b["weight"][:, None]).sum()) for b in batches)
    assert total == 29


def test_sliding_windows_errors():
    with pytest.raises(errors.ConfigError, match="stride 5 > window 4"):
        windows.SlidingWindows(np.arange(10), 4, 5)
    with pytest.raises(errors.ConfigError, match="window must be an int"):
        windows.SlidingWindows(np.arange(10), 0, 1)
    with pytest.raises(errors.DataError, match="nothing to predict"):
        windows.SlidingWindows(np.arange(1), 4, 2)
    with pytest.raises(errors.DataError, match="1-D"):
        windows.SlidingWindows(np.zeros((2, 3), np.int32), 4, 2)


def test_image_windows_score_every_sub_pixel():
    images = np.array([[5, 6, 7, 8], [255, 0, 1, 2]], np.uint8)
    iw = windows.ImageWindows(images)
    b = iw.gather(np.arange(2))
    np.testing.assert_array_equal(b["tokens"], [[256, 5, 6, 7], [256, 255, 0, 1]])
    np.testing.assert_array_equal(b["targets"], images)
    np.testing.assert_array_equal(b["mask"], np.ones((2, 4)))
    np.testing.assert_array_equal(iw[1]["tokens"], [256, 255, 0, 1])
    assert len(iw) == 2


def _check_window(stream, ex, length):
    s = int(ex["start"])
    np.testing.assert_array_equal(ex["tokens"], stream[s : s + length])
    np.testing.assert_array_equal(ex["targets"], stream[s + 1 : s + length + 1])


def test_train_windows_tiles_and_random_offset():
    stream = np.arange(1000, 1103, dtype=np.int32)  # n = 103, length 10: 10 tiles, last start 92
    tw = windows.TrainWindows(stream, 10)
    assert len(tw) == 10 and tw.last_start == 92
    for i in range(10):
        assert int(tw[i]["start"]) == 10 * i
        _check_window(stream, tw[i], 10)
    starts = {i: set() for i in range(10)}
    for p in range(400):
        i = p % 10
        ex = tw.random_offset(tw[i], pipeline.example_rng(3, p))
        _check_window(stream, ex, 10)
        starts[i].add(int(ex["start"]))
    for i in range(9):
        assert starts[i] == set(range(10 * i, 10 * i + 10))  # every start of the bucket drawn
    assert starts[9] == {90, 91, 92}  # clipped to the last valid start
    # Same (seed, position) -> same window.
    a = tw.random_offset(tw[4], pipeline.example_rng(7, 123))
    b = tw.random_offset(tw[4], pipeline.example_rng(7, 123))
    assert int(a["start"]) == int(b["start"])
    with pytest.raises(errors.DataError, match="fewer than one training window"):
        windows.TrainWindows(np.arange(10), 10)


def test_random_windows_deterministic_in_seed_and_step():
    stream = np.arange(500, dtype=np.int32)
    a = windows.random_windows(stream, 16, 8, seed=1, step=5)
    b = windows.random_windows(stream, 16, 8, seed=1, step=5)
    c = windows.random_windows(stream, 16, 8, seed=1, step=6)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert not np.array_equal(a["start"], c["start"])
    assert a["start"].min() >= 0 and a["start"].max() <= 500 - 17
    for r in range(8):
        _check_window(stream, {k: v[r] for k, v in a.items()}, 16)


def test_train_iterator_over_windows_is_resumable():
    stream = np.random.default_rng(0).integers(0, 256, 400).astype(np.uint8)
    tw = windows.TrainWindows(stream, 12)  # 33 tiles

    def make():
        return pipeline.train_iterator(
            tw, batch_size=4, seed=11, transform=tw.random_offset, prefetch=0
        )

    it = make()
    first = [next(it) for _ in range(5)]
    state = it.get_state()
    rest = [next(it) for _ in range(12)]  # crosses an epoch boundary (33 tiles / 4)
    again = make()
    again.set_state(state)
    for x, y in zip(rest, [next(again) for _ in range(12)], strict=True):
        for key in ("tokens", "targets", "start"):
            np.testing.assert_array_equal(x[key], y[key])
    fresh = make()
    for x in first:
        np.testing.assert_array_equal(x["tokens"], next(fresh)["tokens"])
    for b in first + rest:
        assert b["tokens"].shape == (4, 12) and b["tokens"].dtype == np.int32
        for r in range(4):
            _check_window(stream, {k: v[r] for k, v in b.items()}, 12)
