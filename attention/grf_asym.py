"""Asymmetric GRF attention: linear attention masked by query-side graph random features only.

Reid et al., "Linear Transformer Topological Masking with Graph Random Features",
arXiv:2410.03462 (2024), App. D (Eqs. 22-27, Alg. 2), as the HD-VPD experiments use it (Sec. 4,
App. C.3). With different modulations on the two sides and the key side's the identity
(f^(2) = delta_0, so Phi^(2) = I and no key-side walks), the mask is the query side's features
themselves (Eq. 24),

    M = Phi^(1) Phi^(2)T = Phi^(1),   Phi^(1) = sum_{t=0}^{hops} f_t W^t,

and masked linear attention with ReLU features (Eq. 25; phi = ReLU as in HD-VPD, App. C.3) is a
sum over the tokens the walks of node i visit (Eq. 26, Alg. 2):

    out_i = sum_s relu(q_i).relu(k_{idx_s}) f_{lvl_s} load_s v_{idx_s}
            / sum_s relu(q_i).relu(k_{idx_s}) f_{lvl_s} load_s.

Alg. 2 divides by `S_i * n`; the extra 1/n scales every output by 1/n and is dropped (our
reading of Alg. 2: a typo; the paper does not discuss it): numerator and denominator accumulate
over the same walks, so their ratio is already normalised. A zero denominator gives a zero
output, never NaN.

The graph, as in HD-VPD: the directed k-NN graph of the `coords` input (`[B, N, C]`, k =
`knn_k`, default 3 as in App. C.3), rebuilt on every call with the blocked
`attention.graphs.batch_knn_graph` (no N x N matrix), or given already built as the `neighbors`
input (`[B, N, knn_k]`, so that a model with several such layers builds it once per call);
weighted as `attention.graphs.edge_weights` (`1/sqrt(d_u d_v)`, i.e. 1/k per hop when every node
has k neighbours; App. C.3 does not state the weights, so this is our choice).

Walks (`walks`):
  * `"enumerate"` (default): every walk of `hops` (default 3, App. C.3) steps from every node is
    listed deterministically: slot 0 is the node itself (t = 0), then its k neighbours (t = 1),
    their k^2 neighbours (t = 2), ...: `L = 1 + k + ... + k^hops` slots (40 for k = 3, 3 hops).
    HD-VPD's 27 repelling walkers with 3 fixed hops on out-degree 3 split 27 -> 9/9/9 -> 3/3/3
    -> 1/1/1 and so visit exactly these walks (our inference from App. C.3, item 2; the paper
    does not say so); with deterministic enumeration the importance weight `w~(omega)/p(omega)`
    is the walk's edge-weight product `load` itself, and summing `f_t load` over the slots that
    land on v gives exactly `(sum_t f_t W^t)_{iv}`: this mechanism is then *exactly* linear
    attention with the dense mask `M = sum_{t<=hops} f_t W^t` (tests check it). Empty neighbour
    slots (fewer than k valid points) have load 0.
  * `"random"`: `n_walks` i.i.d. halting walks per node (`attention.graphs.random_walks`,
    halting probability `p_halt` before each hop, cut after `hops` hops), fresh from `key` on
    every call; their loads are importance-weighted (edge-weight product over the prefix
    probability), an unbiased estimate of the same `Phi^(1)` row; the 1/n of Eq. 10 cancels in
    the ratio. L = n_walks (hops + 1) slots.

Learnable f per head, `[H, hops + 1]`, initialised `exp(-f_decay t)`, `f_decay = 0.01` (the
authors' init, google-research/scenic `scenic/model_lib/layers/top_attention.py`, as
`attention.grf_walks`). Masks: key padding only (`[B, M]` or `[B, 1, 1, M]`); padded points
are nobody's neighbour (the k-NN graph skips them), their own output is zero.

Cost: per query L gathered keys and values: O(N L (Dk + Dv)) time per head. Queries are taken
`node_chunk` at a time in a `lax.scan` whose body is rematerialised in the backward pass
(`jax.checkpoint`), so forward and backward memory is O(N (L + Dk + Dv) + node_chunk L (Dk +
Dv)) per head, never N x N; the k-NN build is O(N^2 C) time (blocked brute force), O(chunk N)
memory.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from attention import cost, graphs, grf_walks, masks, registry
from attention.softmax import check_qkv

__all__ = [
    "init",
    "apply",
    "apply_on_graph",
    "flops",
    "num_slots",
    "enumerate_walks",
    "walk_slots",
    "slot_levels",
]

_WALKS = ("enumerate", "random")


def slot_levels(knn_k: int, hops: int) -> np.ndarray:
    """Walk length of every enumerated slot: `[1 + k + ... + k^hops]` int32 (0, then k ones,
    k^2 twos, ...)."""
    return np.concatenate([np.full(knn_k**t, t, np.int32) for t in range(hops + 1)])


def enumerate_walks(nbrs, hops: int, dtype=jnp.float32):
    """Every walk of `hops` steps from every node of a padded neighbour list.

    Args:
      nbrs: int `[B, N, K]` (`-1` = empty slot).
      hops: walk length.
      dtype: float dtype of the loads.

    Returns:
      `(idx, load)`, each `[B, N, L]`, `L = 1 + K + ... + K^hops`, in the order of
      `slot_levels(K, hops)`: the node slot s of node i's walks ends at, and the product of the
      edge weights (`graphs.edge_weights`) along it (0 for a walk through an empty slot, whose
      node is then 0).
    """
    nbrs = jnp.asarray(nbrs)
    b, n, k = nbrs.shape
    w = graphs.edge_weights(nbrs, dtype)
    safe = jnp.maximum(nbrs, 0)
    cur = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :, None], (b, n, 1))
    load = jnp.ones((b, n, 1), dtype)
    idx_out, load_out = [cur], [load]
    take = jax.vmap(lambda table, at: table[at])  # per batch element: table[N, K][at[N, S]]
    for _ in range(hops):
        nxt = take(safe, cur).reshape(b, n, -1)
        load = (load[..., None] * take(w, cur)).reshape(b, n, -1)
        cur = jnp.where(load != 0, nxt, 0)
        idx_out.append(cur)
        load_out.append(load)
    return jnp.concatenate(idx_out, -1), jnp.concatenate(load_out, -1)


def walk_slots(walks, knn_k, hops, n_walks, p_halt, key, nbrs, dtype):
    """`(idx [B, N, L], load [B, N, L], lvl [L] numpy)` for `walks` ("enumerate" | "random")."""
    if walks == "enumerate":
        idx, load = enumerate_walks(nbrs, hops, dtype)
        return idx, load, slot_levels(knn_k, hops)
    nodes, loads = graphs.random_walks(
        key, nbrs, n_walks=n_walks, max_len=hops, p_halt=p_halt, dtype=dtype
    )  # [B, N, n_walks, hops + 1]
    b, n = nbrs.shape[:2]
    lvl = np.tile(np.arange(hops + 1, dtype=np.int32), n_walks)
    return nodes.reshape(b, n, -1), loads.reshape(b, n, -1), lvl


def _check_hparams(*, knn_k, hops, walks, n_walks, p_halt, node_chunk) -> None:
    for field, value, lo in (("knn_k", knn_k, 1), ("hops", hops, 0), ("n_walks", n_walks, 1),
                             ("node_chunk", node_chunk, 1)):  # fmt: skip
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < lo:
            raise ValueError(f"grf_asym: {field} must be an integer >= {lo}, got {value!r}")
    if walks not in _WALKS:
        raise ValueError(f"grf_asym: walks must be one of {_WALKS}, got {walks!r}")
    if not 0.0 < p_halt < 1.0:
        raise ValueError(f"grf_asym: p_halt must be in (0, 1), got {p_halt!r}")


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    hops: int = 3,
    f_decay: float = 0.01,
):
    """`{"f": [H, hops + 1]}` initialised to `exp(-f_decay t)` (authors' init; `attention.grf`)."""
    del key, head_dim, model_dim, max_len, layer_index, num_layers
    return {"f": grf_walks._init_f(num_heads, hops, f_decay)}


def _key_valid(mask, b: int, n: int):
    if mask is None:
        return None
    mask = jnp.asarray(mask)
    if mask.dtype != jnp.bool_:
        raise ValueError(f"grf_asym: the attention mask must be boolean, got {mask.dtype}")
    if mask.ndim == 2 or (mask.ndim == 4 and mask.shape[1:3] == (1, 1)):
        return masks.as_4d(mask, b, 1, n, n)[:, 0, 0, :]
    raise ValueError(
        f"grf_asym supports key-padding masks only ([B, M] or [B, 1, 1, M]), got shape {mask.shape}"
    )


def _attend(q, k, v, idx, weight, node_chunk: int):
    """`sum_s a_is weight_is v_{idx_is} / sum_s a_is weight_is`, `a = relu(q_i).relu(k_idx)`.

    q `[B, N, H, Dk]`, k `[B, M, H, Dk]`, v `[B, M, H, Dv]` (accumulation dtype), idx
    `[B, N, L]`, weight `[B, N, H, L]` -> `[B, N, H, Dv]`; zero where the denominator is 0.
    """
    b, n, h, dk = q.shape
    chunk = min(node_chunk, n)
    nc = -(-n // chunk)
    pad = nc * chunk - n

    def split(x):  # [B, N, ...] -> [nc, B, chunk, ...]
        x = jnp.pad(x, [(0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 2))
        return jnp.moveaxis(x.reshape(b, nc, chunk, *x.shape[2:]), 1, 0)

    kf = jax.nn.relu(k)
    take = jax.vmap(lambda table, at: table[at])  # [M, ...][C, L] -> [C, L, ...]

    @jax.checkpoint
    def body(args):
        qc, ic, wc = args
        kg = take(kf, ic)  # [B, C, L, H, Dk]
        vg = take(v, ic)  # [B, C, L, H, Dv]
        a = jnp.einsum("bchd,bclhd->bchl", jax.nn.relu(qc), kg) * wc
        num = jnp.einsum("bchl,bclhe->bche", a, vg)
        den = a.sum(-1, keepdims=True)
        nonzero = den != 0
        return jnp.where(nonzero, num / jnp.where(nonzero, den, 1.0), 0.0)

    out = jax.lax.map(body, (split(q), split(idx), split(weight)))  # [nc, B, C, H, Dv]
    return jnp.moveaxis(out, 0, 1).reshape(b, nc * chunk, h, -1)[:, :n]


@functools.partial(
    jax.jit, static_argnames=("knn_k", "hops", "walks", "n_walks", "p_halt", "node_chunk")
)
def _apply_jit(params, q, k, v, mask, coords, neighbors, key, *, knn_k, hops, walks, n_walks,
               p_halt, node_chunk):  # fmt: skip
    check_qkv(q, k, v)
    b, n, h, _ = q.shape
    if k.shape[1] != n:
        raise ValueError(
            f"grf_asym: queries and keys must be the same N points, got {n} and {k.shape[1]}"
        )
    f = params.get("f") if isinstance(params, Mapping) else None
    if f is None or jnp.shape(f) != (h, hops + 1):
        got = None if f is None else jnp.shape(f)
        raise ValueError(
            f"grf_asym: params['f'] must have shape [num_heads, hops + 1] = {(h, hops + 1)}, "
            f"got {got}"
        )
    if knn_k > n - 1:
        raise ValueError(f"grf_asym: knn_k={knn_k} needs at least {knn_k + 1} points, got {n}")
    if walks == "random" and key is None:
        raise ValueError("grf_asym: walks='random' samples fresh walks per call and needs a key")
    valid = _key_valid(mask, b, n)
    if neighbors is not None:
        nbrs = jnp.asarray(neighbors)
        if nbrs.shape != (b, n, knn_k) or not jnp.issubdtype(nbrs.dtype, jnp.integer):
            raise ValueError(
                f"grf_asym: neighbors must be an int k-NN list [B, N, knn_k] = [{b}, {n}, "
                f"{knn_k}], got {nbrs.dtype} {nbrs.shape}"
            )
        nbrs = nbrs.astype(jnp.int32)
    else:
        if coords is None:
            raise ValueError(
                "grf_asym: needs the `coords` input [B, N, C] (the k-NN graph's points) or "
                "`neighbors` (a k-NN list built from them)"
            )
        coords = jnp.asarray(coords)
        if coords.ndim == 2:
            coords = jnp.broadcast_to(coords, (b, *coords.shape))
        if coords.ndim != 3 or coords.shape[:2] != (b, n):
            raise ValueError(
                f"grf_asym: coords must be [B, N, C] = [{b}, {n}, C], got {coords.shape}"
            )
        nbrs = graphs.batch_knn_graph(coords, int(knn_k), valid)
    return _on_graph(params, q, k, v, nbrs, valid, key, hops, walks, n_walks, p_halt, node_chunk)


def _on_graph(params, q, k, v, nbrs, valid, key, hops, walks, n_walks, p_halt, node_chunk):
    b, n, h, _ = q.shape
    acc = jnp.promote_types(jnp.promote_types(q.dtype, v.dtype), jnp.float32)
    f = params["f"]
    idx, load, lvl = walk_slots(walks, nbrs.shape[-1], hops, n_walks, p_halt, key, nbrs, acc)
    weight = load[:, :, None, :] * jnp.asarray(f, acc)[:, lvl][None, None]  # [B, N, H, L]
    if valid is not None:
        slot_ok = jnp.take_along_axis(valid, idx.reshape(b, -1), 1).reshape(idx.shape)
        weight = weight * slot_ok[:, :, None, :].astype(acc)
    out = _attend(q.astype(acc), k.astype(acc), v.astype(acc), idx, weight, node_chunk)
    if valid is not None:
        out = out * valid[:, :, None, None].astype(acc)
    return out.astype(v.dtype)


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    knn_k: int = 3,
    hops: int = 3,
    walks: str = "enumerate",
    n_walks: int = 27,
    p_halt: float = 0.1,
    node_chunk: int = 2048,
    coords=None,
    neighbors=None,
):
    """Asymmetric GRF-masked linear attention (ReLU features) on the k-NN graph of `coords`.

    Args:
      params: `{"f": [H, hops + 1]}` (`init`).
      q: `[B, N, H, Dk]`; k: `[B, N, H, Dk]`; v: `[B, N, H, Dv]` (one token per point).
      mask: key padding `[B, N]` (or `[B, 1, 1, N]`), True = a real point.
      key: PRNG key; needed for `walks="random"` (fresh walks every call).
      train: unused.
      knn_k: out-degree of the directed k-NN graph (HD-VPD: 3).
      hops: walk length (HD-VPD: 3 deterministic hops).
      walks: "enumerate" (all K^t walks, t <= hops) or "random" (`n_walks` i.i.d. walks).
      n_walks, p_halt: walkers per node and halting probability of `walks="random"`.
      node_chunk: queries per step of the scan over nodes.
      coords: `[B, N, C]` (or `[N, C]`) point coordinates.
      neighbors: optional int `[B, N, knn_k]`, the k-NN list of `coords` already built (by
        `attention.graphs.batch_knn_graph` with the key padding as `valid`), so that a model
        with several such layers builds it once per call; `coords` is then not read.

    Returns:
      `[B, N, H, Dv]` in `v`'s dtype, computed in float32 (float64 for float64 inputs).
    """
    del train
    _check_hparams(
        knn_k=knn_k, hops=hops, walks=walks, n_walks=n_walks, p_halt=p_halt, node_chunk=node_chunk
    )
    return _apply_jit(
        params, q, k, v, mask, coords, neighbors, key if walks == "random" else None,
        knn_k=int(knn_k), hops=int(hops), walks=walks, n_walks=int(n_walks),
        p_halt=float(p_halt), node_chunk=int(node_chunk),
    )  # fmt: skip


@functools.partial(jax.jit, static_argnames=("hops", "walks", "n_walks", "p_halt", "node_chunk"))
def apply_on_graph(params, q, k, v, nbrs, *, mask=None, key=None, hops: int = 3,
                   walks: str = "enumerate", n_walks: int = 27, p_halt: float = 0.1,
                   node_chunk: int = 2048):  # fmt: skip
    """`apply` on a given neighbour list `nbrs` int `[B, N, K]` (`-1` = empty slot) instead of
    the k-NN graph of `coords`: the attention without the graph build (timing, other graphs).
    Shapes, masks and the result as `apply`; padded points should have no neighbours and be
    nobody's neighbour (`attention.graphs.batch_knn_graph` with `valid` builds such lists)."""
    check_qkv(q, k, v)
    b, n, h, _ = q.shape
    if jnp.shape(params["f"]) != (h, hops + 1):
        raise ValueError(f"grf_asym: params['f'] must have shape {(h, hops + 1)}")
    if nbrs.ndim != 3 or nbrs.shape[:2] != (b, n):
        raise ValueError(f"grf_asym: nbrs must be [B, N, K] = [{b}, {n}, K], got {nbrs.shape}")
    valid = _key_valid(mask, b, n)
    return _on_graph(params, q, k, v, jnp.asarray(nbrs, jnp.int32), valid, key, hops, walks,
                     n_walks, p_halt, node_chunk)  # fmt: skip


def num_slots(hp) -> int:
    """Walk slots per query, L."""
    if hp["walks"] == "enumerate":
        return sum(hp["knn_k"] ** t for t in range(hp["hops"] + 1))
    return hp["n_walks"] * (hp["hops"] + 1)


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Per query and head, L gathered keys/values: scores relu(q).relu(k_s) 2·L·dk, the weighted
    # sum of values 2·L·dv and the denominator 2·L (gathers are data movement, 0 FLOPs).
    # Elementwise: relu of q and k, the slot weights load·f (and the padding select), the
    # score·weight products, the division. The k-NN graph (not in `Call`: the coordinate width
    # C is a model input) costs 3·C·n² distance FLOPs per sequence plus the top-k selection;
    # with C = 3, counted here.
    slots = num_slots(hp)
    mm = c.h * c.n * slots * (2 * c.dk + 2 * c.dv + 2)
    ew = 2 * c.n * c.h * c.dk + c.n * c.h * slots * (2 + c.masked) + c.n * c.h * c.dv
    ew += 3 * 3 * c.n * c.m + c.n * slots  # k-NN distances in 3-D; walk loads
    return mm, ew


def _check(h, num_tokens) -> None:
    _check_hparams(**{k: h[k] for k in ("knn_k", "hops", "walks", "n_walks", "p_halt",
                                       "node_chunk")})  # fmt: skip
    if num_tokens is not None and h["knn_k"] > num_tokens - 1:
        raise ValueError(f"knn_k={h['knn_k']} needs at least {h['knn_k'] + 1} points")


registry.register(
    "grf_asym",
    check=_check,
    apply=apply,
    init=init,
    flops=flops,
    defaults={
        "knn_k": 3,
        "hops": 3,
        "walks": "enumerate",
        "n_walks": 27,
        "p_halt": 0.1,
        "node_chunk": 2048,
        "f_decay": 0.01,
    },
    doc="asymmetric GRF-masked linear attention on a per-call k-NN graph (Reid et al. 2024 "
    "App. D; HD-VPD), O(N)",
    inputs=("coords", "neighbors"),
    requires=("coords",),  # (or `neighbors`, built from the coordinates)
)
