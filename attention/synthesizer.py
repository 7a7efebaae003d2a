"""Synthesizer attention (Tay et al., "Synthesizer: Rethinking Self-Attention for Transformer
Models", ICML 2021, arXiv:2005.00743): attention weights synthesised without token-token dot
products. Two registered mechanisms, both ignoring q and k (`needs_qk=False`, so the layer builds
no query/key projections):

`synthesizer_dense` (Sec. 3.1, Eq. 1-2): each token's own input x_i (the layer input, passed as
the registry's extra input `"x"` `[B, N, model_dim]`) is mapped to a row of logits over the key
positions by a two-layer MLP,

    B_i = W_2 ReLU(W_1 x_i + b_1) + b_2,    B_i in R^{max_len}, truncated to its first M entries
    out_i = sum_j softmax_j(B_ij) v_j

`synthesizer_random` (Sec. 3.2, Eq. 3): one logit matrix R `[max_len, max_len]` per head,
independent of the input, cropped to `R[:N, :M]`; learned by default (the paper's "Random"),
frozen at its initial value with `fixed=True` (the paper's "Fixed Random"; R then sits under
`params["buffers"]`).

    out_i = sum_j softmax_j(R_ij) v_j

Facts followed from the Long Range Arena code (google-research/long-range-arena,
`lra_benchmarks/models/synthesizer/synthesizer_attention.py`, `SynthesizerAttention`):
  * The dense MLP reads the layer input (`inputs_q`), not the query projection; the paper's
    Eq. 1 also writes F(X_i) of the token's input. W_1 maps model_dim to the H heads' head_dim
    features (`DenseGeneral(features=(num_heads, head_dim))`), then ReLU, then W_2 maps each
    head's head_dim features to max_len logits, with one W_2 shared by the heads (a
    `DenseGeneral(features=max_length)` on the last axis); both with biases. Logits past the
    sequence are dropped (`[..., :qlength]`).
  * The random matrix is `[num_heads, max_length, max_length]`, cropped `[:, :qlength,
    :kvlength]` and shared by the batch.
  * Initialisation as LRA's Synthesizer block (`SynthesizerBlock` passes
    `kernel_init=xavier_uniform()`): R by `xavier_uniform` on its `[H, L, L]` shape; W_1 by
    `xavier_uniform` on its flattened `[model_dim, H * head_dim]` form and W_2 on
    `[head_dim, max_len]`. Biases are zero (LRA draws them from N(0, 1e-6^2), i.e. zero to
    float32 precision).
  * `max_len` is the model's maximum length (init's `max_len`, CLS included), as LRA's
    `max_length`; the LRA configs use `synthesizer_mode="random"` with an attention dropout of
    0.1 set by the model (our `dropout_rate`, default 0 as every mechanism here).

Deliberate differences from the LRA code, with reasons:
  * LRA reshapes the dense logits `[B, N, H, L]` to `[B, H, N, L]` without a transpose, which
    mixes tokens and heads; we transpose (the paper's per-token logits).
  * LRA's encoder defaults to `ignore_dot_product=False`, i.e. its runs add the q.k/sqrt(d)
    logits to the synthetic ones (the paper's "Random + Vanilla" mixture, Sec. 3.3; the
    text-classification config's `ignore_dot_product=True` sits outside `config.model` and is
    never passed). These mechanisms are the pure synthesizers of Sec. 3.1-3.2, which the
    brief and the paper's Dense/Random rows describe; the mixture would need q and k.
  * With `ignore_dot_product=True` LRA applies no padding mask at all; we mask the logits of
    padded keys (and any 4-D mask) before the softmax, so padded tokens never contribute.
  * The factorized variants (Sec. 3.1-3.2, "Factorized Dense/Random", LRA's
    `factorized_random` with k=32) are not implemented.

Masks: key padding `[B, M]` and any boolean mask broadcastable to `[B, H, N, M]` (True =
attend) mask the synthetic logits before the softmax; `causal=True` additionally masks keys
j > i (the paper's language-modelling setting, Sec. 4.3; needs N == M). A query whose every key
is masked returns zeros. N (random) or M (both) above `max_len` raises ValueError naming
max_len. Attention dropout (`dropout_rate`, training only) acts on the probabilities.

Complexity: O(N M (H + Dv H)) time and an `[B, H, N, M]` probability array, as softmax
attention (the synthetic logits replace QK^T: dense costs 2 N model_dim H head_dim +
2 N H head_dim M for the MLP; random reads R). Logits accumulate in float32 (float64 for
float64 values); the output is in v's dtype.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attention import cost, masks, registry

__all__ = ["apply_dense", "apply_random", "flops_dense", "flops_random", "init_dense", "init"]


def _require(value, what: str, name: str):
    if value is None:
        raise ValueError(
            f"{name}: init needs {what} (the synthetic logits have one column per position up "
            "to max_len); pass it to init, e.g. max_len=the longest sequence, CLS included"
        )
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: {what}={value!r} must be a positive int")
    return value


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    fixed: bool = False,
):
    """The random Synthesizer's logit matrix R `[H, max_len, max_len]` (LRA's xavier_uniform).

    Returns:
      `{"R": R}` (learned), or `{"buffers": {"R": R}}` when `fixed` (the paper's Fixed Random).
    """
    del head_dim, model_dim, layer_index, num_layers
    max_len = _require(max_len, "max_len", "synthesizer_random")
    r = jax.nn.initializers.xavier_uniform()(key, (num_heads, max_len, max_len), jnp.float32)
    return {"buffers": {"R": r}} if fixed else {"R": r}


def init_dense(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
):
    """The dense Synthesizer's MLP (LRA's layout and xavier_uniform initialisation).

    Returns:
      `{"w1": [model_dim, H, head_dim], "b1": [H, head_dim], "w2": [head_dim, max_len],
      "b2": [max_len]}`, float32.
    """
    del layer_index, num_layers
    max_len = _require(max_len, "max_len", "synthesizer_dense")
    model_dim = _require(model_dim, "model_dim", "synthesizer_dense")
    k1, k2 = jax.random.split(key)
    xavier = jax.nn.initializers.xavier_uniform()
    w1 = xavier(k1, (model_dim, num_heads * head_dim), jnp.float32)
    return {
        "w1": w1.reshape(model_dim, num_heads, head_dim),
        "b1": jnp.zeros((num_heads, head_dim), jnp.float32),
        "w2": xavier(k2, (head_dim, max_len), jnp.float32),
        "b2": jnp.zeros((max_len,), jnp.float32),
    }


def _check_v(v, name: str) -> None:
    if getattr(v, "ndim", None) != 4:
        raise ValueError(f"{name}: v must be 4-D [B, M, H, Dv], got {getattr(v, 'shape', v)}")


def _check_len(length: int, max_len: int, what: str, name: str) -> None:
    if length > max_len:
        raise ValueError(
            f"{name}: {what}={length} exceeds max_len={max_len} (the synthetic logits have "
            f"max_len columns); build the model with max_len >= {length}"
        )


def _attend(logits, v, mask, causal, dropout_rate, train, key, name):
    """softmax over keys of the masked synthetic `logits` `[B|1, H, N, M]`, times v."""
    b, m, h, _ = v.shape
    n = logits.shape[2]
    if causal and n != m:
        raise ValueError(f"{name}: causal=True needs N == M, got N={n}, M={m}")
    rate = dropout_rate if train else 0.0
    if not 0.0 <= dropout_rate < 1.0:
        raise ValueError(f"{name}: dropout_rate={dropout_rate!r} must be in [0, 1)")
    if rate > 0.0 and key is None:
        raise ValueError(f"{name}: train=True with dropout_rate > 0 needs `key`")
    allowed = masks.as_4d(mask, b, h, n, m)
    if causal:
        tril = jnp.tril(jnp.ones((n, m), bool))
        allowed = tril if allowed is None else allowed & tril
    if allowed is None:
        probs = jax.nn.softmax(logits, axis=-1)
    else:
        shift = jnp.where(allowed, logits, -jnp.inf).max(-1, keepdims=True)
        shift = jax.lax.stop_gradient(jnp.where(jnp.isfinite(shift), shift, 0.0))
        # Masked logits are replaced before exp so that no inf meets a zero cotangent.
        e = jnp.where(allowed, jnp.exp(jnp.where(allowed, logits, shift) - shift), 0.0)
        den = e.sum(-1, keepdims=True)
        probs = e / jnp.where(den > 0, den, 1.0)  # a fully masked row stays zero
    if rate > 0.0:
        keep = jax.random.bernoulli(key, 1.0 - rate, probs.shape)
        probs = jnp.where(keep, probs / (1.0 - rate), 0.0)
    probs = jnp.broadcast_to(probs, (b, h, n, m))
    out = jnp.einsum("bhnm,bmhd->bnhd", probs, v.astype(probs.dtype))
    return out.astype(v.dtype)


def apply_random(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    causal: bool = False,
    dropout_rate: float = 0.0,
):
    """Random Synthesizer: `softmax_j(R[h, i, j]) v_j`; q and k are ignored (may be None).

    Args:
      params: `init` output: `{"R": [H, L, L]}` or `{"buffers": {"R": [H, L, L]}}`.
      q, k: unused (the weights do not depend on the tokens); N is q's length when given,
        else v's.
      v: `[B, M, H, Dv]`.
      mask: key padding `[B, M]` or boolean broadcastable to `[B, H, N, M]`; True = attend.
      key: PRNG key for attention dropout (training with `dropout_rate > 0`).
      train: enables attention dropout.
      causal: mask keys j > i (N == M).
      dropout_rate: dropout on the attention probabilities during training.

    Returns:
      `[B, N, H, Dv]` in v's dtype.
    """
    del k
    name = "synthesizer_random"
    _check_v(v, name)
    try:
        r = params["buffers"]["R"] if "buffers" in params else params["R"]
    except (KeyError, TypeError):
        raise ValueError(f"{name}: params must be init's {{'R': [H, L, L]}}") from None
    if "buffers" in params:  # Fixed Random: a constant
        r = jax.lax.stop_gradient(r)
    _, m, h, _ = v.shape
    n = q.shape[1] if q is not None else m
    if r.ndim != 3 or r.shape[0] != h:
        raise ValueError(f"{name}: R has shape {r.shape}; expected [H={h}, max_len, max_len]")
    max_len = r.shape[1]
    _check_len(n, max_len, "N (queries)", name)
    _check_len(m, max_len, "M (keys)", name)
    acc = jnp.promote_types(v.dtype, jnp.float32)
    logits = r[None, :, :n, :m].astype(acc)
    return _attend(logits, v, mask, causal, dropout_rate, train, key, name)


def apply_dense(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    x=None,
    causal: bool = False,
    dropout_rate: float = 0.0,
):
    """Dense Synthesizer: `softmax_j((W_2 ReLU(W_1 x_i + b_1) + b_2)_j) v_j`; q, k ignored.

    Args:
      params: `init_dense` output.
      q, k: unused.
      v: `[B, M, H, Dv]`.
      mask: key padding `[B, M]` or boolean broadcastable to `[B, H, N, M]`; True = attend.
      key: PRNG key for attention dropout (training with `dropout_rate > 0`).
      train: enables attention dropout.
      x: the layer input `[B, N, model_dim]` (one row of logits per query token); required
        (declared in `inputs`, so the encoder layers always pass it; a call without it raises).
      causal: mask keys j > i (N == M).
      dropout_rate: dropout on the attention probabilities during training.

    Returns:
      `[B, N, H, Dv]` in v's dtype.
    """
    del q, k
    name = "synthesizer_dense"
    _check_v(v, name)
    if x is None:
        raise ValueError(
            f"{name}: needs the layer input x [B, N, model_dim] (its logits are a function of "
            "each token's input); pass x=..."
        )
    try:
        w1, b1, w2, b2 = (params[n_] for n_ in ("w1", "b1", "w2", "b2"))
    except (KeyError, TypeError):
        raise ValueError(f"{name}: params must be init_dense's w1, b1, w2, b2") from None
    b, m, h, _ = v.shape
    if x.ndim != 3 or x.shape[0] != b or x.shape[2] != w1.shape[0]:
        raise ValueError(
            f"{name}: x has shape {x.shape}; expected [B={b}, N, model_dim={w1.shape[0]}]"
        )
    if w1.shape[1] != h:
        raise ValueError(f"{name}: w1 {w1.shape} has {w1.shape[1]} heads, v has {h}")
    _check_len(m, w2.shape[1], "M (keys)", name)
    acc = jnp.promote_types(jnp.promote_types(v.dtype, x.dtype), jnp.float32)
    hidden = jnp.einsum("bnc,che->bnhe", x.astype(acc), w1.astype(acc)) + b1.astype(acc)
    hidden = jax.nn.relu(hidden)
    # Only the first M of the max_len output columns are used: crop W_2 before the product.
    logits = jnp.einsum("bnhe,em->bhnm", hidden, w2[:, :m].astype(acc)) + b2[:m].astype(acc)
    return _attend(logits, v, mask, causal, dropout_rate, train, key, name)


def _check(hp, num_tokens) -> None:
    """`check` for the registry: boolean flags."""
    del num_tokens
    for flag in ("causal", "fixed"):
        if flag in hp and not isinstance(hp[flag], bool):
            raise ValueError(f"{flag}={hp[flag]!r} must be True or False")


def _softmax_and_values(c: cost.Call, hp) -> tuple[float, float]:
    scores = c.n * c.m * c.h
    masked = c.masked or hp["causal"]
    return 2 * scores * c.dv, scores * (cost.SOFTMAX + cost.MASKED * masked)


def flops_random(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # R is read, not computed: the softmax over n x m logits and PV 2·n·m·h·dv.
    return _softmax_and_values(c, hp)


def flops_dense(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # MLP: 2·n·d_model·h·dk (W_1), 2·n·h·dk·m (W_2 cropped to m columns); bias + ReLU on the
    # hidden layer, bias on the logits; then softmax and PV as the random one.
    mm, ew = _softmax_and_values(c, hp)
    mm += 2 * c.n * c.d_model * c.h * c.dk + 2 * c.n * c.h * c.dk * c.m
    ew += 2 * c.n * c.h * c.dk + c.n * c.h * c.m
    return mm, ew


registry.register(
    "synthesizer_random",
    apply=apply_random,
    init=init,
    check=_check,
    flops=flops_random,
    defaults={"causal": False, "dropout_rate": 0.0, "fixed": False},
    doc="Random Synthesizer: softmax of a learned (or fixed) [max_len, max_len] logit matrix "
    "per head, times V (Tay et al. 2021)",
    needs_qk=False,
)
registry.register(
    "synthesizer_dense",
    apply=apply_dense,
    init=init_dense,
    check=_check,
    flops=flops_dense,
    defaults={"causal": False, "dropout_rate": 0.0},
    doc="Dense Synthesizer: per-token logits W2 relu(W1 x_i + b1) + b2 over max_len, times V "
    "(Tay et al. 2021)",
    inputs=("x",),
    needs_qk=False,
)
