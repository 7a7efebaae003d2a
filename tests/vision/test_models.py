"""The ViT image classifier: a float64 numpy forward of the whole model with its own weights,
the paper recipes' parameter counts (Sliceformer Table 5, DeiT-S), FLOPs against XLA's cost
analysis, and the image-grid wiring of graph-structured mechanisms."""

import math

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from flax import nnx

from attnbench import config as config_lib
from attnbench.nn import flops
from tests import tolerances
from tests.attnbench.nn.test_contranorm import ref_update
from vision import models

DIM, HEADS, MLP, PATCH, SIZE, LAYERS, CLASSES = 16, 2, 24, 4, 8, 2, 5


def _model_cfg(**over):
    m = ml_collections.ConfigDict(
        dict(
            encoder="transformer",
            patch_size=PATCH,
            num_layers=LAYERS,
            dim=DIM,
            qkv_dim=DIM,
            num_heads=HEADS,
            mlp_dim=MLP,
            dropout=0.1,
            drop_path=0.1,
            drop_path_decay="linear",
            layer_scale=None,
            qkv_bias=True,
            out_bias=True,
            positions="learned",
            pool="cls",
            head_classes=0,
            dtype="float32",
        )
    )
    m.update(over)
    return m


def _build(attention_cfg=None, **over):
    return models.ImageClassifier(
        num_classes=CLASSES,
        image_size=SIZE,
        channels=3,
        model_cfg=_model_cfg(**over),
        attention_cfg=attention_cfg or {"name": "softmax"},
        rngs=nnx.Rngs(0),
    )


def _np(x):
    return np.asarray(x[...], np.float64)


def _layer_norm(x, ln, eps=1e-6):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * _np(ln.scale) + _np(ln.bias)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def _linear_general(x, proj):
    # [N, D] x [D, H, d] (+ [H, d]) -> [N, H, d]
    y = np.einsum("nd,dhe->nhe", x, _np(proj.kernel))
    return y if proj.bias is None else y + _np(proj.bias)


def _norm(x, norm, cn):
    """A LayerNorm of the model, or with `cn` (ContraNorm's settings) its `ContraNorm`: the
    float64 update of tests/attnbench/nn/test_contranorm.py, then the LayerNorm."""
    if cn is None:
        return _layer_norm(x, norm)
    return _layer_norm(ref_update(x[None], **cn)[0], norm.norm)


def _reference(model, image, cn=None):
    """One image [S, S, 3] -> logits, every step explicit, float64; `cn`: ContraNorm's settings
    (`transformer_contranorm`, ContraNorm before each LayerNorm)."""
    p = PATCH
    g = SIZE // p
    kernel, bias = _np(model.patch_embed.kernel), _np(model.patch_embed.bias)  # [p, p, 3, D]
    tokens = []
    for i in range(g):
        for j in range(g):
            patch = image[i * p : (i + 1) * p, j * p : (j + 1) * p]  # [p, p, 3]
            tokens.append(np.einsum("abc,abcd->d", patch, kernel) + bias)
    x = np.concatenate([_np(model.cls)[0], np.stack(tokens)])  # class token first
    x = x + _np(model.encoder.pos_embedding)[: len(x)]
    for block in model.encoder.blocks:
        h = _norm(x, block.ln1, cn)
        q, k, v = (_linear_general(h, getattr(block.attn, n)) for n in ("query", "key", "value"))
        out = np.zeros_like(q)
        for head in range(HEADS):
            logits = q[:, head] @ k[:, head].T / math.sqrt(q.shape[-1])
            w = np.exp(logits - logits.max(-1, keepdims=True))
            out[:, head] = (w / w.sum(-1, keepdims=True)) @ v[:, head]
        attn = np.einsum("nhe,hed->nd", out, _np(block.attn.out.kernel)) + _np(block.attn.out.bias)
        x = x + attn
        h = _norm(x, block.ln2, cn)
        h = _gelu_tanh(h @ _np(block.mlp.fc1.kernel) + _np(block.mlp.fc1.bias))
        x = x + h @ _np(block.mlp.fc2.kernel) + _np(block.mlp.fc2.bias)
    x = _norm(x, model.encoder.norm, cn)
    return x[0] @ _np(model.head.kernel) + _np(model.head.bias)


def test_vit_forward_equals_a_float64_reference_with_its_own_weights():
    model = _build()
    images = np.random.default_rng(0).standard_normal((2, SIZE, SIZE, 3)).astype(np.float32)
    logits = jax.jit(lambda m, x: m(x))(model, images)
    expected = np.stack([_reference(model, img.astype(np.float64)) for img in images])
    tolerances.assert_close(logits, expected, rtol=1e-5, atol=1e-5, what="ViT logits")


def test_contranorm_vit_equals_a_float64_reference_and_is_the_vit_at_scale_zero():
    """Guo et al.'s ViT: ContraNorm before each of the 2 x layers + 1 LayerNorms; the same
    parameters as the ViT, which it is exactly at s = 0."""
    cn = dict(scale=0.3, temperature=0.5, dual=True)
    over = dict(encoder="transformer_contranorm", contranorm_temperature=0.5, contranorm_dual=True)
    model = _build(contranorm_scale=0.3, **over)
    images = np.random.default_rng(0).standard_normal((2, SIZE, SIZE, 3)).astype(np.float32)
    logits = jax.jit(lambda m, x: m(x))(model, images)
    expected = np.stack([_reference(model, img.astype(np.float64), cn) for img in images])
    tolerances.assert_close(logits, expected, rtol=1e-5, atol=1e-5, what="ContraNorm ViT logits")
    plain, off = _build(), _build(contranorm_scale=0.0, **over)
    tolerances.assert_identical(off(images), plain(images))
    assert nnx.state(off, nnx.Param).keys() == nnx.state(plain, nnx.Param).keys()


def test_gap_pooling_has_no_class_token_and_means_the_patches():
    model = _build(pool="mean")
    assert not hasattr(model, "cls") and model.length == (SIZE // PATCH) ** 2
    images = np.random.default_rng(1).standard_normal((2, SIZE, SIZE, 3)).astype(np.float32)
    assert model(images).shape == (2, CLASSES)


@pytest.mark.slow  # ~13 s of compilation; the DeiT smoke runs train with drop-path and dropout
def test_training_mode_uses_drop_path_and_dropout_and_gradients_are_finite():
    model = _build()
    images = jnp.asarray(np.random.default_rng(2).standard_normal((4, SIZE, SIZE, 3)), jnp.float32)
    graphdef, params = nnx.split(model, nnx.Param)

    @jax.jit
    def forward(params, key):
        return nnx.merge(graphdef, params)(images, train=True, key=key)

    a, b = forward(params, jax.random.key(0)), forward(params, jax.random.key(1))
    assert not np.allclose(a, b)  # different keys drop different branches
    tolerances.assert_identical(a, forward(params, jax.random.key(0)))
    grads = jax.jit(jax.grad(lambda p: jnp.mean(forward(p, jax.random.key(0)) ** 2)))(params)
    assert all(np.isfinite(g).all() for g in jax.tree.leaves(grads))


def test_wrong_image_size_and_untileable_sizes_are_clear_errors():
    model = _build()
    with pytest.raises(ValueError, match="built for 8x8"):
        model(np.zeros((1, 12, 12, 3), np.float32))
    with pytest.raises(ValueError, match="not a multiple of the patch size"):
        models.grid_shape(30, 4)


# Sliceformer Table 5's sizes, exactly (arXiv 2310.17683 Table 5; our reading: vit-pytorch's
# ViT and timm's ViT-S/16 give them); DeiT-S 22,050,664 (timm deit_small_patch16_224); GFSA
# adds one w_K per head and layer (its authors' log: 22,050,736).
PARAMS = {
    "vision/cifar10.py:model=vit": 9_603_594,
    "vision/cifar10.py:model=sliceformer": 6_457_866,
    "vision/cifar100.py:model=vit": 9_649_764,
    "vision/cifar100.py:model=sliceformer": 6_504_036,
    "vision/tiny_imagenet.py:model=vit": 22_050_664,
    "vision/tiny_imagenet.py:model=sliceformer": 18_502_504,
    "vision/imagenet.py:model=deit_s": 22_050_664,
    "vision/imagenet.py:model=deit_s,attn=gfsa": 22_050_664 + 72,
    # DeiT-T: timm deit_tiny_patch16_224's 5,717,416; 444,864 per further block (GFSA Tables
    # 17-18's 16 and 24 layers); ContraNorm adds none
    "vision/imagenet.py:model=deit_t": 5_717_416,
    "vision/imagenet.py:model=deit_t,depth=24,contranorm=1": 5_717_416 + 12 * 444_864,
    "vision/imagenet.py:model=deit_s,depth=16": 22_050_664 + 4 * 1_774_464,
}


@pytest.mark.parametrize("spec", list(PARAMS))
def test_paper_recipes_have_the_papers_parameter_counts(spec):
    assert flops.count(config_lib.load(spec)).params == PARAMS[spec]


@pytest.mark.parametrize(
    "spec",
    [
        "vision/cifar10.py:preset=smoke",
        "vision/imagenet.py:preset=smoke,model=swin_s",
        "vision/imagenet.py:preset=smoke,model=cait_s24,attn=gfsa",
        "vision/imagenet.py:preset=smoke,model=deit_t,depth=24,contranorm=1,cn_dual=1",
    ],
)
def test_flop_count_matches_xla_cost_analysis(spec):
    """Our FLOPs of a small ViT, Swin and CaiT (+ GFSA) against what XLA counts for the forward: the
    matmuls exactly (XLA counts them and more), the total with our approximate elementwise
    counts (the exact GELU's erf expanded, softmax, norms) within 3%."""
    config = config_lib.load(spec)
    counts = flops.count(config, batch=1)
    model = nnx.eval_shape(
        lambda: models.ImageClassifier(
            num_classes=config.data.num_classes,
            image_size=config.data.image_size,
            channels=3,
            model_cfg=config.model,
            attention_cfg=config.attention,
            rngs=nnx.Rngs(0),
        )
    )
    graphdef, state = nnx.split(model)

    def forward(state, x):
        return nnx.merge(graphdef, state)(x)

    x = jax.ShapeDtypeStruct((1, 32, 32, 3), jnp.float32)
    cost = jax.jit(forward).lower(state, x).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    xla = cost["flops"]
    assert counts.matmul_flops <= xla, (counts.matmul_flops, xla)
    assert abs(xla - counts.flops) <= 0.03 * counts.flops, (counts.flops, xla)


def test_grf_sees_the_patch_grid_with_the_class_token():
    config = config_lib.load("vision/cifar10.py:preset=smoke,attn=grf")
    assert tuple(config.attention.grid) == (4, 4) and config.attention.cls_token
    config = config_lib.load("vision/cifar10.py:preset=cpu,attn=grf")
    assert tuple(config.attention.grid) == (8, 8)


@pytest.mark.parametrize(
    "model, eps",
    [("deit_s", 1e-6), ("cait_s24", 1e-6), ("swin_t", 1e-5)],
)
def test_every_layer_norm_has_the_reference_implementations_epsilon(model, eps):
    """timm's ViT/DeiT and CaiT build their LayerNorms with eps=1e-6; the official Swin (and
    timm's) keeps PyTorch's default 1e-5 everywhere, the patch-embedding norm included."""
    config = config_lib.load(f"vision/imagenet.py:preset=smoke,model={model}")
    net = nnx.eval_shape(
        lambda: models.ImageClassifier(
            num_classes=config.data.num_classes,
            image_size=config.data.image_size,
            channels=3,
            model_cfg=config.model,
            attention_cfg=config.attention,
            rngs=nnx.Rngs(0),
        )
    )
    norms = [m for _, m in nnx.iter_graph(net) if isinstance(m, nnx.LayerNorm)]
    assert len(norms) >= 3
    assert {n.epsilon for n in norms} == {eps}
