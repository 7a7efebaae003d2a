"""Graphs over tokens and the halting random walks that graph random features (GRFs) are built from.

Graphs are padded neighbour lists: `nbrs[i, r]` is the r-th neighbour of node i, `-1` marks an
empty slot (the order of the slots does not matter). Degrees are the counts of valid slots, and
the weighted adjacency is the symmetric normalisation used by the paper (Reid et al. 2024,
arXiv:2410.03462, Sec. 3.1),

    W_uv = 1 / sqrt(d_u d_v)   for every listed edge u -> v,

so that a grid or any symmetric list gives `D^{-1/2} A D^{-1/2}`, and a directed k-NN list (every
node has out-degree k) gives `A / k`. A padded list costs O(N K) memory, never O(N^2).

Walks (Sec. 3.3, Eqs. 9-10; the paper does not write p(omega) out, so the load recursion is the
authors' code's, google-research/scenic `scenic/model_lib/layers/random_walk_utils.py`,
`walk_to_loads_list`): a walker starts at node i, and before every hop halts with probability
`p_halt`, so step t exists with probability `(1 - p_halt)^t`; otherwise it moves to a uniform
random neighbour. Its importance-weighted load is

    load_0 = 1,   load_{t+1} = load_t * W_{u v} * d_u / (1 - p_halt)      (u -> v the t-th hop),

i.e. the walk's edge-weight product over the probability of its prefix, so that
`E[load_t 1(walker at v at step t)] = (W^t)_{iv}`. Walks are cut after `max_len` hops (exact when
the modulation coefficients f_t vanish beyond it). Antithetic termination (Reid et al. 2023,
"Quasi-Monte Carlo graph random features", arXiv:2305.12470) pairs walkers of the same start
node so that their halting uniforms at every step are `u` and `(u + 1/2) mod 1`: the marginals
are unchanged (so the estimator stays unbiased) but the pair's lengths are negatively
correlated.

Fixed graphs (image grids, a fixed point cloud) are built in numpy; per-batch k-NN graphs from
coordinates and the walk sampler are jax, so they run inside `jit`.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "grid_graph",
    "knn_graph",
    "batch_knn_graph",
    "pack_neighbors",
    "degrees",
    "edge_weights",
    "dense_adjacency",
    "random_walks",
]


def grid_graph(h: int, w: int) -> np.ndarray:
    """The 4-neighbour grid of an `h x w` patch image (row-major node id `r * w + c`).

    Returns:
      int32 `[h * w, 4]` neighbour list (up, down, left, right; `-1` off the border).
    """
    if h < 1 or w < 1:
        raise ValueError(f"grid must have positive sides, got {(h, w)}")
    nbrs = np.full((h * w, 4), -1, np.int32)
    for r in range(h):
        for c in range(w):
            for slot, (dr, dc) in enumerate(((-1, 0), (1, 0), (0, -1), (0, 1))):
                rr, cc = r + dr, c + dc
                if 0 <= rr < h and 0 <= cc < w:
                    nbrs[r * w + c, slot] = rr * w + cc
    return nbrs


def knn_graph(coords, k: int, valid=None) -> np.ndarray:
    """Directed k-NN graph of a fixed point cloud (numpy; self excluded).

    Args:
      coords: `[N, C]` point coordinates.
      k: neighbours per point.
      valid: optional boolean `[N]`; invalid points are nobody's neighbour and get no neighbours.

    Returns:
      int32 `[N, k]`; `-1` where fewer than k valid other points exist.
    """
    coords = np.asarray(coords, np.float64)
    n = coords.shape[0]
    valid = np.ones(n, bool) if valid is None else np.asarray(valid, bool)
    _check_k(k, n)
    d2 = ((coords[:, None, :] - coords[None, :, :]) ** 2).sum(-1)
    d2[np.arange(n), np.arange(n)] = np.inf
    d2[:, ~valid] = np.inf
    order = np.argsort(d2, axis=1, kind="stable")[:, :k]
    nbrs = np.where(np.take_along_axis(d2, order, 1) < np.inf, order, -1).astype(np.int32)
    nbrs[~valid] = -1
    return nbrs


def batch_knn_graph(coords, k: int, valid=None, *, chunk: int = 512):
    """Directed k-NN graphs of a batch of point clouds (jax; self excluded).

    Distances are computed for `chunk` query points at a time, so memory is O(chunk * N), not
    O(N^2). The graph carries no gradient (indices are discrete).

    Args:
      coords: `[B, N, C]` (or `[N, C]`) coordinates.
      k: neighbours per point.
      valid: optional boolean `[B, N]` (or `[N]`); invalid points (padding) are nobody's neighbour
        and get no neighbours.
      chunk: query points per distance block.

    Returns:
      int32 `[B, N, k]` (or `[N, k]`); `-1` where fewer than k valid other points exist.
    """
    coords = jax.lax.stop_gradient(jnp.asarray(coords))
    if coords.ndim == 2:
        valid = None if valid is None else jnp.asarray(valid)[None]
        return batch_knn_graph(coords[None], k, valid, chunk=chunk)[0]
    if coords.ndim != 3:
        raise ValueError(f"coords must be [B, N, C] or [N, C], got shape {coords.shape}")
    b, n, _ = coords.shape
    _check_k(k, n)
    valid = jnp.ones((b, n), bool) if valid is None else jnp.broadcast_to(valid, (b, n))
    ids = jnp.arange(n)

    def one_cloud(x, ok):
        def rows(i):
            d2 = jnp.sum((x[i] - x) ** 2, axis=-1)
            d2 = jnp.where((ids == i) | ~ok, jnp.inf, d2)
            neg, idx = jax.lax.top_k(-d2, k)
            return jnp.where(jnp.isfinite(neg) & ok[i], idx, -1).astype(jnp.int32)

        return jax.lax.map(rows, ids, batch_size=min(chunk, n))

    return jax.vmap(one_cloud)(coords, valid)


def _check_k(k: int, n: int) -> None:
    if not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"knn_k must be a positive integer, got {k!r}")
    if k > n - 1:
        raise ValueError(f"knn_k={k} needs at least k + 1 = {k + 1} points, got {n}")


def pack_neighbors(nbrs):
    """Moves the valid slots of every row of `nbrs` (`[..., N, K]`, `-1` = empty) to the front."""
    nbrs = jnp.asarray(nbrs)
    order = jnp.argsort(nbrs < 0, axis=-1, stable=True)
    return jnp.take_along_axis(nbrs, order, axis=-1)


def degrees(nbrs):
    """Out-degrees `[..., N]` (int32) of a neighbour list `[..., N, K]`."""
    return jnp.sum(jnp.asarray(nbrs) >= 0, axis=-1, dtype=jnp.int32)


def edge_weights(nbrs, dtype=jnp.float32):
    """`W_{i, nbrs[i, r]} = 1 / sqrt(d_i d_j)` per slot, `[..., N, K]`; 0 on empty slots.

    A neighbour with no out-edges (possible only in directed lists) counts as degree 1.
    """
    nbrs = jnp.asarray(nbrs)
    deg = degrees(nbrs).astype(dtype)
    dj = jnp.take_along_axis(deg, jnp.maximum(nbrs, 0).reshape(*nbrs.shape[:-2], -1), axis=-1)
    dj = jnp.maximum(dj.reshape(nbrs.shape), 1.0)
    w = jax.lax.rsqrt(jnp.maximum(deg, 1.0)[..., None] * dj)
    return jnp.where(nbrs >= 0, w, 0.0)


def dense_adjacency(nbrs, dtype=jnp.float32):
    """The dense normalised adjacency `W` `[..., N, N]` of a neighbour list (O(N^2): tests only)."""
    nbrs = jnp.asarray(nbrs)
    n = nbrs.shape[-2]
    onehot = jax.nn.one_hot(jnp.where(nbrs >= 0, nbrs, n), n + 1, dtype=dtype)[..., :n]
    return jnp.einsum("...ik,...ikj->...ij", edge_weights(nbrs, dtype), onehot)


@functools.partial(
    jax.jit,
    static_argnames=("n_walks", "max_len", "p_halt", "antithetic", "sample_shape", "dtype"),
)
def random_walks(
    key,
    nbrs,
    *,
    n_walks: int,
    max_len: int,
    p_halt: float,
    antithetic: bool = False,
    sample_shape: tuple[int, ...] = (),
    dtype=jnp.float32,
):
    """Halting random walks with importance-weighted loads from every node of a graph.

    Args:
      key: PRNG key.
      nbrs: int `[..., N, K]` neighbour list(s) (`-1` = empty slot; any slot order); leading
        axes are a batch of graphs.
      n_walks: walkers per start node.
      max_len: hops after which a walk is cut.
      p_halt: halting probability before every hop, in (0, 1).
      antithetic: pair walkers w and w + ceil(n_walks / 2) of the same start node with
        antithetic halting uniforms.
      sample_shape: independent walk ensembles per graph (e.g. `(num_heads,)`).
      dtype: float dtype of the loads.

    Returns:
      `(nodes, loads)`, each `[..., *sample_shape, N, n_walks, max_len + 1]`: the node walker w
      of start node i is at after t hops (`nodes[..., i, w, 0] = i`) and its load; once a walk
      has halted (or reached a node with no neighbours) its later slots repeat the last node with
      load 0.
    """
    nbrs = jnp.asarray(nbrs)
    batch, (n, k) = nbrs.shape[:-2], nbrs.shape[-2:]
    nb, ns = math.prod(batch), math.prod(sample_shape)
    # One draw for everything: halting uniforms, then neighbour-choice uniforms. Drawn 1-D and
    # reshaped: multi-dimensional threefry draws take seconds longer to compile on CPU.
    u = jax.random.uniform(key, (nb * ns * max_len * n * 2 * n_walks,), dtype)
    u = u.reshape(nb, ns, max_len, n, 2 * n_walks)
    walk = functools.partial(
        _walks, n_walks=n_walks, p_halt=p_halt, antithetic=antithetic, dtype=dtype
    )
    nodes, loads = jax.vmap(jax.vmap(walk, in_axes=(0, None)))(u, nbrs.reshape(nb, n, k))
    shape = (*batch, *sample_shape, n, n_walks, max_len + 1)
    return nodes.reshape(shape), loads.reshape(shape)


def _walks(u, nbrs, *, n_walks, p_halt, antithetic, dtype):
    """Walks on one graph `nbrs` `[N, K]` from uniforms `u` `[max_len, N, 2 * n_walks]`."""
    nbrs = pack_neighbors(nbrs)
    n = nbrs.shape[0]
    deg = degrees(nbrs)
    degf = deg.astype(dtype)
    scale = 1.0 / (1.0 - p_halt)
    half = -(-n_walks // 2)

    def hop(carry, u):
        node, load = carry
        if antithetic:
            u_halt = jnp.concatenate([u[:, :half], jnp.mod(u[:, :half] + 0.5, 1.0)], axis=1)
            u_halt = u_halt[:, :n_walks]
        else:
            u_halt = u[:, :n_walks]
        d = deg[node]
        moves = (load != 0) & (u_halt >= p_halt) & (d > 0)
        r = jnp.floor(u[:, n_walks:] * d).astype(jnp.int32)
        nxt = nbrs[node, jnp.clip(r, 0, jnp.maximum(d - 1, 0))]
        nxt = jnp.where(moves, nxt, node)
        # W_uv d_u / (1 - p) with W_uv = 1/sqrt(d_u d_v) telescopes to sqrt(d_u / d_v) / (1 - p).
        ratio = jnp.sqrt(degf[node] / jnp.maximum(degf[nxt], 1.0)) * scale
        load = jnp.where(moves, load * ratio, 0.0)
        return (nxt, load), (nxt, load)

    start = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[:, None], (n, n_walks))
    ones = jnp.ones((n, n_walks), dtype)
    _, (nodes, loads) = jax.lax.scan(hop, (start, ones), u)
    nodes = jnp.concatenate([start[None], nodes], axis=0)
    loads = jnp.concatenate([ones[None], loads], axis=0)
    return jnp.moveaxis(nodes, 0, -1), jnp.moveaxis(loads, 0, -1)
