"""float64 reference for Efficient Attention (Shen et al. 2021, Eq. 3-4): the explicit N x M
matrix rho_q(Q) rho_k(K)^T times V, independent of attention/efficient.py."""

import numpy as np

import attention.efficient  # noqa: F401  (registers efficient_attention)
from tests.attention.cases import Case


def key_padding(mask, b, h, n, m):
    """The `[B, M]` key padding of a 4-D mask (asserts it is one)."""
    if mask is None:
        return np.ones((b, m), bool)
    full = np.broadcast_to(mask, (b, h, n, m))
    pad = full[:, 0, 0, :]
    assert (full == pad[:, None, None, :]).all(), "reference given a non key-padding mask"
    return pad


def efficient_matrix(qh, kh, valid, normalization="softmax"):
    """One head's `[N, M]` matrix rho_q(Q) rho_k(K)^T over the valid keys (loops)."""
    n, dk = qh.shape
    m = kh.shape[0]
    keys = np.flatnonzero(valid)
    a = np.zeros((n, m))
    if keys.size == 0:
        return a
    if normalization == "scaling":
        for i in range(n):
            for j in keys:
                a[i, j] = qh[i] @ kh[j] / keys.size
        return a
    rho_q = np.exp(qh - qh.max(1, keepdims=True))
    rho_q /= rho_q.sum(1, keepdims=True)
    rho_k = np.zeros((m, dk))
    for d in range(dk):
        e = np.exp(kh[keys, d] - kh[keys, d].max())
        rho_k[keys, d] = e / e.sum()
    for i in range(n):
        for j in keys:
            a[i, j] = sum(rho_q[i, d] * rho_k[j, d] for d in range(dk))
    return a


def efficient_reference(params, q, k, v, mask, normalization="softmax"):
    del params
    b, n, h, _ = q.shape
    m = k.shape[1]
    pad = key_padding(mask, b, h, n, m)
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            a = efficient_matrix(q[bi, :, hi], k[bi, :, hi], pad[bi], normalization)
            out[bi, :, hi] = a @ v[bi, :, hi]
    return out


CASES = {
    "efficient_attention": Case(reference=efficient_reference, masks=("none", "key_padding")),
}
