"""float64 reference for SSA's evaluation path: dense softmax attention ("renormalization").

SSA is a training strategy (arXiv:2306.01705, Sec. 3.4): with `train=False` and
`eval_mode="dense"` the layer is plain softmax attention over every source, with the additive
bias B. The reference is a loop over (batch, head, query) written independently of the module.
"""

import numpy as np

import attention.ssa  # noqa: F401  (registers "ssa")
from tests.attention.cases import Case


def dense_reference(params, q, k, v, mask, bias=None, causal=False):
    """Per (batch, head, query): softmax over the allowed keys; no allowed key gives zeros."""
    del params
    b, n, h, d = q.shape
    m = k.shape[1]
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            for ni in range(n):
                keys = [
                    j
                    for j in range(m)
                    if (mask is None or mask[bi, hi, ni, j]) and (not causal or j <= ni)
                ]
                if not keys:
                    continue
                logits = np.array([q[bi, ni, hi] @ k[bi, j, hi] / np.sqrt(d) for j in keys])
                if bias is not None:
                    logits = logits + np.array([bias[bi, 0, ni, j] for j in keys])
                p = np.exp(logits - logits.max())
                p /= p.sum()
                for pj, j in zip(p, keys, strict=True):
                    out[bi, ni, hi] += pj * v[bi, j, hi]
    return out


def _bias(rng, b, n, model_dim):
    del model_dim
    return {"bias": rng.normal(size=(b, 1, n, n))}  # one bias for all heads, like ALiBi/SPD


CASES = {
    "ssa": Case(reference=dense_reference, hparams={"keep": 0.5}, inputs=_bias, n=8),
}
