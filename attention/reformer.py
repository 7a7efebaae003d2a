"""Reformer LSH attention (Kitaev, Kaiser and Levskaya, "Reformer: The Efficient Transformer",
ICLR 2020, arXiv:2001.04451, Sec. 2 "Locality-sensitive hashing attention").

Shared-QK attention (Sec. 2, "Shared-QK Transformer"): the keys are the queries normalised,
k_j = q_j / ||q_j||. The layer's `k` input is ignored (the registry has no "queries only"
kind, so `needs_qk` stays True and the layer still builds a key projection, which then gets
zero gradients; its parameters are counted but unused).

Angular LSH (Sec. 2, "Hashing attention"): per hashing round r and head, a random Gaussian
matrix R_r `[Dk, n_buckets / 2]` and h_r(x) = argmax([x R_r ; -x R_r]) (n_buckets = 1: one
bucket, no hashing). Per round the positions are sorted by (bucket, position), cut into chunks
of `chunk_size`, and the queries of a chunk attend to the keys of their own chunk and of the
previous chunk (Fig. 2), restricted to keys of the same bucket (the paper's Eq. 3-4: the
attention set P_i = {j : h(q_i) = h(k_j)}; within a chunk we mask other buckets, as the paper
does). With logits s_ij = scale * q_i . k_j and the allowed set P_i^r of round r:

    o_i^r = sum_{j in P_i^r} exp(s_ij - z_i^r) v_j,   z_i^r = logsumexp_{j in P_i^r} s_ij
    out_i = sum_r exp(z_i^r - logsumexp_r' z_i^r') o_i^r          (Sec. 2, "Multi-round")

Self-exclusion (Sec. 2, "Causal masking for shared-QK attention"): j = i is removed from
P_i^r unless it is the only target there (e.g. the first token under causal masking).
Causal masking (`causal=True`): j <= i. Padded keys (key-padding mask False) are removed from
every P_i^r. A round with an empty P_i^r contributes nothing (weight 0); a query with no key
in reach in any round returns zeros.

Random rotations: drawn once in `init` and kept in `params["buffers"]["rotations"]`
`[H, num_hashes, Dk, R]` (R columns, enough for `max_len` tokens; a call uses the first
n_buckets / 2). Evaluation is deterministic and matches a float64 reference; LRA's code also
hashes with fixed rotations (it draws them from PRNGKey(0) on every call). The paper and trax
draw fresh rotations on every call; `redraw=True` does that in training (from `key`), while
evaluation always uses the stored ones.

Hyper-parameters: `num_hashes=1` (LRA's n_hashes default, google-research/long-range-arena
lra_benchmarks/models/reformer/reformer_attention.py, which its configs do not override);
`chunk_size=64`; `num_buckets=None` means the paper's choice n_buckets ~ 2 N / chunk_size
(Sec. 2: chunks of m = 2 l / n_buckets, twice the mean bucket size), rounded to an even number.
LRA's code uses n_buckets = 10 and cuts the sorted sequence into 10 chunks of N/10 (so its cost
is quadratic in N); we keep chunks of a fixed length, as the paper does.

Deliberate differences from LRA's code (which our reference follows the paper on): LRA does not
normalise the keys (length_norm=False), multiplies the logits by sqrt(Dk) instead of dividing,
masks neither other buckets, nor self, nor padding, and its first chunk looks back to the last
one (wrap-around); here the first chunk has no previous chunk. The paper's refinement of counting
duplicate (i, j) pairs across rounds (Sec. 2, N_{i,j}) is not applied, as in trax and LRA.

Reach of one token (why CLS pooling suffers): a token sorts first among its bucket mates when it
has the lowest position (a CLS token at position 0), and the previous chunk then holds only other
buckets, so it attends to at most chunk_size - 1 keys, the lowest-positioned members of its
bucket, and to itself only when it has no mate in reach (its output is then its own value,
independent of the input). LRA's unmasked chunks of N/10 give it about 2N/10 keys instead. On
LRA Image (1,024 pixels, mostly one repeated black token, CLS pooling) this leaves the classifier
a few pixels chosen by the hashing; tests/attention/test_reformer.py shows the rule on an
image-like input.

Masks: none or key padding (`[B, M]` or `[B|1, 1, 1, M]`); other 4-D masks raise. Self-attention
only (N == M). Time O(num_hashes * N (log N + chunk_size * D)) (sort + chunked attention),
memory O(num_hashes * N * chunk_size); no N x N array.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from attention import cost, registry
from attention.linear import key_padding_mask
from attention.softmax import check_qkv

__all__ = ["apply", "flops", "init", "num_buckets_for"]


def num_buckets_for(n: int, chunk_size: int, num_buckets: int | None) -> int:
    """The buckets used for `n` tokens: `num_buckets`, or 2 * ceil(n / chunk_size)."""
    if num_buckets is not None:
        return num_buckets
    return 2 * max(1, math.ceil(n / chunk_size))


def _check(hp, num_tokens) -> None:
    """`check` for the registry."""
    del num_tokens
    registry.int_at_least(num_hashes=1, chunk_size=1)(hp, None)
    nb = hp["num_buckets"]
    if nb is not None and (
        isinstance(nb, bool) or not isinstance(nb, int) or nb < 1 or (nb > 1 and nb % 2)
    ):
        raise ValueError(
            f"num_buckets={nb!r} must be None (2 * tokens / chunk_size), 1 (no hashing) or an "
            "even integer >= 2 (angular LSH hashes to [xR; -xR])"
        )
    if hp["scale"] is not None and not hp["scale"] > 0:
        raise ValueError(f"scale={hp['scale']!r} must be positive (or None for 1/sqrt(Dk))")


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    num_hashes: int = 1,
    num_buckets: int | None = None,
    chunk_size: int = 64,
):
    """Draws the frozen random rotations.

    Returns:
      `{"buffers": {"rotations": [num_heads, num_hashes, head_dim, R] float32}}` with
      R = n_buckets / 2 for `max_len` tokens (at least 1).
    """
    del model_dim, layer_index, num_layers
    _check(
        {
            "num_hashes": num_hashes,
            "chunk_size": chunk_size,
            "num_buckets": num_buckets,
            "scale": None,
        },
        None,
    )
    if num_buckets is None and max_len is None:
        raise ValueError(
            "reformer: init needs max_len (the token count) when num_buckets=None, to size the "
            "random rotations; pass max_len or set num_buckets"
        )
    cols = max(1, num_buckets_for(max_len or 1, chunk_size, num_buckets) // 2)
    shape = (num_heads, num_hashes, head_dim, cols)
    return {"buffers": {"rotations": jax.random.normal(key, shape, jnp.float32)}}


def _gather(x, idx):
    """x `[B, H, L, ...]`, idx `[B, H, R, P]` -> `[B, H, R, P, ...]`."""
    b, h, r, p = idx.shape
    flat = idx.reshape(b, h, r * p)
    extra = (1,) * (x.ndim - 3)
    out = jnp.take_along_axis(x, flat.reshape(b, h, r * p, *extra), axis=2)
    return out.reshape(b, h, r, p, *x.shape[3:])


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    num_hashes: int = 1,
    num_buckets: int | None = None,
    chunk_size: int = 64,
    causal: bool = False,
    redraw: bool = False,
    scale: float | None = None,
):
    """Shared-QK LSH attention (see the module docstring).

    Args:
      params: `{"buffers": {"rotations": [H, num_hashes, Dk, R]}}` from `init`.
      q: `[B, N, H, Dk]`; k: ignored, may be None (keys are q / ||q||); v: `[B, N, H, Dv]`.
      mask: key padding `[B, N]` (or `[B|1, 1, 1, N]`), True = attend; other masks raise.
      key: PRNG key; needed when `train` and `redraw`.
      train: with `redraw`, hash with fresh rotations drawn from `key`.
      num_hashes: hashing rounds.
      num_buckets: buckets per round (None: 2 * ceil(N / chunk_size); 1: no hashing).
      chunk_size: chunk length of the sorted sequence.
      causal: keys j <= i only.
      redraw: see `train`.
      scale: logit scale; default `Dk ** -0.5`.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`; computed in float32 (float64 for float64 inputs).
    """
    check_qkv(q, q if k is None else k, v)  # k is ignored (may be None)
    b, n, h, dk = q.shape
    if v.shape[1] != n:
        raise ValueError(f"reformer needs N == M (self-attention), got N={n}, M={v.shape[1]}")
    _check(
        {
            "num_hashes": num_hashes,
            "chunk_size": chunk_size,
            "num_buckets": num_buckets,
            "scale": scale,
        },
        n,
    )
    try:
        rot = params["buffers"]["rotations"]
    except (KeyError, TypeError):
        raise ValueError(
            "reformer: params must be init's {'buffers': {'rotations': [H, hashes, Dk, R]}}"
        ) from None
    nb = num_buckets_for(n, chunk_size, num_buckets)
    half = nb // 2
    if rot.shape[:3] != (h, num_hashes, dk) or (nb > 1 and rot.shape[3] < half):
        raise ValueError(
            f"reformer: rotations {rot.shape} do not fit heads={h}, num_hashes={num_hashes}, "
            f"Dk={dk} and {nb} buckets for N={n}; init with max_len >= N (or the same "
            "num_buckets)"
        )
    pad = key_padding_mask(mask, b, h, n, n, "reformer")
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    scale = dk**-0.5 if scale is None else scale
    dv = v.shape[-1]

    x = jnp.swapaxes(q.astype(acc_t), 1, 2)  # [B, H, N, Dk]
    vals = jnp.swapaxes(v.astype(acc_t), 1, 2)  # [B, H, N, Dv]
    keys = x / jnp.sqrt(jnp.maximum(jnp.sum(x * x, -1, keepdims=True), 1e-12))

    # Buckets [B, H, r, N]: argmax over [xR; -xR] (no gradient flows through hashing).
    if nb == 1:
        buckets = jnp.zeros((b, h, num_hashes, n), jnp.int32)
    else:
        if train and redraw:
            if key is None:
                raise ValueError("reformer: train=True with redraw=True needs `key`")
            w = jax.random.normal(key, (h, num_hashes, dk, half), acc_t)
        else:
            w = rot[..., :half].astype(acc_t)
        proj = jnp.einsum("bhnd,hrdk->bhrnk", jax.lax.stop_gradient(x), jax.lax.stop_gradient(w))
        buckets = jnp.argmax(jnp.concatenate([proj, -proj], -1), -1).astype(jnp.int32)

    # Sort each round by (bucket, position); pad to whole chunks.
    c = min(chunk_size, n)
    nc = -(-n // c)
    n_pad = nc * c
    pos = jnp.arange(n, dtype=jnp.int32)
    perm = jnp.argsort(buckets * n + pos, axis=-1).astype(jnp.int32)  # [B, H, r, N]
    perm = jnp.pad(perm, ((0, 0), (0, 0), (0, 0), (0, n_pad - n)))
    slot_ok = jnp.arange(n_pad) < n  # [n_pad]
    key_ok = (
        slot_ok
        if pad is None
        else slot_ok & _gather(jnp.broadcast_to(pad[:, None, :], (b, h, n)), perm)
    )
    s_bucket = jnp.take_along_axis(
        jnp.pad(buckets, ((0, 0), (0, 0), (0, 0), (0, n_pad - n))), perm, axis=-1
    )
    sq = _gather(x, perm).reshape(b, h, num_hashes, nc, c, dk)
    sk = _gather(keys, perm).reshape(b, h, num_hashes, nc, c, dk)
    sv = _gather(vals, perm).reshape(b, h, num_hashes, nc, c, dv)
    spos = perm.reshape(b, h, num_hashes, nc, c)
    sbuck = s_bucket.reshape(b, h, num_hashes, nc, c)
    sok = jnp.broadcast_to(key_ok, (b, h, num_hashes, n_pad)).reshape(b, h, num_hashes, nc, c)

    def look_one_back(t, fill):
        """[.., nc, c, ...] -> [.., nc, 2c, ...]: the previous chunk (none for the first), then
        the chunk itself."""
        prev = jnp.concatenate([jnp.full_like(t[:, :, :, :1], fill), t[:, :, :, :-1]], axis=3)
        return jnp.concatenate([prev, t], axis=4)

    kk = look_one_back(sk, 0)
    vv = look_one_back(sv, 0)
    kpos = look_one_back(spos, -1)
    kbuck = look_one_back(sbuck, -1)
    kok = look_one_back(sok, False)

    allowed = kok[..., None, :] & (kbuck[..., None, :] == sbuck[..., :, None])
    if causal:
        allowed &= kpos[..., None, :] <= spos[..., :, None]
    is_self = kpos[..., None, :] == spos[..., :, None]
    others = allowed & ~is_self
    # The paper's rule: self only when no other target is in reach.
    allowed = others | (allowed & ~jnp.any(others, -1, keepdims=True))

    logits = jnp.einsum("bhrxid,bhrxjd->bhrxij", sq, kk) * scale
    logits = jnp.where(allowed, logits, -jnp.inf)
    any_ok = jnp.any(allowed, -1, keepdims=True)
    mx = jax.lax.stop_gradient(jnp.where(any_ok, logits.max(-1, keepdims=True), 0.0))
    e = jnp.where(allowed, jnp.exp(logits - mx), 0.0)
    den = e.sum(-1, keepdims=True)
    safe = jnp.where(any_ok, den, 1.0)
    o = jnp.einsum("bhrxij,bhrxje->bhrxie", e / safe, vv)  # [B, H, r, nc, c, Dv]
    lse = jnp.where(any_ok, mx + jnp.log(safe), -jnp.inf)[..., 0]  # [B, H, r, nc, c]

    # Unsort: position perm[p] received slot p.
    inv = jnp.argsort(perm[..., :n], axis=-1)  # [B, H, r, N]
    o = jnp.take_along_axis(o.reshape(b, h, num_hashes, n_pad, dv), inv[..., None], axis=3)
    lse = jnp.take_along_axis(lse.reshape(b, h, num_hashes, n_pad), inv, axis=3)

    # Combine rounds by the softmax of their log-sum-exp; no round in reach -> zeros.
    reach = jnp.isfinite(lse)
    top = jax.lax.stop_gradient(
        jnp.where(jnp.any(reach, 2, keepdims=True), lse.max(2, keepdims=True), 0.0)
    )
    wr = jnp.where(reach, jnp.exp(jnp.where(reach, lse, 0.0) - top), 0.0)
    wsum = wr.sum(2, keepdims=True)
    wr = wr / jnp.where(wsum > 0, wsum, 1.0)
    out = jnp.einsum("bhrn,bhrne->bnhe", wr, o)
    return out.astype(v.dtype)


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Per round: hashing 2·n·h·dk·(n_buckets/2) (none for one bucket); chunks of m = min(chunk,
    # n) queries score 2m keys: 2·n_pad·2m·h·(dk + dv); the rounds' combination 2·n·h·dv·r.
    r = hp["num_hashes"]
    nb = num_buckets_for(c.n, hp["chunk_size"], hp["num_buckets"])
    m = min(hp["chunk_size"], c.n)
    n_pad = math.ceil(c.n / m) * m
    scores = r * n_pad * 2 * m * c.h
    hashing = 0 if nb == 1 else 2 * r * c.n * c.h * c.dk * (nb // 2)
    mm = hashing + 2 * scores * (c.dk + c.dv) + 2 * r * c.n * c.h * c.dv
    # bucket, validity, causal and self selects (~4 per score) on top of the softmax;
    # key normalisation 3·n·h·dk.
    ew = scores * (cost.SOFTMAX + 4 + c.masked) + 3 * c.n * c.h * c.dk
    return mm, ew


registry.register(
    "reformer",
    check=_check,
    apply=apply,
    init=init,
    flops=flops,
    defaults={
        "num_hashes": 1,
        "num_buckets": None,
        "chunk_size": 64,
        "causal": False,
        "redraw": False,
        "scale": None,
    },
    doc="Reformer shared-QK LSH attention, sorted chunks + one back (Kitaev et al. 2020)",
)
