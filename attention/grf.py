"""GRF topological masking: linear attention masked by graph random features.

This module holds the mechanism: the masked linear-attention kernels, `init`/`apply` and the
registered names `grf` and `grf_dense`. The walks it attends through (graphs, sampling, the
features, their support and the exact mask) are in `attention.grf_walks`.

Reid et al., "Linear Transformer Topological Masking with Graph Random Features",
arXiv:2410.03462 (2024). Tokens are the nodes of a graph G with normalised adjacency
`W = D^{-1/2} A D^{-1/2}` (Sec. 3.1). The mask is a learnable power series in W (Eq. 4),
parameterised through its "deconvolution" f (Remark 3.1, Alg. 1: the f_t are what is learned):

    M_alpha = sum_k alpha_k W^k = Phi_G Phi_G^T,   Phi_G = sum_{t=0}^{L} f_t W^t,
    alpha_k = sum_{p=0}^{k} f_p f_{k-p}.

Graph random features (Sec. 3.3, Eq. 10) estimate the rows of Phi_G without bias from `n`
halting random walks per node (`grf_walks.walk_features`; `attention.graphs.random_walks` for
the loads):

    phi_i = (1/n) sum_{w=1}^{n} sum_{t=0}^{len_w} load_{w,t} f_t e_{node_{w,t}},
    E[phi_i . phi_j] = M_alpha[i, j]   (i != j; the diagonal is biased up by O(1/n)).

(The diagonal's bias, where the same walks serve both sides, is our observation: Sec. 3.3 states
unbiasedness without this caveat.)

Masked linear attention with ReLU features (Eqs. 5-7, 12; phi = ReLU as in every experiment):

    out_i = sum_j M_ij relu(q_i).relu(k_j) v_j / sum_j M_ij relu(q_i).relu(k_j),

computed in O(N) without any N x N matrix by expanding `M_ij = sum_v phi_i[v] phi_j[v]` over
the nonzeros of the features, `T_v = sum_j phi_j[v] relu(k_j) [v_j, 1]^T` and
`[num_i, den_i] = sum_v phi_i[v] relu(q_i)^T T_v`. (The 1/sqrt(d) query scaling of the authors'
code, google-research/scenic `scenic/model_lib/layers/top_attention.py`, cancels in the ratio and
is omitted.) Two code paths, the same estimate:

  * Frozen walks (`resample=False`): their support is known at `init`, which builds it once
    in numpy (`grf_walks.walk_support`): for every node v, the distinct start nodes i_1..i_c
    whose live walks visit v, and where each walk slot lands among them. Dead slots (halted
    walkers, load 0) and repeated visits are gone: with the defaults a node is visited from 35
    start nodes on average and at most from 45-53 on grids from 16x16 to 256x256, against
    S = 220 walk slots per feature. The rows (head, node) are bucketed by their count c
    (`grf_walks.support_buckets`, up to `grf_walks.SUPPORT_BUCKETS` = 4 buckets, each padded
    with zero weights to its largest count C_b, widths chosen to minimise `sum C_b^2`; at
    8 heads e.g. 33 / 37 / 41 / 50 on a 64 x 64 grid) instead of all padded to the largest
    count over nodes and heads. Per call, the weights `w[v, c] = phi_{i_c}[v]` are one
    scatter of the `H N n (L + 1)` scalars `load * f_t / n` (`grf_walks.bucket_weights`,
    differentiable in f), and every row is a small dense block
    (`support_masked_linear_attention` for one width):

        T_v = sum_c w[v, c] relu(k_{i_c}) [v_{i_c}, 1]^T          ([C, Dk]^T [C, Dv + 1])
        [num_i, den_i] += w[v, c] relu(q_i)^T T_v   for i = i_c    ([C, Dk] [Dk, Dv + 1])

    or, the same sums with fewer FLOPs when C < ~Dk (the defaults), the block's C x C masked
    scores `w_c w_c' relu(q_{i_c}) . relu(k_{i_c'})` times `[v_{i_c'}, 1]`. That is
    O(N C min(C, Dk) (Dk + Dv)) time per head with gathers and scatters of token vectors only
    (no `[Dk, Dv + 1]` state is ever scattered; q, k and v are gathered as one concatenated
    row), one `lax.scan` per bucket with `node_chunk` rows of every batch element per step
    (times the heads on an accelerator), with a hand-written backward (custom VJP) that keeps
    only the inputs: memory O(N (n (L + 1) + C + Dk + Dv)) per head, forward and backward.
    Bucketing computes exactly the same sums; on this project's 2-core CPU it made forward +
    backward ~1.2-1.3x faster (CPU time, B1 H8 D64, 4k tokens): the cost per row is closer to
    linear in C (gathers and scatters) than to the C^2 of its FLOPs. Under abstract evaluation
    (`jax.eval_shape`) `init` cannot build the support, whose widths depend on the sampled
    walks: it returns the walks only, and `apply` takes the general path.
  * Resampled walks (`resample=True`), or frozen walks without their support: the general
    path uses the `S = n_walks * (max_walk_len + 1)` slots of each phi_i as they are, T by a
    scatter-add of `[Dk, Dv + 1]` states and `[num, den]` by a gather, `slot_chunk` slots per
    scan step (largest intermediate `B * H * N * slot_chunk * Dk * (Dv + 1)`): O(N S Dk Dv).

Registered names:
  * `grf`: the O(N) estimator. `resample=False` (image grids, Sec. 4 "ViT"): walks are sampled
    once at `init` per head (and per layer, since every layer has its own init key) and stored in
    `params["buffers"]`. `resample=True` (changing graphs, Sec. 4 "HD-VPD"): fresh walks from `key`
    on every call, including evaluation.
  * `grf_dense`: the exact mask `Phi_G Phi_G^T` (= sum_k alpha_k W^k on undirected graphs),
    materialised as N x N: the n -> infinity limit of `grf` with the same parameters f (the
    paper's "M_alpha(G)-masked linear" row of Table 1), a baseline and reference with O(N^2)
    memory; building the mask costs O(N^2 K L) for the powers of W plus an O(N^3) matmul.

Graphs (`graph`): `"grid"`, the 4-neighbour patch grid `grid=(h, w)` (square from N when None);
`"knn"`, the directed k-NN graph of the `coords` input ([B, N, C]; k = `knn_k`), rebuilt per call
as in the HD-VPD experiments (App. C.3); `"input"`, the `adjacency` input, a padded neighbour list
int `[B, N, K]` or `[N, K]` (`-1` = empty slot). Walks on a directed graph estimate
`Phi_G Phi_G^T`, which `grf_dense` computes too.

Choices where the paper is silent ("the authors' code": google-research/scenic,
`scenic/model_lib/layers/top_attention.py` and `random_walk_utils.py` in that folder, public
code the paper does not cite):
  * f is per head (and per layer), shape `[H, max_walk_len + 1]`, initialised to
    `exp(-f_decay * t)` with `f_decay = 0.01` (the authors' code, `decay_rate = 0.01`; Remark 3.1
    and Alg. 1 learn f, but say neither whether it is per head nor how it is initialised). f is
    unconstrained, as in the paper: if training drives f negative, M can be negative and a
    denominator can vanish (our observation; the paper does not discuss it); a zero denominator
    gives a zero output, never NaN.
  * Walks are i.i.d. (optionally antithetic) simple random walks with geometric lengths, the
    sampler of Sec. 3.4 (Thm 3.1), not the repelling walks (arXiv:2310.04854) of the authors'
    code (`qmc_m_initialiser(..., repelling=True)`); the paper names repelling walks only for
    HD-VPD (App. C.3).
  * Masks: key padding only (`[B, M]` or `[B, 1, 1, M]`). A padded node neither attends nor is
    attended: its key and value are dropped and its own output is zero. It stays in a grid or
    input graph as a node walks may pass through (its q, k, v never enter); k-NN graphs drop it.
  * `cls_token=True` (the paper has no CLS token; the authors' code pads the mask with a row
    and a column of ones, as here): token 0 is a CLS token outside the graph with mask 1 to and
    from every token (M_0j = M_i0 = 1); the graph nodes are tokens 1..N-1, and `grid`, `coords`
    and `adjacency` describe those N - 1 nodes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from attention import cost, grf_walks, masks, registry
from attention.softmax import check_qkv

__all__ = [
    "init",
    "init_dense",
    "apply",
    "flops",
    "flops_dense",
    "apply_dense",
    "dense_masked_linear",
    "sparse_masked_linear_attention",
    "support_masked_linear_attention",
]


# ------------------------------------------------------------------------------------ checks


def _check_hparams(
    name, *, graph, max_walk_len, p_halt=0.5, n_walks=1, slot_chunk=1, node_chunk=1
) -> None:
    if graph not in grf_walks._GRAPHS:
        raise ValueError(f"{name}: graph must be one of {grf_walks._GRAPHS}, got {graph!r}")
    if not isinstance(max_walk_len, int | np.integer) or max_walk_len < 0:
        raise ValueError(f"{name}: max_walk_len must be an integer >= 0, got {max_walk_len!r}")
    if not 0.0 < p_halt < 1.0:
        raise ValueError(f"{name}: p_halt must be in (0, 1), got {p_halt!r}")
    if not isinstance(n_walks, int | np.integer) or n_walks < 1:
        raise ValueError(f"{name}: n_walks must be a positive integer, got {n_walks!r}")
    if not isinstance(slot_chunk, int | np.integer) or slot_chunk < 1:
        raise ValueError(f"{name}: slot_chunk must be a positive integer, got {slot_chunk!r}")
    if not isinstance(node_chunk, int | np.integer) or node_chunk < 1:
        raise ValueError(f"{name}: node_chunk must be a positive integer, got {node_chunk!r}")


def _key_padding(name, mask, b: int, n: int):
    """The boolean key-padding mask `[B, N]` of `mask`, or None; other masks raise."""
    if mask is None:
        return None
    mask = jnp.asarray(mask)
    if mask.dtype != jnp.bool_:
        raise ValueError(f"{name}: the attention mask must be boolean, got {mask.dtype}")
    if mask.ndim == 2 or (mask.ndim == 4 and mask.shape[1:3] == (1, 1)):
        return masks.as_4d(mask, b, 1, n, n)[:, 0, 0, :]
    raise ValueError(
        f"{name} supports key-padding masks only ([B, M] or [B, 1, 1, M]), got shape "
        f"{mask.shape}: a general [B, H, N, M] mask does not factorise through graph features"
    )


def _as_tuple(grid):
    """`grid` as a hashable tuple (it is a static argument of the jitted bodies)."""
    return None if grid is None else tuple(int(x) for x in grid)


# -------------------------------------------------------------------------------------- init


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    max_walk_len: int = 10,
    f_decay: float = 0.01,
    p_halt: float = 0.1,
    n_walks: int = 20,
    antithetic: bool = False,
    grid=None,
    graph: str = "grid",
    resample: bool = False,
    cls_token: bool = False,
):
    """Creates the modulation f and, when `resample=False`, the frozen walks.

    Args:
      key: PRNG key for the frozen walks (each layer's own key gives it its own walks).
      num_heads: H. `head_dim`, `model_dim`, `layer_index`, `num_layers`: unused.
      max_len: the sequence length N (CLS included); sizes the grid when `grid` is None.
      max_walk_len, f_decay: f has `max_walk_len + 1` coefficients `exp(-f_decay * t)`.
      p_halt, n_walks, antithetic, grid, graph, resample, cls_token: as in `apply`.

    Returns:
      `{"f": [H, max_walk_len + 1]}` plus, for frozen walks, `{"buffers": ...}` with
      `walk_nodes` int32 and `walk_loads` float32 `[H, N_g, n_walks, max_walk_len + 1]`: the
      node each walker is at after t hops and its importance-weighted load (0 after it halts),
      independent per head; and their support bucketed by row width
      (`grf_walks.support_buckets`): `walk_slots` int32 `[H, N_g, n_walks, max_walk_len + 1]`
      and, for each bucket b, `support_rows_{b}` int32 `[R_b]` and `support_tokens_{b}` int32
      `[R_b, C_b]` (their shapes depend on the walks; left out under abstract evaluation, e.g.
      `jax.eval_shape`). Params holding `walk_slots` and one `support_tokens` `[H, N_g, C]`
      (`grf_walks.walk_support`, made before the bucketing) still take the support path.
      `N_g = h * w` from `grid`, else `max_len - cls_token` (must be a square).
    """
    del head_dim, model_dim, layer_index, num_layers
    _check_hparams("grf", graph=graph, max_walk_len=max_walk_len, p_halt=p_halt, n_walks=n_walks)
    params = {"f": grf_walks._init_f(num_heads, max_walk_len, f_decay)}
    if resample:
        return params
    if graph != "grid":
        raise ValueError(
            f"grf: frozen walks (resample=False) need a fixed graph (graph='grid'); "
            f"graph={graph!r} changes with the input, so use resample=True"
        )
    if grid is None and max_len is None:
        raise ValueError("grf: frozen walks need grid=(h, w) or init's max_len (sequence length)")
    n_nodes = grid[0] * grid[1] if grid is not None else max_len - int(cls_token)
    nbrs = grf_walks._grid_neighbors("grf", grid, n_nodes)
    params["buffers"] = grf_walks._frozen_walks(
        key,
        nbrs,
        num_heads=num_heads,
        n_walks=n_walks,
        max_walk_len=max_walk_len,
        p_halt=p_halt,
        antithetic=antithetic,
    )
    return params


def init_dense(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    max_walk_len: int = 10,
    f_decay: float = 0.01,
):
    """Creates `{"f": [H, max_walk_len + 1]}`, initialised to `exp(-f_decay * t)`."""
    del key, head_dim, model_dim, max_len, layer_index, num_layers
    return {"f": grf_walks._init_f(num_heads, max_walk_len, f_decay)}


# ------------------------------------------------ the O(N) path: frozen walks' node-major support


def _row_steps(x, rows: int):
    """`[Bt, R, ...]` -> `[S, Bt, rows, ...]`: `rows` consecutive rows per scan step (R
    zero-padded to a multiple of `rows`; a padding row has weight 0 and adds nothing)."""
    r = x.shape[1]
    pad = [(0, 0), (0, (-r) % rows)] + [(0, 0)] * (x.ndim - 2)
    x = jnp.pad(x, pad).reshape(x.shape[0], -1, rows, *x.shape[2:])
    return jnp.moveaxis(x, 1, 0)


def _row_unsteps(x, r: int):
    """Inverse of `_row_steps` (drops the padding rows)."""
    x = jnp.moveaxis(x, 0, 1)
    return x.reshape(x.shape[0], -1, *x.shape[3:])[:, :r]


def _quadratic_form(width: int, dk: int, dv: int) -> bool:
    """Whether a support row is cheaper as C x C scores than as a `[Dk, Dv + 1]` state.

    Per row, forward + backward: `2 C^2 (4 Dk + 3 Dv + 2)` multiply-adds against
    `14 C Dk (Dv + 1)` for the state (C < ~64 at Dk = Dv = 64; the defaults give C ~ 50).
    """
    return width * (4 * dk + 3 * dv + 2) < 7 * dk * (dv + 1)


def _scan_step(node_chunk: int, r: int, h: int) -> int:
    """Support rows per scan step: `node_chunk` rows, times the heads on an accelerator.

    Every step takes all batch elements. Rows are in head-major order (`support_buckets`), so a
    step's rows are neighbouring nodes of one head (two at a head boundary). On an accelerator
    a step takes `node_chunk * H` rows: few large steps (a step is a handful of kernel launches,
    so one head's 64 nodes per step left the GPU launch bound: 8192 steps at N = 16k, B = 4,
    H = 8). On CPU it takes `node_chunk` rows: the gathered rows of consecutive steps are
    neighbouring tokens of one head and stay in cache (a step over every head gathers 8x the
    distinct rows, ~15% slower). Only the speed depends on this, never the result.
    """
    heads = 1 if jax.default_backend() == "cpu" else h
    return max(1, min(node_chunk * heads, r))


def _gather_rows(x, t, w, head, shape, dv: int, extra=None):
    """One scan step's support rows: token vectors gathered by flat row id, in `acc`.

    x: `[B * N * H, 2 Dk + Dv (+ E)]`, `[relu(q), relu(k), v]` token-major (the input layout:
    no transposes), optionally followed by E more columns; t, w: `[Bt, rows, C]` token ids and
    weights; head: int `[rows]`, each row's head (explicit per row: a step may cross a head
    boundary); `shape = (B, N, H, Dk)`. One gather of the concatenated vectors (three separate
    gathers of q, k and v took ~2.7x as long on CPU). `extra`: another `[B * N * H, E]` array
    to gather at the same rows.

    Returns the flat row ids `[B * rows * C]`, q, k `[R, C, Dk]`, v `[R, C, Dv]`, w `[R, C]`
    with R = B * rows, and the rows `[R, C, E]` of x's E more columns or of `extra` (or None).
    The ids are computed here, per step, so that no `[B, rows, C]` index is ever materialised.
    """
    b, n, h, dk = shape
    acc = jnp.promote_types(x.dtype, jnp.float32)
    batch = jnp.arange(b, dtype=t.dtype).reshape(b, 1, 1)
    ids = ((batch * n + t) * h + head.astype(t.dtype)[None, :, None]).reshape(-1)
    c = t.shape[-1]
    xc = x[ids].astype(acc).reshape(-1, c, x.shape[-1])
    qc, kc, vc = xc[..., :dk], xc[..., dk : 2 * dk], xc[..., 2 * dk : 2 * dk + dv]
    w = jnp.broadcast_to(w, (b, *w.shape[1:])).reshape(-1, c).astype(acc)
    if extra is not None:
        return ids, qc, kc, vc, w, extra[ids].reshape(-1, c, extra.shape[-1])
    return ids, qc, kc, vc, w, (xc[..., 2 * dk + dv :] if xc.shape[-1] > 2 * dk + dv else None)


def _sum_c(x):
    """`x.sum(axis=1)` for `[R, C, D]`, as a batched product with ones (faster on CPU)."""
    return jnp.einsum("rcd,rc->rd", x, jnp.ones(x.shape[:2], x.dtype))


def _bucket_xs(heads, tokens, weights, step):
    """A bucket's scan inputs: tokens, weights `[S, Bt, rows, C]`, heads `[S, rows]`."""
    rows = _row_steps(heads[None, :, None], step)[:, 0, :, 0]
    return _row_steps(tokens, step), _row_steps(weights, step), rows


def _support_forward(x, heads, tokens, weights, step, shape, quadratic):
    b, n, h, dk = shape
    dv = x.shape[-1] - 2 * dk
    acc = jnp.promote_types(x.dtype, jnp.float32)

    def body(quad):
        def scan_step(z, xs):
            ids, qc, kc, vc, w, _ = _gather_rows(x, *xs, shape, dv)
            if quad:
                # a[r, c, c'] = w_c' q_c . k_c': the row's scores, then w_c a [v, 1].
                a = jnp.einsum("rcd,red->rce", qc, kc) * w[:, None, :]
                num, den = jnp.einsum("rce,red->rcd", a, vc), a.sum(axis=-1)
            else:
                # T = sum_c w_c k_c v_c^T and s = sum_c w_c k_c, then w_c q_c^T [T, s]. (Sums
                # over the middle axis as products with ones: faster than reductions on CPU.)
                kw = kc * w[..., None]
                t_state, s_state = jnp.einsum("rcd,rce->rde", kw, vc), _sum_c(kw)
                num = jnp.einsum("rcd,rde->rce", qc, t_state)
                den = jnp.einsum("rcd,rd->rc", qc, s_state)
            zc = jnp.concatenate([num, den[..., None]], axis=-1) * w[..., None]
            return z.at[ids].add(zc.reshape(-1, dv + 1)), None

        return scan_step

    z = jnp.zeros((b * n * h, dv + 1), acc)
    for hd, tk, wt, st, quad in zip(heads, tokens, weights, step, quadratic, strict=True):
        z = jax.lax.scan(body(quad), z, _bucket_xs(hd, tk, wt, st))[0]
    return z


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5, 6))
def _support_sums(x, heads, tokens, weights, step, shape, quadratic):
    """`[num_j, den_j] = sum_{(r, c): tokens[r, c] = j} w[r, c] qf_j^T [T_r, s_r]`, per bucket.

    `x = [qf, kf, vf]`, `[B * N * H, 2 Dk + Dv]` (token-major), `shape = (B, N, H, Dk)`. The
    result is `[B * N * H, Dv + 1]` in the accumulation dtype (float32 or float64).
    `heads`, `tokens`, `weights` and the static `step`, `quadratic` are tuples with one entry
    per bucket: the rows' heads int `[R]`, their token ids and weights `[Bt, R, C]` (C per
    bucket), the rows per scan step (`_scan_step`) and the row form. `T_r = sum_c w[r, c]
    kf vf^T` and `s_r = sum_c w[r, c] kf` over the row's tokens (per batch element, in the
    row's head). Every bucket is one `lax.scan`, every row a small dense block: either the
    C x C masked scores `w w^T * (q k^T)` times `[v, 1]` (`quadratic`), or the `[Dk, Dv + 1]`
    state. The backward pass is written out (custom VJP): it keeps only the inputs, regathers
    each step's rows once, and scatters the row gradients straight into `dq`, `dk`, `dv` (no
    remat of the forward's scatter, no gradient of gathers through zero-initialised scatters
    per step).
    """
    return _support_forward(x, heads, tokens, weights, step, shape, quadratic)


def _support_sums_fwd(x, heads, tokens, weights, step, shape, quadratic):
    z = _support_forward(x, heads, tokens, weights, step, shape, quadratic)
    return z, (x, heads, tokens, weights)


def _support_sums_bwd(step, shape, quadratic, res, dz):
    x, heads, tokens, weights = res
    b, dk_ = shape[0], shape[3]
    dv = x.shape[-1] - 2 * dk_
    acc = dz.dtype
    # The cotangent rows are gathered with the token vectors (one gather) when the dtypes agree.
    together = x.dtype == acc
    xz = jnp.concatenate([x, dz], axis=-1) if together else x

    def body(quad):
        def scan_step(carry, xs):
            t = xs[0]
            ids, qc, kc, vc, w, dzc = _gather_rows(xz, *xs, shape, dv, None if together else dz)
            dnum, dden = dzc[..., :dv], dzc[..., dv]
            if quad:
                scores = jnp.einsum("rcd,red->rce", qc, kc)
                ww = w[:, :, None] * w[:, None, :]
                da = jnp.einsum("rcd,red->rce", dnum, vc) + dden[:, :, None]  # d(masked scores)
                dvc = jnp.einsum("rce,rcd->red", scores * ww, dnum)
                dsw = da * scores
                dw = jnp.einsum("rce,re->rc", dsw, w) + jnp.einsum("rec,re->rc", dsw, w)
                da = da * ww
                dqc = jnp.einsum("rce,red->rcd", da, kc)
                dkc = jnp.einsum("rce,rcd->red", da, qc)
            else:
                kw = kc * w[..., None]
                t_state, s_state = jnp.einsum("rcd,rce->rde", kw, vc), _sum_c(kw)
                # g = d(out) / d(q_c) before the weight w_c
                g = jnp.einsum("rce,rde->rcd", dnum, t_state) + dden[..., None] * s_state[:, None]
                dw = jnp.sum(qc * g, axis=-1)
                dqc = g * w[..., None]
                dt_state = jnp.einsum("rcd,rce->rde", qc, dnum * w[..., None])
                ds_state = jnp.einsum("rcd,rc->rd", qc, dden * w)
                dkw = jnp.einsum("rce,rde->rcd", vc, dt_state) + ds_state[:, None]
                dvc = jnp.einsum("rcd,rde->rce", kw, dt_state)
                dw = dw + jnp.sum(kc * dkw, axis=-1)
                dkc = dkw * w[..., None]
            dw = dw.reshape(b, *t.shape[1:])
            if t.shape[0] != b:  # shared by the batch
                dw = dw.sum(axis=0, keepdims=True)
            dxc = jnp.concatenate([dqc, dkc, dvc], axis=-1)  # one scatter, as the one gather
            return carry.at[ids].add(dxc.reshape(-1, 2 * dk_ + dv)), dw

        return scan_step

    carry = jnp.zeros(x.shape, acc)
    dweights = []
    for hd, tk, wt, st, quad in zip(heads, tokens, weights, step, quadratic, strict=True):
        carry, dw = jax.lax.scan(body(quad), carry, _bucket_xs(hd, tk, wt, st))
        dweights.append(_row_unsteps(dw, wt.shape[1]).astype(wt.dtype))
    none = tuple(None for _ in heads)
    return carry.astype(x.dtype), none, none, tuple(dweights)


_support_sums.defvjp(_support_sums_fwd, _support_sums_bwd)


# Up to this many tokens the frozen-walk path forms the N x N mask estimate explicitly
# (`_support_dense`): at small N nearly every node's support holds most tokens (C ~ N: 45-53 of
# the 65 tokens of an 8 x 8 grid at the defaults), so the O(N C min(C, Dk)) sums cost more than
# the O(N^2 Dk) dense products (measured: 0.34 steps/s against softmax's 1.5 in the ViT `cpu`
# preset at 65 tokens). The estimate, and so the output, is the same either way.
DENSE_MAX_TOKENS = 128


def _support_dense(q, k, v, rows, tokens, weights, u: int, key_valid, cls_token: bool):
    """The support sums as one dense mask: `Phi[h, x, i] = sum_c w[r, c] [tokens[r, c] = i]`
    for the row `r = h * u + x` of every bucket, `M = Phi^T Phi` (the CLS row and column 1),
    then `(relu(q) relu(k)^T * M) [v, 1]`."""
    acc = jnp.promote_types(jnp.promote_types(q.dtype, v.dtype), jnp.float32)
    b, n, h, _ = q.shape
    bt = max(t.shape[0] for t in tokens)
    phi = jnp.zeros((bt, h * u, n), acc)
    for rw, tk, wt in zip(rows, tokens, weights, strict=True):
        onehot = jax.nn.one_hot(tk, n, dtype=acc)  # [Bt, R, C, N]
        contrib = jnp.einsum("brc,brcn->brn", wt.astype(acc), onehot)
        phi = phi.at[:, rw].add(contrib)
    phi = phi.reshape(bt, h, u, n)
    mask = jnp.einsum("bhun,bhum->bhnm", phi, phi)
    if cls_token:
        mask = mask.at[..., 0, :].set(1.0).at[..., :, 0].set(1.0)
    qr = jax.nn.relu(q).astype(acc)
    kr = jax.nn.relu(k if key_valid is None else jnp.where(key_valid[..., None, None], k, 0))
    scores = jnp.einsum("bnhd,bmhd->bhnm", qr, kr.astype(acc)) * mask
    num = jnp.einsum("bhnm,bmhe->bnhe", scores, v.astype(acc))
    den = jnp.moveaxis(scores.sum(-1), 1, 2)[..., None]  # [B, N, H, 1]
    nonzero = den != 0
    out = jnp.where(nonzero, num / jnp.where(nonzero, den, 1.0), 0.0)
    if key_valid is not None:
        out = out * key_valid[:, :, None, None].astype(out.dtype)
    return out.astype(v.dtype)


def _bucketed_attention(
    q, k, v, rows, tokens, weights, u: int, key_valid, cls_token, node_chunk, quadratic, dense
):
    """`support_masked_linear_attention` on support rows in buckets: tuples `rows` (int `[R_b]`,
    flat row ids `h * u + x`), `tokens` and `weights` (`[Bt, R_b, C_b]`), one entry per bucket;
    every other argument as there (`quadratic` None picks the form per bucket)."""
    acc = jnp.promote_types(jnp.promote_types(q.dtype, v.dtype), jnp.float32)
    b, n, h, dk = q.shape
    dv = v.shape[-1]
    rows = tuple(jnp.asarray(r) for r in rows)
    tokens = tuple(jnp.asarray(t) for t in tokens)
    weights = tuple(jnp.asarray(w).astype(acc) for w in weights)
    if cls_token:
        # CLS is outside the graph: its mask entries are added exactly below.
        weights = tuple(jnp.where(t == 0, 0.0, w) for t, w in zip(tokens, weights, strict=True))
    if dense or (dense is None and n <= DENSE_MAX_TOKENS):
        return _support_dense(q, k, v, rows, tokens, weights, u, key_valid, cls_token)
    # ReLU and padding in the input dtype before the gathers (exact; for bfloat16 inputs the
    # gathers move half the bytes); the sums are in `acc`.
    qr = jax.nn.relu(q)
    kr = jax.nn.relu(k if key_valid is None else jnp.where(key_valid[..., None, None], k, 0))
    forms = tuple(
        _quadratic_form(t.shape[-1], dk, dv) if quadratic is None else bool(quadratic)
        for t in tokens
    )
    dtype = jnp.promote_types(q.dtype, v.dtype)
    x = jnp.concatenate([qr.astype(dtype), kr.astype(dtype), v.astype(dtype)], axis=-1)
    z = _support_sums(
        x.reshape(-1, 2 * dk + dv),
        tuple((r // u).astype(jnp.int32) for r in rows),
        tokens,
        weights,
        tuple(_scan_step(node_chunk, t.shape[1], h) for t in tokens),
        (b, n, h, dk),
        forms,
    ).reshape(b, n, h, dv + 1)
    if cls_token:
        qf, kf = qr.astype(acc), kr.astype(acc)
        ve = jnp.concatenate([v.astype(acc), jnp.ones((b, n, h, 1), acc)], axis=-1)
        to_cls = jnp.einsum("bnhd,bhd->bnh", qf[:, 1:], kf[:, 0])
        z = z.at[:, 1:].add(to_cls[..., None] * ve[:, :1])
        from_cls = jnp.einsum("bhd,bnhd->bnh", qf[:, 0], kf)
        z = z.at[:, 0].set(jnp.einsum("bnh,bnhe->bhe", from_cls, ve))
    num, den = z[..., :-1], z[..., -1:]
    nonzero = den != 0
    out = jnp.where(nonzero, num / jnp.where(nonzero, den, 1.0), 0.0)
    if key_valid is not None:
        out = out * key_valid[:, :, None, None].astype(out.dtype)
    return out.astype(v.dtype)


@functools.partial(jax.jit, static_argnames=("cls_token", "node_chunk", "quadratic", "dense"))
def support_masked_linear_attention(
    q,
    k,
    v,
    tokens,
    weights,
    *,
    key_valid=None,
    cls_token: bool = False,
    node_chunk: int = 64,
    quadratic=None,
    dense=None,
):
    """Linear attention (ReLU features) masked by `M_ij = phi_i . phi_j`, from node-major features.

    The features are given by their columns, one row per feature dimension (graph node) u:
    `phi_j[u] = weights[..., u, c]` where `tokens[..., u, c] = j` (tokens distinct within a
    row, or with zero weight), so that `M_ij = sum_u phi_i[u] phi_j[u]` and, per head,

        T_u = sum_c w[u, c] relu(k_j) [v_j, 1]^T               (j = tokens[u, c])
        [num_i, den_i] = sum_{(u, c): tokens[u, c] = i} w[u, c] relu(q_i)^T T_u,

    in O(U C min(C, Dk) (Dk + Dv)) time: every row is either the C x C masked scores
    `w_c w_c' relu(q_c) . relu(k_c')` times `[v_c', 1]` (when C is below ~Dk, as with the
    defaults) or a `[C, Dk]^T [C, Dv + 1]` state and a `[C, Dk] [Dk, Dv + 1]` product; only
    token vectors are gathered (in the input dtype, from the input layout) and scattered.
    All rows here have the same width C (one bucket); `grf`'s frozen walks use the same sums
    on rows bucketed by width (`grf_walks.support_buckets`).

    Args:
      q, k: `[B, N, H, Dk]`; v: `[B, N, H, Dv]`.
      tokens: int `[B, H, U, C]` or `[H, U, C]` (shared by the batch), token ids in [0, N).
      weights: float, same shape as `tokens`.
      key_valid: optional boolean `[B, N]`; invalid tokens neither attend nor are attended
        (their outputs are zero).
      cls_token: token 0 has mask 1 to and from every token; its features are ignored.
      node_chunk: support rows per scan step (a speed knob, `_scan_step`): times the heads on
        an accelerator.
      quadratic: force the C x C (True) or the `[Dk, Dv + 1]` state (False) form of the rows;
        None picks the one with fewer FLOPs. Both compute the same sums.
      dense: form the N x N mask estimate explicitly (True) or never (False); None does so up
        to `DENSE_MAX_TOKENS` tokens. The same estimate and output either way.

    Returns:
      `[B, N, H, Dv]` in the dtype of v; rows with a zero denominator are zero.
    """
    tokens, weights = jnp.asarray(tokens), jnp.asarray(weights)
    if tokens.ndim == 3:
        tokens, weights = tokens[None], weights[None]
    bt, h, u, c = tokens.shape
    return _bucketed_attention(
        q,
        k,
        v,
        (jnp.arange(h * u, dtype=jnp.int32),),
        (tokens.reshape(bt, h * u, c),),
        (weights.reshape(bt, h * u, c),),
        u,
        key_valid,
        cls_token,
        node_chunk,
        quadratic,
        dense,
    )


# ------------------------------------------------------------------ the general O(N) path


@functools.partial(jax.jit, static_argnames=("chunk",))
def _scatter_gather(idx, val, qf, kvf, chunk: int):
    """`z_i = sum_s val[i,s] qf_i^T T[idx[i,s]]` with `T = G^T kvf` (G the sparse features).

    idx, val: `[N, S]`; qf: `[N, D]`; kvf: `[N, D, E]` -> `[N, E]`.
    """
    n, s = idx.shape
    _, d, e = kvf.shape
    c = min(chunk, s)
    pad = (-s) % c
    idx = jnp.pad(idx, ((0, 0), (0, pad))).reshape(n, -1, c).transpose(1, 0, 2)
    val = jnp.pad(val, ((0, 0), (0, pad))).reshape(n, -1, c).transpose(1, 0, 2)
    x = kvf.reshape(n, d * e)

    # Rematerialised bodies keep the backward pass at O(N D E), instead of saving the
    # [N, chunk, D * E] gathers of every scan step. Indices are flattened to 1-D: XLA's CPU
    # scatter is several times slower to differentiate with a 2-D index array.
    @jax.checkpoint
    def scatter(t, slots):
        i, w = slots
        upd = (w[..., None] * x[:, None, :]).reshape(n * c, d * e)
        return t.at[i.reshape(-1)].add(upd), None

    t, _ = jax.lax.scan(scatter, jnp.zeros_like(x), (idx, val))
    t = t.reshape(n, d, e)

    @jax.checkpoint
    def gather(z, slots):
        i, w = slots
        y = jnp.einsum("nd,ncde->nce", qf, t[i.reshape(-1)].reshape(n, c, d, e))
        return z + jnp.einsum("nc,nce->ne", w, y), None

    z, _ = jax.lax.scan(gather, jnp.zeros((n, e), kvf.dtype), (idx, val))
    return z


@functools.partial(jax.jit, static_argnames=("cls_token", "slot_chunk"))
def sparse_masked_linear_attention(
    q, k, v, idx, val, *, key_valid=None, cls_token: bool = False, slot_chunk: int = 8
):
    """Linear attention (ReLU features) masked by `M_ij = phi_i . phi_j`, in O(N S).

    Args:
      q, k: `[B, N, H, Dk]`; v: `[B, N, H, Dv]`.
      idx: int `[B, H, N, S]` or `[H, N, S]` (shared by the batch): feature i is
        `phi_i = sum_s val[..., i, s] e_{idx[..., i, s]}`; indices may repeat (values add).
      val: float, same shape as `idx`.
      key_valid: optional boolean `[B, N]`; invalid tokens neither attend nor are attended
        (their outputs are zero).
      cls_token: token 0 has mask 1 to and from every token; its features are ignored.
      slot_chunk: feature slots per scan step (memory `N * slot_chunk * Dk * (Dv + 1)`).

    Returns:
      `[B, N, H, Dv]` in the dtype of v; rows with a zero denominator are zero.
    """
    acc = jnp.promote_types(jnp.promote_types(q.dtype, v.dtype), jnp.float32)
    qf = jax.nn.relu(jnp.moveaxis(q, 2, 1).astype(acc))  # [B, H, N, Dk]
    kf = jax.nn.relu(jnp.moveaxis(k, 2, 1).astype(acc))
    vv = jnp.moveaxis(v, 2, 1).astype(acc)
    ve = jnp.concatenate([vv, jnp.ones_like(vv[..., :1])], axis=-1)  # denominator as a column
    kvf = kf[..., :, None] * ve[..., None, :]  # [B, H, N, Dk, Dv + 1]
    if key_valid is not None:
        kvf = kvf * key_valid[:, None, :, None, None].astype(acc)
    val = jnp.asarray(val).astype(acc)
    if cls_token:
        # CLS is outside the graph: its mask entries are added exactly below.
        val = jnp.where(idx == 0, 0.0, val).at[..., 0, :].set(0.0)
    # Every (batch, head) graph becomes a block of one graph with B * H * N nodes, so that the
    # scatter stays a plain 1-D one (vmapped scatters are several times slower on CPU).
    b, h, n, d = qf.shape
    e = kvf.shape[-1]
    idx = jnp.broadcast_to(idx, (b, h, n, idx.shape[-1]))
    idx = idx + (jnp.arange(b * h, dtype=idx.dtype) * n).reshape(b, h, 1, 1)
    val = jnp.broadcast_to(val, idx.shape)
    z = _scatter_gather(
        idx.reshape(b * h * n, -1),
        val.reshape(b * h * n, -1),
        qf.reshape(b * h * n, d),
        kvf.reshape(b * h * n, d, e),
        slot_chunk,
    ).reshape(b, h, n, e)
    if cls_token:
        z = z.at[:, :, 1:].add(jnp.einsum("bhnd,bhde->bhne", qf[:, :, 1:], kvf[:, :, 0]))
        z = z.at[:, :, 0].set(jnp.einsum("bhd,bhde->bhe", qf[:, :, 0], kvf.sum(axis=2)))
    return _normalise(z, key_valid, v.dtype)


def _normalise(z, key_valid, dtype):
    num, den = z[..., :-1], z[..., -1:]
    nonzero = den != 0
    out = jnp.where(nonzero, num / jnp.where(nonzero, den, 1.0), 0.0)
    if key_valid is not None:
        out = out * key_valid[:, None, :, None].astype(out.dtype)
    return jnp.moveaxis(out, 1, 2).astype(dtype)


@functools.partial(
    jax.jit,
    static_argnames=(
        "p_halt",
        "n_walks",
        "max_walk_len",
        "antithetic",
        "grid",
        "graph",
        "knn_k",
        "resample",
        "cls_token",
        "slot_chunk",
        "node_chunk",
    ),
)
def _apply_jit(
    params,
    q,
    k,
    v,
    mask,
    key,
    coords,
    adjacency,
    *,
    p_halt,
    n_walks,
    max_walk_len,
    antithetic,
    grid,
    graph,
    knn_k,
    resample,
    cls_token,
    slot_chunk,
    node_chunk,
):
    # Validation below runs at trace time, in Python.
    check_qkv(q, k, v)
    _check_hparams(
        "grf",
        graph=graph,
        max_walk_len=max_walk_len,
        p_halt=p_halt,
        n_walks=n_walks,
        slot_chunk=slot_chunk,
        node_chunk=node_chunk,
    )
    b, n, h, _ = q.shape
    if k.shape[1] != n:
        raise ValueError(f"grf: queries and keys must be the same N nodes, got {n}, {k.shape[1]}")
    n_nodes = n - int(cls_token)
    if n_nodes < 1:
        raise ValueError(f"grf: cls_token=True needs at least 2 tokens, got {n}")
    acc = jnp.promote_types(jnp.promote_types(q.dtype, v.dtype), jnp.float32)
    f = grf_walks._modulation("grf", params, h, max_walk_len, acc)
    key_valid = _key_padding("grf", mask, b, n)
    node_valid = None if key_valid is None else key_valid[:, int(cls_token) :]
    walk_shape = (h, n_nodes, n_walks, max_walk_len + 1)
    if resample:
        if key is None:
            raise ValueError(
                "grf: resample=True samples fresh walks on every call and needs `key` (also at "
                "evaluation); pass key=... or use resample=False (walks frozen at init)"
            )
        nbrs = grf_walks._neighbors(
            "grf", graph, grid, knn_k, n_nodes, b, coords, adjacency, node_valid
        )
        nodes, loads = grf_walks._fresh_walks(
            key,
            nbrs,
            b=b,
            h=h,
            n_walks=n_walks,
            max_walk_len=max_walk_len,
            p_halt=p_halt,
            antithetic=antithetic,
            dtype=acc,
        )
    else:
        buffers = params.get("buffers", {}) if isinstance(params, Mapping) else {}
        if "walk_nodes" not in buffers or "walk_loads" not in buffers:
            raise ValueError(
                "grf: resample=False needs the frozen walks in params['buffers'] "
                "(walk_nodes, walk_loads): create params with this mechanism's init"
            )
        if graph != "grid":
            raise ValueError(f"grf: resample=False needs graph='grid', got graph={graph!r}")
        nodes, loads = buffers["walk_nodes"], buffers["walk_loads"]
        if tuple(nodes.shape) != walk_shape or tuple(loads.shape) != walk_shape:
            raise ValueError(
                f"grf: frozen walks have shape {tuple(nodes.shape)}, expected "
                f"[H, N_graph, n_walks, max_walk_len + 1] = {walk_shape}; the walks were made "
                "for another sequence length or hyper-parameters"
            )
        grf_walks._grid_neighbors("grf", grid, n_nodes)  # validates the grid against N
        loads = jnp.asarray(loads).astype(acc)
        if _support_layout(buffers) is not None:
            return _frozen_support_attention(
                buffers, q, k, v, loads, f, key_valid, walk_shape, cls_token, node_chunk
            )
    idx, val = grf_walks.walk_features(jnp.asarray(nodes), loads, f, cls_token=cls_token)
    return sparse_masked_linear_attention(
        q, k, v, idx, val, key_valid=key_valid, cls_token=cls_token, slot_chunk=slot_chunk
    )


def _support_layout(buffers):
    """The frozen walks' support in `buffers`: `"buckets"` (`support_rows_{b}` and
    `support_tokens_{b}`, from `grf_walks.support_buckets`), `"single"` (one `support_tokens`
    `[H, N_g, C]`, from `grf_walks.walk_support`: params made before the rows were bucketed) or
    None (the walks only, e.g. params from `jax.eval_shape(init)`: the general path)."""
    if "walk_slots" not in buffers:
        return None
    if "support_rows_0" in buffers:
        return "buckets"
    if "support_tokens" in buffers:
        return "single"
    return None


def _frozen_support_attention(
    buffers, q, k, v, loads, f, key_valid, walk_shape, cls_token, node_chunk, dense=None
):
    """The frozen walks' support path from `buffers` (`_support_layout`); `dense` as in
    `support_masked_linear_attention` (tests force the scan at small N with False)."""
    slots = jnp.asarray(buffers["walk_slots"])
    h, n_nodes = walk_shape[:2]
    if _support_layout(buffers) == "single":
        tokens = [jnp.asarray(buffers["support_tokens"])]
        expected = f"[{h}, {n_nodes}, C]"
        ok = tokens[0].ndim == 3 and tuple(tokens[0].shape[:2]) == (h, n_nodes)
        rows = [jnp.arange(h * n_nodes, dtype=jnp.int32)]
    else:
        n_buckets = 0
        while f"support_rows_{n_buckets}" in buffers:
            n_buckets += 1
        rows = [jnp.asarray(buffers[f"support_rows_{b}"]) for b in range(n_buckets)]
        tokens = [
            jnp.asarray(buffers.get(f"support_tokens_{b}", rows[b])) for b in range(n_buckets)
        ]
        expected = "support_rows_b [R_b] and support_tokens_b [R_b, C_b]"
        ok = all(
            r.ndim == 1
            and t.ndim == 2
            and t.shape[0] == r.shape[0]
            and jnp.issubdtype(r.dtype, jnp.integer)
            for r, t in zip(rows, tokens, strict=True)
        )
    if (
        not ok
        or tuple(slots.shape) != walk_shape
        or not jnp.issubdtype(slots.dtype, jnp.integer)
        or not all(jnp.issubdtype(t.dtype, jnp.integer) for t in tokens)
    ):
        raise ValueError(
            f"grf: the frozen walks' support has walk_slots {tuple(slots.shape)} and "
            f"support tokens {[tuple(t.shape) for t in tokens]}, expected integer {walk_shape} "
            f"and {expected}: create params with this mechanism's init"
        )
    if _support_layout(buffers) == "single":
        c = tokens[0].shape[-1]
        weights = [grf_walks.support_weights(slots, loads, f, c).reshape(1, h * n_nodes, c)]
        tokens = [tokens[0].reshape(1, h * n_nodes, c)]
    else:
        weights = [
            w[None] for w in grf_walks.bucket_weights(slots, loads, f, [t.shape for t in tokens])
        ]
        tokens = [t[None] for t in tokens]
    return _bucketed_attention(
        q,
        k,
        v,
        tuple(rows),
        tuple(t + int(cls_token) for t in tokens),
        tuple(weights),
        n_nodes,
        key_valid,
        cls_token,
        node_chunk,
        None,
        dense,
    )


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    p_halt: float = 0.1,
    n_walks: int = 20,
    max_walk_len: int = 10,
    antithetic: bool = False,
    grid=None,
    graph: str = "grid",
    knn_k: int = 3,
    resample: bool = False,
    cls_token: bool = False,
    slot_chunk: int = 8,
    node_chunk: int = 64,
    coords=None,
    adjacency=None,
):
    """GRF-masked linear attention (Alg. 1), O(N).

    Args:
      params: `init`'s output: `f` `[H, max_walk_len + 1]` and, unless `resample`, the frozen
        walks under `"buffers"`, with their support (the fast path) or without it (the general
        path, e.g. params from `jax.eval_shape(init)`).
      q, k: `[B, N, H, Dk]`; v: `[B, N, H, Dv]` (self-attention over the N tokens = nodes).
      mask: None or key padding `[B, N]` / `[B, 1, 1, N]` (True = real token).
      key: PRNG key for fresh walks; required when `resample=True` (train or not).
      train: unused (walks are frozen or resampled independently of the mode).
      p_halt, n_walks, max_walk_len, antithetic: the walk sampler (`graphs.random_walks`).
      grid, graph, knn_k: the graph (module docstring).
      resample: sample new walks from `key` on every call instead of using the frozen ones.
      cls_token: token 0 is a CLS token with mask 1 to and from everything.
      slot_chunk: feature slots per scan step of the general path (resampled walks; a
        memory/speed knob only).
      node_chunk: support rows (head, node) per scan step of the frozen-walk path, of every
        batch element (a speed knob only; times the heads on an accelerator, `_scan_step`).
      coords: `[B, N_g, C]` point coordinates (graph="knn").
      adjacency: int `[B, N_g, K]` or `[N_g, K]` neighbour list with ids in [0, N_g), -1 = empty
        (graph="input").

    Returns:
      `[B, N, H, Dv]` in the dtype of v (computed in float32, or float64 for float64 inputs).
    """
    del train
    return _apply_jit(
        params,
        q,
        k,
        v,
        mask,
        key,
        coords,
        adjacency,
        p_halt=p_halt,
        n_walks=n_walks,
        max_walk_len=max_walk_len,
        antithetic=antithetic,
        grid=_as_tuple(grid),
        graph=graph,
        knn_k=knn_k,
        resample=resample,
        cls_token=cls_token,
        slot_chunk=slot_chunk,
        node_chunk=node_chunk,
    )


# ------------------------------------------------------------------------- the dense baseline


@functools.partial(jax.jit, static_argnames=("max_walk_len", "grid", "graph", "knn_k", "cls_token"))
def _apply_dense_jit(
    params, q, k, v, mask, coords, adjacency, *, max_walk_len, grid, graph, knn_k, cls_token
):
    check_qkv(q, k, v)
    _check_hparams("grf_dense", graph=graph, max_walk_len=max_walk_len)
    b, n, h, _ = q.shape
    if k.shape[1] != n:
        raise ValueError(
            f"grf_dense: queries and keys must be the same N nodes, got {n} and {k.shape[1]}"
        )
    n_nodes = n - int(cls_token)
    if n_nodes < 1:
        raise ValueError(f"grf_dense: cls_token=True needs at least 2 tokens, got {n}")
    acc = jnp.promote_types(jnp.promote_types(q.dtype, v.dtype), jnp.float32)
    f = grf_walks._modulation("grf_dense", params, h, max_walk_len, acc)
    key_valid = _key_padding("grf_dense", mask, b, n)
    node_valid = None if key_valid is None else key_valid[:, int(cls_token) :]
    nbrs = grf_walks._neighbors(
        "grf_dense", graph, grid, knn_k, n_nodes, b, coords, adjacency, node_valid
    )
    if nbrs.ndim == 3:
        m = jax.vmap(grf_walks.exact_mask, in_axes=(0, None))(nbrs, f)  # [B, H, N_g, N_g]
    else:
        m = grf_walks.exact_mask(nbrs, f)[None]
    if cls_token:
        pad = [(0, 0), (0, 0), (1, 0), (1, 0)]
        m = jnp.pad(m, pad, constant_values=1.0)
    return dense_masked_linear(q, k, v, m, key_valid, acc)


def dense_masked_linear(q, k, v, m, key_valid, acc):
    """Linear attention (ReLU features) with an explicit mask `m` (broadcastable to
    `[B, H, N, N]`): `A = relu(Q) relu(K)^T * m` (times the key padding), rows normalised;
    `[B, N, H, Dv]` in `v`'s dtype, computed in `acc`. Shared by `grf_dense` and
    `attention.toeplitz`."""
    qf = jax.nn.relu(jnp.moveaxis(q, 2, 1).astype(acc))
    kf = jax.nn.relu(jnp.moveaxis(k, 2, 1).astype(acc))
    a = jnp.einsum("bhnd,bhmd->bhnm", qf, kf) * m
    if key_valid is not None:
        a = a * key_valid[:, None, None, :].astype(acc)
    vv = jnp.moveaxis(v, 2, 1).astype(acc)
    z = jnp.concatenate(
        [jnp.einsum("bhnm,bhmd->bhnd", a, vv), a.sum(axis=-1, keepdims=True)], axis=-1
    )
    return _normalise(z, key_valid, v.dtype)


def apply_dense(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    max_walk_len: int = 10,
    grid=None,
    graph: str = "grid",
    knn_k: int = 3,
    cls_token: bool = False,
    coords=None,
    adjacency=None,
):
    """Linear attention (ReLU features) with the exact dense mask `sum_k alpha_k W^k`, O(N^2).

    Args and returns as `apply` (no walks: `params` is `{"f": [H, max_walk_len + 1]}`).
    """
    del key, train
    return _apply_dense_jit(
        params,
        q,
        k,
        v,
        mask,
        coords,
        adjacency,
        max_walk_len=max_walk_len,
        grid=_as_tuple(grid),
        graph=graph,
        knn_k=knn_k,
        cls_token=cls_token,
    )


def _check_registered(name):
    """`check` for the registry: walk hyper-parameters, and the graph against the tokens (the
    grid's size; the k-NN graph's `knn_k`, below its number of nodes)."""

    def check(h, num_tokens) -> None:
        walk = {k: h[k] for k in ("p_halt", "n_walks", "slot_chunk", "node_chunk") if k in h}
        _check_hparams(name, graph=h["graph"], max_walk_len=h["max_walk_len"], **walk)
        n_nodes = None if num_tokens is None else num_tokens - int(h["cls_token"])
        if h["graph"] == "grid" and n_nodes is not None:
            grf_walks._grid_neighbors(name, h["grid"], n_nodes)
        if h["graph"] == "knn":
            k = h["knn_k"]
            if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
                raise ValueError(f"{name}: knn_k={k!r} must be an integer >= 1")
            if n_nodes is not None and k >= n_nodes:
                raise ValueError(
                    f"{name}: knn_k={k} must be below the {n_nodes} graph nodes (each node "
                    f"links to its knn_k nearest others)"
                )

    return check


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Masked linear attention through S = n_walks·(max_walk_len + 1) sparse feature slots per
    # token: the scatter T_v += phi_j[v]·relu(k_j)[v_j, 1]^T and the gather relu(q_i)^T T_v,
    # 2 + 2 FLOPs per (token, slot, dk, dv + 1) entry: 4·n·S·h·dk·(dv + 1); slots are padded to
    # a multiple of `slot_chunk`. This is the general path (resampled walks, and models built
    # abstractly). Frozen walks built concretely take the node-major support path instead, about
    # 2·n·h·mean_rows(C_b·min(C_b (dk + dv + 1), 2·dk·(dv + 1))) with C_b a row's bucket width
    # (`grf_walks.support_buckets`; the start nodes visiting one node, 35 on average and 45-53
    # at most on grids at the defaults, against S = 220): the widths are known only after the
    # walks are sampled, so for those models this count is an upper bound, about 10x the
    # work done. Up
    # to DENSE_MAX_TOKENS tokens they form the N x N estimate explicitly, about
    # 2·h·n²·(n + dk + dv + 1) (the estimate Phi^T Phi is n³ per head), also below this count.
    e = c.dv + 1
    chunk = min(hp["slot_chunk"], hp["n_walks"] * (hp["max_walk_len"] + 1))
    slots = math.ceil(hp["n_walks"] * (hp["max_walk_len"] + 1) / chunk) * chunk
    mm = c.h * c.n * slots * (4 * c.dk * e + 2 * e)
    ew = c.h * c.n * (c.dk * e + 2 * c.dk + slots * (e + 2) + 3 * e)  # k v^T outer, relu, ...
    if hp["cls_token"]:
        mm += c.h * (2 * (c.n - 1) * c.dk * e + 2 * c.dk * e)
        ew += c.h * c.n * c.dk * e
    return mm, ew


def flops_dense(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Per sequence: masked linear attention with an explicit n x n mask, 2·n²·h·(dk + dv).
    # Per call (one graph for the batch on a grid; per sequence for k-NN): the mask
    # Phi Phi^T, 2·h·N_g³ (dominant), after `max_walk_len` sparse products W·P, 2·K·N_g² each.
    n_g = c.n - int(hp["cls_token"])
    if hp["graph"] == "grid":
        degree, shared = 4, True
    elif hp["graph"] == "knn":
        degree, shared = hp["knn_k"], False
    else:
        raise ValueError(
            "grf_dense with graph='input': the neighbour-list width is data, not a "
            "hyper-parameter; its FLOPs are not counted"
        )
    steps = hp["max_walk_len"]
    mask_mm = 2 * c.h * n_g**3 + steps * 2 * degree * n_g**2
    mask_ew = c.h * n_g**2 * (2 * steps + 1)
    per_call = c.batch if shared else 1
    scores = c.n * c.m * c.h
    mm = 2 * scores * (c.dk + c.dv) + mask_mm / per_call
    ew = scores * (2 + c.masked) + mask_ew / per_call + 2 * c.h * c.n * c.dk
    return mm, ew


registry.register(
    "grf",
    check=_check_registered("grf"),
    apply=apply,
    init=init,
    flops=flops,
    defaults={
        "p_halt": 0.1,
        "n_walks": 20,
        "max_walk_len": 10,
        "antithetic": False,
        "grid": None,
        "graph": "grid",
        "knn_k": 3,
        "resample": False,
        "cls_token": False,
        "slot_chunk": 8,
        "node_chunk": 64,
        "f_decay": 0.01,
    },
    doc="linear attention with a graph-random-feature topological mask (Reid et al. 2024), O(N)",
    inputs=("coords", "adjacency"),
)

registry.register(
    "grf_dense",
    check=_check_registered("grf_dense"),
    apply=apply_dense,
    init=init_dense,
    flops=flops_dense,
    defaults={
        "max_walk_len": 10,
        "grid": None,
        "graph": "grid",
        "knn_k": 3,
        "cls_token": False,
        "f_decay": 0.01,
    },
    doc="linear attention with the exact dense mask sum_k alpha_k W^k (GRF's n -> inf limit)",
    inputs=("coords", "adjacency"),
)
