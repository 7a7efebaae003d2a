"""float64 reference for talking-heads attention (Shazeer et al. 2020; CaiT's
`Attention_talking_head`): explicit logits and probabilities per head, mixed across heads by
loops over (output head, input head), as `nn.Linear(num_heads, num_heads)` on the head axis."""

import numpy as np

import attention.talking_heads  # noqa: F401  (registers the name)
from tests.attention.cases import Case


def mix(x, w, b):
    """`[B, H, N, M]`: out[:, g] = sum_h x[:, h] * w[h, g] + b[g], written as loops."""
    out = np.zeros_like(x)
    for g in range(x.shape[1]):
        out[:, g] = b[g]
        for h in range(x.shape[1]):
            out[:, g] += x[:, h] * w[h, g]
    return out


def matrix(mixing, q, k, mask, bias=None):
    """The mixed attention matrix `[B, H, N, M]` with masked pairs and empty rows zero."""
    b, n, h, d = q.shape
    m = k.shape[1]
    mask = np.ones((b, h, n, m), bool) if mask is None else mask
    logits = np.zeros((b, h, n, m))
    for bi in range(b):
        for hi in range(h):
            logits[bi, hi] = q[bi, :, hi] @ k[bi, :, hi].T / np.sqrt(d)
    if bias is not None:
        logits = logits + bias
    logits = mix(logits, mixing["pre_w"], mixing["pre_b"])
    probs = np.zeros_like(logits)
    for bi in range(b):
        for hi in range(h):
            for ni in range(n):
                keys = np.flatnonzero(mask[bi, hi, ni])
                if keys.size:
                    e = np.exp(logits[bi, hi, ni, keys] - logits[bi, hi, ni, keys].max())
                    probs[bi, hi, ni, keys] = e / e.sum()
    return np.where(mask, mix(probs, mixing["post_w"], mixing["post_b"]), 0.0)


def reference(params, q, k, v, mask, bias=None):
    a = matrix(params["talking_heads"], q, k, mask, bias)
    return np.einsum("bhnm,bmhd->bnhd", a, v)


def _bias(rng, b, n, model_dim):
    del model_dim
    return {"bias": rng.normal(size=(b, 2, n, n))}  # H = 2 in the table runner


CASES = {"talking_heads": Case(reference=reference, inputs=_bias)}
