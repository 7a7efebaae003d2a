"""float64 references for the standard baselines: softmax_chunked, linear, performer, linformer,
local. Each builds the explicit N x M matrix (or loops), independent of attention/*.py."""

import functools

import numpy as np

import attention.chunked  # noqa: F401  (registers softmax_chunked)
import attention.linear  # noqa: F401
import attention.linformer  # noqa: F401
import attention.local  # noqa: F401
import attention.performer  # noqa: F401
from tests.attention.cases import Case


def _full_mask(mask, b, h, n, m):
    return np.ones((b, h, n, m), bool) if mask is None else np.broadcast_to(mask, (b, h, n, m))


def _key_padding(mask, b, h, n, m):
    """The `[B, M]` key padding a key-padding-only mechanism sees (asserts it is one)."""
    full = _full_mask(mask, b, h, n, m)
    pad = full[:, 0, 0, :]
    assert (full == pad[:, None, None, :]).all(), "reference given a non key-padding mask"
    return pad


def masked_softmax_reference(q, k, v, allowed, bias=None, scale=None):
    """Per (batch, head, query) loop over the allowed keys; empty rows give zeros."""
    b, n, h, d = q.shape
    m = k.shape[1]
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    bias = np.zeros((b, h, n, m)) if bias is None else np.broadcast_to(bias, (b, h, n, m))
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            for i in range(n):
                keys = np.flatnonzero(allowed[bi, hi, i])
                if keys.size == 0:
                    continue
                s = np.array(
                    [q[bi, i, hi] @ k[bi, j, hi] * scale + bias[bi, hi, i, j] for j in keys]
                )
                p = np.exp(s - s.max())
                p /= p.sum()
                out[bi, i, hi] = sum(pj * v[bi, j, hi] for pj, j in zip(p, keys, strict=True))
    return out


def chunked_reference(params, q, k, v, mask, bias=None):
    """softmax_chunked equals plain softmax attention."""
    del params
    b, n, h, _ = q.shape
    return masked_softmax_reference(q, k, v, _full_mask(mask, b, h, n, k.shape[1]), bias)


def linear_reference(params, q, k, v, mask, feature_map="elu+1", causal=False, eps=1e-6):
    """Explicit N x M kernel matrix A_ij = phi(q_i) . phi(k_j), rows divided by sum + eps."""
    del params
    b, n, h, _ = q.shape
    m = k.shape[1]
    pad = _key_padding(mask, b, h, n, m)
    if feature_map == "elu+1":
        phi = lambda x: np.where(x > 0, x + 1.0, np.exp(x))
    else:
        phi = lambda x: np.maximum(x, 0.0)
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            a = phi(q[bi, :, hi]) @ phi(k[bi, :, hi]).T  # [N, M]
            a = a * pad[bi][None, :]
            if causal:
                a = np.tril(a)
            out[bi, :, hi] = (a @ v[bi, :, hi]) / (a.sum(1, keepdims=True) + eps)
    return out


def performer_reference(params, q, k, v, mask):
    """Explicit random-feature kernel matrix, unstabilised (float64 does not overflow here)."""
    w = params["buffers"]["features"]  # [m, Dk]
    b, n, h, d = q.shape
    m = k.shape[1]
    pad = _key_padding(mask, b, h, n, m)

    def phi(x):  # x: [L, Dk]
        x = x / d**0.25
        return np.exp(x @ w.T - 0.5 * (x**2).sum(1, keepdims=True)) / np.sqrt(w.shape[0])

    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            a = phi(q[bi, :, hi]) @ phi(k[bi, :, hi]).T * pad[bi][None, :]
            den = a.sum(1, keepdims=True)
            out[bi, :, hi] = np.where(den > 0, a @ v[bi, :, hi] / np.where(den > 0, den, 1), 0)
    return out


def linformer_reference(params, q, k, v, mask):
    """Projects masked-to-zero keys/values with E[:, :M], F[:, :M], then softmax over k rows."""
    e = params["E"]
    f = params.get("F", e)
    b, n, h, d = q.shape
    m = k.shape[1]
    pad = _key_padding(mask, b, h, n, m)
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            kk = k[bi, :, hi] * pad[bi][:, None]
            vv = v[bi, :, hi] * pad[bi][:, None]
            kp, vp = e[:, :m] @ kk, f[:, :m] @ vv  # [k, D]
            s = q[bi, :, hi] @ kp.T / np.sqrt(d)  # [N, k]
            p = np.exp(s - s.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            out[bi, :, hi] = p @ vp
    return out


def local_reference(params, q, k, v, mask, window=4, causal=False):
    """Softmax over the explicit N x N band |i - j| <= window (and j <= i when causal)."""
    del params
    b, n, h, _ = q.shape
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    band = (i - j >= 0) & (i - j <= window) if causal else np.abs(i - j) <= window
    allowed = _full_mask(mask, b, h, n, n) & band
    return masked_softmax_reference(q, k, v, allowed)


def _bias(rng, b, n, model_dim):
    del model_dim
    return {"bias": rng.normal(size=(b, 1, n, n))}


CASES = {
    # Chunks of 4 over n = 6: two chunks each way, the last padded (and, with key padding,
    # one key chunk fully masked for batch 0).
    "softmax_chunked": Case(
        reference=chunked_reference,
        hparams={"query_chunk": 4, "key_chunk": 4},
        inputs=_bias,
    ),
    "linear": Case(reference=linear_reference, masks=("none", "key_padding")),
    "performer": Case(
        reference=performer_reference,
        hparams={"num_features": 8},
        masks=("none", "key_padding"),
    ),
    "linformer": Case(
        reference=linformer_reference,
        hparams={"proj_len": 3},
        masks=("none", "key_padding"),
    ),
    # window 2 over n = 7: tiles of 2, the last one padded; the band cuts inside tiles.
    # (The runner passes no hparams to a reference: bind them here too.)
    "local": Case(
        reference=functools.partial(local_reference, window=2), hparams={"window": 2}, n=7
    ),
}
