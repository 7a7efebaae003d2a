"""The Swin Transformer backbone (Liu et al. 2021, "Swin Transformer: Hierarchical Vision
Transformer using Shifted Windows"), with any registered attention mechanism inside the windows.

    encoder = backbones.build("swin", model_cfg=config.model, attention_cfg=config.attention,
                              max_len=grid[0] * grid[1], rngs=rngs)
    y = encoder(x, train=train, key=key)  # x [B, H'*W', C] patch embeddings, row-major
                                          # -> [B, (H'/2^(S-1)) * (W'/2^(S-1)), C * 2^(S-1)]

Architecture (the official code, microsoft/Swin-Transformer `models/swin_transformer.py`):
S stages of pre-LN blocks; block i of a stage attends inside non-overlapping w x w windows,
odd blocks after a cyclic roll of the grid by -w//2 with the attention restricted to tokens
that were neighbours before the roll (the shifted-window mask); a learned relative position
bias `[(2w-1)^2, heads]` is added to the logits; between stages a patch merging concatenates
2x2 neighbourhoods (LayerNorm(4C), Linear(4C -> 2C, no bias)); a final LayerNorm. Where a
stage's resolution is no larger than the window, its window is the whole resolution and no
block shifts (the official rule). The caller embeds the patches (Conv + LayerNorm) and adds
absolute positions if any; the classifier pools and classifies.

Parameters per block are the official ones (q/k/v with bias, output with bias, the bias table,
two LayerNorms, the MLP), so Swin-T/S/B parameter counts are exact. The MLP's GELU is the
official exact (erf) form with `gelu="erf"` (the recipes' choice; "tanh" is the default of the
encoder, as LRA). Deviation without effect on the parameter count: linear layers are
initialised truncated normal(0.02) cut at 2 standard deviations (PyTorch's
`trunc_normal_(std=.02)` cuts at +-2 absolute, i.e. hardly at all).

Masks and mechanisms. The shifted-window mask varies over queries. Mechanisms that accept
such masks (softmax, GFSA, local, ...) receive it as a boolean `[B*nW, 1, w², w²]`. Those that
take key-padding masks only (linear, Performer, Linformer, Sliceformer) get the exact same
restriction another way: each window holding tokens of several regions is attended once per
region with the other regions' keys padded out, and each query keeps the output of its own
region's call (for attention whose rows depend only on their query and the set of keys this
is identical to the mask; for Sliceformer it sorts within each region). Which way is decided
once per encoder by tracing the mechanism abstractly with a query-varying mask.

The relative position bias reaches only mechanisms that declare a `bias` input; with any other
mechanism `relative_position_bias=True` is a ConfigError (`config.model.relative_position_bias
=False` runs it without one).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

import attention
from attention import cost
from attnbench import errors
from attnbench.nn import backbones, layers

__all__ = [
    "SHIFT_MASKS",
    "window_partition",
    "window_reverse",
    "relative_position_index",
    "shift_regions",
    "shifted_window_mask",
    "takes_pairwise_masks",
    "SwinBlock",
    "PatchMerging",
    "SwinEncoder",
    "swin",
    "swin_flops",
]

# How a shifted block restricts attention to regions (see the module docstring).
SHIFT_MASKS = ("auto", "pairwise", "regions")
# The official `_init_weights`: every Linear and the bias table are truncated normal(0.02).
_trunc_normal = nnx.initializers.truncated_normal(stddev=0.02)
# PyTorch's nn.LayerNorm default, which the official model uses (flax's default is 1e-6).
_LN_EPS = 1e-5


# ------------------------------------------------------------------------------ windows


def window_partition(x, window: int):
    """`[B, H, W, C]` -> `[B * nW, window², C]`, windows in row-major order of the window grid
    (nW = H/window * W/window), tokens row-major inside each window. Works on numpy arrays too.
    """
    b, h, w, c = x.shape
    x = x.reshape(b, h // window, window, w // window, window, c)
    x = x.transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(b * (h // window) * (w // window), window * window, c)


def window_reverse(windows, window: int, height: int, width: int):
    """Inverse of `window_partition`: `[B * nW, window², C]` -> `[B, height, width, C]`."""
    nh, nw = height // window, width // window
    c = windows.shape[-1]
    x = windows.reshape(-1, nh, nw, window, window, c).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, height, width, c)


def _frozen(a: np.ndarray) -> np.ndarray:
    # The cached constants are shared by every caller: nobody may write into them.
    a.flags.writeable = False
    return a


@functools.lru_cache(maxsize=32)
def relative_position_index(window: int) -> np.ndarray:
    """`[window², window²]` int32: the row of the `[(2w-1)², heads]` bias table for the pair
    (query i, key j) of a window, `(dy + w - 1) * (2w - 1) + (dx + w - 1)` with
    `(dy, dx) = position(i) - position(j)` (the official `relative_position_index` buffer)."""
    ys, xs = np.divmod(np.arange(window * window), window)
    dy = ys[:, None] - ys[None, :] + window - 1
    dx = xs[:, None] - xs[None, :] + window - 1
    return _frozen((dy * (2 * window - 1) + dx).astype(np.int32))


@functools.lru_cache(maxsize=32)
def shift_regions(height: int, width: int, window: int, shift: int) -> np.ndarray:
    """`[nW, window²]` int32: the region of every token of every window of the rolled grid,
    windows as `window_partition` orders them. The official labelling: rows (and columns) of
    the rolled grid fall in three strips, `[0, H - w)`, `[H - w, H - shift)` and the `shift`
    rows that wrapped round, `[H - shift, H)`; a region is a pair of strips (9 labels). Two
    tokens of a window may attend to each other iff their labels are equal."""
    labels = np.zeros((height, width), np.int32)
    cuts = lambda n: (slice(0, n - window), slice(n - window, n - shift), slice(n - shift, n))  # noqa: E731
    for i, rows in enumerate(cuts(height)):
        for j, cols in enumerate(cuts(width)):
            labels[rows, cols] = 3 * i + j
    return _frozen(window_partition(labels[None, :, :, None], window)[..., 0])


@functools.lru_cache(maxsize=32)
def shifted_window_mask(height: int, width: int, window: int, shift: int) -> np.ndarray:
    """`[nW, 1, window², window²]` bool, True = attend: the shifted-window attention mask of a
    `height x width` grid rolled by `-shift` (the official `attn_mask`, whose -100 entries are
    False here), to broadcast over the batch and heads of the windows."""
    labels = shift_regions(height, width, window, shift)
    return _frozen(labels[:, None, :, None] == labels[:, None, None, :])


@functools.lru_cache(maxsize=32)
def _region_groups(height: int, width: int, window: int, shift: int):
    """The windows of a shifted grid grouped by the set of regions they hold: a tuple of
    `(window indices [nG], labels [nG, window²], region labels present)`, and the permutation
    `[nW]` that puts the groups' concatenated windows back in order. Interior windows hold one
    region; those of the last row or column two; the corner four."""
    labels = shift_regions(height, width, window, shift)
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, row in enumerate(labels):
        groups.setdefault(tuple(np.unique(row).tolist()), []).append(i)
    out = tuple(
        (_frozen(np.asarray(idx)), _frozen(labels[idx]), present) for present, idx in groups.items()
    )
    order = np.concatenate([idx for idx, _, _ in out])
    return out, _frozen(np.argsort(order))


def takes_pairwise_masks(
    mechanism: attention.Mechanism,
    *,
    num_heads: int,
    head_dim: int,
    model_dim: int,
    tokens: int,
    layer_index: int = 0,
    num_layers: int = 1,
) -> bool:
    """Whether `mechanism` accepts a boolean mask that varies over queries (`[1, 1, n, n]`);
    False when it raises ValueError for one but accepts key padding `[1, n]` (the kernelised
    mechanisms, Sliceformer). Traced abstractly (`jax.eval_shape`): nothing is computed.

    Raises:
      errors.ConfigError: the mechanism takes neither kind of mask, so shifted windows cannot
        restrict it.
    """

    def call(mask):
        params = mechanism.init(
            jax.random.key(0),
            num_heads=num_heads,
            head_dim=head_dim,
            model_dim=model_dim,
            max_len=tokens,
            layer_index=layer_index,
            num_layers=num_layers,
        )
        v = jnp.zeros((1, tokens, num_heads, head_dim), jnp.float32)
        qk = v if mechanism.needs_qk else None
        extra = {"x": jnp.zeros((1, tokens, model_dim))} if "x" in mechanism.inputs else {}
        return mechanism.apply(params, qk, qk, v, mask=mask, **extra)

    try:
        jax.eval_shape(call, jax.ShapeDtypeStruct((1, 1, tokens, tokens), jnp.bool_))
    except ValueError as pairwise_error:
        try:
            jax.eval_shape(call, jax.ShapeDtypeStruct((1, tokens), jnp.bool_))
        except ValueError:
            raise errors.ConfigError(
                f"attention {mechanism.name!r} takes neither a query-varying mask nor a "
                f"key-padding mask, so Swin's shifted windows cannot restrict it "
                f"({pairwise_error})"
            ) from pairwise_error
        return False
    except Exception:
        # Inconclusive (e.g. the mechanism needs inputs a probe cannot invent, such as GRF's
        # coordinates): the real call will report its own problem.
        return True
    return True


# ------------------------------------------------------------------------------ modules


class SwinBlock(nnx.Module):
    """One Swin block on a `grid` of tokens:
    x + DropPath(drop(W-MSA(LN(x)))); x + DropPath(MLP(LN(x))), W-MSA in (shifted) windows.

    Args (constructor):
      dim, num_heads: width C and heads of the block.
      grid: `(H, W)` of the token grid; H and W multiples of the (effective) window.
      window_size: w; when `min(grid) <= w` the window is `min(grid)` and `shift` is ignored.
      shift: cyclic shift (w // 2 on odd blocks, 0 on even ones).
      mlp_ratio: MLP hidden width / C.
      dropout_rate: dropout after the attention projection and inside the MLP.
      mechanism: a bound `attention.Mechanism` used on every window.
      drop_path: stochastic-depth rate of both branches.
      relative_position_bias: learn and add the `[(2w-1)², heads]` bias table (needs a
        mechanism declaring "bias").
      qkv_bias: biases on q/k/v.
      shift_masks: "pairwise" (query-varying mask), "regions" (one key-padded call per region)
        or "auto" (decided by `takes_pairwise_masks`).
      layer_index, num_layers: position of the block among all blocks (for the mechanism).
      gelu: the MLP's GELU, "tanh" or "erf" (`attnbench.nn.layers.MlpBlock`).

    Raises:
      errors.ConfigError: relative_position_bias with a mechanism without a "bias" input.
      ValueError: a grid not divisible into windows.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        *,
        grid: tuple[int, int],
        window_size: int,
        shift: int,
        mlp_ratio: float,
        dropout_rate: float,
        mechanism: attention.Mechanism,
        drop_path: float = 0.0,
        relative_position_bias: bool = True,
        qkv_bias: bool = True,
        shift_masks: str = "auto",
        layer_index: int = 0,
        num_layers: int = 1,
        gelu: str = "tanh",
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        height, width = grid
        if min(grid) <= window_size:  # the official rule: one window, nothing to shift
            window_size, shift = min(grid), 0
        if height % window_size or width % window_size:
            raise ValueError(f"grid {tuple(grid)} does not divide into {window_size}-windows")
        if not 0 <= shift < window_size:
            raise ValueError(f"shift {shift} must be in [0, window {window_size})")
        if shift_masks not in SHIFT_MASKS:
            raise ValueError(f"unknown shift_masks {shift_masks!r}; known: {SHIFT_MASKS}")
        if relative_position_bias and "bias" not in mechanism.inputs:
            raise errors.ConfigError(
                f"attention {mechanism.name!r} takes no additive logit bias, so Swin's relative "
                "position bias cannot reach it: set config.model.relative_position_bias=False"
            )
        self.grid = (int(height), int(width))
        self.window_size, self.shift = int(window_size), int(shift)
        tokens = self.window_size**2
        if self.shift == 0:
            shift_masks = "none"
        elif shift_masks == "auto":
            pairwise = takes_pairwise_masks(
                mechanism,
                num_heads=num_heads,
                head_dim=dim // num_heads,
                model_dim=dim,
                tokens=tokens,
                layer_index=layer_index,
                num_layers=num_layers,
            )
            shift_masks = "pairwise" if pairwise else "regions"
        self.shift_masks = shift_masks
        self.ln1 = nnx.LayerNorm(dim, epsilon=_LN_EPS, dtype=dtype, rngs=rngs)
        self.attn = layers.Attention(
            dim,
            num_heads,
            dim,
            mechanism,
            max_len=tokens,
            layer_index=layer_index,
            num_layers=num_layers,
            dtype=dtype,
            qkv_bias=qkv_bias,
            out_bias=True,
            kernel_init=_trunc_normal,
            rngs=rngs,
        )
        if relative_position_bias:
            self.relative_position_bias_table = nnx.Param(
                _trunc_normal(rngs.params(), ((2 * self.window_size - 1) ** 2, num_heads))
            )
        self.relative_position_bias = bool(relative_position_bias)
        self.num_heads = int(num_heads)
        self.ln2 = nnx.LayerNorm(dim, epsilon=_LN_EPS, dtype=dtype, rngs=rngs)
        self.mlp = layers.MlpBlock(
            dim,
            int(dim * mlp_ratio),
            dropout_rate,
            dtype=dtype,
            kernel_init=_trunc_normal,
            gelu=gelu,
            rngs=rngs,
        )
        self.rate = dropout_rate
        self.drop_path = drop_path

    def position_bias(self):
        """The relative position bias `[1, heads, w², w²]` (float32) gathered from the table."""
        n = self.window_size**2
        index = relative_position_index(self.window_size).reshape(-1)
        bias = self.relative_position_bias_table[...][index].reshape(n, n, self.num_heads)
        return bias.transpose(2, 0, 1)[None]

    def attention_calls(self) -> list[tuple[int, int, bool]]:
        """The attention calls one example costs, as `(windows, calls per window, masked)`
        triples (for the FLOP formula): "regions" attends a window once per region it holds."""
        n_windows = math.prod(self.grid) // self.window_size**2
        if self.shift_masks == "none":
            return [(n_windows, 1, False)]
        if self.shift_masks == "pairwise":
            return [(n_windows, 1, True)]
        groups, _ = _region_groups(*self.grid, self.window_size, self.shift)
        return [(len(idx), len(present), len(present) > 1) for idx, _, present in groups]

    def _attend(self, windows, *, train: bool, key, **inputs):
        """Window attention: `windows [B * nW, w², C]` -> `[B * nW, w², C]`; `inputs`: the
        caller's per-call attention inputs (the relative position bias is added here)."""
        if self.relative_position_bias:
            inputs = {**inputs, "bias": self.position_bias()}
        if self.shift_masks == "none":
            return self.attn(windows, train=train, key=key, **inputs)
        height, width = self.grid
        mask = shifted_window_mask(height, width, self.window_size, self.shift)
        n_windows, n, c = mask.shape[0], windows.shape[1], windows.shape[2]
        batch = windows.shape[0] // n_windows
        if self.shift_masks == "pairwise":
            mask = jnp.broadcast_to(mask, (batch, *mask.shape)).reshape(-1, 1, n, n)
            return self.attn(windows, mask=mask, train=train, key=key, **inputs)
        # "regions": a window of several regions is attended once per region, its other
        # regions' keys padded out; each query keeps its own region's output.
        groups, restore = _region_groups(height, width, self.window_size, self.shift)
        windows = windows.reshape(batch, n_windows, n, c)
        outs = []
        for g, (idx, labels, present) in enumerate(groups):
            part = windows[:, idx].reshape(-1, n, c)
            if len(present) == 1:
                k = None if key is None else jax.random.fold_in(key, g)
                out = self.attn(part, train=train, key=k, **inputs)
            else:
                labels = np.broadcast_to(labels, (batch, *labels.shape)).reshape(-1, n)
                out = jnp.zeros_like(part)
                for r, region in enumerate(present):
                    k = None if key is None else jax.random.fold_in(key, g * 16 + r + 1)
                    keep = labels == region  # [B * nG, n]: key padding, and the rows to keep
                    y = self.attn(part, mask=keep, train=train, key=k, **inputs)
                    out = jnp.where(keep[..., None], y, out)
            outs.append(out.reshape(batch, len(idx), n, c))
        return jnp.concatenate(outs, axis=1)[:, restore].reshape(-1, n, c)

    def __call__(self, x, *, train: bool = False, key=None, **inputs):
        """x: `[B, H*W, C]` row-major tokens of the grid -> `[B, H*W, C]`; `inputs`: per-call
        attention inputs."""
        batch, length, c = x.shape
        height, width = self.grid
        if length != height * width:
            raise ValueError(f"{length} tokens for a {height}x{width} grid")
        k_attn, k_drop, k_mlp = layers.split_keys(key, 3)
        # Stochastic depth draws from its own stream, as `attnbench.nn.layers.EncoderBlock`.
        paths = None if key is None or not self.drop_path else jax.random.fold_in(key, 1 << 20)
        k_path1, k_path2 = layers.split_keys(paths, 2)
        s, w = self.shift, self.window_size
        h = self.ln1(x).reshape(batch, height, width, c)
        if s:
            h = jnp.roll(h, (-s, -s), axis=(1, 2))
        h = window_reverse(
            self._attend(window_partition(h, w), train=train, key=k_attn, **inputs),
            w,
            height,
            width,
        )
        if s:
            h = jnp.roll(h, (s, s), axis=(1, 2))
        h = layers.dropout(h.reshape(batch, length, c), self.rate, k_drop, train)
        x = x + layers.drop_path(h, self.drop_path, k_path1, train)
        h = self.mlp(self.ln2(x), train=train, key=k_mlp)
        return x + layers.drop_path(h, self.drop_path, k_path2, train)


class PatchMerging(nnx.Module):
    """Downsampling between stages: each 2x2 neighbourhood of `[B, H*W, C]` concatenated in
    the official order ([0::2, 0::2], [1::2, 0::2], [0::2, 1::2], [1::2, 1::2]), LayerNorm(4C),
    Linear(4C -> 2C, no bias) -> `[B, H/2 * W/2, 2C]`."""

    def __init__(self, dim: int, grid: tuple[int, int], *, dtype=jnp.float32, rngs: nnx.Rngs):
        if grid[0] % 2 or grid[1] % 2:
            raise ValueError(f"patch merging needs an even grid, got {tuple(grid)}")
        self.grid = (int(grid[0]), int(grid[1]))
        self.norm = nnx.LayerNorm(4 * dim, epsilon=_LN_EPS, dtype=dtype, rngs=rngs)
        self.reduction = nnx.Linear(
            4 * dim, 2 * dim, use_bias=False, kernel_init=_trunc_normal, dtype=dtype, rngs=rngs
        )

    def __call__(self, x):
        """x: `[B, H*W, C]` -> `[B, H/2 * W/2, 2C]`."""
        batch, _, c = x.shape
        height, width = self.grid
        x = x.reshape(batch, height // 2, 2, width // 2, 2, c)  # [B, i, dy, j, dx, C]
        # Channel blocks ordered (dx, dy) = (0,0), (0,1), (1,0), (1,1): the official x0..x3.
        x = x.transpose(0, 1, 3, 4, 2, 5).reshape(batch, height * width // 4, 4 * c)
        return self.reduction(self.norm(x))


class SwinEncoder(nnx.Module):
    """The Swin stages on patch embeddings: blocks, patch merging between stages, final norm.

    Args (constructor):
      grid: `(H', W')` patch grid of the input tokens (56x56 for 224 px, patch 4).
      dim: C of stage 1 (stage s has C * 2^s).
      depths: blocks per stage, e.g. (2, 2, 6, 2) for Swin-T, (2, 2, 18, 2) for Swin-S.
      num_heads: heads per stage, e.g. (3, 6, 12, 24).
      window_size: w (7).
      mlp_ratio: MLP hidden width / C (4.0).
      dropout_rate: dropout after attention projections and in the MLPs.
      drop_path: the deepest block's stochastic-depth rate; rates rise linearly from 0 over
        all blocks of all stages (the official rule).
      attention_cfg: mapping with `name` + hyper-parameters of the mechanism in the windows.
      attention_layers: the blocks (0-based, counted over all stages) that use it; the others
        use softmax attention, Swin's own. Empty: every block (SSA's Swin-T runs it in 10 or
        6 of the 12 blocks, SSA Table 2).
      relative_position_bias: learn the per-block relative position bias (needs a mechanism
        with a "bias" input; else errors.ConfigError).
      qkv_bias: biases on q/k/v.
      gelu: the MLPs' GELU, "tanh" or "erf".
      dtype: compute dtype of the residual stream.

    Attributes:
      out_dim: output width C * 2^(S-1); out_grid: output grid (H'/2^(S-1), W'/2^(S-1)).
    """

    def __init__(
        self,
        *,
        grid: tuple[int, int],
        dim: int,
        depths: Sequence[int],
        num_heads: Sequence[int],
        window_size: int = 7,
        mlp_ratio: float = 4.0,
        dropout_rate: float = 0.0,
        drop_path: float = 0.0,
        attention_cfg,
        attention_layers: Sequence[int] = (),
        relative_position_bias: bool = True,
        qkv_bias: bool = True,
        gelu: str = "tanh",
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        depths, num_heads = tuple(int(d) for d in depths), tuple(int(h) for h in num_heads)
        grid = (int(grid[0]), int(grid[1]))
        if len(depths) != len(num_heads) or not depths:
            raise errors.ConfigError(
                f"config.model.depths={depths} and config.model.swin_heads={num_heads} must "
                "name the same (non-zero) number of stages"
            )
        _check_grid(grid, len(depths), window_size)
        num_layers = sum(depths)
        mechanisms = _layer_mechanisms(attention_cfg, attention_layers, num_layers)
        rates = layers.drop_path_rates(drop_path, num_layers, "linear")
        shift_masks, stages, merges = {}, [], []  # shift_masks: one abstract probe per mechanism
        resolution, width, first = grid, dim, 0
        for s, (depth, heads) in enumerate(zip(depths, num_heads, strict=True)):
            if min(resolution) > window_size:
                for i in range(1, depth, 2):  # the shifted blocks
                    mech = mechanisms[first + i]
                    if mech.name not in shift_masks:
                        pairwise = takes_pairwise_masks(
                            mech,
                            num_heads=heads,
                            head_dim=width // heads,
                            model_dim=width,
                            tokens=window_size**2,
                            layer_index=first + i,
                            num_layers=num_layers,
                        )
                        shift_masks[mech.name] = "pairwise" if pairwise else "regions"
            stages.append(
                nnx.List(
                    [
                        SwinBlock(
                            width,
                            heads,
                            grid=resolution,
                            window_size=window_size,
                            shift=0 if i % 2 == 0 else window_size // 2,
                            mlp_ratio=mlp_ratio,
                            dropout_rate=dropout_rate,
                            mechanism=mechanisms[first + i],
                            drop_path=rates[first + i],
                            relative_position_bias=relative_position_bias,
                            qkv_bias=qkv_bias,
                            shift_masks=shift_masks.get(mechanisms[first + i].name, "auto"),
                            layer_index=first + i,
                            num_layers=num_layers,
                            gelu=gelu,
                            dtype=dtype,
                            rngs=rngs,
                        )
                        for i in range(depth)
                    ]
                )
            )
            first += depth
            if s < len(depths) - 1:
                merges.append(PatchMerging(width, resolution, dtype=dtype, rngs=rngs))
                resolution, width = (resolution[0] // 2, resolution[1] // 2), 2 * width
        self.stages = nnx.List(stages)
        self.merges = nnx.List(merges)
        self.norm = nnx.LayerNorm(width, epsilon=_LN_EPS, dtype=dtype, rngs=rngs)
        self.grid = grid
        self.out_dim, self.out_grid = width, resolution
        self.dtype = jnp.dtype(dtype)

    def __call__(self, x, *, mask=None, train: bool = False, key=None, **inputs):
        """x: `[B, H'*W', C]` patch embeddings, row-major -> `[B, out_grid[0] * out_grid[1],
        out_dim]` in the compute dtype. `mask` must be None (windows need the full grid);
        `inputs`: per-call attention inputs, for every block."""
        if mask is not None:
            raise ValueError("SwinEncoder attends over the full patch grid: mask must be None")
        n = x.shape[1]
        if n != self.grid[0] * self.grid[1]:
            raise ValueError(f"{n} tokens for the encoder's {self.grid[0]}x{self.grid[1]} grid")
        keys = iter(layers.split_keys(key, sum(len(stage) for stage in self.stages)))
        x = x.astype(self.dtype)
        for s, stage in enumerate(self.stages):
            for block in stage:
                x = block(x, train=train, key=next(keys), **inputs)
            if s < len(self.merges):
                x = self.merges[s](x)
        return self.norm(x)


def _layer_mechanisms(attention_cfg, attention_layers, num_layers: int) -> list:
    """The bound mechanism of every block: the configured one on `attention_layers` (all when
    empty), softmax attention elsewhere."""
    chosen = layers.mechanism(attention_cfg)
    picked = {int(i) for i in attention_layers}
    if not picked:
        return [chosen] * num_layers
    if not picked <= set(range(num_layers)):
        raise errors.ConfigError(
            f"config.model.attention_layers={tuple(attention_layers)}: blocks are numbered "
            f"0..{num_layers - 1} over all stages"
        )
    plain = attention.get("softmax")
    return [chosen if i in picked else plain for i in range(num_layers)]


def _check_grid(grid: tuple[int, int], stages: int, window: int) -> None:
    """ConfigError unless every stage's resolution splits into windows and halves evenly."""
    resolution = grid
    for s in range(stages):
        w = min(window, *resolution)
        if resolution[0] % w or resolution[1] % w:
            raise errors.ConfigError(
                f"config.model.grid={grid}: stage {s + 1} resolution {resolution} does not "
                f"divide into config.model.window_size={window} windows"
            )
        if s < stages - 1:
            if resolution[0] % 2 or resolution[1] % 2:
                raise errors.ConfigError(
                    f"config.model.grid={grid}: stage {s + 1} resolution {resolution} is odd; "
                    f"patch merging needs even ones ({stages} stages)"
                )
            resolution = (resolution[0] // 2, resolution[1] // 2)


# ------------------------------------------------------------------------------ registry


def _norm_flops(norm, tally, tokens: int) -> None:
    tally.claim("norms/other", norm)
    tally.add("norms/other", elementwise=cost.LAYERNORM * tokens * norm.num_features)


def _block_flops(block: SwinBlock, tally, layer_index: int) -> None:
    """One block on one example: norms, residuals, projections and the mechanism for every
    window call, the bias adds, the MLP."""
    tokens, dim = math.prod(block.grid), block.ln1.num_features
    n = block.window_size**2
    _norm_flops(block.ln1, tally, tokens)
    _norm_flops(block.ln2, tally, tokens)
    tally.add("norms/other", elementwise=2 * tokens * dim)  # residual adds
    attn = block.attn
    if block.relative_position_bias:
        tally.claim("attention", block.relative_position_bias_table)
    heads = attn.value.kernel.shape[1]
    for windows, calls, masked in block.attention_calls():
        # "regions" reruns the whole attention layer per region: projections included.
        backbones.attention_flops(
            attn, tally, n=n, layer_index=layer_index, masked=masked, calls=windows * calls
        )
        if block.relative_position_bias and "bias" in attn.mechanism.inputs:
            tally.add("attention", elementwise=windows * calls * heads * n * n)  # bias adds
        if calls > 1:
            tally.add("attention", elementwise=windows * calls * n * dim)  # region selects
    tally.linear("mlp", block.mlp.fc1, tokens)
    tally.linear("mlp", block.mlp.fc2, tokens)
    gelu = backbones.gelu_flops(block.mlp)
    tally.add("mlp", elementwise=gelu * tokens * block.mlp.fc1.out_features)


def swin_flops(encoder: SwinEncoder, tally, *, n: int, masked: bool) -> None:
    """The backbone's FLOP formula (`attnbench.nn.backbones.register`): forward FLOPs of one example
    of `n = H'*W'` tokens into `tally` (`attnbench.nn.flops.Tally`); windows partition, roll and
    merge gathers are data movement (0 FLOPs)."""
    if n != math.prod(encoder.grid):
        raise ValueError(f"n={n}, but the swin encoder is built for a {encoder.grid} grid")
    if masked:
        raise ValueError("the swin encoder takes no mask")
    index = 0
    for s, stage in enumerate(encoder.stages):
        for block in stage:
            _block_flops(block, tally, index)
            index += 1
        if s < len(encoder.merges):
            merge = encoder.merges[s]
            tokens = math.prod(merge.grid) // 4
            _norm_flops(merge.norm, tally, tokens)
            tally.linear("projections", merge.reduction, tokens)
    _norm_flops(encoder.norm, tally, math.prod(encoder.out_grid))


@backbones.register("swin", flops=swin_flops)
def swin(*, model_cfg, attention_cfg, max_len: int | None, rngs):
    """The Swin encoder from the model section: `grid` (patch grid H', W'), `dim`, `depths`,
    `swin_heads`, `window_size`, `mlp_ratio`, `dropout`, `drop_path`, `dtype` and the optional
    `relative_position_bias` (default True), `attention_layers` (default all) and `gelu`
    (default "tanh"). `max_len` must be H'*W' (or None): the grid, not a length, fixes the
    encoder."""
    m = model_cfg
    grid = tuple(int(g) for g in m.grid)
    if len(grid) != 2:
        raise errors.ConfigError(f"config.model.grid={m.grid!r} must be (H', W')")
    if max_len is not None and max_len != grid[0] * grid[1]:
        raise errors.ConfigError(
            f"the swin backbone sees {grid[0]}x{grid[1]} = {grid[0] * grid[1]} patches "
            f"(config.model.grid), not max_len={max_len} tokens (no CLS token)"
        )
    return SwinEncoder(
        grid=grid,
        dim=m.dim,
        depths=tuple(m.depths),
        num_heads=tuple(m.swin_heads),
        window_size=m.window_size,
        mlp_ratio=m.mlp_ratio,
        dropout_rate=m.dropout,
        drop_path=m.drop_path,
        attention_cfg=attention_cfg,
        attention_layers=tuple(m.get("attention_layers", ())),
        relative_position_bias=m.get("relative_position_bias", True),
        gelu=backbones.gelu_name(m),
        dtype=layers.compute_dtype(m.dtype),
        rngs=rngs,
    )
