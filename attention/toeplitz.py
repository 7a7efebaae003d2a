"""Toeplitz-masked linear attention on a 2-D grid of tokens: GRF Table 1's "Toeplitz" baseline.

Reid et al. 2024 (GRF topological masking) compare their graph-random-feature masks with a
Toeplitz mask on the image grid (Choromanski et al. 2022, "From block-Toeplitz matrices to
differential equations on graphs", arXiv:2107.07999): the mask between two patches depends only
on their 2-D offset, one learnable scalar per offset and head. The paper gives no details
(arXiv:2410.03462 names the baseline in Sec. 4 and Table 1 and discusses block-Toeplitz masks
only in general in App. B); the authors' Scenic code (google-research/scenic,
`scenic/model_lib/layers/top_attention.py`, `top_type="toeplitz"`) does, and this follows it:

    M[h, i, j] = t[h, (r_i - r_j, c_i - c_j)]          one scalar per offset, initialised to 1
    A[h, i, j] = relu(q_i) . relu(k_j) * |M[h, i, j]|   ReLU linear-attention kernel
    out_i = sum_j A[h, i, j] v_j / sum_j A[h, i, j]

with a class token (`cls_token=True`, token 0) attending to and attended by every patch with
mask 1, as GRF's masks here. The mask is built densely, O(N^2), as Scenic does; the O(N log N)
of Table 1 is what an FFT (block-Toeplitz matrix-vector product) would cost, not implemented
here. Scenic stores `[heads, 4 nx ny]` offsets (indices `(dx + nx) 2ny + (dy + ny)`, some never
used); ours stores exactly the `(2 gh - 1)(2 gw - 1)` offsets a `gh x gw` grid has. Scenic adds
1e-8 to the features and weights; ours divides only where the weights sum above zero (a query
whose every weight is zero outputs zeros, as `grf_dense`).

Masks: key padding only (a general mask does not keep the Toeplitz structure).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from attention import cost, registry
from attention.grf import _as_tuple, _key_padding, dense_masked_linear
from attention.kernels import check_qkv

__all__ = ["init", "apply", "flops", "offset_index"]


def _grid(name: str, grid, n_nodes: int) -> tuple[int, int]:
    if grid is None:
        side = math.isqrt(n_nodes)
        if side * side != n_nodes:
            raise ValueError(
                f"{name}: grid=None needs a square number of grid tokens, got {n_nodes}; pass "
                "grid=(h, w)"
            )
        return side, side
    grid = _as_tuple(grid)
    if len(grid) != 2 or grid[0] * grid[1] != n_nodes:
        raise ValueError(f"{name}: grid={grid} does not have {n_nodes} tokens")
    return grid


@functools.lru_cache(maxsize=32)
def offset_index(gh: int, gw: int) -> np.ndarray:
    """`[N, N]` int32 (N = gh * gw, row-major): the row of the `(2 gh - 1)(2 gw - 1)` offset
    table for the pair (i, j), `(r_i - r_j + gh - 1)(2 gw - 1) + (c_i - c_j + gw - 1)`."""
    rows, cols = np.divmod(np.arange(gh * gw), gw)
    dr = rows[:, None] - rows[None, :] + gh - 1
    dc = cols[:, None] - cols[None, :] + gw - 1
    index = (dr * (2 * gw - 1) + dc).astype(np.int32)
    index.flags.writeable = False
    return index


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    grid=None,
    cls_token: bool = False,
):
    """Creates `{"t": [H, (2 gh - 1)(2 gw - 1)]}` of ones (Scenic's initialisation): the grid
    is `grid`, or the square one of `max_len` tokens (less the class token)."""
    del key, head_dim, model_dim, layer_index, num_layers
    if max_len is not None:
        gh, gw = _grid("toeplitz", grid, max_len - int(cls_token))
    elif grid is not None:
        gh, gw = _as_tuple(grid)
    else:
        raise ValueError("toeplitz: init needs grid=(h, w) or max_len (a square grid)")
    return {"t": jnp.ones((num_heads, (2 * gh - 1) * (2 * gw - 1)), jnp.float32)}


@functools.partial(jax.jit, static_argnames=("grid", "cls_token"))
def _apply_jit(params, q, k, v, mask, *, grid, cls_token):
    check_qkv(q, k, v)
    b, n, h, _ = q.shape
    if k.shape[1] != n:
        raise ValueError(
            f"toeplitz: queries and keys must be the same {n} tokens, got {k.shape[1]}"
        )
    gh, gw = _grid("toeplitz", grid, n - int(cls_token))
    t = jnp.asarray(params["t"])
    if t.shape != (h, (2 * gh - 1) * (2 * gw - 1)):
        raise ValueError(
            f"toeplitz: params['t'] has shape {t.shape}; a {gh}x{gw} grid with {h} heads needs "
            f"{(h, (2 * gh - 1) * (2 * gw - 1))}"
        )
    acc = jnp.promote_types(jnp.promote_types(q.dtype, v.dtype), jnp.float32)
    m = jnp.abs(t.astype(acc))[:, offset_index(gh, gw)]  # [H, N_g, N_g]
    if cls_token:
        m = jnp.pad(m, [(0, 0), (1, 0), (1, 0)], constant_values=1.0)
    key_valid = _key_padding("toeplitz", mask, b, n)
    return dense_masked_linear(q, k, v, m[None], key_valid, acc)


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    grid=None,
    cls_token: bool = False,
):
    """Toeplitz-masked linear attention.

    Args:
      params: `init` output, `{"t": [H, (2 gh - 1)(2 gw - 1)]}`.
      q, k: `[B, N, H, Dk]`; v: `[B, N, H, Dv]`; N = gh * gw (+ 1 with the class token).
      mask: None or key padding `[B, N]` (or `[B, 1, 1, N]`); True = attend.
      key, train: unused (deterministic).
      grid: `(gh, gw)` of the tokens, row-major; None = square.
      cls_token: token 0 is a class token outside the grid (mask 1 to and from every token).

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`, computed in float32 (float64 for float64 inputs).
    """
    del key, train
    return _apply_jit(params, q, k, v, mask, grid=_as_tuple(grid), cls_token=bool(cls_token))


def _check(h, num_tokens) -> None:
    if num_tokens is not None:
        _grid("toeplitz", h["grid"], num_tokens - int(h["cls_token"]))


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    del hp
    # Dense masked linear attention: relu(Q) relu(K)^T and A [V, 1], 2·n·m·h·(dk + dv + 1);
    # the mask is a gather (0 FLOPs) times |t|, one product per score, and the key-padding
    # product when masked; ReLU on the features, the division per output.
    scores = c.n * c.m * c.h
    mm = 2 * scores * (c.dk + c.dv + 1)
    ew = scores * (1 + c.masked) + c.h * (c.n + c.m) * c.dk + c.n * c.h * c.dv
    return mm, ew


registry.register(
    "toeplitz",
    check=_check,
    apply=apply,
    init=init,
    flops=flops,
    defaults={"grid": None, "cls_token": False},
    doc="linear attention with a learned Toeplitz (2-D offset) mask on the token grid (GRF "
    "Table 1's baseline), O(N^2) dense",
)
