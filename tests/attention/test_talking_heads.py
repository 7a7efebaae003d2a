"""Talking-heads attention (CaiT) and GFSA on it: against the float64 references, the identity
maps give softmax attention, masks, gradients, jit, and the CaiT initialisation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import talking_heads
from tests.attention import ref_gfsa, ref_talking_heads
from tests.tolerances import assert_close


def _qkv(seed=0, b=2, n=5, h=3, d=4):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=(b, n, h, d)) for _ in range(3))


def _mixing(h=3, seed=1):
    rng = np.random.default_rng(seed)
    return {
        "pre_w": rng.normal(size=(h, h)),
        "pre_b": rng.normal(size=h),
        "post_w": rng.normal(size=(h, h)) * 0.5,
        "post_b": rng.normal(size=h) * 0.1,
    }


def test_identity_maps_give_softmax_attention():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv())
    eye = {
        "pre_w": jnp.eye(3),
        "pre_b": jnp.zeros(3),
        "post_w": jnp.eye(3),
        "post_b": jnp.zeros(3),
    }
    mask = np.tril(np.ones((5, 5), bool))[None, None]
    got = attention.get("talking_heads").apply({"talking_heads": eye}, q, k, v, mask=mask)
    want = attention.get("softmax", implementation="xla").apply({}, q, k, v, mask=mask)
    assert_close(got, want, what="talking heads with identity maps")


def test_heads_exchange_information():
    """Changing one head's keys changes the other heads' outputs (they do not with softmax)."""
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv())
    params = {"talking_heads": jax.tree.map(jnp.asarray, _mixing())}
    k2 = k.at[:, :, 0].set(
        jnp.asarray(np.random.default_rng(9).normal(size=(2, 5, 4)), jnp.float32)
    )
    mech = attention.get("talking_heads")
    a, b = mech.apply(params, q, k, v), mech.apply(params, q, k2, v)
    assert float(jnp.abs(a[:, :, 1:] - b[:, :, 1:]).max()) > 1e-3
    soft = attention.get("softmax", implementation="xla")
    np.testing.assert_array_equal(
        soft.apply({}, q, k, v)[:, :, 1:], soft.apply({}, q, k2, v)[:, :, 1:]
    )


@pytest.mark.parametrize("mask_kind", ["none", "key_padding", "empty_row"])
def test_gfsa_on_talking_heads_matches_the_authors_formula(mask_kind):
    """gfsa_cait.py: attn = A + lamb * (A + (K - 1)(A - I) @ A), A the mixed matrix, then A V."""
    q, k, v = _qkv(seed=2)
    mixing = _mixing()
    b, n, h = 2, 5, 3
    mask = None
    if mask_kind == "key_padding":
        mask = np.ones((b, n), bool)
        mask[0, 3:] = False
    elif mask_kind == "empty_row":
        mask = np.ones((b, h, n, n), bool)
        mask[1, 2, 4] = False
    mask4 = (
        None
        if mask is None
        else np.broadcast_to(mask[:, None, None, :] if mask.ndim == 2 else mask, (b, h, n, n))
    )
    lamb = np.array([0.3, -0.2, 0.5])
    order = 4
    with jax.enable_x64(True):
        params = {"w_k": jnp.asarray(lamb), "talking_heads": jax.tree.map(jnp.asarray, _mixing())}
        got = attention.get("gfsa", order=order, talking_heads=True).apply(
            params, *(jnp.asarray(x) for x in (q, k, v)), mask=mask
        )
        a = ref_talking_heads.matrix(mixing, q, k, mask4)
        eye = np.eye(n)[None, None]
        filt = a + lamb[None, :, None, None] * (a + (order - 1) * (a - eye) @ a)
        want = np.einsum("bhnm,bmhd->bnhd", filt, v)
        # Same thing through the shared GFSA reference (the filter on an explicit matrix).
        also = ref_gfsa.filtered({"w_k": lamb}, a, v, mask4, order=order, w0=0.0, exact=False)
    if mask is None:  # the authors' code has no masks; with masks the I term is restricted
        assert_close(got, want, rtol=1e-10, atol=1e-12, what="gfsa_cait formula")
    assert_close(got, also, rtol=1e-10, atol=1e-12, what="gfsa on talking heads")


def test_init_is_caits_and_gfsa_adds_the_maps_to_every_layer():
    p = attention.get("talking_heads").init(jax.random.key(0), num_heads=8, head_dim=48)
    mix = p["talking_heads"]
    assert mix["pre_w"].shape == mix["post_w"].shape == (8, 8)
    np.testing.assert_array_equal(mix["pre_b"], np.zeros(8))
    np.testing.assert_array_equal(mix["post_b"], np.zeros(8))
    assert 0.01 < float(jnp.std(mix["pre_w"])) < 0.03  # truncated normal(0.02)
    assert float(jnp.abs(mix["pre_w"]).max()) <= 0.04 + 1e-7  # cut at 2 standard deviations
    g = attention.get("gfsa", talking_heads=True, even_layers_only=True)
    even = g.init(jax.random.key(0), num_heads=8, head_dim=48, layer_index=0)
    odd = g.init(jax.random.key(0), num_heads=8, head_dim=48, layer_index=1)
    assert set(even) == {"w_k", "talking_heads"}
    assert set(odd) == {"buffers", "talking_heads"}  # plain layers keep their talking heads
    assert set(attention.get("gfsa").init(jax.random.key(0), num_heads=8, head_dim=48)) == {"w_k"}


def test_gradients_reach_the_mixing_maps_and_jit_matches_eager():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(seed=3))
    mech = attention.get("gfsa", talking_heads=True)
    params = mech.init(jax.random.key(1), num_heads=3, head_dim=4)
    params["w_k"] = params["w_k"] + 0.1

    def loss(p):
        return jnp.sum(mech.apply(p, q, k, v) ** 2)

    grads = jax.grad(loss)(params)
    for name, g in grads["talking_heads"].items():
        assert float(jnp.abs(g).max()) > 0, name
    assert float(jnp.abs(grads["w_k"]).max()) > 0
    eager = mech.apply(params, q, k, v)
    jitted = jax.jit(lambda p: mech.apply(p, q, k, v))(params)
    assert_close(jitted, eager, what="jit vs eager")


def test_flops_count_the_mixing_maps():
    from attention import cost

    c = cost.Call(n=197, m=197, h=8, dk=48, dv=48, d_model=384)
    soft_mm, _ = attention.flops_formula("softmax")(c, {})
    th_mm, _ = attention.flops_formula("talking_heads")(c, {})
    assert th_mm - soft_mm == 2 * 2 * 197 * 197 * 8 * 8
    hp = {**attention.defaults("gfsa"), "talking_heads": True}
    plain = {**attention.defaults("gfsa")}
    diff = attention.flops_formula("gfsa")(c, hp)[0] - attention.flops_formula("gfsa")(c, plain)[0]
    assert diff == 2 * 2 * 197 * 197 * 8 * 8


def test_bad_params_name_the_problem():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv())
    with pytest.raises(ValueError, match="talking_heads: params lack"):
        attention.get("talking_heads").apply({}, q, k, v)
    bad = {"talking_heads": {**jax.tree.map(jnp.asarray, _mixing()), "pre_w": jnp.eye(2)}}
    with pytest.raises(ValueError, match=r"'pre_w'.*expected \(3, 3\)"):
        attention.get("talking_heads").apply(bad, q, k, v)
    assert talking_heads.PARAMS == "talking_heads"
