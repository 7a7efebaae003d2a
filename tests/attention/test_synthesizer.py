"""Synthesizer (Tay et al. 2021): properties the paper states, masks, limits and errors.
(Outputs with every mask kind against the float64 reference: test_table.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attnbench.nn import flops as flops_lib
from tests.attention.ref_synthesizer import dense_reference, random_reference

B, H, D, C = 2, 2, 3, 8
NAMES = ("synthesizer_random", "synthesizer_dense")


def _setup(name, n, max_len=None, seed=0, dtype=jnp.float64, **hparams):
    mech = attention.get(name, **hparams)
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(B, n, H, D)) for _ in range(3))
    x = rng.normal(size=(B, n, C))
    params = mech.init(
        jax.random.key(seed), num_heads=H, head_dim=D, model_dim=C, max_len=max_len or n
    )
    params = jax.tree.map(lambda a: jnp.asarray(a, dtype), params)
    return mech, params, q, k, v, x


def _call(mech, params, q, k, v, x, **kw):
    extra = {"x": jnp.asarray(x)} if "x" in mech.inputs else {}
    return mech.apply(params, jnp.asarray(q), jnp.asarray(k), jnp.asarray(v), **extra, **kw)


def _ref(name, params, q, k, v, x, mask=None, causal=False):
    np_params = jax.tree.map(np.asarray, params)
    if name == "synthesizer_dense":
        return dense_reference(np_params, q, k, v, mask, x, causal=causal)
    return random_reference(np_params, q, k, v, mask, causal=causal)


@pytest.mark.parametrize("name", NAMES)
def test_output_and_weights_do_not_depend_on_q_and_k(name):
    with jax.enable_x64(True):
        mech, params, q, k, v, x = _setup(name, 6)
        loss = lambda q, k: (_call(mech, params, q, k, v, x) ** 2).sum()  # noqa: E731
        gq, gk = jax.grad(loss, (0, 1))(jnp.asarray(q), jnp.asarray(k))
        assert float(jnp.abs(gq).max()) == 0.0 and float(jnp.abs(gk).max()) == 0.0
        gv = jax.grad(lambda v: (_call(mech, params, q, k, v, x) ** 2).sum())(jnp.asarray(v))
        assert float(jnp.abs(gv).max()) > 0.0  # the check has teeth: v does matter
        out = _call(mech, params, q, k, v, x)
        other = _call(mech, params, q * 5 + 1, -k, v, x)
        no_qk = mech.apply(
            params, None, None, jnp.asarray(v), **({"x": x} if "x" in mech.inputs else {})
        )
        np.testing.assert_array_equal(np.asarray(out), np.asarray(other))
        np.testing.assert_array_equal(np.asarray(out), np.asarray(no_qk))
    assert not mech.needs_qk


def _probabilities(mech, params, x, n, **kw):
    """P `[B, N, H, M]` read off the output for v = the identity (Dv = M = N)."""
    eye = jnp.broadcast_to(jnp.eye(n)[None, :, None, :], (B, n, H, n))
    extra = {"x": x} if "x" in mech.inputs else {}
    return mech.apply(params, None, None, eye, **extra, **kw)


def test_dense_weights_of_a_query_depend_only_on_its_own_input():
    n = 5
    with jax.enable_x64(True):
        mech, params, _, _, _, x = _setup("synthesizer_dense", n)
        jac = jax.jacobian(lambda x: _probabilities(mech, params, x, n))(jnp.asarray(x))
        # jac[b, i, h, j, b', i', c]: row i of P against token i' of sequence b'.
        block = jnp.abs(jac).sum(axis=(2, 3, 6))  # [B, N, B, N]
        for b in range(B):
            for b2 in range(B):
                off = np.asarray(block[b, :, b2, :])
                expected_support = np.eye(n, dtype=bool) if b == b2 else np.zeros((n, n), bool)
                assert (off[~expected_support] == 0).all()
                assert (off[expected_support] > 0).all()


def test_random_weights_are_shared_by_the_batch_and_are_the_softmax_of_r():
    n = 4
    with jax.enable_x64(True):
        mech, params, *_ = _setup("synthesizer_random", n, max_len=7)
        p = np.asarray(_probabilities(mech, params, None, n))
        r = np.asarray(params["R"])[:, :n, :n]
        expected = np.exp(r) / np.exp(r).sum(-1, keepdims=True)  # [H, N, M]
        for b in range(B):
            np.testing.assert_allclose(p[b].transpose(1, 0, 2), expected, rtol=1e-12)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [1, 5, 9])  # one token; shorter than max_len (cropping); odd
def test_matches_reference_with_cropping_and_masks(name, n):
    pad = np.ones((B, n), bool)
    pad[0, n - 1 :] = False
    with jax.enable_x64(True):
        mech, params, q, k, v, x = _setup(name, n, max_len=11)
        for mask in (None, pad):
            got = jax.jit(lambda p, q, k, v, x, m: _call(mech, p, q, k, v, x, mask=m))(
                params, q, k, v, x, mask
            )
            ref_mask = None if mask is None else np.broadcast_to(mask[:, None, None], (B, H, n, n))
            np.testing.assert_allclose(
                np.asarray(got), _ref(name, params, q, k, v, x, ref_mask), rtol=1e-10, atol=1e-12
            )
            if mask is not None:  # padded keys carry no weight
                assert np.asarray(got)[1].any()
                if n == 1:
                    np.testing.assert_array_equal(np.asarray(got)[0], 0.0)  # fully masked row


@pytest.mark.parametrize("name", NAMES)
def test_causal_matches_reference_and_is_causal(name):
    n = 7
    with jax.enable_x64(True):
        mech, params, q, k, v, x = _setup(name, n, max_len=9, causal=True)
        got = np.asarray(jax.jit(lambda v: _call(mech, params, q, k, v, x))(v))
        np.testing.assert_allclose(
            got, _ref(name, params, q, k, v, x, causal=True), rtol=1e-10, atol=1e-12
        )
        # Output at i independent of every input after i (values and, for dense, x).
        later = v.copy()
        later[:, 4:] += 3.0
        x_later = x.copy()
        x_later[:, 4:] -= 2.0
        moved = np.asarray(_call(mech, params, q, k, later, x_later))
        np.testing.assert_allclose(moved[:, :4], got[:, :4], rtol=1e-12)
        assert not np.allclose(moved[:, 4:], got[:, 4:])
        # The non-causal one does look ahead (the test above has teeth).
        free = attention.get(name)
        a = np.asarray(_call(free, params, q, k, v, x))
        b = np.asarray(_call(free, params, q, k, later, x_later))
        assert not np.allclose(a[:, :4], b[:, :4])


def test_fixed_random_is_a_buffer_with_the_same_values():
    kw = dict(num_heads=H, head_dim=D, max_len=6)
    learned = attention.get("synthesizer_random").init(jax.random.key(3), **kw)
    fixed = attention.get("synthesizer_random", fixed=True).init(jax.random.key(3), **kw)
    assert set(learned) == {"R"} and set(fixed) == {"buffers"}
    np.testing.assert_array_equal(learned["R"], fixed["buffers"]["R"])
    mech = attention.get("synthesizer_random", fixed=True)
    v = jnp.ones((1, 6, H, D))
    g = jax.grad(lambda p: mech.apply(p, None, None, v * jnp.arange(6.0)[:, None, None]).sum())(
        fixed
    )
    assert float(jnp.abs(g["buffers"]["R"]).max()) == 0.0  # constant
    g = jax.grad(
        lambda p: (
            attention.get("synthesizer_random")
            .apply(p, None, None, v * jnp.arange(6.0)[:, None, None])
            .sum()
        )
    )(learned)
    assert float(jnp.abs(g["R"]).max()) > 0.0  # trainable


def test_lra_initialisation_scale():
    r = attention.get("synthesizer_random").init(
        jax.random.key(0), num_heads=4, head_dim=8, max_len=64
    )["R"]
    limit = np.sqrt(6.0 / (2 * 64 * 4))  # xavier_uniform on [H, L, L]: fan = L * H
    assert float(jnp.abs(r).max()) <= limit and float(jnp.abs(r).max()) > 0.9 * limit
    dense = attention.get("synthesizer_dense").init(
        jax.random.key(0), num_heads=4, head_dim=8, model_dim=32, max_len=64
    )
    assert dense["w1"].shape == (32, 4, 8) and dense["w2"].shape == (8, 64)
    assert float(jnp.abs(dense["b1"]).max()) == 0.0 and float(jnp.abs(dense["b2"]).max()) == 0.0


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_float32_agrees_with_float64(name):
    with jax.enable_x64(True):
        mech, params, q, k, v, x = _setup(name, 9)
        ref = np.asarray(_call(mech, params, q, k, v, x))
        p32 = jax.tree.map(lambda a: a.astype(jnp.float32), params)
        f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
        got = _call(mech, p32, f32(q), f32(k), f32(v), f32(x))
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got), ref, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", NAMES)
def test_sequence_longer_than_max_len_is_a_value_error_naming_max_len(name):
    mech, params, q, k, v, x = _setup(name, 9, max_len=8, dtype=jnp.float32)
    with pytest.raises(ValueError, match="max_len=8"):
        _call(mech, params, q, k, v, x)
    with pytest.raises(ValueError, match="max_len"):
        mech.init(jax.random.key(0), num_heads=H, head_dim=D, model_dim=C, max_len=None)


def test_bad_hyper_parameters_and_inputs_are_value_errors():
    assert attention.check("synthesizer_random", {"dropout_rate": 1.5})
    assert attention.check("synthesizer_dense", {"causal": "yes"})
    assert attention.check("synthesizer_random", {"fixed": 1})
    assert not attention.check("synthesizer_random", {"fixed": True, "causal": True})
    mech, params, q, k, v, x = _setup("synthesizer_dense", 6, dtype=jnp.float32)
    with pytest.raises(ValueError, match="layer input x"):
        mech.apply(params, None, None, jnp.asarray(v))
    with pytest.raises(ValueError, match="model_dim"):
        mech.apply(params, None, None, jnp.asarray(v), x=jnp.ones((B, 6, C + 1)))
    causal = attention.get("synthesizer_random", causal=True)
    p = causal.init(jax.random.key(0), num_heads=H, head_dim=D, max_len=8)
    with pytest.raises(ValueError, match="N == M"):
        causal.apply(p, jnp.ones((B, 4, H, D)), None, jnp.ones((B, 6, H, D)))
    drop = attention.get("synthesizer_random", dropout_rate=0.5)
    with pytest.raises(ValueError, match="needs `key`"):
        drop.apply(p, None, None, jnp.ones((B, 6, H, D)), train=True)


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_dropout_only_when_training():
    mech, params, q, k, v, x = _setup("synthesizer_random", 6, dtype=jnp.float32, dropout_rate=0.5)
    plain = attention.get("synthesizer_random")
    ev = _call(mech, params, q, k, v, x, train=False)
    np.testing.assert_allclose(ev, _call(plain, params, q, k, v, x), rtol=1e-6)
    tr = _call(mech, params, q, k, v, x, train=True, key=jax.random.key(1))
    assert not np.allclose(tr, ev)


def _compiled_flops(fn, *args) -> float:
    analysis = jax.jit(fn).lower(*args).compile().cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    return float(analysis.get("flops", 0.0))


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_flop_formula_matches_the_compiled_count(name, masked):
    n, h, d = 256, 4, 64
    mech = attention.get(name)
    params = jax.eval_shape(
        lambda: mech.init(jax.random.key(0), num_heads=h, head_dim=d, model_dim=h * d, max_len=n)
    )
    v = jax.ShapeDtypeStruct((1, n, h, d), jnp.float32)
    mask = jax.ShapeDtypeStruct((1, n), jnp.bool_) if masked else None
    x = jax.ShapeDtypeStruct((1, n, h * d), jnp.float32)

    def forward(params, v, mask, x):
        extra = {"x": x} if "x" in mech.inputs else {}
        return mech.apply(params, None, None, v, mask=mask, **extra)

    compiled = _compiled_flops(forward, params, v, mask, x)
    kw = dict(n=n, m=n, heads=h, head_dim=d, masked=masked)
    analytic = flops_lib.attention_flops(name, {}, **kw)
    matmul = flops_lib.attention_flops(name, {}, elementwise=False, **kw)
    assert matmul <= compiled
    assert abs(compiled - analytic) <= (analytic - matmul) + 0.005 * compiled
