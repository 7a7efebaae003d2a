"""LRA schedules against their closed forms; the grain pipelines' coverage and state."""

import ml_collections
import numpy as np
import pytest

from core import data, optim, tasks


def _sched(name, warmup=1000, lr=0.05):
    cfg = ml_collections.ConfigDict(
        dict(name=name, warmup_steps=warmup, steps_per_cycle=0, end_factor=0.0)
    )
    return optim.make_schedule(cfg, lr, total_steps=5000)


@pytest.mark.parametrize("step", [0, 1, 500, 999, 1000, 1001, 4000])
def test_lra_rsqrt_schedule_matches_closed_form(step):
    expected = 0.05 * min(1.0, step / 1000) / np.sqrt(max(step, 1000))
    got = float(_sched("constant*linear_warmup*rsqrt_decay")(step))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-12)


def test_lra_cosine_and_optax_warmup_cosine():
    f = _sched("constant*linear_warmup*cosine_decay", warmup=100, lr=1.0)
    np.testing.assert_allclose(float(f(50)), 0.5, rtol=1e-6)
    np.testing.assert_allclose(float(f(100)), 1.0, rtol=1e-6)
    np.testing.assert_allclose(float(f(100 + 4900 // 2)), 0.5, atol=1e-3)
    g = _sched("warmup_cosine", warmup=100, lr=2.0)
    np.testing.assert_allclose(float(g(100)), 2.0, rtol=1e-6)
    assert float(g(5000)) == pytest.approx(0.0, abs=1e-6)


def test_unknown_schedule_factor():
    with pytest.raises(ValueError, match=r"config.schedule.name=.*unknown factor"):
        _sched("constant*rsqrt_decy")


def _split(n=50):
    return tasks.Split({"x": np.arange(n) * 10, "label": np.arange(n) % 3})


def test_train_iterator_reshuffles_each_epoch_and_restores_its_position():
    it = data.train_iterator(_split(), batch_size=10, seed=0)
    epoch1 = np.concatenate([next(it)["x"] for _ in range(5)])
    epoch2 = np.concatenate([next(it)["x"] for _ in range(5)])
    assert sorted(epoch1) == sorted(epoch2) == list(range(0, 500, 10))
    assert not np.array_equal(epoch1, epoch2)
    state = it.get_state()
    expected = [next(it)["x"] for _ in range(3)]
    again = data.train_iterator(_split(), batch_size=10, seed=0)
    again.set_state(state)
    for want in expected:
        np.testing.assert_array_equal(next(again)["x"], want)


def test_train_iterator_shards_processes_disjointly():
    parts = [
        data.train_iterator(_split(), batch_size=10, seed=0, process_index=i, process_count=2)
        for i in range(2)
    ]
    whole = data.train_iterator(_split(), batch_size=10, seed=0)
    for _ in range(4):
        a, b, w = next(parts[0])["x"], next(parts[1])["x"], next(whole)["x"]
        np.testing.assert_array_equal(np.concatenate([a, b]), w)


def test_eval_batches_cover_every_example_once_with_padding_weights():
    batches = list(data.eval_batches(_split(23), batch_size=10))
    assert len(batches) == 3
    weights = np.concatenate([b["weight"] for b in batches])
    xs = np.concatenate([b["x"] for b in batches])[weights > 0]
    np.testing.assert_array_equal(xs, np.arange(23) * 10)
    assert weights.sum() == 23 and len(weights) == 30
