"""Sinkformer attention (Sander, Ablin, Blondel and Peyré, "Sinkformers: Transformers with
Doubly Stochastic Attention", AISTATS 2022, arXiv:2110.11773).

Sec. 2-3: the softmax kernel K = exp(Q K^T / sqrt(d)) is balanced by Sinkhorn's algorithm
(alternate row and column normalisations) towards a doubly stochastic matrix, which replaces
the row-stochastic softmax matrix. In the log domain, with L = Q K^T * scale (scale =
Dk^-1/2 by default) and potentials f `[N]`, g `[M]` starting at 0, iteration t = 1..T does

    t odd  (rows):     f_i = -log sum_j exp(L_ij + g_j)                  (rows sum to 1)
    t even (columns):  g_j = log c - log sum_i exp(L_ij + f_i)           (columns sum to c)
    P = exp(L + f + g),    out_i = sum_j P_ij v_j

with c = N / M (1 for self-attention; the total mass N of row-stochastic rows spread evenly
over the columns). T = `sinkhorn_iters`. With T = 1 only the row step runs, so P is the softmax
matrix and the Sinkformer is the Transformer (the paper's remark in Sec. 3 and the authors'
README: "1 iteration in Sinkhorn corresponds to the original Transformer"); as T grows, P
converges to the doubly stochastic scaling of K (Sinkhorn's theorem; K > 0 has one).

The authors' code (michaelsdr/sinkformers, `SinkhornDistance` in `vit-pytorch/vit_pytorch/
sinkhorn.py` and `nlp-tutorial/.../sinkhorn.py`, used by their ViT and text models) runs the
same log-domain updates with eps = 1, starting with a row update (`i % 2 == 0` updates u,
the rows), marginals 1/N_q and 1/N_k, and multiplies the plan by N_k; so an odd number of
iterations ends with rows normalised, an even number with columns normalised, exactly as here.
Their defaults: n_it = 3 for the ViT cats-and-dogs and IMDb text experiments
(`vit-pytorch/one_expe.py`, `nlp-tutorial/text-classification-transformer/one_expe.py`),
5 for ViT MNIST, 7 for ModelNet40 (`set_transformer/one_expe.py`); our default is 3. The
paper has no Long Range Arena experiments, so no LRA settings exist; 3 is used there too.

Deliberate differences from the authors' code, with reasons:
  * Their plan has rows summing to N_k / N_q (marginal 1/N_q times N_k); we make rows sum to 1
    and columns to N / M. The two agree for self-attention (N == M); ours keeps T = 1 equal to
    softmax for cross-attention too.
  * They stop early when the row potentials change by less than 1e-12 (a data-dependent
    Python break); we always run T iterations (jit-friendly; the effect is below float32
    rounding).
  * Masking. They fill masked logits with -1e9 and balance the full matrix, so a padded key's
    column is still scaled up to carry mass 1 (padded keys receive attention once T >= 2),
    and padded queries take part in the column sums. We remove padded rows and columns from
    the balancing instead:
      - Key padding (`[B, M]`, or a 4-D mask of shape `[B|1, 1, 1, M]`): padded keys get
        P = 0. When N == M (self-attention) the same positions are padded queries: they are
        left out of every column sum and their own row is the softmax over the valid keys
        (a finite, normalised row that never influences the valid tokens; the encoder drops
        those outputs). The valid block is balanced to be doubly stochastic, c = (valid
        queries) / (valid keys) = 1. With N != M every query counts.
      - Other 4-D masks `[B|1, H|1, N, M]`: Sinkhorn runs on the mask's support: a row with no
        allowed key and a column with no allowed query are left out (their P is 0, a fully
        masked query returns zeros), and c = (active rows) / (active columns) per batch and
        head. The iteration is well defined for any support, but its limit is doubly
        stochastic only when the support admits such a matrix (e.g. under a causal mask the
        limit is the identity and convergence is slow); with a fixed T it is just T scaling
        steps. A 4-D mask never marks padded queries (pass key padding as `[B, M]` for that).
    Where a query row has no allowed key the output is zero.
  * Attention dropout (`dropout_rate`, training only) acts on P, as softmax attention's.

Complexity: O(T N M H) time for the iterations plus O(N M H (Dk + Dv)) for the products;
memory O(N M H) (the logits). The iterations and the final P V are rematerialised in the
backward pass (`jax.checkpoint`), so only the logits and the potentials are stored for it, one
N x M array per head as softmax attention, not T + 1 exponentiated matrices. Calls with more
than 2^24 scores (B H N M) run their (batch, head) pairs in groups of about 2^24 scores, one
group after another (`jax.lax.map`), so the live N x M arrays are those of one group: at
N = 4096 with 4 heads the forward+backward needs less memory than dense softmax attention
(about 530 vs 780 MiB compiled, CPU).
Logits accumulate in float32 (float64 for float64 inputs); the output is in v's dtype.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from attention import cost, masks, registry
from attention.softmax import check_qkv

__all__ = ["apply", "flops", "probabilities"]


def _masked_lse(x, support, axis):
    """log sum exp of `x` over `axis` where `support`; -inf where nothing is supported.

    Unsupported entries are replaced before exp (no inf meets a zero cotangent); `support`
    None means every entry."""
    if support is None:
        shift = jax.lax.stop_gradient(x.max(axis, keepdims=True))
        return shift + jnp.log(jnp.exp(x - shift).sum(axis, keepdims=True))
    shift = jnp.where(support, x, -jnp.inf).max(axis, keepdims=True)
    shift = jax.lax.stop_gradient(jnp.where(jnp.isfinite(shift), shift, 0.0))
    e = jnp.where(support, jnp.exp(jnp.where(support, x, shift) - shift), 0.0)
    s = e.sum(axis, keepdims=True)
    return jnp.where(s > 0, shift + jnp.log(jnp.where(s > 0, s, 1.0)), -jnp.inf)


@functools.partial(jax.checkpoint, static_argnums=(4,))
def _step(logits, support, f, g, rows: bool, log_c=None):
    """One Sinkhorn step: new row potentials f `[.., N, 1]` (rows) or column potentials g
    `[.., 1, M]` (columns); inactive rows/columns keep 0."""
    if rows:
        lse = _masked_lse(logits + g, support, -1)
        return -lse if support is None else jnp.where(jnp.isfinite(lse), -lse, 0.0)
    lse = _masked_lse(logits + f, support, -2)
    return log_c - lse if support is None else jnp.where(jnp.isfinite(lse), log_c - lse, 0.0)


def _support(mask, b, h, n, m):
    """(support `[B|1, H|1, N, M]` bool or None, padded-query rows `[B, 1, N, 1]` or None):
    the entries Sinkhorn balances, and the rows that get a plain softmax instead."""
    if mask is None:
        return None, None
    mask = jnp.asarray(mask)
    jax.eval_shape(lambda x: masks.as_4d(x, b, h, n, m), mask)  # dtype / shape errors
    if mask.ndim == 2 or (mask.shape[1] == 1 and mask.shape[2] == 1):
        pad = mask if mask.ndim == 2 else jnp.broadcast_to(mask[:, 0, 0, :], (b, m))
        support = pad[:, None, None, :]
        if n != m:
            return support, None
        query_ok = pad[:, None, :, None]
        return support & query_ok, ~query_ok
    full = masks.as_4d(mask, b, h, n, m)
    return full, None


def _potentials(q, k, mask, sinkhorn_iters, scale):
    """(logits `[B, H, N, M]`, balanced support, key-padding support or None, padded-query
    rows or None, f `[.., N, 1]`, g `[.., 1, M]`) after `sinkhorn_iters` steps."""
    b, n, h, dk = q.shape
    m = k.shape[1]
    acc = jnp.promote_types(jnp.promote_types(q.dtype, k.dtype), jnp.float32)
    scale = dk**-0.5 if scale is None else scale
    logits = jnp.einsum("bnhd,bmhd->bhnm", q.astype(acc), k.astype(acc)) * scale
    support, soft_rows = _support(mask, b, h, n, m)
    full = support  # None: every entry (no mask array is formed)
    if support is None:
        log_c = jnp.asarray(math.log(n / m), acc)
    else:
        rows = jnp.any(full, -1, keepdims=True).sum(-2, keepdims=True)
        cols = jnp.any(full, -2, keepdims=True).sum(-1, keepdims=True)
        log_c = jnp.log(jnp.maximum(rows, 1).astype(acc) / jnp.maximum(cols, 1).astype(acc))
    f = jnp.zeros(logits.shape[:-1] + (1,), acc)
    g = jnp.zeros(logits.shape[:-2] + (1, m), acc)
    for t in range(sinkhorn_iters):
        if t % 2 == 0:
            f = _step(logits, full, f, g, True)
        else:
            g = _step(logits, full, f, g, False, log_c)
    return logits, full, support, soft_rows, f, g


def _plan(logits, full, support, soft_rows, f, g):
    """P = exp(L + f + g) on the support; padded queries' rows: softmax over the valid keys."""
    if full is None:
        return jnp.exp(logits + f + g)
    probs = jnp.where(full, jnp.exp(jnp.where(full, logits + f + g, 0.0)), 0.0)
    if soft_rows is not None:
        keys = jnp.broadcast_to(support.any(-2, keepdims=True), logits.shape)
        soft = jnp.exp(jnp.where(keys, logits - _masked_lse(logits, keys, -1), -jnp.inf))
        probs = jnp.where(soft_rows, soft, probs)
    return probs


def probabilities(q, k, mask=None, *, sinkhorn_iters: int = 3, scale=None):
    """The balanced attention matrix P `[B, H, N, M]` (module docstring), in float32 (float64
    for float64 inputs)."""
    return _plan(*_potentials(q, k, mask, sinkhorn_iters, scale))


@jax.checkpoint
def _output(logits, full, support, soft_rows, f, g, v, keep, rate):
    """P V (after dropout when `keep` is given), rematerialised in the backward pass so that
    only the logits and potentials are stored."""
    probs = _plan(logits, full, support, soft_rows, f, g)
    if keep is not None:
        probs = jnp.where(keep, probs / (1.0 - rate), 0.0)
    return jnp.einsum("bhnm,bmhd->bnhd", probs, v.astype(probs.dtype))


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    sinkhorn_iters: int = 3,
    scale: float | None = None,
    dropout_rate: float = 0.0,
):
    """Sinkformer attention: Sinkhorn-balanced exp(QK^T * scale), times V.

    Args:
      params: unused (no parameters); `{}`.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: key padding `[B, M]` (with N == M also the padded queries) or boolean
        broadcastable to `[B, H, N, M]`; True = attend. See the module docstring.
      key: PRNG key for attention dropout (training with `dropout_rate > 0`).
      train: enables attention dropout.
      sinkhorn_iters: T >= 1 alternating normalisations, rows first (1 = softmax).
      scale: logit scale; default `Dk ** -0.5`.
      dropout_rate: dropout on the balanced matrix during training.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`.
    """
    del params
    check_qkv(q, k, v)
    _check_iters(sinkhorn_iters)
    if not 0.0 <= dropout_rate < 1.0:
        raise ValueError(f"sinkformer: dropout_rate={dropout_rate!r} must be in [0, 1)")
    rate = dropout_rate if train else 0.0
    if rate > 0.0 and key is None:
        raise ValueError("sinkformer: train=True with dropout_rate > 0 needs `key`")
    b, n, h, dk = q.shape
    m = k.shape[1]
    scale = dk**-0.5 if scale is None else scale

    def one(q, k, v, mask, key):
        state = _potentials(q, k, mask, sinkhorn_iters, scale)
        keep = None
        if rate > 0.0:
            keep = jax.random.bernoulli(key, 1.0 - rate, state[0].shape)
        return _output(*state, v, keep, rate)

    if b * h * n * m <= _CHUNK_ELEMENTS:
        return one(q, k, v, mask, key).astype(v.dtype)
    # Large calls: the (batch, head) pairs in groups of about _CHUNK_ELEMENTS scores, one group
    # after another, so that the N x M arrays of a group (not of the whole call) are live.
    heads_first = lambda x: jnp.swapaxes(x, 1, 2).reshape(b * h, x.shape[1], 1, x.shape[3])
    if mask is None:
        flat_mask = None
    else:
        mask = jnp.asarray(mask)
        jax.eval_shape(lambda x: masks.as_4d(x, b, h, n, m), mask)  # dtype / shape errors
        if mask.ndim == 2 or (mask.shape[1] == 1 and mask.shape[2] == 1):  # key padding
            pad = mask if mask.ndim == 2 else jnp.broadcast_to(mask[:, 0, 0, :], (b, m))
            flat_mask = jnp.repeat(pad, h, axis=0)  # [B * H, M]
        else:
            flat_mask = masks.as_4d(mask, b, h, n, m).reshape(b * h, 1, n, m)
    keys = None if rate == 0.0 else jax.random.split(key, b * h)

    def element(args):
        qe, ke, ve, me, key_e = args
        out = one(qe[None], ke[None], ve[None], None if me is None else me[None], key_e)
        return out[0]

    xs = (heads_first(q), heads_first(k), heads_first(v), flat_mask, keys)
    group = max(1, _CHUNK_ELEMENTS // (n * m))
    out = jax.lax.map(element, xs, batch_size=min(group, b * h))  # [B * H, N, 1, Dv]
    return jnp.swapaxes(out.reshape(b, h, n, -1), 1, 2).astype(v.dtype)


# Calls with more scores (B * H * N * M) than this run in groups of (batch, head) pairs
# (2^24 float32 scores: 64 MiB per N x M array of a group, e.g. one head at N = M = 4096).
_CHUNK_ELEMENTS = 1 << 24


def _check_iters(value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"sinkformer: sinkhorn_iters={value!r} must be an int >= 1 (1 = softmax attention; "
            "the authors use 3 to 7)"
        )


def _check(hp, num_tokens) -> None:
    """`check` for the registry."""
    del num_tokens
    _check_iters(hp["sinkhorn_iters"])


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # QK^T 2·n·m·h·dk and PV 2·n·m·h·dv as softmax. Each Sinkhorn step is a masked
    # log-sum-exp over the n x m logits: add the other side's potential, select, max,
    # subtract, sum (5 per entry, exp a transcendental); then the final L + f + g and select.
    scores = c.n * c.m * c.h
    steps = hp["sinkhorn_iters"]
    ew = scores * (5 * steps + 3 + cost.MASKED * c.masked)
    if c.masked and c.n == c.m:  # the padded queries' softmax rows
        ew += scores * (cost.SOFTMAX + cost.MASKED)
    return 2 * scores * (c.dk + c.dv), ew


registry.register(
    "sinkformer",
    apply=apply,
    check=_check,
    flops=flops,
    defaults={"sinkhorn_iters": 3, "scale": None, "dropout_rate": 0.0},
    doc="Sinkformer: exp(QK^T/sqrt(d)) balanced by Sinkhorn iterations towards doubly "
    "stochastic (Sander et al. 2022)",
)
