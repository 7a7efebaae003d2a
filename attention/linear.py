"""Linear attention (Katharopoulos et al., "Transformers are RNNs", ICML 2020, arXiv:2006.16236).

Sec. 3.2, Eq. 5-6: with a positive feature map phi,

    out_i = phi(q_i)^T (sum_j phi(k_j) v_j^T) / (phi(q_i)^T sum_j phi(k_j) + eps)

computed right to left in O((N + M) Dk Dv) time and memory; phi(x) = elu(x) + 1 (Eq. 7) or
relu(x). Sec. 3.3 (Eq. 8-10), causal: the sums run over j <= i (prefix sums). We evaluate them in
blocks of `_CAUSAL_BLOCK` positions: an exact lower-triangular product inside a block plus the
running state S = sum phi(k_j) v_j^T of all earlier blocks, so nothing of size N x M or
N x Dk x Dv is formed.

Masks: key padding only (a `[B, M]` mask, or a 4-D one of shape `[B|1, 1, 1, M]`); a padded key
gets phi(k_j) = 0 so it drops out of both sums. Other 4-D masks do not factorise through the
sums and raise ValueError; causal masking is the `causal` flag. A query whose every key is
masked returns zeros (0 / (0 + eps)). There are no attention probabilities, hence no dropout.
`key_padding_mask` is shared with the other kernelised mechanisms (performer, linformer).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from attention import cost, masks, registry
from attention.softmax import check_qkv

__all__ = ["FEATURE_MAPS", "apply", "flops", "key_padding_mask"]

FEATURE_MAPS = {
    "elu+1": lambda x: jax.nn.elu(x) + 1.0,
    "relu": jax.nn.relu,
}

# Block length of the causal scan: the intra-block product is [.., 64, 64] per block.
_CAUSAL_BLOCK = 64


def key_padding_mask(mask, batch: int, heads: int, n: int, m: int, name: str):
    """The boolean key-padding mask `[B, M]` (True = attend) that `mask` expresses, or None.

    Accepts `[B, M]` or a 4-D mask broadcastable to `[B, H, N, M]` whose head and query axes are
    1. Raises ValueError (naming `name` and the shape) for any mask that varies over heads or
    queries, since kernelised attention can only drop keys from its sums.
    """
    if mask is None:
        return None
    mask = jnp.asarray(mask)
    # Validation only (dtype and shape errors), traced abstractly so that no [B, H, N, M]
    # broadcast is staged into the computation.
    jax.eval_shape(lambda x: masks.as_4d(x, batch, heads, n, m), mask)
    if mask.ndim == 2:
        return mask
    if mask.shape[1] != 1 or mask.shape[2] != 1:
        raise ValueError(
            f"{name} supports key-padding masks only ([B, M] or [B, 1, 1, M]); got a mask of "
            f"shape {mask.shape} that varies over heads or queries"
        )
    return jnp.broadcast_to(mask[:, 0, 0, :], (batch, m))


def _causal(phi_q, phi_k, v, acc_t):
    """Causal numerator `[B, N, H, Dv]` and denominator `[B, N, H]` by blocked prefix sums."""
    b, n, h, f = phi_q.shape
    dv = v.shape[-1]
    c = min(_CAUSAL_BLOCK, n)
    nb = -(-n // c)
    pad = ((0, 0), (0, nb * c - n), (0, 0), (0, 0))
    # Padded keys sit after every real query, so causality already excludes them.
    qb = jnp.pad(phi_q, pad).reshape(b, nb, c, h, f)
    kb = jnp.pad(phi_k, pad).reshape(b, nb, c, h, f)
    vb = jnp.pad(v, pad).reshape(b, nb, c, h, dv)
    tril = jnp.tril(jnp.ones((c, c), bool))
    scores = jnp.einsum("bxihf,bxjhf->bxhij", qb, kb, preferred_element_type=acc_t)
    scores = jnp.where(tril, scores, 0.0)
    num = jnp.einsum("bxhij,bxjhe->bxihe", scores, vb, preferred_element_type=acc_t)
    den = jnp.swapaxes(scores.sum(-1), 2, 3)  # [B, nb, c, H]
    # State of all earlier blocks: exclusive prefix sum over blocks.
    block_kv = jnp.einsum("bxjhf,bxjhe->bxhfe", kb, vb, preferred_element_type=acc_t)
    block_z = kb.sum(2, dtype=acc_t)  # [B, nb, H, F]
    prev_kv = jnp.cumsum(block_kv, axis=1) - block_kv
    prev_z = jnp.cumsum(block_z, axis=1) - block_z
    num = num + jnp.einsum("bxihf,bxhfe->bxihe", qb, prev_kv, preferred_element_type=acc_t)
    den = den + jnp.einsum("bxihf,bxhf->bxih", qb, prev_z, preferred_element_type=acc_t)
    return num.reshape(b, nb * c, h, dv)[:, :n], den.reshape(b, nb * c, h)[:, :n]


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    feature_map: str = "elu+1",
    causal: bool = False,
    eps: float = 1e-6,
):
    """Linear attention with feature map phi.

    Args:
      params: unused (no parameters); `{}`.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: key padding `[B, M]` (or `[B|1, 1, 1, M]`), True = attend; other masks raise.
      key, train: unused (deterministic; no dropout).
      feature_map: "elu+1" (the paper's) or "relu".
      causal: query i attends keys j <= i (needs N == M).
      eps: added to the denominator.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`; computed in float32 (float64 for float64 inputs).
    """
    del params, key, train
    check_qkv(q, k, v)
    if feature_map not in FEATURE_MAPS:
        raise ValueError(
            f"linear: unknown feature_map {feature_map!r}; valid: {', '.join(FEATURE_MAPS)}"
        )
    b, n, h, _ = q.shape
    m = k.shape[1]
    if causal and n != m:
        raise ValueError(f"linear: causal attention needs N == M, got N={n}, M={m}")
    pad = key_padding_mask(mask, b, h, n, m, "linear attention")
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    phi = FEATURE_MAPS[feature_map]
    out_dtype = v.dtype
    phi_q = phi(q.astype(acc_t))
    phi_k = phi(k.astype(acc_t))
    v = v.astype(acc_t)
    if pad is not None:
        phi_k = jnp.where(pad[:, :, None, None], phi_k, 0.0)
    if causal:
        num, den = _causal(phi_q, phi_k, v, acc_t)
    else:
        kv = jnp.einsum("bmhf,bmhe->bhfe", phi_k, v)
        z = phi_k.sum(1)  # [B, H, F]
        num = jnp.einsum("bnhf,bhfe->bnhe", phi_q, kv)
        den = jnp.einsum("bnhf,bhf->bnh", phi_q, z)
    return (num / (den + eps)[..., None]).astype(out_dtype)


_ELU_PLUS_ONE = 4  # elementwise ops of the elu+1 feature map


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Right to left: phi(K)^T V 2·m·h·dk·dv, then phi(Q)·(K^T V) 2·n·h·dk·dv and the
    # normaliser 2·n·h·dk; causal: exact 64-token blocks (2·n·64·h·(dk + dv)) plus the
    # running-state products.
    fm = _ELU_PLUS_ONE if hp["feature_map"] == "elu+1" else 1
    ew = (c.n + c.m) * c.h * c.dk * fm + c.m * c.h * c.dk * (1 + c.masked) + 2 * c.n * c.h * c.dv
    if not hp["causal"]:
        mm = 2 * c.m * c.h * c.dk * c.dv + 2 * c.n * c.h * c.dk * c.dv + 2 * c.n * c.h * c.dk
        return mm, ew
    blk = min(_CAUSAL_BLOCK, c.n)
    n_pad = math.ceil(c.n / blk) * blk
    mm = 2 * n_pad * blk * c.h * (c.dk + c.dv)  # intra-block scores and numerator
    mm += 2 * 2 * n_pad * c.h * c.dk * c.dv + 2 * n_pad * c.h * c.dk  # block states, prefix
    # Causal selects and row sums of the block scores; exclusive prefix sums of the nb block
    # states (a cumsum, which XLA evaluates as a window of nb adds per element, and the
    # subtraction); adding the earlier blocks' contribution.
    nb = n_pad // blk
    states = nb * c.h * c.dk * (c.dv + 1)
    ew += 2 * n_pad * blk * c.h + (nb + 1) * states + n_pad * c.h * (c.dv + 1)
    return mm, ew


registry.register(
    "linear",
    apply=apply,
    flops=flops,
    defaults={"feature_map": "elu+1", "causal": False, "eps": 1e-6},
    doc="linear attention phi(q)(phi(k)^T v), phi = elu+1 or relu (Katharopoulos et al. 2020)",
)
