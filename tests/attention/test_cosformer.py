"""Property tests of cosFormer (attention/cosformer.py): the decomposed O(N d^2) form equals the
explicit re-weighted N x N matrix, causal masking against that reference, causality, padding,
jit, float32 vs float64, no N x N intermediate, errors. The table checks (every mask kind, jit
and eager, finite-difference gradients) are in test_table.py (ref_cosformer.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from tests.attention.ref_cosformer import cosformer_reference
from tests.tolerances import assert_close


def _qkv(seed=0, b=2, n=7, m=None, h=2, d=4, dv=3):
    rng = np.random.default_rng(seed)
    m = n if m is None else m
    return (
        rng.normal(size=(b, n, h, d)),
        rng.normal(size=(b, m, h, d)),
        rng.normal(size=(b, m, h, dv)),
    )


def _padding(b, m, masked=3):
    pad = np.ones((b, m), bool)
    pad[0, m - masked :] = False
    return pad


def _f64(*xs):
    return tuple(jnp.asarray(x, jnp.float64) for x in xs)


def _intermediate_shapes(jaxpr):
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            yield tuple(getattr(var.aval, "shape", ()))
        for param in eqn.params.values():
            for sub in param if isinstance(param, tuple | list) else (param,):
                if hasattr(sub, "jaxpr") and hasattr(sub, "consts"):
                    yield from _intermediate_shapes(sub.jaxpr)
                elif hasattr(sub, "eqns"):
                    yield from _intermediate_shapes(sub)


def _largest(fn, *args):
    loss = lambda *a: fn(*a).sum()
    sizes = []
    for f in (fn, jax.grad(loss, (0, 1, 2))):
        sizes += [
            (int(np.prod(s)), s) for s in _intermediate_shapes(jax.make_jaxpr(f)(*args).jaxpr)
        ]
    return max(sizes)


@pytest.mark.parametrize(
    "n,m,causal,masked",
    [
        (7, 7, False, True),
        (5, 9, False, True),  # cross-attention: M = max(N, M) = 9 in the angle
        (9, 4, False, False),
        (7, 7, True, True),  # N smaller than one 64-token block
        (130, 130, True, True),  # three blocks, the last one padded
        (128, 128, True, False),  # an exact multiple of the block
    ],
)
def test_decomposed_form_equals_the_explicit_reweighted_matrix(n, m, causal, masked):
    q, k, v = _qkv(n=n, m=m)
    mask = _padding(2, m) if masked else None
    ref_mask = None if mask is None else np.broadcast_to(mask[:, None, None, :], (2, 2, n, m))
    want = cosformer_reference({}, q, k, v, ref_mask, causal=causal)
    mech = attention.get("cosformer", causal=causal)
    with jax.enable_x64(True):
        got = jax.jit(mech.apply)({}, *_f64(q, k, v), mask=mask)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_reweighting_is_the_cosine_of_the_distance():
    """One key per position, q = k = 1, v = one-hot positions: out_i's weights are
    cos(pi/2 (i - j)/N) / sum_j, so distant keys get less weight (the locality bias, Sec. 3.4)."""
    n = 8
    ones = np.ones((1, n, 1, 1))
    v = np.eye(n)[None, :, None, :]
    with jax.enable_x64(True):
        out = np.asarray(attention.get("cosformer").apply({}, *_f64(ones, ones, v)))[0, :, 0]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    w = np.cos(np.pi / 2 * (i - j) / n)
    np.testing.assert_allclose(out, w / w.sum(1, keepdims=True), rtol=1e-12)
    assert (np.diff(out[0]) < 0).all()  # query 0: weights fall with distance


def test_causal_output_does_not_depend_on_later_inputs():
    n = 70  # two blocks
    q, k, v = _qkv(n=n)
    mech = jax.jit(attention.get("cosformer", causal=True).apply)
    with jax.enable_x64(True):
        base = np.asarray(mech({}, *_f64(q, k, v)))
        q2, k2, v2 = (x.copy() for x in (q, k, v))
        cut = 40
        for x in (q2, k2, v2):
            x[:, cut:] = np.random.default_rng(9).normal(size=x[:, cut:].shape)
        moved = np.asarray(mech({}, *_f64(q2, k2, v2)))
        np.testing.assert_allclose(moved[:, :cut], base[:, :cut], rtol=1e-12, atol=1e-14)
        assert not np.allclose(moved[:, cut:], base[:, cut:])
        # and the gradient of out_i vanishes for inputs after i
        g = jax.grad(lambda kk: mech({}, *_f64(q), kk, *_f64(v))[:, 10].sum())(*_f64(k))
    assert np.all(np.asarray(g)[:, 11:] == 0) and np.any(np.asarray(g)[:, :11] != 0)


def test_padded_keys_contribute_nothing():
    q, k, v = _qkv(n=9)
    pad = _padding(2, 9)
    k2, v2 = k.copy(), v.copy()
    k2[0, 6:] += 5.0
    v2[0, 6:] -= 3.0
    for causal in (False, True):
        mech = attention.get("cosformer", causal=causal)
        with jax.enable_x64(True):
            a = mech.apply({}, *_f64(q, k, v), mask=pad)
            b = mech.apply({}, *_f64(q, k2, v2), mask=pad)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_fully_masked_row_returns_zeros():
    q, k, v = _qkv(n=5)
    pad = np.ones((2, 5), bool)
    pad[1] = False
    out = attention.get("cosformer").apply(
        {}, *(jnp.asarray(x, jnp.float32) for x in (q, k, v)), mask=pad
    )
    assert np.all(np.asarray(out)[1] == 0) and np.all(np.isfinite(np.asarray(out)))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_float32_matches_float64_and_eager_matches_jit(causal):
    q, k, v = _qkv(n=100)
    pad = _padding(2, 100, masked=20)
    mech = attention.get("cosformer", causal=causal)
    f32 = tuple(jnp.asarray(x, jnp.float32) for x in (q, k, v))
    got = jax.jit(mech.apply)({}, *f32, mask=pad)
    assert got.dtype == jnp.float32
    assert_close(mech.apply({}, *f32, mask=pad), got, rtol=1e-5, atol=1e-6, what="eager vs jit")
    with jax.enable_x64(True):
        want = mech.apply({}, *_f64(q, k, v), mask=pad)
    assert_close(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_no_n_by_n_intermediate(causal):
    n = 2048
    x = jax.ShapeDtypeStruct((1, n, 2, 16), jnp.float32)
    mech = attention.get("cosformer", causal=causal)
    size, shape = _largest(lambda q, k, v: mech.apply({}, q, k, v), x, x, x)
    assert size < n * n // 4, shape  # linear: [N, H, 2 Dk] features, 64 x 64 blocks


def test_non_key_padding_masks_and_bad_values_raise():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(n=6))
    causal_mask = np.tril(np.ones((6, 6), bool))[None, None]
    with pytest.raises(ValueError, match="cosformer supports key-padding masks only"):
        attention.get("cosformer").apply({}, q, k, v, mask=causal_mask)
    qn, kn, vn = (jnp.asarray(x, jnp.float32) for x in _qkv(n=5, m=7))
    with pytest.raises(ValueError, match="causal attention needs N == M"):
        attention.get("cosformer", causal=True).apply({}, qn, kn, vn)
    with pytest.raises(ValueError, match="eps=0"):
        attention.get("cosformer", eps=0).apply({}, q, k, v)
    assert attention.check("cosformer", {"eps": -1.0}) == [
        "cosformer: eps=-1.0 must be a positive number (the authors use 1e-6)"
    ]
    assert attention.check("cosformer", {"causal": True}) == []
