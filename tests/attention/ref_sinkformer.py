"""float64 reference for the Sinkformer (Sander et al. 2022, Sec. 2-3): plain multiplicative
Sinkhorn on the explicit N x M kernel exp(QK^T / sqrt(d)), independent of
attention/sinkformer.py (which works in the log domain)."""

import functools

import numpy as np

import attention.sinkformer  # noqa: F401  (registers sinkformer)
from tests.attention.cases import Case


def sinkhorn_matrix(logits, allowed, iters, padded_queries=None):
    """One head: K = exp(logits) on `allowed` `[N, M]`; rows (t odd) and columns (t even)
    rescaled alternately, rows to sum 1 and columns to (active rows) / (active columns).
    `padded_queries` `[N]` bool: rows left out of the balancing, given the softmax over the
    columns of the balanced block instead."""
    n, m = logits.shape
    support = allowed.copy()
    if padded_queries is not None:
        support[padded_queries] = False
    a = np.where(support, np.exp(logits - logits.max()), 0.0)
    active_rows = support.any(1)
    active_cols = support.any(0)
    c = max(active_rows.sum(), 1) / max(active_cols.sum(), 1)
    for t in range(iters):
        if t % 2 == 0:
            s = a.sum(1, keepdims=True)
            a = np.divide(a, s, out=np.zeros_like(a), where=s > 0)
        else:
            s = a.sum(0, keepdims=True)
            a = np.divide(a * c, s, out=np.zeros_like(a), where=s > 0)
    if padded_queries is not None:
        for i in np.flatnonzero(padded_queries):
            keys = np.flatnonzero(active_cols)
            if keys.size:
                p = np.exp(logits[i, keys] - logits[i, keys].max())
                a[i, keys] = p / p.sum()
    return a


def sinkformer_reference(params, q, k, v, mask, sinkhorn_iters=3):
    del params
    b, n, h, d = q.shape
    m = k.shape[1]
    full = np.ones((b, h, n, m), bool) if mask is None else np.broadcast_to(mask, (b, h, n, m))
    # A mask constant over heads and queries is key padding; with N == M it also marks the
    # padded queries (the positions of the padded keys).
    key_padding = mask is not None and (full == full[:, :1, :1, :]).all() and n == m
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            logits = q[bi, :, hi] @ k[bi, :, hi].T / np.sqrt(d)
            padded = ~full[bi, 0, 0, :] if key_padding else None
            p = sinkhorn_matrix(logits, full[bi, hi], sinkhorn_iters, padded)
            out[bi, :, hi] = p @ v[bi, :, hi]
    return out


CASES = {
    # 4 iterations: ends on a column step, so both kinds of step are checked.
    "sinkformer": Case(
        reference=functools.partial(sinkformer_reference, sinkhorn_iters=4),
        hparams={"sinkhorn_iters": 4},
    ),
}
