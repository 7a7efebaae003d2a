"""float64 reference for cosformer: the explicit N x M re-weighted matrix
A_ij = relu(q_i) . relu(k_j) cos(pi/2 (i - j) / max(N, M)), independent of attention/cosformer.py
(which never forms it)."""

import numpy as np

import attention.cosformer  # noqa: F401  (registers cosformer)
from tests.attention.cases import Case


def cosformer_reference(params, q, k, v, mask, causal=False, eps=1e-6):
    """Loops over (batch, head); A = (relu(Q) relu(K)^T) * cos-weights * padding (* tril)."""
    del params
    b, n, h, _ = q.shape
    m = k.shape[1]
    full = np.ones((b, h, n, m), bool) if mask is None else np.broadcast_to(mask, (b, h, n, m))
    pad = full[:, 0, 0, :]
    assert (full == pad[:, None, None, :]).all(), "reference given a non key-padding mask"
    big = max(n, m)
    i, j = np.arange(n)[:, None], np.arange(m)[None, :]
    reweight = np.cos(np.pi / 2 * (i - j) / big)
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            a = np.maximum(q[bi, :, hi], 0) @ np.maximum(k[bi, :, hi], 0).T * reweight
            a = a * pad[bi][None, :]
            if causal:
                a = np.tril(a)
            out[bi, :, hi] = a @ v[bi, :, hi] / np.maximum(a.sum(1, keepdims=True), eps)
    return out


CASES = {"cosformer": Case(reference=cosformer_reference, masks=("none", "key_padding"))}
