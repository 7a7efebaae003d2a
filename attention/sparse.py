"""Fixed sparse attention patterns of the Long Range Arena: BigBird, Longformer, Sparse Transformer.

Each is softmax attention restricted to a set of allowed pairs (i, j):

    out_i = sum_{j in A_i} softmax_j(q_i . k_j * scale) v_j,     A_i = the pattern's keys of i

with the pattern A (predicates in `attention.sparse_patterns`, shared by both forms below):

  * `bigbird` (Zaheer et al. 2020, "Big Bird: Transformers for Longer Sequences", arXiv:2007.14062,
    Sec. 2 and App. D, BIGBIRD-ITC). Positions are cut into blocks of b = `block_size`; query
    block x attends key block y when |x - y| <= (w - 1) / 2 (sliding window of w =
    `num_window_blocks` blocks), when x or y is global (g = `num_global_blocks` global blocks:
    the first ceil(g/2) and the last floor(g/2) blocks; g = 2 gives the first and the last, as in
    BigBird's released ITC code and LRA's port of it), or when y is one of the r =
    `num_random_blocks` random blocks of x (per head, drawn from the blocks neither in x's
    window nor global, so that no key is attended twice). Defaults b = 64, w = 3, g = 2, r = 3:
    the paper's MLM hyper-parameters of BIGBIRD-ITC base (App. E.1, Table 8: block 64, global
    2 x 64, window 3 x 64, random 3 x 64), also the values of LRA's `bigbird_attention.py`
    (block_size=64, num_rand_blocks=3, first/last block global, 3-block band), which LRA's
    BigBird configs do not change.
  * `longformer` (Beltagy et al. 2020, "Longformer: The Long-Document Transformer",
    arXiv:2004.05150, Sec. 3.1). Sliding window of w = `window`: |i - j| <= w // 2 ("1/2 w on
    each side"), plus symmetric global attention on the first `num_global` tokens (they attend
    to all, all attend to them). `causal=True` (the paper's autoregressive setting, Sec. 4)
    keeps j <= i of that. Defaults: w = 512 (LRA's `sliding_window_size` default), num_global
    = 1 (the CLS token, the first position in these encoders).
  * `sparse_transformer` (Child et al. 2019, "Generating Long Sequences with Sparse
    Transformers", arXiv:1904.10509, Sec. 4.2-4.3). The factorised patterns of stride l =
    `stride`: "strided", A1_i = {max(0, i - l), ..., i}, A2_i = {j : (i - j) mod l = 0}; "fixed",
    A1_i = {j : floor(j / l) = floor(i / l)}, A2_i = {j : j mod l >= l - c} (c = `c` summary
    cells per block). Causal (`causal=True`, the paper's setting) restricts both to j <= i.
    The bidirectional version (the default, for LRA's classifiers) is the same sets without the
    restriction: strided |i - j| <= l or (i - j) mod l = 0; fixed, i's whole block or any
    block's last c cells. The two heads' patterns are *merged*: every head attends over
    A1 | A2 (Sec. 5, "factorized attention heads", the "merged head" of its three options:
    interleaved per residual block, merged, multi-head). Merged keeps the layer one plain
    multi-head attention whatever the depth or head count, gives every head the two-step
    connectivity of Sec. 4.2, and is what LRA's code did. Defaults: pattern "fixed", l = 128,
    c = 32 (LRA's default pattern, the paper's enwik8 setting).

Two computations of each, registered under two names; they attend over the same pairs and agree
to float64 precision (tests/attention/test_sparse.py):

  * blocked (`bigbird`, `longformer`, `sparse_transformer`): queries in blocks, each block
    scoring only the key blocks its pattern can reach (gathered or sliced), joined into one
    softmax per query; rows of global tokens are computed densely against all keys and
    overwrite the blocked rows. Memory and time O(N * keys per query):
      - bigbird: N (w + g + r) b + g b N, linear in N;
      - longformer: N (3 c + num_global) + num_global N with c = max(w // 2, 1) (2 c causal),
        linear in N;
      - sparse_transformer, strided: N (3 l + N / l) (2 l causal); fixed: N (l + c N / l).
        A fraction 3l/N + 1/l resp. l/N + c/l of dense attention (1/4 for the fixed
        defaults at large N): the paper's O(N sqrt N) needs l ~ sqrt N. No N x N array is
        built.
  * dense (`*_dense`): the explicit N x N boolean pattern (`[H, N, N]` for BigBird's per-head
    random blocks) combined with the mask, over dense masked softmax (`kernels`' exact XLA
    path): O(N^2) time and memory, what LRA's own code did for Longformer and the Sparse
    Transformer (and for BigBird only in its causal fallback), and what Sliceformer's Table 3
    timings of these baselines reflect.
  Which to use in the paper tables: accuracy is the same function either way (the blocked form
  is the default name). For time and memory, the blocked form measures the method's claim (its
  point is to skip the masked pairs); the dense form reproduces the published LRA speed table:
  `longformer_dense` and `sparse_transformer_dense` are what LRA timed, while LRA's BigBird was
  block-sparse, so `bigbird` (blocked) is its counterpart.

Masks: all kinds, combined with the pattern: key padding `[B, M]` and any boolean mask
broadcastable to `[B, H, N, M]` (the blocked forms read a 4-D mask only at the pairs they
score, gathered per tile). A query whose allowed keys are all masked returns zeros. Attention
dropout on the probabilities in training (`dropout_rate`, needs `key`). Logits and softmax in
float32 (float64 for float64 inputs); the output in v's dtype. Self-attention layout only:
N == M.

BigBird's random blocks are fixed at init: `init` draws, per head and query block, a random
priority order of the key blocks, `params["buffers"]["ranks"]` `[H, nb, nb]` int32 with nb =
ceil(max_len / block_size); a call with N tokens takes for each query block the r candidate
blocks of highest priority among its first ceil(N / b) blocks (a uniform r-subset of the
candidates; the same at every call with that N). N above `max_len` raises ValueError (init
again with a larger `max_len`); where a short sequence has fewer than r candidates, the query
block attends to all of them.

Deliberate differences from the papers and the released code:
  * BigBird: random blocks are drawn from all candidate blocks; the released code (and LRA)
    restricts them to the first 1024 tokens (`last_idx`) and, for the second and second-to-last
    block, to a narrower range. N is padded to whole blocks with masked keys; LRA's port pads
    a full extra block even when N is a multiple of b, which makes its "last" global block a
    padding block. The causal variant is not offered (LRA's code fell back to dense causal
    attention; BigBird's encoder pattern is the paper's point).
  * Longformer: one set of projections. The paper (Sec. 3.1, "Linear Projections for Global
    Attention") and LRA's port give global attention its own Q_g, K_g, V_g; here the layer's
    q, k, v serve both, as for every mechanism of this library (the pattern is the same).
    Dilation (Sec. 3.1, used for some heads of the character LM) is left out, as in LRA's and
    HuggingFace's implementations. The window is the paper's |i - j| <= w / 2 (w + 1 keys);
    LRA's port took w keys (w - w // 2 on the left, self included, w // 2 on the right), and by
    default no global token.
  * Sparse Transformer: the fixed pattern's summary cells are the last c positions of each
    block, j mod l in {l - c, ..., l - 1} (c cells); LRA's port read the paper's set {t, ..., l}
    literally and also marks j mod l = 0 (c + 1 cells). LRA applied the causal pattern to its
    classifiers too (with the CLS row and column unmasked); here `causal=False` gives the
    bidirectional sets above. The paper's per-head offsets of the summary cells in the fixed
    pattern (Sec. 4.3, "different heads attend to distinct sub-blocks") are not used: all
    heads share the pattern.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from attention import cost, kernels, masks, registry
from attention import sparse_patterns as sp
from attention.softmax import check_qkv

__all__ = [
    "bigbird",
    "bigbird_dense",
    "bigbird_init",
    "longformer",
    "longformer_dense",
    "sparse_transformer",
    "sparse_transformer_dense",
]


# ------------------------------------------------------------------------------ shared parts


def _setup(name, q, k, v, mask, dropout_rate, train, key):
    """Validates the call; returns the mask as `[B|1, H|1, N|1, M|1]` (or None)."""
    check_qkv(q, k, v)
    b, n, h, _ = q.shape
    if k.shape[1] != n:
        raise ValueError(f"{name} needs N == M (self-attention), got N={n}, M={k.shape[1]}")
    if train and dropout_rate > 0.0 and key is None:
        raise ValueError(f"{name}: train=True with dropout_rate > 0 needs `key`")
    return kernels.compact_mask(mask, b, h, n, n)


def _int(name, field, value, lowest):
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < lowest:
        raise ValueError(f"{name}: {field}={value!r} must be an integer >= {lowest}")


def _bool(name, field, value):
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name}: {field}={value!r} must be True or False")


def _gather_mask(mask4, q_pos, k_pos, n):
    """The mask at query positions `q_pos` and key positions `k_pos`.

    mask4 `[B', H', N|1, M|1]`; q_pos, k_pos int arrays of 4 axes `[heads|1, X, C|1, K|1]`
    broadcasting together (positions outside [0, n) are clipped: their pairs must be invalid
    anyway). Returns `[B', H*, X, C|1, K]`.
    """
    _, hm, nm, mm = mask4.shape
    hh = 0 if hm == 1 else jnp.arange(hm).reshape(hm, 1, 1, 1)
    qi = 0 if nm == 1 else jnp.clip(jnp.asarray(q_pos), 0, n - 1)
    ki = 0 if mm == 1 else jnp.clip(jnp.asarray(k_pos), 0, n - 1)
    out = mask4[:, hh, qi, ki]
    if out.ndim == 1:  # every index a scalar (a mask [B', 1, 1, 1]): [B']
        out = out.reshape(out.shape[0], 1, 1, 1, 1)
    return out


def _attend(parts, acc_t, train, dropout_rate, key):
    """One softmax over the keys of all `parts` [(logits `[..., K_p]`, valid)], per query.

    Invalid pairs get probability 0 (a query with none valid gets all zeros); attention dropout
    in training. Returns the probabilities of each part (zeros for a part with no keys)."""
    live = [(lg, va) for lg, va in parts if lg.shape[-1]]
    fill = jnp.finfo(acc_t).min
    masked = [jnp.where(va, lg, fill) for lg, va in live]
    probs = jax.nn.softmax(jnp.concatenate(masked, axis=-1), axis=-1)
    if train and dropout_rate > 0.0:
        keep = jax.random.bernoulli(key, 1.0 - dropout_rate, probs.shape)
        probs = jnp.where(keep, probs / (1.0 - dropout_rate), 0.0)
    cuts = np.cumsum([lg.shape[-1] for lg, _ in live])[:-1]
    split = iter(jnp.split(probs, cuts, axis=-1))
    return [
        jnp.where(va, next(split), 0.0) if lg.shape[-1] else jnp.zeros(lg.shape, acc_t)
        for lg, va in parts
    ]


def _dense_rows(q, k, v, mask4, rows, allowed, scale, acc_t, train, rate, key):
    """Rows `rows` (numpy positions) of attention against all N keys: `[B, len(rows), H, Dv]`.

    `allowed` `[len(rows), N]` numpy: the pattern's pairs of those rows."""
    logits = jnp.einsum("bghd,bmhd->bhgm", q[:, rows], k, preferred_element_type=acc_t) * scale
    valid = jnp.asarray(allowed)[None, None]
    if mask4 is not None:
        valid = valid & (mask4[:, :, rows] if mask4.shape[2] != 1 else mask4)
    (probs,) = _attend([(logits, valid)], acc_t, train, rate, key)
    return jnp.einsum("bhgm,bmhe->bghe", probs.astype(v.dtype), v, preferred_element_type=acc_t)


def _pad_blocks(x, n_pad, left=0, right=0):
    """`[B, N, H, D]` padded with zeros to `left + n_pad + right` tokens."""
    return jnp.pad(x, ((0, 0), (left, n_pad - x.shape[1] + right), (0, 0), (0, 0)))


def _band(x, span, nb, c):
    """Tiles of `span` consecutive blocks: x `[B, (nb + span - 1) * c, H, D]` (already padded)
    -> `[B, nb, span * c, H, D]`, tile t holding blocks t .. t + span - 1."""
    b, _, h, d = x.shape
    xb = x.reshape(b, -1, c, h, d)
    return jnp.concatenate([xb[:, s : s + nb] for s in range(span)], axis=2)


def _dense(name, pattern, q, k, v, mask, key, train, dropout_rate, scale):
    """Dense masked softmax over `pattern` (`[N, N]` or `[H, N, N]`) and `mask`."""
    b, n, h, _ = q.shape
    pat = jnp.asarray(pattern)
    pat = pat.reshape((1,) * (4 - pat.ndim) + pat.shape)
    full = pat if mask is None else masks.as_4d(mask, b, h, n, n) & pat
    rate = dropout_rate if train else 0.0
    return kernels.dot_product_attention(
        q,
        k,
        v,
        mask=full,
        scale=scale,
        implementation="xla",
        dropout_rate=rate,
        dropout_key=key,
        site=name,
    )


def _dense_flops(c: cost.Call, hp) -> tuple[float, float]:
    """Dense form: the full N x M scores, masked."""
    del hp
    scores = c.n * c.m * c.h
    return 2 * scores * (c.dk + c.dv), scores * (cost.SOFTMAX + cost.MASKED)


# ---------------------------------------------------------------------------------- BigBird


def _check_bigbird(hp, num_tokens=None) -> None:
    del num_tokens  # any N works up to init's max_len (checked at the call)
    _int("bigbird", "block_size", hp["block_size"], 1)
    _int("bigbird", "num_window_blocks", hp["num_window_blocks"], 1)
    if hp["num_window_blocks"] % 2 != 1:
        raise ValueError(
            f"bigbird: num_window_blocks={hp['num_window_blocks']!r} must be odd (the block "
            "itself and as many on each side); use e.g. 3"
        )
    _int("bigbird", "num_global_blocks", hp["num_global_blocks"], 0)
    _int("bigbird", "num_random_blocks", hp["num_random_blocks"], 0)


def bigbird_init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    block_size: int = 64,
):
    """Draws BigBird's frozen random-block priorities for sequences of up to `max_len` tokens.

    Returns:
      `{"buffers": {"ranks": [num_heads, nb, nb] int32}}`, nb = ceil(max_len / block_size);
      `ranks[h, x]` is a random permutation of the block indices (query block x's priorities).
    """
    del head_dim, model_dim, layer_index, num_layers
    _int("bigbird", "block_size", block_size, 1)
    if max_len is None:
        raise ValueError(
            "bigbird: init needs max_len (its random blocks are drawn for that many tokens)"
        )
    _int("bigbird", "max_len", max_len, 1)
    nb = -(-max_len // block_size)
    noise = jax.random.uniform(key, (num_heads, nb, nb))
    return {"buffers": {"ranks": jnp.argsort(noise, axis=-1).astype(jnp.int32)}}


def _ranks(name, params, h, n, nb, block_size):
    try:
        ranks = params["buffers"]["ranks"]
    except (KeyError, TypeError):
        raise ValueError(
            f"{name}: params must be init's {{'buffers': {{'ranks': [H, nb, nb]}}}}"
        ) from None
    if ranks.ndim != 3 or ranks.shape[0] != h or ranks.shape[1] != ranks.shape[2]:
        raise ValueError(f"{name}: ranks of shape {ranks.shape} do not fit H={h} heads")
    if ranks.shape[1] < nb:
        raise ValueError(
            f"{name}: N={n} tokens make {nb} blocks of block_size={block_size}, but the random "
            f"blocks were drawn at init for {ranks.shape[1]} blocks (max_len <= "
            f"{ranks.shape[1] * block_size}); call init with max_len >= {n}"
        )
    return jax.lax.stop_gradient(ranks)


def bigbird(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    block_size: int = 64,
    num_window_blocks: int = 3,
    num_global_blocks: int = 2,
    num_random_blocks: int = 3,
    dropout_rate: float = 0.0,
    scale: float | None = None,
):
    """BigBird block-sparse attention (window + global + random blocks), blocked computation.

    Args:
      params: `{"buffers": {"ranks": [H, nb, nb]}}` from `bigbird_init`.
      q: `[B, N, H, Dk]`; k: `[B, N, H, Dk]`; v: `[B, N, H, Dv]` (N == M, N <= init's max_len).
      mask: boolean, broadcastable to `[B, H, N, N]`, or key padding `[B, N]`; True = attend.
      key: PRNG key for attention dropout (needed when `train` and `dropout_rate > 0`).
      train: enables attention dropout.
      block_size, num_window_blocks, num_global_blocks, num_random_blocks: b, w (odd), g, r.
      dropout_rate: dropout on the attention probabilities during training.
      scale: logit scale; default `Dk ** -0.5`.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`.
    """
    mask4 = _setup("bigbird", q, k, v, mask, dropout_rate, train, key)
    hp = dict(
        block_size=block_size,
        num_window_blocks=num_window_blocks,
        num_global_blocks=num_global_blocks,
        num_random_blocks=num_random_blocks,
    )
    _check_bigbird(hp)
    b, n, h, dk = q.shape
    dv = v.shape[-1]
    bs, w, r = block_size, num_window_blocks, num_random_blocks
    nb = -(-n // bs)
    n_pad = nb * bs
    ranks = _ranks("bigbird", params, h, n, nb, bs)
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    scale = dk**-0.5 if scale is None else scale
    half = (w - 1) // 2
    glob = sp.global_blocks(nb, num_global_blocks)
    is_global = np.zeros(nb, bool)
    is_global[glob] = True
    key_blocks, key_rows = (None, None) if key is None else jax.random.split(key)

    qb = _pad_blocks(q, n_pad).reshape(b, nb, bs, h, dk)
    q_pos = (np.arange(nb)[:, None] * bs + np.arange(bs)[None, :])[None, :, :, None]  # [1,nb,bs,1]
    parts, values = [], []

    # Window: w consecutive blocks centred on the query block (padded by `half` blocks each side).
    kw = _band(_pad_blocks(k, n_pad, half * bs, half * bs), w, nb, bs)  # [B, nb, w*bs, H, Dk]
    vw = _band(_pad_blocks(v, n_pad, half * bs, half * bs), w, nb, bs)
    w_blk = np.arange(nb)[:, None] + np.repeat(np.arange(w) - half, bs)[None, :]  # [nb, w*bs]
    w_pos = w_blk * bs + np.tile(np.arange(bs), w)[None, :]
    in_range = (w_blk >= 0) & (w_blk < nb)
    w_valid = in_range & ~is_global[np.clip(w_blk, 0, nb - 1)] & (w_pos < n)
    w_valid = jnp.asarray(w_valid[None, :, None, :])  # [1, nb, 1, w*bs]
    if mask4 is not None:
        w_valid = w_valid & _gather_mask(mask4, q_pos, w_pos[None, :, None, :], n)
    lw = jnp.einsum("bxihd,bxjhd->bhxij", qb, kw, preferred_element_type=acc_t) * scale
    parts.append((lw, w_valid))
    values.append(("bhxij,bxjhe->bxihe", vw))

    # Global blocks: the same keys for every query block.
    g_pos = (glob[:, None] * bs + np.arange(bs)[None, :]).reshape(-1)  # [G*bs]
    k_pad, v_pad = _pad_blocks(k, n_pad), _pad_blocks(v, n_pad)
    kg, vg = k_pad[:, g_pos], v_pad[:, g_pos]
    g_valid = jnp.asarray((g_pos < n)[None, None, None, :])
    if mask4 is not None:
        g_valid = g_valid & _gather_mask(mask4, q_pos, g_pos[None, None, None, :], n)
    lg = jnp.einsum("bxihd,bjhd->bhxij", qb, kg, preferred_element_type=acc_t) * scale
    parts.append((lg, g_valid))
    values.append(("bhxij,bjhe->bxihe", vg))

    # Random blocks: r per query block and head, gathered.
    if r:
        ids, ok = sp.random_blocks(
            ranks, nb, num_window_blocks=w, num_global_blocks=num_global_blocks, r=r
        )
        hh = jnp.arange(h)[:, None, None]
        kh = k_pad.reshape(b, nb, bs, h, dk).transpose(0, 3, 1, 2, 4)  # [B, H, nb, bs, Dk]
        vh = v_pad.reshape(b, nb, bs, h, dv).transpose(0, 3, 1, 2, 4)
        kr = kh[:, hh, ids].reshape(b, h, nb, r * bs, dk)  # [B, H, nb, r*bs, Dk]
        vr = vh[:, hh, ids].reshape(b, h, nb, r * bs, dv)
        r_pos = (ids[..., None] * bs + jnp.arange(bs)).reshape(h, nb, r * bs)
        r_valid = (jnp.repeat(ok, bs, axis=-1) & (r_pos < n))[:, :, None, :]  # [H, nb, 1, r*bs]
        if mask4 is not None:
            r_valid = r_valid & _gather_mask(mask4, q_pos, r_pos[:, :, None, :], n)
        lr = jnp.einsum("bxihd,bhxjd->bhxij", qb, kr, preferred_element_type=acc_t) * scale
        parts.append((lr, r_valid))
        values.append(("bhxij,bhxje->bxihe", vr))

    probs = _attend(parts, acc_t, train, dropout_rate, key_blocks)
    out = sum(
        jnp.einsum(spec, p.astype(v.dtype), x, preferred_element_type=acc_t)
        for p, (spec, x) in zip(probs, values, strict=True)
    )
    out = out.reshape(b, n_pad, h, dv)

    # Global query blocks attend to every key: computed densely, they replace the blocked rows.
    rows = g_pos[g_pos < n]
    if rows.size:
        allowed = np.ones((rows.size, n), bool)
        dense = _dense_rows(
            q, k, v, mask4, rows, allowed, scale, acc_t, train, dropout_rate, key_rows
        )
        out = out.at[:, rows].set(dense)
    return out[:, :n].astype(v.dtype)


def bigbird_dense(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    block_size: int = 64,
    num_window_blocks: int = 3,
    num_global_blocks: int = 2,
    num_random_blocks: int = 3,
    dropout_rate: float = 0.0,
    scale: float | None = None,
):
    """BigBird's pattern as an explicit `[H, N, N]` mask over dense softmax (arguments as
    `bigbird`)."""
    _setup("bigbird_dense", q, k, v, mask, dropout_rate, train, key)
    _check_bigbird(
        dict(
            block_size=block_size,
            num_window_blocks=num_window_blocks,
            num_global_blocks=num_global_blocks,
            num_random_blocks=num_random_blocks,
        )
    )
    _, n, h, _ = q.shape
    nb = -(-n // block_size)
    ranks = _ranks("bigbird_dense", params, h, n, nb, block_size)
    blocks = sp.bigbird_block_pattern(
        ranks,
        nb,
        num_window_blocks=num_window_blocks,
        num_global_blocks=num_global_blocks,
        r=num_random_blocks,
    )
    tok = np.arange(n) // block_size
    pattern = blocks[:, tok[:, None], tok[None, :]]  # [H, N, N]
    return _dense("bigbird_dense", pattern, q, k, v, mask, key, train, dropout_rate, scale)


def _bigbird_flops(c: cost.Call, hp) -> tuple[float, float]:
    """Blocked BigBird: every (padded) query scores (w + |G| + r) b keys; the |G| b global
    query rows (those < N) also score all M keys."""
    bs = hp["block_size"]
    nb = math.ceil(c.n / bs)
    glob = sp.global_blocks(nb, hp["num_global_blocks"])
    keys = (hp["num_window_blocks"] + glob.size + hp["num_random_blocks"]) * bs
    g_pos = (glob[:, None] * bs + np.arange(bs)[None, :]).reshape(-1)
    rows = int((g_pos < c.n).sum())
    scores = (nb * bs * keys + rows * c.m) * c.h
    return 2 * scores * (c.dk + c.dv), scores * (cost.SOFTMAX + cost.MASKED)


_BIGBIRD_DEFAULTS = {
    "block_size": 64,
    "num_window_blocks": 3,
    "num_global_blocks": 2,
    "num_random_blocks": 3,
    "dropout_rate": 0.0,
    "scale": None,
}


# ------------------------------------------------------------------------------- Longformer


def _check_longformer(hp, num_tokens=None) -> None:
    del num_tokens  # num_global above N makes every token global: full attention, allowed
    _int("longformer", "window", hp["window"], 0)
    _int("longformer", "num_global", hp["num_global"], 0)
    _bool("longformer", "causal", hp["causal"])


def longformer(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    window: int = 512,
    num_global: int = 1,
    causal: bool = False,
    dropout_rate: float = 0.0,
    scale: float | None = None,
):
    """Longformer attention (sliding window + symmetric global tokens), blocked computation.

    Args:
      params: unused (no parameters); `{}`.
      q: `[B, N, H, Dk]`; k: `[B, N, H, Dk]`; v: `[B, N, H, Dv]` (N == M).
      mask: boolean, broadcastable to `[B, H, N, N]`, or key padding `[B, N]`; True = attend.
      key: PRNG key for attention dropout (needed when `train` and `dropout_rate > 0`).
      train: enables attention dropout.
      window: w; keys with |i - j| <= w // 2 are attended.
      num_global: the first `num_global` tokens are global.
      causal: only keys j <= i.
      dropout_rate: dropout on the attention probabilities during training.
      scale: logit scale; default `Dk ** -0.5`.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`.
    """
    del params
    mask4 = _setup("longformer", q, k, v, mask, dropout_rate, train, key)
    _check_longformer(dict(window=window, num_global=num_global, causal=causal))
    b, n, h, dk = q.shape
    dv = v.shape[-1]
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    scale = dk**-0.5 if scale is None else scale
    half = window // 2
    ng = min(num_global, n)
    allowed = lambda i, j: sp.longformer_allowed(i, j, half=half, num_global=ng, causal=causal)
    key_blocks, key_rows = (None, None) if key is None else jax.random.split(key)

    c = min(max(half, 1), n)  # a query in block x reaches keys in blocks x-1, x, x+1 only
    nb = -(-n // c)
    n_pad = nb * c
    span = 2 if causal else 3
    qb = _pad_blocks(q, n_pad).reshape(b, nb, c, h, dk)
    kw = _band(_pad_blocks(k, n_pad, c, c), span, nb, c)  # [B, nb, span*c, H, Dk]
    vw = _band(_pad_blocks(v, n_pad, c, c), span, nb, c)
    q_pos = (np.arange(nb)[:, None] * c + np.arange(c)[None, :])[:, :, None]  # [nb, c, 1]
    k_pos = (np.arange(nb)[:, None] * c - c + np.arange(span * c)[None, :])[:, None, :]
    # The band's keys, less the global ones (those are the second part).
    w_valid = (k_pos >= ng) & (k_pos < n) & allowed(q_pos, k_pos)  # [nb, c, span*c]
    w_valid = jnp.asarray(w_valid[None])
    g_pos = np.arange(ng)[None, None, :]
    g_valid = jnp.asarray(allowed(q_pos, g_pos)[None])  # [1, nb, c, ng]
    if mask4 is not None:
        w_valid = w_valid & _gather_mask(mask4, q_pos[None], k_pos[None], n)
        g_valid = g_valid & _gather_mask(mask4, q_pos[None], g_pos[None], n)
    lw = jnp.einsum("bxihd,bxjhd->bhxij", qb, kw, preferred_element_type=acc_t) * scale
    lg = jnp.einsum("bxihd,bjhd->bhxij", qb, k[:, :ng], preferred_element_type=acc_t) * scale
    pw, pg = _attend([(lw, w_valid), (lg, g_valid)], acc_t, train, dropout_rate, key_blocks)
    out = jnp.einsum("bhxij,bxjhe->bxihe", pw.astype(v.dtype), vw, preferred_element_type=acc_t)
    out = out + jnp.einsum(
        "bhxij,bjhe->bxihe", pg.astype(v.dtype), v[:, :ng], preferred_element_type=acc_t
    )
    out = out.reshape(b, n_pad, h, dv)

    if ng:  # global queries attend to every key: computed densely, they replace the band rows
        rows = np.arange(ng)
        rows_allowed = allowed(rows[:, None], np.arange(n)[None, :])
        dense = _dense_rows(
            q, k, v, mask4, rows, rows_allowed, scale, acc_t, train, dropout_rate, key_rows
        )
        out = out.at[:, rows].set(dense)
    return out[:, :n].astype(v.dtype)


def longformer_dense(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    window: int = 512,
    num_global: int = 1,
    causal: bool = False,
    dropout_rate: float = 0.0,
    scale: float | None = None,
):
    """Longformer's pattern as an explicit N x N mask over dense softmax (arguments as
    `longformer`)."""
    del params
    _setup("longformer_dense", q, k, v, mask, dropout_rate, train, key)
    _check_longformer(dict(window=window, num_global=num_global, causal=causal))
    n = q.shape[1]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    pattern = sp.longformer_allowed(i, j, half=window // 2, num_global=num_global, causal=causal)
    return _dense("longformer_dense", pattern, q, k, v, mask, key, train, dropout_rate, scale)


def _longformer_flops(c: cost.Call, hp) -> tuple[float, float]:
    """Blocked Longformer: tiles of b = max(w // 2, 1) queries score span * b band keys (span
    3, causal 2) and the num_global global keys; the global rows also score all M keys."""
    ng = min(hp["num_global"], c.n)
    blk = min(max(hp["window"] // 2, 1), c.n)
    n_pad = math.ceil(c.n / blk) * blk
    span = 2 if hp["causal"] else 3
    scores = (n_pad * (span * blk + ng) + ng * c.m) * c.h
    return 2 * scores * (c.dk + c.dv), scores * (cost.SOFTMAX + cost.MASKED)


_LONGFORMER_DEFAULTS = {
    "window": 512,
    "num_global": 1,
    "causal": False,
    "dropout_rate": 0.0,
    "scale": None,
}


# ----------------------------------------------------------------------- Sparse Transformer


def _check_sparse_transformer(hp, num_tokens=None) -> None:
    del num_tokens  # any N: padded to whole blocks of `stride`
    if hp["pattern"] not in ("strided", "fixed"):
        raise ValueError(
            f"sparse_transformer: pattern={hp['pattern']!r} must be 'strided' or 'fixed'"
        )
    _int("sparse_transformer", "stride", hp["stride"], 1)
    _bool("sparse_transformer", "causal", hp["causal"])
    if hp["pattern"] == "fixed":
        _int("sparse_transformer", "c", hp["c"], 1)
        if hp["c"] > hp["stride"]:
            raise ValueError(
                f"sparse_transformer: c={hp['c']!r} must be at most stride={hp['stride']!r} "
                "(the summary cells are the last c of each block of stride); lower c"
            )


def sparse_transformer(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    pattern: str = "fixed",
    stride: int = 128,
    c: int = 32,
    causal: bool = False,
    dropout_rate: float = 0.0,
    scale: float | None = None,
):
    """Sparse Transformer attention over the merged factorised pattern, blocked computation.

    Args:
      params: unused (no parameters); `{}`.
      q: `[B, N, H, Dk]`; k: `[B, N, H, Dk]`; v: `[B, N, H, Dv]` (N == M).
      mask: boolean, broadcastable to `[B, H, N, N]`, or key padding `[B, N]`; True = attend.
      key: PRNG key for attention dropout (needed when `train` and `dropout_rate > 0`).
      train: enables attention dropout.
      pattern: "strided" or "fixed".
      stride: l.
      c: the fixed pattern's summary cells per block (1 <= c <= l; unused by "strided").
      causal: only keys j <= i (the paper's setting); False: the bidirectional sets.
      dropout_rate: dropout on the attention probabilities during training.
      scale: logit scale; default `Dk ** -0.5`.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`.
    """
    del params
    mask4 = _setup("sparse_transformer", q, k, v, mask, dropout_rate, train, key)
    _check_sparse_transformer(dict(pattern=pattern, stride=stride, c=c, causal=causal))
    b, n, h, dk = q.shape
    dv = v.shape[-1]
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    scale = dk**-0.5 if scale is None else scale
    l_ = stride
    nb = -(-n // l_)
    n_pad = nb * l_

    def allowed(i, j):
        return sp.sparse_transformer_allowed(i, j, pattern=pattern, stride=l_, c=c, causal=causal)

    qb = _pad_blocks(q, n_pad).reshape(b, nb, l_, h, dk)
    q_pos = (np.arange(nb)[:, None] * l_ + np.arange(l_)[None, :])[:, :, None]  # [nb, l, 1]
    if pattern == "strided":
        # Band |i - j| <= l: tiles of blocks x-1, x, x+1 (x-1, x when causal).
        span = 2 if causal else 3
        k1 = _band(_pad_blocks(k, n_pad, l_, l_), span, nb, l_)
        v1 = _band(_pad_blocks(v, n_pad, l_, l_), span, nb, l_)
        p1 = (np.arange(nb)[:, None] * l_ - l_ + np.arange(span * l_)[None, :])[:, None, :]
        valid1 = (p1 >= 0) & (p1 < n) & (np.abs(q_pos - p1) <= l_) & allowed(q_pos, p1)
        # Beyond the band, A2: the same column of the [nb, l] grid, keys j = y * l + (i mod l).
        k2 = _pad_blocks(k, n_pad).reshape(b, nb, l_, h, dk)
        v2 = _pad_blocks(v, n_pad).reshape(b, nb, l_, h, dv)
        p2 = np.arange(nb)[None, None, :] * l_ + np.arange(l_)[None, :, None]  # [1, l, nb]
        valid2 = (p2 < n) & (np.abs(q_pos - p2) > l_) & allowed(q_pos, p2)  # [nb, l, nb]
        l1 = jnp.einsum("bxihd,bxjhd->bhxij", qb, k1, preferred_element_type=acc_t) * scale
        l2 = jnp.einsum("bxihd,byihd->bhxiy", qb, k2, preferred_element_type=acc_t) * scale
        specs = ("bhxij,bxjhe->bxihe", "bhxiy,byihe->bxihe")
    else:
        # A1: the query's own block; beyond it, A2: the last c cells of every other block.
        k1 = _pad_blocks(k, n_pad).reshape(b, nb, l_, h, dk)
        v1 = _pad_blocks(v, n_pad).reshape(b, nb, l_, h, dv)
        p1 = (np.arange(nb)[:, None] * l_ + np.arange(l_)[None, :])[:, None, :]  # [nb, 1, l]
        valid1 = (p1 < n) & allowed(q_pos, p1)
        p2 = (np.arange(nb)[:, None] * l_ + np.arange(l_ - c, l_)[None, :]).reshape(-1)
        k2, v2 = _pad_blocks(k, n_pad)[:, p2], _pad_blocks(v, n_pad)[:, p2]  # [B, nb*c, H, D]
        p2 = p2[None, None, :]
        valid2 = (p2 < n) & (p2 // l_ != q_pos // l_) & allowed(q_pos, p2)  # [nb, l, nb*c]
        l1 = jnp.einsum("bxihd,bxjhd->bhxij", qb, k1, preferred_element_type=acc_t) * scale
        l2 = jnp.einsum("bxihd,bjhd->bhxij", qb, k2, preferred_element_type=acc_t) * scale
        specs = ("bhxij,bxjhe->bxihe", "bhxij,bjhe->bxihe")
    valid1, valid2 = jnp.asarray(valid1[None]), jnp.asarray(valid2[None])
    if mask4 is not None:
        pos1 = np.broadcast_to(p1, valid1.shape[1:])[None]
        pos2 = np.broadcast_to(p2, valid2.shape[1:])[None]
        valid1 = valid1 & _gather_mask(mask4, q_pos[None], pos1, n)
        valid2 = valid2 & _gather_mask(mask4, q_pos[None], pos2, n)
    pr1, pr2 = _attend([(l1, valid1), (l2, valid2)], acc_t, train, dropout_rate, key)
    out = jnp.einsum(specs[0], pr1.astype(v.dtype), v1, preferred_element_type=acc_t)
    out = out + jnp.einsum(specs[1], pr2.astype(v.dtype), v2, preferred_element_type=acc_t)
    return out.reshape(b, n_pad, h, dv)[:, :n].astype(v.dtype)


def sparse_transformer_dense(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    pattern: str = "fixed",
    stride: int = 128,
    c: int = 32,
    causal: bool = False,
    dropout_rate: float = 0.0,
    scale: float | None = None,
):
    """The merged pattern as an explicit N x N mask over dense softmax (arguments as
    `sparse_transformer`)."""
    del params
    _setup("sparse_transformer_dense", q, k, v, mask, dropout_rate, train, key)
    _check_sparse_transformer(dict(pattern=pattern, stride=stride, c=c, causal=causal))
    n = q.shape[1]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    pat = sp.sparse_transformer_allowed(i, j, pattern=pattern, stride=stride, c=c, causal=causal)
    return _dense("sparse_transformer_dense", pat, q, k, v, mask, key, train, dropout_rate, scale)


def _sparse_transformer_flops(cl: cost.Call, hp) -> tuple[float, float]:
    """Blocked Sparse Transformer over N padded to whole blocks of l: strided scores span * l
    band keys (3, causal 2) and nb column keys per query; fixed scores l block keys and nb * c
    summary keys per query."""
    l_ = hp["stride"]
    nb = math.ceil(cl.n / l_)
    if hp["pattern"] == "strided":
        keys = (2 if hp["causal"] else 3) * l_ + nb
    else:
        keys = l_ + nb * hp["c"]
    scores = nb * l_ * keys * cl.h
    return 2 * scores * (cl.dk + cl.dv), scores * (cost.SOFTMAX + cost.MASKED)


_SPARSE_TRANSFORMER_DEFAULTS = {
    "pattern": "fixed",
    "stride": 128,
    "c": 32,
    "causal": False,
    "dropout_rate": 0.0,
    "scale": None,
}


# ------------------------------------------------------------------------------ registration

registry.register(
    "bigbird",
    apply=bigbird,
    init=bigbird_init,
    check=_check_bigbird,
    flops=_bigbird_flops,
    defaults=_BIGBIRD_DEFAULTS,
    doc="BigBird-ITC block-sparse attention (window + global + random blocks), blocked",
)
registry.register(
    "bigbird_dense",
    apply=bigbird_dense,
    init=bigbird_init,
    check=_check_bigbird,
    flops=_dense_flops,
    defaults=_BIGBIRD_DEFAULTS,
    doc="BigBird's pattern as an N x N mask over dense softmax (as timed by dense LRA code)",
)
registry.register(
    "longformer",
    apply=longformer,
    check=_check_longformer,
    flops=_longformer_flops,
    defaults=_LONGFORMER_DEFAULTS,
    doc="Longformer sliding window + global tokens, blocked O(N * window)",
)
registry.register(
    "longformer_dense",
    apply=longformer_dense,
    check=_check_longformer,
    flops=_dense_flops,
    defaults=_LONGFORMER_DEFAULTS,
    doc="Longformer's pattern as an N x N mask over dense softmax (LRA's implementation)",
)
registry.register(
    "sparse_transformer",
    apply=sparse_transformer,
    check=_check_sparse_transformer,
    flops=_sparse_transformer_flops,
    defaults=_SPARSE_TRANSFORMER_DEFAULTS,
    doc="Sparse Transformer merged strided/fixed pattern, blocked",
)
registry.register(
    "sparse_transformer_dense",
    apply=sparse_transformer_dense,
    check=_check_sparse_transformer,
    flops=_dense_flops,
    defaults=_SPARSE_TRANSFORMER_DEFAULTS,
    doc="Sparse Transformer's pattern as an N x N mask over dense softmax (LRA's implementation)",
)
