"""Memory-efficient softmax attention: chunked queries and keys with a streaming log-sum-exp.

Rabe & Staats, "Self-attention Does Not Need O(n^2) Memory" (2021), Sec. 2-3 (and the same
online-softmax recurrence as FlashAttention, Dao et al. 2022, Sec. 3.1). For one query q and
keys split into chunks c = 1..C, with s_j = q . k_j * scale + bias_j:

    m_c = max(m_{c-1}, max_{j in c} s_j)
    l_c = l_{c-1} * exp(m_{c-1} - m_c) + sum_{j in c} exp(s_j - m_c)
    a_c = a_{c-1} * exp(m_{c-1} - m_c) + sum_{j in c} exp(s_j - m_c) v_j
    out = a_C / l_C            (= softmax(s) @ v exactly, up to float rounding)

Queries are processed `query_chunk` at a time (`jax.lax.map`), keys `key_chunk` at a time
(`jax.lax.scan`), and both bodies are wrapped in `jax.checkpoint`, so neither the forward nor
the backward pass holds more than a `[B, H, query_chunk, key_chunk]` block of scores (Rabe &
Staats Sec. 3: "we checkpoint the chunk computation"). Peak memory is O(N + M) for fixed chunk
sizes; the price is recomputing the scores in the backward pass.

Results equal `softmax` (attention/softmax.py) to float tolerance: same masks (any kind), same
optional additive `bias`, fully masked rows give zeros. Attention dropout is applied per block to
the normalised probabilities (the normaliser l is accumulated from the undropped weights), so it
has the same distribution as `softmax`'s dropout, but not the same random bits.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from attention import cost, masks, registry
from attention.softmax import check_qkv

__all__ = ["apply", "flops"]


def _as_broadcastable_4d(x, target, what: str):
    """`x` reshaped to 4-D with every axis either 1 or the target size (not broadcast, so a key
    padding mask or a per-head bias stays small). Raises ValueError naming the shapes."""
    x = jnp.asarray(x)
    if x.ndim > 4:
        raise ValueError(f"{what} must broadcast to [B, H, N, M] = {target}, got {x.shape}")
    x = x.reshape((1,) * (4 - x.ndim) + x.shape)
    if any(s not in (1, t) for s, t in zip(x.shape, target, strict=True)):
        raise ValueError(f"{what} of shape {x.shape} does not broadcast to [B, H, N, M] = {target}")
    return x


def _pad_axis(x, axis: int, size: int, value):
    """Pads axis `axis` of `x` up to `size` with `value` (no-op on broadcast axes of size 1)."""
    if x.shape[axis] in (1, size):
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, size - x.shape[axis])
    return jnp.pad(x, widths, constant_values=value)


def _block(x, axis: int, index, size: int):
    """The chunk `index` (of length `size`) of `x` along `axis`, or `x` if that axis is 1."""
    if x is None or x.shape[axis] == 1:
        return x
    return jax.lax.dynamic_slice_in_dim(x, index * size, size, axis=axis)


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
    query_chunk: int = 512,
    key_chunk: int = 1024,
):
    """Softmax attention computed chunk by chunk (memory O(N + M) for fixed chunk sizes).

    Args:
      params: unused (the mechanism has no parameters); `{}`.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: boolean, broadcastable to `[B, H, N, M]`, or key padding `[B, M]`; True = attend.
        Kept at its own shape and sliced per chunk, so a key padding mask costs O(M).
      key: PRNG key for attention dropout (needed when `train` and `dropout_rate > 0`).
      train: enables attention dropout.
      bias: optional additive logit bias broadcastable to `[B, H, N, M]`.
      dropout_rate: dropout on the attention probabilities during training.
      scale: logit scale; default `Dk ** -0.5`.
      query_chunk: queries per block (clipped to N); N is padded up to a multiple of it.
      key_chunk: keys per block (clipped to M); M is padded up to a multiple of it.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`, equal to `softmax.apply` up to rounding. Scores and
      the running statistics are float32 (float64 when the inputs are).
    """
    del params
    check_qkv(q, k, v)
    for name, size in (("query_chunk", query_chunk), ("key_chunk", key_chunk)):
        if not isinstance(size, int | np.integer) or size < 1:
            raise ValueError(f"softmax_chunked: {name} must be a positive int, got {size!r}")
    if not 0.0 <= dropout_rate < 1.0:
        raise ValueError(f"softmax_chunked: dropout_rate must be in [0, 1), got {dropout_rate}")
    use_dropout = train and dropout_rate > 0.0
    if use_dropout and key is None:
        raise ValueError("softmax_chunked: train=True with dropout_rate > 0 needs `key`")
    b, n, h, dk = q.shape
    m, dv = k.shape[1], v.shape[-1]
    scale = dk**-0.5 if scale is None else scale
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    target = (b, h, n, m)

    if mask is not None:
        mask = jnp.asarray(mask)
        # Validation only (as_4d names the problem), traced abstractly: no [B, H, N, M] broadcast.
        jax.eval_shape(lambda x: masks.as_4d(x, *target), mask)
        mask = _as_broadcastable_4d(
            mask[:, None, None, :] if mask.ndim == 2 else mask, target, "attention mask"
        )
    if bias is not None:
        bias = _as_broadcastable_4d(bias, target, "bias").astype(acc_t)

    qc, kc = min(query_chunk, n), min(key_chunk, m)
    nq, nk = -(-n // qc), -(-m // kc)
    n_pad, m_pad = nq * qc, nk * kc
    q = jnp.pad(q, ((0, 0), (0, n_pad - n), (0, 0), (0, 0)))
    k = jnp.pad(k, ((0, 0), (0, m_pad - m), (0, 0), (0, 0)))
    v = jnp.pad(v, ((0, 0), (0, m_pad - m), (0, 0), (0, 0)))
    if mask is not None:
        mask = _pad_axis(_pad_axis(mask, 2, n_pad, True), 3, m_pad, False)
    if bias is not None:
        bias = _pad_axis(_pad_axis(bias, 2, n_pad, 0.0), 3, m_pad, 0.0)
    # Keys added by padding must be excluded; real keys need no per-element test.
    key_valid = (jnp.arange(m_pad) < m) if m_pad != m else None

    # Chunk-major layouts for scan/map: [chunks, B, chunk, H, D].
    q_chunks = jnp.moveaxis(q.reshape(b, nq, qc, h, dk), 1, 0)
    k_chunks = jnp.moveaxis(k.reshape(b, nk, kc, h, dk), 1, 0)
    v_chunks = jnp.moveaxis(v.reshape(b, nk, kc, h, dv), 1, 0)

    def query_block(args):
        qi, i = args
        mask_i = _block(mask, 2, i, qc)
        bias_i = _block(bias, 2, i, qc)

        def key_step(carry, xs):
            run_max, denom, acc = carry
            kj, vj, j = xs
            s = jnp.einsum("bqhd,bkhd->bhqk", qi, kj, preferred_element_type=acc_t) * scale
            if bias_i is not None:
                s = s + _block(bias_i, 3, j, kc)
            valid = _block(mask_i, 3, j, kc)
            if key_valid is not None:
                kv = jax.lax.dynamic_slice_in_dim(key_valid, j * kc, kc)
                valid = kv if valid is None else valid & kv
            if valid is None:
                s_max = s.max(-1)
            else:
                valid = jnp.broadcast_to(valid, s.shape)
                s_max = jnp.where(valid, s, -jnp.inf).max(-1)
            # The shift cancels in a / l, so it carries no gradient (exactly).
            new_max = jax.lax.stop_gradient(jnp.maximum(run_max, s_max))
            # -inf while no key has been seen yet: shift by 0 instead (avoids inf - inf).
            shift = jnp.where(jnp.isfinite(new_max), new_max, 0.0)
            rescale = jnp.where(jnp.isfinite(run_max), jnp.exp(run_max - shift), 0.0)
            if valid is None:
                p = jnp.exp(s - shift[..., None])
            else:
                # Masked scores are replaced before exp so that no inf appears even in the
                # unselected branch (its cotangent is 0, and 0 * inf = NaN).
                safe_s = jnp.where(valid, s, shift[..., None])
                p = jnp.where(valid, jnp.exp(safe_s - shift[..., None]), 0.0)
            denom = denom * rescale + p.sum(-1)
            if use_dropout:
                block_key = jax.random.fold_in(jax.random.fold_in(key, i), j)
                keep = jax.random.bernoulli(block_key, 1.0 - dropout_rate, p.shape)
                p = jnp.where(keep, p / (1.0 - dropout_rate), 0.0)
            pv = jnp.einsum("bhqk,bkhd->bhqd", p.astype(v.dtype), vj, preferred_element_type=acc_t)
            return (new_max, denom, acc * rescale[..., None] + pv), None

        init = (
            jnp.full((b, h, qc), -jnp.inf, acc_t),
            jnp.zeros((b, h, qc), acc_t),
            jnp.zeros((b, h, qc, dv), acc_t),
        )
        (_, denom, acc), _ = jax.lax.scan(
            jax.checkpoint(key_step), init, (k_chunks, v_chunks, jnp.arange(nk))
        )
        # Fully masked rows have denom == 0: return zeros, and keep the gradient finite.
        safe = jnp.where(denom > 0, denom, 1.0)
        out = jnp.where((denom > 0)[..., None], acc / safe[..., None], 0.0)
        return jnp.transpose(out, (0, 2, 1, 3))  # [B, qc, H, Dv]

    out = jax.lax.map(jax.checkpoint(query_block), (q_chunks, jnp.arange(nq)))
    out = jnp.moveaxis(out, 0, 1).reshape(b, n_pad, h, dv)[:, :n]
    return out.astype(v.dtype)


_check = registry.int_at_least(query_chunk=1, key_chunk=1)


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Softmax's 4·n·m·h·d on N, M padded up to multiples of the chunks; plus the streaming
    # rescale of the accumulator once per (query chunk, key chunk).
    qc, kc = min(hp["query_chunk"], c.n), min(hp["key_chunk"], c.m)
    n_pad, m_pad = math.ceil(c.n / qc) * qc, math.ceil(c.m / kc) * kc
    scores = n_pad * m_pad * c.h
    rescale = n_pad * c.h * (c.dv + 2) * 2 * (m_pad // kc)
    ew = scores * (cost.SOFTMAX + 1 + 2 * c.masked) + rescale + c.n * c.h * c.dv
    return 2 * scores * (c.dk + c.dv), ew


registry.register(
    "softmax_chunked",
    check=_check,
    apply=apply,
    flops=flops,
    # 512 x 1024 float32 scores per (batch, head) block: 2 MiB, large enough for efficient
    # matmuls, small enough that N = 16k stays far from N x N memory.
    defaults={"dropout_rate": 0.0, "scale": None, "query_chunk": 512, "key_chunk": 1024},
    doc="memory-efficient softmax attention (chunked, streaming log-sum-exp; Rabe & Staats 2021)",
    inputs=("bias",),
)
