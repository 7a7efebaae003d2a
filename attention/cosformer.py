"""cosFormer (Qin et al., "cosFormer: Rethinking Softmax in Attention", ICLR 2022,
arXiv:2202.08791).

Sec. 3.3 (Eq. 9): a ReLU feature map keeps every similarity non-negative; Sec. 3.4 (Eq. 10-11)
re-weights the pair (i, j) by cos(pi/2 * (i - j) / M), which concentrates attention on nearby
positions and decomposes by Ptolemy's identity

    cos(a_i - a_j) = cos(a_i) cos(a_j) + sin(a_i) sin(a_j),        a_i = pi/2 * i / M,

so that, with q'_i = relu(q_i), k'_j = relu(k_j) and the 2 Dk-wide features
phi(q_i) = [q'_i sin(a_i), q'_i cos(a_i)], phi(k_j) = [k'_j sin(a_j), k'_j cos(a_j)]:

    s_ij  = q'_i . k'_j cos(pi/2 (i - j) / M) = phi(q_i) . phi(k_j)
    out_i = sum_j s_ij v_j / max(sum_j s_ij, eps)                            (Eq. 11)

computed right to left in O((N + M) Dk Dv) time and memory, never an N x M matrix. Positions
are 1-based (i = 1..N, j = 1..M) and M in the angle is max(N, M), as in the authors' code
(OpenNLPLab/cosFormer, cosformer.py: `get_index`, `m = max(src_len, tgt_len)`); |i - j| < M,
so every weight is in (0, 1]. eps = 1e-6 and the clamp `max(., eps)` of the denominator are
the authors' (`torch.clamp_min(..., eps)`); the paper writes no eps. There is no logit scale
(ReLU features: a scale cancels between numerator and denominator, as in the authors' code).

Causal (`causal=True`, the paper's autoregressive LM, Sec. 4.1): the sums run over j <= i, by
prefix sums evaluated in blocks (`attention.linear`'s blocked scan: an exact lower-triangular
product inside each 64-token block plus the running state of all earlier blocks), so nothing of
size N x N or N x 2Dk x Dv is formed. The authors' causal code forms the N x 2Dk x Dv cumulative
sum; the result is the same.

Key padding (the paper and the authors' code do not treat it): a padded key gets phi(k_j) = 0,
so it drops out of both sums. Which length is M with padding: the padded length (the tensor's
max(N, M)), not each sequence's true length. Reasons: (1) it is what the authors' code computes
on a padded batch; (2) every weight stays in (0, 1] for every pair, padded queries included,
whereas a per-sequence length puts padded positions past a_i = pi/2, where cos turns negative
and a padded query's denominator can vanish; (3) in this benchmark every task pads to its fixed
length, so M is a per-task constant, independent of the batch. The price: the decay of the
re-weighting is relative to the padded length, so the same sequence padded differently gives a
slightly different output (what the authors' code does too).

Masks: key padding only (`[B, M]` or `[B|1, 1, 1, M]`); other 4-D masks raise ValueError (the
causal mask is the `causal` flag). A query whose every key is masked returns zeros (0 / eps).
No attention probabilities are formed, hence no dropout.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from attention import cost, registry
from attention.linear import _CAUSAL_BLOCK, key_padding_mask
from attention.linear import _causal as _blocked_prefix_sums
from attention.softmax import check_qkv

__all__ = ["apply", "flops"]


def _reweighted(x, length: int, total: int):
    """[x sin(a_i), x cos(a_i)] `[B, L, H, 2 Dk]`, a_i = pi/2 * i / total, i = 1..length."""
    angle = (jnp.pi / 2) * jnp.arange(1, length + 1, dtype=x.dtype) / total
    sin, cos = jnp.sin(angle)[None, :, None, None], jnp.cos(angle)[None, :, None, None]
    return jnp.concatenate([x * sin, x * cos], axis=-1)


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    causal: bool = False,
    eps: float = 1e-6,
):
    """cosFormer attention.

    Args:
      params: unused (no parameters); `{}`.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: key padding `[B, M]` (or `[B|1, 1, 1, M]`), True = attend; other masks raise.
      key, train: unused (deterministic; no dropout).
      causal: query i attends keys j <= i (needs N == M).
      eps: lower clamp of the denominator (the authors' 1e-6).

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`; computed in float32 (float64 for float64 inputs).
    """
    del params, key, train
    check_qkv(q, k, v)
    b, n, h, _ = q.shape
    m = k.shape[1]
    if causal and n != m:
        raise ValueError(f"cosformer: causal attention needs N == M, got N={n}, M={m}")
    if not eps > 0:
        raise ValueError(f"cosformer: eps={eps!r} must be positive")
    pad = key_padding_mask(mask, b, h, n, m, "cosformer")
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    total = max(n, m)
    phi_q = _reweighted(jax.nn.relu(q.astype(acc_t)), n, total)
    phi_k = _reweighted(jax.nn.relu(k.astype(acc_t)), m, total)
    vv = v.astype(acc_t)
    if pad is not None:
        phi_k = jnp.where(pad[:, :, None, None], phi_k, 0.0)
    if causal:
        num, den = _blocked_prefix_sums(phi_q, phi_k, vv, acc_t)
    else:
        kv = jnp.einsum("bmhf,bmhe->bhfe", phi_k, vv)
        z = phi_k.sum(1)  # [B, H, 2 Dk]
        num = jnp.einsum("bnhf,bhfe->bnhe", phi_q, kv)
        den = jnp.einsum("bnhf,bhf->bnh", phi_q, z)
    return (num / jnp.maximum(den, eps)[..., None]).astype(v.dtype)


def _check(hp, num_tokens) -> None:
    del num_tokens
    if not isinstance(hp["causal"], bool):
        raise ValueError(f"causal={hp['causal']!r} must be True or False")
    eps = hp["eps"]
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not eps > 0:
        raise ValueError(f"eps={eps!r} must be a positive number (the authors use 1e-6)")


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Features of width f = 2·dk (sin and cos halves). Bidirectional: phi(K)^T V 2·m·h·f·dv,
    # phi(Q)·(K^T V) 2·n·h·f·dv, normaliser 2·n·h·f. Causal: linear's blocked scan with f.
    f = 2 * c.dk
    # relu, the two products by sin and cos, the padding select; clamp and divide.
    ew = (c.n + c.m) * c.h * c.dk * 3 + c.m * c.h * f * c.masked + 2 * c.n * c.h * c.dv
    if not hp["causal"]:
        mm = 2 * c.m * c.h * f * c.dv + 2 * c.n * c.h * f * c.dv + 2 * c.n * c.h * f
        return mm, ew
    blk = min(_CAUSAL_BLOCK, c.n)
    n_pad = math.ceil(c.n / blk) * blk
    nb = n_pad // blk
    mm = 2 * n_pad * blk * c.h * (f + c.dv)  # intra-block scores and numerator
    mm += 2 * 2 * n_pad * c.h * f * c.dv + 2 * n_pad * c.h * f  # block states, prefix
    states = nb * c.h * f * (c.dv + 1)
    ew += 2 * n_pad * blk * c.h + (nb + 1) * states + n_pad * c.h * (c.dv + 1)
    return mm, ew


registry.register(
    "cosformer",
    apply=apply,
    check=_check,
    flops=flops,
    defaults={"causal": False, "eps": 1e-6},
    doc="ReLU linear attention re-weighted by cos(pi/2 (i-j)/M), O(N d^2) (Qin et al. 2022)",
)
