"""Local (sliding-window) softmax attention.

Query i attends keys j with |i - j| <= w (w = `window`; causal: 0 <= i - j <= w), the "local
attention" baseline of the Long Range Arena (Tay et al. 2021, Sec. 3) and the sliding window of
Longformer (Beltagy et al. 2020, Sec. 3.1):

    out_i = sum_{j : |i - j| <= w} softmax_j(q_i . k_j * scale) v_j

Blocked so cost and memory are O(N w), never an N x N matrix: positions are cut into blocks of
c = max(w, 1) (or N if shorter); a query in block x can only reach keys in blocks x-1, x, x+1
(x-1, x when causal), so each block scores `[c, 3c]` keys and the band is masked exactly inside
that tile. The band's shape inside a tile depends only on the offset i - j, so it is one static
`[c, 3c]` pattern.

Masks: all kinds. A key-padding mask is tiled like the keys; a 4-D mask is read only inside the
band (gathered per tile), so it costs nothing beyond its own storage. A query whose every key in
reach is masked returns zeros. Self-attention layout only: N == M.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from attention import cost, masks, registry
from attention.softmax import check_qkv

__all__ = ["apply", "flops"]


def _tile_mask(mask, n: int, c: int, nb: int, span: int):
    """Gathers a boolean mask (4-D, each axis 1 or full) into tiles `[B', H', nb, c|1, span*c|1]`.

    Tile x holds queries x*c .. x*c+c-1 and keys x*c-c .. x*c-c+span*c-1.
    """
    n_pad = nb * c
    rows = np.arange(nb)[:, None] * c + np.arange(c)[None, :]  # [nb, c] query positions
    # Key positions shifted by the c-long left padding: [nb, span*c].
    cols = np.arange(nb)[:, None] * c + np.arange(span * c)[None, :]
    per_query, per_key = mask.shape[2] != 1, mask.shape[3] != 1
    if per_query:
        mask = jnp.pad(mask, ((0, 0), (0, 0), (0, n_pad - n), (0, 0)), constant_values=True)
    if per_key:
        # The keys' padding: one block left, up to a whole block plus one right.
        mask = jnp.pad(mask, ((0, 0), (0, 0), (0, 0), (c, n_pad - n + c)), constant_values=False)
    if per_query and per_key:
        return mask[:, :, rows[:, :, None], cols[:, None, :]]
    if per_key:
        return mask[:, :, 0][:, :, cols][:, :, :, None, :]
    if per_query:
        return mask[:, :, rows, 0][..., None]
    return mask[:, :, :, :, None]


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    window: int = 4,
    causal: bool = False,
    dropout_rate: float = 0.0,
    scale: float | None = None,
):
    """Sliding-window softmax attention, O(N * window).

    Args:
      params: unused (no parameters); `{}`.
      q: `[B, N, H, Dk]`; k: `[B, N, H, Dk]`; v: `[B, N, H, Dv]` (N == M).
      mask: boolean, broadcastable to `[B, H, N, N]`, or key padding `[B, N]`; True = attend.
        Combined with the window.
      key: PRNG key for attention dropout (needed when `train` and `dropout_rate > 0`).
      train: enables attention dropout.
      window: keys at most `window` positions away are attended (>= 0).
      causal: only keys at or before the query (i - window <= j <= i).
      dropout_rate: dropout on the attention probabilities during training.
      scale: logit scale; default `Dk ** -0.5`.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`; logits in float32 (float64 for float64 inputs).
    """
    del params
    check_qkv(q, k, v)
    b, n, h, dk = q.shape
    if k.shape[1] != n:
        raise ValueError(
            f"local attention needs N == M (self-attention), got N={n}, M={k.shape[1]}"
        )
    if not isinstance(window, int | np.integer) or window < 0:
        raise ValueError(f"local: window must be an int >= 0, got {window!r}")
    if mask is not None:
        mask = jnp.asarray(mask)
        # Validation only (as_4d names the problem), traced abstractly: no [B, H, N, N] broadcast.
        jax.eval_shape(lambda x: masks.as_4d(x, b, h, n, n), mask)
        mask = mask[:, None, None, :] if mask.ndim == 2 else mask
    dv = v.shape[-1]
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    scale = dk**-0.5 if scale is None else scale

    c = min(max(window, 1), n)
    nb = -(-n // c)
    n_pad = nb * c
    span = 2 if causal else 3
    q = jnp.pad(q, ((0, 0), (0, n_pad - n), (0, 0), (0, 0)))
    # One block of padding on each side, so tile x can take blocks x, x+1, x+2 of the padded keys.
    kv_pad = ((0, 0), (c, n_pad - n + c), (0, 0), (0, 0))
    kb = jnp.pad(k, kv_pad).reshape(b, nb + 2, c, h, dk)
    vb = jnp.pad(v, kv_pad).reshape(b, nb + 2, c, h, dv)
    kb = jnp.concatenate([kb[:, s : s + nb] for s in range(span)], axis=2)  # [B, nb, span*c, H, Dk]
    vb = jnp.concatenate([vb[:, s : s + nb] for s in range(span)], axis=2)
    qb = q.reshape(b, nb, c, h, dk)

    # Static structure: offset i - j = c + r - s inside every tile; real keys 0 <= j < n.
    offset = c + np.arange(c)[:, None] - np.arange(span * c)[None, :]
    band = (offset >= 0) & (offset <= window) if causal else np.abs(offset) <= window
    key_pos = np.arange(nb)[:, None] * c - c + np.arange(span * c)[None, :]
    valid = band[None] & ((key_pos >= 0) & (key_pos < n))[:, None, :]  # [nb, c, span*c]
    valid = jnp.asarray(valid)
    if mask is not None:
        valid = valid & _tile_mask(mask, n, c, nb, span)  # [B|1, H|1, nb, c, span*c]

    logits = jnp.einsum("bxihd,bxjhd->bhxij", qb, kb, preferred_element_type=acc_t) * scale
    logits = jnp.where(valid, logits, jnp.finfo(acc_t).min)
    probs = jax.nn.softmax(logits, axis=-1)
    # Zeroes rows with no key in reach (softmax of an all-min row is uniform, not zero).
    probs = jnp.where(valid, probs, 0.0)
    if train and dropout_rate > 0.0:
        if key is None:
            raise ValueError("local: train=True with dropout_rate > 0 needs `key`")
        keep = jax.random.bernoulli(key, 1.0 - dropout_rate, probs.shape)
        probs = jnp.where(keep, probs / (1.0 - dropout_rate), 0.0)
    out = jnp.einsum("bhxij,bxjhe->bxihe", probs.astype(v.dtype), vb, preferred_element_type=acc_t)
    return out.reshape(b, n_pad, h, dv)[:, :n].astype(v.dtype)


_check = registry.int_at_least(window=0)


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Computed, not only attended: blocks of b = max(window, 1) queries score span·b keys
    # (span 3, causal 2), 2·n·span·b·h·(dk + dv) with n padded to whole blocks; the band
    # |i - j| <= window itself is only (2·window + 1) keys per query.
    blk = min(max(hp["window"], 1), c.n)
    n_pad = math.ceil(c.n / blk) * blk
    scores = n_pad * (2 if hp["causal"] else 3) * blk * c.h
    return 2 * scores * (c.dk + c.dv), scores * (cost.SOFTMAX + 2)


registry.register(
    "local",
    check=_check,
    apply=apply,
    flops=flops,
    defaults={"window": 4, "causal": False, "dropout_rate": 0.0, "scale": None},
    doc="sliding-window softmax attention, |i - j| <= window, blocked O(N * window)",
)
