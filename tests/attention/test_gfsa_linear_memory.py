"""GFSA in linear memory (attention/gfsa.py, `memory="linear"`): ĀV and Ā(ĀV) (Ā^K V for
gfsa_exact) as attention passes through softmax_chunked, never forming Ā. Values and gradients
against the float64 reference of tests/attention/ref_gfsa.py (explicit N x N matrices) with
every mask kind, bias and cross-attention; the `memory` choice and its refusals (attention
dropout in training, talking heads); the fused-kernel branch; bounded compiled memory at 64k
tokens."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import cost, gfsa, kernels
from tests.attention import ref_gfsa
from tests.tolerances import assert_close

B, H, D, DV = 2, 2, 3, 2
# The reference-table cases of ref_gfsa.py (init_wk != 0 and w0 != 0), here in linear memory.
FORMS = {
    "gfsa": dict(order=3, w0=0.2, exact=False),
    "gfsa_exact": dict(order=4, w0=-0.1, exact=True),
}
CHUNKS = dict(query_chunk=4, key_chunk=3)  # several blocks each way, the last ones padded


def _qkv(n, m, seed=0, dv=DV):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(B, n, H, D)),
        rng.normal(size=(B, m, H, D)),
        rng.normal(size=(B, m, H, dv)),
    )


def _mask(kind, n, m):
    """(mask as passed, or None; the same broadcast to [B, H, N, M], or None)."""
    rng = np.random.default_rng(5)
    if kind == "none":
        return None, None
    if kind == "key_padding":
        mask = np.ones((B, m), bool)
        mask[0, m - 2 :] = False
        return mask, np.broadcast_to(mask[:, None, None, :], (B, H, n, m))
    if kind == "full_4d":
        mask = rng.random((B, H, n, m)) > 0.3
        mask[1, 1, 2] = False  # one fully masked query row
        return mask, mask
    if kind == "causal":
        mask = np.tril(np.ones((n, m), bool))[None, None]
        return mask, np.broadcast_to(mask, (B, H, n, m))
    raise AssertionError(kind)


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "w_k": rng.normal(size=H) + 0.3,
        "w_0": rng.normal(size=H),
        "w_1": 1 + rng.normal(size=H),
    }


def _apply(name, memory="linear", **hp):
    form = FORMS[name]
    fn = gfsa.apply_exact if form["exact"] else gfsa.apply
    kw = CHUNKS if memory == "linear" else {}
    return functools.partial(fn, order=form["order"], w0=form["w0"], memory=memory, **kw, **hp)


def _reference(name, params, q, k, v, mask4, bias=None):
    form = FORMS[name]
    return ref_gfsa.gfsa_reference(
        params, q, k, v, mask4, bias, order=form["order"], w0=form["w0"], exact=form["exact"]
    )


def _f64(tree):
    return jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), tree)


@pytest.mark.parametrize("name", sorted(FORMS))
@pytest.mark.parametrize("mask_kind", ["none", "key_padding", "full_4d", "causal"])
def test_matches_the_float64_reference(name, mask_kind):
    n = m = 7
    q, k, v = _qkv(n, m)
    mask, mask4 = _mask(mask_kind, n, m)
    params = _params()
    bias = np.random.default_rng(3).normal(size=(B, H, n, m))
    expected = _reference(name, params, q, k, v, mask4, bias)
    with jax.enable_x64(True):
        got = jax.jit(_apply(name))(_f64(params), *_f64((q, k, v)), mask=mask, bias=bias)
        quadratic = _apply(name, memory="quadratic")(
            _f64(params), *_f64((q, k, v)), mask=mask, bias=bias
        )
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(got), np.asarray(quadratic), rtol=1e-12, atol=1e-12)
    if mask4 is not None and (dead := ~mask4.any(-1)).any():
        assert np.all(np.asarray(got).transpose(0, 2, 1, 3)[dead] == 0.0)


@pytest.mark.parametrize("n,m", [(5, 9), (9, 5)])
def test_cross_attention_pads_and_crops_as_the_reference(n, m):
    q, k, v = _qkv(n, m, seed=1)
    mask, mask4 = _mask("key_padding", n, m)
    params = _params(1)
    for name in FORMS:
        expected = _reference(name, params, q, k, v, mask4)
        with jax.enable_x64(True):
            got = jax.jit(_apply(name))(_f64(params), *_f64((q, k, v)), mask=mask)
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_gradients_match_finite_differences_of_the_reference(name):
    n = m = 6
    q, k, v = _qkv(n, m, seed=2)
    mask, mask4 = _mask("full_4d", n, m)
    bias = np.random.default_rng(4).normal(size=(B, 1, n, m))
    params = _params(2)
    w = np.random.default_rng(6).normal(size=(B, n, H, DV))
    fn = _apply(name)

    def loss(q, k, v, b):
        return (fn(_f64(params), q, k, v, mask=mask, bias=b) * w).sum()

    with jax.enable_x64(True):
        grads = jax.jit(jax.grad(loss, (0, 1, 2, 3)))(*_f64((q, k, v, bias)))

    def ref_loss(q, k, v, b):
        full = np.broadcast_to(b, (B, H, n, m))
        return float((_reference(name, params, q, k, v, mask4, full) * w).sum())

    eps = 1e-6
    rng = np.random.default_rng(7)
    args = [q, k, v, bias]
    for a, g in enumerate(grads):
        g = np.asarray(g)
        assert np.all(np.isfinite(g))
        for _ in range(8):  # random coordinates keep the loops of the reference short
            idx = tuple(rng.integers(0, s) for s in args[a].shape)
            plus, minus = [x.copy() for x in args], [x.copy() for x in args]
            plus[a][idx] += eps
            minus[a][idx] -= eps
            numeric = (ref_loss(*plus) - ref_loss(*minus)) / (2 * eps)
            np.testing.assert_allclose(g[idx], numeric, rtol=1e-6, atol=1e-8, err_msg=str(a))


def test_float32_linear_equals_quadratic_values_and_gradients():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(9, 9, seed=8))
    mask, _ = _mask("causal", 9, 9)
    params = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), _params(3))
    outs = {}
    for memory in ("linear", "quadratic"):
        fn = _apply("gfsa", memory=memory, mask=mask)
        loss = lambda p, q, k, v, fn=fn: (fn(p, q, k, v) ** 2).sum()
        outs[memory] = jax.jit(jax.value_and_grad(loss, (0, 1, 2, 3)))(params, q, k, v)
    leaves = jax.tree.leaves(outs["linear"]), jax.tree.leaves(outs["quadratic"])
    for a, b in zip(*leaves, strict=True):
        assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_fully_masked_rows_are_zero_and_masked_values_get_no_gradient():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(6, 6, seed=9))
    pad = np.ones((B, 6), bool)
    pad[0] = False  # batch 0: every key masked
    pad[1, 4:] = False
    params = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), _params(4))
    for name in FORMS:
        fn = functools.partial(_apply(name), params, mask=pad)
        out, vjp = jax.vjp(jax.jit(fn), q, k, v)
        grads = vjp(jnp.ones_like(out))
        assert np.all(np.asarray(out[0]) == 0.0)
        assert all(np.all(np.isfinite(np.asarray(g))) for g in grads)
        # masked values (batch 0, keys 4, 5 of batch 1, also through w_0 I) get no gradient
        assert np.all(np.asarray(grads[2][0]) == 0.0)
        assert np.all(np.asarray(grads[2][1, 4:]) == 0.0)


def test_plain_gfsa_even_layer_is_one_softmax_pass():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(8, 8, seed=10))
    odd = {"buffers": {gfsa.PLAIN_LAYER: jnp.asarray(True)}}
    got = jax.jit(_apply("gfsa"))(odd, q, k, v)
    want = jax.jit(attention.get("softmax_chunked", **CHUNKS).apply)({}, q, k, v)
    assert_close(got, want, rtol=1e-6, atol=1e-6, what="GFSA_even odd layer")


# --- choosing the memory ----------------------------------------------------------------------


def test_auto_is_quadratic_on_short_and_linear_on_long_sequences():
    path = functools.partial(gfsa.memory_path, "auto")
    assert path(n=gfsa.LINEAR_FROM - 1, m=gfsa.LINEAR_FROM - 1) == "quadratic"
    assert path(n=gfsa.LINEAR_FROM, m=gfsa.LINEAR_FROM) == "linear"
    assert path(n=16, m=gfsa.LINEAR_FROM) == "linear"  # cross-attention: max(N, M)
    # where the linear form is another function: quadratic at any length
    assert path(n=65536, m=65536, dropout=True) == "quadratic"
    assert path(n=65536, m=65536, talking_heads=True) == "quadratic"
    assert gfsa.memory_path("quadratic", n=65536, m=65536) == "quadratic"
    assert gfsa.memory_path("linear", n=4, m=4) == "linear"


def test_linear_memory_refuses_what_it_cannot_compute():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(6, 6))
    params = _params()
    key = jax.random.key(0, impl="rbg")
    with pytest.raises(ValueError, match="memory='linear' cannot run with attention dropout"):
        _apply("gfsa", dropout_rate=0.1)(params, q, k, v, train=True, key=key)
    mech = attention.get("gfsa", talking_heads=True, memory="linear")
    th_params = mech.init(jax.random.key(0), num_heads=H, head_dim=D)
    with pytest.raises(ValueError, match="memory='linear' cannot run with talking_heads=True"):
        mech.apply(th_params, q, k, v)
    with pytest.raises(ValueError, match="memory='lots' is not one of auto, quadratic, linear"):
        _apply("gfsa", memory="lots")(params, q, k, v)
    # Evaluation ignores the dropout rate: the linear form runs.
    _apply("gfsa", dropout_rate=0.1)(params, q, k, v, train=False)
    # The config check says so before any model is built.
    problems = attention.check("gfsa", {"memory": "linear", "dropout_rate": 0.1})
    assert (
        len(problems) == 1
        and "gfsa: memory='linear' cannot run with attention dropout" in (problems[0])
    )
    assert attention.check("gfsa_exact", {"memory": "linear", "talking_heads": True})
    assert attention.check("gfsa", {"memory": 2})
    assert not attention.check("gfsa", {"memory": "linear"})
    assert not attention.check("gfsa", {"memory": "auto", "dropout_rate": 0.1})


def test_auto_with_dropout_in_training_is_the_quadratic_path_at_long_lengths():
    # At LINEAR_FROM tokens "auto" would take the linear form; training with attention dropout
    # falls back to the quadratic one, so the result is that of memory="quadratic", bit for bit.
    n = gfsa.LINEAR_FROM
    rng = np.random.default_rng(11)
    q, k, v = (jnp.asarray(rng.normal(size=(1, n, 1, 4)), jnp.float32) for _ in range(3))
    params = {"w_k": jnp.asarray([0.5], jnp.float32)}
    key = jax.random.key(3, impl="rbg")
    outs = {
        memory: jax.jit(
            functools.partial(gfsa.apply, memory=memory, dropout_rate=0.2, train=True, key=key)
        )(params, q, k, v)
        for memory in ("auto", "quadratic")
    }
    np.testing.assert_array_equal(np.asarray(outs["auto"]), np.asarray(outs["quadratic"]))


def test_fused_kernel_branch_equals_the_chunked_branch(monkeypatch):
    # Pretend a fused kernel takes the inputs (the GPU Pallas kernel, in interpret mode on CPU):
    # the two passes must then give what softmax_chunked's passes give.
    rng = np.random.default_rng(12)  # head dim 16: the Triton kernel's smallest tile
    q, k, v = (jnp.asarray(rng.normal(size=(B, 16, H, 16)), jnp.float32) for _ in range(3))
    pad = np.ones((B, 16), bool)
    pad[0, 11:] = False
    params = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), _params(5))
    want = jax.jit(_apply("gfsa", mask=pad))(params, q, k, v)
    monkeypatch.setattr(kernels, "choose", lambda *a, **kw: ("pallas", "test"))
    monkeypatch.setattr(kernels, "current_backend", lambda: "gpu")
    fused = functools.partial(kernels.dot_product_attention, interpret=True)
    monkeypatch.setattr(kernels, "dot_product_attention", fused)
    with kernels.record() as rec:
        got = jax.jit(_apply("gfsa", mask=pad))(params, q, k, v)
    assert rec.summary() == {"gfsa": "pallas"}
    assert_close(got, want, rtol=2e-5, atol=2e-5, what="fused vs chunked passes")


def test_flops_count_full_passes_in_linear_memory():
    call = cost.Call(n=4096, m=4096, h=8, dk=64, dv=64, d_model=512)
    one_pass = 4 * 4096 * 4096 * 8 * 64
    assert attention.get("gfsa", memory="linear").flops(call)[0] == 2 * one_pass
    assert attention.get("gfsa_exact", order=4, memory="linear").flops(call)[0] == 4 * one_pass
    assert attention.get("gfsa", memory="auto").flops(call)[0] == 2 * one_pass  # 4096 >= 2048
    assert attention.get("gfsa", memory="quadratic").flops(call)[0] == 1.5 * one_pass


# --- 64k tokens -------------------------------------------------------------------------------

N_LONG = 65536


def _long_step(mech):
    def loss(params, q, k, v):
        return (mech.apply(params, q, k, v) ** 2).sum()

    return jax.value_and_grad(loss, (0, 1, 2, 3))


def test_64k_tokens_forward_and_backward_compile_to_bounded_memory():
    """Forward + backward of GFSA at N = 65,536 (B = H = 1, D = 64) on CPU: the compiled temp
    memory is that of blocks and O(N) arrays, not of one N x N float32 matrix (17.2 GB)."""
    mech = attention.get("gfsa")  # memory="auto": linear at this length
    x = jax.ShapeDtypeStruct((1, N_LONG, 1, 64), jnp.float32)
    params = {"w_k": jax.ShapeDtypeStruct((1,), jnp.float32)}
    compiled = jax.jit(_long_step(mech)).lower(params, x, x, x).compile()
    temp = compiled.memory_analysis().temp_size_in_bytes
    # about 150 MB: blocks plus O(N) arrays (q, k, v, ĀV, their gradients: 16.8 MB each)
    assert temp < N_LONG**2 * 4 / 50, f"temp {temp / 1e6:.0f} MB"


@pytest.mark.slow  # 3.6 min measured on a loaded 2-core CPU (runs the compiled 64k step)
def test_64k_tokens_forward_and_backward_run():
    # With V = 1 every output row is w_0 + w_1 + w_K (Ā is row-stochastic), checkable at 64k.
    mech = attention.get("gfsa", w0=0.25)
    rng = np.random.default_rng(13)
    q, k = (jnp.asarray(rng.normal(size=(1, N_LONG, 1, 64)), jnp.float32) for _ in range(2))
    v = jnp.ones((1, N_LONG, 1, 64), jnp.float32)
    params = {"w_k": jnp.asarray([0.7], jnp.float32)}
    loss, (_, dq, dk, dv) = jax.jit(_long_step(mech))(params, q, k, v)
    c = 0.25 + 1.0 + 0.7  # loss = sum of out^2 = N * 64 * c^2
    assert_close(loss, N_LONG * 64 * c**2, rtol=1e-5, what="loss")
    dq, dk, dv = (np.asarray(g) for g in (dq, dk, dv))
    assert np.all(np.isfinite(dq)) and np.all(np.isfinite(dk)) and np.all(np.isfinite(dv))
    # The rows of Ā sum to 1 whatever q and k: no gradient reaches them (up to rounding).
    assert np.abs(dq).max() < 1e-3 * np.abs(dv).max() and np.abs(dk).max() < 1e-3 * np.abs(dv).max()
