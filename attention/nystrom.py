"""Nyströmformer (Xiong et al., "Nyströmformer: A Nyström-Based Algorithm for Approximating
Self-Attention", AAAI 2021, arXiv:2102.03902).

Sec. 3, Eq. 14-15 and Algorithm 1: with L landmarks (`num_landmarks`), the segment means
Q~ `[L, Dk]`, K~ `[L, Dk]` of L contiguous segments of the queries and keys, and s = Dk^-1/2,

    F = softmax(s Q K~^T) [N, L],   A = softmax(s Q~ K~^T) [L, L],   B = softmax(s Q~ K^T) [L, M]
    out = F A^+ (B V)  (+ DConv(V))

where A^+ is the Moore-Penrose pseudo-inverse by the paper's iteration (Sec. 3, Eq. 13 and
Algorithm 1; `pinv_iters`, default 6 as in the paper and the authors' code):

    Z_0 = A^T / (||A||_1 ||A||_inf),  Z_{j+1} = Z_j (13 I - A Z_j (15 I - A Z_j (7 I - A Z_j))) / 4

The products are taken right to left (B V `[L, Dv]`, A^+ (B V), then F (.)), so time is
O((N + M) L (Dk + Dv) + L^3 pinv_iters) and memory O((N + M) L + L^2): no N x M matrix.
The optional skip DConv(V) (`conv_kernel` > 0) is the depthwise convolution of the values along
the sequence that the authors add in their LRA code (mlpen/Nystromformer,
LRA/code/attention_nystrom.py: `Conv2d(num_head, num_head, (K, 1), padding=(K // 2, 0),
groups=num_head, bias=False)`; their LRA configs, LRA/code/lra_config.py, use K = 35, our
default): one learned K-tap filter per head, shared by the head's Dv channels, centred ("same"
padding, hence odd K only), in `params["conv"]` `[H, K]`, initialised as PyTorch's Conv2d default
(uniform(+-1/sqrt(K))). `conv_kernel=0` disables it (no parameters).

Key padding, as the authors' code (`Q = Q * mask`, `K = K * mask` before the segment means;
B's logits of padded keys set to -1e9; the convolution reads `V * mask`): padded keys and, for
self-attention (N == M), padded queries are zeroed before the segment means (they count in the
segment's length but add a zero vector), masked keys get weight 0 in B, and padded values
enter the convolution as zeros. Padded tokens therefore contribute nothing through their
content; their number still sets the means' denominators, as in the authors' code.

N (or M) not a multiple of L: the authors pad every sequence to a power of two
(LRA/code/run_tasks.py rounds max_seq_len up) with masked tokens, so that L divides it. We pad
to the next multiple of L only, with the same zeroed, masked tokens: each segment has
ceil(N / L) positions, the last one's padding counts as zeros in its mean. Landmarks are then
identical to the authors' for the same padded length.

L >= M (every key can be its own landmark): exact softmax attention over the keys (plus the
convolution), as the authors' `num_landmarks == seq_len` branch, which costs O(N M) <= O(N L).
With L == N == M and enough iterations the Nyström path itself is exact as well
(A = F = B = softmax(s Q K^T), and F A^+ B = A): tested in tests/attention/test_nystrom.py.

Deliberate differences from the authors' code: Z_0 uses this matrix's own ||A||_1 ||A||_inf
(the paper's Eq.), whereas the authors' LRA code takes the maximum column sum over the whole
batch and all heads (its `"original"` option, which a misspelt config key makes the only one),
which couples the sequences of a batch; there is no attention dropout (the authors' Nyström
module has none either). A query whose every key is masked returns zeros (B's row is set to 0,
and the convolution sees zeros). No causal form exists (landmarks average over all positions):
masks that vary over queries or heads raise ValueError.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from attention import cost, registry
from attention.linear import key_padding_mask
from attention.softmax import check_qkv

__all__ = ["apply", "flops", "init", "iterative_pinv"]


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    conv_kernel: int = 35,
):
    """The depthwise convolution's filters.

    Returns:
      `{"conv": [num_heads, conv_kernel] float32}`, or `{}` when `conv_kernel == 0`.
    """
    del head_dim, model_dim, max_len, layer_index, num_layers
    _check_conv(conv_kernel)
    if conv_kernel == 0:
        return {}
    bound = 1.0 / math.sqrt(conv_kernel)
    return {"conv": jax.random.uniform(key, (num_heads, conv_kernel), jnp.float32, -bound, bound)}


def _check_conv(conv_kernel) -> None:
    if (
        isinstance(conv_kernel, bool)
        or not isinstance(conv_kernel, int)
        or conv_kernel < 0
        or (conv_kernel > 0 and conv_kernel % 2 == 0)
    ):
        raise ValueError(
            f"nystromformer: conv_kernel={conv_kernel!r} must be 0 (no convolution) or a positive "
            "odd integer (a centred window; the authors use 35)"
        )


def iterative_pinv(a, iters: int):
    """Moore-Penrose pseudo-inverse of `a` `[..., L, L]` by the paper's iteration (Sec. 3).

    Z_0 = a^T / (||a||_1 ||a||_inf) per matrix; Z <- Z (13 I - a Z (15 I - a Z (7 I - a Z))) / 4.
    """
    eye = jnp.eye(a.shape[-1], dtype=a.dtype)
    norm_1 = jnp.abs(a).sum(-2).max(-1)  # max column sum
    norm_inf = jnp.abs(a).sum(-1).max(-1)  # max row sum (1 for a softmax)
    z = jnp.swapaxes(a, -1, -2) / (norm_1 * norm_inf)[..., None, None]
    for _ in range(iters):
        az = a @ z
        z = 0.25 * z @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
    return z


def _segment_means(x, num_landmarks: int):
    """Means of `num_landmarks` contiguous segments of `x` `[B, H, L', D]` (zero-padded to a
    multiple): `[B, H, num_landmarks, D]`."""
    b, h, length, d = x.shape
    seg = -(-length // num_landmarks)
    x = jnp.pad(x, ((0, 0), (0, 0), (0, seg * num_landmarks - length), (0, 0)))
    return x.reshape(b, h, num_landmarks, seg, d).mean(-2)


def _depthwise_conv(x, w):
    """Centred depthwise convolution along the sequence: x `[B, M, H, Dv]`, w `[H, K]`.

    out[b, i, h] = sum_t w[h, t] x[b, i + t - K // 2, h] (zeros outside), as PyTorch's Conv2d.
    """
    b, m, h, dv = x.shape
    kernel = w.shape[1]
    lhs = jnp.transpose(x, (0, 3, 2, 1)).reshape(b * dv, h, m)  # [B Dv, H, M]
    out = jax.lax.conv_general_dilated(
        lhs,
        w[:, None, :].astype(x.dtype),  # [H, 1, K]: one filter per head
        window_strides=(1,),
        padding=[(kernel // 2, kernel // 2)],
        dimension_numbers=("NCH", "OIH", "NCH"),
        feature_group_count=h,
        precision=jax.lax.Precision.HIGHEST,
    )
    return jnp.transpose(out.reshape(b, dv, h, m), (0, 3, 2, 1))


def _masked_softmax(logits, valid):
    """Softmax over the last axis with `valid` False entries at 0; all-invalid rows give 0."""
    logits = jnp.where(valid, logits, -jnp.inf)
    top = jnp.max(logits, -1, keepdims=True)
    top = jax.lax.stop_gradient(jnp.where(jnp.isfinite(top), top, 0.0))
    e = jnp.where(valid, jnp.exp(jnp.where(valid, logits, top) - top), 0.0)
    total = e.sum(-1, keepdims=True)
    return e / jnp.where(total > 0, total, 1.0)


def nystrom_attention(q, k, v, pad, num_landmarks: int, pinv_iters: int, acc_t):
    """The Nyström path (no shortcut, no convolution): q `[B, N, H, Dk]`, k `[B, M, H, Dk]`,
    v `[B, M, H, Dv]`, pad `[B, M]` or None -> `[B, N, H, Dv]` in `acc_t`."""
    n, m = q.shape[1], k.shape[1]
    qt = jnp.swapaxes(q.astype(acc_t), 1, 2)  # [B, H, N, Dk]
    kt = jnp.swapaxes(k.astype(acc_t), 1, 2)
    vt = jnp.swapaxes(v.astype(acc_t), 1, 2)
    s = q.shape[-1] ** -0.25  # Dk^-1/4 on each side, as the authors
    qt, kt = qt * s, kt * s
    if pad is not None:
        kt = jnp.where(pad[:, None, :, None], kt, 0.0)
        if n == m:  # self-attention: the padding marks the queries too (authors' Q * mask)
            qt = jnp.where(pad[:, None, :, None], qt, 0.0)
    q_land = _segment_means(qt, num_landmarks)
    k_land = _segment_means(kt, num_landmarks)
    f = jax.nn.softmax(jnp.einsum("bhnd,bhld->bhnl", qt, k_land), axis=-1)  # [B, H, N, L]
    a = jax.nn.softmax(jnp.einsum("bhld,bhrd->bhlr", q_land, k_land), axis=-1)  # [B, H, L, L]
    logits_b = jnp.einsum("bhld,bhmd->bhlm", q_land, kt)  # [B, H, L, M]
    valid = jnp.ones((1, 1, 1, m), bool) if pad is None else pad[:, None, None, :]
    bmat = _masked_softmax(logits_b, valid)
    bv = jnp.einsum("bhlm,bhme->bhle", bmat, vt)
    z_bv = iterative_pinv(a, pinv_iters) @ bv  # [B, H, L, Dv]
    return jnp.einsum("bhnl,bhle->bnhe", f, z_bv)


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    num_landmarks: int = 64,
    pinv_iters: int = 6,
):
    """Nyströmformer attention.

    Args:
      params: `{"conv": [H, K]}` from `init`, or `{}` (no convolution).
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: key padding `[B, M]` (or `[B|1, 1, 1, M]`), True = attend; other masks (causal
        included) raise.
      key, train: unused (deterministic; no dropout).
      num_landmarks: L, the number of segment means.
      pinv_iters: iterations of the pseudo-inverse.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`; computed in float32 (float64 for float64 inputs).
    """
    del key, train
    check_qkv(q, k, v)
    _check({"num_landmarks": num_landmarks, "pinv_iters": pinv_iters, "conv_kernel": 1}, None)
    if not isinstance(params, dict) or (params and "conv" not in params):
        raise ValueError("nystromformer: params must be init's {'conv': [H, K]} or {}")
    b, n, h, dk = q.shape
    m = k.shape[1]
    pad = key_padding_mask(
        mask, b, h, n, m, "nystromformer (no causal form: landmarks average all positions)"
    )
    if "conv" in params:
        if params["conv"].ndim != 2 or params["conv"].shape[0] != h:
            raise ValueError(
                f"nystromformer: conv filters {params['conv'].shape} do not match {h} heads"
            )
        if n != m:
            raise ValueError(
                f"nystromformer: the convolution skip adds DConv(V) to the output, so it needs "
                f"N == M, got N={n}, M={m}; use conv_kernel=0"
            )
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    if num_landmarks >= m:  # every key its own landmark: exact (authors' seq_len branch)
        logits = jnp.einsum("bnhd,bmhd->bhnm", q.astype(acc_t), k.astype(acc_t)) * dk**-0.5
        valid = jnp.ones((1, 1, 1, m), bool) if pad is None else pad[:, None, None, :]
        out = jnp.einsum("bhnm,bmhe->bnhe", _masked_softmax(logits, valid), v.astype(acc_t))
    else:
        out = nystrom_attention(q, k, v, pad, num_landmarks, pinv_iters, acc_t)
    if "conv" in params:
        vv = v.astype(acc_t)
        if pad is not None:
            vv = jnp.where(pad[:, :, None, None], vv, 0.0)
        out = out + _depthwise_conv(vv, params["conv"].astype(acc_t))
    return out.astype(v.dtype)


def _check(hp, num_tokens) -> None:
    del num_tokens
    for field, lowest in (("num_landmarks", 1), ("pinv_iters", 0)):
        value = hp[field]
        if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
            raise ValueError(f"nystromformer: {field}={value!r} must be an integer >= {lowest}")
    _check_conv(hp["conv_kernel"])


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    lm, iters, kernel = hp["num_landmarks"], hp["pinv_iters"], hp["conv_kernel"]
    conv = 2 * c.n * c.h * c.dv * kernel if c.n == c.m else 0
    if lm >= c.m:  # exact softmax branch
        scores = c.n * c.m * c.h
        return 2 * scores * (c.dk + c.dv) + conv, cost.softmax_elementwise(c, scores)
    # F = softmax(Q K~^T) 2·n·L·dk, A 2·L²·dk, B 2·L·m·dk, B V 2·L·m·dv, A^+ (B V) 2·L²·dv,
    # F (.) 2·n·L·dv; pseudo-inverse: 4 L x L x L products per iteration; the convolution.
    mm = 2 * c.h * (c.n * lm * (c.dk + c.dv) + lm * lm * (c.dk + c.dv) + lm * c.m * (c.dk + c.dv))
    mm += c.h * iters * 4 * 2 * lm**3 + conv
    seg_n, seg_m = math.ceil(c.n / lm) * lm, math.ceil(c.m / lm) * lm
    ew = c.h * (seg_n * c.dk + seg_m * c.dk)  # segment sums (and the Dk^-1/4 scales)
    ew += c.h * (c.n * lm + lm * lm) * cost.SOFTMAX + c.h * lm * c.m * (cost.SOFTMAX + cost.MASKED)
    ew += c.h * iters * 4 * lm * lm + c.h * lm * lm  # the 13/15/7 I shifts, the 1/4, Z_0
    return mm, ew


registry.register(
    "nystromformer",
    apply=apply,
    init=init,
    check=_check,
    flops=flops,
    defaults={"num_landmarks": 64, "pinv_iters": 6, "conv_kernel": 35},
    doc="Nyström landmark approximation of softmax attention, iterative pinv (Xiong et al. 2021)",
)
