"""Sparse Sinkhorn attention: balancing, identity-sort limit, masks, structure, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention.sinkhorn import sinkhorn_balance
from tests.attention.ref_baselines import masked_softmax_reference
from tests.attention.ref_sinkhorn import sinkhorn_reference

H, D = 2, 4


def _qkv(n, seed=0, b=1, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=(b, n, H, D)).astype(dtype) for _ in range(3))


def _mech(n, **hp):
    mech = attention.get("sinkhorn", **hp)
    params = mech.init(jax.random.key(0), num_heads=H, head_dim=D, max_len=n)
    return mech, params


def test_balanced_matrix_is_doubly_stochastic():
    logits = jax.random.normal(jax.random.key(0), (3, 7, 7)) * 3
    s = np.asarray(sinkhorn_balance(logits / 0.75, 200))
    np.testing.assert_allclose(s.sum(-2), 1.0, atol=1e-5)
    np.testing.assert_allclose(s.sum(-1), 1.0, atol=1e-4)
    assert np.abs(np.asarray(jnp.exp(logits)).sum(-1) - 1).max() > 0.5  # not balanced before


def test_identity_sort_is_block_local_attention_over_the_block_twice():
    """With S = I the sorted block is the block itself: each query attends to its own block,
    every key counted twice, which equals plain softmax attention inside the block. (N a
    multiple of the block: a padded slot's mixture is a zero key, see the module docstring.)"""
    n, blk = 12, 4
    q, k, v = _qkv(n)
    mech, params = _mech(n, block_size=blk)
    nb = 3
    with jax.enable_x64(True):
        got = mech.apply(params, q, k, v, sort_matrix=jnp.eye(nb))
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    allowed = np.broadcast_to(i // blk == j // blk, (1, H, n, n))
    np.testing.assert_allclose(
        np.asarray(got), masked_softmax_reference(q, k, v, allowed), rtol=1e-10
    )


def test_gradient_structure_follows_the_blocks():
    """Under a hard permutation, block 0's queries see only blocks 0 and perm(0)."""
    n, blk = 12, 4
    q, k, v = _qkv(n, seed=1)
    mech, params = _mech(n, block_size=blk)
    perm = jnp.asarray(np.eye(3)[[2, 0, 1]])  # sorted block 0 = block 2
    with jax.enable_x64(True):
        f = lambda vv: mech.apply(params, q, k, vv, sort_matrix=perm)[0, :4].sum()  # noqa: E731
        g = np.abs(np.asarray(jax.grad(f)(jnp.asarray(v)))).sum((0, 2, 3))
    assert np.all(g[:4] > 0) and np.all(g[8:] > 0) and np.all(g[4:8] == 0)


def test_padded_keys_get_no_weight_and_empty_rows_are_zero():
    n = 9
    q, k, v = _qkv(n, b=2)
    pad = np.ones((2, n), bool)
    pad[0, 5:] = False
    mech, params = _mech(n, block_size=3)
    with jax.enable_x64(True):
        g = np.asarray(
            jax.grad(lambda vv: mech.apply(params, q, k, vv, mask=pad).sum())(jnp.asarray(v))
        )
        z = mech.apply(params, q, k, v, mask=np.zeros((2, n), bool))
    assert np.all(g[0, 5:] == 0) and np.all(g[0, :5] != 0)
    assert np.all(np.asarray(z) == 0)


@pytest.mark.parametrize("n", [3, 11])
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_short_and_ragged_lengths_jit_and_float32(n):
    hp = {"block_size": 4, "sinkhorn_iters": 3, "temperature": 0.75}
    q, k, v = _qkv(n, seed=n)
    mech, params = _mech(n, **hp)
    params64 = jax.tree.map(lambda x: np.asarray(x, np.float64), params)
    ref = sinkhorn_reference(params64, q, k, v, None, **hp)
    f32 = [jnp.asarray(x, jnp.float32) for x in (q, k, v)]
    got = jax.jit(mech.apply)(params, *f32)
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-4, atol=1e-5)


def test_gumbel_noise_only_in_training():
    q, k, v = (x.astype(np.float32) for x in _qkv(16, seed=2))
    mech, params = _mech(16, block_size=4)
    ev = np.asarray(mech.apply(params, q, k, v))
    np.testing.assert_array_equal(ev, np.asarray(mech.apply(params, q, k, v)))
    tr = np.asarray(mech.apply(params, q, k, v, train=True, key=jax.random.key(3)))
    assert not np.allclose(ev, tr)
    with pytest.raises(ValueError, match="needs `key`"):
        mech.apply(params, q, k, v, train=True)


@pytest.mark.parametrize(
    "hp,match",
    [
        ({"block_size": 0}, "block_size=0"),
        ({"sinkhorn_iters": -1}, "sinkhorn_iters=-1"),
        ({"temperature": 0.0}, "temperature=0.0"),
        ({"causal": True}, "causal=True is not supported"),
    ],
)
def test_bad_hyper_parameters_raise(hp, match):
    assert any(match in p for p in attention.check("sinkhorn", hp, num_tokens=64))
    q, k, v = _qkv(8)
    with pytest.raises(ValueError, match=match):
        attention.get("sinkhorn", **hp).apply({}, q, k, v)


def test_too_few_sortnet_outputs_raise():
    assert any(
        "max_blocks=2" in p
        for p in attention.check("sinkhorn", {"max_blocks": 2, "block_size": 4}, num_tokens=64)
    )
    q, k, v = _qkv(32, dtype=np.float32)
    mech, params = _mech(8, block_size=4)
    with pytest.raises(ValueError, match="init with max_len >= N"):
        mech.apply(params, q, k, v)


def test_no_n_by_n_intermediate():
    n = 2048
    mech, params = _mech(n, block_size=32)
    x = jax.ShapeDtypeStruct((1, n, 1, 8), jnp.float32)
    params = mech.init(jax.random.key(0), num_heads=1, head_dim=8, max_len=n)
    jaxpr = jax.make_jaxpr(jax.grad(lambda q, k, v: mech.apply(params, q, k, v).sum(), (0, 1, 2)))(
        x, x, x
    )
    shapes = [tuple(var.aval.shape) for eqn in jaxpr.jaxpr.eqns for var in eqn.outvars]
    assert not [s for s in shapes if sum(d >= n for d in s) >= 2], "an N x N array"
    assert max(np.prod(s) for s in shapes) <= n * 2 * 32 * 8
