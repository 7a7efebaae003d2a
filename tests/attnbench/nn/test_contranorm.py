"""attnbench.nn.contranorm: the ContraNorm update against a float64 numpy reference written with
explicit loops (padding, the identity form, the dual normalisation, a temperature), gradients
against finite differences of that reference, jit, padded tokens kept out, s = 0 as the plain
LayerNorm path (layer and whole encoder), the paper's claim (the mean pairwise cosine similarity
of the tokens goes down), the FLOP formula, and the errors."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from flax import nnx

from attnbench import errors
from attnbench.nn import backbones, contranorm
from tests import tolerances

B, N, D = 2, 6, 5
MASK = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], bool)


def _x(seed=0, shift=0.0):
    return np.random.default_rng(seed).normal(shift, 1.0, (B, N, D)).astype(np.float32)


# ------------------------------------------------------------------- numpy float64 reference


def ref_update(x, *, scale, temperature=1.0, mask=None, dual=False, identity=False):
    """Token by token, float64: for each real token i, the softmax over the real tokens j of
    cos(x_i, x_j) / tau (plus, with `dual`, for each real j the softmax over the real tokens i'
    of cos(x_i', x_j) / tau, read at i); x_i - s sum_j a_ij x_j, or (1 + s) x_i - s sum_j a_ij
    x_j with `identity`. Padded tokens unchanged."""
    x = np.asarray(x, np.float64)
    out = x.copy()
    for b in range(x.shape[0]):
        real = [i for i in range(x.shape[1]) if mask is None or mask[b, i]]
        unit = {i: x[b, i] / max(np.linalg.norm(x[b, i]), 1e-12) for i in real}
        cos = {(i, j): float(unit[i] @ unit[j]) / temperature for i in real for j in real}
        for i in real:
            row = {j: math.exp(cos[i, j]) for j in real}
            a = {j: row[j] / sum(row.values()) for j in real}
            if dual:
                for j in real:
                    col = {k: math.exp(cos[k, j]) for k in real}
                    a[j] += col[i] / sum(col.values())
            neg = sum(a[j] * x[b, j] for j in real)
            out[b, i] = (1 + scale) * x[b, i] - scale * neg if identity else x[b, i] - scale * neg
    return out


def ref_layer_norm(x, scale, bias, eps=1e-6):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * scale + bias


CASES = [
    dict(scale=0.3),
    dict(scale=0.3, identity=True),
    dict(scale=0.2, dual=True),
    dict(scale=0.5, temperature=0.25, dual=True, identity=True),
]


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
@pytest.mark.parametrize("masked", [False, True])
def test_update_matches_the_float64_reference(kw, masked):
    x, mask = _x(), (MASK if masked else None)
    got = jax.jit(lambda x, m: contranorm.contranorm(x, mask=m, **kw))(x, mask)
    tolerances.assert_close(got, ref_update(x, mask=mask, **kw), rtol=1e-5, atol=1e-6)
    tolerances.assert_close(got, contranorm.contranorm(x, mask=mask, **kw), rtol=1e-6, atol=1e-7)


def test_padded_tokens_neither_enter_nor_change():
    """Real outputs do not depend on the padded tokens' contents; padded tokens are returned
    unchanged; a row with no real token is the input."""
    x, other = _x(), _x()
    other[0, 4:] = np.random.default_rng(9).normal(0, 50, (2, D))  # new padding
    kw = dict(scale=0.4, dual=True, identity=True)
    a = np.asarray(contranorm.contranorm(x, mask=MASK, **kw))
    b = np.asarray(contranorm.contranorm(other, mask=MASK, **kw))
    np.testing.assert_array_equal(a[0, :4], b[0, :4])
    np.testing.assert_array_equal(b[0, 4:], other[0, 4:])
    empty = np.zeros_like(MASK)
    np.testing.assert_array_equal(contranorm.contranorm(x, mask=empty, **kw), x)
    # without the mask the padded tokens do enter (what the reference code does)
    assert np.abs(np.asarray(contranorm.contranorm(x, **kw))[0, :4] - a[0, :4]).max() > 1e-3


def test_gradients_match_finite_differences_of_the_reference():
    x = _x(3)
    w = np.random.default_rng(4).normal(size=x.shape)
    kw = dict(scale=0.4, temperature=0.5, dual=True)

    def loss(x):
        return jnp.sum(contranorm.contranorm(x, mask=MASK, **kw) * w)

    grad = np.asarray(jax.jit(jax.grad(loss))(x))
    x64, h = x.astype(np.float64), 1e-5
    for b, i, d in [(0, 0, 0), (0, 3, 2), (0, 5, 1), (1, 2, 4), (1, 5, 3)]:
        up, down = x64.copy(), x64.copy()
        up[b, i, d] += h
        down[b, i, d] -= h
        diff = np.sum((ref_update(up, mask=MASK, **kw) - ref_update(down, mask=MASK, **kw)) * w)
        fd = diff / (2 * h)
        assert grad[b, i, d] == pytest.approx(fd, rel=1e-3, abs=1e-4), (b, i, d)
    # a padded token passes through unchanged: its gradient is the loss weight itself
    np.testing.assert_allclose(grad[0, 4:], w[0, 4:], rtol=1e-6)


def test_a_zero_token_has_finite_gradients():
    x = _x()
    x[1, 2] = 0.0
    g = jax.grad(lambda x: jnp.sum(contranorm.contranorm(x, scale=0.3) ** 2))(x)
    assert np.isfinite(np.asarray(g)).all()


def test_scale_zero_is_the_input_and_the_layer_norm():
    x = _x()
    assert contranorm.contranorm(x, scale=0.0, mask=MASK) is x
    ln = nnx.LayerNorm(D, epsilon=1e-6, rngs=nnx.Rngs(0))
    ln.scale.set_value(jnp.asarray(np.linspace(0.5, 1.5, D), jnp.float32))
    tolerances.assert_identical(contranorm.ContraNorm(ln, scale=0.0)(x), ln(x))


def test_layer_is_layer_norm_of_the_update_and_keeps_bfloat16():
    x = _x(5)
    ln = nnx.LayerNorm(D, epsilon=1e-6, rngs=nnx.Rngs(0))
    ln.bias.set_value(jnp.asarray(np.linspace(-0.2, 0.2, D), jnp.float32))
    norm = contranorm.ContraNorm.wrap(ln, scale=0.3, temperature=2.0)
    assert norm.norm is ln and norm.num_features == D
    want = ref_layer_norm(
        ref_update(x, scale=0.3, temperature=2.0, mask=MASK), np.ones(D), np.asarray(ln.bias[...])
    )
    tolerances.assert_close(norm(x, mask=MASK), want, rtol=1e-5, atol=1e-5)
    y = contranorm.contranorm(jnp.asarray(x, jnp.bfloat16), scale=0.3)
    assert y.dtype == jnp.bfloat16


def test_it_lowers_the_mean_cosine_similarity_of_collapsed_tokens():
    """Guo et al.'s claim: ContraNorm spreads the tokens apart. Tokens in a narrow cone (a
    shared direction plus small noise) get a lower mean pairwise cosine similarity, more so as
    s grows; with a LayerNorm after it too."""
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(1, 1, D)) * 3 + rng.normal(size=(B, N, D))).astype(np.float32)
    before = np.asarray(contranorm.mean_cosine_similarity(x, MASK))
    prev = before
    for s in (0.2, 0.5, 0.8):
        y = contranorm.contranorm(x, scale=s, mask=MASK)
        after = np.asarray(contranorm.mean_cosine_similarity(y, MASK))
        assert np.all(after < prev - 1e-3), (s, prev, after)
        prev = after
    ln = nnx.LayerNorm(D, epsilon=1e-6, rngs=nnx.Rngs(0))
    plain = np.asarray(contranorm.mean_cosine_similarity(ln(x), MASK))
    cn = contranorm.ContraNorm(ln, scale=0.5)(x, mask=MASK)
    assert np.all(np.asarray(contranorm.mean_cosine_similarity(cn, MASK)) < plain)


def test_mean_cosine_similarity_by_hand():
    x = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [5.0, 5.0]]], np.float32)
    # pairs of the first three: 0, 1/sqrt(2), 1/sqrt(2)
    got = contranorm.mean_cosine_similarity(x, np.array([[1, 1, 1, 0]]))
    assert float(got[0]) == pytest.approx(2 / math.sqrt(2) / 3, rel=1e-6)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(scale=-0.1), "scale=-0.1"),
        (dict(scale=float("nan")), "scale=nan"),
        (dict(scale=0.1, temperature=0.0), "temperature=0.0"),
        (dict(scale=True), "scale=True"),
    ],
)
def test_bad_settings_are_one_clear_error(kw, match):
    with pytest.raises(ValueError, match=match):
        contranorm.contranorm(_x(), **kw)
    with pytest.raises(ValueError, match="does not match"):
        contranorm.contranorm(_x(), scale=0.1, mask=np.ones((B, N + 1), bool))


# ----------------------------------------------------------------------------- the backbone


def _model_cfg(**over):
    m = ml_collections.ConfigDict(
        dict(
            encoder="transformer",
            num_layers=2,
            dim=8,
            qkv_dim=8,
            num_heads=2,
            mlp_dim=16,
            dropout=0.0,
            positions="learned",
            dtype="float32",
            qkv_bias=True,
            out_bias=True,
            gelu="erf",
        )
    )
    m.update(over)
    return m


def _encoder(name, **over):
    cfg = _model_cfg(**over)
    return backbones.build(
        name, model_cfg=cfg, attention_cfg={"name": "softmax"}, max_len=N, rngs=nnx.Rngs(3)
    )


def test_encoder_at_scale_zero_is_the_transformer_exactly():
    x = np.random.default_rng(1).normal(size=(B, N, 8)).astype(np.float32)
    plain = _encoder("transformer", num_layers=1)
    cn = _encoder("transformer_contranorm", contranorm_scale=0.0, num_layers=1)
    tolerances.assert_identical(cn(x), plain(x))
    assert all(isinstance(b.ln1, contranorm.ContraNorm) for b in cn.blocks)
    n_params = lambda m: sum(v.size for v in jax.tree.leaves(nnx.state(m, nnx.Param)))  # noqa: E731
    assert n_params(cn) == n_params(plain)


def test_encoder_applies_contranorm_before_each_layer_norm():
    """The encoder against the plain encoder's own blocks with the update put in by hand."""
    x = np.random.default_rng(2).normal(size=(B, N, 8)).astype(np.float32)
    enc = _encoder("transformer_contranorm", contranorm_scale=0.4, contranorm_dual=True)
    kw = dict(scale=0.4, dual=True)
    h = jnp.asarray(x) + enc.pos_embedding[...][:N]
    for block in enc.blocks:
        a = block.attn(block.ln1.norm(contranorm.contranorm(h, **kw)))
        h = h + a
        h = h + block.mlp(block.ln2.norm(contranorm.contranorm(h, **kw)), train=False)
    want = enc.norm.norm(contranorm.contranorm(h, **kw))
    tolerances.assert_close(jax.jit(lambda m, x: m(x))(enc, x), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="unpadded inputs"):
        enc(x, mask=np.ones((B, N), bool))


def test_encoder_settings_are_checked():
    with pytest.raises(errors.ConfigError, match="contranorm_scale"):
        _encoder("transformer_contranorm")
    with pytest.raises(errors.ConfigError, match="temperature=-1"):
        _encoder("transformer_contranorm", contranorm_scale=0.1, contranorm_temperature=-1.0)
    with pytest.raises(errors.ConfigError, match="contranorm_dual"):
        _encoder("transformer_contranorm", contranorm_scale=0.1, contranorm_dual=1)


def test_update_flops_count_the_two_products():
    matmul, elementwise = contranorm.update_flops(10, 4)
    assert matmul == 4 * 10 * 10 * 4
    assert elementwise > 0
    dual = contranorm.update_flops(10, 4, dual=True)
    assert dual[0] == matmul and dual[1] > elementwise
