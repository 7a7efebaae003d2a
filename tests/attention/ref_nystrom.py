"""float64 reference for nystromformer, written from the paper's Algorithm 1 with explicit
matrices and loops, independent of attention/nystrom.py: zero padded tokens, segment means of
ceil(N / L)-long segments (zero-padded), F = softmax(Q K~^T), A = softmax(Q~ K~^T),
B = softmax(Q~ K^T) over the unmasked keys, A^+ by the iteration, out = F A^+ B V + DConv(V)."""

import functools

import numpy as np

import attention.nystrom  # noqa: F401  (registers nystromformer)
from tests.attention.cases import Case


def _softmax_rows(s, valid=None):
    valid = np.ones_like(s, bool) if valid is None else valid
    out = np.zeros_like(s)
    for r in range(s.shape[0]):
        idx = np.flatnonzero(valid[r])
        if idx.size:
            e = np.exp(s[r, idx] - s[r, idx].max())
            out[r, idx] = e / e.sum()
    return out


def pinv_reference(a, iters):
    """The paper's iteration, Z_0 = A^T / (||A||_1 ||A||_inf)."""
    z = a.T / (np.abs(a).sum(0).max() * np.abs(a).sum(1).max())
    eye = np.eye(a.shape[0])
    for _ in range(iters):
        az = a @ z
        z = 0.25 * z @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
    return z


def _means(x, num):
    seg = -(-x.shape[0] // num)
    out = np.zeros((num, x.shape[1]))
    for s in range(num):
        rows = x[s * seg : (s + 1) * seg]
        out[s] = rows.sum(0) / seg  # missing (padding) rows count as zeros
    return out


def nystrom_reference(params, q, k, v, mask, num_landmarks=64, pinv_iters=6):
    b, n, h, d = q.shape
    m = k.shape[1]
    full = np.ones((b, h, n, m), bool) if mask is None else np.broadcast_to(mask, (b, h, n, m))
    pad = full[:, 0, 0, :]
    assert (full == pad[:, None, None, :]).all(), "reference given a non key-padding mask"
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            qq, kk, vv = q[bi, :, hi] / d**0.25, k[bi, :, hi] / d**0.25, v[bi, :, hi]
            valid = np.broadcast_to(pad[bi][None, :], (n, m))
            if num_landmarks >= m:
                out[bi, :, hi] = _softmax_rows(qq @ kk.T, valid) @ vv
                continue
            kk = kk * pad[bi][:, None]
            if n == m:
                qq = qq * pad[bi][:, None]
            ql, kl = _means(qq, num_landmarks), _means(kk, num_landmarks)
            f = _softmax_rows(qq @ kl.T)
            a = _softmax_rows(ql @ kl.T)
            bm = _softmax_rows(ql @ kk.T, np.broadcast_to(pad[bi][None, :], (num_landmarks, m)))
            out[bi, :, hi] = f @ pinv_reference(a, pinv_iters) @ bm @ vv
    if "conv" in params:
        w = params["conv"]  # [H, K]
        half = w.shape[1] // 2
        vm = v * pad[:, :, None, None]
        for i in range(n):
            for t in range(w.shape[1]):
                j = i + t - half
                if 0 <= j < m:
                    out[:, i] += w[None, :, t, None] * vm[:, j]
    return out


CASES = {
    # L = 3 landmarks over n = 7 tokens: segments of 3, the last one padded; a 3-tap convolution.
    "nystromformer": Case(
        reference=functools.partial(nystrom_reference, num_landmarks=3, pinv_iters=6),
        hparams={"num_landmarks": 3, "pinv_iters": 6, "conv_kernel": 3},
        masks=("none", "key_padding"),
        n=7,
    ),
}
