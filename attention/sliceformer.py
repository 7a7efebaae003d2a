"""Sliceformer: attention replaced by sorting every value column along the sequence.

Paper (anonymous NeurIPS-2023 draft "From Transformer to Sliceformer", §3.2 eq. (3); later
arXiv 2310.17683, Yuan & Xu)::

    SliceSort(X) = Sort_col(X W_V) = Concat({P_i v_i}_{i=1}^{MD}),   V = X W_V = [v_1 .. v_MD]

Each of the `H * Dv` value channels ("slices") v_i in R^N is sorted on its own along the
sequence axis; P_i is the data-dependent permutation that sorts v_i, so every channel has its
own sparse, full-rank, doubly stochastic "attention map" and there are no queries, keys or
softmax (registered with `needs_qk=False`: q and k are ignored and may be None). The heads only
reshape channels; they do not change the result (except for `half`, whose split is per head).

Variants (paper §3.3 and Table 4; where the draft is silent, the semantics of the authors' LRA
code, DaShenZi721/sliceformer `LRA/lra_benchmarks/models/sliceformer/sliceformer.py`):

  * `ascend` (default): out[:, c] = sort(v[:, c]) ascending.
  * `descend`: sorted descending.
  * `half`: within each head, channels `[0, Dv // 2)` ascending and `[Dv // 2, Dv)` descending
    (the code's per-head split; the paper's "MD/2 columns" split is the same up to a relabelling
    of channels, which W_V absorbs).
  * `perm` (multi-permutation, K = `num_perms`): with P the sorting permutation of a column,
    out = (1/K) sum_{k=1..K} P^k v, i.e. y_1 = v[idx], y_k = y_{k-1}[idx], averaged with fixed
    alpha_k = 1/K (the code; the paper also allows a learned alpha).
  * `max_exchange`: in each column swap the maximum with the first element (first occurrence of
    the maximum on ties); all other positions are unchanged.
  * `shuffle` (control): a fixed, data-independent permutation of the tokens. `shuffle_mode`
    "shared" = one permutation for all channels (the paper's text), "independent" = a different
    permutation per channel (what the code's legacy `jax.random.shuffle` does). The permutation
    is the order of hashed per-(position, channel) keys derived from `seed` (not from `key`), so
    train and eval use the same one, like the code's fixed `PRNGKey(0)`; `resample=True` instead
    derives the hash word from `key` at every training call (eval still uses `seed`).

Padding (not in the paper; the code ignores the mask). Only key-padding masks are meaningful:
`[B, M]`, or 4-D masks with a singleton query axis `[B|1, H|1, 1, M]` (per-head key padding).
With L real tokens in a column, the variant is applied to the L real values taken in sequence
order, and its L outputs are written back to the real positions in sequence order (with right
padding: the first L positions); padded positions output 0. So padding never enters the sort
and never moves a real token, and a sequence with no real token gives zeros. For
`max_exchange` "first element" means the first real token; for `shuffle` the fixed permutation
is the order of per-position random keys restricted to the real tokens. `ignore_mask=True` is
faithful to the original code: the mask is ignored and every position, padding included, takes
part (pad values then land in real positions and vice versa).
"""

from __future__ import annotations

import functools
import numbers

import jax
import jax.numpy as jnp
from jax import lax

from attention import cost, masks, registry

__all__ = [
    "VARIANTS",
    "SHUFFLE_MODES",
    "apply",
    "apply_graph",
    "flops",
    "flops_graph",
    "key_padding",
]

VARIANTS = ("ascend", "descend", "half", "perm", "max_exchange", "shuffle")
SHUFFLE_MODES = ("shared", "independent")


def key_padding(mask, batch: int, heads: int, m: int):
    """Reduces a key-padding mask to `[B, M, H, 1]` booleans (True = real token), or None.

    Args:
      mask: None, `[B, M]`, or 4-D broadcastable to `[B, H, 1, M]` (singleton query axis).

    Raises:
      ValueError: a 4-D mask with a query axis of length > 1 (a general attention pattern, e.g.
        causal): a sort has no per-query key set, so only key padding is supported.
    """
    if mask is None:
        return None
    shape = getattr(mask, "shape", None)
    if shape is not None and len(shape) == 4 and shape[2] != 1:
        raise ValueError(
            "sliceformer supports key-padding masks only: [B, M] or 4-D [B|1, H|1, 1, M]; got a "
            f"4-D mask of shape {tuple(shape)} with a query axis of length {shape[2]} "
            "(pass ignore_mask=True to ignore masks as the original code does)"
        )
    mask4 = masks.as_4d(mask, batch, heads, 1, m)  # [B, H, 1, M]
    return jnp.transpose(mask4[:, :, 0, :], (0, 2, 1))[..., None]


def _check(q, k, v, variant, num_perms, shuffle_mode):
    if v.ndim != 4:
        raise ValueError(f"sliceformer: v must be 4-D [B, M, H, Dv], got shape {v.shape}")
    if k is not None and (k.ndim != 4 or k.shape[:3] != v.shape[:3]):
        raise ValueError(f"sliceformer: k {k.shape} and v {v.shape} must agree on [B, M, H]")
    if q is not None:
        if q.ndim != 4 or q.shape[0] != v.shape[0] or q.shape[2] != v.shape[2]:
            raise ValueError(f"sliceformer: q {q.shape} and v {v.shape} must agree on B and H")
        if q.shape[1] != v.shape[1]:
            raise ValueError(
                "sliceformer is self-attention only (output position i gets the i-th sorted "
                f"value): needs N == M, got q with N={q.shape[1]} and v with M={v.shape[1]}"
            )
    if variant not in VARIANTS:
        raise ValueError(f"sliceformer: unknown variant {variant!r}; choose from {VARIANTS}")
    if isinstance(num_perms, bool) or not isinstance(num_perms, numbers.Integral) or num_perms < 1:
        raise ValueError(f"sliceformer: num_perms must be an integer >= 1, got {num_perms!r}")
    if shuffle_mode not in SHUFFLE_MODES:
        raise ValueError(
            f"sliceformer: unknown shuffle_mode {shuffle_mode!r}; choose from {SHUFFLE_MODES}"
        )


def _take(x, idx):
    """`x[..., idx]` along the last axis, the leading axes of `x` and `idx` broadcast."""
    batch = jnp.broadcast_shapes(x.shape[:-1], idx.shape[:-1])
    x = jnp.broadcast_to(x, (*batch, x.shape[-1]))
    idx = jnp.broadcast_to(idx, (*batch, idx.shape[-1]))
    return jnp.take_along_axis(x, idx, axis=-1, mode="clip")


def _unsigned(dtype):
    return jnp.uint64 if jnp.dtype(dtype).itemsize == 8 else jnp.uint32


def _sign_bit(utype):
    return jnp.array(1 << (8 * jnp.dtype(utype).itemsize - 1), utype)


def _sort_key(x):
    """Unsigned integer keys in the order `lax.sort` gives floats (`-0.0 == +0.0`, NaNs last).

    An order-preserving bijection of the bits once zeros and NaNs are canonicalised (as
    `lax.sort`'s float comparator does at every comparison): a non-negative float gets its
    sign bit set, a negative one all bits flipped. Integer keys sort several times faster on
    CPU than floats under that comparator, and on a GPU they are what XLA hands to CUB's radix
    sort when a value payload comes along (a float key with a payload stays on XLA's sort).
    """
    utype = _unsigned(x.dtype)
    x = jnp.where(jnp.isnan(x), jnp.full_like(x, jnp.nan), x)
    bits = lax.bitcast_convert_type(x, utype)
    sign = _sign_bit(utype)
    # -0.0 -> +0.0 on the bits (`x == 0` would also zero denormals where they flush to zero)
    bits = jnp.where(bits == sign, jnp.zeros_like(bits), bits)
    return jnp.where((bits & sign) != 0, ~bits, bits | sign)


def _from_sort_key(key, dtype):
    """Inverse of `_sort_key`, bit for bit but for -0.0 (back as +0.0) and NaN payloads."""
    sign = _sign_bit(key.dtype)
    return lax.bitcast_convert_type(jnp.where((key & sign) != 0, key ^ sign, ~key), dtype)


def _padded_key(x, pad):
    """`_sort_key(x)`, with the largest key (after every real value, NaN included) on padding."""
    key = _sort_key(x)
    if pad is None:
        return key
    return jnp.where(pad, jnp.array(jnp.iinfo(key.dtype).max, key.dtype), key)


@jax.custom_jvp
def _ascending(x, pad):
    """`x` `[..., N]` sorted ascending along the last axis, padding (`pad` True) last.

    The forward pass sorts the integer keys alone and reads the values back from them (no
    payload, no gather); the derivative carries the sorting permutation (a stable key-index
    sort, as `jnp.sort`'s) to the tangents. Entries past the real count are unspecified (the
    caller zeroes padding).
    """
    key = _padded_key(x, None if pad.ndim == 0 else pad)
    return _from_sort_key(lax.sort(key, dimension=x.ndim - 1, is_stable=True), x.dtype)


@_ascending.defjvp
def _ascending_jvp(primals, tangents):
    x, pad = primals
    key = _padded_key(x, None if pad.ndim == 0 else pad)
    iota = lax.broadcasted_iota(jnp.int32, x.shape, x.ndim - 1)
    key, perm = lax.sort((key, iota), dimension=x.ndim - 1, num_keys=1, is_stable=True)
    return _from_sort_key(key, x.dtype), _take(tangents[0], perm)


def _order(sort_key, pad):
    """Positions sorted real-first by ascending `sort_key`, ties and padding in position order.

    Along the last axis: `sort_key` (float or uint32) and `pad` (True = padding, or None)
    broadcast to each other -> int32; entry r < L is the position of the r-th smallest real
    value. Float keys and padding fold into one integer key when that is exact.
    """
    shape = jnp.broadcast_shapes(sort_key.shape, () if pad is None else pad.shape)
    iota = lax.broadcasted_iota(jnp.int32, shape, len(shape) - 1)
    sort_key = lax.stop_gradient(sort_key)
    if jnp.issubdtype(sort_key.dtype, jnp.floating):
        key = jnp.broadcast_to(_padded_key(sort_key, pad), shape)
        return lax.sort((key, iota), dimension=len(shape) - 1, num_keys=1, is_stable=True)[1]
    key = jnp.broadcast_to(sort_key, shape)  # a hash: every uint32 value is taken
    if pad is None:
        return lax.sort((key, iota), dimension=len(shape) - 1, num_keys=1, is_stable=True)[1]
    pad = jnp.broadcast_to(pad, shape).astype(jnp.int32)
    return lax.sort((pad, key, iota), dimension=len(shape) - 1, num_keys=2, is_stable=True)[2]


def _fmix32(x):
    """MurmurHash3's 32-bit finaliser: a bijection on uint32 that scrambles every bit."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def _shuffle_keys(word, shape, shuffle_mode):
    """Random uint32 sort keys of (position, channel): `[1, N, 1, 1]` or `[1, N, H, Dv]`.

    key(p) = fmix32(word + 0x9E3779B9 * p), and for "independent" key(p, c) =
    fmix32(key(p) ^ fmix32(c + 0x632BE5AB)) with c = h * Dv + d the flat channel. Both are
    injective in p (an odd multiplier and a bijective mix), so a column's keys never tie; they
    depend on the position, not on N, so appending padding leaves the real tokens' order alone.
    """
    _, n, h, dv = shape
    pos = jnp.arange(n, dtype=jnp.uint32)[None, :, None, None]
    keys = _fmix32(word + jnp.uint32(0x9E3779B9) * pos)
    if shuffle_mode == "shared":
        return keys
    channel = jnp.arange(h * dv, dtype=jnp.uint32).reshape(1, 1, h, dv)
    return _fmix32(keys ^ _fmix32(channel + jnp.uint32(0x632BE5AB)))


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    variant: str = "ascend",
    num_perms: int = 2,
    shuffle_mode: str = "shared",
    seed: int = 0,
    resample: bool = False,
    ignore_mask: bool = False,
):
    """Slicing-sorting attention (see the module docstring for every variant and padding).

    Args:
      params: unused (the mechanism has no parameters); `{}`.
      q: ignored; None or `[B, N, H, Dk]` with N == M (only checked).
      k: ignored; None or `[B, M, H, Dk]` (only checked).
      v: `[B, M, H, Dv]`.
      mask: None, key padding `[B, M]`, or 4-D `[B|1, H|1, 1, M]`; True = real token.
      key: PRNG key; used only by `shuffle` with `resample=True` and `train=True`.
      train: see `resample`; no other variant behaves differently in training.
      variant: one of `VARIANTS`.
      num_perms: K of the `perm` variant (K >= 1; K = 1 is `ascend`).
      shuffle_mode: "shared" or "independent" (the `shuffle` variant).
      seed: seed of the fixed `shuffle` permutation.
      resample: `shuffle` only: draw a fresh permutation from `key` at every training call.
      ignore_mask: ignore `mask` and sort over all positions, padding included (faithful to the
        original code).

    Returns:
      `[B, M, H, Dv]` in the dtype of `v` (sorting and averaging in float32, or float64 when `v`
      is float64).
    """
    del params
    _check(q, k, v, variant, num_perms, shuffle_mode)
    b, n, h, dv = v.shape
    v = jnp.asarray(v)
    out_dtype = v.dtype
    v = v.astype(jnp.promote_types(v.dtype, jnp.float32))
    if ignore_mask:
        masks.as_4d(mask, b, h, n, n)  # still reject malformed masks
        valid = None
    else:
        valid = key_padding(mask, b, h, n)  # [B, N, H, 1]

    if variant == "max_exchange":  # no sort: in the input layout
        out = _max_exchange(v, None if valid is None else jnp.broadcast_to(valid, v.shape))
        return out.astype(out_dtype)
    # Every column along the minor axis, `[B, H, Dv, N]`: a sort along a strided axis reads
    # memory with stride H * Dv (XLA's GPU sort), and only a minor-axis sort can go to CUB.
    v = jnp.transpose(v, (0, 2, 3, 1))
    valid = None if valid is None else jnp.transpose(valid, (0, 2, 3, 1))  # [B, H, 1, N]
    out = _sort_variant(v, valid, variant, num_perms, shuffle_mode, seed, resample, train, key)
    if valid is not None:
        out = jnp.where(valid, out, 0.0)
    return jnp.transpose(out, (0, 3, 1, 2)).astype(out_dtype)


def _max_exchange(v, valid):
    """`max_exchange` on `[B, N, H, Dv]` (valid: None or the same shape)."""
    iota = lax.broadcasted_iota(jnp.int32, v.shape, 1)
    neg = jnp.finfo(v.dtype).min
    first = 0 if valid is None else jnp.argmax(valid, axis=1, keepdims=True)
    top = jnp.argmax(v if valid is None else jnp.where(valid, v, neg), axis=1, keepdims=True)
    src = jnp.where(iota == first, top, jnp.where(iota == top, first, iota))
    out = jnp.take_along_axis(v, src, axis=1, mode="clip")
    return out if valid is None else jnp.where(valid, out, 0.0)


def _sort_variant(v, valid, variant, num_perms, shuffle_mode, seed, resample, train, key):
    """The sorting variants on `[B, H, Dv, N]` columns; valid: None or `[B, H, 1, N]`."""
    b, h, dv, n = v.shape
    pad = None if valid is None else ~valid
    iota = lax.broadcasted_iota(jnp.int32, v.shape, 3)
    if valid is None:
        rank = None  # real rank of a position == the position
        count = n
    else:
        rank = jnp.cumsum(valid, axis=-1, dtype=jnp.int32) - 1
        count = jnp.sum(valid, axis=-1, keepdims=True, dtype=jnp.int32)

    def to_positions(src_by_rank):
        """Output at real position p reads the source of its rank: src_by_rank[rank[p]]."""
        return src_by_rank if rank is None else _take(src_by_rank, rank)

    if variant in ("ascend", "descend", "half"):
        # Sorted values straight from the integer keys; the permutation only in derivatives.
        srt = _ascending(v, jnp.zeros((), bool) if pad is None else jnp.broadcast_to(pad, v.shape))
        if variant != "ascend":
            # Reversed ascending order (ties reversed too), real values only.
            rev = (
                jnp.flip(srt, -1) if valid is None else _take(srt, jnp.maximum(count - 1 - iota, 0))
            )
            if variant == "descend":
                srt = rev
            else:
                channel = lax.broadcasted_iota(jnp.int32, v.shape, 2)
                srt = jnp.where(channel < dv // 2, srt, rev)
        return to_positions(srt)
    if variant == "perm":
        idx = _order(v, pad)
        if valid is None:
            sigma, real_pos = idx, None
        else:
            # The sorting permutation acts on the compacted real sequence: sigma[r] is the real
            # rank of the r-th smallest real value; the tail r >= L maps to itself.
            sigma = jnp.where(iota < count, _take(rank, idx), iota)
            real_pos = _order(jnp.zeros(valid.shape, v.dtype), pad)  # [B, H, 1, N]
        c = iota
        out = jnp.zeros_like(v)
        for _ in range(num_perms):
            c = _take(sigma, c)
            src = c if real_pos is None else _take(real_pos, c)
            out = out + _take(v, to_positions(src))
        return out / num_perms
    # shuffle: a fixed (or, resampled in training, keyed) order of hashed position keys
    if resample and train:
        if key is None:
            raise ValueError("sliceformer shuffle: train=True with resample=True needs `key`")
        word = jax.random.bits(key, (), jnp.uint32)
    else:
        word = _fmix32(jnp.uint32(seed % 2**32))
    sort_key = _shuffle_keys(word, (b, n, h, dv), shuffle_mode)  # [1, N, 1|H, 1|Dv]
    idx = _order(jnp.transpose(sort_key, (0, 2, 3, 1)), pad)  # one sort per distinct order
    return _take(v, to_positions(idx))


def flops(c: cost.Call, hp, **fixed) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`);
    `fixed`: the hyper-parameters a named variant binds."""
    # Sorting has no multiply-adds: 0 matmul FLOPs (about n·log2(n) comparisons per channel,
    # not counted). Elementwise: the padding bookkeeping (ranks, selects) and the perm
    # variant's averaging, a few ops per value element.
    hp = {**hp, **fixed}
    elems = c.n * c.h * c.dv
    padded = c.masked and not hp["ignore_mask"]
    if hp["variant"] == "ascend" and not padded:
        return 0.0, 0.0
    ew = 4 * elems if padded else 0.0
    if hp["variant"] == "perm":
        ew += elems * (hp["num_perms"] + 1)
    return 0.0, ew


_COMMON = {"ignore_mask": False}
_SHUFFLE = {"seed": 0, "resample": False, "ignore_mask": False}
_NAMED = {
    "sliceformer_ascend": ({"variant": "ascend"}, _COMMON, "Table 4: ascending sort (default)"),
    "sliceformer_descend": ({"variant": "descend"}, _COMMON, "Table 4: descending sort"),
    "sliceformer_half": (
        {"variant": "half"},
        _COMMON,
        "Table 4: Half-Half (first Dv//2 channels of each head ascending, rest descending)",
    ),
    "sliceformer_perm2": (
        {"variant": "perm", "num_perms": 2},
        _COMMON,
        "Table 4: multi-permutation K=2, (P v + P^2 v) / 2",
    ),
    "sliceformer_perm4": (
        {"variant": "perm", "num_perms": 4},
        _COMMON,
        "Table 4: multi-permutation K=4, (1/4) sum_k P^k v",
    ),
    "sliceformer_max_exchange": (
        {"variant": "max_exchange"},
        _COMMON,
        "Table 4: max-exchange (swap each column's max with its first element)",
    ),
    "sliceformer_shuffle": (
        {"variant": "shuffle", "shuffle_mode": "shared"},
        _SHUFFLE,
        "Table 4: shuffle control, one fixed token permutation shared by all channels (paper)",
    ),
    "sliceformer_shuffle_independent": (
        {"variant": "shuffle", "shuffle_mode": "independent"},
        _SHUFFLE,
        "Table 4: shuffle control, a fixed permutation per channel (the authors' code)",
    ),
}


def apply_graph(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    bias=None,
    dropout_rate: float = 0.0,
    variant: str = "ascend",
    num_perms: int = 2,
    shuffle_mode: str = "shared",
    seed: int = 0,
    resample: bool = False,
    ignore_mask: bool = False,
):
    """Sliceformer in Graphormer, as the Sliceformer authors' `SWD` attention class
    (DaShenZi721/sliceformer, `Graphormer/graphormer/model.py`):

        out = Dropout(softmax(bias)) V + Sort_col(V)

    per head: Graphormer's structural bias (spatial, edge and graph-token terms; no Q K^T) as a
    query-key-free softmax map over the real keys, plus the value columns sorted by `apply` (any
    variant; padding as `apply`). The paper only says "a simplified attention layer without the
    query and key matrices" (Table 6); this is the form its code trains. With `bias=None` the
    softmax map is uniform over the real keys.

    Args:
      params: unused; `{}`.
      q, k: ignored (None or shaped as `apply` checks).
      v: `[B, M, H, Dv]`; queries = keys (self-attention), so the output is `[B, M, H, Dv]`.
      mask: None, key padding `[B, M]`, or 4-D broadcastable to `[B, H, 1, M]`.
      key: PRNG key for the attention dropout (train with `dropout_rate > 0`) and the `shuffle`
        variant with `resample`.
      bias: additive logits broadcastable to `[B, H, M, M]`, or None.
      dropout_rate: dropout on the softmax map in training (the code's `att_dropout`).
      Other arguments: as `apply`.
    """
    _check(q, k, v, variant, num_perms, shuffle_mode)
    b, m, h, _ = v.shape
    rate = dropout_rate if train else 0.0
    if rate > 0.0 and key is None:
        raise ValueError("sliceformer_graph: train=True with dropout_rate > 0 needs `key`")
    compute = jnp.float64 if v.dtype == jnp.float64 else jnp.float32
    logits = jnp.zeros((b, h, m, m), compute)
    if bias is not None:
        logits = logits + jnp.asarray(bias, compute)
    keep = key_padding(mask, b, h, m)  # [B, M, H, 1] or None
    if keep is not None:
        real = jnp.transpose(keep[..., 0], (0, 2, 1))[:, :, None, :]  # [B, H, 1, M]
        logits = jnp.where(real, logits, jnp.finfo(compute).min)
    probs = jax.nn.softmax(logits, axis=-1)
    sort_key = None
    if rate > 0.0:
        key, sort_key = jax.random.split(key)
        kept = jax.random.bernoulli(key, 1.0 - rate, probs.shape)
        probs = jnp.where(kept, probs / (1.0 - rate), 0.0)
    else:
        sort_key = key
    mixed = jnp.einsum("bhnm,bmhd->bnhd", probs, v.astype(compute))
    sorted_v = apply(
        params, None, None, v, mask=mask, key=sort_key, train=train, variant=variant,
        num_perms=num_perms, shuffle_mode=shuffle_mode, seed=seed, resample=resample,
        ignore_mask=ignore_mask,
    )  # fmt: skip
    return (mixed + sorted_v.astype(compute)).astype(v.dtype)


def flops_graph(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs of `apply_graph`: the sort's bookkeeping (`flops`), softmax(bias) V
    (2·n·m·h·dv multiply-adds), the bias add and softmax over `[h, n, m]`, and the final sum."""
    matmul, ew = flops(c, hp)
    scores = c.n * c.m * c.h
    ew += scores + cost.softmax_elementwise(c, scores) + c.n * c.h * c.dv
    return matmul + 2.0 * scores * c.dv, ew


registry.register(
    "sliceformer",
    apply=apply,
    defaults={
        "variant": "ascend",
        "num_perms": 2,
        "shuffle_mode": "shared",
        "seed": 0,
        "resample": False,
        "ignore_mask": False,
    },
    doc="Sliceformer: sort every value channel along the sequence, no q/k; `variant` = Table 4 row",
    needs_qk=False,
    flops=flops,
)
for _name, (_fixed, _defaults, _doc) in _NAMED.items():
    registry.register(
        _name,
        apply=functools.partial(apply, **_fixed),
        defaults=dict(_defaults),
        doc=_doc,
        needs_qk=False,
        flops=functools.partial(flops, **_fixed),
    )
registry.register(
    "sliceformer_graph",
    apply=apply_graph,
    defaults={
        "dropout_rate": 0.0,
        "variant": "ascend",
        "num_perms": 2,
        "shuffle_mode": "shared",
        "seed": 0,
        "resample": False,
        "ignore_mask": False,
    },
    doc="Sliceformer in Graphormer (authors' code): softmax(bias) V + Sort_col(V), no q/k",
    inputs=("bias",),
    needs_qk=False,
    flops=flops_graph,
)
