"""GFSA properties (Choi et al. 2024, arXiv 2312.04234), errors and train mode."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import gfsa
from tests.attention import ref_gfsa
from tests.tolerances import assert_close, reference_precision


def _qkv(seed=0, b=2, n=6, m=6, h=3, d=4, dv=5):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(b, n, h, d)),
        rng.normal(size=(b, m, h, d)),
        rng.normal(size=(b, m, h, dv)),
    )


def _params(name="gfsa", h=3, **hparams):
    with jax.enable_x64(True):
        p = attention.get(name, **hparams).init(jax.random.key(0), num_heads=h, head_dim=4)
        return jax.tree.map(lambda x: jnp.asarray(x, jnp.float64) if x.dtype.kind == "f" else x, p)


def _np(params):
    return jax.tree.map(np.asarray, params)


def _masks(b=2, h=3, n=6, m=6):
    rng = np.random.default_rng(7)
    pad = np.ones((b, m), bool)
    pad[0, m - 2 :] = False
    full = rng.random((b, h, n, m)) > 0.4
    full[1, 2, 3, :] = False  # one fully masked query row
    causal = np.tril(np.ones((n, m), bool))[None, None]
    return {
        "none": (None, None),
        "key_padding": (pad, np.broadcast_to(pad[:, None, None, :], (b, h, n, m))),
        "full_4d": (full, full),
        "causal": (causal, np.broadcast_to(causal, (b, h, n, m))),
    }


# --- GFSA at initialisation (w_K = 0, App. I) is softmax attention: Eq. 10, our reading -----


@pytest.mark.parametrize("mask_kind", ["none", "key_padding", "full_4d", "causal"])
def test_zero_wk_is_exactly_softmax_attention(mask_kind):
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv())
    mask, _ = _masks()[mask_kind]
    bias = jnp.asarray(np.random.default_rng(3).normal(size=(2, 3, 6, 6)), jnp.float32)
    with reference_precision():
        soft = attention.get("softmax").apply({}, q, k, v, mask=mask, bias=bias)
    for name in ("gfsa", "gfsa_exact"):
        mech = attention.get(name, order=5)
        params = mech.init(jax.random.key(0), num_heads=3, head_dim=4)
        np.testing.assert_array_equal(params["w_k"], np.zeros(3))
        got = mech.apply(params, q, k, v, mask=mask, bias=bias)
        # Bit-identical on the CPU (same products, w_0 = w_K = 0 add exact zeros).
        assert_close(got, soft, rtol=0, atol=0, what=name)


# --- the O(N^2 d) evaluation equals the explicit matrices -------------------------------------


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "key_padding", "full_4d", "causal"])
def test_a_of_av_equals_explicit_filter_matrix(mask_kind, exact):
    q, k, v = _qkv(seed=1)
    mask, ref_mask = _masks()[mask_kind]
    params = {"w_k": np.array([0.7, -0.4, 1.3])}
    name = "gfsa_exact" if exact else "gfsa"
    expected = ref_gfsa.gfsa_reference(_np(params), q, k, v, ref_mask, order=5, w0=0.3, exact=exact)
    with jax.enable_x64(True):
        args = (params, *(jnp.asarray(x) for x in (q, k, v)))
        fast = attention.get(name, order=5, w0=0.3).apply(*args, mask=mask)
        explicit = gfsa.gfsa_explicit_apply(*args, mask=mask, order=5, w0=0.3, exact=exact)
    np.testing.assert_allclose(fast, explicit, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fast, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n,m", [(4, 7), (7, 4)])
def test_cross_attention_pads_to_square_like_the_authors_code(n, m):
    q, k, v = _qkv(seed=2, n=n, m=m)
    mask = np.random.default_rng(0).random((2, 3, n, m)) > 0.3
    params = {"w_k": np.array([0.5, -0.2, 0.9])}
    with jax.enable_x64(True):
        for name, exact in (("gfsa", False), ("gfsa_exact", True)):
            expected = ref_gfsa.gfsa_reference(
                _np(params), q, k, v, mask, order=3, w0=0.4, exact=exact
            )
            got = jax.jit(attention.get(name, w0=0.4).apply)(params, q, k, v, mask=mask)
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
        pad = np.ones((2, m), bool)
        pad[1, -1] = False
        ref_mask = np.broadcast_to(pad[:, None, None, :], (2, 3, n, m))
        expected = ref_gfsa.gfsa_linear_reference(_np(params), q, k, v, ref_mask, w0=0.4)
        got = jax.jit(attention.get("gfsa_linear", w0=0.4).apply)(params, q, k, v, mask=pad)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_exact_and_approximate_agree_at_k2():
    q, k, v = _qkv(seed=3)
    params = {"w_k": np.array([0.7, -0.4, 1.3])}
    mask = _masks()["full_4d"][0]
    with jax.enable_x64(True):
        approx = attention.get("gfsa", order=2, w0=0.1).apply(params, q, k, v, mask=mask)
        exact = attention.get("gfsa_exact", order=2, w0=0.1).apply(params, q, k, v, mask=mask)
        np.testing.assert_allclose(approx, exact, rtol=1e-13, atol=1e-13)
        # ... and not for K = 3, where the first-order expansion is an approximation.
        approx = attention.get("gfsa", order=3).apply(params, q, k, v)
        exact = attention.get("gfsa_exact", order=3).apply(params, q, k, v)
        assert not np.allclose(approx, exact, atol=1e-3)


@pytest.mark.parametrize("name", ["gfsa", "gfsa_exact", "gfsa_linear"])
def test_row_sums_of_the_filter_are_w0_plus_w1_plus_wk(name):
    q, k, _ = _qkv(seed=4)
    params = {"w_k": np.array([0.7, -0.4, 1.3])}
    with jax.enable_x64(True):
        out = attention.get(name, order=4, w0=0.25).apply(params, q, k, np.ones((2, 6, 3, 2)))
    expected = np.broadcast_to((0.25 + 1.0 + np.asarray(params["w_k"]))[:, None], (2, 6, 3, 2))
    np.testing.assert_allclose(out, expected, rtol=1e-12)


@pytest.mark.parametrize("order", [3, 8])
def test_theorem_4_1_error_bound_holds(order):
    # With V = I the output is the filter matrix itself, so exact - approximate (w_K = 1, w_1 = 0)
    # is Ā^K - (Ā + (K-1)(Ā² - Ā)).
    n = 12
    q, k, _ = _qkv(seed=5, n=n, m=n)
    params = {"w_k": np.ones(3), "w_1": np.zeros(3)}
    eye = np.broadcast_to(np.eye(n)[None, :, None, :], (2, n, 3, n))
    with jax.enable_x64(True):
        diff = attention.get("gfsa_exact", order=order).apply(params, 3 * q, 3 * k, eye)
        diff = diff - attention.get("gfsa", order=order).apply(params, 3 * q, 3 * k, eye)
    err = np.sqrt((np.asarray(diff) ** 2).sum(axis=(1, 3)))
    assert err.max() > 1e-3 and err.max() <= 2 * np.sqrt(n) * order


def test_causal_mask_lets_no_future_token_in():
    q, k, v = _qkv(seed=6)
    causal = np.tril(np.ones((6, 6), bool))[None, None]
    params = {"w_k": np.array([0.7, -0.4, 1.3])}
    mech = attention.get("gfsa", order=4, w0=0.3)
    with jax.enable_x64(True):
        out_row = lambda q, k, v: mech.apply(params, q, k, v, mask=causal)[:, 2].sum()
        grads = jax.jit(jax.grad(out_row, (0, 1, 2)))(q, k, v)
    for g in grads:
        assert np.all(np.asarray(g)[:, 3:] == 0.0)
        assert np.any(np.asarray(g)[:, :3] != 0.0)


def test_masked_keys_and_fully_masked_rows():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(seed=7))
    pad = np.ones((2, 6), bool)
    pad[0] = False  # batch 0: every key masked
    pad[1, 4:] = False
    params = {"w_k": np.array([0.7, -0.4, 1.3])}
    for name in ("gfsa", "gfsa_exact", "gfsa_linear"):
        fn = functools.partial(attention.get(name, w0=0.5).apply, params, mask=pad)

        @jax.jit
        def out_and_grads(q, k, v, fn=fn):
            return fn(q, k, v), jax.grad(lambda *x: fn(*x).sum(), (0, 1, 2))(q, k, v)

        out, grads = out_and_grads(q, k, v)
        assert np.all(np.asarray(out[0]) == 0.0)
        for g in grads:
            assert np.all(np.isfinite(np.asarray(g)))
        # masked values (batch 0, and keys 4, 5 of batch 1, also through w_0 I) get no gradient
        assert np.all(np.asarray(grads[2][0]) == 0.0)
        assert np.all(np.asarray(grads[2][1, 4:]) == 0.0)


# --- parameters -------------------------------------------------------------------------------


def _count(mech, layers, heads):
    total = 0
    for i in range(layers):
        p = dict(mech.init(jax.random.key(i), num_heads=heads, head_dim=64, layer_index=i))
        p.pop("buffers", None)
        total += sum(x.size for x in jax.tree.leaves(p))
    return total


def test_parameter_counts_match_the_paper():
    mech = attention.get("gfsa")
    assert _count(mech, 12, 6) == 72  # 12-layer DeiT-S
    assert _count(mech, 12, 12) == 144  # GPT-2, BERT, RoBERTa
    assert _count(attention.get("gfsa", even_layers_only=True), 12, 12) == 72  # GFSA_even
    assert _count(attention.get("gfsa", learn_w0_w1=True), 12, 12) == 3 * 144  # Algorithm 1


def test_init_values():
    p = attention.get("gfsa").init(jax.random.key(0), num_heads=4, head_dim=8)
    assert set(p) == {"w_k"} and p["w_k"].shape == (4,) and not np.any(p["w_k"])
    p = attention.get("gfsa", init_wk=0.3, learn_w0_w1=True, w0=-0.05).init(
        jax.random.key(0), num_heads=2, head_dim=8
    )
    np.testing.assert_allclose(p["w_k"], [0.3, 0.3])
    np.testing.assert_allclose(p["w_0"], [-0.05, -0.05])
    np.testing.assert_allclose(p["w_1"], [1.0, 1.0])


@pytest.mark.parametrize("name", ["gfsa", "gfsa_exact", "gfsa_linear"])
def test_gradients_reach_the_filter_coefficients(name):
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(seed=8))
    mech = attention.get(name, learn_w0_w1=True, w0=0.1)
    params = mech.init(jax.random.key(0), num_heads=3, head_dim=4)
    w = jnp.asarray(np.random.default_rng(0).normal(size=(2, 6, 3, 5)), jnp.float32)
    grads = jax.grad(lambda p: (mech.apply(p, q, k, v) * w).sum())(params)
    for label in ("w_k", "w_0", "w_1"):
        assert grads[label].shape == (3,)
        assert np.all(np.asarray(grads[label]) != 0.0), label


def test_learned_w0_w1_follow_the_reference():
    q, k, v = _qkv(seed=9)
    mask, ref_mask = _masks()["full_4d"]
    params = {
        "w_k": np.array([0.7, -0.4, 1.3]),
        "w_0": np.array([0.1, -0.2, 0.3]),
        "w_1": np.array([0.9, 1.1, 0.5]),
    }
    expected = ref_gfsa.gfsa_reference(_np(params), q, k, v, ref_mask, order=3)
    with jax.enable_x64(True):
        got = attention.get("gfsa", w0=5.0).apply(params, q, k, v, mask=mask)  # w0 overridden
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,plain", [("gfsa", "softmax"), ("gfsa_linear", None)])
def test_even_layers_only_leaves_odd_layers_plain(name, plain):
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(seed=10))
    mech = attention.get(name, even_layers_only=True, init_wk=0.5, w0=0.3)
    odd = mech.init(jax.random.key(0), num_heads=3, head_dim=4, layer_index=3, num_layers=4)
    even = mech.init(jax.random.key(0), num_heads=3, head_dim=4, layer_index=2, num_layers=4)
    assert set(odd) == {"buffers"} and gfsa.PLAIN_LAYER in odd["buffers"]
    assert set(even) == {"w_k"}
    with reference_precision():
        if plain == "softmax":
            expected = attention.get("softmax").apply({}, q, k, v)
        else:  # plain Efficient Attention is GFSA-linear with w_0 = w_K = 0
            expected = attention.get(name).apply({"w_k": jnp.zeros(3)}, q, k, v)
    # Bit-identical on the CPU; jit vs eager, so other kernels elsewhere.
    assert_close(jax.jit(mech.apply)(odd, q, k, v), expected, rtol=0, atol=0, what="odd layer")
    assert not np.allclose(mech.apply(even, q, k, v), expected, atol=1e-3)


# --- gfsa_linear ------------------------------------------------------------------------------


@pytest.mark.parametrize("mask_kind", ["none", "key_padding"])
def test_linear_equals_its_explicit_matrix_form(mask_kind):
    q, k, v = _qkv(seed=11)
    mask, ref_mask = _masks()[mask_kind]
    params = {"w_k": np.array([0.7, -0.4, 1.3])}
    a = ref_gfsa.efficient_attention_matrix(q, k, ref_mask)
    np.testing.assert_allclose(a.sum(-1)[1], 1.0, rtol=1e-12)  # row-stochastic by construction
    expected = ref_gfsa.filtered(_np(params), a, v, ref_mask, order=6, w0=0.2, exact=False)
    with jax.enable_x64(True):
        got = attention.get("gfsa_linear", order=6, w0=0.2).apply(params, q, k, v, mask=mask)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_linear_accepts_broadcast_key_padding_and_rejects_general_masks():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(seed=12))
    params = {"w_k": np.array([0.7, -0.4, 1.3])}
    pad = _masks()["key_padding"][0]
    mech = attention.get("gfsa_linear")
    assert_close(
        mech.apply(params, q, k, v, mask=pad),
        mech.apply(params, q, k, v, mask=pad[:, None, None]),
        rtol=0,
        atol=0,
    )
    with pytest.raises(ValueError, match="key-padding masks only"):
        mech.apply(params, q, k, v, mask=_masks()["full_4d"][0])
    with pytest.raises(ValueError, match="key-padding masks only"):
        mech.apply(params, q, k, v, mask=_masks()["causal"][0])


# --- cost: no O(N^3) (or, for gfsa_linear, no N x N) intermediate -----------------------------

N_COST = 29  # distinct from every other dimension below


def _jaxprs(jaxpr):
    yield jaxpr
    for eqn in jaxpr.eqns:
        for val in eqn.params.values():
            for sub in val if isinstance(val, (tuple, list)) else (val,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _jaxprs(inner)


def _eqns(fn, *args):
    closed = jax.make_jaxpr(fn)(*args)
    return [eqn for j in _jaxprs(closed.jaxpr) for eqn in j.eqns]


def _cubic_dots(eqns):
    """dot_generals contracting an N axis into an output with two N axes: N x N @ N x N."""
    found = []
    for eqn in eqns:
        if eqn.primitive.name != "dot_general":
            continue
        (lhs_c, _), _ = eqn.params["dimension_numbers"]
        lhs_shape = eqn.invars[0].aval.shape
        out_shape = eqn.outvars[0].aval.shape
        if any(lhs_shape[d] == N_COST for d in lhs_c) and list(out_shape).count(N_COST) >= 2:
            found.append(eqn)
    return found


def _fwd_bwd(apply_fn, params):
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(b=1, n=N_COST, m=N_COST, h=2, d=3, dv=5))

    def loss(p, q, k, v):
        return apply_fn(p, q, k, v).sum()

    return _eqns(jax.value_and_grad(loss, (0, 1, 2, 3)), params, q, k, v)


@pytest.mark.parametrize("name", ["gfsa", "gfsa_exact"])
def test_no_cubic_intermediate_forward_or_backward(name):
    params = {"w_k": jnp.asarray([0.3, 0.5])}
    assert not _cubic_dots(_fwd_bwd(attention.get(name, order=4).apply, params))
    # The detector does see the authors' explicit Ā @ Ā.
    assert _cubic_dots(_fwd_bwd(gfsa.gfsa_explicit_apply, params))


def test_linear_has_no_n_by_n_intermediate():
    params = {"w_k": jnp.asarray([0.3, 0.5])}
    eqns = _fwd_bwd(attention.get("gfsa_linear", order=4).apply, params)
    shapes = [v.aval.shape for e in eqns for v in (*e.invars, *e.outvars) if hasattr(v, "aval")]
    assert shapes and not [s for s in shapes if list(s).count(N_COST) >= 2]


# --- train mode -------------------------------------------------------------------------------


def test_train_mode_dropout_is_keyed_and_jit_matches_eager():
    # One test for both quadratic variants: each new program holding a bernoulli costs seconds
    # of XLA compile on CPU, while eager calls of the same shape reuse one compiled sampler.
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(seed=13))
    mech = attention.get("gfsa", dropout_rate=0.4, order=3, w0=0.2)
    params = {"w_k": np.array([0.7, -0.4, 1.3])}
    mask = _masks()["full_4d"][0]
    run = lambda key: mech.apply(params, q, k, v, mask=mask, key=key, train=True)
    jit_run = jax.jit(run)
    a, b, c = jit_run(jax.random.key(0)), jit_run(jax.random.key(0)), jit_run(jax.random.key(1))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert_close(run(jax.random.key(0)), a, rtol=1e-5, atol=1e-5, what="eager vs jit")
    # Dropout acts on Ā before the filter: the explicit matrix form with the same key agrees.
    for name, exact in (("gfsa", False), ("gfsa_exact", True)):
        hp = dict(train=True, dropout_rate=0.4, order=3, w0=0.2)
        key = jax.random.key(0)
        got = attention.get(name, dropout_rate=0.4, w0=0.2).apply(
            params, q, k, v, mask=mask, key=key, train=True
        )
        explicit = gfsa.gfsa_explicit_apply(params, q, k, v, mask=mask, key=key, exact=exact, **hp)
        assert_close(explicit, got, rtol=1e-4, atol=1e-5, what=f"{name}: explicit form")
    # eval mode ignores dropout
    assert_close(
        mech.apply(params, q, k, v, mask=mask),
        attention.get("gfsa", order=3, w0=0.2).apply(params, q, k, v, mask=mask),
        rtol=0,
        atol=0,
        what="eval ignores dropout",
    )


def test_float32_inputs_stay_float32_and_close_to_the_reference():
    q, k, v = _qkv(seed=14)
    params = {"w_k": jnp.asarray([0.7, -0.4, 1.3], jnp.float32)}
    expected = ref_gfsa.gfsa_reference(_np(params), q, k, v, None, order=3, w0=0.1)
    got = attention.get("gfsa", w0=0.1).apply(
        params, *(jnp.asarray(x, jnp.float32) for x in (q, k, v))
    )
    assert got.dtype == jnp.float32
    assert_close(got, expected, rtol=1e-4, atol=1e-5)


# --- errors -----------------------------------------------------------------------------------


def test_bad_inputs_name_the_problem():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv())
    params = {"w_k": jnp.zeros(3)}
    for name in ("gfsa", "gfsa_exact", "gfsa_linear"):
        with pytest.raises(ValueError, match="order K must be an int >= 1"):
            attention.get(name, order=0).apply(params, q, k, v)
        with pytest.raises(ValueError, match="order K"):
            attention.get(name, order=2.5).apply(params, q, k, v)
        with pytest.raises(ValueError, match="params lack 'w_k'"):
            attention.get(name).apply({}, q, k, v)
        with pytest.raises(ValueError, match=r"params\['w_k'\] has shape \(4,\)"):
            attention.get(name).apply({"w_k": jnp.zeros(4)}, q, k, v)
        with pytest.raises(ValueError, match="4-D"):
            attention.get(name).apply(params, q[0], k, v)
        with pytest.raises(ValueError, match="boolean"):
            attention.get(name).apply(params, q, k, v, mask=np.ones((2, 6)))
    with pytest.raises(ValueError, match="needs `key`"):
        attention.get("gfsa", dropout_rate=0.1).apply(params, q, k, v, train=True)
    with pytest.raises(ValueError, match=r"dropout_rate must be in \[0, 1\)"):
        attention.get("gfsa", dropout_rate=1.0).apply(params, q, k, v)
    with pytest.raises(ValueError, match="does not broadcast"):
        attention.get("gfsa").apply(params, q, k, v, mask=np.ones((2, 3, 5, 6), bool))
    with pytest.raises(ValueError, match="num_heads must be a positive int"):
        attention.get("gfsa").init(jax.random.key(0), num_heads=0, head_dim=4)
    with pytest.raises(ValueError, match="layer_index must be a non-negative int"):
        attention.get("gfsa").init(jax.random.key(0), num_heads=2, head_dim=4, layer_index=-1)
    with pytest.raises(TypeError, match="valid:"):
        attention.get("gfsa", K=3)
