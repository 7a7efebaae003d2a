"""Schedules against their closed forms (LRA's factors, EGT's quarter-period cosine, the named
warm-up schedules with their first and final lr); the grain pipelines' coverage and state."""

import ml_collections
import numpy as np
import optax
import pytest

from attnbench import errors, optim, tasks
from attnbench.data import pipeline


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


def test_piecewise_constant_step_drop():
    """HD-VPD's 3e-4 until step 1000, then 1e-4 (configs/pointcloud/dynamics.py), and two drops
    compounding as optax.piecewise_constant_schedule's do."""
    from attnbench import config as config_lib

    c = config_lib.load("pointcloud/dynamics.py")
    f = optim.make_schedule(c.schedule, c.optimizer.lr, total_steps=c.total_steps)
    for step, lr in ((0, 3e-4), (999, 3e-4), (1000, 1e-4), (99_999, 1e-4)):
        np.testing.assert_allclose(float(f(step)), lr, rtol=1e-6)
    cfg = ml_collections.ConfigDict(
        dict(name="constant*piecewise_constant", warmup_steps=0, boundaries=(10, 20),
             scales=(0.5, 0.1))
    )  # fmt: skip
    g = optim.make_schedule(cfg, 2.0, total_steps=100)
    ref = optax.piecewise_constant_schedule(2.0, {10: 0.5, 20: 0.1})
    for step in (0, 9, 10, 19, 20, 99):
        np.testing.assert_allclose(float(g(step)), float(ref(step)), rtol=1e-6)
    for bad in (dict(boundaries=(), scales=()), dict(boundaries=(5, 3), scales=(1, 1)),
                dict(boundaries=(5,), scales=(1, 1))):  # fmt: skip
        with cfg.unlocked():
            cfg.update(bad)
        with pytest.raises(errors.ConfigError, match="piecewise_constant needs increasing"):
            optim.make_schedule(cfg, 1.0, total_steps=100)
    cpu = config_lib.load("pointcloud/dynamics.py:preset=cpu")  # short_run drops it
    assert cpu.schedule.name == "constant*linear_warmup" and cpu.schedule.boundaries == ()


def _named(name, *, start=0.0, end=0.0, warmup=100, total=1100):
    cfg = ml_collections.ConfigDict(
        dict(name=name, warmup_steps=warmup, steps_per_cycle=0, start_factor=start,
             end_factor=end)
    )  # fmt: skip
    return optim.make_schedule(cfg, 2.0, total_steps=total)


@pytest.mark.parametrize("step", [0, 1, 50, 99, 100, 101, 600, 1099, 1100, 1500])
def test_warmup_cosine_start_and_end_factors_match_closed_form(step):
    """Warm-up linear from lr * start_factor (timm's warmup_lr) to lr in 100 steps, then a
    half-period cosine to lr * end_factor (timm's min_lr) at step 1100, held after."""
    lr, lo, hi = 2.0, 2.0 * 0.01, 2.0 * 0.1
    if step < 100:
        expected = lo + (lr - lo) * step / 100
    else:
        p = min((step - 100) / 1000, 1.0)
        expected = hi + (lr - hi) * 0.5 * (1 + np.cos(np.pi * p))
    got = float(_named("warmup_cosine", start=0.01, end=0.1)(step))
    np.testing.assert_allclose(got, expected, rtol=1e-5)


@pytest.mark.parametrize("step", [0, 1, 50, 99, 100, 101, 600, 1099, 1100, 1500])
def test_warmup_linear_matches_closed_form(step):
    """The same warm-up, then a straight line to lr * end_factor at step 1100, held after."""
    lr, lo, hi = 2.0, 2.0 * 0.05, 2.0 * 0.5
    if step < 100:
        expected = lo + (lr - lo) * step / 100
    else:
        expected = lr + (hi - lr) * min((step - 100) / 1000, 1.0)
    got = float(_named("warmup_linear", start=0.05, end=0.5)(step))
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("step", [0, 30, 100, 350, 2550, 4999, 5000, 5300])
def test_quarter_cosine_decay_is_egts_warmup_and_cosine(step):
    """EGT's TF WarmUpAndCosine (min_lr 0): lr * cos(pi/2 * progress) after the warm-up, a
    quarter period from the peak to 0 at the last step (not 0.5 * (1 + cos(pi * progress)))."""
    f = _sched("constant*linear_warmup*quarter_cosine_decay", warmup=100, lr=2.0)
    expected = 2.0 * min(step / 100, 1.0)
    if step > 100:
        expected *= np.cos(0.5 * np.pi * min((step - 100) / 4900, 1.0))
    np.testing.assert_allclose(float(f(step)), expected, rtol=1e-5, atol=1e-6)  # float32


def test_start_factor_outside_unit_interval_is_an_error():
    with pytest.raises(errors.ConfigError, match=r"config.schedule.start_factor=1.5"):
        _named("warmup_cosine", start=1.5)


def _split(n=50):
    return tasks.Split({"x": np.arange(n) * 10, "label": np.arange(n) % 3})


def test_train_iterator_reshuffles_each_epoch_and_restores_its_position():
    it = pipeline.train_iterator(_split(), batch_size=10, seed=0)
    epoch1 = np.concatenate([next(it)["x"] for _ in range(5)])
    epoch2 = np.concatenate([next(it)["x"] for _ in range(5)])
    assert sorted(epoch1) == sorted(epoch2) == list(range(0, 500, 10))
    assert not np.array_equal(epoch1, epoch2)
    state = it.get_state()
    expected = [next(it)["x"] for _ in range(3)]
    again = pipeline.train_iterator(_split(), batch_size=10, seed=0)
    again.set_state(state)
    for want in expected:
        np.testing.assert_array_equal(next(again)["x"], want)


def test_train_iterator_shards_processes_disjointly():
    parts = [
        pipeline.train_iterator(_split(), batch_size=10, seed=0, process_index=i, process_count=2)
        for i in range(2)
    ]
    whole = pipeline.train_iterator(_split(), batch_size=10, seed=0)
    for _ in range(4):
        a, b, w = next(parts[0])["x"], next(parts[1])["x"], next(whole)["x"]
        np.testing.assert_array_equal(np.concatenate([a, b]), w)


def test_eval_batches_cover_every_example_once_with_padding_weights():
    batches = list(pipeline.eval_batches(_split(23), batch_size=10))
    assert len(batches) == 3
    weights = np.concatenate([b["weight"] for b in batches])
    xs = np.concatenate([b["x"] for b in batches])[weights > 0]
    np.testing.assert_array_equal(xs, np.arange(23) * 10)
    assert weights.sum() == 23 and len(weights) == 30


# ---- lazy sources, per-example transforms and collate (tests/toy/task.py: variable-size sets)


def _toy(n=40, seed=0):
    from tests.toy import task as toy

    return toy, toy.Sets(n, seed)


def _toy_iter(sets, toy, **kw):
    kw = {"batch_size": 8, "seed": 3, "transform": toy.permute, "collate": toy.collate, **kw}
    return pipeline.train_iterator(sets, **kw)


def test_transform_draws_per_stream_position_and_resume_replays_it():
    toy, sets = _toy()
    it = _toy_iter(sets, toy)
    first = [next(it) for _ in range(12)]  # 96 positions: more than two epochs of 40
    # every set appears as a permutation of itself; across epochs the draws differ
    seen: dict = {}
    order = pipeline.train_iterator(tasks.Split({"i": np.arange(40)}), batch_size=8, seed=3)
    for b in first:
        ids = next(order)["i"]
        for row, i in enumerate(ids):
            got = b["tokens"][row][b["tokens"][row] != 0]
            np.testing.assert_array_equal(np.sort(got), np.sort(sets[i]["tokens"]))
            seen.setdefault(int(i), []).append(tuple(got))
    assert any(len(set(v)) > 1 for v in seen.values() if len(v) > 1)
    # resuming from a saved state gives the same batches, transforms included
    again = _toy_iter(sets, toy)
    for _ in range(5):
        next(again)
    state = again.get_state()
    resumed = _toy_iter(sets, toy)
    resumed.set_state(state)
    for b in first[5:]:
        r = next(resumed)
        for k in b:
            np.testing.assert_array_equal(r[k], b[k])


def test_collate_pads_to_a_bounded_set_of_shapes():
    toy, sets = _toy(200)
    it = _toy_iter(sets, toy)
    shapes = {next(it)["tokens"].shape for _ in range(50)}
    assert shapes <= {(8, b) for b in toy.BUCKETS}
    with pytest.raises(ValueError, match="exceeds the largest bucket 24"):
        pipeline.pad_to_bucket(25, toy.BUCKETS)


def test_processes_split_each_batch_and_transforms_agree_with_one_process():
    toy, sets = _toy()
    parts = [
        _toy_iter(sets, toy, collate=toy.collate, process_index=i, process_count=2)
        for i in range(2)
    ]
    full = _toy_iter(sets, toy)
    for _ in range(3):
        a, b, w = next(parts[0]), next(parts[1]), next(full)
        for ex_a, ex_w in zip(list(a["tokens"]) + list(b["tokens"]), w["tokens"], strict=True):
            np.testing.assert_array_equal(ex_a[ex_a != 0], ex_w[ex_w != 0])


def test_eval_batches_with_collate_count_every_example_once():
    toy, sets = _toy(37)
    batches = list(pipeline.eval_batches(sets, batch_size=16, collate=toy.collate))
    weights = np.concatenate([b["weight"] for b in batches])
    assert weights.sum() == 37 and len(weights) == 48
    labels = np.concatenate([b["label"] for b in batches])[weights > 0]
    np.testing.assert_array_equal(labels, [sets[i]["label"] for i in range(37)])


def test_worker_processes_give_the_same_batches():
    toy, sets = _toy()
    threads = _toy_iter(sets, toy)
    workers = _toy_iter(sets, toy, workers=2)
    for _ in range(6):
        a, b = next(threads), next(workers)
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    # evaluation of a lazy source (no `gather`) in worker processes: the same batches, in order
    toy, sets = _toy(37)
    assert not hasattr(sets, "gather")
    inline = list(pipeline.eval_batches(sets, batch_size=16, collate=toy.collate))
    pooled = list(pipeline.eval_batches(sets, batch_size=16, collate=toy.collate, workers=2))
    assert len(inline) == len(pooled) == 3
    for a, b in zip(inline, pooled, strict=True):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


def _optimizer_config(decay_on: str, weight_decay: float = 0.5):
    c = ml_collections.ConfigDict()
    c.optimizer = ml_collections.ConfigDict(
        dict(
            name="adamw",
            lr=0.1,
            b1=0.9,
            b2=0.999,
            eps=1e-8,
            weight_decay=weight_decay,
            grad_clip_norm=0.0,
            decay_on=decay_on,
        )
    )
    c.schedule = ml_collections.ConfigDict(
        dict(name="constant", warmup_steps=0, steps_per_cycle=0, end_factor=0.0)
    )
    return c


def test_weight_decay_on_kernels_only_leaves_biases_norms_and_tokens_alone():
    import jax.numpy as jnp

    params = {
        "dense": {"kernel": jnp.ones((2, 3)), "bias": jnp.ones((3,))},
        "norm": {"scale": jnp.ones((3,)), "bias": jnp.ones((3,))},
        "pos_embedding": jnp.ones((4, 3)),
        "cls": jnp.ones((1, 1, 3)),
        "attn": {"query": {"kernel": jnp.ones((3, 2, 2)), "bias": jnp.ones((2, 2))}},
    }
    mask = optim.decay_mask(params, "kernels")
    assert mask["dense"] == {"kernel": True, "bias": False}
    assert mask["norm"] == {"scale": False, "bias": False}
    assert mask["pos_embedding"] is False and mask["cls"] is False
    assert mask["attn"]["query"] == {"kernel": True, "bias": False}
    # with zero gradients, AdamW moves exactly the decayed parameters, by lr * wd * value
    for decay_on, moved in (("kernels", {"kernel"}), ("all", None)):
        opt, _ = optim.make_optimizer(_optimizer_config(decay_on), 10)
        zeros = {k: np.zeros_like(v) for k, v in params["dense"].items()}
        updates, _ = opt.update(zeros, opt.init(params["dense"]), params["dense"])
        for name, u in updates.items():
            decayed = moved is None or name in moved
            np.testing.assert_allclose(u, -0.05 * np.ones_like(u) if decayed else 0.0)
    with pytest.raises(errors.ConfigError, match="decay_on='biases'"):
        optim.make_optimizer(_optimizer_config("biases"), 10)
