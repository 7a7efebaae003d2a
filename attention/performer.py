"""Performer / FAVOR+ (Choromanski et al., "Rethinking Attention with Performers", ICLR 2021,
arXiv:2009.14794).

Sec. 2.3, Lemma 1 (positive random features for the softmax kernel): with x = q / Dk^(1/4),
y = k / Dk^(1/4) (so that exp(x . y) = exp(q . k / sqrt(Dk))) and w_1..w_m,

    phi(x) = exp(-|x|^2 / 2) / sqrt(m) * [exp(w_1 . x), ..., exp(w_m . x)]
    out_i  = phi(q_i)^T (sum_j phi(k_j) v_j^T) / (phi(q_i)^T sum_j phi(k_j))      (Sec. 2.2)

Sec. 2.4 (orthogonal random features): the w_r are exactly orthogonal within blocks of Dk rows
(QR of a Gaussian block, signs fixed so the block is Haar-distributed), each row rescaled to an
independent chi(Dk)-distributed norm so that every w_r is marginally N(0, I). The last block is
truncated when m is not a multiple of Dk.

Numerical stabilisation (any factor constant over r for a query, or over (j, r) for all keys,
cancels between numerator and denominator): the query features are shifted by their max over r,
the key features by their max over all unmasked keys and features. Both shifts carry no
gradient (they cancel exactly). Without them exp overflows for |q|, |k| of a few units.

The random matrix `[m, Dk]` is drawn in `init` and kept in `params["buffers"]["features"]`
(frozen, shared by the heads as in the authors' code). With `redraw=True`, a training call
draws a fresh matrix from `key` instead (Sec. 4: "redrawing features"); evaluation always uses
the stored one. Masks: key padding only (see `linear.key_padding_mask`); a padded key has
phi(k) = 0. A query whose keys are all masked returns zeros.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attention import cost, registry
from attention.linear import key_padding_mask
from attention.softmax import check_qkv

__all__ = ["apply", "flops", "init", "orthogonal_features"]


def orthogonal_features(key, num_features: int, dim: int, dtype=jnp.float32):
    """Orthogonal random features `[num_features, dim]`.

    Rows are orthogonal within each block of `dim` consecutive rows; each row's norm is drawn
    independently from the chi distribution with `dim` degrees of freedom (the norm of a
    standard Gaussian vector), so each row is marginally N(0, I_dim).
    """
    if num_features < 1 or dim < 1:
        raise ValueError(f"performer: num_features and dim must be >= 1, got {num_features}, {dim}")
    num_blocks = -(-num_features // dim)
    # One draw for the blocks and the norm vectors (a single PRNG kernel to compile).
    gauss = jax.random.normal(key, (num_blocks * dim + num_features, dim), jnp.float32)
    blocks = gauss[: num_blocks * dim].reshape(num_blocks, dim, dim)
    qmat, rmat = jnp.linalg.qr(blocks)
    # Sign fix: makes Q Haar-distributed instead of depending on the QR routine's convention.
    qmat = qmat * jnp.sign(jnp.diagonal(rmat, axis1=-2, axis2=-1))[:, None, :]
    rows = jnp.swapaxes(qmat, -1, -2).reshape(num_blocks * dim, dim)[:num_features]
    norms = jnp.linalg.norm(gauss[num_blocks * dim :], axis=1)
    return (rows * norms[:, None]).astype(dtype)


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    num_features: int = 64,
):
    """Draws the frozen random features.

    Returns:
      `{"buffers": {"features": [num_features, head_dim] float32}}`.
    """
    del num_heads, model_dim, max_len, layer_index, num_layers
    return {"buffers": {"features": orthogonal_features(key, num_features, head_dim)}}


def _logits(x, w):
    """log phi(x) + log sqrt(m): `w . x - |x|^2 / 2`, `[B, L, H, m]`."""
    return jnp.einsum("blhd,rd->blhr", x, w) - 0.5 * jnp.sum(x * x, -1, keepdims=True)


def _query_features(x, w):
    """phi(x) `[B, N, H, m]` for queries (x `[B, N, H, Dk]`, already Dk^-1/4 scaled), each
    shifted by its own max over features (a per-query factor cancels in the ratio)."""
    logits = _logits(x, w)
    shift = jax.lax.stop_gradient(logits.max(-1, keepdims=True))
    return jnp.exp(logits - shift) * w.shape[0] ** -0.5


def _key_features(x, w, pad):
    """phi(x) `[B, M, H, m]` for keys, shifted by one max per (batch, head) over the unmasked
    keys and all features (the same factor for every key, so it cancels); padded keys
    (`pad` `[B, M]` False) get 0."""
    logits = _logits(x, w)
    masked = logits if pad is None else jnp.where(pad[:, :, None, None], logits, -jnp.inf)
    shift = masked.max(axis=(1, 3), keepdims=True)
    shift = jax.lax.stop_gradient(jnp.where(jnp.isfinite(shift), shift, 0.0))
    if pad is None:
        return jnp.exp(logits - shift) * w.shape[0] ** -0.5
    # Padded logits are replaced before exp: exp of a huge masked logit would overflow and turn
    # the zero cotangent of the outer where into 0 * inf = NaN.
    valid = pad[:, :, None, None]
    feats = jnp.exp(jnp.where(valid, logits, shift) - shift) * w.shape[0] ** -0.5
    return jnp.where(valid, feats, 0.0)


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    redraw: bool = False,
):
    """FAVOR+ attention (unbiased estimate of softmax attention, Dk^-1/2 logit scale).

    Args:
      params: `{"buffers": {"features": [m, Dk]}}` from `init`.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: key padding `[B, M]` (or `[B|1, 1, 1, M]`), True = attend; other masks raise.
      key: PRNG key; needed when `train` and `redraw`.
      train: with `redraw`, draw fresh features from `key` instead of the stored ones.
      redraw: see `train`.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`; computed in float32 (float64 for float64 inputs).
    """
    check_qkv(q, k, v)
    try:
        w = params["buffers"]["features"]
    except (KeyError, TypeError):
        raise ValueError(
            "performer: params must be init's {'buffers': {'features': [m, Dk]}}"
        ) from None
    b, n, h, dk = q.shape
    m = k.shape[1]
    if w.ndim != 2 or w.shape[1] != dk:
        raise ValueError(f"performer: features {w.shape} do not match head_dim Dk={dk}")
    pad = key_padding_mask(mask, b, h, n, m, "performer")
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    if train and redraw:
        if key is None:
            raise ValueError("performer: train=True with redraw=True needs `key`")
        w = orthogonal_features(key, w.shape[0], dk, acc_t)
    w = jax.lax.stop_gradient(w.astype(acc_t))
    x_scale = dk**-0.25
    phi_q = _query_features(q.astype(acc_t) * x_scale, w)
    phi_k = _key_features(k.astype(acc_t) * x_scale, w, pad)
    kv = jnp.einsum("bmhr,bmhe->bhre", phi_k, v.astype(acc_t))
    z = phi_k.sum(1)  # [B, H, m]
    num = jnp.einsum("bnhr,bhre->bnhe", phi_q, kv)
    den = jnp.einsum("bnhr,bhr->bnh", phi_q, z)
    # den == 0 only when every key is masked (or underflow): return zeros, finite gradients.
    safe = jnp.where(den > 0, den, 1.0)
    out = jnp.where((den > 0)[..., None], num / safe[..., None], 0.0)
    return out.astype(v.dtype)


_check = registry.int_at_least(num_features=1)


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # r random features: feature logits 2·(n + m)·h·dk·r, then as linear attention with
    # r features: 2·m·h·r·dv + 2·n·h·r·(dv + 1).
    r = hp["num_features"]
    mm = (
        2 * (c.n + c.m) * c.h * c.dk * r + 2 * c.m * c.h * r * c.dv + 2 * c.n * c.h * r * (c.dv + 1)
    )
    ew = (c.n + c.m) * c.h * (3 * c.dk + 5 * r) + c.m * c.h * r * (1 + 2 * c.masked)
    return mm, ew + 2 * c.n * c.h * c.dv


registry.register(
    "performer",
    check=_check,
    apply=apply,
    init=init,
    flops=flops,
    defaults={"num_features": 64, "redraw": False},
    doc="FAVOR+ positive orthogonal random features (Choromanski et al. 2021)",
)
