"""The attention patterns of BigBird, Longformer and the Sparse Transformer, as predicates.

`attention.sparse` computes each pattern two ways, a blocked (gathered key blocks) form and a
dense form (an explicit N x N boolean pattern over a dense softmax); both read the pattern from
the functions here, so that they attend over the same pairs by construction. Every predicate
takes broadcasting integer arrays of query positions `i` and key positions `j` (0-based, both
< N) and returns a boolean array: True = query i may attend key j.

  * Longformer (Beltagy et al. 2020, arXiv:2004.05150, Sec. 3.1): `longformer_allowed`.
  * Sparse Transformer (Child et al. 2019, arXiv:1904.10509, Sec. 4.3): `strided_parts`,
    `fixed_parts` (the two sets A(1), A(2) of a factorised pattern), `sparse_transformer_allowed`
    (their union, "merged").
  * BigBird (Zaheer et al. 2020, arXiv:2007.14062, Sec. 2, App. D): block level.
    `global_blocks` (which blocks are global), `random_blocks` (the r random key blocks of each
    query block, chosen from the frozen priorities `init` draws), `bigbird_block_pattern`
    (`[H, nb, nb]` block-level pattern).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

__all__ = [
    "bigbird_block_pattern",
    "fixed_parts",
    "global_blocks",
    "longformer_allowed",
    "random_blocks",
    "random_candidates",
    "sparse_transformer_allowed",
    "strided_parts",
]


# ------------------------------------------------------------------------------ Longformer


def longformer_allowed(i, j, *, half: int, num_global: int, causal: bool):
    """Longformer's sliding window plus symmetric global attention (Sec. 3.1).

    Query i attends key j when |i - j| <= half (the window of w = 2 * half, "1/2 w on each
    side"), or either of them is among the first `num_global` tokens (global tokens attend to
    all and all attend to them); with `causal`, only j <= i of those.
    """
    i, j = np.asarray(i), np.asarray(j)
    allowed = (np.abs(i - j) <= half) | (i < num_global) | (j < num_global)
    return allowed & (j <= i) if causal else allowed


# ---------------------------------------------------------------------- Sparse Transformer


def strided_parts(i, j, *, stride: int, causal: bool):
    """The strided pattern's two sets (Sec. 4.3), `(A1, A2)`.

    Causal (the paper's): A1_i = {t, ..., i} with t = max(0, i - l) (the previous l positions
    and i), A2_i = {j : (i - j) mod l = 0, j <= i}. Bidirectional: the same sets without the
    causal restriction, |i - j| <= l and (i - j) mod l = 0.
    """
    i, j = np.asarray(i), np.asarray(j)
    a1 = np.abs(i - j) <= stride
    a2 = np.remainder(i - j, stride) == 0
    if causal:
        a1, a2 = a1 & (j <= i), a2 & (j <= i)
    return a1, a2


def fixed_parts(i, j, *, stride: int, c: int, causal: bool):
    """The fixed pattern's two sets (Sec. 4.3), `(A1, A2)`.

    A1_i = {j : floor(j / l) = floor(i / l)} (i's own block of l), A2_i = {j : j mod l in
    {l - c, ..., l - 1}} (the last c positions of every block, the "summary" cells); causal
    (the paper's): both restricted to j <= i.
    """
    i, j = np.asarray(i), np.asarray(j)
    a1 = (i // stride) == (j // stride)
    a2 = np.remainder(j, stride) >= stride - c
    if causal:
        a1, a2 = a1 & (j <= i), a2 & (j <= i)
    return a1, a2


def sparse_transformer_allowed(i, j, *, pattern: str, stride: int, c: int, causal: bool):
    """The merged pattern: A1 | A2 ("attend over the union", Sec. 4.3, eq. for merged heads)."""
    if pattern == "strided":
        a1, a2 = strided_parts(i, j, stride=stride, causal=causal)
    elif pattern == "fixed":
        a1, a2 = fixed_parts(i, j, stride=stride, c=c, causal=causal)
    else:
        raise ValueError(f"sparse_transformer: pattern={pattern!r}; use 'strided' or 'fixed'")
    return a1 | a2


# ---------------------------------------------------------------------------------- BigBird


def global_blocks(nb: int, num_global_blocks: int) -> np.ndarray:
    """The global blocks among `nb`: the first ceil(g / 2) and the last floor(g / 2) (g = 2:
    the first and the last block, as in BigBird's released ITC code), sorted, distinct."""
    first = -(-num_global_blocks // 2)
    last = num_global_blocks // 2
    ids = set(range(min(first, nb))) | set(range(max(nb - last, 0), nb))
    return np.array(sorted(ids), dtype=np.int64)


def random_candidates(nb: int, *, num_window_blocks: int, num_global_blocks: int) -> np.ndarray:
    """`[nb, nb]` bool: the key blocks a query block may draw its random blocks from (those
    neither in its window nor global, so that no key block is attended twice)."""
    half = (num_window_blocks - 1) // 2
    x, y = np.arange(nb)[:, None], np.arange(nb)[None, :]
    is_global = np.zeros(nb, bool)
    is_global[global_blocks(nb, num_global_blocks)] = True
    return (np.abs(x - y) > half) & ~is_global[None, :]


def random_blocks(ranks, nb: int, *, num_window_blocks: int, num_global_blocks: int, r: int):
    """The r random key blocks of each query block, per head: `(ids, valid)`, both `[H, nb, r]`.

    `ranks` `[H, nb_max, nb_max]` (nb_max >= nb) holds, for each head and query block, a random
    permutation of the block indices read as priorities (frozen at init). A query block takes
    the r candidate blocks (`random_candidates`) of lowest rank among the first nb: a uniform
    r-subset of its candidates, the same at every call with nb blocks. Where fewer than r
    candidates exist (short sequences), the missing entries have `valid` False.
    """
    cand = jnp.asarray(
        random_candidates(
            nb, num_window_blocks=num_window_blocks, num_global_blocks=num_global_blocks
        )
    )
    h = ranks.shape[0]
    big = jnp.iinfo(jnp.int32).max
    score = jnp.where(cand[None], ranks[:, :nb, :nb].astype(jnp.int32), big)
    take = min(r, nb)
    ids = jnp.argsort(score, axis=-1)[..., :take]  # [H, nb, take]
    valid = jnp.take_along_axis(jnp.broadcast_to(cand[None], (h, nb, nb)), ids, axis=-1)
    if take < r:
        ids = jnp.pad(ids, ((0, 0), (0, 0), (0, r - take)))
        valid = jnp.pad(valid, ((0, 0), (0, 0), (0, r - take)))
    return ids.astype(jnp.int32), valid


def bigbird_block_pattern(
    ranks, nb: int, *, num_window_blocks: int, num_global_blocks: int, r: int
):
    """`[H, nb, nb]` bool: query block x attends key block y when either is global, |x - y| <=
    (w - 1) / 2 (the window of w blocks), or y is one of x's random blocks."""
    half = (num_window_blocks - 1) // 2
    x, y = np.arange(nb)[:, None], np.arange(nb)[None, :]
    is_global = np.zeros(nb, bool)
    is_global[global_blocks(nb, num_global_blocks)] = True
    fixed = (np.abs(x - y) <= half) | is_global[:, None] | is_global[None, :]
    ids, valid = random_blocks(
        ranks, nb, num_window_blocks=num_window_blocks, num_global_blocks=num_global_blocks, r=r
    )
    rand = jnp.any((ids[..., None] == jnp.arange(nb)) & valid[..., None], axis=-2)
    return jnp.asarray(fixed)[None] | rand
