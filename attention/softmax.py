"""Softmax (scaled dot-product) attention: the reference mechanism.

    out[b, n, h] = sum_m softmax_m(q[b,n,h] . k[b,m,h] * scale + bias[b,h,n,m]) v[b, m, h]

Masked pairs get probability zero; a query whose every key is masked returns zeros (not NaN, not
the uniform average a large-negative fill would give).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attention import cost, masks, registry

__all__ = ["apply", "check_qkv", "flops"]


def check_qkv(q, k, v) -> None:
    """Raises ValueError (naming the shapes) unless q/k/v follow the [B, N|M, H, D] layout."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(f"q, k, v must be 4-D [B, N, H, D]; got {q.shape}, {k.shape}, {v.shape}")
    if k.shape[:3] != v.shape[:3]:
        raise ValueError(f"k {k.shape} and v {v.shape} must agree on [B, M, H]")
    if q.shape[0] != k.shape[0] or q.shape[2] != k.shape[2] or q.shape[3] != k.shape[3]:
        raise ValueError(f"q {q.shape} and k {k.shape} must agree on B, H and Dk")


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    bias=None,
    dropout_rate: float = 0.0,
    scale: float | None = None,
):
    """Softmax attention.

    Args:
      params: unused (the mechanism has no parameters of its own); `{}`.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: boolean, broadcastable to `[B, H, N, M]`, or key padding `[B, M]`; True = attend.
      key: PRNG key for attention dropout (needed when `train` and `dropout_rate > 0`).
      train: enables attention dropout.
      bias: optional additive logit bias broadcastable to `[B, H, N, M]` (e.g. Graphormer's).
      dropout_rate: dropout on the attention probabilities during training.
      scale: logit scale; default `Dk ** -0.5`.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`. Logits and softmax are computed in float32 (or
      float64 when the inputs are).
    """
    del params
    check_qkv(q, k, v)
    b, n, h, dk = q.shape
    m = k.shape[1]
    scale = dk**-0.5 if scale is None else scale
    acc = jnp.promote_types(q.dtype, jnp.float32)
    logits = jnp.einsum("bnhd,bmhd->bhnm", q, k, preferred_element_type=acc) * scale
    if bias is not None:
        logits = logits + bias.astype(acc)
    mask4 = masks.as_4d(mask, b, h, n, m)
    if mask4 is not None:
        logits = jnp.where(mask4, logits, jnp.finfo(acc).min)
    probs = jax.nn.softmax(logits, axis=-1)
    if mask4 is not None:
        # Zeroes fully masked rows (softmax of an all-min row is uniform, not zero).
        probs = jnp.where(mask4, probs, 0.0)
    if train and dropout_rate > 0.0:
        if key is None:
            raise ValueError("softmax attention: train=True with dropout_rate > 0 needs `key`")
        keep = jax.random.bernoulli(key, 1.0 - dropout_rate, probs.shape)
        probs = jnp.where(keep, probs / (1.0 - dropout_rate), 0.0)
    return jnp.einsum("bhnm,bmhd->bnhd", probs.astype(v.dtype), v)


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    del hp
    # QK^T 2·n·m·h·dk + PV 2·n·m·h·dv  (= 4·n·m·h·d): the reference.
    scores = c.n * c.m * c.h
    return 2 * scores * (c.dk + c.dv), cost.softmax_elementwise(c, scores)


registry.register(
    "softmax",
    apply=apply,
    flops=flops,
    defaults={"dropout_rate": 0.0, "scale": None},
    doc="scaled dot-product softmax attention (the reference)",
    inputs=("bias",),
)
