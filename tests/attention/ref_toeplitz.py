"""float64 reference for Toeplitz-masked linear attention (GRF Table 1's baseline; the authors'
Scenic `top_type="toeplitz"`): the mask looked up pair by pair from the 2-D offset of the two
tokens' grid cells, ReLU kernel, row normalisation, written as loops; padded queries output
zeros."""

import numpy as np

import attention.toeplitz  # noqa: F401  (registers the name)
from tests.attention.cases import Case

GRID = (3, 3)


def reference(params, q, k, v, mask, grid=GRID, cls_token=False):
    b, n, h, _ = q.shape
    gh, gw = grid
    t = np.abs(params["t"])
    mask = np.ones((b, h, n, n), bool) if mask is None else mask
    out = np.zeros((b, n, h, v.shape[-1]))
    c = int(cls_token)

    def cell(i):
        return divmod(i - c, gw)

    for bi in range(b):
        for hi in range(h):
            for i in range(n):
                weights = np.zeros(n)
                for j in range(n):
                    if not mask[bi, hi, i, j]:
                        continue
                    if cls_token and (i == 0 or j == 0):
                        m = 1.0
                    else:
                        (ri, ci), (rj, cj) = cell(i), cell(j)
                        m = t[hi, (ri - rj + gh - 1) * (2 * gw - 1) + (ci - cj + gw - 1)]
                    weights[j] = np.maximum(q[bi, i, hi], 0) @ np.maximum(k[bi, j, hi], 0) * m
                # a padded query (key padding: its own key masked) outputs zeros, as grf_dense
                if weights.sum() != 0 and mask[bi, hi, i, i]:
                    out[bi, i, hi] = weights @ v[bi, :, hi] / weights.sum()
    return out


CASES = {
    "toeplitz": Case(
        reference=lambda params, q, k, v, mask: reference(params, q, k, v, mask, cls_token=True),
        hparams=dict(grid=GRID, cls_token=True),
        masks=("none", "key_padding"),
        n=10,
    ),
}
