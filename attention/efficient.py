"""Efficient Attention (Shen, Zhang, Zhao, Yi and Li, "Efficient Attention: Attention with
Linear Complexities", WACV 2021, arXiv:1812.01243).

Sec. 3.2, Eq. 3-4: instead of rho(Q K^T) V, compute

    E(Q, K, V) = rho_q(Q) (rho_k(K)^T V)

right to left, so the `[Dk, Dv]` summary rho_k(K)^T V replaces the N x M matrix. Per head, with
`normalization`:
  * "softmax" (the paper's main form, Eq. 4, and its authors' code cmsflash/efficient-attention,
    which applies `softmax(dim=2)` to keys over positions and `softmax(dim=1)` to queries over
    channels, with no 1/sqrt(d) logit scale): rho_q(Q) = softmax of each query over its Dk
    features, rho_k(K) = softmax of each key feature over the M positions. Then
    rho_q(Q) rho_k(K)^T is row-stochastic without further normalisation:
    sum_j sum_d rho_q(Q)_id rho_k(K)_jd = sum_d rho_q(Q)_id = 1.
  * "scaling" (Sec. 3.2, the counterpart of dot-product attention's scaling normalisation
    rho(Y) = Y / n): rho_q(Y) = rho_k(Y) = Y / sqrt(n), so E = Q (K^T V) / n with n the number
    of (unmasked) keys.

This is the non-GFSA part of `gfsa_linear` (attention/gfsa.py: GFSA on Efficient Attention)
in the same conventions: with its default filter (w_0 = 0, w_1 = 1, w_K = 0) `gfsa_linear`
equals `efficient_attention` with normalization="softmax" (tested).

Masks: key padding only (`[B, M]`, or a 4-D mask of shape `[B|1, 1, 1, M]`): padded keys are
excluded from rho_k's softmax over positions (their weight is 0) and, for "scaling", from n
and the sum. Other 4-D masks do not factorise through the `[Dk, Dv]` summary and raise
ValueError. A query whose every key is masked returns zeros. Causal attention is not defined by
the paper: rho_k's softmax over positions normalises over all keys, so a prefix version would
need a separate normaliser per query; `causal=True` raises ValueError (use `linear` for causal
kernelised attention). There is no attention matrix, hence no attention dropout.

Complexity: O((N + M) Dk Dv H) time and O((N + M)(Dk + Dv) H + Dk Dv H) memory; no N x M array
is formed. Computed in float32 (float64 for float64 inputs); the output is in v's dtype.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attention import cost, registry
from attention.linear import key_padding_mask
from attention.softmax import check_qkv

__all__ = ["apply", "flops", "NORMALIZATIONS"]

NORMALIZATIONS = ("softmax", "scaling")


def _check_normalization(value) -> None:
    if value not in NORMALIZATIONS:
        raise ValueError(
            f"efficient_attention: normalization={value!r} is not one of "
            f"{', '.join(NORMALIZATIONS)}"
        )


def _check_causal(value) -> None:
    if value is not False:
        raise ValueError(
            f"efficient_attention: causal={value!r}: the paper defines no causal form (rho_k "
            "normalises each key feature over all positions); use causal=False, or the "
            "`linear` mechanism with causal=True for causal kernelised attention"
        )


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    normalization: str = "softmax",
    causal: bool = False,
):
    """Efficient Attention `rho_q(Q) (rho_k(K)^T V)`.

    Args:
      params: unused (no parameters); `{}`.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: key padding `[B, M]` (or `[B|1, 1, 1, M]`), True = attend; other masks raise.
      key, train: unused (deterministic).
      normalization: "softmax" (Eq. 4) or "scaling" (Y / sqrt(n) on both sides).
      causal: must be False (not defined by the paper; raises).

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`.
    """
    del params, key, train
    check_qkv(q, k, v)
    _check_normalization(normalization)
    _check_causal(causal)
    b, n, h, _ = q.shape
    m = k.shape[1]
    pad = key_padding_mask(mask, b, h, n, m, "efficient_attention")
    acc = jnp.promote_types(jnp.promote_types(q.dtype, k.dtype), jnp.float32)
    qf, kf, vf = q.astype(acc), k.astype(acc), v.astype(acc)
    valid = None if pad is None else pad[:, :, None, None]  # [B, M, 1, 1]
    if normalization == "scaling":
        if valid is not None:
            kf = jnp.where(valid, kf, 0.0)
        count = jnp.full((b,), m, acc) if pad is None else pad.sum(-1).astype(acc)
        summary = jnp.einsum("bmhd,bmhe->bhde", kf, vf)
        out = jnp.einsum("bnhd,bhde->bnhe", qf, summary)
        out = out / jnp.maximum(count, 1.0)[:, None, None, None]  # no keys: zero summary
        return out.astype(v.dtype)
    rho_q = jax.nn.softmax(qf, axis=-1)
    if valid is None:
        rho_k = jax.nn.softmax(kf, axis=1)
    else:
        shift = jnp.where(valid, kf, -jnp.inf).max(1, keepdims=True)
        shift = jax.lax.stop_gradient(jnp.where(jnp.isfinite(shift), shift, 0.0))
        # Padded entries are replaced before exp (no inf meets a zero cotangent).
        e = jnp.where(valid, jnp.exp(jnp.where(valid, kf, shift) - shift), 0.0)
        den = e.sum(1, keepdims=True)
        rho_k = e / jnp.where(den > 0, den, 1.0)  # all keys padded: rho_k = 0, output 0
    summary = jnp.einsum("bmhd,bmhe->bhde", rho_k, vf)  # [B, H, Dk, Dv]
    return jnp.einsum("bnhd,bhde->bnhe", rho_q, summary).astype(v.dtype)


def _check(hp, num_tokens) -> None:
    """`check` for the registry."""
    del num_tokens
    _check_normalization(hp["normalization"])
    _check_causal(hp["causal"])


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # rho_k(K)^T V 2·m·h·dk·dv, then rho_q(Q)·summary 2·n·h·dk·dv. Softmax: the two feature
    # softmaxes over (n + m)·h·dk entries (max, subtract, sum, divide); masking selects the
    # m·h·dk key entries twice. Scaling: zeroing padded keys and the division of the output.
    mm = 2 * (c.m + c.n) * c.h * c.dk * c.dv
    if hp["normalization"] == "scaling":
        return mm, c.n * c.h * c.dv + c.masked * c.m * c.h * c.dk
    ew = (c.n + c.m) * c.h * c.dk * (cost.SOFTMAX - 1) + c.masked * 2 * c.m * c.h * c.dk
    return mm, ew


registry.register(
    "efficient_attention",
    apply=apply,
    check=_check,
    flops=flops,
    defaults={"normalization": "softmax", "causal": False},
    doc="Efficient Attention rho_q(Q)(rho_k(K)^T V), softmax or scaling normalisation, "
    "O(N d^2) (Shen et al. 2021)",
)
