"""softmax_chunked's flash-style backward (attention/chunked.py): values and gradients against a
float64 numpy reference with explicit N x M matrices (every mask and bias layout, padded chunks,
fully masked rows), attention dropout regenerated per block in the backward, bfloat16, and
compiled memory that grows linearly with N in the forward and the backward."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import attention
from tests.tolerances import assert_close, reference_precision

B, H, D, DV = 2, 2, 3, 2


def reference(q, k, v, mask4, bias4):
    """softmax(Q K^T / sqrt(d) + bias) V with explicit `[B, H, N, M]` matrices, float64; masked
    pairs get probability 0 and a fully masked row gives 0."""
    s = np.einsum("bnhd,bmhd->bhnm", q, k) / np.sqrt(q.shape[-1]) + bias4
    s = np.where(mask4, s, -np.inf)
    top = s.max(-1, keepdims=True)
    e = np.where(mask4, np.exp(s - np.where(np.isfinite(top), top, 0.0)), 0.0)
    total = e.sum(-1, keepdims=True)
    p = np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)
    return np.einsum("bhnm,bmhd->bnhd", p, v)


def _finite_differences(loss, args, eps=1e-6):
    """Central differences of the float64 `loss(*args)` in every coordinate of every arg."""
    grads = []
    for a, x in enumerate(args):
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            moved = [y.copy() for y in args]
            moved[a][idx] += eps
            plus = loss(*moved)
            moved[a][idx] -= 2 * eps
            g[idx] = (plus - loss(*moved)) / (2 * eps)
        grads.append(g)
    return grads


def _qkv(n, m, seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(B, n, H, D)),
        rng.normal(size=(B, m, H, D)),
        rng.normal(size=(B, m, H, DV)),
    )


def _mask(kind, n, m):
    """(mask as passed, or None; the same broadcast to [B, H, N, M])."""
    rng = np.random.default_rng(1)
    if kind == "none":
        mask = None
    elif kind == "key_padding":  # [B, M]; batch 1 keeps no key at all
        mask = np.ones((B, m), bool)
        mask[0, m - 3 :] = False
        mask[1] = False
    elif kind == "full_4d":  # [B, H, N, M] with one fully masked row
        mask = rng.random((B, H, n, m)) > 0.4
        mask[1, 0, 2] = False
    elif kind == "causal":  # [1, 1, N, M]
        mask = np.tril(np.ones((n, m), bool))[None, None]
    elif kind == "per_query":  # [B, 1, N, 1]: the key axis broadcast; one query sees nothing
        mask = np.ones((B, 1, n, 1), bool)
        mask[0, 0, 1] = False
    else:
        raise AssertionError(kind)
    if mask is None:
        return None, np.ones((B, H, n, m), bool)
    full = mask[:, None, None, :] if mask.ndim == 2 else mask
    return mask, np.broadcast_to(full, (B, H, n, m))


# (n, m, query_chunk, key_chunk, mask kind, bias shape or None): every bias layout (full, rows
# broadcast, keys broadcast) and padding on either axis.
CASES = [
    (7, 9, 3, 4, "full_4d", (B, H, 7, 9)),  # both axes padded
    (5, 11, 16, 3, "causal", (1, H, 1, 11)),  # one query chunk; bias varies along keys only
    (10, 10, 4, 10, "key_padding", (B, 1, 10, 1)),  # bias varies along queries only
    (6, 7, 4, 4, "per_query", (1, 1, 1, 1)),  # keys padded, the mask does not cover them
    (8, 8, 4, 4, "none", None),  # divisible, no mask
]


@pytest.mark.parametrize("n,m,qc,kc,mask_kind,bias_shape", CASES)
def test_values_and_gradients_match_the_float64_reference(n, m, qc, kc, mask_kind, bias_shape):
    q, k, v = _qkv(n, m)
    api_mask, mask4 = _mask(mask_kind, n, m)
    rng = np.random.default_rng(2)
    bias = rng.normal(size=bias_shape) if bias_shape else np.zeros((1, 1, 1, 1))
    w = rng.normal(size=(B, n, H, DV))
    mech = attention.get("softmax_chunked", query_chunk=qc, key_chunk=kc)
    api_bias = (lambda b: b) if bias_shape else (lambda b: None)

    def loss(q, k, v, b):
        out = mech.apply({}, q, k, v, mask=api_mask, bias=api_bias(b))
        return (out * w).sum(), out

    def ref_loss(q, k, v, b):
        return float((reference(q, k, v, mask4, np.broadcast_to(b, mask4.shape)) * w).sum())

    with jax.enable_x64(True):
        grad = jax.jit(jax.grad(loss, (0, 1, 2, 3), has_aux=True))
        grads, out = grad(*(jnp.asarray(x) for x in (q, k, v, bias)))
    expected = reference(q, k, v, mask4, np.broadcast_to(bias, mask4.shape))
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-12, atol=1e-12)
    dead = ~mask4.any(-1)  # [B, H, N]
    if dead.any():
        assert np.all(np.asarray(out).transpose(0, 2, 1, 3)[dead] == 0.0)
    wanted = _finite_differences(ref_loss, [q, k, v, bias])
    names = ("dq", "dk", "dv", "dbias")
    for name, got, want in zip(names, grads, wanted, strict=True):
        got = np.asarray(got)
        assert got.shape == want.shape and np.all(np.isfinite(got)), name
        if name == "dbias" and not bias_shape:
            continue  # no bias passed: nothing to differentiate
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=name)


def test_jax_check_grads_in_float64():
    q, k, v = _qkv(6, 9, seed=3)
    api_mask, _ = _mask("full_4d", 6, 9)
    bias = np.random.default_rng(4).normal(size=(B, H, 6, 9))
    mech = attention.get("softmax_chunked", query_chunk=4, key_chunk=4)
    fn = jax.jit(lambda q, k, v, b: mech.apply({}, q, k, v, mask=api_mask, bias=b))
    with jax.enable_x64(True):
        check_grads(fn, tuple(jnp.asarray(x) for x in (q, k, v, bias)), order=1, modes=("rev",))


def test_the_forward_is_a_custom_vjp():
    # The gradient comes from the flash backward, not from autodiff through the loops.
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(8, 8))
    jaxpr = str(jax.make_jaxpr(attention.get("softmax_chunked", query_chunk=4).apply)({}, q, k, v))
    assert "custom_vjp_call" in jaxpr


def test_dropout_backward_regenerates_the_forward_mask():
    """With v = I the forward's output is the dropped probability matrix itself: its zero
    pattern is the keep mask. The gradient must be that of softmax(...) * keep / (1 - rate) @ V
    with this very mask (a mask drawn again differently in the backward fails)."""
    n, m, rate = 7, 9, 0.4
    q, k, v = _qkv(n, m, seed=5)
    mech = attention.get("softmax_chunked", query_chunk=3, key_chunk=4, dropout_rate=rate)
    key = jax.random.key(0, impl="rbg")
    eye = np.broadcast_to(np.eye(m)[None, :, None, :], (B, m, H, m))
    w = np.random.default_rng(6).normal(size=(B, n, H, DV))
    train = jax.jit(functools.partial(mech.apply, {}, train=True, key=key))
    with jax.enable_x64(True):
        dropped = np.asarray(train(jnp.asarray(q), jnp.asarray(k), jnp.asarray(eye)))
        loss = lambda q, k, v: (train(q, k, v) * w).sum()
        grads = jax.jit(jax.grad(loss, (0, 1, 2)))(*(jnp.asarray(x) for x in (q, k, v)))
    keep = dropped.transpose(0, 2, 1, 3) != 0.0  # [B, H, N, M]
    assert 0.2 < 1.0 - keep.mean() < 0.6  # about `rate` of the pairs dropped
    all_pairs = np.ones((B, H, n, m), bool)

    def ref_out(q, k, v):
        probs = reference(q, k, np.broadcast_to(eye, (B, m, H, m)), all_pairs, 0.0)
        probs = probs.transpose(0, 2, 1, 3) * keep / (1.0 - rate)  # [B, H, N, M]
        return np.einsum("bhnm,bmhd->bnhd", probs, v)

    np.testing.assert_allclose(dropped, ref_out(q, k, eye), rtol=1e-12, atol=1e-12)
    wanted = _finite_differences(lambda *x: float((ref_out(*x) * w).sum()), [q, k, v])
    for got, want in zip(grads, wanted, strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-8)


def test_fully_masked_rows_give_zero_output_and_zero_gradient_in_float32():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(6, 9, seed=7))
    mask = np.random.default_rng(8).random((B, H, 6, 9)) > 0.5
    mask[0, :, 1] = False  # query 1 of batch 0 sees no key in any head
    mask[1] = False  # batch 1 sees nothing
    for rate in (0.0, 0.3):
        mech = attention.get("softmax_chunked", query_chunk=4, key_chunk=4, dropout_rate=rate)
        key = jax.random.key(1, impl="rbg")
        fn = functools.partial(mech.apply, {}, mask=mask, train=True, key=key)
        out, vjp = jax.vjp(jax.jit(fn), q, k, v)
        dq, dk, dv = vjp(jnp.ones_like(out))
        assert np.all(np.asarray(out[0, 1]) == 0.0) and np.all(np.asarray(out[1]) == 0.0)
        for g in (dq, dk, dv):
            assert np.all(np.isfinite(np.asarray(g)))
        assert np.all(np.asarray(dq[0, 1]) == 0.0) and np.all(np.asarray(dq[1]) == 0.0)
        assert np.all(np.asarray(dk[1]) == 0.0) and np.all(np.asarray(dv[1]) == 0.0)


def test_float32_and_bfloat16_follow_softmax():
    q, k, v = _qkv(13, 11, seed=9)
    pad = np.ones((B, 11), bool)
    pad[0, 8:] = False
    w = np.random.default_rng(10).normal(size=(B, 13, H, DV))
    chunked = attention.get("softmax_chunked", query_chunk=4, key_chunk=5)

    def value_and_grads(mech, dtype):
        loss = lambda q, k, v: (mech.apply({}, q, k, v, mask=pad).astype(jnp.float32) * w).sum()
        args = [jnp.asarray(x, dtype) for x in (q, k, v)]
        return jax.jit(jax.value_and_grad(loss, (0, 1, 2)))(*args)

    with reference_precision():
        want_loss, want_grads = value_and_grads(attention.get("softmax"), jnp.float32)
    loss, grads = value_and_grads(chunked, jnp.float32)
    assert_close(loss, want_loss, rtol=1e-5, atol=1e-5, what="float32 loss")
    for g, want in zip(grads, want_grads, strict=True):
        assert g.dtype == jnp.float32
        assert_close(g, want, rtol=1e-5, atol=1e-5, what="float32 gradient")
    # bfloat16 (8 significant bits): the gradients within a few roundings of the float32 ones.
    _, grads = value_and_grads(chunked, jnp.bfloat16)
    for g, want in zip(grads, want_grads, strict=True):
        assert g.dtype == jnp.bfloat16
        assert_close(g, want, dtype=jnp.bfloat16, rtol=5e-2, atol=5e-2, what="bfloat16 gradient")


def _temp_bytes(fn, *args) -> int:
    return jax.jit(fn).lower(*args).compile().memory_analysis().temp_size_in_bytes


@pytest.mark.parametrize("with_mask", [False, True])
def test_forward_and_backward_memory_grow_linearly(with_mask):
    """Compiled temp memory of forward + backward (B = H = 1, D = 64, default chunks): about
    constant blocks plus O(N) arrays, so 4x the tokens costs far less than 16x, and stays far
    below one N x N float32 matrix."""
    temps = {}
    mech = attention.get("softmax_chunked")
    loss = lambda q, k, v, mask: mech.apply({}, q, k, v, mask=mask).sum()
    for n in (4096, 16384):
        x = jax.ShapeDtypeStruct((1, n, 1, 64), jnp.float32)
        mask = jax.ShapeDtypeStruct((1, n), jnp.bool_) if with_mask else None
        temps[n] = _temp_bytes(jax.grad(loss, (0, 1, 2)), x, x, x, mask)
    assert temps[16384] < 5 * temps[4096], temps
    assert temps[16384] < 16384**2 * 4 / 16, temps  # one N x N float32 matrix: 1.07 GB


def test_jit_equals_eager():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(9, 10, seed=11))
    mech = attention.get("softmax_chunked", query_chunk=4, key_chunk=3)
    grad = jax.grad(lambda q, k, v: mech.apply({}, q, k, v).sum(), (0, 1, 2))
    for a, b in zip(grad(q, k, v), jax.jit(grad)(q, k, v), strict=True):
        assert_close(a, b, what="eager vs jit")
