"""Linformer (Wang et al., "Linformer: Self-Attention with Linear Complexity", 2020,
arXiv:2006.04768).

Sec. 4, Eq. 7: keys and values are projected along the sequence axis by learned
E, F in R^{k x n} (k = `proj_len`), then softmax attention runs over the k projected positions:

    out = softmax(Q (E K)^T / sqrt(Dk)) (F V)          Q: [N, Dk], K, V: [M, D], E K: [k, Dk]

Cost O(N k) instead of O(N M). E and F have `max_len` columns, fixed at init; a sequence of
M < max_len keys uses their first M columns, M > max_len is an error. Sec. 4 "parameter
sharing": E and F are shared by all heads ("headwise"); `share_kv=True` also uses E for the
values ("key-value sharing"), and init then returns E alone.

Init (the paper does not specify one): uniform(+-sqrt(3 / (max_len + k))), i.e. Glorot uniform
with gain 1/sqrt(2), variance 1 / (max_len + k): a projected key of M ~ max_len unit-variance
keys has about unit variance.

Key padding (the paper does not treat it): padded keys and values are zeroed before the
projection, so they add nothing to E K or F V; the k projected positions are always attended.
Unlike softmax, the result then still depends on where the padding sits (through which columns
of E, F meet real keys). A query whose every key is masked returns zeros (E K = F V = 0). Masks
that vary over queries or heads cannot be applied after projecting and raise ValueError.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attention import cost, registry
from attention.linear import key_padding_mask
from attention.softmax import check_qkv

__all__ = ["apply", "flops", "init"]


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    proj_len: int = 32,
    share_kv: bool = False,
):
    """Learned sequence projections.

    Returns:
      `{"E": [proj_len, max_len], "F": [proj_len, max_len]}` float32 (`"F"` absent when
      `share_kv`).

    Raises:
      ValueError: `max_len` missing, or a non-positive `proj_len`.
    """
    del num_heads, head_dim, model_dim, layer_index, num_layers
    if max_len is None:
        raise ValueError("linformer: init needs max_len (E and F have one column per position)")
    if max_len < 1 or proj_len < 1:
        raise ValueError(f"linformer: max_len and proj_len must be >= 1, got {max_len}, {proj_len}")
    limit = (3.0 / (max_len + proj_len)) ** 0.5
    e_key, f_key = jax.random.split(key)
    draw = lambda k_: jax.random.uniform(k_, (proj_len, max_len), jnp.float32, -limit, limit)
    return {"E": draw(e_key)} if share_kv else {"E": draw(e_key), "F": draw(f_key)}


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    dropout_rate: float = 0.0,
    scale: float | None = None,
):
    """Linformer attention.

    Args:
      params: `{"E": [k, max_len]}` and optionally `"F"` (else E projects the values too).
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`, with M <= max_len.
      mask: key padding `[B, M]` (or `[B|1, 1, 1, M]`), True = attend; other masks raise.
      key: PRNG key for attention dropout (needed when `train` and `dropout_rate > 0`).
      train: enables dropout on the `[N, k]` attention probabilities.
      dropout_rate: attention dropout rate.
      scale: logit scale; default `Dk ** -0.5`.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`; computed in float32 (float64 for float64 inputs).
    """
    check_qkv(q, k, v)
    if not isinstance(params, dict) or "E" not in params:
        raise ValueError("linformer: params must be init's {'E': [k, max_len], ('F')}")
    e = params["E"]
    f = params.get("F", e)
    b, n, h, dk = q.shape
    m = k.shape[1]
    max_len = e.shape[1]
    if m > max_len:
        raise ValueError(
            f"linformer: {m} keys exceed max_len={max_len} the projections were initialised for"
        )
    if f.shape != e.shape:
        raise ValueError(f"linformer: E {e.shape} and F {f.shape} must have the same shape")
    pad = key_padding_mask(mask, b, h, n, m, "linformer")
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    out_dtype = v.dtype
    k, v = k.astype(acc_t), v.astype(acc_t)
    if pad is not None:
        k = jnp.where(pad[:, :, None, None], k, 0.0)
        v = jnp.where(pad[:, :, None, None], v, 0.0)
    k_proj = jnp.einsum("rm,bmhd->brhd", e[:, :m].astype(acc_t), k)
    v_proj = jnp.einsum("rm,bmhd->brhd", f[:, :m].astype(acc_t), v)
    scale = dk**-0.5 if scale is None else scale
    logits = jnp.einsum("bnhd,brhd->bhnr", q.astype(acc_t), k_proj) * scale
    probs = jax.nn.softmax(logits, axis=-1)
    if train and dropout_rate > 0.0:
        if key is None:
            raise ValueError("linformer: train=True with dropout_rate > 0 needs `key`")
        keep = jax.random.bernoulli(key, 1.0 - dropout_rate, probs.shape)
        probs = jnp.where(keep, probs / (1.0 - dropout_rate), 0.0)
    return jnp.einsum("bhnr,brhd->bnhd", probs, v_proj).astype(out_dtype)


_check = registry.int_at_least(proj_len=1)


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Sequence projections E K, F V 2·r·m·h·(dk + dv), then softmax over r projected
    # positions 2·n·r·h·(dk + dv).
    r = hp["proj_len"]
    mm = 2 * r * (c.m + c.n) * c.h * (c.dk + c.dv)
    ew = c.n * r * c.h * cost.SOFTMAX + c.masked * 2 * c.m * c.h * (c.dk + c.dv)
    return mm, ew


registry.register(
    "linformer",
    check=_check,
    apply=apply,
    init=init,
    flops=flops,
    defaults={"proj_len": 32, "share_kv": False, "dropout_rate": 0.0, "scale": None},
    doc="low-rank attention: keys/values projected along the sequence to k rows (Wang et al. 2020)",
)
