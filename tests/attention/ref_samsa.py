"""float64 references for the SAMSA family: the deterministic evaluation path.

Per (batch, head): score every real token with the importance MLP, add the support vectors
with their scores, keep the k best candidates, and run softmax attention of every query over
them. Written with explicit loops over tokens and candidates.
"""

import functools
import math

import numpy as np

import attention.samsa  # noqa: F401  (registers "samsa")
from tests.attention.cases import Case


def token_scores(scorer, token):
    """The importance MLP for one token `[d]` -> `[H]`."""
    hid = token @ scorer["w1"] + scorer["b1"]
    hid = np.array([0.5 * u * (1.0 + math.erf(u / math.sqrt(2.0))) for u in hid])
    hid = hid @ scorer["w2"] + scorer["b2"]
    hid = hid / math.sqrt(np.mean(hid**2) + 1e-6) * scorer["norm"]
    return (token + hid) @ scorer["w3"] + scorer["b3"]


def candidates(params, k, v, x, mask, bi, hi, *, support=True):
    """`[(score, key, value), ...]` for one (batch, head): real tokens, then the support ones."""
    m = k.shape[1]
    real = [j for j in range(m) if mask is None or mask[bi, hi, 0, j]]
    out = [(token_scores(params["scorer"], x[bi, j])[hi], k[bi, j, hi], v[bi, j, hi]) for j in real]
    if support:
        for s in range(params["support_scores"].shape[1]):
            out.append(
                (
                    params["support_scores"][hi, s],
                    params["support_keys"][s, hi],
                    params["support_values"][s, hi],
                )
            )
    return out, len(real)


def attend(query, keys, values):
    logits = np.array([query @ key for key in keys]) / math.sqrt(query.shape[0])
    p = np.exp(logits - logits.max())
    p /= p.sum()
    return sum(pj * vj for pj, vj in zip(p, values, strict=True))


def samsa_reference(params, q, k, v, mask, x, *, num_samples, support=True):
    """Hard evaluation path: attention over the k best-scored candidates (no noise)."""
    b, n, h, _ = q.shape
    out = np.zeros((b, n, h, v.shape[-1]))
    for bi in range(b):
        for hi in range(h):
            cands, num_real = candidates(params, k, v, x, mask, bi, hi, support=support)
            if num_real == 0:
                continue
            chosen = sorted(cands, key=lambda c: -c[0])[:num_samples]
            keys = [c[1] for c in chosen]
            values = [c[2] for c in chosen]
            for ni in range(n):
                out[bi, ni, hi] = attend(q[bi, ni, hi], keys, values)
    return out


_K = 2
CASES = {
    "samsa": Case(
        reference=functools.partial(samsa_reference, num_samples=_K),
        hparams={"k": _K},
        inputs=lambda rng, b, n, model_dim: {"x": rng.normal(size=(b, n, model_dim))},
        masks=("none", "key_padding"),
    )
}
