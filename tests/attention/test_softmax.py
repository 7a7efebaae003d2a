"""softmax attention against a float64 numpy reference: masks, bias, gradients, jit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from tests.tolerances import assert_close


def reference(q, k, v, mask=None, bias=None):
    """Explicit-loop float64 softmax attention; fully masked rows give zeros."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    b, n, h, d = q.shape
    m = k.shape[1]
    mask = np.ones((b, h, n, m), bool) if mask is None else np.broadcast_to(mask, (b, h, n, m))
    bias = np.zeros((b, h, n, m)) if bias is None else np.broadcast_to(bias, (b, h, n, m))
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            for ni in range(n):
                keys = np.flatnonzero(mask[bi, hi, ni])
                if keys.size == 0:
                    continue
                logits = np.array(
                    [q[bi, ni, hi] @ k[bi, j, hi] / np.sqrt(d) + bias[bi, hi, ni, j] for j in keys]
                )
                p = np.exp(logits - logits.max())
                p /= p.sum()
                out[bi, ni, hi] = sum(pj * v[bi, j, hi] for pj, j in zip(p, keys, strict=True))
    return out


def _inputs(seed=0, b=2, n=5, m=7, h=3, d=4, dv=6):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(b, n, h, d))
    k = rng.normal(size=(b, m, h, d))
    v = rng.normal(size=(b, m, h, dv))
    return q, k, v


def _masks(b=2, n=5, m=7, h=3):
    rng = np.random.default_rng(1)
    padding = np.ones((b, m), bool)
    padding[0, 4:] = False
    full = rng.random((b, h, n, m)) > 0.4
    full[-1, -1, -1, :] = False  # one fully masked query row
    return {
        "none": None,
        "key_padding": padding,
        "full_4d": full,
        "broadcast": np.tril(np.ones((n, m), bool))[None, None],
    }


@pytest.mark.parametrize("mask_name", ["none", "key_padding", "full_4d", "broadcast"])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("use_jit", [False, True])
def test_matches_float64_reference(mask_name, with_bias, use_jit):
    q, k, v = _inputs()
    mask = _masks()[mask_name]
    bias = np.random.default_rng(2).normal(size=(2, 3, 5, 7)) if with_bias else None
    ref_mask = mask[:, None, None, :] if mask is not None and mask.ndim == 2 else mask
    expected = reference(q, k, v, ref_mask, bias)
    mech = attention.get("softmax")
    fn = jax.jit(mech.apply) if use_jit else mech.apply
    with jax.enable_x64(True):
        got64 = fn(
            {},
            jnp.asarray(q),
            jnp.asarray(k),
            jnp.asarray(v),
            mask=mask,
            bias=None if bias is None else jnp.asarray(bias),
        )
        assert got64.dtype == jnp.float64
        np.testing.assert_allclose(np.asarray(got64), expected, rtol=1e-10, atol=1e-12)
    got32 = fn(
        {},
        *(jnp.asarray(x, jnp.float32) for x in (q, k, v)),
        mask=mask,
        bias=None if bias is None else jnp.asarray(bias, jnp.float32),
    )
    assert_close(got32, expected, rtol=2e-5, atol=2e-5, what="float32 vs float64 reference")


def test_fully_masked_rows_are_zero_with_finite_gradients():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _inputs())
    mask = np.zeros((2, 7), bool)
    mask[1] = True  # batch 0: every key masked
    mech = attention.get("softmax")
    out = mech.apply({}, q, k, v, mask=mask)
    assert np.all(np.asarray(out[0]) == 0.0)
    assert np.all(np.isfinite(np.asarray(out)))
    grads = jax.grad(lambda q, k, v: mech.apply({}, q, k, v, mask=mask).sum(), (0, 1, 2))(q, k, v)
    for g in grads:
        assert np.all(np.isfinite(np.asarray(g)))
    assert np.all(np.asarray(grads[2][0]) == 0.0)  # masked values receive no gradient


def test_gradients_match_finite_differences_of_reference():
    q, k, v = _inputs(seed=3, b=1, n=4, m=5, h=2, d=3, dv=2)
    mask = _masks(b=1, n=4, m=5, h=2)["full_4d"]
    w = np.random.default_rng(4).normal(size=(1, 4, 2, 2))

    def ref_loss(q, k, v):
        return float((reference(q, k, v, mask) * w).sum())

    mech = attention.get("softmax")
    with jax.enable_x64(True):
        loss = lambda q, k, v: (mech.apply({}, q, k, v, mask=mask) * w).sum()
        grads = jax.jit(jax.grad(loss, (0, 1, 2)))(*(jnp.asarray(x) for x in (q, k, v)))
    eps = 1e-6
    for arg, (x, g) in enumerate(zip((q, k, v), grads, strict=True)):
        for idx in np.ndindex(x.shape):
            args = [q, k, v]
            plus, minus = x.copy(), x.copy()
            plus[idx] += eps
            minus[idx] -= eps
            args[arg] = plus
            fp = ref_loss(*args)
            args[arg] = minus
            fm = ref_loss(*args)
            np.testing.assert_allclose(g[idx], (fp - fm) / (2 * eps), rtol=1e-5, atol=1e-7)


def test_attention_dropout_is_keyed_and_inactive_at_eval():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _inputs())
    mech = attention.get("softmax", dropout_rate=0.5)
    eval_out = mech.apply({}, q, k, v)
    plain = attention.get("softmax").apply({}, q, k, v)
    assert_close(eval_out, plain, rtol=1e-6, atol=0, what="eval ignores dropout")
    a = mech.apply({}, q, k, v, key=jax.random.key(0), train=True)
    b = mech.apply({}, q, k, v, key=jax.random.key(0), train=True)
    c = mech.apply({}, q, k, v, key=jax.random.key(1), train=True)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    with pytest.raises(ValueError, match="needs `key`"):
        mech.apply({}, q, k, v, train=True)


def test_bad_shapes_and_masks_name_the_problem():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _inputs())
    mech = attention.get("softmax")
    with pytest.raises(ValueError, match="4-D"):
        mech.apply({}, q[0], k, v)
    with pytest.raises(ValueError, match="boolean"):
        mech.apply({}, q, k, v, mask=np.ones((2, 7)))
    with pytest.raises(ValueError, match="does not broadcast"):
        mech.apply({}, q, k, v, mask=np.ones((2, 3, 5, 6), bool))
