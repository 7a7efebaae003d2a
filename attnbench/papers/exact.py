"""Table cells computed exactly, without training (`Cell.exact` names these functions).

Each function returns one number in the paper's units; `scripts.reproduce` calls it in-process
and writes the result as the cell's summary (`preset` "exact"), which `scripts.tables` renders
like any other run.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from attnbench.nn import flops

__all__ = [
    "ssa_exaflop",
    "gfsa_extra_params",
    "model_params_m",
    "model_gmacs",
    "model_compute_ratio",
    "gfsa_code_gflops",
    "recipe_exaflop",
    "softmax_numerics",
    "permutation_mae",
]


def ssa_exaflop(run: str) -> float:
    """SSA Table 7: the dense (S0) run's training compute in ExaFLOP (forward FLOPs x steps x
    batch x context, SSA's convention; `attnbench.nn.flops.SSA_RUNS` holds the run sizes)."""
    if run not in flops.SSA_RUNS:
        raise ValueError(f"unknown SSA run {run!r}; known: {', '.join(flops.SSA_RUNS)}")
    return flops.ssa_training_flops(run) / 1e18


# --------------------------------------------------------------------------------------------
# Model sizes: "#Params" and "FLOPs" columns, from the model a recipe builds.


def _recipe(config: str):
    from attnbench import config as config_lib

    return config_lib.load(config)


def model_params_m(config: str) -> float:
    """Trainable parameters, in millions, of the model the recipe `config`
    (`configs/<domain>/<task>.py:<args>`, paper preset) builds, counted on the built
    (abstract) model (`attnbench.nn.flops.count`)."""
    return flops.count(_recipe(config)).params / 1e6


def model_gmacs(config: str) -> float:
    """Forward multiply-accumulates per example, in billions, of the recipe's model: half our
    matmul FLOPs (`attnbench.nn.flops.count`, checked against XLA's cost analysis in the tests). The
    vision papers' "FLOPs" columns are fvcore / ptflops counts, which count one
    multiply-accumulate as one FLOP and leave elementwise work out (DeiT-S "4.6 G")."""
    return flops.count(_recipe(config), batch=1).matmul_flops / 2 / 1e9


def _code_attention(n: int, dim: int, heads: int, *, talking_heads: bool = False) -> float:
    """The authors' `Attention.flops(N)`: q/k/v and output maps, QK^T and AV as
    multiply-accumulates, one op per softmax entry; CaiT's talking heads add its two H x H
    maps per entry."""
    head_dim = dim // heads
    ops = n * dim * 3 * dim + 2 * heads * n * n * head_dim + heads * n * n + n * dim * dim
    if talking_heads:
        ops += 2 * n * n * heads * heads
    return ops


def gfsa_code_gflops(config: str) -> float:
    """GFSA Table 12's "FLOPs" as the GFSA authors' code counts them, for the vision recipe
    `config` (configs/vision/imagenet.py: deit_s, deit_s24, cait_s24, swin_t, swin_s): the
    `flops()` methods of their Image/gfsa.py (DeiT), gfsa_cait.py (CaiT) and
    swin/models/swin_attngf.py (Swin's, as the official Swin code), in billions.

    Their convention differs from `model_gmacs` (ours, checked against XLA) in three ways:
    the blocks are counted on the N patches without the class token; norms, softmax and
    LayerScale add one op per element; the GFSA filter (A(AV) or A^2) is not counted. The
    formulas are restated here from the code (facts, not the code): per block, norms 2·N·C
    (CaiT: 4·N·C with LayerScale), attention as `_code_attention`, MLP 2·N·C·C_mlp; CaiT's
    class-attention blocks 2·C·C·N + 2·C·C + 2·C·N + 2·C·C_mlp + 4·C; Swin per window
    `_code_attention(w², ...)`, patch merging H·W·C + (H/2)(W/2)·8·C², the patch norm and
    the final norm; the patch embedding N·C·3·p², the final norm N·C, the head C·classes."""
    c = _recipe(config)
    m = c.model
    side = c.data.image_size // m.patch_size
    n, dim, classes = side * side, m.dim, c.data.num_classes
    ops = n * dim * 3 * m.patch_size**2  # patch embedding of RGB images
    if m.encoder == "transformer":
        block = 2 * n * dim + _code_attention(n, dim, m.num_heads) + 2 * n * dim * m.mlp_dim
        return (ops + m.num_layers * block + n * dim + dim * classes) / 1e9
    if m.encoder == "cait":
        block = 4 * n * dim + 2 * n * dim * m.mlp_dim
        block += _code_attention(n, dim, m.num_heads, talking_heads=True)
        class_block = 2 * n * dim * dim + 2 * dim * dim + 2 * n * dim + 2 * dim * m.mlp_dim
        class_block += 4 * dim
        ops += m.num_layers * block + m.class_layers * class_block
        return (ops + n * dim + dim * classes) / 1e9
    if m.encoder != "swin":
        raise ValueError(f"gfsa_code_gflops: no counter for encoder {m.encoder!r}")
    ops += n * dim  # the patch embedding's LayerNorm
    res, width = side, dim
    for stage, (depth, heads) in enumerate(zip(m.depths, m.swin_heads, strict=True)):
        window = min(m.window_size, res)
        windows = res * res / window / window
        block = 2 * width * res * res + windows * _code_attention(window * window, width, heads)
        ops += depth * (block + 2 * res * res * width * width * m.mlp_ratio)
        if stage < len(m.depths) - 1:  # patch merging
            ops += res * res * width + (res // 2) ** 2 * 4 * width * 2 * width
            res, width = res // 2, 2 * width
    return (ops + width * res * res + width * classes) / 1e9


def model_compute_ratio(config: str, baseline: str, finetune: float = 0.0) -> float:
    """Training compute of the recipe `config` relative to `baseline` (SSA's C column): the ratio of
    their training-forward matmul FLOPs per example (`attnbench.nn.flops.count(train=True)`, so
    sampled attention counts only its sources; the backward scales with the forward). With
    `finetune` (SSA's "+FT", the last fraction of training dense, i.e. at `baseline`'s cost) the
    total is `(1 - finetune)·C + finetune`."""
    ratio = _train_matmul_flops(config) / _train_matmul_flops(baseline)
    return (1.0 - finetune) * ratio + finetune


@functools.lru_cache(maxsize=64)
def _train_matmul_flops(config: str) -> float:
    """Training-forward matmul FLOPs per example of the recipe (cached: a table's rows share
    their baseline)."""
    return flops.count(_recipe(config), train=True, batch=1).matmul_flops


def recipe_exaflop(config: str) -> float:
    """The recipe's total training compute in ExaFLOP, SSA Table 7's convention (forward
    FLOPs only, 2 per multiply-accumulate): training-forward matmul FLOPs per example x batch
    x steps."""
    c = _recipe(config)
    return _train_matmul_flops(config) * c.batch_size * c.total_steps / 1e18


# --------------------------------------------------------------------------------------------
# GFSA: the extra parameters GFSA adds to a Transformer (paper Sec. 5: "144 additional learnable
# parameters for 12 layers with 12 heads" (GPT-2, RoBERTa); "less than 72 for 12-layer DeiT").


def gfsa_extra_params(
    layers: int, heads: int, dim: int, mlp_dim: int, learn_w0_w1: bool = False
) -> float:
    """Parameters of our encoder with `gfsa` attention minus the same encoder with softmax
    attention, counted on the built (abstract, shape-only) NNX modules: what our GFSA layer
    adds to a `layers` x `heads` Transformer of width `dim`. `learn_w0_w1=True` is the paper's
    Algorithm 1 variant that also learns w_0 and w_1 per head."""
    from flax import nnx

    from attnbench.nn import layers as layers_lib

    def count(attention_cfg) -> int:
        def build():
            return layers_lib.TransformerEncoder(
                num_layers=layers,
                dim=dim,
                num_heads=heads,
                qkv_dim=dim,
                mlp_dim=mlp_dim,
                dropout_rate=0.0,
                attention_cfg=attention_cfg,
                max_len=16,
                positions="none",
                rngs=nnx.Rngs(0),
            )

        state = nnx.state(nnx.eval_shape(build), nnx.Param)
        return sum(int(math.prod(x.shape)) for x in jax.tree.leaves(state))

    gfsa = count({"name": "gfsa", "learn_w0_w1": learn_w0_w1})
    return float(gfsa - count({"name": "softmax"}))


# --------------------------------------------------------------------------------------------
# Sliceformer Fig. 2: the softmax numerical test (the paper's Algorithm 1), on our backend.


@functools.cache
def _softmax_test(n: int, trials: int, seed: int) -> dict[str, float]:
    softmax = jax.jit(lambda x: jax.nn.softmax(x, axis=0))
    rng = np.random.default_rng(seed)
    std, l1, equal = [], [], []
    for _ in range(trials):
        x = rng.standard_normal(n).astype(np.float32)
        index = rng.permutation(n)
        y1 = np.asarray(softmax(jnp.asarray(x)))[index]  # softmax, then permute
        y2 = np.asarray(softmax(jnp.asarray(x[index])))  # permute, then softmax
        std.append(float(np.std(y1.astype(np.float64), ddof=1)))
        l1.append(float(np.abs(y1.astype(np.float64) - y2).sum()))
        equal.append(float(np.mean(y1 == y2)))
    return {"std": float(np.mean(std)), "mae": float(np.mean(l1)), "prob": float(np.mean(equal))}


def softmax_numerics(n: int, stat: str, trials: int = 100, seed: int = 0) -> float:
    """Sliceformer Algorithm 1 with `jax.nn.softmax` (jit, float32, this backend), mean over
    `trials`: `stat` "std" = std of softmax(x), "mae" = L1 norm (a sum, as the paper's
    `torch.norm(p=1)`) of softmax(x)[perm] - softmax(x[perm]), "prob" = fraction of entries of
    the two that are bitwise equal. x ~ N(0, 1) of length `n`, a fresh permutation per trial."""
    if stat not in ("std", "mae", "prob"):
        raise ValueError(f"unknown stat {stat!r}; known: std, mae, prob")
    return _softmax_test(int(n), int(trials), int(seed))[stat]


# --------------------------------------------------------------------------------------------
# Sliceformer Fig. 3a: is the [CLS] output invariant to the order of the other tokens?


@functools.cache
def _permutation_errors(
    attention: str, residual: bool, num_layers: int, tokens: int, batch: int, seed: int
) -> tuple[float, ...]:
    from flax import nnx

    from attnbench import config as config_lib
    from attnbench.nn import layers as layers_lib

    m = config_lib.load("lra/image.py:model=sliceformer,preset=paper").model
    encoder = layers_lib.TransformerEncoder(
        num_layers=num_layers,
        dim=m.dim,
        num_heads=m.num_heads,
        qkv_dim=m.qkv_dim,
        mlp_dim=m.mlp_dim,
        dropout_rate=0.0,
        attention_cfg={"name": attention},
        max_len=tokens + 1,
        positions="none",  # = permuting after the positions are added, as the authors' test
        rngs=nnx.Rngs(seed),
    )
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, tokens + 1, m.dim)).astype(np.float32)
    perm = np.concatenate([[0], 1 + rng.permutation(tokens)])  # [CLS] stays first

    @jax.jit
    def cls_after_each_layer(x):
        out = []
        for block in encoder.blocks:
            if residual:
                x = block(x)
            else:  # no residual around attention (the MLP's residual is row-wise)
                x = block.attn(block.ln1(x))
                x = x + block.mlp(block.ln2(x), train=False)
            out.append(x[:, 0])
        return jnp.stack(out)

    a = np.asarray(cls_after_each_layer(jnp.asarray(x)), np.float64)
    b = np.asarray(cls_after_each_layer(jnp.asarray(x[:, perm])), np.float64)
    return tuple(float(v) for v in np.abs(a - b).mean(axis=(1, 2)))


def permutation_mae(
    attention: str,
    layer: int,
    residual: bool = True,
    num_layers: int = 6,
    tokens: int = 1024,
    batch: int = 4,
    seed: int = 0,
) -> float:
    """Mean absolute difference of the [CLS] output after `layer` (1-based) between a sequence
    and the same sequence with its other `tokens` shuffled, for a randomly initialised
    `num_layers`-layer encoder with `attention` and the LRA Image Sliceformer recipe's widths
    (float32, inputs N(0, 1), no positional encoding; as the authors' test, which permutes after
    adding them, and runs an untrained model). `residual=False` drops the residual around
    attention. The [CLS] output of an order-invariant model does not change at all (0.0)."""
    if not 1 <= layer <= num_layers:
        raise ValueError(f"layer {layer} outside 1..{num_layers}")
    errors = _permutation_errors(attention, bool(residual), num_layers, tokens, batch, seed)
    return errors[layer - 1]
