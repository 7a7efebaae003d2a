"""Sliceformer's properties: exact permutation invariance of the pure sorts, padding that neither
enters the sort nor moves real tokens (and the original code's behaviour under ignore_mask),
sorted columns, distinct Table 4 variants, no parameters, errors, and the keyed shuffle."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import sliceformer
from tests.attention.ref_sliceformer import CASES, sliceformer_reference

NAMES = [
    "sliceformer",
    "sliceformer_ascend",
    "sliceformer_descend",
    "sliceformer_half",
    "sliceformer_perm2",
    "sliceformer_perm4",
    "sliceformer_max_exchange",
    "sliceformer_shuffle",
    "sliceformer_shuffle_independent",
]
# Output depends on the multiset of each column's values only (not on the token order).
INVARIANT = ["sliceformer", "sliceformer_ascend", "sliceformer_descend", "sliceformer_half"]
NOT_INVARIANT = [n for n in NAMES if n not in INVARIANT]
TABLE4 = [n for n in NAMES if n != "sliceformer"]
B, H, DV = 2, 3, 4


@pytest.fixture(autouse=True)
def _float64():
    # One dtype for every test: eager primitives compile once per shape and are reused.
    with jax.enable_x64(True):
        yield


def _v(n, seed=0, b=B, h=H, dv=DV):
    return np.random.default_rng(seed).normal(size=(b, n, h, dv))


def _apply(name, v, mask=None, **hparams):
    fn = attention.get(name, **hparams).apply
    return np.asarray(fn({}, None, None, jnp.asarray(v), mask=mask))


def test_registered_without_parameters_or_qk():
    for name in NAMES:
        mech = attention.get(name)
        assert mech.needs_qk is False
        assert mech.init(jax.random.key(0), num_heads=H, head_dim=DV, max_len=8) == {}
        assert mech.hparams["ignore_mask"] is False
    assert attention.get("sliceformer").hparams == {
        "variant": "ascend",
        "num_perms": 2,
        "shuffle_mode": "shared",
        "seed": 0,
        "resample": False,
        "ignore_mask": False,
    }


def test_attention_block_builds_no_query_key_projections():
    from flax import nnx

    from attnbench.nn import layers

    layer = layers.Attention(16, 4, 16, attention.get("sliceformer"), rngs=nnx.Rngs(0))
    assert not hasattr(layer, "query") and not hasattr(layer, "key")
    n_params = sum(p.size for p in jax.tree.leaves(nnx.state(layer, nnx.Param)))
    assert n_params == 2 * 16 * 16  # value and output projections only
    out = layer(jnp.ones((1, 5, 16)), mask=jnp.array([[True, True, True, False, False]]))
    assert out.shape == (1, 5, 16)


@pytest.mark.parametrize("name", NAMES)
def test_arbitrary_and_per_head_padding_match_reference(name):
    """Left, interior and per-head padding (the table runner only pads on the right)."""
    n = 8
    v = _v(n, seed=1)
    pad = np.ones((B, n), bool)
    pad[0, [0, 3, 4]] = False
    pad[1, :2] = False
    per_head = np.random.default_rng(2).random((B, H, 1, n)) > 0.4
    per_head[1, 2, 0, :] = False  # a head with no real token
    for api_mask in (pad, pad[:, None, None, :], per_head):
        ref_mask = np.broadcast_to(
            api_mask if api_mask.ndim == 4 else api_mask[:, None, None, :], (B, H, n, n)
        )
        expected = CASES[name].reference({}, None, None, v, ref_mask)
        np.testing.assert_allclose(_apply(name, v, api_mask), expected, rtol=1e-12, atol=1e-12)


def test_generic_name_runs_every_variant_like_the_reference():
    n = 8
    v = _v(n, seed=3)
    pad = np.ones((B, n), bool)
    pad[1, 4:] = False
    ref_mask = np.broadcast_to(pad[:, None, None, :], (B, H, n, n))
    settings = [
        {"variant": "descend"},
        {"variant": "half"},
        {"variant": "perm", "num_perms": 3},
        {"variant": "perm", "num_perms": 1},
        {"variant": "max_exchange"},
        {"variant": "shuffle", "shuffle_mode": "independent", "seed": 7},
    ]
    for hp in settings:
        expected = sliceformer_reference({}, None, None, v, ref_mask, **hp)
        np.testing.assert_allclose(
            _apply("sliceformer", v, pad, **hp), expected, rtol=1e-12, atol=1e-12
        )
    np.testing.assert_array_equal(
        _apply("sliceformer", v, variant="perm", num_perms=1), np.sort(v, axis=1)
    )


@pytest.mark.parametrize("name", INVARIANT)
def test_pure_sorts_are_exactly_invariant_to_token_permutations(name):
    n = 8
    v = _v(n, seed=4)
    perm = np.random.default_rng(5).permutation(n)
    fn = attention.get(name).apply
    np.testing.assert_array_equal(fn({}, None, None, v[:, perm]), fn({}, None, None, v))
    # With padding, permuting tokens and mask together leaves the real outputs (read in
    # sequence order) unchanged.
    pad = np.ones((B, n), bool)
    pad[:, [1, 5]] = False
    a = np.asarray(fn({}, None, None, v, mask=pad))
    bb = np.asarray(fn({}, None, None, v[:, perm], mask=pad[:, perm]))
    for bi in range(B):
        np.testing.assert_array_equal(a[bi, pad[bi]], bb[bi, pad[bi, perm]])


@pytest.mark.parametrize("name", NOT_INVARIANT)
def test_other_variants_depend_on_token_order(name):
    n = 8
    v = _v(n, seed=4)
    perm = np.random.default_rng(5).permutation(n)
    assert not np.allclose(_apply(name, v[:, perm]), _apply(name, v))


def test_max_exchange_is_equivariant_to_permutations_fixing_the_first_token():
    n = 8
    v = _v(n, seed=6)
    perm = np.concatenate([[0], 1 + np.random.default_rng(7).permutation(n - 1)])
    out = _apply("sliceformer_max_exchange", v)
    np.testing.assert_array_equal(_apply("sliceformer_max_exchange", v[:, perm]), out[:, perm])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("where", ["append", "prepend"])
def test_padding_does_not_change_real_outputs(name, where):
    n_real, n_pad = 5, 3
    v = _v(n_real, seed=8)
    garbage = 100.0 * _v(n_pad, seed=9)
    if where == "append":
        padded = np.concatenate([v, garbage], axis=1)
        real = np.arange(n_real)
    else:
        padded = np.concatenate([garbage, v], axis=1)
        real = n_pad + np.arange(n_real)
    mask = np.zeros((B, n_real + n_pad), bool)
    mask[:, real] = True
    out = _apply(name, padded, mask)
    if name.startswith("sliceformer_shuffle") and where == "prepend":
        # The shuffle's fixed permutation is keyed by position, so moving the real tokens
        # changes it; it is still a permutation of the same real values.
        np.testing.assert_array_equal(np.sort(out[:, real], 1), np.sort(v, 1))
    else:
        np.testing.assert_array_equal(out[:, real], _apply(name, v))
    assert np.all(out[:, np.setdiff1d(np.arange(n_real + n_pad), real)] == 0.0)


def test_ignore_mask_reproduces_the_original_code():
    n_real, n_pad = 5, 3
    v = _v(n_real, seed=10)
    # Pads below, above and inside the real values, so every variant moves some into real slots.
    pads = np.broadcast_to(np.array([-50.0, 50.0, 0.0])[None, :, None, None], (B, n_pad, H, DV))
    padded = np.concatenate([v, pads], axis=1)
    mask = np.zeros((B, n_real + n_pad), bool)
    mask[:, :n_real] = True
    out = _apply("sliceformer", padded, mask, ignore_mask=True)
    # The mask is ignored: same as no mask, pads sorted into the first (real) positions.
    np.testing.assert_array_equal(out, _apply("sliceformer", padded))
    np.testing.assert_array_equal(out, np.sort(padded, axis=1))
    assert np.all(out[:, 0] == -50.0)
    assert not np.allclose(out[:, :n_real], _apply("sliceformer", v))
    for name in TABLE4:  # every variant: padding leaks into the real outputs
        leaky = _apply(name, padded, mask, ignore_mask=True)
        np.testing.assert_array_equal(leaky, _apply(name, padded))
        assert not np.allclose(leaky[:, :n_real], _apply(name, v)), name
    # ignore_mask accepts any mask, since it is not used.
    full = np.tril(np.ones((n_real + n_pad,) * 2, bool))[None, None]
    np.testing.assert_array_equal(_apply("sliceformer", padded, full, ignore_mask=True), out)


def test_columns_are_sorted_permutations_of_the_real_inputs():
    n = 8
    v = _v(n, seed=11)
    pad = np.ones((B, n), bool)
    pad[0, [2, 6, 7]] = False
    outs = {name: _apply(name, v, pad) for name in TABLE4}
    half = DV // 2
    for bi in range(B):
        real = v[bi, pad[bi]]  # [L, H, DV]
        asc = np.sort(real, axis=0)
        np.testing.assert_array_equal(outs["sliceformer_ascend"][bi, pad[bi]], asc)
        np.testing.assert_array_equal(outs["sliceformer_descend"][bi, pad[bi]], asc[::-1])
        got_half = outs["sliceformer_half"][bi, pad[bi]]
        np.testing.assert_array_equal(got_half[..., :half], asc[..., :half])
        np.testing.assert_array_equal(got_half[..., half:], asc[::-1, :, half:])
        for name in ("sliceformer_max_exchange", "sliceformer_shuffle"):
            np.testing.assert_array_equal(np.sort(outs[name][bi, pad[bi]], 0), asc)
        me = outs["sliceformer_max_exchange"][bi, pad[bi]]
        np.testing.assert_array_equal(me[0], asc[-1])  # column max moved to the first token
        np.testing.assert_array_equal(me[1:].max(0) <= asc[-1], True)
        # Multi-permutation averages K permutations: column means are preserved.
        for name in ("sliceformer_perm2", "sliceformer_perm4"):
            np.testing.assert_allclose(outs[name][bi, pad[bi]].mean(0), real.mean(0), rtol=1e-12)
    shared = outs["sliceformer_shuffle"]
    rows = shared.reshape(B, n, -1)
    src = v.reshape(B, n, -1)
    for bi in range(B):  # one permutation for all channels: every output row is an input row
        for row in rows[bi, pad[bi]]:
            assert any(np.array_equal(row, s) for s in src[bi])


def test_table4_variants_differ_from_each_other():
    v = _v(8, seed=12)
    outs = {name: _apply(name, v) for name in TABLE4}
    for i, a in enumerate(TABLE4):
        for b_ in TABLE4[i + 1 :]:
            assert not np.allclose(outs[a], outs[b_]), (a, b_)
    np.testing.assert_array_equal(outs["sliceformer_ascend"], _apply("sliceformer", v))


def test_fully_padded_sequence_gives_zeros_and_finite_gradients():
    v = jnp.asarray(_v(8, seed=13))
    mask = np.ones((B, 8), bool)
    mask[0] = False
    for name in TABLE4:
        fn = attention.get(name).apply

        def loss(v, fn=fn):
            out = fn({}, None, None, v, mask=mask)
            return (out**2).sum(), out

        g, out = jax.grad(loss, has_aux=True)(v)
        assert np.all(np.asarray(out[0]) == 0.0)
        assert np.all(np.isfinite(np.asarray(g)))
        assert np.all(np.asarray(g[0]) == 0.0)  # padded values receive no gradient


@pytest.mark.parametrize(
    "name", ["sliceformer", "sliceformer_descend", "sliceformer_perm2", "sliceformer_max_exchange"]
)
def test_unmasked_gradients_match_finite_differences(name):
    """The table runner checks gradients with key padding; this covers the unmasked paths."""
    v = _v(8, seed=17)
    w = np.random.default_rng(18).normal(size=v.shape)
    reference = CASES[name].reference
    g = jax.grad(lambda v: (attention.get(name).apply({}, None, None, v) * w).sum())(jnp.asarray(v))
    eps = 1e-6
    for idx in [(0, 0, 0, 0), (1, 3, 2, 1), (0, 7, 1, 3), (1, 5, 0, 2)]:
        plus, minus = v.copy(), v.copy()
        plus[idx] += eps
        minus[idx] -= eps
        fd = (reference({}, None, None, plus, None) - reference({}, None, None, minus, None)) * w
        np.testing.assert_allclose(g[idx], fd.sum() / (2 * eps), rtol=1e-6, atol=1e-8)


def test_dtype_follows_values():
    v = _v(8, seed=14)
    for dtype in (jnp.float32, jnp.bfloat16):
        for name in ("sliceformer", "sliceformer_perm2", "sliceformer_shuffle"):
            out = attention.get(name).apply({}, None, None, jnp.asarray(v, dtype))
            assert out.dtype == dtype
    out = attention.get("sliceformer_perm4").apply({}, None, None, jnp.asarray(v))
    assert out.dtype == jnp.float64


def test_shuffle_resample_uses_key_in_training_only():
    v = jnp.asarray(_v(8, seed=15))
    mech = attention.get("sliceformer_shuffle_independent", resample=True)
    fixed = attention.get("sliceformer_shuffle_independent").apply({}, None, None, v)
    # Eval (and training without resample) use the fixed seed permutation.
    np.testing.assert_array_equal(mech.apply({}, None, None, v), fixed)
    np.testing.assert_array_equal(
        attention.get("sliceformer_shuffle_independent").apply(
            {}, None, None, v, train=True, key=jax.random.key(3)
        ),
        fixed,
    )
    a = mech.apply({}, None, None, v, train=True, key=jax.random.key(4))
    b = mech.apply({}, None, None, v, train=True, key=jax.random.key(4))
    c = mech.apply({}, None, None, v, train=True, key=jax.random.key(1))
    jitted = jax.jit(mech.apply, static_argnames="train")
    j = jitted({}, None, None, v, train=True, key=jax.random.key(4))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, j)
    assert not np.array_equal(a, c) and not np.array_equal(a, fixed)
    np.testing.assert_array_equal(np.sort(a, 1), np.sort(np.asarray(v), 1))
    with pytest.raises(ValueError, match="needs `key`"):
        mech.apply({}, None, None, v, train=True)


def test_non_shuffle_variants_ignore_train_and_key():
    v = jnp.asarray(_v(8, seed=16))
    for name in ("sliceformer", "sliceformer_perm2", "sliceformer_max_exchange"):
        fn = attention.get(name).apply
        np.testing.assert_array_equal(
            fn({}, None, None, v, train=True, key=jax.random.key(0)), fn({}, None, None, v)
        )


def test_bad_inputs_name_the_problem():
    v = jnp.ones((2, 5, 3, 4))
    q = jnp.ones((2, 5, 3, 4))  # errors are raised before any computation
    apply = attention.get("sliceformer").apply
    with pytest.raises(ValueError, match="N == M"):
        apply({}, jnp.ones((2, 4, 3, 4)), v, v)
    with pytest.raises(ValueError, match="key-padding masks only"):
        apply({}, q, q, v, mask=np.tril(np.ones((5, 5), bool))[None, None])
    with pytest.raises(ValueError, match="v must be 4-D"):
        apply({}, None, None, v[0])
    with pytest.raises(ValueError, match="must agree"):
        apply({}, None, jnp.ones((2, 5, 2, 4)), v)
    with pytest.raises(ValueError, match="boolean"):
        apply({}, None, None, v, mask=np.ones((2, 5)))
    with pytest.raises(ValueError, match=r"\[B, M\]"):
        apply({}, None, None, v, mask=np.ones((2, 6), bool))
    with pytest.raises(ValueError, match="unknown variant"):
        attention.get("sliceformer", variant="sideways").apply({}, None, None, v)
    with pytest.raises(ValueError, match="num_perms"):
        attention.get("sliceformer", variant="perm", num_perms=0).apply({}, None, None, v)
    with pytest.raises(ValueError, match="shuffle_mode"):
        attention.get("sliceformer", shuffle_mode="rows").apply({}, None, None, v)
    with pytest.raises(TypeError, match="num_perms"):
        attention.get("sliceformer_perm2", num_perms=3)
    assert set(sliceformer.VARIANTS) == {
        "ascend",
        "descend",
        "half",
        "perm",
        "max_exchange",
        "shuffle",
    }
