"""Reformer LSH attention: exactness limit, multi-round hashing, causality, masks, structure."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from tests.attention.ref_reformer import reformer_reference

H, D = 2, 4


def _qv(n, seed=0, b=1, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(b, n, H, D)).astype(dtype), rng.normal(size=(b, n, H, D)).astype(dtype)


def _run(hp, q, v, mask=None, **kw):
    mech = attention.get("reformer", **hp)
    params = mech.init(jax.random.key(0), num_heads=H, head_dim=D, max_len=q.shape[1])
    with jax.enable_x64(True):
        out = mech.apply(params, jnp.asarray(q), None, jnp.asarray(v), mask=mask, **kw)
    return np.asarray(out), params


def _full_shared_qk(q, v, causal=False):
    """Dense shared-QK softmax attention with the paper's self-exclusion rule."""
    b, n, h, d = q.shape
    out = np.zeros_like(v)
    for bi in range(b):
        for hi in range(h):
            x = q[bi, :, hi]
            kk = x / np.linalg.norm(x, axis=1, keepdims=True)
            s = x @ kk.T / np.sqrt(d)
            allowed = ~np.eye(n, dtype=bool)
            if causal:
                allowed &= np.tril(np.ones((n, n), bool))
                allowed[0, 0] = True  # the first token has nobody else
            s = np.where(allowed, s, -np.inf)
            p = np.exp(s - s.max(1, keepdims=True))
            out[bi, :, hi] = (p / p.sum(1, keepdims=True)) @ v[bi, :, hi]
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_one_bucket_one_chunk_is_full_shared_qk_attention(causal):
    q, v = _qv(9)
    got, _ = _run({"num_buckets": 1, "chunk_size": 16, "causal": causal}, q, v)
    np.testing.assert_allclose(got, _full_shared_qk(q, v, causal), rtol=1e-10, atol=1e-12)


def test_more_hashes_reduce_the_error_on_clustered_queries():
    """Queries in 8 tight clusters, many buckets: one round splits clusters often, more rounds
    recover more of each cluster (the paper's Fig. 5/Table 2 trend), averaged over seeds."""
    n, errs = 128, {1: [], 4: []}
    for seed in range(4):
        rng = np.random.default_rng(seed)
        centres = rng.normal(size=(8, H, D)) * 3
        q = centres[rng.integers(0, 8, n)][None] + 0.3 * rng.normal(size=(1, n, H, D))
        v = rng.normal(size=(1, n, H, D))
        full = _full_shared_qk(q, v)
        for r in errs:
            mech = attention.get("reformer", num_hashes=r, num_buckets=16, chunk_size=32)
            params = mech.init(jax.random.key(seed), num_heads=H, head_dim=D, max_len=n)
            with jax.enable_x64(True):
                got = np.asarray(mech.apply(params, jnp.asarray(q), None, jnp.asarray(v)))
            errs[r].append(np.abs(got - full).mean())
    assert np.mean(errs[4]) < 0.8 * np.mean(errs[1]), errs


def test_causal_matches_reference_and_ignores_the_future():
    hp = {"num_hashes": 2, "num_buckets": 4, "chunk_size": 3, "causal": True}
    q, v = _qv(10, seed=3)
    got, params = _run(hp, q, v)
    ref = reformer_reference(jax.tree.map(np.asarray, params), q, None, v, None, **hp)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
    mech = attention.get("reformer", **hp)
    f = lambda vv: mech.apply(params, jnp.asarray(q), None, vv)[0, 4].sum()  # noqa: E731
    with jax.enable_x64(True):
        g = np.asarray(jax.grad(f)(jnp.asarray(v)))
    assert np.all(g[0, 5:] == 0) and np.any(g[0, :5] != 0)


def test_keys_input_is_ignored_and_padded_keys_get_no_weight():
    q, v = _qv(8, b=2)
    pad = np.ones((2, 8), bool)
    pad[0, 5:] = False
    mech = attention.get("reformer", num_buckets=1, chunk_size=8)
    params = mech.init(jax.random.key(0), num_heads=H, head_dim=D, max_len=8)
    with jax.enable_x64(True):
        f = lambda vv: mech.apply(params, q, q * 7.0, vv, mask=pad).sum()  # noqa: E731
        g = np.asarray(jax.grad(f)(jnp.asarray(v)))
        a = mech.apply(params, q, q, v, mask=pad)
        b = mech.apply(params, q, -q, v, mask=pad)
    assert np.all(g[0, 5:] == 0) and np.all(g[1] != 0)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    none = np.zeros((2, 8), bool)
    with jax.enable_x64(True):
        z = mech.apply(params, q, q, v, mask=none)
    assert np.all(np.asarray(z) == 0)


@pytest.mark.parametrize("n", [3, 13])
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_lengths_not_multiple_of_the_chunk_jit_and_float32(n):
    hp = {"num_hashes": 2, "num_buckets": 4, "chunk_size": 4}
    q, v = _qv(n, seed=n)
    got64, params = _run(hp, q, v)
    ref = reformer_reference(jax.tree.map(np.asarray, params), q, None, v, None, **hp)
    np.testing.assert_allclose(got64, ref, rtol=1e-9, atol=1e-12)
    mech = attention.get("reformer", **hp)
    got32 = jax.jit(mech.apply)(
        params, jnp.asarray(q, jnp.float32), None, jnp.asarray(v, jnp.float32)
    )
    assert got32.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got32), ref, rtol=1e-4, atol=1e-5)


def test_redraw_changes_training_output_only():
    q, v = _qv(32, seed=1, dtype=np.float32)
    mech = attention.get("reformer", num_buckets=8, chunk_size=4, redraw=True)
    params = mech.init(jax.random.key(0), num_heads=H, head_dim=D, max_len=32)
    ev = mech.apply(params, q, None, v)
    tr = mech.apply(params, q, None, v, train=True, key=jax.random.key(5))
    np.testing.assert_array_equal(
        np.asarray(ev),
        np.asarray(mech.apply(params, q, None, v)),
    )
    assert not np.allclose(np.asarray(ev), np.asarray(tr))
    with pytest.raises(ValueError, match="redraw=True needs `key`"):
        mech.apply(params, q, None, v, train=True)


@pytest.mark.parametrize(
    "hp,match",
    [
        ({"num_hashes": 0}, "num_hashes=0"),
        ({"chunk_size": 0}, "chunk_size=0"),
        ({"num_buckets": 3}, "num_buckets=3"),
    ],
)
def test_bad_hyper_parameters_raise(hp, match):
    assert any(match in p for p in attention.check("reformer", hp, num_tokens=64))
    q, v = _qv(8)
    mech = attention.get("reformer", **hp)
    with pytest.raises(ValueError, match=match):
        mech.apply({"buffers": {"rotations": jnp.zeros((H, 1, D, 8))}}, q, None, v)
    with pytest.raises(ValueError, match="max_len"):
        attention.get("reformer").init(jax.random.key(0), num_heads=H, head_dim=D)


def test_no_n_by_n_intermediate():
    n = 2048
    mech = attention.get("reformer", num_hashes=2)
    params = mech.init(jax.random.key(0), num_heads=1, head_dim=8, max_len=n)
    x = jax.ShapeDtypeStruct((1, n, 1, 8), jnp.float32)
    jaxpr = jax.make_jaxpr(jax.grad(lambda q, v: mech.apply(params, q, None, v).sum(), (0, 1)))(
        x, x
    )
    shapes = [tuple(var.aval.shape) for eqn in jaxpr.jaxpr.eqns for var in eqn.outvars]
    assert not [s for s in shapes if sum(d >= n for d in s) >= 2], "an N x N array"
    assert max(np.prod(s) for s in shapes) <= 2 * n * 2 * 64 * 8


def test_image_like_input_first_token_reaches_only_its_bucket_mates_in_its_chunk():
    """An LRA-Image-like sequence: token 0 (a CLS-like vector of its own direction), then pixels
    of which most are one repeated "black" vector and the rest a few grey levels. Matches the
    float64 reference (with gradients, under jit), and shows why a CLS-pooled Reformer learns
    little on images: token 0 sorts first in its bucket, the previous chunk holds only other
    buckets, so it reaches at most chunk_size - 1 keys, the lowest-positioned of its bucket
    mates (none: it returns its own value)."""
    n, c = 48, 8
    rng = np.random.default_rng(7)
    levels = rng.normal(size=(4, H, D))
    pix = np.where(rng.random(n - 1) < 0.6, 0, rng.integers(1, 4, n - 1))
    q = np.concatenate([rng.normal(size=(1, H, D)), levels[pix]])[None]
    q = q + 1e-3 * rng.normal(size=q.shape)  # learned positions: small per-token offsets
    v = rng.normal(size=(1, n, H, D))
    hp = {"chunk_size": c}
    got, params = _run(hp, q, v)
    p64 = jax.tree.map(np.asarray, params)
    np.testing.assert_allclose(
        got, reformer_reference(p64, q, None, v, None, **hp), rtol=1e-9, atol=1e-12
    )
    mech = attention.get("reformer", **hp)
    with jax.enable_x64(True):
        # d out[0, 0, h, :].sum() / d v: nonzero exactly on the keys token 0 attends to
        g = np.asarray(
            jax.jit(jax.grad(lambda vv: mech.apply(params, q, None, vv)[0, 0].sum()))(
                jnp.asarray(v)
            )
        )
    rot = p64["buffers"]["rotations"][:, 0, :, : (2 * -(-n // c)) // 2]  # [H, D, nb/2]
    for h in range(H):
        proj = q[0, :, h] @ rot[h]
        bucket = np.argmax(np.concatenate([proj, -proj], -1), -1)
        black = bucket[1:][pix == 0]
        assert (black == black[0]).all()  # the repeated vector hashes to one bucket
        mates = np.nonzero(bucket[1:] == bucket[0])[0] + 1  # ascending positions
        reach = np.nonzero(np.abs(g[0, :, h]).sum(-1) > 0)[0]
        if reach.tolist() == [0]:  # alone in reach: its own value
            np.testing.assert_allclose(got[0, 0, h], v[0, 0, h], rtol=1e-12)
        else:
            assert len(reach) <= c - 1
            np.testing.assert_array_equal(reach, mates[: len(reach)])
