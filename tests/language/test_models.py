"""The causal decoder LM (`language.models`): the forward pass against a float64 numpy decoder,
causality through every causal mechanism, refusals, jit and gradients, FLOPs, and the parameter
counts of SSA's models. The backbone's positions and registration: backbones/test_decoder.py."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from attnbench import errors
from attnbench.nn import flops
from language import models
from language.backbones import decoder
from tests import tolerances

V, N = 40, 12


def _build(model, attention=None, *, vocab=V, max_len=N, seed=0):
    return models.build_decoder(
        model,
        attention or {"name": "softmax"},
        vocab_size=vocab,
        max_len=max_len,
        rngs=nnx.Rngs(params=seed),
    )


def _filled(model, *, seed=0, vocab=V, max_len=N):
    """The decoder built by shape, its parameters filled with numpy normals (std 0.3; LayerNorm
    scales around 1): no init programs to compile, so the fast tier stays fast."""
    m = nnx.eval_shape(lambda: _build(model, vocab=vocab, max_len=max_len))
    rng = np.random.default_rng(seed)
    for path, v in nnx.iter_graph(m):
        if isinstance(v, nnx.Variable):
            shift = 1.0 if path[-1] == "scale" else 0.0
            v.set_value((shift + rng.normal(0, 0.3, v.shape)).astype(np.float32))
    return m


def _jit(fn):
    """One compiled program instead of op-by-op dispatch (one compile per op, slow on CPU)."""
    return jax.jit(fn)


# --------------------------------------------------------------- the forward pass in numpy


def _p(v):
    return np.asarray(v[...], np.float64)


def ref_decoder_logits(model: models.Decoder, tokens: np.ndarray) -> np.ndarray:
    """The decoder in float64 numpy with explicit loops over heads and queries: embedding
    (times sqrt(dim) when scaled), learned positions, pre-LN blocks (LayerNorm eps 1e-5), causal
    softmax attention with the ALiBi or 2-D relative bias (table looked up per (row, column)
    offset), GELU erf or tanh, final norm, tied or untied head."""
    from math import erf

    s = model.settings

    def ln(x, norm):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + s["norm_eps"]) * _p(norm.scale) + _p(norm.bias)

    def gelu(x):
        if s["gelu"] == "tanh":
            return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
        return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))

    def lin(x, layer):
        y = np.tensordot(x, _p(layer.kernel), axes=1)
        return y + (_p(layer.bias) if layer.bias is not None else 0.0)

    b, n = tokens.shape
    heads = s["num_heads"]
    hd = s["qkv_dim"] // heads
    emb = _p(model.embed.embedding)
    x = emb[tokens] * (math.sqrt(s["dim"]) if s["scale_embedding"] else 1.0)
    if s["positions"] == "learned":
        x = x + _p(model.stack.pos_embedding)[:n]
    slopes = decoder.alibi_slopes(heads)
    for block in model.stack.blocks:
        h = ln(x, block.ln1)
        a = block.attn
        q = np.einsum("bnd,dhk->bnhk", h, _p(a.query.kernel)) + _p(a.query.bias)
        k = np.einsum("bnd,dhk->bnhk", h, _p(a.key.kernel)) + _p(a.key.bias)
        v = np.einsum("bnd,dhk->bnhk", h, _p(a.value.kernel)) + _p(a.value.bias)
        o = np.zeros((b, n, heads, hd))
        for bi in range(b):
            for hh in range(heads):
                for i in range(n):
                    logits = np.array(
                        [q[bi, i, hh] @ k[bi, j, hh] / math.sqrt(hd) for j in range(i + 1)]
                    )
                    if s["positions"] == "alibi":
                        logits = logits - slopes[hh] * (i - np.arange(i + 1))
                    if s["positions"] == "relative_2d":
                        rows, cols, ch = s["grid"]
                        table = _p(block.rel_bias).reshape(heads, 2 * rows - 1, 2 * cols - 1)
                        for j in range(i + 1):
                            (ri, ci), (rj, cj) = divmod(i // ch, cols), divmod(j // ch, cols)
                            logits[j] += table[hh, ri - rj + rows - 1, ci - cj + cols - 1]
                    p = np.exp(logits - logits.max())
                    o[bi, i, hh] = (p / p.sum()) @ v[bi, : i + 1, hh]
        x = x + np.einsum("bnhk,hkd->bnd", o, _p(a.out.kernel)) + _p(a.out.bias)
        h = gelu(lin(ln(x, block.ln2), block.mlp.fc1))
        x = x + lin(h, block.mlp.fc2)
    if model.stack.norm is not None:
        x = ln(x, model.stack.norm)
    if model.head is None:
        return x @ emb.T
    return lin(x, model.head)


TOKENS = np.array(
    [[3, 17, 39, 0, 25, 8, 8, 21, 33, 5, 1, 2], [11, 2, 2, 37, 30, 6, 19, 1, 0, 12, 9, 4]]
)

# fairseq-style (ALiBi, scaled embedding, GELU erf, untied, no final norm) and GPT-2-style
FAIRSEQ = dict(
    num_layers=2, dim=16, num_heads=4, mlp_dim=24, positions="alibi", gelu="erf",
    scale_embedding=True, output="untied", final_norm=False,
)  # fmt: skip
LEARNED = dict(num_layers=1, dim=16, num_heads=2, mlp_dim=32, positions="learned", gelu="tanh")
PIXELS = dict(
    num_layers=1, dim=16, num_heads=2, mlp_dim=32, positions="relative_2d", grid=(2, 2, 3),
    output="untied",
)  # fmt: skip


def test_forward_matches_numpy_alibi():
    model = _filled(FAIRSEQ)
    got = _jit(lambda t: model(t))(TOKENS)
    tolerances.assert_close(
        np.asarray(got), ref_decoder_logits(model, TOKENS), rtol=1e-5, atol=1e-5
    )


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [LEARNED, PIXELS], ids=["learned", "relative_2d"])
def test_forward_matches_numpy(cfg):
    model = _filled(cfg)
    got = _jit(lambda t: model(t))(TOKENS)
    tolerances.assert_close(
        np.asarray(got), ref_decoder_logits(model, TOKENS), rtol=1e-5, atol=1e-5
    )


# ------------------------------------------------------------------------------- causality

CAUSAL_CASES = {
    "softmax": {"name": "softmax"},
    "gfsa": {"name": "gfsa", "order": 3, "init_wk": 0.5},  # w_K != 0: Ā² is used
    "ssa_local": {"name": "ssa", "sampling": "local_1d", "keep": 0.5},
    "ssa_unbiased": {"name": "ssa", "sampling": "unbiased", "keep": 0.5},
    "local": {"name": "local", "window": 3},
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CAUSAL_CASES))
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_changing_a_token_changes_no_earlier_output(case, train):
    positions = "none" if case == "local" else "alibi"
    model = _build(dict(LEARNED, num_layers=2, positions=positions), CAUSAL_CASES[case])
    # train=True with dropout off samples SSA's sources (the same pattern for both inputs)
    nll = _jit(lambda t, key: model(t, train=train, key=key))
    base = np.asarray(nll(TOKENS, jax.random.key(7)))
    for t in (4, 9):
        changed = TOKENS.copy()
        changed[:, t] = (changed[:, t] + 5) % V
        out = np.asarray(nll(changed, jax.random.key(7)))
        tolerances.assert_close(out[:, :t], base[:, :t], rtol=0, atol=1e-6)
        assert not np.allclose(out[:, t], base[:, t])


def test_refusals_name_the_mechanism():
    for name in ("sliceformer", "samsa", "linformer", "performer", "gfsa_linear", "grf"):
        with pytest.raises(errors.ConfigError, match=f"name='{name}'"):
            decoder.causal_mechanism({"name": name})
    with pytest.raises(errors.ConfigError, match="causal=False"):
        decoder.causal_mechanism({"name": "ssa", "causal": False})
    mech, how = decoder.causal_mechanism({"name": "ssa", "sampling": "local_1d"})
    assert how == "flag" and mech.hparams["causal"] is True
    assert decoder.causal_mechanism({"name": "gfsa"})[1] == "mask"
    with pytest.raises(errors.ConfigError, match="positions='alibi'"):
        decoder.causal_mechanism({"name": "linear"}, positions="alibi")
    bad = [
        (dict(LEARNED, positions="rotary"), "positions"),
        (dict(LEARNED, positions="relative_2d"), "grid"),
        (dict(LEARNED, output="adaptive", input="embedding"), "tie_adaptive_weights"),
        (dict(LEARNED, input="adaptive"), "output='tied'"),
        (dict(LEARNED, gelu="relu"), "gelu"),
        ({"dim": 8}, "num_layers"),
    ]
    for cfg, field in bad:
        with pytest.raises(errors.ConfigError, match=field):
            nnx.eval_shape(lambda cfg=cfg: _build(cfg))
    with pytest.raises(errors.ConfigError, match=r"grid=\(1, 2, 3\): 6 tokens"):
        nnx.eval_shape(lambda: _build(dict(PIXELS, grid=(1, 2, 3))))


# ------------------------------------------------------------------- jit, gradients, FLOPs


@pytest.mark.slow
@pytest.mark.parametrize(
    "cfg,att",
    [
        (FAIRSEQ, {"name": "ssa", "sampling": "local_1d", "keep": 0.5, "dropout_rate": 0.1}),
        (dict(PIXELS, input="adaptive", output="adaptive", adaptive_cutoffs=(10, 20),
              adaptive_factor=2, adaptive_dropout=0.2, dropout=0.1, activation_dropout=0.1),
         {"name": "gfsa", "dropout_rate": 0.1}),
    ],
    ids=["alibi_ssa", "pixels_adaptive_gfsa"],
)  # fmt: skip
def test_jit_gradients_are_finite(cfg, att):
    model = _build(cfg, att)
    graph, params, rest = nnx.split(model, nnx.Param, ...)
    targets = np.roll(TOKENS, -1, 1)

    def loss(params, key):
        return nnx.merge(graph, params, rest).nll(TOKENS, targets, train=True, key=key).mean()

    value, grads = jax.jit(jax.value_and_grad(loss))(params, jax.random.key(0))
    assert np.isfinite(value) and 0 < value < 3 * math.log(V)
    leaves = jax.tree.leaves(grads)
    assert all(np.isfinite(g).all() for g in leaves)
    assert sum(float(jnp.abs(g).sum()) > 0 for g in leaves) == len(leaves)  # all are used


def test_matmul_flops_by_hand():
    """One sequence of n tokens through LEARNED (1 layer, d 16, MLP 32, tied head, V 40):
    q/k/v/out 4 * 2n d^2, MLP 2 * 2n d m, scores and weighted sum 2 * 2 n^2 d (the causal
    mask is not discounted, as SSA counts), head 2 n d V."""
    model = nnx.eval_shape(lambda: _build(LEARNED))
    tally = flops.Tally(train=False, examples=1, elementwise=False)
    model.count_flops(tally)
    n, d, m = N, 16, 32
    assert tally.matmul == 8 * n * d * d + 4 * n * d * m + 4 * n * n * d + 2 * n * d * V
    params, _, by_component = tally.parameters(model)
    assert params == sum(by_component.values())
    assert by_component["embedding"] == V * d + N * d  # token table and positions


# --------------------------------------------------------------- SSA's parameter counts

# SSA App. B: 16 layers; fairseq transformer_lm_wiki103 widths (d 1024, FFN 4096, 8 heads),
# GELU instead of ReLU; biases on every projection (fairseq MultiheadAttention / Linear).
SSA_BASE = dict(
    num_layers=16, dim=1024, num_heads=8, mlp_dim=4096, gelu="erf", scale_embedding=True
)


def _count(model_cfg, vocab, max_len):
    model = nnx.eval_shape(lambda: _build(model_cfg, vocab=vocab, max_len=max_len))
    return sum(math.prod(v.shape) for _, v in nnx.iter_graph(model) if isinstance(v, nnx.Param))


@pytest.mark.slow
def test_ssa_parameter_counts():
    layer = 4 * (1024 * 1024 + 1024) + (1024 * 4096 + 4096) + (4096 * 1024 + 1024) + 4 * 1024
    assert layer == 12_596_224
    # WikiText-103 (247M): adaptive input 20000x1024 + 40000x256 + 207744x64 embeddings with
    # projections 1024^2 + 256x1024 + 64x1024, a tied adaptive softmax owning only its
    # 1024x2 cluster projection, no final norm (fairseq no_decoder_final_norm), fairseq's
    # 267,744-word dictionary.
    wt103 = dict(SSA_BASE, positions="alibi", input="adaptive", output="adaptive", final_norm=False)
    assert _count(wt103, 267_744, 3072) == 246_933_504 == 16 * layer + 45_391_872 + 2048
    # enwik8 (202M): 256 bytes, plain embedding, "extra final LayerNorm"; the paper does not say
    # whether the byte head is tied: tied 201,803,776, untied 202,065,920; both round to 202M.
    enwik8 = dict(SSA_BASE, positions="alibi")
    assert _count(enwik8, 256, 4096) == 201_803_776 == 16 * layer + 256 * 1024 + 2048
    assert _count(dict(enwik8, output="untied"), 256, 4096) == 202_065_920
    # CIFAR-10 (203M): 256 sub-pixel values, a Swin-style 63x63 table per head and layer
    # (16 x 8 x 3969 = 508,032); untied head 202,573,952 rounds to 203M (tied: 202,311,808,
    # which would print 202M, so we read the head as untied).
    cifar = dict(SSA_BASE, positions="relative_2d", grid=(32, 32, 3), output="untied")
    assert _count(cifar, 256, 3072) == 202_573_952 == 202_065_920 + 508_032


# ------------------------------------------------------- SSA in the last layers only (S12)


SSA_HALF = {"name": "ssa", "sampling": "local_1d", "keep": 0.5}


def _params(m):
    return sum(math.prod(v.shape) for _, v in nnx.iter_graph(m) if isinstance(v, nnx.Param))


def test_attention_layers_pick_the_blocks():
    """`attention_layers=(1,)` (SSA's S<l>: SSA in the last l layers): block 0 is causal
    softmax (the causal mask, the same ALiBi bias), block 1 SSA; the parameters are those of
    the dense and of the all-SSA model; a block outside the stack is named."""
    cfg = dict(FAIRSEQ, num_layers=2)
    mixed = nnx.eval_shape(lambda: _build(dict(cfg, attention_layers=(1,)), SSA_HALF))
    assert [b.attn.mechanism.name for b in mixed.stack.blocks] == ["softmax", "ssa"]
    assert mixed.stack.hows == ("mask", "flag")
    dense = nnx.eval_shape(lambda: _build(cfg))
    every = nnx.eval_shape(lambda: _build(cfg, SSA_HALF))
    assert every.stack.hows == ("flag", "flag") and dense.stack.hows == ("mask", "mask")
    assert _params(mixed) == _params(dense) == _params(every)
    with pytest.raises(errors.ConfigError, match=r"attention_layers=\(2,\).*0\.\.1"):
        nnx.eval_shape(lambda: _build(dict(cfg, attention_layers=(2,)), SSA_HALF))


@pytest.mark.slow
def test_dense_first_blocks_equal_the_dense_models():
    """With the same parameters, block 0 of the S1 model gives the dense model's block-0 output
    exactly while training with subsampling on; at evaluation (SSA renormalised to dense) the
    whole model is the dense one, and training it differs from dense (block 1 subsamples)."""
    cfg = dict(FAIRSEQ, num_layers=2)
    mixed = _build(dict(cfg, attention_layers=(1,)), SSA_HALF)
    dense = _build(cfg)
    nnx.update(dense, nnx.state(mixed, nnx.Param))
    x = mixed.embed(jnp.asarray(TOKENS)) * mixed.embed_scale
    bias = jnp.asarray(decoder.alibi_bias(4, N))
    causal = jnp.asarray(np.tril(np.ones((N, N), bool)))[None, None]
    key = jax.random.key(3)
    got = mixed.stack.blocks[0](x, mask=causal, bias=bias, train=True, key=key)
    want = dense.stack.blocks[0](x, mask=causal, bias=bias, train=True, key=key)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    out = {m: _jit(lambda t, k, m=m: m(t, train=True, key=k)) for m in (mixed, dense)}
    evals = [np.asarray(_jit(lambda t, m=m: m(t))(TOKENS)) for m in (mixed, dense)]
    np.testing.assert_allclose(evals[0], evals[1], rtol=1e-6, atol=1e-6)
    trained = [np.asarray(f(TOKENS, key)) for f in out.values()]
    assert not np.allclose(trained[0], trained[1])
