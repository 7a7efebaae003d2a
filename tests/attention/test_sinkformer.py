"""Sinkformer (Sander et al. 2022): properties the paper states, masks, limits and errors.
(Outputs with every mask kind against the float64 reference: test_table.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import sinkformer
from attnbench.nn import flops as flops_lib
from tests.attention.ref_sinkformer import sinkformer_reference

B, H, D = 2, 2, 4


def _qkv(n, m=None, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    m = n if m is None else m
    q = rng.normal(size=(B, n, H, D)) * scale
    k, v = rng.normal(size=(B, m, H, D)) * scale, rng.normal(size=(B, m, H, D))
    return q, k, v


def _probs(q, k, mask=None, iters=3):
    """P `[B, H, N, M]` read off the output for v = the identity (through the public apply)."""
    m = k.shape[1]
    eye = jnp.broadcast_to(jnp.eye(m)[None, :, None, :], (B, m, H, m))
    out = attention.get("sinkformer", sinkhorn_iters=iters).apply({}, q, k, eye, mask=mask)
    return jnp.transpose(out, (0, 2, 1, 3))


def _key_padding(n):
    pad = np.ones((B, n), bool)
    pad[0, n - 3 :] = False
    return pad


def _random_4d(n, m):
    full = np.random.default_rng(7).random((B, H, n, m)) > 0.4
    full[..., 0] = True
    return full


@pytest.mark.parametrize("kind", ["none", "key_padding", "full_4d"])
def test_one_iteration_is_softmax_attention(kind):
    n = 9
    mask = {"none": None, "key_padding": _key_padding(n), "full_4d": _random_4d(n, n)}[kind]
    with jax.enable_x64(True):
        q, k, v = (jnp.asarray(a) for a in _qkv(n))
        got = attention.get("sinkformer", sinkhorn_iters=1).apply({}, q, k, v, mask=mask)
        soft = attention.get("softmax", implementation="xla").apply({}, q, k, v, mask=mask)
        np.testing.assert_allclose(np.asarray(got), np.asarray(soft), rtol=1e-12, atol=1e-13)
        three = attention.get("sinkformer", sinkhorn_iters=3).apply({}, q, k, v, mask=mask)
        assert not np.allclose(np.asarray(three), np.asarray(soft))  # more steps do differ


def test_one_iteration_is_softmax_for_cross_attention_too():
    with jax.enable_x64(True):
        q, k, v = (jnp.asarray(a) for a in _qkv(5, m=8))
        got = attention.get("sinkformer", sinkhorn_iters=1).apply({}, q, k, v)
        soft = attention.get("softmax", implementation="xla").apply({}, q, k, v)
        np.testing.assert_allclose(np.asarray(got), np.asarray(soft), rtol=1e-12)


@pytest.mark.parametrize("iters", [60, 61])  # ending on a column step, on a row step
def test_doubly_stochastic_at_convergence(iters):
    n = 8
    with jax.enable_x64(True):
        q, k, _ = (jnp.asarray(a) for a in _qkv(n))
        p = np.asarray(_probs(q, k, iters=iters))
        # Not yet at 3 iterations (the balancing really does something), closer at 9.
        col_err = lambda t: np.abs(np.asarray(_probs(q, k, iters=t)).sum(-2) - 1).max()  # noqa: E731
        assert col_err(3) > col_err(9) > 1e-6
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-10)
    np.testing.assert_allclose(p.sum(-2), 1.0, atol=1e-10)
    assert (p > 0).all()


def test_cross_attention_columns_carry_n_over_m():
    with jax.enable_x64(True):
        q, k, _ = (jnp.asarray(a) for a in _qkv(6, m=4))
        p = np.asarray(_probs(q, k, iters=101))
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-10)
    np.testing.assert_allclose(p.sum(-2), 6 / 4, atol=1e-10)


def test_key_padding_balances_the_valid_block_and_ignores_padded_queries():
    n = 9
    pad = _key_padding(n)
    with jax.enable_x64(True):
        q, k, v = (jnp.asarray(a) for a in _qkv(n))
        p = np.asarray(_probs(q, k, pad, iters=80))
        valid = pad[0]
        block = p[0][:, valid][:, :, valid]  # [H, 6, 6]
        np.testing.assert_allclose(block.sum(-1), 1.0, atol=1e-10)
        np.testing.assert_allclose(block.sum(-2), 1.0, atol=1e-10)
        np.testing.assert_array_equal(p[0][:, :, ~valid], 0.0)  # padded keys: no attention
        # A padded query's row is the softmax over the valid keys.
        logits = np.einsum("nhd,mhd->hnm", np.asarray(q[0]), np.asarray(k[0])) / np.sqrt(D)
        soft = np.exp(logits[:, ~valid][:, :, valid])
        np.testing.assert_allclose(
            p[0][:, ~valid][:, :, valid], soft / soft.sum(-1, keepdims=True), rtol=1e-12
        )
        # Padded queries never influence the valid tokens' outputs.
        sink = attention.get("sinkformer")
        out = np.asarray(sink.apply({}, q, k, v, mask=pad))
        q2 = q.at[0, ~valid].add(5.0)
        moved = np.asarray(sink.apply({}, q2, k, v, mask=pad))
        np.testing.assert_allclose(moved[0, valid], out[0, valid], rtol=1e-12)
        np.testing.assert_allclose(moved[1], out[1], rtol=1e-12)
        # Whereas unpadded, every query takes part in the column sums (the check has teeth).
        free = np.asarray(sink.apply({}, q2, k, v))
        assert not np.allclose(free[0, valid], np.asarray(sink.apply({}, q, k, v))[0, valid])


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_fully_masked_rows_are_zero_and_gradients_finite():
    n = 6
    full = _random_4d(n, n)
    full[0, 0, 2] = False  # query 2 of (batch 0, head 0) sees nothing
    with jax.enable_x64(True):
        q, k, v = (jnp.asarray(a) for a in _qkv(n, scale=20.0))  # large logits: log domain
        sink = attention.get("sinkformer", sinkhorn_iters=5)
        out = sink.apply({}, q, k, v, mask=full)
        assert float(jnp.abs(out[0, 2, 0]).max()) == 0.0
        grads = jax.grad(
            lambda q, k, v: (sink.apply({}, q, k, v, mask=full) ** 2).sum(), (0, 1, 2)
        )(q, k, v)
        assert all(bool(jnp.isfinite(g).all()) for g in grads)
        # Logits of a few hundred: plain exp would underflow whole rows; the log domain keeps
        # every active row normalised (5 iterations end on a row step).
        p = np.asarray(_probs(q, k, full, iters=5))
        rows = p.sum(-1)
        np.testing.assert_allclose(rows[full.any(-1)], 1.0, atol=1e-9)
        assert rows[0, 0, 2] == 0.0
        q1, k1, v1 = _qkv(n)  # moderate logits: the plain reference is accurate
        np.testing.assert_allclose(
            np.asarray(sink.apply({}, q1, k1, v1, mask=full)),
            sinkformer_reference({}, q1, k1, v1, full, sinkhorn_iters=5),
            rtol=1e-10,
            atol=1e-12,
        )
        all_pad = np.zeros((B, n), bool)
        out = sink.apply({}, q, k, v, mask=all_pad)
        assert float(jnp.abs(out).max()) == 0.0


def test_causal_mask_via_4d():
    n = 7
    causal = np.tril(np.ones((n, n), bool))[None, None]
    with jax.enable_x64(True):
        q, k, v = _qkv(n)
        sink = attention.get("sinkformer", sinkhorn_iters=4)
        got = np.asarray(jax.jit(lambda q, k, v: sink.apply({}, q, k, v, mask=causal))(q, k, v))
        ref = sinkformer_reference({}, q, k, v, causal, sinkhorn_iters=4)
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
        # Columns couple the rows: the balanced matrix is NOT causal in its inputs (a later
        # query changes earlier outputs through the column sums), documented behaviour.
        q2 = q.copy()
        q2[:, -1] += 1.0
        moved = np.asarray(sink.apply({}, q2, k, v, mask=causal))
        assert not np.allclose(moved[:, 0], got[:, 0])
        # ... while its pattern is: no weight on later keys.
        p = np.asarray(_probs(jnp.asarray(q), jnp.asarray(k), causal, iters=4))
        assert (p[..., ~causal[0, 0]] == 0).all()


@pytest.mark.parametrize("n", [1, 13])
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_jit_float32_agrees_with_float64(n):
    pad = np.ones((B, n), bool)
    if n > 1:
        pad[1, -1] = False
    q, k, v = _qkv(n)
    sink = attention.get("sinkformer")
    with jax.enable_x64(True):
        ref = np.asarray(sink.apply({}, q, k, v, mask=pad))
    f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
    got = jax.jit(lambda q, k, v: sink.apply({}, q, k, v, mask=pad))(f32(q), f32(k), f32(v))
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got), ref, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(
        ref,
        sinkformer_reference({}, q, k, v, np.broadcast_to(pad[:, None, None], (B, H, n, n))),
        rtol=1e-10,
        atol=1e-12,
    )


def test_bad_hyper_parameters_are_value_errors():
    q, k, v = (jnp.asarray(a, jnp.float32) for a in _qkv(4))
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="sinkhorn_iters"):
            attention.get("sinkformer", sinkhorn_iters=bad).apply({}, q, k, v)
        assert attention.check("sinkformer", {"sinkhorn_iters": bad})
    assert attention.check("sinkformer", {"dropout_rate": 1.0})
    assert attention.check("sinkformer", {"scale": -1.0})
    with pytest.raises(ValueError, match="needs `key`"):
        attention.get("sinkformer", dropout_rate=0.1).apply({}, q, k, v, train=True)
    with pytest.raises(ValueError, match="broadcast"):
        attention.get("sinkformer").apply({}, q, k, v, mask=np.ones((B, H, 3, 4), bool))


def test_backward_stores_no_matrix_per_iteration():
    """Each Sinkhorn step and the final P V are rematerialised: the residuals saved for the
    backward pass are the logits and the (broadcast) mask only, at 40 iterations as at 2."""
    n = 64
    q, k, v = (jnp.asarray(a, jnp.float32) for a in _qkv(n))

    def residual_matrices(iters):
        sink = attention.get("sinkformer", sinkhorn_iters=iters)
        f = lambda q, k, v: sink.apply({}, q, k, v)  # noqa: E731
        _, vjp = jax.vjp(f, q, k, v)  # its leaves are the residuals kept for the backward
        return sum(1 for x in jax.tree.leaves(vjp) if x.shape[-2:] == (n, n))

    assert residual_matrices(40) == residual_matrices(2) <= 2


@pytest.mark.parametrize(
    "kind",
    [
        "key_padding",
        pytest.param("none", marks=pytest.mark.slow),
        pytest.param("full_4d", marks=pytest.mark.slow),
    ],
)
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_large_calls_in_head_groups_equal_one_call(kind, monkeypatch):
    """Above _CHUNK_ELEMENTS scores the (batch, head) pairs run in groups (here 3 pairs per
    group over 4: a partial last group); outputs and gradients are the same."""
    n = 6
    mask = {"none": None, "key_padding": _key_padding(n), "full_4d": _random_4d(n, n)}[kind]
    sink = attention.get("sinkformer", sinkhorn_iters=4)
    loss = lambda q, k, v: (sink.apply({}, q, k, v, mask=mask) ** 2).sum()  # noqa: E731
    with jax.enable_x64(True):
        q, k, v = (jnp.asarray(a) for a in _qkv(n))
        whole = sink.apply({}, q, k, v, mask=mask)
        g_whole = jax.grad(loss, (0, 1, 2))(q, k, v)
        monkeypatch.setattr(sinkformer, "_CHUNK_ELEMENTS", 3 * n * n)
        grouped = jax.jit(lambda q, k, v: sink.apply({}, q, k, v, mask=mask))(q, k, v)
        g_grouped = jax.grad(loss, (0, 1, 2))(q, k, v)
    np.testing.assert_allclose(np.asarray(grouped), np.asarray(whole), rtol=1e-12, atol=1e-14)
    for a, b in zip(g_grouped, g_whole, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_large_calls_with_dropout_drop_and_rescale(monkeypatch):
    monkeypatch.setattr(sinkformer, "_CHUNK_ELEMENTS", 16)
    q, k, v = (jnp.asarray(a, jnp.float32) for a in _qkv(4))
    sink = attention.get("sinkformer", dropout_rate=0.5)
    ev = sink.apply({}, q, k, v)
    tr = sink.apply({}, q, k, v, train=True, key=jax.random.key(0))
    assert tr.shape == ev.shape and bool(jnp.isfinite(tr).all()) and not np.allclose(tr, ev)


def _compiled_flops(fn, *args) -> float:
    analysis = jax.jit(fn).lower(*args).compile().cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    return float(analysis.get("flops", 0.0))


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("iters", [1, 3])
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_flop_formula_matches_the_compiled_count(iters, masked):
    n, h, d = 256, 4, 64
    qkv = jax.ShapeDtypeStruct((1, n, h, d), jnp.float32)
    mask = jax.ShapeDtypeStruct((1, n), jnp.bool_) if masked else None
    sink = attention.get("sinkformer", sinkhorn_iters=iters)
    compiled = _compiled_flops(
        lambda q, k, v, m: sink.apply({}, q, k, v, mask=m), qkv, qkv, qkv, mask
    )
    kw = dict(n=n, m=n, heads=h, head_dim=d, masked=masked)
    hp = {"sinkhorn_iters": iters}
    analytic = flops_lib.attention_flops("sinkformer", hp, **kw)
    matmul = flops_lib.attention_flops("sinkformer", hp, elementwise=False, **kw)
    assert matmul <= compiled
    assert abs(compiled - analytic) <= (analytic - matmul) + 0.005 * compiled, (
        analytic,
        matmul,
        compiled,
    )


def test_probabilities_helper_matches_apply():
    q, k, _ = (jnp.asarray(a) for a in _qkv(5))
    np.testing.assert_allclose(
        np.asarray(sinkformer.probabilities(q, k, sinkhorn_iters=3)),
        np.asarray(_probs(q, k, iters=3)),
        rtol=1e-5,
        atol=1e-6,
    )
