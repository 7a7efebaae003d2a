"""float64 reference for Reformer LSH attention, written with loops from the paper's definition
(Kitaev et al. 2020, Sec. 2): per round, hash every token, sort positions by (bucket, position),
cut into chunks, and let each query attend to the keys of its own and the previous chunk that
share its bucket (not itself unless nothing else is there, causal when asked, no padded key);
rounds combined by the softmax of their log-sum-exp. Independent of attention/reformer.py."""

import functools
import math

import numpy as np

import attention.reformer  # noqa: F401  (registers "reformer")
from tests.attention.cases import Case


def _key_padding(mask, b, h, n):
    if mask is None:
        return np.ones((b, n), bool)
    full = np.broadcast_to(mask, (b, h, n, n))
    pad = full[:, 0, 0, :]
    assert (full == pad[:, None, None, :]).all(), "reference given a non key-padding mask"
    return pad


def reformer_reference(
    params, q, k, v, mask, *, num_hashes=1, num_buckets=None, chunk_size=64, causal=False
):
    del k  # shared-QK: the keys are the normalised queries
    b, n, h, d = q.shape
    pad = _key_padding(mask, b, h, n)
    nb = num_buckets if num_buckets is not None else 2 * max(1, math.ceil(n / chunk_size))
    c = min(chunk_size, n)
    rot = params["buffers"]["rotations"]
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            x = q[bi, :, hi]
            keys = [x[j] / max(np.linalg.norm(x[j]), 1e-6) for j in range(n)]
            round_out, round_lse = [], []
            for r in range(num_hashes):
                if nb == 1:
                    bucket = [0] * n
                else:
                    w = rot[hi, r][:, : nb // 2]
                    bucket = [
                        int(np.argmax(np.concatenate([x[i] @ w, -(x[i] @ w)]))) for i in range(n)
                    ]
                order = sorted(range(n), key=lambda i: (bucket[i], i))
                slot = {p: s for s, p in enumerate(order)}
                o = np.zeros((n, v.shape[-1]))
                lse = np.full(n, -np.inf)
                for i in range(n):
                    chunk = slot[i] // c
                    reach = [
                        order[s] for s in range(max(0, (chunk - 1) * c), min(n, (chunk + 1) * c))
                    ]
                    cands = [
                        j
                        for j in reach
                        if bucket[j] == bucket[i] and pad[bi, j] and (not causal or j <= i)
                    ]
                    others = [j for j in cands if j != i]
                    cands = others if others else cands
                    if not cands:
                        continue
                    s = np.array([x[i] @ keys[j] / np.sqrt(d) for j in cands])
                    top = s.max()
                    p = np.exp(s - top)
                    lse[i] = top + np.log(p.sum())
                    p /= p.sum()
                    o[i] = sum(pj * v[bi, j, hi] for pj, j in zip(p, cands, strict=True))
                round_out.append(o)
                round_lse.append(lse)
            lse = np.stack(round_lse)  # [r, n]
            for i in range(n):
                finite = np.isfinite(lse[:, i])
                if not finite.any():
                    continue
                wts = np.where(
                    finite, np.exp(np.where(finite, lse[:, i], 0) - lse[finite, i].max()), 0
                )
                wts /= wts.sum()
                out[bi, i, hi] = sum(wts[r] * round_out[r][i] for r in range(num_hashes))
    return out


_HP = {"num_hashes": 2, "num_buckets": 4, "chunk_size": 2}
CASES = {
    # n = 7, chunks of 2 (the last one padded), 4 buckets, 2 rounds.
    "reformer": Case(
        reference=functools.partial(reformer_reference, **_HP),
        hparams=_HP,
        masks=("none", "key_padding"),
        n=7,
    ),
}
