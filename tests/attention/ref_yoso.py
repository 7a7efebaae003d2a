"""float64 reference for yoso (YOSO-E): the explicit N x M matrix of expected collision
probabilities (1 - arccos(q^.k^)/pi)^tau, masked, times V, each row l2-normalised; independent
of attention/yoso.py."""

import functools

import numpy as np

import attention.yoso  # noqa: F401  (registers yoso)
from tests.attention.cases import Case


def yoso_reference(params, q, k, v, mask, tau=10):
    """Per (batch, head, query) loop over the keys."""
    del params
    b, n, h, _ = q.shape
    m = k.shape[1]
    allowed = np.ones((b, h, n, m), bool) if mask is None else np.broadcast_to(mask, (b, h, n, m))
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            for i in range(n):
                qi = q[bi, i, hi] / np.linalg.norm(q[bi, i, hi])
                y = np.zeros(v.shape[-1])
                for j in range(m):
                    if not allowed[bi, hi, i, j]:
                        continue
                    kj = k[bi, j, hi] / np.linalg.norm(k[bi, j, hi])
                    cos = np.clip(qi @ kj, -1.0, 1.0)
                    y += (1.0 - np.arccos(cos) / np.pi) ** tau * v[bi, j, hi]
                norm = np.linalg.norm(y)
                out[bi, i, hi] = y / max(norm, 1e-12)
    return out


CASES = {
    # The exact gradient, so that the table's finite differences check it (the default surrogate
    # gradient is checked against its formula in test_yoso.py). tau 3 keeps weights O(0.1).
    "yoso": Case(
        reference=functools.partial(yoso_reference, tau=3), hparams={"tau": 3, "grad": "exact"}
    ),
}
