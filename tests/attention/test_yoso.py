"""Property tests of YOSO-E (attention/yoso.py): the weights are LSH collision probabilities in
[0, 1], 1 along the query's direction, matching a Monte-Carlo hash estimate; the l2-normalised
output; the authors' surrogate gradient; masks; jit; float32 vs float64; errors. The table
checks (every mask kind, finite-difference gradients of grad="exact") are in test_table.py
(ref_yoso.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import yoso
from tests.attention.ref_yoso import yoso_reference
from tests.tolerances import assert_close


def _qkv(seed=0, b=2, n=7, m=None, h=2, d=4, dv=3):
    rng = np.random.default_rng(seed)
    m = n if m is None else m
    return (
        rng.normal(size=(b, n, h, d)),
        rng.normal(size=(b, m, h, d)),
        rng.normal(size=(b, m, h, dv)),
    )


def _f64(*xs):
    return tuple(jnp.asarray(x, jnp.float64) for x in xs)


def test_weights_are_probabilities_equal_to_one_along_the_query():
    q, k, _ = _qkv(n=9)
    k[:, 3] = q[:, 3] * 2.5  # same direction, another length
    k[:, 5] = -q[:, 5]  # opposite direction
    with jax.enable_x64(True):
        w = np.asarray(yoso.weights(*_f64(q, k), 10))  # [B, H, N, M]
    assert np.all(w >= 0) and np.all(w <= 1)
    # arccos near 1 turns one rounding of q^.k^ (1e-16) into ~1e-8: 1 up to that
    np.testing.assert_allclose(w[:, :, 3, 3], 1.0, rtol=1e-6)
    np.testing.assert_allclose(w[:, :, 5, 5], 0.0, atol=1e-12)
    off = w[:, :, 3, [0, 1, 2, 4, 6, 7, 8]]
    assert np.all(off < 1 - 1e-3)


def test_weights_equal_the_collision_rate_of_random_hyperplane_hashes():
    """(1 - theta/pi)^tau is the probability that tau random hyperplanes all put q and k on the
    same side (Sec. 3): a Monte-Carlo estimate agrees."""
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(1, 1, 1, 5)), rng.normal(size=(1, 1, 1, 5))
    k = k + 1.5 * q  # a moderately close pair
    tau, trials = 4, 200_000
    planes = rng.normal(size=(trials, tau, 5))
    same = ((planes @ q[0, 0, 0] > 0) == (planes @ k[0, 0, 0] > 0)).all(1).mean()
    with jax.enable_x64(True):
        w = float(yoso.weights(*_f64(q, k), tau)[0, 0, 0, 0])
    assert abs(same - w) < 4 * np.sqrt(w * (1 - w) / trials)


def test_output_rows_have_unit_norm_and_match_the_reference():
    q, k, v = _qkv(n=11, m=6)
    pad = np.ones((2, 6), bool)
    pad[0, 4:] = False
    with jax.enable_x64(True):
        out = np.asarray(jax.jit(attention.get("yoso").apply)({}, *_f64(q, k, v), mask=pad))
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1.0, rtol=1e-12)
    want = yoso_reference({}, q, k, v, np.broadcast_to(pad[:, None, None], (2, 2, 11, 6)), tau=10)
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-12)


def test_surrogate_gradient_is_the_authors_formula():
    """grad="surrogate": d w / d x := (tau/2) w (mlpen/YOSO Cumulation.backward), through the
    unit normalisation of q and k; the exact gradient differs."""
    q, k, v = _qkv(n=5, h=1, d=3, dv=2)
    tau = 6
    g_out = np.random.default_rng(4).normal(size=(2, 5, 1, 2))

    def loss_y(qq, kk, grad):  # before the output normalisation: sum g . (W V)
        w = yoso.weights(qq, kk, tau, grad)
        return jnp.sum(jnp.einsum("bhnm,bmhe->bnhe", w, jnp.asarray(v)) * g_out)

    with jax.enable_x64(True):
        gq, gk = jax.grad(lambda a, b: loss_y(a, b, "surrogate"), (0, 1))(*_f64(q, k))
        eq, _ = jax.grad(lambda a, b: loss_y(a, b, "exact"), (0, 1))(*_f64(q, k))
    # By hand: with u = q/|q|, c = k/|k|, G_ij = (g_i . v_j) w_ij (tau/2):
    # dL/du_i = sum_j G_ij c_j, dL/dq_i = (I - u u^T) dL/du_i / |q_i| (and symmetrically for k).
    for bi in range(2):
        qb, kb, vb, gb = q[bi, :, 0], k[bi, :, 0], v[bi, :, 0], g_out[bi, :, 0]
        u = qb / np.linalg.norm(qb, axis=1, keepdims=True)
        c = kb / np.linalg.norm(kb, axis=1, keepdims=True)
        w = (1 - np.arccos(np.clip(u @ c.T, -1, 1)) / np.pi) ** tau
        big_g = (gb @ vb.T) * w * tau / 2
        du, dc = big_g @ c, big_g.T @ u
        want_q = [
            (np.eye(3) - np.outer(u[i], u[i])) @ du[i] / np.linalg.norm(qb[i]) for i in range(5)
        ]
        want_k = [
            (np.eye(3) - np.outer(c[j], c[j])) @ dc[j] / np.linalg.norm(kb[j]) for j in range(5)
        ]
        np.testing.assert_allclose(np.asarray(gq)[bi, :, 0], want_q, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(gk)[bi, :, 0], want_k, rtol=1e-10, atol=1e-12)
    assert not np.allclose(gq, eq)


def test_gradients_stay_finite_when_a_key_is_parallel_to_its_query():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(n=6))
    k = k.at[:, 2].set(q[:, 2])  # x = 1: the exact derivative is unbounded there
    for grad in ("surrogate", "exact"):
        mech = attention.get("yoso", grad=grad)
        g = jax.grad(lambda q, k, v, m=mech: m.apply({}, q, k, v).sum(), (0, 1, 2))(q, k, v)
        assert all(np.isfinite(np.asarray(x)).all() for x in g), grad


def test_full_4d_mask_and_fully_masked_rows():
    q, k, v = _qkv(n=6)
    mask = np.random.default_rng(2).random((2, 2, 6, 6)) > 0.4
    mask[1, 0, 3] = False  # one fully masked row
    with jax.enable_x64(True):
        out = np.asarray(attention.get("yoso").apply({}, *_f64(q, k, v), mask=mask))
    np.testing.assert_array_equal(out[1, 3, 0], 0.0)
    np.testing.assert_allclose(out, yoso_reference({}, q, k, v, mask), rtol=1e-10, atol=1e-12)
    # a masked key's value never reaches the output
    v2 = v.copy()
    v2[0, 5] += 10.0
    keep = np.ones((2, 6), bool)
    keep[0, 5] = False
    with jax.enable_x64(True):
        a = attention.get("yoso").apply({}, *_f64(q, k, v), mask=keep)
        b = attention.get("yoso").apply({}, *_f64(q, k, v2), mask=keep)
    np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_float32_matches_float64_and_eager_matches_jit():
    q, k, v = _qkv(n=50)
    pad = np.ones((2, 50), bool)
    pad[0, 40:] = False
    mech = attention.get("yoso")
    f32 = tuple(jnp.asarray(x, jnp.float32) for x in (q, k, v))
    got = jax.jit(mech.apply)({}, *f32, mask=pad)
    assert got.dtype == jnp.float32
    assert_close(mech.apply({}, *f32, mask=pad), got, rtol=1e-5, atol=1e-6, what="eager vs jit")
    with jax.enable_x64(True):
        want = mech.apply({}, *_f64(q, k, v), mask=pad)
    assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_bad_hyper_parameters_raise():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(n=4))
    with pytest.raises(ValueError, match="tau=0 must be an integer >= 1"):
        attention.get("yoso", tau=0).apply({}, q, k, v)
    with pytest.raises(ValueError, match="grad='approx' must be one of surrogate, exact"):
        attention.get("yoso", grad="approx").apply({}, q, k, v)
    assert attention.check("yoso", {"tau": 2.5}) == [
        "yoso: tau=2.5 must be an integer >= 1 (hash length; LRA: 10-12)"
    ]
    assert attention.check("yoso", {}) == []


@pytest.mark.parametrize("kind", ["none", "key_padding", "full_4d"])
def test_query_blocks_match_the_reference(monkeypatch, kind):
    """Blocks of 4 queries over n = 11 (the last one padded): same output and gradients."""
    monkeypatch.setattr(yoso, "_QUERY_BLOCK", 4)
    q, k, v = _qkv(n=11, m=9)
    rng = np.random.default_rng(3)
    mask = {
        "none": None,
        "key_padding": rng.random((2, 9)) > 0.3,
        "full_4d": rng.random((2, 2, 11, 9)) > 0.4,
    }[kind]
    ref_mask = (
        None
        if mask is None
        else (np.broadcast_to(mask[:, None, None], (2, 2, 11, 9)) if mask.ndim == 2 else mask)
    )
    mech = attention.get("yoso", tau=3, grad="exact")
    with jax.enable_x64(True):
        got = jax.jit(mech.apply)({}, *_f64(q, k, v), mask=mask)
        g = jax.grad(lambda kk: (mech.apply({}, *_f64(q), kk, *_f64(v), mask=mask) ** 3).sum())(
            *_f64(k)
        )
    np.testing.assert_allclose(
        got, yoso_reference({}, q, k, v, ref_mask, tau=3), rtol=1e-10, atol=1e-12
    )
    monkeypatch.setattr(yoso, "_QUERY_BLOCK", 512)
    with jax.enable_x64(True):
        g1 = jax.grad(lambda kk: (mech.apply({}, *_f64(q), kk, *_f64(v), mask=mask) ** 3).sum())(
            *_f64(k)
        )
    np.testing.assert_allclose(g, g1, rtol=1e-10, atol=1e-12)
