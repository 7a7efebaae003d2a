"""float64 references for the GFSA family: explicit N x N matrices (Ā, Ā @ Ā, the filter).

The filter matrix is built the way the paper writes it (and the authors' code computes it),
with Ā zero-padded to a square P x P matrix (P = max(N, M)) for cross-attention, then applied to
the zero-padded V and cropped to the N queries.
"""

import functools

import numpy as np

import attention.gfsa  # noqa: F401  (registers the gfsa names)
from tests.attention.cases import Case


def softmax_matrix(q, k, mask, bias=None):
    """Ā `[B, H, N, M]`: per-row softmax over allowed keys; fully masked rows are zero."""
    b, n, h, d = q.shape
    m = k.shape[1]
    mask = np.ones((b, h, n, m), bool) if mask is None else mask
    a = np.zeros((b, h, n, m))
    for bi in range(b):
        for hi in range(h):
            for ni in range(n):
                keys = np.flatnonzero(mask[bi, hi, ni])
                if keys.size == 0:
                    continue
                logits = np.array([q[bi, ni, hi] @ k[bi, j, hi] / np.sqrt(d) for j in keys])
                if bias is not None:
                    logits = logits + bias[bi, hi, ni, keys]
                e = np.exp(logits - logits.max())
                a[bi, hi, ni, keys] = e / e.sum()
    return a


def efficient_attention_matrix(q, k, mask):
    """Ā = ρ_q(Q) ρ_k(K)^T `[B, H, N, M]` (Efficient Attention); `mask` is key padding."""
    b, n, h, d = q.shape
    m = k.shape[1]
    mask = np.ones((b, h, n, m), bool) if mask is None else mask
    a = np.zeros((b, h, n, m))
    for bi in range(b):
        for hi in range(h):
            valid = mask[bi, hi, 0]  # key padding: every query row has the same keys
            rho_q = np.exp(q[bi, :, hi]) / np.exp(q[bi, :, hi]).sum(-1, keepdims=True)
            rho_k = np.zeros((m, d))
            if valid.any():
                e = np.exp(k[bi, valid, hi] - k[bi, valid, hi].max(0))
                rho_k[valid] = e / e.sum(0)
            a[bi, hi] = rho_q @ rho_k.T
    return a


def filtered(params, a, v, mask, *, order, w0, exact):
    """`(w_0 I∘diag(mask) + w_1 Ā + w_K Ā^K) V` with explicit P x P matrices per (b, h)."""
    b, h, n, m = a.shape
    p = max(n, m)
    mask = np.ones((b, h, n, m), bool) if mask is None else mask
    wk = params["w_k"]
    w0s = params.get("w_0", np.full(h, w0))
    w1s = params.get("w_1", np.ones(h))
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            ap = np.zeros((p, p))
            ap[:n, :m] = a[bi, hi]
            eye = np.zeros((p, p))
            for i in range(min(n, m)):
                eye[i, i] = float(mask[bi, hi, i, i])
            if exact:
                a_k = np.linalg.matrix_power(ap, order)
            else:
                a_k = ap + (order - 1) * (ap @ ap - ap)
            filt = w0s[hi] * eye + w1s[hi] * ap + wk[hi] * a_k
            vp = np.zeros((p, v.shape[-1]))
            vp[:m] = v[bi, :, hi]
            out[bi, :, hi] = (filt @ vp)[:n]
    return out


def gfsa_reference(params, q, k, v, mask, bias=None, *, order=3, w0=0.0, exact=False):
    a = softmax_matrix(q, k, mask, bias)
    return filtered(params, a, v, mask, order=order, w0=w0, exact=exact)


def gfsa_linear_reference(params, q, k, v, mask, *, order=3, w0=0.0):
    a = efficient_attention_matrix(q, k, mask)
    return filtered(params, a, v, mask, order=order, w0=w0, exact=False)


def _bias(rng, b, n, model_dim):
    del model_dim
    return {"bias": rng.normal(size=(b, 2, n, n))}  # H = 2 in the table runner


# init_wk != 0 and w0 != 0 so the table exercises the filter, not just softmax attention.
CASES = {
    "gfsa": Case(
        reference=functools.partial(gfsa_reference, order=3, w0=0.2),
        hparams={"order": 3, "w0": 0.2, "init_wk": 0.3},
        inputs=_bias,
    ),
    "gfsa_exact": Case(
        reference=functools.partial(gfsa_reference, order=4, w0=-0.1, exact=True),
        hparams={"order": 4, "w0": -0.1, "init_wk": 0.3},
    ),
    # the two-pass, linear-memory form (attention.gfsa: memory="linear") on the same cases
    "gfsa:memory=linear": Case(
        reference=functools.partial(gfsa_reference, order=3, w0=0.2),
        hparams={"order": 3, "w0": 0.2, "init_wk": 0.3, "memory": "linear"},
        inputs=_bias,
    ),
    "gfsa_exact:memory=linear": Case(
        reference=functools.partial(gfsa_reference, order=4, w0=-0.1, exact=True),
        hparams={"order": 4, "w0": -0.1, "init_wk": 0.3, "memory": "linear"},
    ),
    "gfsa_linear": Case(
        reference=functools.partial(gfsa_linear_reference, order=4, w0=0.2),
        hparams={"order": 4, "w0": 0.2, "init_wk": 0.3},
        masks=("none", "key_padding"),
    ),
}
