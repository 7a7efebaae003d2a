"""float64 references for the Sliceformer family: explicit loops per (batch, head, channel) with
Python's `sorted`, independent of `attention.sliceformer`.

The shuffle control's fixed permutation is the order of documented hashed keys of (seed,
position, channel), recomputed here with Python integers.
"""

import functools

import numpy as np

import attention.sliceformer  # noqa: F401  (registers the sliceformer names)
from tests.attention.cases import Case

_U32 = 0xFFFFFFFF


def _fmix32(x):
    """MurmurHash3's 32-bit finaliser on a Python int."""
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & _U32
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & _U32
    return x ^ (x >> 16)


def shuffle_keys(seed, n, h, dv, shuffle_mode):
    """The shuffle's sort key of (position, head, channel) as a Python int (the hash the
    implementation documents: a fixed, data-independent order)."""
    word = _fmix32(seed % 2**32)
    keys = {}
    for p in range(n):
        key_p = _fmix32((word + 0x9E3779B9 * p) & _U32)
        for hi in range(h):
            for c in range(dv):
                if shuffle_mode == "shared":
                    keys[p, hi, c] = key_p
                else:
                    keys[p, hi, c] = _fmix32(key_p ^ _fmix32((hi * dv + c + 0x632BE5AB) & _U32))
    return keys


def _column(vals, variant, ascending, num_perms, order_keys):
    """The variant applied to one column's real values (a list in sequence order)."""
    n_real = len(vals)
    if variant == "sort":
        return sorted(vals, reverse=not ascending)
    if variant == "perm":
        sigma = sorted(range(n_real), key=lambda i: vals[i])  # P v = [vals[s] for s in sigma]
        y, acc = list(vals), [0.0] * n_real
        for _ in range(num_perms):
            y = [y[sigma[j]] for j in range(n_real)]
            acc = [a + yj for a, yj in zip(acc, y, strict=True)]
        return [a / num_perms for a in acc]
    if variant == "max_exchange":
        out = list(vals)
        if n_real:
            top = max(range(n_real), key=lambda i: vals[i])  # first occurrence of the max
            out[0], out[top] = vals[top], vals[0]
        return out
    if variant == "shuffle":
        order = sorted(range(n_real), key=lambda i: order_keys[i])
        return [vals[i] for i in order]
    raise AssertionError(variant)


def sliceformer_reference(
    params,
    q,
    k,
    v,
    mask,
    *,
    variant="ascend",
    num_perms=2,
    shuffle_mode="shared",
    seed=0,
    ignore_mask=False,
):
    """Loop over (batch, head, channel); real tokens' outputs go back to the real positions in
    sequence order, padding outputs 0. `mask` is None or a `[B, H, N, M]` key-padding mask."""
    del params, q, k
    b, n, h, dv = v.shape
    if mask is None or ignore_mask:
        valid = np.ones((b, h, n), bool)
    else:
        assert (mask == mask[:, :, :1, :]).all(), "sliceformer reference: key padding only"
        valid = mask[:, :, 0, :]
    keys = shuffle_keys(seed, n, h, dv, shuffle_mode) if variant == "shuffle" else None
    out = np.zeros((b, n, h, dv))
    for bi in range(b):
        for hi in range(h):
            real = [p for p in range(n) if valid[bi, hi, p]]
            for c in range(dv):
                vals = [float(v[bi, p, hi, c]) for p in real]
                kind, ascending = variant, True
                if variant in ("ascend", "descend", "half"):
                    kind = "sort"
                    ascending = variant == "ascend" or (variant == "half" and c < dv // 2)
                order_keys = None if keys is None else [keys[p, hi, c] for p in real]
                result = _column(vals, kind, ascending, num_perms, order_keys)
                for p, x in zip(real, result, strict=True):
                    out[bi, p, hi, c] = x
    return out


def _case(**hparams):
    return Case(
        reference=functools.partial(sliceformer_reference, **hparams),
        masks=("none", "key_padding"),
    )


CASES = {
    "sliceformer": _case(),
    "sliceformer_ascend": _case(variant="ascend"),
    "sliceformer_descend": _case(variant="descend"),
    "sliceformer_half": _case(variant="half"),
    "sliceformer_perm2": _case(variant="perm", num_perms=2),
    "sliceformer_perm4": _case(variant="perm", num_perms=4),
    "sliceformer_max_exchange": _case(variant="max_exchange"),
    "sliceformer_shuffle": _case(variant="shuffle", shuffle_mode="shared"),
    "sliceformer_shuffle_independent": _case(variant="shuffle", shuffle_mode="independent"),
}


def sliceformer_graph_reference(params, q, k, v, mask, bias):
    """The authors' Graphormer `SWD`: per (batch, head, query) a softmax over the bias of the
    real keys times V (explicit loop), plus the sorted value columns of the reference above."""
    b, n, h, dv = v.shape
    valid = np.ones((b, h, n), bool) if mask is None else mask[:, :, 0, :]
    mixed = np.zeros((b, n, h, dv))
    for bi in range(b):
        for hi in range(h):
            keys = np.flatnonzero(valid[bi, hi])
            for ni in range(n):
                logits = bias[bi, hi, ni, keys]
                p = np.exp(logits - logits.max())
                mixed[bi, ni, hi] = (p[:, None] / p.sum() * v[bi, keys, hi]).sum(0)
    return mixed + sliceformer_reference(params, q, k, v, mask)


def _bias(rng, b, n, model_dim):
    del model_dim
    return {"bias": rng.normal(size=(b, 2, n, n))}


CASES["sliceformer_graph"] = Case(
    reference=sliceformer_graph_reference, inputs=_bias, masks=("none", "key_padding")
)
