"""The graph random walks of GRF topological masking: graphs, walks, features, their support.

Reid et al., "Linear Transformer Topological Masking with Graph Random Features",
arXiv:2410.03462 (2024). Everything `attention.grf` needs about the walks and computes no
attention; `attention.grf` holds the masked linear-attention kernels and the registered
mechanisms (`grf`, `grf_dense`) that consume them.

  * The graph of each `graph` kind as a padded neighbour list (`_neighbors`): the 4-neighbour
    patch grid (`_grid_neighbors`), the directed k-NN graph of the `coords` input, or the
    `adjacency` input, built with `attention.graphs`.
  * The modulation f, `[H, max_walk_len + 1]` per head (Remark 3.1, Alg. 1: the f_t are what is
    learned): its initialisation `exp(-f_decay * t)` (`_init_f`) and its check (`_modulation`).
  * Walk sampling with `attention.graphs.random_walks` (halting walks with importance-weighted
    loads, Sec. 3.3): frozen at `init`, per head, with their support (`_frozen_walks`), or fresh
    on every call, per batch element and head (`_fresh_walks`).
  * The sparse graph random features of the walks, `phi_i = (1/n) sum_{w, t} load_{w,t} f_t
    e_{node_{w,t}}` (Eq. 10; `walk_features`); for frozen walks their node-major support, built
    once in numpy (`walk_support`), and the feature weights on it (`support_weights`).
  * The exact mask `Phi_G Phi_G^T`, `Phi_G = sum_t f_t W^t` (Remark 3.1; `exact_mask`): the
    n -> infinity limit of the features' estimate, which `grf_dense` attends with.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from attention import graphs

__all__ = [
    "walk_features",
    "walk_support",
    "support_buckets",
    "support_weights",
    "bucket_weights",
    "exact_mask",
]

_GRAPHS = ("grid", "knn", "input")


# ------------------------------------------------------------------------------------ graphs


def _grid_neighbors(name, grid, n_nodes: int) -> np.ndarray:
    """The 4-neighbour patch grid `grid=(h, w)` (square when None) as a numpy neighbour list
    `[n_nodes, 4]`; raises when the grid does not have `n_nodes` nodes."""
    if grid is None:
        side = math.isqrt(n_nodes)
        if side * side != n_nodes:
            raise ValueError(
                f"{name}: graph='grid' with grid=None needs a square number of graph nodes, "
                f"got {n_nodes}; pass grid=(h, w)"
            )
        grid = (side, side)
    if len(grid) != 2 or grid[0] * grid[1] != n_nodes:
        raise ValueError(f"{name}: grid={tuple(grid)} does not have {n_nodes} graph nodes")
    return graphs.grid_graph(int(grid[0]), int(grid[1]))


def _neighbors(name, graph, grid, knn_k, n_nodes, b, coords, adjacency, node_valid):
    """The graph's neighbour list: `[N_g, K]` (shared by the batch) or `[B, N_g, K]`."""
    if graph == "grid":
        return jnp.asarray(_grid_neighbors(name, grid, n_nodes))
    if graph == "knn":
        if coords is None:
            raise ValueError(f"{name}: graph='knn' needs the `coords` input [B, N, C]")
        coords = jnp.asarray(coords)
        if coords.ndim == 2:
            coords = jnp.broadcast_to(coords, (b, *coords.shape))
        if coords.ndim != 3 or coords.shape[:2] != (b, n_nodes):
            raise ValueError(
                f"{name}: coords must be [B, N_graph, C] = [{b}, {n_nodes}, C], got {coords.shape}"
            )
        if not isinstance(knn_k, int | np.integer) or not 1 <= knn_k < n_nodes:
            raise ValueError(f"{name}: knn_k must be in [1, {n_nodes - 1}], got {knn_k!r}")
        return graphs.batch_knn_graph(coords, int(knn_k), node_valid)
    if adjacency is None:
        raise ValueError(
            f"{name}: graph='input' needs the `adjacency` input, a neighbour list [B, N, K]"
        )
    adjacency = jnp.asarray(adjacency)
    if not jnp.issubdtype(adjacency.dtype, jnp.integer):
        raise ValueError(
            f"{name}: adjacency must be an integer neighbour list (-1 = empty), got "
            f"{adjacency.dtype}"
        )
    if (
        adjacency.ndim not in (2, 3)
        or adjacency.shape[-2] != n_nodes
        or (adjacency.ndim == 3 and adjacency.shape[0] != b)
    ):
        raise ValueError(
            f"{name}: adjacency must be [B, N_graph, K] or [N_graph, K] with B={b}, "
            f"N_graph={n_nodes}; got {adjacency.shape}"
        )
    return adjacency.astype(jnp.int32)


# ---------------------------------------------------------------------- the modulation f


def _init_f(num_heads: int, max_walk_len: int, f_decay: float):
    """f's initialisation, `exp(-f_decay * t)` for every head: float32 `[H, max_walk_len + 1]`."""
    t = jnp.arange(max_walk_len + 1, dtype=jnp.float32)
    return jnp.tile(jnp.exp(-f_decay * t)[None], (num_heads, 1))


def _modulation(name, params, h: int, max_walk_len: int, dtype):
    """`params["f"]`, checked to be `[H, max_walk_len + 1]`, in `dtype`."""
    f = params.get("f") if isinstance(params, Mapping) else None
    if f is None or jnp.shape(f) != (h, max_walk_len + 1):
        got = None if f is None else jnp.shape(f)
        raise ValueError(
            f"{name}: params['f'] must have shape [num_heads, max_walk_len + 1] = "
            f"{(h, max_walk_len + 1)}, got {got}"
        )
    return jnp.asarray(f).astype(dtype)


# ------------------------------------------------------------------------------------- walks


def _frozen_walks(key, nbrs, *, num_heads, n_walks, max_walk_len, p_halt, antithetic):
    """`init`'s frozen walks on the fixed graph `nbrs` `[N_g, K]`, independent per head.

    Returns `{"walk_nodes", "walk_loads"}` (float32 loads) plus their support bucketed by row
    width (`support_buckets`): `walk_slots` and, for every bucket b, `support_rows_{b}` and
    `support_tokens_{b}`; except under abstract evaluation (see `grf.init`).
    """
    nodes, loads = graphs.random_walks(
        key,
        nbrs,
        n_walks=n_walks,
        max_len=max_walk_len,
        p_halt=p_halt,
        antithetic=antithetic,
        sample_shape=(num_heads,),
        dtype=jnp.float32,
    )
    buffers = {"walk_nodes": nodes, "walk_loads": loads}
    try:
        walk_slots, buckets = support_buckets(nodes, loads)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        # Abstract evaluation (jax.eval_shape, nnx.eval_shape, jit): the support's widths
        # depend on the sampled walks, so only the walks exist and `apply` takes the
        # general path.
        return buffers
    buffers["walk_slots"] = jnp.asarray(walk_slots)
    for b, (rows, tokens) in enumerate(buckets):
        buffers[f"support_rows_{b}"] = jnp.asarray(rows)
        buffers[f"support_tokens_{b}"] = jnp.asarray(tokens)
    return buffers


def _fresh_walks(key, nbrs, *, b, h, n_walks, max_walk_len, p_halt, antithetic, dtype):
    """Walks sampled from `key` for one call on `nbrs` (`[N_g, K]` or `[B, N_g, K]`).

    Independent walks per batch element and head (the graph may differ per element):
    `(nodes, loads)`, each `[B, H, N_g, n_walks, max_walk_len + 1]`.
    """
    return graphs.random_walks(
        key,
        nbrs,
        n_walks=n_walks,
        max_len=max_walk_len,
        p_halt=p_halt,
        antithetic=antithetic,
        sample_shape=(b, h) if nbrs.ndim == 2 else (h,),
        dtype=dtype,
    )


# ---------------------------------------------------------------------------- the features


def walk_features(nodes, loads, f, *, cls_token: bool = False):
    """Sparse GRFs from walks: `phi_i = sum_s val[i, s] e_{idx[i, s]}` (Eq. 10).

    Args:
      nodes: int `[..., H, N_g, n_walks, T]` walk positions (T = max_walk_len + 1).
      loads: `[..., H, N_g, n_walks, T]` importance-weighted loads.
      f: `[H, T]` modulation coefficients.
      cls_token: shift node ids by one and prepend an empty feature row for token 0.

    Returns:
      `(idx, val)`, each `[..., H, N, n_walks * T]` with `N = N_g + cls_token`.
    """
    n_walks = nodes.shape[-2]
    val = loads * f[:, None, None, :] / n_walks
    idx = nodes.reshape(*nodes.shape[:-2], -1) + int(cls_token)
    val = val.reshape(*val.shape[:-2], -1)
    if cls_token:
        pad = [(0, 0)] * (idx.ndim - 2) + [(1, 0), (0, 0)]
        idx, val = jnp.pad(idx, pad), jnp.pad(val, pad)
    return idx, val


# -------------------------------------------------- frozen walks: the node-major support


def walk_support(nodes, loads):
    """The node-major support of frozen walks: which start nodes' features touch each node.

    Built once at `init` (numpy), so that the attention gathers only the distinct
    `(start node i, visited node v)` pairs of the live walk slots instead of all
    `n_walks * (max_walk_len + 1)` slots of every feature, most of them dead (halted walkers,
    load 0) or repeats of a node.

    Args:
      nodes: int `[H, N_g, n_walks, T]` walk positions; loads: `[H, N_g, n_walks, T]` their
        loads (as from `graphs.random_walks`; a slot is live where its load is nonzero).

    Returns:
      `(walk_slots, support_tokens)`, numpy int32:
      `support_tokens` `[H, N_g, C]`: row v lists, in ascending order, the start nodes i whose
      live walks visit v; `C` is the largest such count over nodes and heads, and shorter rows
      are padded with node 0 (a padding entry's weight stays 0).
      `walk_slots` `[H, N_g, n_walks, T]`: the flat position `v * C + c` in its head's
      `support_tokens` of walk slot `(i, w, t)` (visiting v, with `support_tokens[v, c] = i`),
      or `N_g * C` for a dead slot.
    """
    nodes, loads = np.asarray(nodes), np.asarray(loads)
    h, n, n_walks, steps = nodes.shape
    start = np.repeat(np.arange(n, dtype=np.int64), n_walks * steps)
    heads = []
    for nodes_h, loads_h in zip(nodes.reshape(h, -1), loads.reshape(h, -1), strict=True):
        live = np.flatnonzero(loads_h != 0)
        pair = nodes_h[live].astype(np.int64) * n + start[live]  # (visited node, start node)
        order = np.argsort(pair, kind="stable")
        pair = pair[order]
        first = np.ones(len(pair), bool)
        first[1:] = pair[1:] != pair[:-1]
        unique = pair[first]
        node, token = unique // n, unique % n
        count = np.bincount(node, minlength=n)
        rank = np.arange(len(unique)) - (np.cumsum(count) - count)[node]
        heads.append((live, order, np.cumsum(first) - 1, node, token, rank))
    width = max(int(np.bincount(x[3], minlength=n).max()) for x in heads)
    walk_slots = np.full((h, n * n_walks * steps), n * width, np.int32)
    support_tokens = np.zeros((h, n * width), np.int32)
    for head, (live, order, which, node, token, rank) in enumerate(heads):
        position = node * width + rank
        walk_slots[head, live[order]] = position[which]
        support_tokens[head, position] = token
    return walk_slots.reshape(nodes.shape), support_tokens.reshape(h, n, width)


def support_weights(walk_slots, loads, f, width: int):
    """The feature weights on the node-major support: `phi_i[v]` at `support_tokens[v, c] = i`.

    `w[h, v, c] = (1/n) sum of load_{w,t} f_t over the walk slots (i, w, t) at v`: the same
    estimate as `walk_features` (Eq. 10), with the slots of one (i, v) pair added up front.

    Args:
      walk_slots: int `[H, N_g, n_walks, T]` from `walk_support`.
      loads: `[H, N_g, n_walks, T]` walk loads.
      f: `[H, T]` modulation coefficients.
      width: C, the support width (`support_tokens.shape[-1]`).

    Returns:
      `[H, N_g, C]` in the dtype of `loads * f`.
    """
    h, n, n_walks, _ = walk_slots.shape
    size = n * width
    val = loads * f[:, None, None, :] / n_walks
    flat = walk_slots + (jnp.arange(h, dtype=walk_slots.dtype) * size)[:, None, None, None]
    flat = jnp.where(walk_slots < size, flat, h * size)  # dead slots: dropped
    w = jnp.zeros(h * size, val.dtype).at[flat.reshape(-1)].add(val.reshape(-1), mode="drop")
    return w.reshape(h, n, width)


# Support rows are bucketed by width into at most this many buckets (`support_buckets`). A row
# of width C costs ~C^2 (Dk + Dv) in the C x C form; padding every row to the widest (45-53 at
# the defaults, average 34-36) wastes about half of it. Measured at the defaults (8 heads), the
# FLOP saving sum_b R_b C_b^2 / (R C_max^2) of the best 2 / 3 / 4 / 6 buckets is 1.45 / 1.62 /
# 1.71 / 1.81x on a 32 x 32 grid and 1.59 / 1.78 / 1.88 / 1.97x on 128 x 128; every bucket is
# one more scan (compile time, per-step overhead), so 4. The time saved is smaller than the
# FLOPs saved: on this project's 2-core CPU a row's forward + backward time grew about as
# C (1 + C / 64) with its width C (gathers and scatters), and 4 buckets made forward +
# backward 1.2-1.25x faster in CPU time (B1 H8 D64, 4k and 16k tokens, machine under load).
# Widths are not rounded to multiples of 8 (tried: padding to 56 instead of 52 was slower).
SUPPORT_BUCKETS = 4


def _bucket_widths(counts, max_buckets: int) -> list[int]:
    """The widths (ascending) of at most `max_buckets` buckets that minimise
    `sum_rows width(row)^2` with every row's count at most its bucket's width: an exact dynamic
    programme over the distinct counts (at most `n_walks * T` of them)."""
    values, freq = np.unique(counts, return_counts=True)
    m = len(values)
    before = np.concatenate([[0], np.cumsum(freq)]).astype(np.float64)
    cost = np.full((max_buckets + 1, m + 1), np.inf)
    cost[0, 0] = 0.0
    choice = np.zeros((max_buckets + 1, m + 1), np.int64)
    for k in range(1, max_buckets + 1):
        for j in range(1, m + 1):
            # bucket k covers values[i:j] at width values[j - 1]
            options = cost[k - 1, :j] + (before[j] - before[:j]) * float(values[j - 1]) ** 2
            choice[k, j] = int(np.argmin(options))
            cost[k, j] = options[choice[k, j]]
    k = int(np.argmin(cost[1:, m])) + 1  # fewer buckets when they cost no more
    widths, j = [], m
    while j > 0:
        widths.append(int(values[j - 1]))
        j, k = int(choice[k, j]), k - 1
    return widths[::-1]


def support_buckets(nodes, loads, max_buckets: int = SUPPORT_BUCKETS):
    """The node-major support (`walk_support`) with its rows bucketed by width.

    Every row `(head h, node v)` lists the `c_hv` start nodes whose live walks visit v; instead
    of padding all rows to the largest count, the rows are grouped into at most `max_buckets`
    buckets, each padded to its own largest count (widths chosen to minimise
    `sum_rows width^2`, the C x C form's cost; `_bucket_widths`). The sums are the same.

    Args:
      nodes, loads: as `walk_support`.
      max_buckets: at most this many buckets (1: `walk_support`'s single width).

    Returns:
      `(walk_slots, buckets)`, numpy int32. `buckets` is a list of `(rows, tokens)`, widths
      ascending: `rows` `[R_b]` the flat row ids `h * N_g + v` of the bucket (ascending, so head
      by head) and `tokens` `[R_b, C_b]` their start nodes, as in `walk_support` (ascending,
      padded with node 0 of weight 0). Every row with a nonzero count is in exactly one bucket
      (rows no walk visits are in none). `walk_slots` `[H, N_g, n_walks, T]`: the flat position
      of walk slot `(i, w, t)` in the concatenation of the buckets' `tokens` (bucket b's entry
      `[r, c]` at `sum_{b' < b} R_b' C_b' + r * C_b + c`), or that total size for a dead slot.
    """
    old_slots, old_tokens = walk_support(nodes, loads)
    h, n, width = old_tokens.shape
    live = old_slots.reshape(h, -1) < n * width
    position = old_slots.reshape(h, -1).astype(np.int64) + (np.arange(h) * n * width)[:, None]
    position = np.unique(position[live])  # every used (row, c) entry once
    counts = np.bincount(position // width, minlength=h * n)
    used = np.flatnonzero(counts)
    widths = _bucket_widths(counts[used], max_buckets)
    bucket_of = np.searchsorted(widths, counts[used])
    old_tokens = old_tokens.reshape(h * n, width)
    old_to_new = np.full(h * n * width, -1, np.int64)  # old flat entry -> new flat entry
    buckets, offset = [], 0
    for b, w_b in enumerate(widths):
        rows = used[bucket_of == b]
        c = np.arange(w_b)  # w_b <= width
        old_to_new[rows[:, None] * width + c] = offset + np.arange(len(rows))[:, None] * w_b + c
        buckets.append((rows.astype(np.int32), np.ascontiguousarray(old_tokens[rows, :w_b])))
        offset += len(rows) * w_b
    old_flat = old_slots.reshape(h, -1).astype(np.int64) + (np.arange(h) * n * width)[:, None]
    walk_slots = np.where(live, old_to_new[np.where(live, old_flat, 0)], offset)
    return walk_slots.reshape(old_slots.shape).astype(np.int32), buckets


def bucket_weights(walk_slots, loads, f, shapes):
    """The feature weights on the bucketed support (`support_buckets`), one array per bucket.

    The same estimate as `support_weights` (Eq. 10), scattered into the concatenated buckets.

    Args:
      walk_slots: int `[H, N_g, n_walks, T]` from `support_buckets`.
      loads: `[H, N_g, n_walks, T]` walk loads.
      f: `[H, T]` modulation coefficients.
      shapes: the buckets' `(R_b, C_b)` (their `tokens` shapes).

    Returns:
      a list of `[R_b, C_b]` in the dtype of `loads * f`.
    """
    n_walks = walk_slots.shape[2]
    sizes = [int(r) * int(c) for r, c in shapes]
    val = loads * f[:, None, None, :] / n_walks
    w = jnp.zeros(sum(sizes), val.dtype)
    w = w.at[walk_slots.reshape(-1)].add(val.reshape(-1), mode="drop")  # dead slots: dropped
    out, start = [], 0
    for (r, c), size in zip(shapes, sizes, strict=True):
        out.append(w[start : start + size].reshape(r, c))
        start += size
    return out


# ------------------------------------------------------------------------ the exact mask


def exact_mask(nbrs, f):
    """The exact mask `Phi Phi^T` with `Phi = sum_t f[h, t] W^t` (= sum_k alpha_k W^k, W = W^T).

    Powers of W are applied through the neighbour list (O(N^2 K) each); the product
    `Phi Phi^T` is a dense O(N^3) matmul.

    Args:
      nbrs: int `[N, K]` neighbour list (-1 = empty slot).
      f: `[H, T]` modulation coefficients.

    Returns:
      `[H, N, N]` in the dtype of f.
    """
    nbrs = jnp.asarray(nbrs)
    n = nbrs.shape[0]
    w = graphs.edge_weights(nbrs, f.dtype)
    safe = jnp.maximum(nbrs, 0)
    power = jnp.eye(n, dtype=f.dtype)

    def step(p, f_t):
        # (W P)[i] = sum_r W[i, nbrs[i, r]] P[nbrs[i, r]]
        p = sum(w[:, r, None] * p[safe[:, r]] for r in range(nbrs.shape[1]))
        return p, f_t[:, None, None] * p[None]

    _, terms = jax.lax.scan(step, power, f[:, 1:].T)
    phi = f[:, 0, None, None] * power[None] + terms.sum(axis=0)
    return jnp.einsum("hiv,hjv->hij", phi, phi)
