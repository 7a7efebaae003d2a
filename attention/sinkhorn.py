"""Sparse Sinkhorn attention (Tay, Bahri, Yang, Metzler and Juan, "Sparse Sinkhorn Attention",
ICML 2020, arXiv:2002.11296, Sec. 3).

The sequence is cut into N_B = ceil(N / b) blocks of b = `block_size` tokens.

SortNet (Sec. 3, "Learning to sort"): each block is pooled by a sum, psi_P, and a two-layer MLP
with ReLUs, R = relu(relu(psi_P(X) W_P + b_P) W_B + b_B), gives the block-to-block logits
R `[N_B, N_B]` (W_B has `max_blocks` columns, the first N_B are used). Its input: the paper pools
the layer input X; we pool the keys of each block (per head, `[Dk]`), as LRA's code does
(google-research/long-range-arena, lra_benchmarks/models/sinkhorn_transformer/
sinkhorn_attention.py), which gives every head its own sort and needs no extra input.
Parameters per head: W_P `[Dk, Dk]`, b_P `[Dk]`, W_B `[Dk, max_blocks]`, b_B `[max_blocks]`.

Gumbel-Sinkhorn balancing (Sec. 3): log S^0 = (R + g) / tau (Gumbel noise g only in training,
from `key`; none in evaluation), then `sinkhorn_iters` times row then column normalisation in
log space (log S <- log S - logsumexp over the row, then over the column), S = exp(log S):
columns sum to 1 exactly, rows approximately (to a tolerance falling with the iterations).

Attention (Sec. 3, Sinkhorn attention combined with local attention): the sorted block i is
psi_S(K)_i = sum_j S_ij K_j (and likewise for V), and each query of block i attends, with one
softmax, to the b keys of its own block and the b keys of sorted block i:

    out = softmax(scale * q [K_i ; psi_S(K)_i]^T) [V_i ; psi_S(V)_i]

Difference from LRA's code: LRA computes two separately normalised softmaxes (local and sorted)
and adds their outputs, uses one dense layer (no MLP) as SortNet and by default a row softmax
instead of Sinkhorn balancing; we follow the paper (one attention over both blocks, MLP SortNet,
Gumbel-Sinkhorn). SortCut (Sec. 3.4) is not implemented. Causal Sinkhorn balancing is not
implemented: `causal=True` raises ValueError (the sorted blocks would mix future keys).

Masks: none or key padding. A padded key (or a position beyond N in the last block) is left out
of its block's SortNet sum and of every mixture: sorted slot s of block i is
sum_j S_ij m_js K_js (m_js = 0 for a padded key; likewise for V), a slot with no valid key in
any block is masked, so a padded key never receives weight. (Renormalising by sum_j S_ij m_js
was tried and dropped: S underflows for confident sorts and the division's gradient overflows.)
Where S puts weight on padded keys the sorted key and value
shrink towards 0 (as psi_S(K) = S K does in the paper). A query with no valid key in reach returns
zeros. Self-attention only (N == M).

Hyper-parameters: `block_size=50` (LRA's SinkhornTransformerBlock default, not overridden by its
configs); `sinkhorn_iters=5`, `temperature=0.75` (the defaults of the widely used PyTorch port
lucidrains/sinkhorn-transformer; LRA's operator defaults to 1 iteration and tau = 1, and its
models do not call it); `max_blocks=None` sizes W_B for `max_len` tokens.

Complexity: attention O(N * 2b * D); SortNet O(N_B * D * (D + N_B)); Sinkhorn O(iters * N_B^2);
mixing the blocks by the dense S costs O(N_B * N * D) time (N^2 D / b), with O(N * D) memory;
no N x N array.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from attention import cost, registry
from attention.linear import key_padding_mask
from attention.softmax import check_qkv

__all__ = ["apply", "flops", "init", "sinkhorn_balance", "sort_logits"]


def _check(hp, num_tokens) -> None:
    """`check` for the registry."""
    registry.int_at_least(block_size=1, sinkhorn_iters=0)(hp, None)
    if not hp["temperature"] > 0:
        raise ValueError(f"temperature={hp['temperature']!r} must be positive")
    if hp["causal"]:
        raise ValueError(
            "causal=True is not supported: causal Sinkhorn balancing is not implemented; use "
            "causal=False or another mechanism"
        )
    mb = hp["max_blocks"]
    if mb is not None:
        if isinstance(mb, bool) or not isinstance(mb, int) or mb < 1:
            raise ValueError(f"max_blocks={mb!r} must be None or an integer >= 1")
        if num_tokens is not None and math.ceil(num_tokens / hp["block_size"]) > mb:
            raise ValueError(
                f"max_blocks={mb} is fewer than the {math.ceil(num_tokens / hp['block_size'])} "
                f"blocks of {num_tokens} tokens at block_size={hp['block_size']}; raise "
                "max_blocks or block_size"
            )


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    block_size: int = 50,
    max_blocks: int | None = None,
):
    """SortNet parameters (xavier-uniform weights, zero biases), per head."""
    del model_dim, layer_index, num_layers
    if max_blocks is None:
        if max_len is None:
            raise ValueError(
                "sinkhorn: init needs max_len (the token count) when max_blocks=None, to size "
                "the SortNet's output; pass max_len or set max_blocks"
            )
        max_blocks = math.ceil(max_len / block_size)
    k1, k2 = jax.random.split(key)
    init_w = jax.nn.initializers.xavier_uniform(in_axis=-2, out_axis=-1, batch_axis=(0,))
    return {
        "sortnet": {
            "w_p": init_w(k1, (num_heads, head_dim, head_dim), jnp.float32),
            "b_p": jnp.zeros((num_heads, head_dim), jnp.float32),
            "w_b": init_w(k2, (num_heads, head_dim, max_blocks), jnp.float32),
            "b_b": jnp.zeros((num_heads, max_blocks), jnp.float32),
        }
    }


def sort_logits(sortnet, pooled, num_blocks: int):
    """SortNet: pooled block keys `[B, H, N_B, Dk]` -> logits R `[B, H, N_B, N_B]`."""
    t = sortnet
    hid = jax.nn.relu(jnp.einsum("bhxd,hde->bhxe", pooled, t["w_p"]) + t["b_p"][:, None])
    w_b, b_b = t["w_b"][..., :num_blocks], t["b_b"][:, :num_blocks]
    return jax.nn.relu(jnp.einsum("bhxe,hey->bhxy", hid, w_b) + b_b[:, None])


def sinkhorn_balance(log_alpha, iters: int):
    """`iters` row-then-column normalisations in log space; returns S = exp(log_alpha)."""
    for _ in range(iters):
        log_alpha = log_alpha - jax.nn.logsumexp(log_alpha, axis=-1, keepdims=True)
        log_alpha = log_alpha - jax.nn.logsumexp(log_alpha, axis=-2, keepdims=True)
    return jnp.exp(log_alpha)


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    block_size: int = 50,
    sinkhorn_iters: int = 5,
    temperature: float = 0.75,
    causal: bool = False,
    scale: float | None = None,
    sort_matrix=None,
):
    """Sparse Sinkhorn attention (see the module docstring).

    Args:
      params: `{"sortnet": {...}}` from `init`.
      q, k: `[B, N, H, Dk]`; v: `[B, N, H, Dv]` (N == M).
      mask: key padding `[B, N]` (or `[B|1, 1, 1, N]`), True = attend; other masks raise.
      key: PRNG key for the Gumbel noise (needed when `train`).
      train: adds Gumbel noise to the sort logits.
      block_size: tokens per block b.
      sinkhorn_iters: Sinkhorn normalisations.
      temperature: Gumbel-Sinkhorn temperature tau.
      causal: must be False (not implemented).
      scale: logit scale; default `Dk ** -0.5`.
      sort_matrix: optional `[B|1, H|1, N_B, N_B]` matrix used instead of the SortNet's S
        (tests: the identity sort).

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`; computed in float32 (float64 for float64 inputs).
    """
    check_qkv(q, k, v)
    b, n, h, dk = q.shape
    if k.shape[1] != n:
        raise ValueError(f"sinkhorn needs N == M (self-attention), got N={n}, M={k.shape[1]}")
    _check(
        {
            "block_size": block_size,
            "sinkhorn_iters": sinkhorn_iters,
            "temperature": temperature,
            "causal": causal,
            "max_blocks": None,
        },
        n,
    )
    pad = key_padding_mask(mask, b, h, n, n, "sinkhorn")
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    scale = dk**-0.5 if scale is None else scale
    dv = v.shape[-1]
    c = min(block_size, n)
    nb = -(-n // c)
    n_pad = nb * c

    valid = jnp.arange(n_pad) < n
    valid = jnp.broadcast_to(valid, (b, n_pad))
    if pad is not None:
        valid = valid & jnp.pad(pad, ((0, 0), (0, n_pad - n)))
    m = valid.reshape(b, nb, c).astype(acc_t)  # [B, N_B, b]

    def blocks(t):
        t = jnp.pad(t.astype(acc_t), ((0, 0), (0, n_pad - n), (0, 0), (0, 0)))
        return jnp.moveaxis(t.reshape(b, nb, c, h, t.shape[-1]), 3, 1)  # [B, H, N_B, b, D]

    qb, kb, vb = blocks(q), blocks(k), blocks(v)
    mk = m[:, None, :, :, None]  # [B, 1, N_B, b, 1]

    if sort_matrix is None:
        try:
            sortnet = jax.tree.map(lambda t: t.astype(acc_t), params["sortnet"])
        except (KeyError, TypeError):
            raise ValueError("sinkhorn: params must be init's {'sortnet': {...}}") from None
        if sortnet["w_b"].shape[-1] < nb:
            raise ValueError(
                f"sinkhorn: the SortNet has {sortnet['w_b'].shape[-1]} outputs, fewer than the "
                f"{nb} blocks of N={n} at block_size={block_size}; init with max_len >= N"
            )
        pooled = (kb * mk).sum(3)  # [B, H, N_B, Dk]
        logits = sort_logits(sortnet, pooled, nb)
        if train:
            if key is None:
                raise ValueError("sinkhorn: train=True needs `key` (Gumbel noise)")
            logits = logits + jax.random.gumbel(key, logits.shape, acc_t)
        s = sinkhorn_balance(logits / temperature, sinkhorn_iters)
    else:
        s = jnp.broadcast_to(jnp.asarray(sort_matrix, acc_t), (b, h, nb, nb))

    # Sorted block i, slot t: the keys at slot t mixed by row i of S, padded keys zeroed; the
    # slot is valid when some block has a valid key there.
    slot_ok = jnp.broadcast_to(jnp.any(m > 0, axis=1)[:, None, None, :], (b, h, nb, c))
    sk = jnp.einsum("bhij,bhjtd->bhitd", s, kb * mk)
    sv = jnp.einsum("bhij,bhjtd->bhitd", s, vb * mk)

    keys = jnp.concatenate([kb, sk], axis=3)  # [B, H, N_B, 2b, Dk]
    vals = jnp.concatenate([vb, sv], axis=3)
    ok = jnp.concatenate([jnp.broadcast_to(m[:, None] > 0, slot_ok.shape), slot_ok], axis=3)
    ok = ok[..., None, :]  # [B, H, N_B, 1, 2b]
    sc = jnp.einsum("bhxid,bhxjd->bhxij", qb, keys) * scale
    sc = jnp.where(ok, sc, -jnp.inf)
    any_ok = jnp.any(ok, -1, keepdims=True)
    mx = jax.lax.stop_gradient(jnp.where(any_ok, sc.max(-1, keepdims=True), 0.0))
    e = jnp.where(ok, jnp.exp(sc - mx), 0.0)
    den = e.sum(-1, keepdims=True)
    p = e / jnp.where(den > 0, den, 1.0)
    out = jnp.einsum("bhxij,bhxje->bxihe", p, vals)  # [B, N_B, b, H, Dv]
    return out.reshape(b, n_pad, h, dv)[:, :n].astype(v.dtype)


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Blocks of m = min(block_size, n): SortNet 2·N_B·h·dk·(dk + N_B); mixing keys and values
    # by S 2·N_B²·m·h·(dk + dv); attention over 2m keys
    # 2·n_pad·2m·h·(dk + dv).
    m = min(hp["block_size"], c.n)
    nb = math.ceil(c.n / m)
    n_pad = nb * m
    scores = n_pad * 2 * m * c.h
    sortnet = 2 * nb * c.h * c.dk * (c.dk + nb)
    mixing = 2 * nb * nb * m * c.h * (c.dk + c.dv)
    mm = sortnet + mixing + 2 * scores * (c.dk + c.dv)
    # Sinkhorn: ~4 ops per entry per iteration; zeroing padded keys/values.
    ew = (
        scores * (cost.SOFTMAX + 2)
        + 4 * hp["sinkhorn_iters"] * nb * nb * c.h
        + n_pad * c.h * (c.dk + c.dv)
    )
    return mm, ew


registry.register(
    "sinkhorn",
    check=_check,
    apply=apply,
    init=init,
    flops=flops,
    defaults={
        "block_size": 50,
        "sinkhorn_iters": 5,
        "temperature": 0.75,
        "causal": False,
        "max_blocks": None,
        "scale": None,
    },
    doc="Sparse Sinkhorn attention: own block + Sinkhorn-sorted block (Tay et al. 2020)",
)
