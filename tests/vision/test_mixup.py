"""Tests of vision/mixup.py: Mixup / CutMix in timm's 'batch' mode and the soft-target loss,
checked through exact properties of the mixed batch (lambda read back from the targets) and a
float64 numpy reference."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnbench import tasks
from tests import tolerances
from vision import mixup

B, H, W, C, K = 8, 12, 10, 3, 16


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    images = rng.normal(size=(B, H, W, C)).astype(np.float32)
    # Distinct labels, so label i and label B-1-i differ and lambda can be read off the targets.
    labels = rng.permutation(K)[:B].astype(np.int32)
    return jnp.asarray(images), jnp.asarray(labels)


def _lam(targets, labels, smoothing):
    """Lambda from the targets: the weight at the own label is lam * on + (1 - lam) * off."""
    off = smoothing / K
    on = 1.0 - smoothing + off
    own = np.asarray(targets)[np.arange(B), np.asarray(labels)]
    return (own - off) / (on - off)


def test_one_hot_smooth_values():
    y = np.asarray(mixup.one_hot_smooth(jnp.array([3, 0]), K, 0.1))
    assert y.dtype == np.float32 and y.shape == (2, K)
    expected = np.full((2, K), 0.1 / K, np.float32)
    expected[0, 3] = expected[1, 0] = 1.0 - 0.1 + 0.1 / K  # 0.90625
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(mixup.one_hot_smooth(jnp.array([2]), 4), [[0, 0, 1, 0]])


N_KEYS = 300


@pytest.fixture(scope="module")
def runs():
    """DeiT's settings with `prob` 0.5, jitted and vmapped over 300 keys: (keys, images,
    labels, mixed [N, B, H, W, C], targets [N, B, K]). One compilation serves every test here
    (jax.random.beta's gamma sampler is slow to compile on a CPU)."""
    images, labels = _batch(3)
    keys = jax.random.split(jax.random.key(7), N_KEYS)
    f = functools.partial(mixup.mix, num_classes=K, prob=0.5)
    out, targets = jax.jit(jax.vmap(f, in_axes=(None, None, 0)))(images, labels, keys)
    return keys, np.asarray(images), np.asarray(labels), np.asarray(out), np.asarray(targets)


def _kinds(x, out, targets, labels):
    """Per key: unmixed (lambda 1), CutMix (every pixel its own or the reversed batch's),
    Mixup (the rest)."""
    smoothed = np.asarray(mixup.one_hot_smooth(labels, K, 0.1))
    unmixed = (targets == smoothed).all(axis=(1, 2))
    cut = ((out == x) | (out == x[::-1])).all(axis=(1, 2, 3, 4)) & ~unmixed
    return unmixed, cut, ~unmixed & ~cut


def test_apply_and_switch_probabilities_and_lambda_one_is_the_identity(runs):
    _, x, labels, out, targets = runs
    unmixed, cut, blend = _kinds(x, out, targets, labels)
    assert 0.4 < unmixed.mean() < 0.6  # prob 0.5 (binomial sd 0.03)
    assert 0.4 < cut.sum() / (~unmixed).sum() < 0.6  # switch_prob 0.5 among the mixed
    assert (out[unmixed] == x).all()  # lambda 1: the batch untouched, targets just smoothed
    np.testing.assert_allclose(targets.sum(-1), 1.0, rtol=1e-6)


def test_mixup_blends_with_the_reversed_batch(runs):
    _, x, labels, out, targets = runs
    _, _, blend = _kinds(x, out, targets, labels)
    y = np.asarray(mixup.one_hot_smooth(labels, K, 0.1), np.float64)
    x64 = x.astype(np.float64)
    lams = []
    for o, t in zip(out[blend], targets[blend], strict=True):
        lam = _lam(t, labels, 0.1)
        assert np.ptp(lam) < 1e-6 and 0 < lam[0] < 1  # one lambda for the whole batch
        lam = float(lam[0])
        tolerances.assert_close(o, lam * x64 + (1 - lam) * x64[::-1], rtol=1e-5, atol=1e-5)
        tolerances.assert_close(t, lam * y + (1 - lam) * y[::-1], rtol=1e-5, atol=1e-6)
        lams.append(lam)
    # Beta(0.8, 0.8) is symmetric about 1/2 (sd of the mean of ~75 draws: 0.036).
    assert len(lams) > 40 and abs(np.mean(lams) - 0.5) < 0.15


def test_cutmix_lambda_is_the_unreplaced_fraction(runs):
    _, x, labels, out, targets = runs
    _, cut, _ = _kinds(x, out, targets, labels)
    fractions = []
    for o, t in zip(out[cut], targets[cut], strict=True):
        kept = (o == x).all(-1)  # [B, H, W]
        assert (kept == kept[0]).all()  # one box for the whole batch
        box = ~kept[0]
        if box.any():
            rows, cols = np.flatnonzero(box.any(1)), np.flatnonzero(box.any(0))
            assert box.sum() == (rows[-1] - rows[0] + 1) * (cols[-1] - cols[0] + 1)  # a box
        np.testing.assert_allclose(_lam(t, labels, 0.1), kept[0].mean(), rtol=0, atol=1e-6)
        fractions.append(kept[0].mean())
    assert min(fractions) < 0.6 and len(set(fractions)) > 20


def test_jit_equals_no_jit_and_dtype(runs):
    keys, x, labels, out, targets = runs
    images = jnp.asarray(x)
    first = [int(np.flatnonzero(kind)[0]) for kind in _kinds(x, out, targets, labels)]
    for i in first:  # the first unmixed, CutMix and Mixup keys
        eager_out, eager_t = mixup.mix(images, labels, keys[i], num_classes=K, prob=0.5)
        tolerances.assert_close(out[i], eager_out, what="images")
        tolerances.assert_close(targets[i], eager_t, what="targets")
    # One method alone: mixup_alpha 0 only cuts, cutmix_alpha 0 only blends.
    for i in range(3):
        cut_out, _ = mixup.mix(images, labels, keys[i], num_classes=K, mixup_alpha=0.0)
        assert ((np.asarray(cut_out) == x) | (np.asarray(cut_out) == x[::-1])).all()
        blend_out, _ = mixup.mix(images, labels, keys[i], num_classes=K, cutmix_alpha=0.0)
        assert not (np.asarray(blend_out) == x).all(-1).any()
    out, targets = mixup.mix(images.astype(jnp.bfloat16), labels, keys[0], num_classes=K)
    assert out.dtype == jnp.bfloat16 and targets.dtype == jnp.float32
    with pytest.raises(ValueError, match="alpha"):
        mixup.mix(images, labels, keys[0], num_classes=K, mixup_alpha=0.0, cutmix_alpha=0.0)


def test_soft_target_loss_against_float64():
    """The loss the vision task trains mixed batches with (`attnbench.tasks.classification_loss`
    with `targets`, timm's `SoftTargetCrossEntropy`): the weighted mean of
    `-sum_c targets * log_softmax(logits)`; accuracy stays against the labels."""
    rng = np.random.default_rng(0)
    logits = rng.normal(scale=3.0, size=(5, 7)).astype(np.float32)
    targets = rng.dirichlet(np.ones(7), size=5).astype(np.float32)
    labels = np.array([1, 0, 6, 3, 3], np.int32)
    weight = np.array([1, 1, 1, 1, 0], np.float32)  # a padding example counts nothing
    l64 = logits.astype(np.float64)
    logz = (
        l64.max(-1, keepdims=True)
        + np.log(np.exp(l64 - l64.max(-1, keepdims=True)).sum(-1))[:, None]
    )
    per_example = -(targets.astype(np.float64) * (l64 - logz)).sum(-1)
    ref = (per_example * weight).sum() / weight.sum()
    loss, metrics = tasks.classification_loss(logits, labels, weight, targets=targets)
    assert loss.dtype == jnp.float32
    tolerances.assert_close(loss, ref)
    jitted = jax.jit(lambda *a: tasks.classification_loss(*a, targets=targets)[0])
    tolerances.assert_close(jitted(logits, labels, weight), ref)
    correct = (logits.argmax(-1) == labels) * weight
    assert float(metrics["accuracy"][0]) == correct.sum() and float(metrics["accuracy"][1]) == 4
    # One-hot targets: the ordinary cross-entropy, -log softmax at the label.
    onehot = np.eye(7, dtype=np.float32)[labels]
    hard = tasks.classification_loss(logits, labels, weight)[0]
    tolerances.assert_close(
        tasks.classification_loss(logits, labels, weight, targets=onehot)[0], hard
    )
    expected = (-(l64 - logz)[np.arange(5), labels] * weight).sum() / weight.sum()
    tolerances.assert_close(hard, expected)
    bf16 = tasks.classification_loss(
        jnp.asarray(logits, jnp.bfloat16), labels, weight, targets=targets
    )
    assert bf16[0].dtype == jnp.float32
