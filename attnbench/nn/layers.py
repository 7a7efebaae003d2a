"""Flax NNX building blocks shared by every domain: the attention layer, the pre-LN Transformer
encoder, position encodings, pooling and the classifier head.

Randomness is explicit: modules take `key` (a PRNG key) and `train` in `__call__`, and derive
per-layer keys with `fold_in`. No RNG state lives in a module, so a model's state is its
parameters alone and a run resumes exactly from (params, optimizer state, step).

Per-call inputs of the attention (SSA's `subsample`, point coordinates for GRF's k-NN graph) are
keyword arguments: every encoder's `__call__(x, *, mask, train, key, **inputs)` hands them to its
blocks, and `Attention` passes each mechanism the ones it declares.

Precision (`config.model.dtype`, resolved by `attnbench.config.resolve` when a run starts;
`compute_dtype`): parameters are always float32 (flax's
`param_dtype` default), so are the optimizer state, the gradients and the loss. The compute
dtype `dtype` (e.g. bfloat16) is that of every activation between layers: the encoders add
their positions in float32 and then cast the residual stream to it; projections and MLPs
compute in it from float32 kernels; LayerNorm/RMSNorm take their statistics in float32 (flax
promotes them to at least float32); attention mechanisms receive and return it and take their
softmax statistics in float32 themselves; `pool` and the classifier heads work in float32.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

import attention
from attnbench import config as config_lib

__all__ = [
    "COMPUTE_DTYPES",
    "compute_dtype",
    "torch_uniform",
    "torch_linear",
    "torch_layer_norm",
    "dropout",
    "drop_path",
    "drop_path_rates",
    "split_keys",
    "sinusoidal_positions",
    "add_sinusoid",
    "mechanism",
    "block_stack",
    "Buffer",
    "Attention",
    "GELUS",
    "check_gelu",
    "MlpBlock",
    "EncoderBlock",
    "TransformerEncoder",
    "pool",
    "ClassifierHead",
]

_xavier = nnx.initializers.xavier_uniform()


# `config.model.dtype` values besides "auto" (which `attnbench.config.resolve` turns into one).
COMPUTE_DTYPES = ("float32", "bfloat16", "float16")


def compute_dtype(name) -> jnp.dtype:
    """A config's compute dtype name (or a dtype) as a numpy dtype; "auto" means what
    `attnbench.config.compute_dtype` decides for this backend (a run's config arrives resolved:
    `attnbench.steps.setup`; a model built straight from a recipe gets the same answer)."""
    if isinstance(name, str):
        return jnp.dtype(config_lib.compute_dtype(name))
    return jnp.dtype(name)


def torch_uniform(fan_in: int):
    """PyTorch's `nn.Linear` default init for weights and biases, U(-1/sqrt(fan_in),
    1/sqrt(fan_in)): for models restated from PyTorch code (EGT, GPS)."""
    bound = 1.0 / math.sqrt(fan_in)

    def init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return init


def torch_linear(din: int, dout: int, dtype, rngs) -> nnx.Linear:
    """`nnx.Linear` initialised as PyTorch's `nn.Linear(din, dout)`."""
    init = torch_uniform(din)
    return nnx.Linear(din, dout, kernel_init=init, bias_init=init, dtype=dtype, rngs=rngs)


def torch_layer_norm(width: int, dtype, rngs) -> nnx.LayerNorm:
    """`nnx.LayerNorm` with PyTorch's epsilon, 1e-5 (flax's default is 1e-6)."""
    return nnx.LayerNorm(width, epsilon=1e-5, dtype=dtype, rngs=rngs)


def dropout(x, rate: float, key, train: bool):
    """Inverted dropout with an explicit key; identity when not training or rate == 0."""
    if not train or rate == 0.0:
        return x
    if key is None:
        raise ValueError("dropout with train=True needs a PRNG key")
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0).astype(x.dtype)


def drop_path(x, rate: float, key, train: bool):
    """Stochastic depth: zeroes the whole branch `x [B, ...]` per example with probability
    `rate` (scaling the kept ones by `1 / (1 - rate)`); identity at evaluation."""
    if not train or rate == 0.0:
        return x
    keep = dropout(jnp.ones((x.shape[0],) + (1,) * (x.ndim - 1), x.dtype), rate, key, train)
    return x * keep


def drop_path_rates(rate: float, num_layers: int, decay: str = "linear") -> list[float]:
    """Per-layer stochastic-depth rates: "linear" rises from 0 at the first layer to `rate` at
    the last (DeiT / timm's `drop_path_rate`, Huang et al. 2016's linear decay rule), "uniform"
    is `rate` everywhere (CaiT, SAMSA)."""
    if decay == "uniform":
        return [float(rate)] * num_layers
    if decay != "linear":
        raise ValueError(f"unknown drop-path decay {decay!r}; known: linear, uniform")
    # numpy.linspace(0, rate, num_layers): a single layer gets 0, as timm's
    return [float(rate) * i / max(num_layers - 1, 1) for i in range(num_layers)]


def split_keys(key, n: int) -> list:
    """`n` keys from `key`, or `n` Nones when there is none (evaluation)."""
    return [None] * n if key is None else list(jax.random.split(key, n))


def mechanism(attention_cfg) -> attention.Mechanism:
    """The registered mechanism a config's attention section names, its hyper-parameters bound."""
    hparams = dict(attention_cfg.to_dict() if hasattr(attention_cfg, "to_dict") else attention_cfg)
    if "name" not in hparams:
        raise ValueError(f"attention_cfg needs a `name`; got keys {sorted(hparams)}")
    return attention.get(hparams.pop("name"), **hparams)


def block_stack(make_block, num_layers: int) -> nnx.List:
    """`make_block(layer_index)` for every layer: the body of every encoder backbone."""
    return nnx.List([make_block(i) for i in range(num_layers)])


def add_sinusoid(x, max_len: int):
    """`x [B, N, D]` plus the first N rows of the fixed encoding of an encoder built for
    `max_len` tokens (a compile-time constant, not a parameter)."""
    n = x.shape[1]
    if n > max_len:
        raise ValueError(f"sequence length {n} exceeds the encoder's max_len {max_len}")
    return x + sinusoidal_positions(max_len, x.shape[-1])[:n].astype(x.dtype)


@functools.lru_cache(maxsize=16)
def sinusoidal_positions(max_len: int, dim: int) -> np.ndarray:
    """The fixed encoding of the LRA/flax examples: sin in the first half, cos in the second.

    Returns `[max_len, dim]` float32.
    """
    pos = np.arange(max_len)[:, None]
    div = np.exp(np.arange(0, dim, 2) * -(np.log(10000.0) / dim))
    pe = np.zeros((max_len, dim), np.float32)
    pe[:, : dim // 2] = np.sin(pos * div)[:, : dim // 2]
    pe[:, dim // 2 :] = np.cos(pos * div)[:, : dim - dim // 2]
    return pe


class Buffer(nnx.Variable):
    """A constant array of a module (e.g. frozen random walks): checkpointed, never trained."""


class Attention(nnx.Module):
    """Multi-head self-attention whose core is a registered `attention` mechanism.

    q/k/v/out projections (xavier-uniform, no bias, as LRA; `qkv_bias` / `out_bias` and
    `kernel_init` for the vision recipes: timm's ViT has both biases, vit-pytorch only the
    output's) around `mechanism.apply`; no q/k projections for mechanisms that do not use them
    (Sliceformer). The mechanism's own arrays are `nnx.Param`s under `self.mechanism_params`,
    its `"buffers"` are `Buffer`s.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        qkv_dim: int,
        mechanism: attention.Mechanism,
        *,
        max_len: int | None = None,
        layer_index: int = 0,
        num_layers: int = 1,
        dtype=jnp.float32,
        qkv_bias: bool = False,
        out_bias: bool = False,
        kernel_init=_xavier,
        rngs: nnx.Rngs,
    ):
        if qkv_dim % num_heads:
            raise ValueError(f"qkv_dim {qkv_dim} is not divisible by num_heads {num_heads}")
        head_dim = qkv_dim // num_heads
        self.mechanism = mechanism

        def proj():
            return nnx.LinearGeneral(
                dim,
                (num_heads, head_dim),
                use_bias=qkv_bias,
                kernel_init=kernel_init,
                dtype=dtype,
                rngs=rngs,
            )

        if mechanism.needs_qk:
            self.query, self.key = proj(), proj()
        self.value = proj()
        self.out = nnx.LinearGeneral(
            (num_heads, head_dim),
            dim,
            axis=(-2, -1),
            use_bias=out_bias,
            kernel_init=kernel_init,
            dtype=dtype,
            rngs=rngs,
        )
        arrays = dict(
            mechanism.init(
                rngs.params(),
                num_heads=num_heads,
                head_dim=head_dim,
                model_dim=dim,
                max_len=max_len,
                layer_index=layer_index,
                num_layers=num_layers,
            )
        )
        buffers = arrays.pop("buffers", {})
        if layer_index == 0:
            _probe_output_shape(
                mechanism, arrays, buffers, dim, max_len, num_heads, head_dim, dtype
            )
        self.mechanism_params = nnx.data(jax.tree.map(nnx.Param, arrays))
        self.mechanism_buffers = nnx.data(jax.tree.map(Buffer, buffers))

    def __call__(self, x, /, *, mask=None, train: bool = False, key=None, **inputs):
        """x: `[B, N, dim]`, mask: key padding `[B, N]` or `[B, H, N, N]` -> `[B, N, dim]`.

        `inputs` may hold extra inputs for the mechanism; only those it declares are passed
        (`x` itself is passed when declared).
        """
        params = jax.tree.map(lambda p: p[...], self.mechanism_params)
        buffers = jax.tree.map(lambda b: b[...], self.mechanism_buffers)
        if buffers:
            params["buffers"] = buffers
        # A caller may pass its own `x` (SAMSA scores the raw, un-normalised layer input).
        given = {"x": x, **inputs}
        extra = {k: v for k, v in given.items() if k in self.mechanism.inputs}
        q, k = (self.query(x), self.key(x)) if self.mechanism.needs_qk else (None, None)
        out = self.mechanism.apply(
            params, q, k, self.value(x), mask=mask, key=key, train=train, **extra
        )
        return self.out(out)


def _probe_output_shape(mechanism, arrays, buffers, dim, max_len, num_heads, head_dim, dtype):
    """Traces `mechanism.apply` once, abstractly (`jax.eval_shape`, nothing computed), on
    `[1, max_len, num_heads, head_dim]` inputs, so that a mechanism returning the wrong shape
    (`attention.AttentionOutputError`, checked by `attention.get`'s apply on every call) is named
    when the model is built, before a run writes anything, not at its first step. Any other
    error of this made-up call (a mechanism that needs inputs it cannot invent, or a mask) is
    left to the real call; mechanisms that require inputs, or an unknown length, are not probed.
    """
    if max_len is None or mechanism.requires:
        return

    dtype = jnp.float32 if dtype is None else dtype
    params = {**arrays, "buffers": buffers} if buffers else dict(arrays)  # only shapes are read
    v = jax.ShapeDtypeStruct((1, max_len, num_heads, head_dim), dtype)
    extra = {"x": jax.ShapeDtypeStruct((1, max_len, dim), dtype)} if "x" in mechanism.inputs else {}

    def call(params, v, extra):
        qk = v if mechanism.needs_qk else None
        return mechanism.apply(params, qk, qk, v, **extra)

    try:
        jax.eval_shape(call, params, v, extra)
    except attention.AttentionOutputError:
        raise
    except Exception:  # noqa: BLE001 (inconclusive: the real call reports its own problem)
        pass


GELUS = ("tanh", "erf")


def check_gelu(name: str) -> bool:
    """`approximate` for `jax.nn.gelu` from a config's `gelu` name: "tanh" (the approximation
    flax's and LRA's models use) or "erf" (the exact form of PyTorch's `nn.GELU`, which timm's
    ViT/DeiT/CaiT/Swin and vit-pytorch use)."""
    if name not in GELUS:
        raise ValueError(f"unknown gelu {name!r}; known: {', '.join(GELUS)}")
    return name == "tanh"


class MlpBlock(nnx.Module):
    """Dense -> GELU -> dropout -> Dense -> dropout (the LRA MlpBlock); `gelu` "tanh" (LRA's
    `nn.gelu`) or "erf" (exact, PyTorch's `nn.GELU`); `hidden_dropout` the rate after the GELU
    when it differs from `dropout_rate` (Graphormer's FFN has none there)."""

    def __init__(
        self,
        dim: int,
        mlp_dim: int,
        dropout_rate: float,
        *,
        dtype,
        kernel_init=_xavier,
        gelu: str = "tanh",
        hidden_dropout: float | None = None,
        rngs: nnx.Rngs,
    ):
        self.fc1 = nnx.Linear(dim, mlp_dim, kernel_init=kernel_init, dtype=dtype, rngs=rngs)
        self.fc2 = nnx.Linear(mlp_dim, dim, kernel_init=kernel_init, dtype=dtype, rngs=rngs)
        self.rate = dropout_rate
        self.hidden_rate = dropout_rate if hidden_dropout is None else hidden_dropout
        self.approximate = check_gelu(gelu)

    def __call__(self, x, *, train: bool, key=None):
        k1, k2 = split_keys(key, 2)
        x = jax.nn.gelu(self.fc1(x), approximate=self.approximate)
        x = dropout(x, self.hidden_rate, k1, train)
        return dropout(self.fc2(x), self.rate, k2, train)


class EncoderBlock(nnx.Module):
    """Pre-LN block: x + drop(attn(LN(x))); x + mlp(LN(x)).

    Options of the vision recipes: `drop_path` (stochastic depth of each branch), `layer_scale`
    (CaiT's LayerScale: each branch times a learned per-channel vector initialised to this
    value; None = off), the attention's `qkv_bias` / `out_bias` / `kernel_init`, and the MLP's
    `gelu` ("tanh" | "erf") and `mlp_hidden_dropout` (`MlpBlock`); `ln_eps`: both LayerNorms'
    epsilon (1e-6 as timm's ViT/DeiT; 1e-5 for PyTorch `nn.LayerNorm` defaults).
    """

    def __init__(
        self,
        dim,
        num_heads,
        qkv_dim,
        mlp_dim,
        dropout_rate,
        mechanism,
        *,
        max_len,
        dtype,
        rngs: nnx.Rngs,
        layer_index: int = 0,
        num_layers: int = 1,
        drop_path: float = 0.0,
        layer_scale: float | None = None,
        qkv_bias: bool = False,
        out_bias: bool = False,
        kernel_init=_xavier,
        gelu: str = "tanh",
        mlp_hidden_dropout: float | None = None,
        ln_eps: float = 1e-6,
    ):
        self.ln1 = nnx.LayerNorm(dim, epsilon=ln_eps, dtype=dtype, rngs=rngs)
        self.attn = Attention(
            dim,
            num_heads,
            qkv_dim,
            mechanism,
            max_len=max_len,
            layer_index=layer_index,
            num_layers=num_layers,
            dtype=dtype,
            qkv_bias=qkv_bias,
            out_bias=out_bias,
            kernel_init=kernel_init,
            rngs=rngs,
        )
        self.ln2 = nnx.LayerNorm(dim, epsilon=ln_eps, dtype=dtype, rngs=rngs)
        self.mlp = MlpBlock(
            dim,
            mlp_dim,
            dropout_rate,
            dtype=dtype,
            kernel_init=kernel_init,
            gelu=gelu,
            hidden_dropout=mlp_hidden_dropout,
            rngs=rngs,
        )
        self.rate = dropout_rate
        self.drop_path = drop_path
        if layer_scale is not None:
            self.gamma1 = nnx.Param(jnp.full((dim,), layer_scale, jnp.float32))
            self.gamma2 = nnx.Param(jnp.full((dim,), layer_scale, jnp.float32))
        self.layer_scale = layer_scale

    def _branch(self, x, h, gamma, key, train):
        if self.layer_scale is not None:
            h = h * gamma[...].astype(h.dtype)
        return x + drop_path(h, self.drop_path, key, train)

    def __call__(self, x, *, mask=None, train: bool = False, key=None, **inputs):
        k_attn, k_drop, k_mlp = split_keys(key, 3)
        # Stochastic depth draws from its own stream, so blocks without it keep LRA's keys.
        paths = None if key is None or not self.drop_path else jax.random.fold_in(key, 1 << 20)
        k_path1, k_path2 = split_keys(paths, 2)
        h = self.attn(self.ln1(x), mask=mask, train=train, key=k_attn, **inputs)
        h = dropout(h, self.rate, k_drop, train)
        x = self._branch(x, h, getattr(self, "gamma1", None), k_path1, train)
        h = self.mlp(self.ln2(x), train=train, key=k_mlp)
        return self._branch(x, h, getattr(self, "gamma2", None), k_path2, train)


class TransformerEncoder(nnx.Module):
    """Positions + dropout + `num_layers` pre-LN blocks + final LayerNorm, on embedded inputs.

    Positions and the input dropout are applied in the input's precision (float32 embeddings);
    the result is cast to the compute `dtype`, the residual stream's dtype from there on (as
    LRA's `use_bfloat16`); the output is in `dtype`.

    Args (constructor):
      attention_cfg: mapping with `name` and the mechanism's hyper-parameters.
      positions: "sinusoidal" (fixed) or "learned" (normal(0.02) init) or "none".
      max_len: the longest sequence (including any CLS token).
      drop_path, drop_path_decay: stochastic depth, its per-layer rates (`drop_path_rates`).
      layer_scale, qkv_bias, out_bias, kernel_init, gelu: per block (`EncoderBlock`).
    """

    def __init__(
        self,
        *,
        num_layers: int,
        dim: int,
        num_heads: int,
        qkv_dim: int,
        mlp_dim: int,
        dropout_rate: float,
        attention_cfg,
        max_len: int,
        positions: str = "sinusoidal",
        dtype=jnp.float32,
        drop_path: float = 0.0,
        drop_path_decay: str = "linear",
        layer_scale: float | None = None,
        qkv_bias: bool = False,
        out_bias: bool = False,
        kernel_init=_xavier,
        gelu: str = "tanh",
        rngs: nnx.Rngs,
    ):
        mech = mechanism(attention_cfg)
        path_rates = drop_path_rates(drop_path, num_layers, drop_path_decay)
        if positions not in ("sinusoidal", "learned", "none"):
            raise ValueError(f"unknown positions {positions!r}; known: sinusoidal, learned, none")
        self.positions = positions
        if positions == "learned":
            self.pos_embedding = nnx.Param(
                nnx.initializers.normal(0.02)(rngs.params(), (max_len, dim))
            )
        self.blocks = block_stack(
            lambda i: EncoderBlock(
                dim,
                num_heads,
                qkv_dim,
                mlp_dim,
                dropout_rate,
                mech,
                max_len=max_len,
                dtype=dtype,
                rngs=rngs,
                layer_index=i,
                num_layers=num_layers,
                drop_path=path_rates[i],
                layer_scale=layer_scale,
                qkv_bias=qkv_bias,
                out_bias=out_bias,
                kernel_init=kernel_init,
                gelu=gelu,
            ),
            num_layers,
        )
        self.norm = nnx.LayerNorm(dim, dtype=dtype, rngs=rngs)
        self.rate = dropout_rate
        self.max_len = max_len
        self.dtype = jnp.dtype(dtype)

    def __call__(self, x, *, mask=None, train: bool = False, key=None, **inputs):
        """x: `[B, N, dim]` embedded tokens, mask: `[B, N]` True for real tokens."""
        n = x.shape[1]
        if n > self.max_len:
            raise ValueError(f"sequence length {n} exceeds the encoder's max_len {self.max_len}")
        keys = split_keys(key, len(self.blocks) + 1)
        if self.positions == "sinusoidal":
            x = add_sinusoid(x, self.max_len)
        elif self.positions == "learned":
            x = x + self.pos_embedding[...][:n]
        x = dropout(x, self.rate, keys[0], train).astype(self.dtype)
        for block, k in zip(self.blocks, keys[1:], strict=True):
            x = block(x, mask=mask, train=train, key=k, **inputs)
        return self.norm(x)


def pool(x, mask, mode: str):
    """`[B, N, D]` -> `[B, D]` float32 by "cls" (first token), "mean" or "sum" over real tokens.

    Sums and counts are float32 whatever the compute dtype (bfloat16 counts only integers up to
    256 exactly), so the heads see float32 features."""
    x = x.astype(jnp.float32)
    if mode == "cls":
        return x[:, 0]
    weights = jnp.ones(x.shape[:2], x.dtype) if mask is None else mask.astype(x.dtype)
    total = jnp.einsum("bnd,bn->bd", x, weights)
    if mode == "sum":
        return total
    if mode == "mean":
        return total / jnp.maximum(weights.sum(axis=1, keepdims=True), 1.0)
    raise ValueError(f"unknown pooling {mode!r}; known: cls, mean, sum")


class ClassifierHead(nnx.Module):
    """Dense(mlp_dim) -> ReLU -> Dense(num_classes), the LRA classifier head; float32, as
    LRA's (its `classifier_head` takes no dtype): `[B, D]` pooled features cost nothing."""

    def __init__(self, dim: int, mlp_dim: int, num_classes: int, *, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(dim, mlp_dim, rngs=rngs)
        self.logits = nnx.Linear(mlp_dim, num_classes, rngs=rngs)

    def __call__(self, x):
        return self.logits(jax.nn.relu(self.hidden(x)))
