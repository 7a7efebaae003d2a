"""float64 references for the Synthesizers (Tay et al. 2021, Sec. 3.1-3.2): explicit per-head
N x M logit matrices and a per-row masked softmax, independent of attention/synthesizer.py."""

import numpy as np

import attention.synthesizer  # noqa: F401  (registers synthesizer_dense, synthesizer_random)
from tests.attention.cases import Case


def _allowed(mask, b, h, n, m, causal):
    allowed = np.ones((b, h, n, m), bool) if mask is None else np.broadcast_to(mask, (b, h, n, m))
    if causal:
        allowed = allowed & (np.arange(m)[None, :] <= np.arange(n)[:, None])
    return allowed


def softmax_rows(logits, allowed, v):
    """out[b, i, h] = sum_j p_ij v[b, j, h], p the softmax of logits[b, h, i] over the allowed
    keys (a row with none: zeros). logits `[B, H, N, M]`, v `[B, M, H, Dv]`."""
    b, h, n, _ = logits.shape
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            for i in range(n):
                keys = np.flatnonzero(allowed[bi, hi, i])
                if keys.size == 0:
                    continue
                s = logits[bi, hi, i, keys]
                p = np.exp(s - s.max())
                p /= p.sum()
                out[bi, i, hi] = sum(pj * v[bi, j, hi] for pj, j in zip(p, keys, strict=True))
    return out


def random_reference(params, q, k, v, mask, causal=False):
    """R[h, :N, :M] (shared by the batch) as the logits; q and k unused."""
    del k
    r = params["buffers"]["R"] if "buffers" in params else params["R"]
    b, m, h, _ = v.shape
    n = m if q is None else q.shape[1]
    logits = np.broadcast_to(r[None, :, :n, :m], (b, h, n, m))
    return softmax_rows(logits, _allowed(mask, b, h, n, m, causal), v)


def dense_reference(params, q, k, v, mask, x, causal=False):
    """B[b, h, i, :] = W_2^T relu(W_1[:, h]^T x_i + b_1[h]) + b_2, cropped to M; loops."""
    del q, k
    w1, b1, w2, b2 = params["w1"], params["b1"], params["w2"], params["b2"]
    b, m, h, _ = v.shape
    n = x.shape[1]
    logits = np.zeros((b, h, n, m))
    for bi in range(b):
        for hi in range(h):
            for i in range(n):
                hidden = np.maximum(x[bi, i] @ w1[:, hi, :] + b1[hi], 0.0)
                logits[bi, hi, i] = (hidden @ w2 + b2)[:m]
    return softmax_rows(logits, _allowed(mask, b, h, n, m, causal), v)


def _x(rng, b, n, model_dim):
    return {"x": rng.normal(size=(b, n, model_dim))}


CASES = {
    "synthesizer_random": Case(reference=random_reference),
    "synthesizer_dense": Case(reference=dense_reference, inputs=_x),
}
