"""float64 references for the GRF topological-masking family (explicit loops, explicit N x N).

`grf`: the N x N mask is rebuilt from the frozen walks in `params["buffers"]` by looping over
every walk slot, `phi[i, node] += load * f[t] / n_walks`, `M = phi phi^T`; then masked linear
attention by a loop over queries and keys. `grf_dense`: `M = sum_k alpha_k W^k` with
`alpha = f * f` (convolution) and matrix powers of the explicitly built grid adjacency.
"""

import numpy as np

import attention.grf  # noqa: F401  (registers "grf" and "grf_dense")
from tests.attention.cases import Case

GRID = (3, 3)


def grid_adjacency(h, w):
    """Normalised 4-neighbour grid adjacency D^{-1/2} A D^{-1/2}, built by explicit loops."""
    n = h * w
    a = np.zeros((n, n))
    for r in range(h):
        for c in range(w):
            for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if 0 <= rr < h and 0 <= cc < w:
                    a[r * w + c, rr * w + cc] = 1.0
    deg = a.sum(1)
    return a / np.sqrt(np.outer(deg, deg))


def mask_from_walks(nodes, loads, f):
    """`[H, N, N]` GRF mask estimate from walks `[H, N, n_walks, T]` and f `[H, T]`, by loops."""
    heads, n, n_walks, steps = nodes.shape
    out = np.zeros((heads, n, n))
    for h in range(heads):
        phi = np.zeros((n, n))
        for i in range(n):
            for w in range(n_walks):
                for t in range(steps):
                    phi[i, nodes[h, i, w, t]] += loads[h, i, w, t] * f[h, t] / n_walks
        out[h] = phi @ phi.T
    return out


def power_series_mask(w_adj, f):
    """`[H, N, N]`: sum_k alpha_k W^k with alpha_k = sum_p f_p f_{k-p}, by matrix powers."""
    out = []
    for fh in f:
        alpha = np.convolve(fh, fh)
        out.append(sum(a * np.linalg.matrix_power(w_adj, p) for p, a in enumerate(alpha)))
    return np.stack(out)


def masked_linear_reference(graph_mask, q, k, v, mask, cls_token=False):
    """Loops: out_i = sum_j M_ij relu(q_i).relu(k_j) v_j / sum_j M_ij relu(q_i).relu(k_j).

    graph_mask: `[H, N_g, N_g]`; with `cls_token`, token 0 has mask 1 to and from all tokens.
    mask: None or key padding broadcast to `[B, H, N, N]`; a padded token (a column that is
    False for every query) neither attends nor is attended.
    """
    b, n, h, _ = q.shape
    dv = v.shape[-1]
    mask = np.ones((b, h, n, n), bool) if mask is None else mask
    out = np.zeros((b, n, h, dv))
    for bi in range(b):
        for hi in range(h):
            full = np.ones((n, n))
            c = int(cls_token)
            full[c:, c:] = graph_mask[hi]
            padded = ~mask[bi, hi].any(axis=0)
            for i in range(n):
                if padded[i]:
                    continue
                num, den = np.zeros(dv), 0.0
                for j in range(n):
                    if not mask[bi, hi, i, j]:
                        continue
                    a = full[i, j] * (np.maximum(q[bi, i, hi], 0) @ np.maximum(k[bi, j, hi], 0))
                    num += a * v[bi, j, hi]
                    den += a
                if den != 0:
                    out[bi, i, hi] = num / den
    return out


def grf_reference(params, q, k, v, mask, cls_token=False):
    buffers = params["buffers"]
    graph_mask = mask_from_walks(buffers["walk_nodes"], buffers["walk_loads"], params["f"])
    return masked_linear_reference(graph_mask, q, k, v, mask, cls_token)


def grf_dense_reference(params, q, k, v, mask, grid=GRID, cls_token=False):
    graph_mask = power_series_mask(grid_adjacency(*grid), params["f"])
    return masked_linear_reference(graph_mask, q, k, v, mask, cls_token)


_MASKS = ("none", "key_padding")

CASES = {
    "grf": Case(
        reference=grf_reference,
        hparams=dict(grid=GRID, n_walks=4, max_walk_len=3, p_halt=0.25, f_decay=0.5, slot_chunk=5),
        masks=_MASKS,
        n=9,
    ),
    "grf_dense": Case(
        reference=grf_dense_reference,
        hparams=dict(grid=GRID, max_walk_len=3, f_decay=0.5),
        masks=_MASKS,
        n=9,
    ),
}
