"""float64 reference for asymmetric GRF attention (`grf_asym`, GRF paper App. D, Alg. 2 without
its extra 1/n): the directed k-NN graph of `coords` by brute-force loops, every walk of <= 3 hops
by recursion, then per query the walk-weighted linear attention."""

import numpy as np

import attention.grf_asym  # noqa: F401  (registers "grf_asym")
from tests.attention.cases import Case


def _knn(x, k, valid):
    n = len(x)
    nbrs = np.full((n, k), -1)
    for i in range(n):
        if valid[i]:
            cand = sorted(
                (float(((x[i] - x[j]) ** 2).sum()), j) for j in range(n) if j != i and valid[j]
            )
            for r, (_, j) in enumerate(cand[:k]):
                nbrs[i, r] = j
    return nbrs


def grf_asym_reference(params, q, k, v, mask, coords, knn_k=3, hops=3):
    b, n, h, _ = q.shape
    f = params["f"]
    relu = lambda a: np.maximum(a, 0.0)  # noqa: E731
    out = np.zeros(v.shape)
    for bi in range(b):
        valid = np.ones(n, bool) if mask is None else mask[bi, 0, 0]
        nbrs = _knn(coords[bi], knn_k, valid)
        deg = np.array([max((row >= 0).sum(), 1) for row in nbrs], float)
        for i in range(n):
            if not valid[i]:
                continue
            walks, frontier = [(i, 0, 1.0)], [(i, 1.0)]
            for t in range(1, hops + 1):
                frontier = [
                    (u, ld / np.sqrt(deg[node] * deg[u]))
                    for node, ld in frontier
                    for u in nbrs[node]
                    if u >= 0
                ]
                walks += [(u, t, ld) for u, ld in frontier]
            for hh in range(h):
                num, den = np.zeros(v.shape[-1]), 0.0
                for node, t, load in walks:
                    a = relu(q[bi, i, hh]) @ relu(k[bi, node, hh]) * f[hh, t] * load
                    num, den = num + a * v[bi, node, hh], den + a
                out[bi, i, hh] = num / den if den != 0 else 0.0
    return out


CASES = {
    "grf_asym": Case(
        reference=grf_asym_reference,
        hparams=dict(f_decay=0.5, node_chunk=3),
        inputs=lambda rng, b, n, model_dim: {"coords": rng.uniform(size=(b, n, 3))},
        masks=("none", "key_padding"),
        n=8,
    ),
}
