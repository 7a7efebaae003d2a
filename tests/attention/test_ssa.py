"""SSA (arXiv:2306.01705) property tests: the sampled score tensor really shrinks, the samplers'
local bias, the sigma schedule, causality, self-ensembles, the +FT switch, keys, errors.

Most calls run eagerly at one shape ([2, 16, 2, 4], float32): the per-primitive compile cache
is then shared by every sampler, which is far cheaper on a busy 2-core machine than one jit
compile per case. The float64 evaluation path is checked by tests/attention/test_table.py.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import ssa
from tests.attention.ref_ssa import dense_reference
from tests.tolerances import assert_close, reference_precision

B, N, H, D = 2, 16, 2, 4
TOL = {"rtol": 2e-5, "atol": 2e-5}  # float32 against the float64 reference (CPU; see tolerances)

# (sampling, causal, extra hparams); N = 16 is a 4 x 4 grid for grid_2d.
SAMPLERS = [
    ("unbiased", False, {}),
    ("unbiased", True, {}),
    ("local_1d", False, {}),
    ("local_1d", True, {}),
    ("grid_2d", False, {}),
    ("grid_2d", False, {"tiles": (2, 2)}),
    ("grid_2d", True, {}),
    ("graph", False, {"always_keep": 1}),
]
IDS = [f"{s}{'-causal' if c else ''}{'-tiles' if e.get('tiles') else ''}" for s, c, e in SAMPLERS]


def _qkv(n=N, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(jnp.asarray(rng.normal(size=(B, n, H, D)), jnp.float32) for _ in range(3))


def _mech(sampling, causal, extra, **hp):
    mech = attention.get("ssa", sampling=sampling, causal=causal, **extra, **hp)
    params = mech.init(jax.random.key(0), num_heads=H, head_dim=D, layer_index=1, num_layers=4)
    return mech, params


def _padding():
    pad = np.ones((B, N), bool)
    pad[0, N - 5 :] = False
    return pad


def _ref(q, k, v, mask=None, **kw):
    return dense_reference(None, *(np.asarray(x, np.float64) for x in (q, k, v)), mask, **kw)


# ---------------------------------------------------------------------------------------------
# Exactness: a training pass is dense attention restricted to the sampled (target, source) pairs.


@pytest.mark.parametrize("sampling,causal,extra", SAMPLERS, ids=IDS)
def test_keep_all_training_equals_dense_attention(sampling, causal, extra):
    extra = {k: v for k, v in extra.items() if k != "tiles"}
    mech, params = _mech(sampling, causal, extra, keep=1.0)
    q, k, v = _qkv()
    got = mech.apply(params, q, k, v, train=True, key=jax.random.key(3))
    expected = _ref(q, k, v, causal=causal)
    assert_close(mech.apply(params, q, k, v), expected, **TOL, what="evaluation")
    assert_close(got, expected, **TOL, what="training")


@pytest.mark.parametrize("mask_kind", ["key_padding", "full_4d"])
@pytest.mark.parametrize("sampling,causal,extra", SAMPLERS, ids=IDS)
def test_training_is_dense_attention_on_the_sampled_pattern(sampling, causal, extra, mask_kind):
    # With keep = 1/4, the sampled pairs, the user's mask and the bias re-indexed with the
    # sources must give exactly dense attention restricted to those pairs (Sec. 3.3: SSA
    # re-indexes the sources and the bias, then runs unaltered attention).
    # With key padding this also proves that padded sources get zero weight.
    mech, params = _mech(sampling, causal, extra, keep=0.25)
    rng = np.random.default_rng(1)
    pad = _padding()
    mask = pad if mask_kind == "key_padding" else (rng.random((B, H, N, N)) > 0.3)
    bias = rng.normal(size=(B, 1, N, N)).astype(np.float32)
    key = jax.random.key(7)
    q, k, v = _qkv()
    got = mech.apply(params, q, k, v, mask=mask, bias=bias, train=True, key=key)
    tgt, src = ssa.sample_pattern(
        jax.random.split(key)[0],  # apply splits its key into (sampling, dropout)
        N,
        sampling=sampling,
        keep=0.25,
        sigma=params["buffers"]["sigma"],
        causal=causal,
        key_padding=pad if mask_kind == "key_padding" else None,
        **extra,
    )
    pattern = np.asarray(ssa.pattern_mask(tgt, src, N, N))[:, None]
    pattern = pattern & (mask[:, None, None, :] if mask.ndim == 2 else mask)
    pattern = np.broadcast_to(pattern, (B, H, N, N))
    assert pattern.sum() < 0.3 * pattern.size  # a real subsample, not everything
    assert_close(got, _ref(q, k, v, pattern, bias=bias, causal=causal), **TOL)


def _largest_float_intermediate(jaxpr):
    """Entries of the largest floating-point value anywhere in `jaxpr` (nested jaxprs too)."""
    best = 0
    stack = [jaxpr]
    while stack:
        jp = stack.pop()
        for eqn in jp.eqns:
            for var in eqn.outvars:
                aval = var.aval
                if hasattr(aval, "dtype") and jnp.issubdtype(aval.dtype, jnp.floating):
                    best = max(best, int(np.prod(aval.shape)))
            for val in eqn.params.values():
                for sub in val if isinstance(val, tuple | list) else (val,):
                    if hasattr(sub, "eqns"):
                        stack.append(sub)
                    elif hasattr(sub, "jaxpr") and hasattr(sub.jaxpr, "eqns"):
                        stack.append(sub.jaxpr)
    return best


@pytest.mark.parametrize("sampling,causal,extra", SAMPLERS, ids=IDS)
def test_quarter_keep_computes_a_quarter_of_the_score_matrix(sampling, causal, extra):
    n = 64  # an 8 x 8 grid; B*H*N*M = 16384 score entries for dense attention
    mech, params = _mech(sampling, causal, extra, keep=0.25)
    q, k, v = _qkv(n)
    mask = np.ones((B, n), bool)  # key padding must not bring back an [N, M] tensor

    def loss(q, k, v, subsample):
        key = jax.random.key(0)
        out = mech.apply(params, q, k, v, mask=mask, train=True, key=key, subsample=subsample)
        return jnp.sum(out**2)

    for fn in (loss, jax.grad(loss, (0, 1, 2))):  # forward, and forward + backward
        sparse = jax.make_jaxpr(lambda q, k, v, fn=fn: fn(q, k, v, True))(q, k, v)
        dense = jax.make_jaxpr(lambda q, k, v, fn=fn: fn(q, k, v, False))(q, k, v)
        assert _largest_float_intermediate(sparse.jaxpr) == B * H * n * n // 4
        assert _largest_float_intermediate(dense.jaxpr) == B * H * n * n


# ---------------------------------------------------------------------------------------------
# Samplers.


def _pair_frequency(sampling, causal, sigmas, draws=300, n=64, **kw):
    """For each sigma: how often each (target, source) pair is sampled over `draws` patterns."""

    @jax.jit
    def freq(sigma):
        def one(key):
            tgt, src = ssa.sample_pattern(
                key, n, sampling=sampling, keep=0.25, sigma=sigma, causal=causal, **kw
            )
            return ssa.pattern_mask(tgt, src, n, n)[0].astype(jnp.float32)

        return jnp.mean(jax.vmap(one)(jax.random.split(jax.random.key(0), draws)), 0)

    return [np.asarray(freq(jnp.float32(s))) for s in sigmas]


@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
def test_locally_biased_sampler_keeps_near_sources_more_often(causal):
    # Tolerance: 300 draws, so one pair's frequency has std <= sqrt(.25/300) = 0.029 and the
    # averages over hundreds of pairs far less; the margins (0.4, 0.03) are > 10 such errors.
    n = 64
    i, j = np.indices((n, n))
    allowed = j <= i if causal else np.ones((n, n), bool)
    near, far = (np.abs(i - j) <= 4) & allowed, (np.abs(i - j) >= 32) & allowed
    local, wider = _pair_frequency("local_1d", causal, sigmas=(0.1, 0.35))
    assert local[near].mean() > local[far].mean() + 0.4
    assert local[far].mean() < 0.03
    assert wider[far].mean() > local[far].mean() + 0.03  # a larger sigma is less local
    # Each target gets exactly N/w sources: one source fewer in one draw moves a row sum by
    # 1/300 (2e-4 relative), far above the float32 rounding of the means (~1e-7).
    np.testing.assert_allclose(local.sum(1), n // 4, rtol=1e-5)
    if not causal:  # the unbiased sampler has no distance preference: every pair ~ keep
        (flat,) = _pair_frequency("unbiased", False, sigmas=(0.1,))
        assert abs(flat[near].mean() - 0.25) < 0.03 and abs(flat[far].mean() - 0.25) < 0.03


def test_grid_sampler_is_local_in_both_directions():
    n, side = 64, 8
    (freq,) = _pair_frequency("grid_2d", False, sigmas=(0.1,), tiles=(2, 2))
    r, c = np.arange(n) // side, np.arange(n) % side
    dr, dc = np.abs(r[:, None] - r[None]), np.abs(c[:, None] - c[None])
    near, far_row, far_col = (dr <= 1) & (dc <= 1), (dr >= 6) & (dc <= 1), (dc >= 6) & (dr <= 1)
    assert freq[near].mean() > freq[far_row].mean() + 0.4
    assert freq[near].mean() > freq[far_col].mean() + 0.4


def test_graph_sampler_skips_padding_and_keeps_virtual_nodes():
    pad = np.ones((3, 12), bool)
    pad[0, 7:] = False
    pad[1, 2:] = False  # fewer real nodes than k = 6: padded ones fill, with zero weight
    draws = [
        np.asarray(
            ssa.sample_pattern(
                jax.random.key(s), 12, sampling="graph", keep=0.5, always_keep=1, key_padding=pad
            )[1]
        )[:, 0]
        for s in range(10)
    ]
    for src in draws:
        assert src.shape == (3, 6) and all(len(set(row)) == 6 for row in src)  # no repeats
        assert np.all(pad[0, src[0]])  # real nodes only where there are enough
        assert {0, 1} <= set(src[1])  # both real nodes of the short graph
        assert np.all((src == 0).any(1))  # the virtual node 0 is always kept
    assert any(set(s[0]) != set(s[2]) for s in draws)  # one pattern per graph


def test_fully_masked_rows_are_zero_with_finite_gradients_in_training():
    mech, params = _mech("unbiased", False, {}, keep=0.25)
    q, k, v = _qkv()
    pad = np.ones((B, N), bool)
    pad[0] = False

    def loss(q, k, v):
        return mech.apply(params, q, k, v, mask=pad, train=True, key=jax.random.key(0)).sum()

    out = mech.apply(params, q, k, v, mask=pad, train=True, key=jax.random.key(0))
    assert np.all(np.asarray(out[0]) == 0.0) and np.all(np.isfinite(np.asarray(out)))
    for g in jax.jit(jax.grad(loss, (0, 1, 2)))(q, k, v):
        assert np.all(np.isfinite(np.asarray(g)))


# ---------------------------------------------------------------------------------------------
# Schedule, causality, ensembles, the +FT switch, keys.


def test_per_layer_sigma_schedule():
    mech = attention.get("ssa")  # WikiText-103 defaults: 0.20 N -> 0.35 N over depth
    sig = [
        mech.init(None, num_heads=H, head_dim=D, layer_index=i, num_layers=16)["buffers"]["sigma"]
        for i in range(16)
    ]
    np.testing.assert_allclose(sig, 0.2 + 0.15 * np.arange(16) / 15, rtol=1e-6)
    enwik = attention.get("ssa", sigma_first=0.1, sigma_last=0.225)
    params = enwik.init(None, num_heads=H, head_dim=D, layer_index=8, num_layers=16)
    np.testing.assert_allclose(params["buffers"]["sigma"], 0.1 + 0.125 * 8 / 15, rtol=1e-6)
    assert params["buffers"]["sigma"].dtype == jnp.float32
    assert ssa.layer_sigma(0, 1, 0.2, 0.35) == 0.2
    assert ssa.layer_sigma(3, 4, 0.2, float("inf")) == float("inf")
    with pytest.raises(ValueError, match="layer_index"):
        mech.init(None, num_heads=H, head_dim=D, layer_index=4, num_layers=4)


CAUSAL = [(s, i) for s, i in zip(SAMPLERS, IDS, strict=True) if s[1]]


@pytest.mark.parametrize(
    "sampling,causal,extra", [s for s, _ in CAUSAL], ids=[i for _, i in CAUSAL]
)
def test_causal_never_attends_to_future_sources(sampling, causal, extra):
    mech, params = _mech(sampling, causal, extra, keep=0.25)
    q, k, v = _qkv()
    t = 9
    kf = k.at[:, t + 1 :].add(3.0)
    vf = v.at[:, t + 1 :].add(100.0)
    outs = [(mech.apply(params, q, k, v), mech.apply(params, q, kf, vf))]
    for seed in range(4):
        key = jax.random.key(seed)
        outs.append(
            tuple(mech.apply(params, q, a, b, train=True, key=key) for a, b in ((k, v), (kf, vf)))
        )
    for a, b in outs:
        assert_close(a[:, : t + 1], b[:, : t + 1], rtol=1e-6, atol=1e-6)
        assert not np.allclose(a[:, t + 1 :], b[:, t + 1 :])


def test_causal_dense_evaluation_matches_reference_at_any_length():
    mech, params = _mech("local_1d", True, {}, keep=0.25)
    q, k, v = _qkv(n=7)  # dense evaluation works at lengths the sampler could not split
    assert_close(mech.apply(params, q, k, v), _ref(q, k, v, causal=True), **TOL)


@pytest.mark.parametrize("sampling", ["local_1d", "graph"])
def test_self_ensemble_is_the_mean_of_subsampled_passes(sampling):
    mech, params = _mech(sampling, False, {}, keep=0.25, eval_mode="ensemble", ensemble_samples=4)
    q, k, v = _qkv()
    key = jax.random.key(5)
    got = mech.apply(params, q, k, v, key=key)
    passes = [mech.apply(params, q, k, v, train=True, key=kk) for kk in jax.random.split(key, 4)]
    assert_close(got, np.mean(passes, 0), dtype=got.dtype, rtol=1e-5, atol=1e-6)
    assert not np.allclose(passes[0], passes[1])
    one = mech.apply(params, q, k, v, key=key, subsample=True)  # one member, for an evaluator
    assert_close(one, mech.apply(params, q, k, v, train=True, key=key), rtol=1e-6, atol=0)
    with pytest.raises(ValueError, match="ensemble.*needs `key`"):
        mech.apply(params, q, k, v)


def test_subsample_false_gives_dense_attention_in_training():
    mech, params = _mech("local_1d", False, {}, keep=0.25)
    q, k, v = _qkv()
    key = jax.random.key(2)
    with reference_precision():
        dense = attention.get("softmax").apply({}, q, k, v)
    off = mech.apply(params, q, k, v, train=True, key=key, subsample=False)
    assert_close(off, dense, rtol=1e-6, atol=1e-6, what="training, subsample=False")
    assert_close(mech.apply(params, q, k, v, subsample=False), dense, rtol=1e-6, atol=0)
    on = mech.apply(params, q, k, v, train=True, key=key)
    assert not np.allclose(on, dense)
    # The trainer's +FT switch may be a traced bool: lax.cond between the two paths.
    step = jax.jit(lambda s: mech.apply(params, q, k, v, train=True, key=key, subsample=s))
    assert_close(step(jnp.bool_(False)), dense, rtol=1e-6, atol=1e-6, what="traced False")
    assert_close(step(jnp.bool_(True)), on, rtol=1e-6, atol=1e-6, what="traced True vs eager")


@pytest.mark.parametrize(
    "sampling,causal,extra", [SAMPLERS[i] for i in (0, 3, 5, 7)], ids=[IDS[i] for i in (0, 3, 5, 7)]
)
def test_training_is_deterministic_per_key(sampling, causal, extra):
    mech, params = _mech(sampling, causal, extra, keep=0.25, dropout_rate=0.1)
    q, k, v = _qkv()

    def run(key):
        return mech.apply(params, q, k, v, mask=_padding(), train=True, key=key)

    a, b, c = run(jax.random.key(0)), run(jax.random.key(0)), run(jax.random.key(1))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_training_jit_matches_eager():
    mech, params = _mech("local_1d", True, {}, keep=0.25, dropout_rate=0.1)
    q, k, v = _qkv()

    def run(q, k, v, key):
        return mech.apply(params, q, k, v, mask=_padding(), train=True, key=key)

    key = jax.random.key(4)
    assert_close(jax.jit(run)(q, k, v, key), run(q, k, v, key), rtol=1e-5, atol=1e-6)


def test_dropout_only_in_training():
    mech, params = _mech("local_1d", False, {}, keep=0.25, dropout_rate=0.5)
    plain = attention.get("ssa", keep=0.25)
    q, k, v = _qkv()
    key = jax.random.key(0)
    assert not np.allclose(
        mech.apply(params, q, k, v, train=True, key=key),
        plain.apply(params, q, k, v, train=True, key=key),
    )
    assert_close(mech.apply(params, q, k, v), plain.apply(params, q, k, v), rtol=1e-7, atol=0)
    with pytest.raises(ValueError, match="dropout_rate > 0 needs `key`"):
        mech.apply(params, q, k, v, train=True, subsample=False)


def test_unbiased_sampling_works_for_cross_attention():
    mech, params = _mech("unbiased", False, {}, keep=0.25)
    q, _, _ = _qkv(n=5)
    _, k, v = _qkv(n=12)
    out = jax.eval_shape(  # traced, not compiled: the shapes and checks are what matter here
        lambda q, k, v: mech.apply(params, q, k, v, train=True, key=jax.random.key(0)), q, k, v
    )
    assert out.shape == (B, 5, H, D)
    tgt, src = ssa.sample_pattern(jax.random.key(0), 5, 12, sampling="unbiased", keep=0.25)
    assert tgt.shape == (1, 5) and src.shape == (1, 1, 3)


# ---------------------------------------------------------------------------------------------
# Errors name the problem.


@pytest.mark.parametrize(
    "hparams,n,match",
    [
        ({"keep": 0.0}, 16, r"keep .* must be in \(0, 1\]"),
        ({"keep": 1.5}, 16, r"keep .* must be in \(0, 1\]"),
        ({"sampling": "random"}, 16, "sampling must be one of"),
        ({"eval_mode": "mean"}, 16, "eval_mode must be one of"),
        ({"ensemble_samples": 0}, 16, "ensemble_samples"),
        ({"keep": 0.3}, 16, "1/keep must be an integer"),
        ({"sampling": "grid_2d", "grid": (3, 5)}, 16, r"grid \(3, 5\) has 15 cells but N=16"),
        ({"sampling": "grid_2d"}, 12, "not a square"),
        ({"sampling": "grid_2d", "tiles": (3, 1)}, 16, r"wr \* wc"),
        ({"sampling": "grid_2d", "tiles": (2, 2), "causal": True}, 16, "row bands only"),
        ({"sampling": "graph", "causal": True}, 16, "not supported with sampling='graph'"),
    ],
)
def test_bad_hyper_parameters_name_the_problem(hparams, n, match):
    mech = attention.get("ssa", **hparams)
    params = {"buffers": {"sigma": jnp.float32(0.2)}}
    q, k, v = _qkv(n=n)
    with pytest.raises(ValueError, match=match):
        mech.apply(params, q, k, v, train=True, key=jax.random.key(0))


def test_missing_key_params_and_bad_inputs_name_the_problem():
    mech, params = _mech("local_1d", False, {})
    q, k, v = _qkv()
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"train=True\) needs `key`"):
        mech.apply(params, q, k, v, train=True)
    with pytest.raises(ValueError, match=r"buffers\['sigma'\]"):
        mech.apply({}, q, k, v, train=True, key=key)
    with pytest.raises(ValueError, match="M == N"):
        mech.apply(params, q, k[:, :8], v[:, :8], train=True, key=key)
    with pytest.raises(ValueError, match="bool scalar"):
        mech.apply(params, q, k, v, train=True, key=key, subsample=np.ones(2, bool))
    with pytest.raises(ValueError, match="key padding"):
        mech.apply(params, q, k, v, mask=np.ones((B, 15), bool), train=True, key=key)
    with pytest.raises(ValueError, match="does not broadcast"):
        mech.apply(params, q, k, v, bias=np.ones((3, 1, N, N)), train=True, key=key)
    with pytest.raises(ValueError, match="4-D"):
        mech.apply(params, q[0], k, v)


def test_lengths_the_windows_do_not_divide_are_padded_internally():
    """N = 41 (e.g. 40 tokens + CLS) with 4 windows: equals attention over the same pattern on
    an explicitly padded batch, and padded positions never leak into real outputs."""
    import attention

    rng = np.random.default_rng(0)
    q, k, v = (jnp.asarray(rng.normal(size=(2, 41, 2, 4)), jnp.float32) for _ in range(3))
    mech = attention.get("ssa", keep=0.25)
    params = mech.init(jax.random.key(0), num_heads=2, head_dim=4)
    key = jax.random.key(3)
    out = mech.apply(params, q, k, v, key=key, train=True)
    assert out.shape == (2, 41, 2, 4) and np.all(np.isfinite(np.asarray(out)))
    grow = lambda x: jnp.pad(x, ((0, 0), (0, 3), (0, 0), (0, 0)))
    pad_mask = jnp.asarray(np.arange(44) < 41)[None].repeat(2, 0)
    explicit = mech.apply(params, grow(q), grow(k), grow(v), mask=pad_mask, key=key, train=True)
    assert_close(out, explicit[:, :41], rtol=1e-6, atol=1e-6)
    # evaluation stays dense at any length
    with reference_precision():
        dense = attention.get("softmax").apply({}, q, k, v)
    assert_close(mech.apply(params, q, k, v), dense, rtol=1e-5, atol=1e-6)
