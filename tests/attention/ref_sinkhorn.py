"""float64 reference for Sparse Sinkhorn attention (Tay et al. 2020, Sec. 3), evaluation path (no
Gumbel noise), written with loops over blocks, slots and keys: SortNet on the per-block sums of
the valid keys, Sinkhorn row/column normalisation, sorted blocks as S-mixtures of the valid keys
at each slot (padded keys zeroed), and one softmax of every query over its own block and its
sorted block.
Independent of attention/sinkhorn.py."""

import functools
import math

import numpy as np

import attention.sinkhorn  # noqa: F401  (registers "sinkhorn")
from tests.attention.cases import Case


def _relu(x):
    return np.maximum(x, 0.0)


def _logsumexp(x):
    top = x.max()
    return top + np.log(np.exp(x - top).sum())


def sinkhorn_matrix(sortnet, pooled, hi, iters, temperature):
    """pooled `[N_B, Dk]` for head hi -> the balanced S `[N_B, N_B]`."""
    nb = pooled.shape[0]
    r = np.zeros((nb, nb))
    for x in range(nb):
        hid = _relu(pooled[x] @ sortnet["w_p"][hi] + sortnet["b_p"][hi])
        r[x] = _relu(hid @ sortnet["w_b"][hi][:, :nb] + sortnet["b_b"][hi][:nb])
    la = r / temperature
    for _ in range(iters):
        for i in range(nb):
            la[i] = la[i] - _logsumexp(la[i])
        for j in range(nb):
            la[:, j] = la[:, j] - _logsumexp(la[:, j])
    return np.exp(la)


def sinkhorn_reference(
    params, q, k, v, mask, *, block_size=50, sinkhorn_iters=5, temperature=0.75, sort=None
):
    b, n, h, d = q.shape
    if mask is None:
        pad = np.ones((b, n), bool)
    else:
        full = np.broadcast_to(mask, (b, h, n, n))
        pad = full[:, 0, 0, :]
        assert (full == pad[:, None, None, :]).all(), "reference given a non key-padding mask"
    c = min(block_size, n)
    nb = math.ceil(n / c)
    out = np.zeros((b, n, h, v.shape[-1]))

    def pos(x, t):
        return x * c + t

    for bi in range(b):
        ok = [pos(x, t) < n and pad[bi, pos(x, t)] for x in range(nb) for t in range(c)]
        ok = np.array(ok).reshape(nb, c)
        for hi in range(h):
            if sort is None:
                pooled = np.zeros((nb, d))
                for x in range(nb):
                    for t in range(c):
                        if ok[x, t]:
                            pooled[x] += k[bi, pos(x, t), hi]
                s = sinkhorn_matrix(params["sortnet"], pooled, hi, sinkhorn_iters, temperature)
            else:
                s = sort
            for x in range(nb):
                keys, vals = [], []
                for t in range(c):  # own block
                    if ok[x, t]:
                        keys.append(k[bi, pos(x, t), hi])
                        vals.append(v[bi, pos(x, t), hi])
                for t in range(c):  # sorted block x, slot t
                    rows = [j for j in range(nb) if ok[j, t]]
                    if not rows:
                        continue
                    keys.append(sum(s[x, j] * k[bi, pos(j, t), hi] for j in rows))
                    vals.append(sum(s[x, j] * v[bi, pos(j, t), hi] for j in rows))
                if not keys:
                    continue
                for t in range(c):
                    i = pos(x, t)
                    if i >= n:
                        continue
                    sc = np.array([q[bi, i, hi] @ kk / np.sqrt(d) for kk in keys])
                    p = np.exp(sc - sc.max())
                    p /= p.sum()
                    out[bi, i, hi] = sum(pj * vj for pj, vj in zip(p, vals, strict=True))
    return out


_HP = {"block_size": 2, "sinkhorn_iters": 3, "temperature": 0.75}
CASES = {
    # n = 7 in blocks of 2: 4 blocks, the last one padded.
    "sinkhorn": Case(
        reference=functools.partial(sinkhorn_reference, **_HP),
        hparams=_HP,
        masks=("none", "key_padding"),
        n=7,
    ),
}
