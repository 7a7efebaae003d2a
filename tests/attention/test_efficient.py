"""Efficient Attention (Shen et al. 2021): properties the paper states, masks, linear cost,
agreement with gfsa_linear's Efficient-Attention path, errors.
(Outputs with every supported mask kind against the float64 reference: test_table.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attnbench.nn import flops as flops_lib
from tests.attention.ref_efficient import efficient_reference

B, H, D = 2, 2, 4


def _qkv(n, m=None, seed=0):
    rng = np.random.default_rng(seed)
    m = n if m is None else m
    return (
        rng.normal(size=(B, n, H, D)),
        rng.normal(size=(B, m, H, D)),
        rng.normal(size=(B, m, H, D)),
    )


def _pad(m):
    pad = np.ones((B, m), bool)
    pad[0, m - 2 :] = False
    return pad


def _matrix(q, k, mask=None, **hp):
    """rho_q(Q) rho_k(K)^T `[B, N, H, M]`, read off the output for v = the identity."""
    m = k.shape[1]
    eye = jnp.broadcast_to(jnp.eye(m)[None, :, None, :], (B, m, H, m))
    return attention.get("efficient_attention", **hp).apply({}, q, k, eye, mask=mask)


@pytest.mark.parametrize("masked", [False, True])
def test_softmax_normalisation_rows_sum_to_one(masked):
    n = 7
    mask = _pad(n) if masked else None
    with jax.enable_x64(True):
        q, k, _ = (jnp.asarray(a) * 3 for a in _qkv(n))
        a = np.asarray(_matrix(q, k, mask))
    np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-12)
    assert (a >= 0).all()
    if masked:
        np.testing.assert_array_equal(a[0, :, :, n - 2 :], 0.0)  # padded keys: no weight
        # ... and padded keys do not change anything else (excluded from rho_k's softmax).
        with jax.enable_x64(True):
            k2 = k.at[0, n - 2 :].add(10.0)
            np.testing.assert_allclose(np.asarray(_matrix(q, k2, mask)), a, rtol=1e-12)
    # The scaling normalisation is not row-stochastic (the check can fail).
    with jax.enable_x64(True):
        s = np.asarray(_matrix(q, k, mask, normalization="scaling"))
    assert not np.allclose(s.sum(-1), 1.0)


def test_scaling_normalisation_is_dot_product_attention_over_n():
    n = 6
    pad = _pad(n)
    with jax.enable_x64(True):
        q, k, v = _qkv(n)
        mech = attention.get("efficient_attention", normalization="scaling")
        for mask in (None, pad):
            got = np.asarray(
                jax.jit(lambda q, k, v, m: mech.apply({}, q, k, v, mask=m))(q, k, v, mask)
            )
            keep = np.ones((B, n), bool) if mask is None else mask
            expected = (
                np.einsum("bnhd,bmhd,bm,bmhe->bnhe", q, k, keep, v)
                / keep.sum(1)[:, None, None, None]
            )
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13)
            ref_mask = None if mask is None else np.broadcast_to(mask[:, None, None], (B, H, n, n))
            np.testing.assert_allclose(
                got, efficient_reference({}, q, k, v, ref_mask, "scaling"), rtol=1e-10, atol=1e-12
            )


@pytest.mark.parametrize("masked", [False, True])
def test_equals_gfsa_linear_with_its_identity_filter(masked):
    """gfsa_linear's default init (w_0 = 0, w_1 = 1, w_K = 0) is its plain Efficient-Attention
    product rho_q(Q)(rho_k(K)^T V); so is a GFSA_even odd (plain) layer."""
    n = 9
    mask = _pad(n) if masked else None
    with jax.enable_x64(True):
        q, k, v = (jnp.asarray(a) for a in _qkv(n))
        ours = np.asarray(attention.get("efficient_attention").apply({}, q, k, v, mask=mask))
        gfsa = attention.get("gfsa_linear")
        params = gfsa.init(jax.random.key(0), num_heads=H, head_dim=D)
        assert float(jnp.abs(params["w_k"]).max()) == 0.0
        np.testing.assert_allclose(
            np.asarray(gfsa.apply(params, q, k, v, mask=mask)), ours, rtol=1e-12, atol=1e-13
        )
        even = attention.get("gfsa_linear", even_layers_only=True)
        plain = even.init(jax.random.key(0), num_heads=H, head_dim=D, layer_index=1)
        np.testing.assert_allclose(
            np.asarray(even.apply(plain, q, k, v, mask=mask)), ours, rtol=1e-12, atol=1e-13
        )
        # A non-zero filter does differ (the comparison has teeth).
        moved = gfsa.apply({"w_k": jnp.full((H,), 0.5)}, q, k, v, mask=mask)
        assert not np.allclose(np.asarray(moved), ours)


@pytest.mark.parametrize("n", [1, 13])
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_jit_float32_agrees_with_float64_and_reference(n):
    q, k, v = _qkv(n, m=n + 2)
    pad = np.ones((B, n + 2), bool)
    pad[1, -1] = False
    mech = attention.get("efficient_attention")
    with jax.enable_x64(True):
        ref = np.asarray(mech.apply({}, q, k, v, mask=pad))
    np.testing.assert_allclose(
        ref,
        efficient_reference({}, q, k, v, np.broadcast_to(pad[:, None, None], (B, H, n, n + 2))),
        rtol=1e-10,
        atol=1e-12,
    )
    f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
    got = jax.jit(lambda q, k, v: mech.apply({}, q, k, v, mask=pad))(f32(q), f32(k), f32(v))
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got), ref, rtol=2e-5, atol=2e-6)


def test_fully_masked_sequence_returns_zeros_with_finite_gradients():
    q, k, v = (jnp.asarray(a, jnp.float32) for a in _qkv(5))
    pad = np.ones((B, 5), bool)
    pad[0] = False
    for norm in ("softmax", "scaling"):
        mech = attention.get("efficient_attention", normalization=norm)
        out = mech.apply({}, q, k, v, mask=pad)
        assert float(jnp.abs(out[0]).max()) == 0.0 and float(jnp.abs(out[1]).max()) > 0
        grads = jax.grad(
            lambda q, k, v, mech=mech: (mech.apply({}, q, k, v, mask=pad) ** 2).sum(), (0, 1, 2)
        )(q, k, v)
        assert all(bool(jnp.isfinite(g).all()) for g in grads)


def test_causal_and_bad_hyper_parameters_are_value_errors():
    q, k, v = (jnp.asarray(a, jnp.float32) for a in _qkv(4))
    with pytest.raises(ValueError, match="causal"):
        attention.get("efficient_attention", causal=True).apply({}, q, k, v)
    assert any("causal" in p for p in attention.check("efficient_attention", {"causal": True}))
    with pytest.raises(ValueError, match="normalization"):
        attention.get("efficient_attention", normalization="l2").apply({}, q, k, v)
    assert attention.check("efficient_attention", {"normalization": "l2"})
    assert not attention.check("efficient_attention", {"normalization": "scaling"})
    with pytest.raises(ValueError, match="key-padding masks only"):
        attention.get("efficient_attention").apply({}, q, k, v, mask=np.ones((B, H, 4, 4), bool))


def test_no_n_by_n_intermediate_at_2048():
    """Forward and backward jaxprs at N = 2048 hold no array with two axes >= N (an N x M
    matrix of any layout), and every array is at most O(N d) or O(d^2) per head."""
    n = 2048
    qkv = jax.ShapeDtypeStruct((1, n, 2, 16), jnp.float32)
    mask = jax.ShapeDtypeStruct((1, n), jnp.bool_)
    mech = attention.get("efficient_attention")

    def loss(q, k, v, m):
        return mech.apply({}, q, k, v, mask=m).sum()

    jaxpr = jax.make_jaxpr(jax.grad(loss, (0, 1, 2)))(qkv, qkv, qkv, mask)

    def shapes(jp):  # every equation's outputs, inner jaxprs (pjit, custom_jvp, ...) too
        for eqn in jp.eqns:
            for var in eqn.outvars:
                yield tuple(getattr(var.aval, "shape", ()))
            for param in eqn.params.values():
                for sub in param if isinstance(param, (list, tuple)) else (param,):
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        yield from shapes(inner)

    seen = list(shapes(jaxpr.jaxpr))
    assert seen and max(int(np.prod(s)) for s in seen) <= n * 2 * 16
    assert not [s for s in seen if sum(d >= n for d in s) >= 2]
    # The check has teeth: softmax attention does form one.
    soft = jax.make_jaxpr(
        lambda q, k, v: attention.get("softmax", implementation="xla").apply({}, q, k, v)
    )(qkv, qkv, qkv)
    assert [s for s in shapes(soft.jaxpr) if sum(d >= n for d in s) >= 2]


def _compiled_flops(fn, *args) -> float:
    analysis = jax.jit(fn).lower(*args).compile().cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    return float(analysis.get("flops", 0.0))


@pytest.mark.parametrize("normalization", ["softmax", "scaling"])
@pytest.mark.parametrize("masked", [False, True])
def test_flops_match_compiled_and_are_linear_in_n(masked, normalization):
    h, d = 4, 64
    hp = {"normalization": normalization}
    mech = attention.get("efficient_attention", **hp)
    counts = []
    for n in (512, 1024):
        qkv = jax.ShapeDtypeStruct((1, n, h, d), jnp.float32)
        mask = jax.ShapeDtypeStruct((1, n), jnp.bool_) if masked else None
        compiled = _compiled_flops(
            lambda q, k, v, m: mech.apply({}, q, k, v, mask=m), qkv, qkv, qkv, mask
        )
        kw = dict(n=n, m=n, heads=h, head_dim=d, masked=masked)
        analytic = flops_lib.attention_flops("efficient_attention", hp, **kw)
        matmul = flops_lib.attention_flops("efficient_attention", hp, elementwise=False, **kw)
        assert matmul <= compiled
        assert abs(compiled - analytic) <= (analytic - matmul) + 0.005 * compiled, (
            analytic,
            matmul,
            compiled,
        )
        counts.append(compiled)
    assert counts[1] / counts[0] == pytest.approx(2.0, rel=0.02)  # linear in N
