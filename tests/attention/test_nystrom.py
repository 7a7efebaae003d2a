"""Property tests of Nyströmformer (attention/nystrom.py): exactness with one landmark per token,
the pseudo-inverse iteration, padding (N not a multiple of L, masked keys), the convolution skip,
jit, float32 vs float64, no N x N intermediate, errors (causal refused). The table checks are in
test_table.py (ref_nystrom.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import nystrom
from tests.attention.ref_baselines import masked_softmax_reference
from tests.attention.ref_nystrom import nystrom_reference, pinv_reference
from tests.tolerances import assert_close


def _qkv(seed=0, b=2, n=7, m=None, h=2, d=4, dv=3, scale=1.0):
    rng = np.random.default_rng(seed)
    m = n if m is None else m
    q = rng.normal(size=(b, n, h, d)) * scale
    k = rng.normal(size=(b, m, h, d)) * scale
    return q, k, rng.normal(size=(b, m, h, dv))


def _padding(b, m, masked=3):
    pad = np.ones((b, m), bool)
    pad[0, m - masked :] = False
    return pad


def _f64(*xs):
    return tuple(jnp.asarray(x, jnp.float64) for x in xs)


def _params(mech, h=2, dtype=jnp.float64):
    p = mech.init(jax.random.key(3), num_heads=h, head_dim=4)
    return jax.tree.map(lambda x: jnp.asarray(x, dtype), p)


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


def _full(mask, b, h, n, m):
    return (
        np.ones((b, h, n, m), bool)
        if mask is None
        else np.broadcast_to(mask[:, None, None], (b, h, n, m))
    )


@pytest.mark.parametrize("masked", [False, True])
def test_one_landmark_per_token_and_enough_iterations_equals_softmax(masked):
    """Algorithm 1 with L = N: Q~ = Q, K~ = K, so F = A = B = softmax(Q K^T / sqrt d) and
    F A^+ B V = softmax V (Sec. 3). The Nyström path itself, not the L >= M shortcut."""
    n = 8
    q, k, v = _qkv(n=n, scale=0.5)
    pad = _padding(2, n, masked=2) if masked else None
    with jax.enable_x64(True):
        got = nystrom.nystrom_attention(
            *_f64(q, k, v), None if pad is None else jnp.asarray(pad), n, 60, jnp.float64
        )
    if masked:  # the padded tokens are zeroed (authors): softmax over zeroed padded keys' rows
        # Padded keys get weight 0 in B, so only the real keys matter for every real query.
        want = masked_softmax_reference(q, k, v, _full(pad, 2, 2, n, n))
        np.testing.assert_allclose(np.asarray(got)[1], want[1], rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(
            np.asarray(got)[0, : n - 2], want[0, : n - 2], rtol=1e-8, atol=1e-10
        )
    else:
        want = masked_softmax_reference(q, k, v, _full(None, 2, 2, n, n))
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
    # With the paper's 6 iterations the same path is visibly inexact: the iterations matter.
    with jax.enable_x64(True):
        six = nystrom.nystrom_attention(*_f64(q, k, v), None, n, 6, jnp.float64)
    assert not np.allclose(
        six, masked_softmax_reference(q, k, v, _full(None, 2, 2, n, n)), atol=1e-6
    )


def test_iterative_pinv_converges_to_the_pseudo_inverse():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 6, 6))
    a = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    with jax.enable_x64(True):
        z = np.asarray(nystrom.iterative_pinv(jnp.asarray(a), 40))
    np.testing.assert_allclose(z, np.linalg.pinv(a), rtol=1e-8, atol=1e-8)
    for i in range(3):  # and the reference's iteration, step for step
        np.testing.assert_allclose(
            np.asarray(
                jax.jit(nystrom.iterative_pinv, static_argnums=1)(jnp.asarray(a[i], jnp.float32), 6)
            ),
            pinv_reference(a[i], 6),
            rtol=1e-4,
            atol=1e-5,
        )


def test_landmarks_at_least_keys_is_exact_softmax_plus_conv():
    q, k, v = _qkv(n=10)
    pad = _padding(2, 10)
    mech = attention.get("nystromformer", num_landmarks=64, conv_kernel=0)
    with jax.enable_x64(True):
        got = mech.apply({}, *_f64(q, k, v), mask=pad)
    want = masked_softmax_reference(q, k, v, _full(pad, 2, 2, 10, 10))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "n,m,lm,conv,masked",
    [
        (11, 11, 4, 5, True),  # 11 = 4 segments of 3, the last one padded by 1
        (16, 16, 4, 35, True),  # divisible; kernel longer than the sequence
        (9, 13, 2, 0, True),  # cross-attention: no convolution
        (3, 20, 5, 0, False),  # fewer queries than landmarks
    ],
)
def test_matches_the_algorithm_1_reference(n, m, lm, conv, masked):
    q, k, v = _qkv(n=n, m=m)
    pad = _padding(2, m) if masked else None
    mech = attention.get("nystromformer", num_landmarks=lm, conv_kernel=conv)
    with jax.enable_x64(True):
        params = _params(mech)
        got = jax.jit(mech.apply)(params, *_f64(q, k, v), mask=pad)
    ref_mask = None if pad is None else _full(pad, 2, 2, n, m)
    want = nystrom_reference(jax.tree.map(np.asarray, params), q, k, v, ref_mask, num_landmarks=lm)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


def test_padded_tokens_contribute_only_through_their_count():
    q, k, v = _qkv(n=12)
    pad = _padding(2, 12, masked=4)
    q2, k2, v2 = q.copy(), k.copy(), v.copy()
    for x in (q2, k2, v2):
        x[0, 8:] = np.random.default_rng(7).normal(size=x[0, 8:].shape) * 3
    mech = attention.get("nystromformer", num_landmarks=3, conv_kernel=5)
    with jax.enable_x64(True):
        params = _params(mech)
        a = np.asarray(mech.apply(params, *_f64(q, k, v), mask=pad))
        b = np.asarray(mech.apply(params, *_f64(q2, k2, v2), mask=pad))
        c = np.asarray(mech.apply(params, *_f64(q2, k2, v2)))  # unmasked: they do matter
    # Padded queries are zeroed as well (self-attention), so even their rows are unchanged.
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert not np.allclose(c[0, :8], a[0, :8])
    # ... but their number counts: 9 tokens (segments of 3, not 4) give another output.
    with jax.enable_x64(True):
        short = np.asarray(mech.apply(params, *_f64(q[:, :9], k[:, :9], v[:, :9]), mask=pad[:, :9]))
    assert not np.allclose(short[0, :8], a[0, :8])


def test_convolution_is_a_centred_depthwise_filter_per_head():
    v = np.zeros((1, 9, 2, 3))
    v[0, 4, :, :] = 1.0  # an impulse at position 4
    w = np.arange(1.0, 11.0).reshape(2, 5)
    with jax.enable_x64(True):
        out = np.asarray(nystrom._depthwise_conv(jnp.asarray(v), jnp.asarray(w)))
    # out[i] = w[t] v[i + t - 2]: the impulse at 4 reaches i = 4 - t + 2 with weight w[t]
    for h in range(2):
        np.testing.assert_array_equal(out[0, 2:7, h, 0], w[h, ::-1])
        assert np.all(out[0, [0, 1, 7, 8], h] == 0)


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_float32_matches_float64_and_eager_matches_jit():
    q, k, v = _qkv(n=100, scale=0.5)
    pad = _padding(2, 100, masked=17)
    mech = attention.get("nystromformer", num_landmarks=16)
    f32 = tuple(jnp.asarray(x, jnp.float32) for x in (q, k, v))
    params = _params(mech, dtype=jnp.float32)
    got = jax.jit(mech.apply)(params, *f32, mask=pad)
    assert got.dtype == jnp.float32
    assert_close(mech.apply(params, *f32, mask=pad), got, rtol=1e-5, atol=1e-5, what="eager vs jit")
    with jax.enable_x64(True):
        want = mech.apply(
            jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), params), *_f64(q, k, v), mask=pad
        )
    assert_close(got, want, rtol=1e-3, atol=1e-4)  # the pinv iteration amplifies rounding


def test_fully_masked_sequence_returns_zeros_with_finite_gradients():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(n=12))
    pad = np.ones((2, 12), bool)
    pad[1] = False
    mech = attention.get("nystromformer", num_landmarks=4, conv_kernel=3)
    params = _params(mech, dtype=jnp.float32)
    out = mech.apply(params, q, k, v, mask=pad)
    assert np.all(np.asarray(out)[1] == 0)
    g = jax.grad(lambda q, k, v: mech.apply(params, q, k, v, mask=pad).sum(), (0, 1, 2))(q, k, v)
    assert all(np.isfinite(np.asarray(x)).all() for x in g)


def test_no_n_by_n_intermediate():
    n = 2048
    x = jax.ShapeDtypeStruct((1, n, 2, 16), jnp.float32)
    mech = attention.get("nystromformer")
    params = mech.init(jax.random.key(0), num_heads=2, head_dim=16)
    fn = lambda q, k, v: mech.apply(params, q, k, v)
    shapes = []
    for f in (fn, jax.grad(lambda *a: fn(*a).sum(), (0, 1, 2))):
        shapes += list(_intermediate_shapes(jax.make_jaxpr(f)(x, x, x).jaxpr))
    largest = max(int(np.prod(s)) for s in shapes)
    assert largest <= n * 64 * 2 * 2, max(shapes, key=lambda s: int(np.prod(s)))  # [B, H, N, L]


def test_causal_masks_and_bad_hyper_parameters_raise():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(n=6))
    mech = attention.get("nystromformer", num_landmarks=2, conv_kernel=0)
    with pytest.raises(ValueError, match="no causal form"):
        mech.apply({}, q, k, v, mask=np.tril(np.ones((6, 6), bool))[None, None])
    for hp, text in (
        ({"num_landmarks": 0}, "num_landmarks=0 must be an integer >= 1"),
        ({"pinv_iters": -1}, "pinv_iters=-1 must be an integer >= 0"),
        ({"conv_kernel": 4}, "conv_kernel=4 must be 0 (no convolution) or a positive odd"),
    ):
        assert any(text in p for p in attention.check("nystromformer", hp)), hp
    with pytest.raises(ValueError, match="conv_kernel=4"):
        attention.get("nystromformer", conv_kernel=4).init(
            jax.random.key(0), num_heads=2, head_dim=4
        )
    with pytest.raises(ValueError, match="num_landmarks=0"):
        attention.get("nystromformer", num_landmarks=0, conv_kernel=0).apply({}, q, k, v)
    qn, kn, vn = (jnp.asarray(x, jnp.float32) for x in _qkv(n=5, m=7))
    params = _params(attention.get("nystromformer", conv_kernel=3), dtype=jnp.float32)
    with pytest.raises(ValueError, match="needs N == M"):
        attention.get("nystromformer", conv_kernel=3).apply(params, qn, kn, vn)
