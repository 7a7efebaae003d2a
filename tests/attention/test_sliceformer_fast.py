"""Sliceformer's sorts on integer keys along the minor axis: the keys order floats exactly as
`lax.sort` does (ties, signed zeros, infinities, NaNs), the values read back from the keys are
`jnp.sort`'s, and derivatives (reverse and forward mode) equal those of `jnp.sort` and of
argsort + gather, ties included. Outputs against the float64 references: test_sliceformer.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attention import sliceformer

SPECIALS = [
    -np.inf,
    -1e30,
    -2.0,
    -0.0,
    0.0,
    1.0,
    1.0,
    3e30,
    np.inf,
    np.nan,
    -np.nan,
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_keys_order_floats_as_lax_sort_and_read_back(dtype):
    with jax.enable_x64(dtype == "float64"):
        rng = np.random.default_rng(0)
        x = np.concatenate([SPECIALS, rng.normal(size=40), rng.normal(size=20).round(1)])
        x = jnp.asarray(rng.permutation(x), dtype)
        key = sliceformer._sort_key(x)
        assert key.dtype == (jnp.uint64 if dtype == "float64" else jnp.uint32)
        back = sliceformer._from_sort_key(jnp.sort(key), x.dtype)
        want = jnp.sort(x)
        np.testing.assert_array_equal(np.asarray(back), np.asarray(want))  # NaN == NaN here
        # the key order is lax.sort's: a stable sort by key permutes like a stable float sort
        iota = jnp.arange(x.size)
        by_key = jax.lax.sort((key, iota), num_keys=1, is_stable=True)[1]
        by_float = jax.lax.sort((x, iota), num_keys=1, is_stable=True)[1]
        np.testing.assert_array_equal(by_key, by_float)
        # denormals keep their bits (no flush to zero), -0.0 comes back as +0.0
        tiny = jnp.asarray([1e-40, -1e-40, -0.0, 5e-324 if dtype == "float64" else 1e-45], dtype)
        back = sliceformer._from_sort_key(sliceformer._sort_key(tiny), tiny.dtype)
        np.testing.assert_array_equal(np.asarray(back)[[0, 1, 3]], np.asarray(tiny)[[0, 1, 3]])
        assert not np.signbit(np.asarray(back)[2])
        # padding sorts after everything real, NaN included
        pad = jnp.zeros(x.shape, bool).at[:3].set(True)
        order = jnp.argsort(sliceformer._padded_key(x, pad), stable=True)
        assert set(np.asarray(order[-3:]).tolist()) == {0, 1, 2}


def test_ascending_values_and_derivatives_equal_jnp_sort_with_ties():
    with jax.enable_x64(True):
        rng = np.random.default_rng(1)
        x = rng.integers(-3, 4, size=(2, 3, 4, 17)).astype(np.float64)  # many ties
        x[0, 0, 0, :4] = [0.0, -0.0, 0.0, -0.0]
        x = jnp.asarray(x)
        none = jnp.zeros((), bool)
        np.testing.assert_array_equal(sliceformer._ascending(x, none), jnp.sort(x, axis=-1))
        cot = jnp.asarray(rng.normal(size=x.shape))
        got = jax.grad(lambda x: (sliceformer._ascending(x, none) * cot).sum())(x)
        want = jax.grad(lambda x: (jnp.sort(x, axis=-1) * cot).sum())(x)
        np.testing.assert_array_equal(got, want)
        tangent = jnp.asarray(rng.normal(size=x.shape))
        _, got_t = jax.jvp(lambda x: sliceformer._ascending(x, none), (x,), (tangent,))
        _, want_t = jax.jvp(lambda x: jnp.sort(x, axis=-1), (x,), (tangent,))
        np.testing.assert_array_equal(got_t, want_t)


@pytest.mark.parametrize(
    "hp",
    [
        dict(variant="ascend"),
        dict(variant="descend"),
        dict(variant="half"),
        dict(variant="perm", num_perms=3),
        dict(variant="shuffle"),
        dict(variant="shuffle", shuffle_mode="independent"),
        dict(variant="max_exchange"),
    ],
    ids=lambda hp: "-".join(str(x) for x in hp.values()),
)
@pytest.mark.parametrize("padded", [False, True])
def test_gradients_equal_argsort_and_gather(hp, padded):
    """Every variant's output is a gather of v: its gradient scatters the cotangent back along
    the same positions (checked against the reference's permutation applied to indices)."""
    from tests.attention.ref_sliceformer import sliceformer_reference

    with jax.enable_x64(True):
        rng = np.random.default_rng(2)
        b, n, h, dv = 2, 9, 2, 4
        v = rng.integers(-4, 5, size=(b, n, h, dv)).astype(np.float64)  # ties
        v += rng.normal(size=v.shape) * (rng.random(v.shape) < 0.5)
        pad = np.ones((b, n), bool)
        if padded:
            pad[0, [2, 5]] = False
            pad[1, 6:] = False
        mask = jnp.asarray(pad) if padded else None
        cot = rng.normal(size=v.shape)
        apply = lambda v: sliceformer.apply({}, None, None, v, mask=mask, **hp)  # noqa: E731
        out, vjp = jax.vjp(apply, jnp.asarray(v))
        (grad,) = vjp(jnp.asarray(cot))
        ref_mask = np.broadcast_to(pad[:, None, None, :], (b, h, n, n))
        np.testing.assert_allclose(
            out, sliceformer_reference({}, None, None, v, ref_mask, **hp), rtol=1e-12
        )
        # The gradient through a fixed selection: d out / d v is linear, so the same
        # selection applied to the cotangent's transpose equals the jacobian product.
        jac = jax.jacrev(apply)(jnp.asarray(v))
        np.testing.assert_allclose(grad, np.einsum("bnhd,bnhdBNHD->BNHD", cot, jac), rtol=1e-12)
        _, tangent_out = jax.jvp(apply, (jnp.asarray(v),), (jnp.asarray(cot),))
        np.testing.assert_allclose(
            tangent_out, np.einsum("bnhdBNHD,BNHD->bnhd", jac, cot), rtol=1e-12, atol=1e-12
        )


def test_bfloat16_values_sort_in_float32_and_return_bfloat16():
    v = jax.random.normal(jax.random.key(0), (2, 33, 2, 8)).astype(jnp.bfloat16)
    out = sliceformer.apply({}, None, None, v)
    assert out.dtype == jnp.bfloat16
    np.testing.assert_array_equal(out, jnp.sort(v, axis=1))
    g = jax.grad(lambda v: sliceformer.apply({}, None, None, v).astype(jnp.float32).sum())(v)
    assert g.dtype == jnp.bfloat16
    np.testing.assert_array_equal(g, jnp.ones_like(v))
