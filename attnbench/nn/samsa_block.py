"""The SAMSA encoder (Lenhat et al., arXiv 2408.05391, §4.4 and Algorithm 1): pre-RMSNorm
blocks whose residual branches are scaled by ONE zero-initialised learnable scalar shared by
every layer and both branches (ReZero with sharing; §4.4, as the authors' code does):

    x <- x + alpha * DropPath(W_o Attention(RMSNorm(x); scores from x))
    x <- x + alpha * DropPath(FFN(RMSNorm(x)))

The importance scores are computed from the un-normalised block input `x` (Algorithm 1, line
6), while q/k/v come from `RMSNorm(x)`. With `alpha = 0` (its initial value) every block is
the identity, so the encoder starts as its final RMSNorm.

Randomness is explicit, as in `attnbench.nn.layers`: modules take `train` and `key` in `__call__`.
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import nnx

import attention
import attention.samsa  # noqa: F401  (registers "samsa"; attention/__init__ may not yet)
from attnbench.nn import layers

__all__ = ["drop_path", "SAMSABlock", "SAMSAEncoder"]


# Stochastic depth lives with the shared blocks; this name is kept for SAMSA's callers.
drop_path = layers.drop_path


class SAMSABlock(nnx.Module):
    """One pre-RMSNorm SAMSA layer; the residual scale is owned by the encoder and passed in."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        mlp_dim: int,
        mechanism: attention.Mechanism,
        *,
        qkv_dim: int | None = None,
        drop_path: float = 0.0,
        dropout_rate: float = 0.0,
        max_len: int | None = None,
        layer_index: int = 0,
        num_layers: int = 1,
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        self.norm1 = nnx.RMSNorm(dim, dtype=dtype, rngs=rngs)
        # SAMSA scores the raw residual stream: the call passes it as `x` (layers.Attention
        # hands declared inputs to the mechanism; softmax, the baseline, ignores it).
        self.attn = layers.Attention(
            dim,
            num_heads,
            qkv_dim or dim,
            mechanism,
            max_len=max_len,
            layer_index=layer_index,
            num_layers=num_layers,
            dtype=dtype,
            rngs=rngs,
        )
        self.norm2 = nnx.RMSNorm(dim, dtype=dtype, rngs=rngs)
        # Dense -> GELU -> dropout -> Dense -> dropout, as the authors' FFN.
        self.mlp = layers.MlpBlock(dim, mlp_dim, dropout_rate, dtype=dtype, rngs=rngs)
        self.drop_path = drop_path

    def __call__(self, x, *, residual_scale, mask=None, train: bool = False, key=None, **inputs):
        """x: `[B, N, dim]`, residual_scale: scalar, mask: key padding `[B, N]` -> `[B, N, dim]`;
        `inputs`: per-call attention inputs (`attnbench.nn.layers.Attention`)."""
        k_attn, k_path1, k_mlp, k_path2 = layers.split_keys(key, 4)
        h = self.attn(self.norm1(x), x=x, mask=mask, train=train, key=k_attn, **inputs)
        x = x + residual_scale * drop_path(h, self.drop_path, k_path1, train)
        h = self.mlp(self.norm2(x), train=train, key=k_mlp)
        return x + residual_scale * drop_path(h, self.drop_path, k_path2, train)


class SAMSAEncoder(nnx.Module):
    """`num_layers` SAMSA blocks sharing one zero-initialised residual scalar, then RMSNorm.

    Works on embedded inputs; `positions=True` adds the sinusoid (as SAMSA on LRA), else the
    caller adds any. The final RMSNorm is ours: the paper's heads are not specified, and the
    pre-norm residual stream is otherwise unnormalised.

    Args (constructor):
      num_layers, dim, num_heads, mlp_dim: depth, width, heads, FFN width.
      drop_path: stochastic-depth rate of every residual branch (the same for all layers, as
        the authors' per-layer configuration strings give it).
      attention_cfg: mapping with `name` and the mechanism's hyper-parameters (normally
        "samsa"; "softmax" gives the paper's full-attention baseline in the same block).
      qkv_dim: attention width (default `dim`); dropout_rate: FFN dropout.
    """

    def __init__(
        self,
        num_layers: int,
        dim: int,
        num_heads: int,
        mlp_dim: int,
        drop_path: float,
        attention_cfg,
        *,
        qkv_dim: int | None = None,
        dropout_rate: float = 0.0,
        max_len: int | None = None,
        positions: bool = False,
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        if positions and max_len is None:
            raise ValueError("SAMSAEncoder: positions=True needs max_len")
        self.positions = positions
        self.max_len = max_len
        mechanism = layers.mechanism(attention_cfg)
        # One scalar for every layer and both branches (paper §4.4: shared across all layers).
        self.residual_scale = nnx.Param(jnp.zeros((), jnp.float32))
        self.blocks = layers.block_stack(
            lambda i: SAMSABlock(
                dim,
                num_heads,
                mlp_dim,
                mechanism,
                qkv_dim=qkv_dim,
                drop_path=drop_path,
                dropout_rate=dropout_rate,
                max_len=max_len,
                layer_index=i,
                num_layers=num_layers,
                dtype=dtype,
                rngs=rngs,
            ),
            num_layers,
        )
        self.norm = nnx.RMSNorm(dim, dtype=dtype, rngs=rngs)
        self.dtype = jnp.dtype(dtype)

    def __call__(self, x, *, mask=None, train: bool = False, key=None, **inputs):
        """x: `[B, N, dim]` embedded tokens, mask: `[B, N]` True for real tokens -> `[B, N, dim]`;
        `inputs`: per-call attention inputs, for every block.

        `key` is needed when `train` (SAMSA's Gumbel noise, dropout, drop-path). Positions are
        added in the input's precision, then the residual stream is cast to the compute
        `dtype`; the output is in `dtype`.
        """
        if self.positions:
            x = layers.add_sinusoid(x, self.max_len)
        x = x.astype(self.dtype)  # the residual stream is in the compute dtype (nn.layers)
        alpha = self.residual_scale[...].astype(x.dtype)
        for block, k in zip(self.blocks, layers.split_keys(key, len(self.blocks)), strict=True):
            x = block(x, residual_scale=alpha, mask=mask, train=train, key=k, **inputs)
        return self.norm(x)
