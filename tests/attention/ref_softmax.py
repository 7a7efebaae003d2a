"""float64 references for the softmax family."""

import numpy as np

from tests.attention.cases import Case


def softmax_reference(params, q, k, v, mask, bias=None):
    """Per (batch, head, query) loop; fully masked rows give zeros."""
    del params
    b, n, h, d = q.shape
    m = k.shape[1]
    mask = np.ones((b, h, n, m), bool) if mask is None else mask
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            for ni in range(n):
                keys = np.flatnonzero(mask[bi, hi, ni])
                if keys.size == 0:
                    continue
                logits = np.array([q[bi, ni, hi] @ k[bi, j, hi] / np.sqrt(d) for j in keys])
                if bias is not None:
                    logits = logits + bias[bi, hi, ni, keys]
                p = np.exp(logits - logits.max())
                p /= p.sum()
                out[bi, ni, hi] = (p[:, None] * v[bi, keys, hi]).sum(0)
    return out


CASES = {"softmax": Case(reference=softmax_reference)}
