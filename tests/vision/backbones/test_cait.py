"""CaiT (Touvron et al. 2021b): a float64 numpy forward of the whole classifier with its own
weights (talking heads, LayerScale, the late class token, class attention, exact GELU), GFSA on
the talking-heads matrix, CaiT-S24's parameter count against the released model, and the
configuration errors (its FLOPs against XLA: tests/vision/test_models.py)."""

import math

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from flax import nnx
from scipy import special

from attnbench import config as config_lib
from attnbench import errors
from attnbench.nn import backbones, flops
from tests import tolerances
from tests.attention import ref_talking_heads
from vision import models
from vision.backbones import cait

DIM, HEADS, MLP, PATCH, SIZE, CLASSES = 16, 2, 24, 4, 8, 5


def _model_cfg(**over):
    m = ml_collections.ConfigDict(
        dict(
            encoder="cait",
            patch_size=PATCH,
            num_layers=2,
            dim=DIM,
            qkv_dim=DIM,
            num_heads=HEADS,
            mlp_dim=MLP,
            dropout=0.0,
            drop_path=0.1,
            layer_scale=0.5,  # large, so that every branch moves the logits
            class_layers=2,
            qkv_bias=True,
            positions="learned",
            pool="cls",
            gelu="erf",
            dtype="float32",
        )
    )
    m.update(over)
    return m


def _build(attention_cfg, **over):
    model = models.ImageClassifier(
        num_classes=CLASSES,
        image_size=SIZE,
        channels=3,
        model_cfg=_model_cfg(**over),
        attention_cfg=attention_cfg,
        rngs=nnx.Rngs(0),
    )
    # CaiT's maps start near zero; make them (and the filter) matter in the comparison.
    rng = np.random.default_rng(5)
    for block in model.encoder.blocks:
        params = block.attn.mechanism_params
        for p in params["talking_heads"].values():
            p[...] = jnp.asarray(rng.normal(size=p[...].shape) * 0.5, jnp.float32)
        if "w_k" in params:
            params["w_k"][...] = jnp.asarray(rng.normal(size=HEADS) * 0.3, jnp.float32)
    return model


def _np(x):
    return np.asarray(x[...], np.float64)


def _layer_norm(x, ln, eps=1e-6):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * _np(ln.scale) + _np(ln.bias)


def _gelu_erf(x):
    return 0.5 * x * (1 + special.erf(x / math.sqrt(2)))


def _proj(x, p):
    y = np.einsum("nd,dhe->nhe", x, _np(p.kernel))
    return y if p.bias is None else y + _np(p.bias)


def _out(x, p):
    return np.einsum("nhe,hed->nd", x, _np(p.kernel)) + _np(p.bias)


def _mlp(x, mlp):
    h = _gelu_erf(x @ _np(mlp.fc1.kernel) + _np(mlp.fc1.bias))
    return h @ _np(mlp.fc2.kernel) + _np(mlp.fc2.bias)


def _reference(model, image, order=None):
    """One image -> logits, float64: CaiT's forward_features + head, written out."""
    g = SIZE // PATCH
    kernel, bias = _np(model.patch_embed.kernel), _np(model.patch_embed.bias)
    x = np.stack(
        [
            np.einsum(
                "abc,abcd->d",
                image[i * PATCH : (i + 1) * PATCH, j * PATCH : (j + 1) * PATCH],
                kernel,
            )
            + bias
            for i in range(g)
            for j in range(g)
        ]
    )
    enc = model.encoder
    x = x + _np(enc.pos_embedding)
    for block in enc.blocks:
        h = _layer_norm(x, block.ln1)
        q, k, v = (_proj(h, getattr(block.attn, n)) for n in ("query", "key", "value"))
        params = block.attn.mechanism_params
        mixing = {n: _np(p) for n, p in params["talking_heads"].items()}
        a = ref_talking_heads.matrix(mixing, q[None], k[None], None)[0]  # [H, N, N]
        if order is not None:  # gfsa_cait.py: A + lamb (A + (K - 1)(A - I) A)
            lamb = _np(params["w_k"])[:, None, None]
            a = a + lamb * (a + (order - 1) * (a - np.eye(a.shape[-1])) @ a)
        attn = _out(np.einsum("hnm,mhe->nhe", a, v), block.attn.out)
        x = x + _np(block.gamma1) * attn
        x = x + _np(block.gamma2) * _mlp(_layer_norm(x, block.ln2), block.mlp)
    cls = _np(enc.cls)[0]
    for block in enc.class_blocks:
        u = _layer_norm(np.concatenate([cls, x]), block.ln1)
        q = _proj(u[:1], block.attn.query)
        k, v = _proj(u, block.attn.key), _proj(u, block.attn.value)
        out = np.zeros_like(q)
        for head in range(HEADS):
            logits = q[:, head] @ k[:, head].T / math.sqrt(q.shape[-1])
            w = np.exp(logits - logits.max())
            out[:, head] = (w / w.sum()) @ v[:, head]
        cls = cls + _np(block.gamma1) * _out(out, block.attn.out)
        cls = cls + _np(block.gamma2) * _mlp(_layer_norm(cls, block.ln2), block.mlp)
    x = _layer_norm(np.concatenate([cls, x]), enc.norm)
    return x[0] @ _np(model.head.kernel) + _np(model.head.bias)


@pytest.mark.parametrize(
    ("attention_cfg", "order"),
    [
        # the fast tier checks GFSA's, which contains the talking-heads matrix
        pytest.param({"name": "talking_heads"}, None, marks=pytest.mark.slow),
        ({"name": "gfsa", "order": 4, "talking_heads": True}, 4),
    ],
    ids=["talking_heads", "gfsa"],
)
def test_forward_equals_a_float64_reference_with_its_own_weights(attention_cfg, order):
    model = _build(attention_cfg)
    assert not hasattr(model, "cls") and model.length == (SIZE // PATCH) ** 2
    images = np.random.default_rng(0).standard_normal((2, SIZE, SIZE, 3)).astype(np.float32)
    logits = jax.jit(lambda m, x: m(x))(model, images)
    expected = np.stack([_reference(model, img.astype(np.float64), order) for img in images])
    tolerances.assert_close(logits, expected, rtol=1e-5, atol=1e-5, what="CaiT logits")


def test_stochastic_depth_is_uniform():
    model = nnx.eval_shape(lambda: _build({"name": "talking_heads"}, num_layers=3))
    assert [b.drop_path for b in model.encoder.blocks] == [0.1, 0.1, 0.1]


@pytest.mark.slow  # ~15 s of compilation; the ViT's train-mode test is in the fast tier
def test_training_mode_drops_paths_and_gradients_reach_the_mixing_maps():
    model = _build({"name": "talking_heads"})
    images = jnp.asarray(np.random.default_rng(2).standard_normal((4, SIZE, SIZE, 3)), jnp.float32)
    graphdef, params = nnx.split(model, nnx.Param)

    @jax.jit
    def forward(params, key):
        return nnx.merge(graphdef, params)(images, train=True, key=key)

    assert not np.allclose(forward(params, jax.random.key(0)), forward(params, jax.random.key(1)))
    grads = jax.jit(jax.grad(lambda p: jnp.mean(forward(p, jax.random.key(0)) ** 2)))(params)
    assert all(np.isfinite(g).all() for g in jax.tree.leaves(grads))
    mixing = grads["encoder"]["blocks"][0]["attn"]["mechanism_params"]["talking_heads"]
    assert float(jnp.abs(mixing["post_w"][...]).max()) > 0


# The released CaiT-S24 (224 px): 46,916,200 parameters; + GFSA's 24 x 8 w_K = 46,916,392 (the
# `n_parameters` of the GFSA authors' CaiT log). GFSA Table 12 prints 46.9M / 47.0M.
PARAMS = {
    "vision/imagenet.py:model=cait_s24": 46_916_200,
    "vision/imagenet.py:model=cait_s24,attn=gfsa": 46_916_392,
}


@pytest.mark.parametrize("spec", list(PARAMS))
def test_cait_s24_has_the_released_parameter_count(spec):
    assert flops.count(config_lib.load(spec)).params == PARAMS[spec]


def test_recipe_wiring():
    c = config_lib.load("vision/imagenet.py:model=cait_s24,attn=gfsa")
    assert c.attention.name == "gfsa" and c.attention.order == 4 and c.attention.talking_heads
    assert c.model.drop_path_decay == "uniform" and c.model.layer_scale == 1e-5
    assert (c.batch_size, c.optimizer.lr, c.model.gelu) == (512, 5e-4, "erf")
    assert c.total_steps == 500 * (1_281_167 // 512)
    # DeiT's main.py defaults (GFSA's copy): repeated augmentation x3, parameter EMA 0.99996;
    # the scaled presets leave the EMA off
    assert (c.data.repeated_aug, c.ema_decay) == (3, 0.99996)
    cpu = config_lib.load("vision/imagenet.py:model=cait_s24,preset=cpu")
    assert (cpu.data.repeated_aug, cpu.ema_decay) == (3, 0.0)
    swin = config_lib.load("vision/imagenet.py:model=swin_s")
    assert (swin.data.repeated_aug, swin.ema_decay) == (1, 0.0)  # Swin's recipe has neither
    d = config_lib.load("vision/imagenet.py:model=deit_s,attn=gfsa")
    assert d.attention.order == 3 and not d.attention.talking_heads
    assert config_lib.load("vision/imagenet.py:model=cait_s24").attention.name == ("talking_heads")


def test_configuration_errors_name_the_field():
    cfg = _model_cfg(layer_scale=None)
    with pytest.raises(errors.ConfigError, match="layer_scale"):
        backbones.build(
            "cait", model_cfg=cfg, attention_cfg={"name": "softmax"}, max_len=4, rngs=nnx.Rngs(0)
        )
    with pytest.raises(errors.ConfigError, match="pool=cls"):
        backbones.build(
            "cait",
            model_cfg=_model_cfg(pool="mean"),
            attention_cfg={"name": "softmax"},
            max_len=4,
            rngs=nnx.Rngs(0),
        )
    with pytest.raises(errors.ConfigError, match="config.model.gelu"):
        backbones.build(
            "cait",
            model_cfg=_model_cfg(gelu="exact"),
            attention_cfg={"name": "softmax"},
            max_len=4,
            rngs=nnx.Rngs(0),
        )
    assert isinstance(
        backbones.build(
            "cait",
            model_cfg=_model_cfg(),
            attention_cfg={"name": "linear"},
            max_len=4,
            rngs=nnx.Rngs(0),
        ),
        cait.CaiTEncoder,
    )
