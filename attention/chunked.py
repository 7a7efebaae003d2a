"""Memory-efficient softmax attention: chunked queries and keys, a streaming log-sum-exp forward
and a FlashAttention-2 backward that recomputes each block.

Forward (Rabe & Staats, "Self-attention Does Not Need O(n^2) Memory", 2021, Sec. 2-3; the same
online-softmax recurrence as FlashAttention, Dao et al. 2022, Sec. 3.1). For one query q and
keys split into chunks c = 1..C, with s_j = q . k_j * scale + bias_j:

    m_c = max(m_{c-1}, max_{j in c} s_j)
    l_c = l_{c-1} * exp(m_{c-1} - m_c) + sum_{j in c} exp(s_j - m_c)
    a_c = a_{c-1} * exp(m_{c-1} - m_c) + sum_{j in c} exp(s_j - m_c) v_j
    out = a_C / l_C,   lse = m_C + log l_C

Queries are processed `query_chunk` at a time (`jax.lax.map`), keys `key_chunk` at a time
(`jax.lax.scan`). The forward keeps only `out` and the per-query `lse` for the backward.

Backward (`jax.custom_vjp`; FlashAttention-2, Dao 2023, Sec. 3.1.2 / Algorithm 2): no autodiff
runs through the loops. With D_i = rowsum(dO_i * O_i), each (query block, key block) recomputes

    P = exp(S - lse),  dV += P^T dO,  dP = dO V^T,  dS = P * (dP - D),
    dQ += dS K * scale,  dK += dS^T Q * scale,  dbias += dS

so neither pass holds more than a few `[B, H, query_chunk, key_chunk]` blocks: memory is
O(N + M) for fixed chunk sizes (plus the bias and mask, which are kept at their own, possibly
broadcast, shapes). The price is computing the scores twice, as FlashAttention does.

Results equal `softmax` (attention/softmax.py) to float tolerance, values and gradients: same
masks (any kind), same optional additive `bias` (differentiable), fully masked rows give zero
output and zero gradient. Attention dropout is applied per block to the normalised
probabilities (the normaliser l is accumulated from the undropped weights); the keep mask of
block (i, j) is drawn from `fold_in(fold_in(key, i), j)`, and the backward draws it again from
the same key, so it has the same distribution as `softmax`'s dropout but not the same random
bits (a deliberate difference: regenerating one `[B, H, N, M]` draw block by block would need
the whole draw).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from attention import cost, masks, registry
from attention.softmax import check_qkv

__all__ = ["apply", "flops", "QUERY_CHUNK", "KEY_CHUNK"]

# Default block: 256 x 256 scores per (batch, head), 256 KiB in float32 (2 MiB for 8 heads, about
# a core's L2). Measured on a 2-core CPU at B1 H8 D64, 1k-4k tokens (forward + backward):
# faster than 512 x 1024 (the earlier default) by 20-50%, and within noise of 128..512-wide
# blocks; at H1, 16k tokens as fast as 512 x 1024.
QUERY_CHUNK = 256
KEY_CHUNK = 256


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


@dataclasses.dataclass(frozen=True)
class _Plan:
    """The static description of one call: chunking, scale, dropout, dtypes."""

    scale: float
    qc: int  # queries per block
    kc: int  # keys per block
    nq: int  # query blocks
    nk: int  # key blocks
    m: int  # real keys (M before padding)
    mask_keys: bool  # padded keys must be masked explicitly (the mask does not cover them)
    rate: float  # attention dropout rate (0: none)
    acc: np.dtype  # scores and statistics


def _scores(plan: _Plan, qi, kj, bias_i, mask_i, j):
    """Scores of query block `qi [B, H, qc, Dk]` against key block `kj [B, H, kc, Dk]` (block
    index j), `[B, H, qc, kc]`, with -inf where a pair is masked (or a key is padding)."""
    s = jnp.einsum("bhqd,bhkd->bhqk", qi, kj, preferred_element_type=plan.acc) * plan.scale
    if bias_i is not None:
        s = s + _block(bias_i, 3, j, plan.kc)
    valid = _block(mask_i, 3, j, plan.kc)
    if plan.mask_keys:
        real = j * plan.kc + jnp.arange(plan.kc) < plan.m
        valid = real if valid is None else valid & real
    if valid is not None:
        s = jnp.where(valid, s, -jnp.inf)
    return s


def _dropout_keep(plan: _Plan, key, i, j, shape):
    """The keep mask of block (i, j): the same bits in the forward and the backward pass."""
    block_key = jax.random.fold_in(jax.random.fold_in(key, i), j)
    return jax.random.bernoulli(block_key, 1.0 - plan.rate, shape)


def _forward(plan: _Plan, qb, kb, vb, bias, mask, key):
    """`(out [nq, B, H, qc, Dv], lse [nq, B, H, qc])`, out in `plan.acc`; lse = +inf (and out
    = 0) for a query whose every key is masked."""
    b, h, dv = qb.shape[1], qb.shape[2], vb.shape[-1]

    def query_block(args):
        qi, i = args
        mask_i = _block(mask, 2, i, plan.qc)
        bias_i = _block(bias, 2, i, plan.qc)

        def key_step(carry, xs):
            run_max, denom, acc = carry
            kj, vj, j = xs
            s = _scores(plan, qi, kj, bias_i, mask_i, j)
            new_max = jnp.maximum(run_max, s.max(-1))
            # -inf while no key has been seen yet: shift by 0 (exp(-inf - 0) = 0, no inf - inf).
            shift = jnp.where(new_max == -jnp.inf, 0.0, new_max)
            rescale = jnp.exp(run_max - shift)
            p = jnp.exp(s - shift[..., None])  # masked pairs: exp(-inf) = 0
            denom = denom * rescale + p.sum(-1)
            if plan.rate > 0.0:
                keep = _dropout_keep(plan, key, i, j, p.shape)
                p = jnp.where(keep, p / (1.0 - plan.rate), 0.0)
            pv = jnp.einsum(
                "bhqk,bhkd->bhqd", p.astype(vj.dtype), vj, preferred_element_type=plan.acc
            )
            return (new_max, denom, acc * rescale[..., None] + pv), None

        init = (
            jnp.full((b, h, plan.qc), -jnp.inf, plan.acc),
            jnp.zeros((b, h, plan.qc), plan.acc),
            jnp.zeros((b, h, plan.qc, dv), plan.acc),
        )
        (run_max, denom, acc), _ = jax.lax.scan(key_step, init, (kb, vb, jnp.arange(plan.nk)))
        live = denom > 0
        safe = jnp.where(live, denom, 1.0)
        out = jnp.where(live[..., None], acc / safe[..., None], 0.0)
        lse = jnp.where(live, run_max + jnp.log(safe), jnp.inf)
        return out, lse

    return jax.lax.map(query_block, (qb, jnp.arange(plan.nq)))


def _reduce_to(x, shape):
    """`x` summed (keepdims) over the axes where `shape` is 1 and `x` is not."""
    axes = tuple(a for a, (s, t) in enumerate(zip(x.shape, shape, strict=True)) if t == 1 != s)
    return x.sum(axes, keepdims=True) if axes else x


def _backward(plan: _Plan, res, dout):
    """Cotangents `(dq, dk, dv, dbias)` of `_forward`'s `out`, recomputing every block
    (FlashAttention-2's backward; module docstring). All in `plan.acc`."""
    qb, kb, vb, bias, mask, key, out, lse = res
    dout = dout.astype(plan.acc)
    delta = (dout * out).sum(-1)  # D_i = rowsum(dO_i * O_i): [nq, B, H, qc]
    if bias is not None:
        bb, hb, nb, mb = bias.shape
        rows, cols = nb > 1, mb > 1  # the bias varies along the queries / the keys
        g_block = (bb, hb, plan.qc if rows else 1, plan.kc if cols else 1)
        g_row_shape = (bb, hb, plan.qc if rows else 1, mb)

    def query_block(carry, xs):
        dk_acc, dv_acc, dbias_sum = carry
        qi, doi, lse_i, delta_i, i = xs
        mask_i = _block(mask, 2, i, plan.qc)
        bias_i = _block(bias, 2, i, plan.qc)

        def key_step(carry, xs):
            dq_i, g_sum = carry
            kj, vj, j = xs
            s = _scores(plan, qi, kj, bias_i, mask_i, j)
            p = jnp.exp(s - lse_i[..., None])  # masked pairs and empty rows: exp(-inf) = 0
            dp = jnp.einsum("bhqd,bhkd->bhqk", doi, vj, preferred_element_type=plan.acc)
            p_used = p
            if plan.rate > 0.0:
                keep = _dropout_keep(plan, key, i, j, p.shape)
                p_used = jnp.where(keep, p / (1.0 - plan.rate), 0.0)
                dp = jnp.where(keep, dp / (1.0 - plan.rate), 0.0)
            dv_j = jnp.einsum("bhqk,bhqd->bhkd", p_used, doi, preferred_element_type=plan.acc)
            ds = p * (dp - delta_i[..., None])
            dq_i = dq_i + jnp.einsum("bhqk,bhkd->bhqd", ds, kj, preferred_element_type=plan.acc)
            dk_j = jnp.einsum("bhqk,bhqd->bhkd", ds, qi, preferred_element_type=plan.acc)
            g_out = None
            if bias is not None:
                g = _reduce_to(ds, g_block)
                if cols:
                    g_out = g
                else:
                    g_sum = g_sum + g
            return (dq_i, g_sum), (dk_j * plan.scale, dv_j, g_out)

        init = (
            jnp.zeros(qi.shape, plan.acc),
            None if bias is None or cols else jnp.zeros(g_block, plan.acc),
        )
        (dq_i, g_sum), (dk_i, dv_i, g_stack) = jax.lax.scan(
            key_step, init, (kb, vb, jnp.arange(plan.nk))
        )
        g_row = None
        if bias is not None:
            # [nk, Bb, Hb, qc|1, kc] -> [Bb, Hb, qc|1, M]; or the sum over the key blocks.
            g_row = jnp.moveaxis(g_stack, 0, 3).reshape(g_row_shape) if cols else g_sum
            if not rows:
                dbias_sum = dbias_sum + g_row
        carry = (dk_acc + dk_i, dv_acc + dv_i, dbias_sum)
        return carry, (dq_i * plan.scale, g_row if bias is not None and rows else None)

    init = (
        jnp.zeros(kb.shape, plan.acc),
        jnp.zeros(vb.shape, plan.acc),
        None if bias is None or rows else jnp.zeros(g_row_shape, plan.acc),
    )
    xs = (qb, dout, lse, delta, jnp.arange(plan.nq))
    (dk, dv, dbias_sum), (dq, g_rows) = jax.lax.scan(query_block, init, xs)
    dbias = None
    if bias is not None:
        dbias = jnp.moveaxis(g_rows, 0, 2).reshape(bias.shape) if rows else dbias_sum
        dbias = dbias.astype(bias.dtype)
    return dq.astype(qb.dtype), dk.astype(kb.dtype), dv.astype(vb.dtype), dbias


def _flash(plan: _Plan):
    """The chunked attention of `plan` as a `jax.custom_vjp` function
    `(qb, kb, vb, bias, mask, key) -> out`; mask and key get no cotangent."""

    @jax.custom_vjp
    def attend(qb, kb, vb, bias, mask, key):
        return _forward(plan, qb, kb, vb, bias, mask, key)[0]

    def attend_fwd(qb, kb, vb, bias, mask, key):
        out, lse = _forward(plan, qb, kb, vb, bias, mask, key)
        return out, (qb, kb, vb, bias, mask, key, out, lse)

    def attend_bwd(res, dout):
        return (*_backward(plan, res, dout), None, None)

    attend.defvjp(attend_fwd, attend_bwd)
    return attend


def _chunk_major(x, chunks: int, size: int):
    """`[B, L, H, D]` (L = chunks * size) -> `[chunks, B, H, size, D]`."""
    b, _, h, d = x.shape
    return x.reshape(b, chunks, size, h, d).transpose(1, 0, 3, 2, 4)


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
    query_chunk: int = QUERY_CHUNK,
    key_chunk: int = KEY_CHUNK,
):
    """Softmax attention computed chunk by chunk (memory O(N + M) for fixed chunk sizes, in the
    forward and, through the custom backward, in the gradient).

    Args:
      params: unused (the mechanism has no parameters); `{}`.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: boolean, broadcastable to `[B, H, N, M]`, or key padding `[B, M]`; True = attend.
        Kept at its own shape and sliced per chunk, so a key padding mask costs O(M).
      key: PRNG key for attention dropout (needed when `train` and `dropout_rate > 0`).
      train: enables attention dropout.
      bias: optional additive logit bias broadcastable to `[B, H, N, M]` (differentiable).
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
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
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

    qc, kc = int(min(query_chunk, n)), int(min(key_chunk, m))
    nq, nk = -(-n // qc), -(-m // kc)
    n_pad, m_pad = nq * qc, nk * kc
    q = jnp.pad(q, ((0, 0), (0, n_pad - n), (0, 0), (0, 0)))
    k = jnp.pad(k, ((0, 0), (0, m_pad - m), (0, 0), (0, 0)))
    v = jnp.pad(v, ((0, 0), (0, m_pad - m), (0, 0), (0, 0)))
    if mask is not None:
        mask = _pad_axis(_pad_axis(mask, 2, n_pad, True), 3, m_pad, False)
    if bias is not None:
        bias = _pad_axis(_pad_axis(bias, 2, n_pad, 0.0), 3, m_pad, 0.0)
    plan = _Plan(
        scale=scale,
        qc=qc,
        kc=kc,
        nq=nq,
        nk=nk,
        m=m,
        # Keys added by padding must be excluded unless the mask (padded with False) covers them.
        mask_keys=m_pad != m and (mask is None or mask.shape[3] == 1),
        rate=float(dropout_rate) if use_dropout else 0.0,
        acc=np.dtype(acc_t),
    )
    out = _flash(plan)(
        _chunk_major(q, nq, qc),
        _chunk_major(k, nk, kc),
        _chunk_major(v, nk, kc),
        bias,
        mask,
        key if use_dropout else None,
    )
    out = out.transpose(1, 0, 3, 2, 4).reshape(b, n_pad, h, dv)[:, :n]
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
    defaults={
        "dropout_rate": 0.0,
        "scale": None,
        "query_chunk": QUERY_CHUNK,
        "key_chunk": KEY_CHUNK,
    },
    doc="memory-efficient softmax attention (chunked, streaming log-sum-exp, flash backward)",
    inputs=("bias",),
)
