"""float64 references for the fixed sparse patterns: bigbird(_dense), longformer(_dense),
sparse_transformer(_dense). Each writes its pattern as an explicit N x N (per head for BigBird)
boolean matrix by loops over the papers' definitions, independent of attention/sparse*.py, and
runs the masked softmax of `ref_baselines.masked_softmax_reference` over it."""

import functools

import numpy as np

import attention.sparse  # noqa: F401  (registers the mechanisms)
from tests.attention.cases import Case
from tests.attention.ref_baselines import masked_softmax_reference


def _full_mask(mask, b, h, n):
    return np.ones((b, h, n, n), bool) if mask is None else np.broadcast_to(mask, (b, h, n, n))


def bigbird_pattern(ranks, n, block_size, num_window_blocks, num_global_blocks, r):
    """`[H, N, N]` BigBird-ITC pattern by loops.

    Blocks of `block_size`; the first ceil(g/2) and last floor(g/2) blocks are global; query
    block x attends block y if either is global, |x - y| <= (w - 1) / 2, or y is among the r
    candidate blocks (not in x's window, not global) of lowest `ranks[h, x, y]`.
    """
    h = ranks.shape[0]
    nb = -(-n // block_size)
    half = (num_window_blocks - 1) // 2
    n_first, n_last = -(-num_global_blocks // 2), num_global_blocks // 2
    glob = {x for x in range(nb) if x < n_first or x >= nb - n_last}
    blocks = np.zeros((h, nb, nb), bool)
    for hi in range(h):
        for x in range(nb):
            cand = [y for y in range(nb) if abs(x - y) > half and y not in glob]
            chosen = sorted(cand, key=lambda y, x=x, hi=hi: ranks[hi, x, y])[:r]
            for y in range(nb):
                blocks[hi, x, y] = x in glob or y in glob or abs(x - y) <= half or y in chosen
    pat = np.zeros((h, n, n), bool)
    for i in range(n):
        for j in range(n):
            pat[:, i, j] = blocks[:, i // block_size, j // block_size]
    return pat


def bigbird_reference(
    params,
    q,
    k,
    v,
    mask,
    block_size=64,
    num_window_blocks=3,
    num_global_blocks=2,
    num_random_blocks=3,
):
    b, n, h, _ = q.shape
    pat = bigbird_pattern(
        np.asarray(params["buffers"]["ranks"]),
        n,
        block_size,
        num_window_blocks,
        num_global_blocks,
        num_random_blocks,
    )
    return masked_softmax_reference(q, k, v, _full_mask(mask, b, h, n) & pat[None])


def longformer_pattern(n, window=512, num_global=1, causal=False):
    """`[N, N]`: |i - j| <= window // 2, or i or j among the first num_global; causal: j <= i."""
    pat = np.zeros((n, n), bool)
    for i in range(n):
        for j in range(n):
            ok = abs(i - j) <= window // 2 or i < num_global or j < num_global
            pat[i, j] = ok and (j <= i or not causal)
    return pat


def longformer_reference(params, q, k, v, mask, window=512, num_global=1, causal=False):
    del params
    b, n, h, _ = q.shape
    pat = longformer_pattern(n, window, num_global, causal)
    return masked_softmax_reference(q, k, v, _full_mask(mask, b, h, n) & pat)


def sparse_transformer_pattern(n, pattern="fixed", stride=128, c=32, causal=False):
    """`[N, N]`: the union A(1) | A(2) of Child et al. (2019), Sec. 4.3, written as sets."""
    pat = np.zeros((n, n), bool)
    for i in range(n):
        if pattern == "strided":
            if causal:
                a1 = set(range(max(0, i - stride), i + 1))
                a2 = {j for j in range(i + 1) if (i - j) % stride == 0}
            else:
                a1 = {j for j in range(n) if abs(i - j) <= stride}
                a2 = {j for j in range(n) if (i - j) % stride == 0}
        else:
            a1 = {j for j in range(n) if j // stride == i // stride}
            a2 = {j for j in range(n) if j % stride in range(stride - c, stride)}
            if causal:
                a1 = {j for j in a1 if j <= i}
                a2 = {j for j in a2 if j <= i}
        for j in a1 | a2:
            pat[i, j] = True
    return pat


def sparse_transformer_reference(
    params, q, k, v, mask, pattern="fixed", stride=128, c=32, causal=False
):
    del params
    b, n, h, _ = q.shape
    pat = sparse_transformer_pattern(n, pattern, stride, c, causal)
    return masked_softmax_reference(q, k, v, _full_mask(mask, b, h, n) & pat)


# Small sizes where every part of each pattern is present and N is not a multiple of a block.
_BIGBIRD = dict(block_size=2, num_window_blocks=3, num_global_blocks=2, num_random_blocks=1)
_LONGFORMER = dict(window=4, num_global=1)
_SPARSE = dict(pattern="fixed", stride=3, c=1)

CASES = (
    {
        # n = 13: 7 blocks of 2, the last half padding; global blocks 0 and 6; one random block.
        name: Case(
            reference=functools.partial(bigbird_reference, **_BIGBIRD), hparams=_BIGBIRD, n=13
        )
        for name in ("bigbird", "bigbird_dense")
    }
    | {
        # n = 9, window 4 (2 each side): tiles of 2, the last padded; token 0 global.
        name: Case(
            reference=functools.partial(longformer_reference, **_LONGFORMER),
            hparams=_LONGFORMER,
            n=9,
        )
        for name in ("longformer", "longformer_dense")
    }
    | {
        # n = 11, stride 3, c = 1: 4 blocks, the last one short.
        name: Case(
            reference=functools.partial(sparse_transformer_reference, **_SPARSE),
            hparams=_SPARSE,
            n=11,
        )
        for name in ("sparse_transformer", "sparse_transformer_dense")
    }
)
