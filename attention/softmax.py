"""Softmax (scaled dot-product) attention: the reference mechanism.

    out[b, n, h] = sum_m softmax_m(q[b,n,h] . k[b,m,h] * scale + bias[b,h,n,m]) v[b, m, h]

Masked pairs get probability zero; a query whose every key is masked returns zeros (not NaN, not
the uniform average a large-negative fill would give).

The hyper-parameter `implementation` ("auto" | "xla" | "chunked" | "cudnn" | "pallas") picks
the kernel (`attention.kernels`): "auto" takes the backend's fused kernel when it can take the
inputs (cuDNN on GPU, Pallas flash attention on TPU), on CPU the blocked `chunked` path from
`kernels.CHUNKED_FROM` (1024) tokens without attention dropout, and the exact XLA path
otherwise.
"""

from __future__ import annotations

from attention import cost, kernels, registry
from attention.kernels import check_qkv

__all__ = ["apply", "check_qkv", "flops"]


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
    implementation: str = "auto",
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
      implementation: "auto" | "xla" | "chunked" | "cudnn" | "pallas" (`attention.kernels`);
        attention dropout in training runs on "xla" or "chunked" ("auto" falls back to xla).

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`. On the xla kernel, logits and softmax are computed
      in float32 (or float64 when the inputs are); the fused kernels keep float32 statistics.
    """
    del params
    check_qkv(q, k, v)
    rate = dropout_rate if train else 0.0
    if rate > 0.0 and key is None:
        raise ValueError("softmax attention: train=True with dropout_rate > 0 needs `key`")
    return kernels.dot_product_attention(
        q,
        k,
        v,
        bias=bias,
        mask=mask,
        scale=scale,
        implementation=implementation,
        dropout_rate=rate,
        dropout_key=key,
        site="softmax",
    )


def _check(hp, num_tokens) -> None:
    """`check` for the registry: `implementation` must be a known kernel choice."""
    del num_tokens
    kernels.check_implementation(hp["implementation"])


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    del hp
    # QK^T 2·n·m·h·dk + PV 2·n·m·h·dv  (= 4·n·m·h·d): the reference.
    scores = c.n * c.m * c.h
    return 2 * scores * (c.dk + c.dv), cost.softmax_elementwise(c, scores)


registry.register(
    "softmax",
    apply=apply,
    check=_check,
    flops=flops,
    defaults={"dropout_rate": 0.0, "scale": None, "implementation": "auto"},
    doc="scaled dot-product softmax attention (the reference)",
    inputs=("bias",),
)
