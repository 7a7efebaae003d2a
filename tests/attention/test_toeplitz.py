"""Toeplitz-masked linear attention (GRF Table 1's baseline): learned offset scalars against the
float64 loops, a mask on offset 0 alone is the identity, all-ones is unmasked ReLU linear
attention, gradients reach the offsets, and the errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import toeplitz
from tests.attention import ref_toeplitz
from tests.tolerances import assert_close


def _qkv(seed=0, b=2, n=13, h=2, d=3):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=(b, n, h, d)) for _ in range(3))


@pytest.mark.parametrize("cls_token", [False, True])
def test_learned_offsets_match_the_loops(cls_token):
    grid = (3, 4)
    n = 12 + int(cls_token)
    q, k, v = _qkv(n=n)
    rng = np.random.default_rng(4)
    t = rng.normal(size=(2, 5 * 7))  # negative entries too: the mask is |t|, as Scenic's
    pad = np.ones((2, n), bool)
    pad[1, -3:] = False
    mask4 = np.broadcast_to(pad[:, None, None, :], (2, 2, n, n))
    with jax.enable_x64(True):
        got = attention.get("toeplitz", grid=grid, cls_token=cls_token).apply(
            {"t": jnp.asarray(t)}, *(jnp.asarray(x) for x in (q, k, v)), mask=pad
        )
    want = ref_toeplitz.reference({"t": t}, q, k, v, mask4, grid=grid, cls_token=cls_token)
    assert_close(got, want, rtol=1e-10, atol=1e-12, what="toeplitz")


def test_offset_zero_alone_is_the_identity_and_ones_is_unmasked_linear():
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(n=9))
    q, k = jnp.abs(q), jnp.abs(k)  # every ReLU weight positive
    mech = attention.get("toeplitz", grid=(3, 3))
    t = jnp.zeros((2, 25)).at[:, toeplitz.offset_index(3, 3)[0, 0]].set(1.0)
    assert_close(mech.apply({"t": t}, q, k, v), v, what="offset (0, 0) only")
    ones = mech.init(jax.random.key(0), num_heads=2, head_dim=3, max_len=9)
    relu_linear = attention.get("linear", feature_map="relu")
    assert_close(mech.apply(ones, q, k, v), relu_linear.apply({}, q, k, v), what="all-ones mask")


def test_init_gradients_and_errors():
    mech = attention.get("toeplitz", cls_token=True)
    params = mech.init(jax.random.key(0), num_heads=3, head_dim=4, max_len=17)  # 4 x 4 + CLS
    assert params["t"].shape == (3, 49) and bool(jnp.all(params["t"] == 1))
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(n=17, h=3, d=4))
    g = jax.grad(lambda p: jnp.sum(mech.apply(p, q, k, v) ** 2))(
        {"t": params["t"] + jnp.linspace(0, 1, 49)}
    )
    assert float(jnp.abs(g["t"]).max()) > 0
    with pytest.raises(ValueError, match="square number of grid tokens"):
        attention.get("toeplitz").apply(params, *(x[:, :15] for x in (q, k, v)))
    with pytest.raises(ValueError, match="key-padding masks only"):
        mech.apply(params, q, k, v, mask=jnp.ones((2, 3, 17, 17), bool))
    assert attention.check("toeplitz", {"grid": (4, 5)}, num_tokens=17) != []
