"""SSA: stochastically subsampled self-attention (a training strategy for softmax attention).

Hussain, Zaki, Subramanian, "The Information Pathways Hypothesis: Transformers are Dynamic
Self-Ensembles", KDD 2023, arXiv:2306.01705, Sec. 3.3 (Alg. 1, Alg. 2, Eq. 3), Sec. 3.4
(renormalization, +FT) and Sec. 3.5 (attention self-ensembles).

Every query ("target") is kept; each attends only to a sampled subset of the keys/values
("sources"). The additive bias (mask, relative positions) is re-indexed with the sources:

    unbiased (Alg. 1):   out = softmax(Q K[P~]^T / sqrt(d_k) + B[:, P~]) V[P~],
                         P~ = randperm(M)[:k],  k = round(keep * M)
    locally biased (Alg. 2), w = 1 / keep windows of T = N / w targets:
                         out[T_j] = softmax(Q[T_j] K[P_j]^T / sqrt(d_k) + B[T_j, P_j]) V[P_j],
                         P = argsort(i + n_i), n_i ~ N(0, (sigma N)^2),   P_j = P[jT : (j+1)T]   (3)

so the score tensor is `[B, H, N, k]` (unbiased) or `[B, H, w, T, M / w]` (windows): `keep` times
the dense `[B, H, N, M]`, never a masked dense matrix. One pattern is shared by all heads and
the whole batch (Sec. 3.3), except `sampling="graph"`, which draws per example (padding-aware).
At evaluation the layer falls back to dense softmax attention ("renormalization", Sec. 3.4), or,
with `eval_mode="ensemble"`, averages S subsampled passes (Sec. 3.5; see `apply`).

Samplers (`sampling`):
  * `"unbiased"`: Alg. 1, `k = round(keep * M)` sources shared by all targets. With
    `causal=True` it is the windowed scheme with an unbiased shuffle (sources uniform over
    [0, end of window)), the paper's "unbiased" LM runs (App. D, Table 8: "2 or 4 window
    attention"; our reading, the paper gives no sampler for them): Alg. 1 plus a causal mask
    would leave early targets with nothing to attend to.
  * `"local_1d"`: Alg. 2 with Eq. (3); sigma is a fraction of N. Causal version: for each window
    j, fresh noise, candidates 0..(j+1)T-1, keep the T with the largest noisy position; the
    causal mask is then applied to the gathered pairs (our reading of Sec. 3.3, which says only
    that the indices "are resampled for each window, and are constrained to be from 0 to the
    end of the window").
  * `"grid_2d"`: the grid `(gh, gw) = grid` (row-major flattening) is tiled into `tiles =
    (wr, wc)` target tiles (default `(w, 1)`: w bands of rows, the paper's CIFAR-10 setup; `(2, 2)`
    is the Swin-style split). Sources get noisy coordinates (r + sigma*gh*n_r, c + sigma*gw*n_c),
    are sorted by noisy row into wr bands, then each band by noisy column into wc tiles (a
    "k-d split": our construction, Sec. 3.3 says only that 2-D grids are shuffled "both
    horizontally and vertically"). Causal: row bands only, candidates are the cells before the
    band's end, ranked by noisy row (column jitter cannot change which band a source lands in).
  * `"graph"`: unbiased per example: `k` sources drawn uniformly among the non-padded ones of
    each graph (key-padding mask), never padded ones; the first `always_keep` sources (e.g.
    virtual nodes) are always kept (our choice: the paper does not say how padding and virtual
    nodes are sampled; it uses only unbiased SSA on graphs, Sec. 3.3 / App. B.3). Graph
    structure enters through `bias` (e.g. a shortest-path bias), re-indexed with the sources as
    the paper does for B; there is no `adjacency` input, since the paper's graph SSA does not use
    locality.

Per-layer sigma (App. B.1): sigma_l = sigma_first + (sigma_last - sigma_first) * l / (L - 1),
computed by `init` from `layer_index` / `num_layers` and stored in `params["buffers"]["sigma"]`
(WikiText-103: 0.20 -> 0.35, the defaults; Enwik8: 0.10 -> 0.225; CIFAR-10: 0.25 in all layers).
`sigma = inf` gives an unbiased shuffle inside the windows.

+FT (Sec. 3.4): turning subsampling off for the last fraction (paper: 10%) of training is a
trainer concern; the schedule (the fraction) belongs in the trainer config, which passes the
declared input `subsample=False` (python or traced bool scalar) during that phase.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from attention import cost, kernels, masks, registry, softmax

__all__ = [
    "EVAL_MODES",
    "SAMPLINGS",
    "apply",
    "flops",
    "init",
    "layer_sigma",
    "pattern_mask",
    "sample_pattern",
]

SAMPLINGS = ("unbiased", "local_1d", "grid_2d", "graph")
EVAL_MODES = ("dense", "ensemble")


# --------------------------------------------------------------------------------------------
# Per-layer sigma schedule and init.


def layer_sigma(layer_index: int, num_layers: int, sigma_first: float, sigma_last: float) -> float:
    """The sigma (fraction of the sequence length) of layer `layer_index` of `num_layers`.

    Linear in depth from `sigma_first` (layer 0) to `sigma_last` (layer `num_layers - 1`);
    a single layer gets `sigma_first`.
    """
    if num_layers < 1 or not 0 <= layer_index < num_layers:
        raise ValueError(
            f"ssa: layer_index must be in [0, num_layers); got {layer_index} of {num_layers}"
        )
    if not (sigma_first >= 0 and sigma_last >= 0):
        raise ValueError(f"ssa: sigma must be >= 0, got {sigma_first}, {sigma_last}")
    t = layer_index / (num_layers - 1) if num_layers > 1 else 0.0
    if t == 0.0:  # written out so that an infinite sigma_last never yields inf * 0
        return float(sigma_first)
    if t == 1.0:
        return float(sigma_last)
    return float(sigma_first + (sigma_last - sigma_first) * t)


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    sigma_first: float = 0.2,
    sigma_last: float = 0.35,
) -> dict:
    """SSA has no trainable parameters; returns `{"buffers": {"sigma": f32[]}}`.

    `sigma` is this layer's locally-biased-shuffle std as a fraction of the sequence length
    (see `layer_sigma`); it is a constant, not trained.
    """
    del key, num_heads, head_dim, model_dim, max_len
    sigma = layer_sigma(layer_index, num_layers, sigma_first, sigma_last)
    return {"buffers": {"sigma": jnp.asarray(sigma, jnp.float32)}}


# --------------------------------------------------------------------------------------------
# Static plan: which targets share a window, and how many sources each window gets.


def _windows(keep: float, what: str) -> int:
    w = round(1.0 / keep)
    if abs(w * keep - 1.0) > 1e-6:
        raise ValueError(
            f"ssa: {what} uses w = 1/keep windows, so 1/keep must be an integer; got keep={keep}"
        )
    return w


def _plan(n, m, *, keep, sampling, causal, grid, tiles):
    """Checks shapes against the sampler; returns (kind, tgt [w, T] numpy, sources per window).

    kind is "shared" (one source set for all targets and the batch), "per_example" (graph),
    "local_1d" or "grid_2d" (windows).
    """
    if sampling in ("unbiased", "graph") and not (causal and sampling == "unbiased"):
        if causal:
            raise ValueError("ssa: causal=True is not supported with sampling='graph'")
        k = min(m, max(1, round(keep * m)))
        return ("shared" if sampling == "unbiased" else "per_example"), np.arange(n)[None], k
    name = "causal unbiased sampling" if sampling == "unbiased" else f"sampling={sampling!r}"
    if m != n:
        raise ValueError(f"ssa: {name} needs self-attention (M == N); got N={n}, M={m}")
    w = _windows(keep, name)
    if n % w:
        raise ValueError(f"ssa: {name} splits N={n} into w={w} windows; N must be divisible by w")
    if sampling != "grid_2d":
        return "local_1d", np.arange(n).reshape(w, n // w), n // w
    gh, gw = _grid(grid, n)
    wr, wc = (w, 1) if tiles is None else tuple(int(t) for t in tiles)
    if wr * wc != w:
        raise ValueError(f"ssa: tiles {tiles} must have wr * wc = 1/keep = {w} windows")
    if gh % wr or gw % wc:
        raise ValueError(f"ssa: grid {(gh, gw)} cannot be cut into tiles {(wr, wc)} evenly")
    if causal and wc != 1:
        raise ValueError("ssa: causal grid_2d sampling supports row bands only, tiles=(w, 1)")
    th, tw = gh // wr, gw // wc
    cells = np.arange(n).reshape(gh, gw)
    tgt = np.stack(
        [
            cells[a * th : (a + 1) * th, b * tw : (b + 1) * tw].reshape(-1)
            for a in range(wr)
            for b in range(wc)
        ]
    )
    return "grid_2d", tgt, n // w


def _window_padding(n, m, *, keep, sampling, causal) -> int:
    """Positions to append so that 1-D windows tile the sequence (0 when they already do)."""
    windowed = sampling == "local_1d" or (sampling == "unbiased" and causal)
    if not windowed or n != m:
        return 0
    return (-n) % _windows(keep, f"sampling={sampling!r}")


def _padded_apply(pad, params, q, k, v, mask, bias, **kw):
    """Runs `apply` on inputs padded by `pad` masked positions and crops the output.

    The padded sources are masked out (they never receive weight) and the padded targets are
    dropped, so a length that the windows do not divide (e.g. 40 tokens + CLS) is handled
    like a padded batch.
    """
    b, n, h, _ = q.shape
    grow = lambda x: jnp.pad(x, ((0, 0), (0, pad)) + ((0, 0),) * (x.ndim - 2))
    if mask is None or jnp.ndim(mask) == 2:
        real = jnp.ones((b, n), bool) if mask is None else jnp.asarray(mask)
        mask = jnp.concatenate([real, jnp.zeros((b, pad), bool)], axis=1)
    else:
        mask = jnp.pad(masks.as_4d(mask, b, h, n, n), ((0, 0), (0, 0), (0, pad), (0, pad)))
    if bias is not None:
        bias = jnp.pad(_full_bias(bias, b, h, n, n), ((0, 0), (0, 0), (0, pad), (0, pad)))
    out = apply(params, grow(q), grow(k), grow(v), mask=mask, bias=bias, **kw)
    return out[:, :n]


def _grid(grid, n):
    if grid is None:
        side = math.isqrt(n)
        if side * side != n:
            raise ValueError(f"ssa: grid=None means a square grid, but N={n} is not a square")
        return side, side
    gh, gw = (int(g) for g in grid)
    if gh * gw != n:
        raise ValueError(f"ssa: grid {tuple(grid)} has {gh * gw} cells but N={n}")
    return gh, gw


# --------------------------------------------------------------------------------------------
# Samplers. They return source indices `src [Bs, w, S]` (Bs = 1 when shared by the batch).


def _jitter(base, sigma_abs, noise):
    """Noisy positions whose argsort is Eq. (3)'s permutation; sigma = inf ranks by noise alone."""
    return jnp.where(jnp.isinf(sigma_abs), noise, base + sigma_abs * noise)


def _causal_top(key, base, sigma_abs, w, t):
    """Per window j: fresh noise; among sources 0..(j+1)t-1, the t with largest noisy position."""
    n = base.shape[0]
    noisy = _jitter(base, sigma_abs, jax.random.normal(key, (w, n), base.dtype))
    ends = (np.arange(w)[:, None] + 1) * t
    noisy = jnp.where(np.arange(n)[None, :] < ends, noisy, -jnp.inf)
    return jax.lax.top_k(noisy, t)[1]


def _sample(key, n, m, kind, s, *, sigma, causal, grid, tiles, always_keep, padding):
    sigma = jax.lax.stop_gradient(jnp.asarray(sigma, jnp.float32))
    if kind in ("shared", "per_example"):
        rows = 1 if kind == "shared" else padding.shape[0] if padding is not None else 1
        score = jax.random.uniform(key, (rows, m))
        if kind == "per_example" and padding is not None:
            score = jnp.where(padding, score, -1.0)  # padded sources only fill a short graph
        score = jnp.where(np.arange(m) < always_keep, 2.0, score)
        return jax.lax.top_k(score, s)[1][:, None, :]
    w = n // s
    if kind == "local_1d":
        base = jnp.arange(n, dtype=jnp.float32)
        if causal:
            return _causal_top(key, base, sigma * n, w, s)[None]
        noisy = _jitter(base, sigma * n, jax.random.normal(key, (n,)))
        return jnp.argsort(noisy).reshape(1, w, s)
    gh, gw = _grid(grid, n)
    wr, wc = (w, 1) if tiles is None else tuple(int(t) for t in tiles)
    rows = jnp.asarray(np.arange(n) // gw, jnp.float32)
    cols = jnp.asarray(np.arange(n) % gw, jnp.float32)
    k_row, k_col = jax.random.split(key)
    if causal:
        return _causal_top(k_row, rows, sigma * gh, w, s)[None]
    by_row = jnp.argsort(_jitter(rows, sigma * gh, jax.random.normal(k_row, (n,))))
    bands = by_row.reshape(wr, n // wr)
    noisy_col = _jitter(cols, sigma * gw, jax.random.normal(k_col, (n,)))
    bands = jnp.take_along_axis(bands, jnp.argsort(noisy_col[bands], axis=1), axis=1)
    return bands.reshape(1, w, s)


def sample_pattern(
    key,
    n: int,
    m: int | None = None,
    *,
    sampling: str = "local_1d",
    keep: float = 0.25,
    sigma=0.2,
    causal: bool = False,
    grid=None,
    tiles=None,
    always_keep: int = 0,
    key_padding=None,
):
    """Draws one SSA pattern (what a training step uses for one layer).

    Args:
      key: PRNG key.
      n, m: number of targets (queries) and sources (keys); `m=None` means `n`.
      sampling, keep, causal, grid, tiles, always_keep: as in `apply`.
      sigma: locally biased std as a fraction of the length (scalar; ignored when unbiased).
      key_padding: `[B, M]` bool (True = real source), used by `sampling="graph"`.

    Returns:
      `(tgt, src)`: `tgt` `[w, T]` numpy int, the targets of each window (w = 1 for unbiased and
      graph); `src` `[Bs, w, S]` int32, the sources each window attends to (Bs = B for graph
      sampling with a padding mask, else 1). Causal samplers may include sources after a
      target inside its window; `apply` masks those pairs.
    """
    m = n if m is None else m
    _check_hparams(keep, sampling, "dense", 1, 0.0, always_keep)
    kind, tgt, s = _plan(n, m, keep=keep, sampling=sampling, causal=causal, grid=grid, tiles=tiles)
    if sampling == "unbiased":
        sigma = jnp.inf  # only used by causal windows: an unbiased shuffle
    if key_padding is not None:
        key_padding = _check_padding(jnp.asarray(key_padding), key_padding.shape[0], m)
    src = _sample(
        key,
        n,
        m,
        kind,
        s,
        sigma=sigma,
        causal=causal,
        grid=grid,
        tiles=tiles,
        always_keep=always_keep,
        padding=key_padding,
    )
    return tgt, src


def pattern_mask(tgt, src, n: int, m: int):
    """The dense `[Bs, N, M]` bool mask of the (target, source) pairs a pattern computes.

    For tests and plots only: training never builds it.
    """
    src = jnp.asarray(src)
    bsz = src.shape[0]
    out = jnp.zeros((bsz, n, m), bool)
    return out.at[
        np.arange(bsz)[:, None, None, None], np.asarray(tgt)[None, :, :, None], src[:, :, None, :]
    ].set(True)


# --------------------------------------------------------------------------------------------
# Attention on gathered sources.


def _gather_pairs(x, tgt, src):
    """x `[Bx, Hx, N, M]` -> `[Bx|B, Hx, w, T, S]`: x[b, h, tgt[j, t], src[b, j, s]]."""
    rows = tgt[:, :, None]
    if src.shape[0] == 1:
        return x[:, :, rows, src[0][:, None, :]]
    x = jnp.broadcast_to(x, (src.shape[0],) + x.shape[1:])
    return jax.vmap(lambda xb, sb: xb[:, rows, sb[:, None, :]])(x, src)


def _take_sources(x, src):
    """x `[B, M, ...]` -> `[B, w, S, ...]` with the sources of each window."""
    if src.shape[0] == 1:
        return x[:, src[0]]
    return jax.vmap(lambda xb, sb: xb[sb])(x, src)


def _fold_windows(x, bsz):
    """`[Bx, Hx, w, Tx, S]` (Bx in {1, B}) -> `[B * w, Hx, Tx, S]`: windows become batch rows."""
    x = jnp.broadcast_to(x, (bsz,) + x.shape[1:]).transpose(0, 2, 1, 3, 4)
    return x.reshape((bsz * x.shape[1],) + x.shape[2:])


def _folded_spec(x, bsz):
    """The shape `_fold_windows(x, bsz)` will have, without computing it."""
    if x is None:
        return None
    return jax.ShapeDtypeStruct((bsz * x.shape[2], x.shape[1], x.shape[3], x.shape[4]), x.dtype)


def _gathered_attention(
    q, k, v, tgt, src, *, valid, bias_w, scale, dropout_rate, drop_key, implementation="auto"
):
    """Softmax attention of each target window over its own sources; `[B, N, H, Dv]`.

    The kernel is chosen by `kernels.select` for the windows folded into the batch
    (`[B * w, T, H, D]` queries, `[B * w, S, H, D]` sources); on "xla" the windows are computed
    here, as one batched einsum.
    """
    bsz, n, h, dk = q.shape
    w, t = tgt.shape
    s, dv = src.shape[-1], v.shape[-1]
    acc = jnp.promote_types(q.dtype, jnp.float32)
    natural = np.array_equal(tgt.reshape(-1), np.arange(n))
    dropout = dropout_rate > 0.0 and drop_key is not None
    spec = lambda length, d, x: jax.ShapeDtypeStruct((bsz * w, length, h, d), x.dtype)
    kernel = kernels.select(
        implementation,
        spec(t, dk, q),
        spec(s, dk, k),
        spec(s, dv, v),
        mask=_folded_spec(valid, bsz),
        bias=_folded_spec(bias_w, bsz),
        dropout=dropout,
        site="ssa",
    )
    qw = q.reshape(bsz, w, t, h, dk) if natural else q[:, tgt]
    kw, vw = _take_sources(k, src), _take_sources(v, src)
    if kernel != "xla":
        out = kernels.run(
            kernel,
            qw.reshape(bsz * w, t, h, dk),
            kw.reshape(bsz * w, s, h, dk),
            vw.reshape(bsz * w, s, h, dv),
            mask=None if valid is None else _fold_windows(valid, bsz),
            bias=None if bias_w is None else _fold_windows(bias_w, bsz),
            scale=scale,
        )
        out = out.reshape(bsz, n, h, dv)
        return out if natural else out[:, np.argsort(tgt.reshape(-1))]
    logits = jnp.einsum("bwthd,bwshd->bhwts", qw, kw, preferred_element_type=acc) * scale
    if bias_w is not None:
        logits = logits + bias_w.astype(acc)
    if valid is not None:
        logits = jnp.where(valid, logits, jnp.finfo(acc).min)
    probs = jax.nn.softmax(logits, axis=-1)
    if valid is not None:
        # A row whose every gathered source is masked gives zeros, as dense attention does.
        probs = jnp.where(valid, probs, 0.0)
    if dropout:
        kept = jax.random.bernoulli(drop_key, 1.0 - dropout_rate, probs.shape)
        probs = jnp.where(kept, probs / (1.0 - dropout_rate), 0.0)
    out = jnp.einsum("bhwts,bwshd->bwthd", probs.astype(v.dtype), vw)
    out = out.reshape(bsz, n, h, dv)
    return out if natural else out[:, np.argsort(tgt.reshape(-1))]


def _check_hparams(keep, sampling, eval_mode, ensemble_samples, dropout_rate, always_keep):
    if not 0.0 < keep <= 1.0:
        raise ValueError(f"ssa: keep (fraction of sources kept) must be in (0, 1], got {keep}")
    if sampling not in SAMPLINGS:
        raise ValueError(f"ssa: sampling must be one of {SAMPLINGS}, got {sampling!r}")
    if eval_mode not in EVAL_MODES:
        raise ValueError(f"ssa: eval_mode must be one of {EVAL_MODES}, got {eval_mode!r}")
    if int(ensemble_samples) != ensemble_samples or ensemble_samples < 1:
        raise ValueError(f"ssa: ensemble_samples must be an integer >= 1, got {ensemble_samples}")
    if not 0.0 <= dropout_rate < 1.0:
        raise ValueError(f"ssa: dropout_rate must be in [0, 1), got {dropout_rate}")
    if int(always_keep) != always_keep or always_keep < 0:
        raise ValueError(f"ssa: always_keep must be an integer >= 0, got {always_keep}")


def _static_bool(x):
    """(is_static, value): python/numpy/concrete bools become python; tracers stay traced."""
    if x is None or isinstance(x, bool | np.bool_):
        return True, None if x is None else bool(x)
    if jnp.shape(x) != ():
        raise ValueError(f"ssa: subsample must be a bool scalar, got shape {jnp.shape(x)}")
    try:
        return True, bool(x)
    except jax.errors.ConcretizationTypeError:
        return False, jnp.asarray(x, bool)


def _full_bias(bias, b, h, n, m):
    """`bias` with N and M axes materialised (B, H may stay 1): `[B|1, H|1, N, M]`."""
    bias = jnp.asarray(bias)
    if bias.ndim > 4:
        raise ValueError(f"ssa: bias must broadcast to [B, H, N, M], got {bias.shape}")
    bias = bias.reshape((1,) * (4 - bias.ndim) + bias.shape)
    try:
        jnp.broadcast_shapes(bias.shape, (b, h, n, m))
    except ValueError:
        raise ValueError(
            f"ssa: bias of shape {bias.shape} does not broadcast to [B, H, N, M] = {(b, h, n, m)}"
        ) from None
    return jnp.broadcast_to(bias, bias.shape[:2] + (n, m))


def _check_padding(mask, b, m):
    if mask.dtype != jnp.bool_:
        raise ValueError(f"attention mask must be boolean (True = attend), got {mask.dtype}")
    if mask.shape != (b, m):
        raise ValueError(f"a 2-D attention mask is key padding [B, M] = {(b, m)}, got {mask.shape}")
    return mask


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    bias=None,
    subsample=None,
    keep: float = 0.25,
    sampling: str = "local_1d",
    causal: bool = False,
    grid=None,
    tiles=None,
    always_keep: int = 0,
    dropout_rate: float = 0.0,
    scale: float | None = None,
    eval_mode: str = "dense",
    ensemble_samples: int = 50,
    implementation: str = "auto",
):
    """SSA attention.

    Args:
      params: from `init`; `params["buffers"]["sigma"]` (a fraction of the length) is read by
        the locally biased samplers.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: boolean, broadcastable to `[B, H, N, M]`, or key padding `[B, M]`; True = attend.
        All kinds work in every mode (a 4-D mask is re-indexed with the sources; key padding is
        gathered as `[B, S]`). With key padding the graph sampler never draws padded sources;
        with a 4-D mask it draws uniformly and masked pairs get zero weight.
      key: PRNG key; needed whenever a pattern is sampled (train with subsampling, ensemble
        evaluation, `subsample=True` at eval) or for dropout in dense training.
      train: training mode: subsample (unless `subsample` is False) and apply dropout.
      bias: optional additive logit bias broadcastable to `[B, H, N, M]` (ALiBi, relative
        position, graph distance), gathered with the sources like the paper's B.
      subsample: declared input. None: subsample iff `train` (at eval, `eval_mode` decides).
        True: one subsampled pass (at eval: without dropout, one member of a model-level
        self-ensemble). False: dense attention (the +FT phase). A traced bool scalar selects
        with `lax.cond` (both branches are compiled).
      keep: fraction of sources each target attends to; windows use w = 1/keep (an integer).
      sampling: "unbiased" | "local_1d" | "grid_2d" | "graph" (see the module docstring).
      causal: targets never attend to later sources (N == M).
      grid: `(gh, gw)` with gh * gw = N for "grid_2d"; None means a square grid.
      tiles: `(wr, wc)` target tiles for "grid_2d", wr * wc = 1/keep; None means `(1/keep, 1)`.
      always_keep: "unbiased"/"graph": the first `always_keep` sources are always sampled.
      dropout_rate: attention dropout on the (subsampled or dense) probabilities in training.
      scale: logit scale; default `Dk ** -0.5`.
      eval_mode: "dense" (renormalization, Sec. 3.4) or "ensemble": the mean of this layer's
        outputs over `ensemble_samples` subsampled passes with keys `split(key, S)` (Sec. 3.5).
        The paper averages the *model's* probabilities over S stochastic forward passes; that
        is an evaluator doing S model passes with `subsample=True` and distinct keys.
      ensemble_samples: S for `eval_mode="ensemble"` (paper: 50).
      implementation: the softmax kernel, "auto" | "xla" | "chunked" | "cudnn" | "pallas"
        (`attention.kernels`), for dense attention and for the sampled windows (folded into
        the batch); attention dropout in training runs on "xla" ("auto" falls back to it).

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`; logits in float32 (float64 for float64 inputs).

    Shape checks of the samplers (divisibility, grid, M == N for windows) run only when a
    pattern can be sampled: dense evaluation works at any length.
    """
    softmax.check_qkv(q, k, v)
    _check_hparams(keep, sampling, eval_mode, ensemble_samples, dropout_rate, always_keep)
    kernels.check_implementation(implementation)
    b, n, h, dk = q.shape
    m = k.shape[1]
    if causal and n != m:
        raise ValueError(f"ssa: causal=True needs N == M, got N={n}, M={m}")
    scale = dk**-0.5 if scale is None else scale
    static, sub = _static_bool(subsample)
    if static and sub is None:
        mode = "sample" if train else eval_mode
    elif static:
        mode = "sample" if sub else "dense"
    else:
        mode = "cond"

    def dense():
        mask4 = kernels.compact_mask(mask, b, h, n, m)  # broadcast axes kept for fused kernels
        if causal:
            tril = jnp.asarray(np.tril(np.ones((n, m), bool)))[None, None]
            mask4 = tril if mask4 is None else mask4 & tril
        drop = train and dropout_rate > 0.0
        return kernels.dot_product_attention(
            q,
            k,
            v,
            mask=mask4,
            bias=bias,
            scale=scale,
            implementation=implementation,
            dropout_rate=dropout_rate if drop else 0.0,
            dropout_key=jax.random.split(key)[1] if drop else None,
            site="ssa",
        ).astype(v.dtype)

    pad = _window_padding(n, m, keep=keep, sampling=sampling, causal=causal)
    if pad and mode != "dense":
        return _padded_apply(
            pad,
            params,
            q,
            k,
            v,
            mask,
            bias,
            key=key,
            train=train,
            subsample=subsample,
            keep=keep,
            sampling=sampling,
            causal=causal,
            grid=grid,
            tiles=tiles,
            always_keep=always_keep,
            dropout_rate=dropout_rate,
            scale=scale,
            eval_mode=eval_mode,
            ensemble_samples=ensemble_samples,
            implementation=implementation,
        )
    if mode == "dense":
        if train and dropout_rate > 0.0 and key is None:
            raise ValueError("ssa: train=True with dropout_rate > 0 needs `key`")
        return dense()
    if key is None:
        what = "eval_mode='ensemble'" if mode == "ensemble" else "subsampling (train=True)"
        raise ValueError(f"ssa: {what} needs `key` to sample the sources")

    kind, tgt, s = _plan(n, m, keep=keep, sampling=sampling, causal=causal, grid=grid, tiles=tiles)
    sigma = jnp.inf  # unbiased shuffle (causal "unbiased" windows); samplers below override
    if kind in ("local_1d", "grid_2d") and sampling != "unbiased":
        try:
            sigma = params["buffers"]["sigma"]
        except (KeyError, TypeError):
            raise ValueError(
                "ssa: params lack buffers['sigma'] (the per-layer sigma); create them with init"
            ) from None
    padding = None
    mask4 = None
    if mask is not None:
        mask = jnp.asarray(mask)
        if mask.ndim == 2:
            padding = _check_padding(mask, b, m)
        else:
            mask4 = masks.as_4d(mask, b, h, n, m)
    bias4 = None if bias is None else _full_bias(bias, b, h, n, m)

    def one_pass(pass_key, dropout):
        sample_key, drop_key = jax.random.split(pass_key)
        src = _sample(
            sample_key,
            n,
            m,
            kind,
            s,
            sigma=sigma,
            causal=causal,
            grid=grid,
            tiles=tiles,
            always_keep=always_keep,
            padding=padding,
        )
        valid = None
        if padding is not None:
            valid = _take_sources(padding, src)[:, None, :, None, :]  # [B, 1, w, 1, S]
        if mask4 is not None:
            valid = _gather_pairs(mask4, tgt, src)
        if causal:
            before = (src[:, :, None, :] <= tgt[None, :, :, None])[:, None]  # [Bs, 1, w, T, S]
            valid = before if valid is None else valid & before
        bias_w = None if bias4 is None else _gather_pairs(bias4, tgt, src)
        return _gathered_attention(
            q,
            k,
            v,
            tgt,
            src,
            valid=valid,
            bias_w=bias_w,
            scale=scale,
            dropout_rate=dropout,
            drop_key=drop_key,
            implementation=implementation,
        )

    dropout = dropout_rate if train else 0.0
    if mode == "sample":
        return one_pass(key, dropout)
    if mode == "cond":
        return jax.lax.cond(sub, lambda: one_pass(key, dropout), dense)
    outs = jax.lax.map(lambda kk: one_pass(kk, 0.0), jax.random.split(key, int(ensemble_samples)))
    return jnp.mean(outs, axis=0).astype(v.dtype)


def _check(h, num_tokens) -> None:
    """`check` for the registry: the hyper-parameters `apply` checks, before any model is built."""
    _check_hparams(
        h["keep"],
        h["sampling"],
        h["eval_mode"],
        h["ensemble_samples"],
        h["dropout_rate"],
        h["always_keep"],
    )
    kernels.check_implementation(h["implementation"])
    if num_tokens is not None and h["always_keep"] > num_tokens:
        raise ValueError(
            f"ssa: always_keep={h['always_keep']} exceeds the {num_tokens} tokens of a sequence"
        )


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Training: each target scores only its sampled sources, 4·n·S·h·d with S = keep·m
    # (unbiased: round(keep·m) shared sources; windows: w = 1/keep windows of n/w targets and
    # n/w sources, N padded to a multiple of w). Evaluation: dense softmax ("renormalisation"),
    # or `ensemble_samples` subsampled passes.
    sub = hp.get("subsample")
    sampled = (c.train if sub is None else bool(sub)) or (
        not c.train and sub is None and hp["eval_mode"] == "ensemble"
    )
    if not sampled:
        return softmax.flops(c, hp)
    passes = hp["ensemble_samples"] if (not c.train and sub is None) else 1
    causal, sampling = hp["causal"], hp["sampling"]
    if sampling in ("unbiased", "graph") and not (causal and sampling == "unbiased"):
        targets, sources = c.n, min(c.m, max(1, round(hp["keep"] * c.m)))
    else:
        w = round(1.0 / hp["keep"])
        windowed_1d = sampling == "local_1d" or (sampling == "unbiased" and causal)
        targets = c.n + ((-c.n) % w if windowed_1d and c.n == c.m else 0)
        sources = targets // w
    scores = targets * sources * c.h
    mm = 2 * scores * (c.dk + c.dv)
    ew = cost.softmax_elementwise(c, scores) + (c.n * c.h * c.dv if passes > 1 else 0)
    return passes * mm, passes * ew


registry.register(
    "ssa",
    check=_check,
    apply=apply,
    init=init,
    flops=flops,
    defaults={
        "keep": 0.25,
        "sampling": "local_1d",
        "causal": False,
        "sigma_first": 0.2,
        "sigma_last": 0.35,
        "grid": None,
        "tiles": None,
        "always_keep": 0,
        "dropout_rate": 0.0,
        "scale": None,
        "eval_mode": "dense",
        "ensemble_samples": 50,
        "implementation": "auto",
    },
    doc="stochastically subsampled self-attention (train: sampled sources; eval: dense/ensemble)",
    inputs=("bias", "subsample"),
)
