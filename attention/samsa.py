"""SAMSA: sampling self-attention (Lenhat et al., "SAMSA: Efficient Transformer for Many Data
Modalities", arXiv 2408.05391, §4.2 and §4.4; Algorithm 1).

Every head scores the tokens with a small MLP on the layer input `x` (§4.2,
`z = ImportanceScore(X)`), appends 2k learnable support key/value vectors with learnable
scores (§4.4), perturbs the scores with Gumbel(0, 1) noise while training, and keeps its own k
key/value pairs; all N queries then attend only to those k pairs:

    out[n] = sum_m softmax_m(q[n] . K~[m] / sqrt(Dk)) V~[m],        m = 1..k

The selection is made differentiable by comparing each of the top-k tokens i_m with each of
the next k tokens j_v (ranks k+1..2k; §4.2, last paragraph) through a Gumbel-sigmoid of the
(already perturbed) score difference:

    p[m, v] = sigmoid((z[i_m] - z[j_v]) / tau)
    P~[m]   = (1/k) sum_v ( p[m, v] P[i_m] + (1 - p[m, v]) P[j_v] )     (P = [K | V])

`soft` uses this convex mixture as the sample; `hard` uses the exact gather P[i_m] in the
forward pass and the mixture's gradient in the backward pass (straight-through). At evaluation
the hard mode takes the sparse path: only top-k and a gather, no k x k comparison.

Choices where the paper is silent or inconsistent ("the code": the authors' repository
HySonLab/SAMSA, `ImportantScore.py` for the MLP, `DSZRC.py` for the sampler and its backward,
`README.md` for the example hyper-parameters):
  * The MLP is the authors' code's: `Linear_{d->h}(x + RMSNorm(Linear(GELU(Linear(x)))))`.
  * Noise is added after the support scores are appended (the code; Algorithm 1 adds it
    before), and only in training unless `noise_at_eval` (the code adds it at evaluation too;
    the paper says inference needs no differentiability).
  * `temperature` is a fixed hyper-parameter (the code makes it a parameter that never gets a
    gradient); 0.1 is the code's README value.
  * `grad_cap`: the code rescales the sigmoid's derivative per head so its largest value over
    the batch is at most 0.25; kept on by default, since the temperature comes from the code too.
"""

from __future__ import annotations

import math
import numbers

import jax
import jax.numpy as jnp

from attention import cost, kernels, masks, registry, softmax

__all__ = ["init", "apply", "flops", "importance_scores", "mixture_weights", "sample"]

_MODES = ("hard", "soft")
# The code's padding score: below any real or support score, yet finite so that score
# differences stay finite (an -inf would give inf - inf = NaN when two padded tokens meet).
_PAD_SCORE = -1e9
_RMS_EPS = 1e-6


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim: int | None = None,
    max_len=None,
    layer_index=0,
    num_layers=1,
    k: int = 8,
    support: bool = True,
) -> dict:
    """Parameters of the importance-score MLP and of the support vectors.

    Returns a dict:
      `scorer`: `w1 [d, d]`, `b1 [d]`, `w2 [d, d]`, `b2 [d]`, `norm [d]` (RMSNorm scale, ones),
        `w3 [d, H]`, `b3 [H]` with `d = model_dim` (PyTorch's default Linear init, as the code).
      with `support`: `support_scores [H, 2k]`, `support_keys [2k, H, head_dim]`,
        `support_values [2k, H, head_dim]`, all N(0, 1) (the code's init).
    """
    del max_len, layer_index, num_layers
    _check_k(k)
    if model_dim is None:
        raise ValueError(
            "samsa: init needs model_dim (the width of `x`, the importance-score input)"
        )
    d, h = model_dim, num_heads
    keys = jax.random.split(key, 6)

    def linear(key, fan_in, fan_out):
        bound = 1.0 / math.sqrt(fan_in)
        kw, kb = jax.random.split(key)
        w = jax.random.uniform(kw, (fan_in, fan_out), minval=-bound, maxval=bound)
        return w, jax.random.uniform(kb, (fan_out,), minval=-bound, maxval=bound)

    w1, b1 = linear(keys[0], d, d)
    w2, b2 = linear(keys[1], d, d)
    w3, b3 = linear(keys[2], d, h)
    params = {
        "scorer": {
            "w1": w1,
            "b1": b1,
            "w2": w2,
            "b2": b2,
            "norm": jnp.ones((d,)),
            "w3": w3,
            "b3": b3,
        }
    }
    if support:
        params["support_scores"] = jax.random.normal(keys[3], (h, 2 * k))
        params["support_keys"] = jax.random.normal(keys[4], (2 * k, h, head_dim))
        params["support_values"] = jax.random.normal(keys[5], (2 * k, h, head_dim))
    return params


def importance_scores(scorer, x):
    """The per-head importance MLP: `x [B, M, d]` -> scores `[B, M, H]`.

    `Linear_{d->H}(x + RMSNorm(Linear_{d->d}(GELU(Linear_{d->d}(x)))))`, exact GELU, RMSNorm
    epsilon 1e-6; `scorer` is `init(...)["scorer"]`.
    """
    hid = jax.nn.gelu(x @ scorer["w1"] + scorer["b1"], approximate=False)
    hid = hid @ scorer["w2"] + scorer["b2"]
    hid = hid * jax.lax.rsqrt(jnp.mean(hid * hid, axis=-1, keepdims=True) + _RMS_EPS)
    return (x + hid * scorer["norm"]) @ scorer["w3"] + scorer["b3"]


def mixture_weights(top, second, *, temperature: float, grad_cap: bool = True):
    """Weights of the k x k comparison.

    Args:
      top: perturbed scores of the top-k tokens `[..., k]` (sorted descending).
      second: perturbed scores of the next k tokens `[..., k]`.
      temperature: the Gumbel-sigmoid temperature tau.
      grad_cap: rescale the sigmoid's derivative so that its maximum over all axes but the
        second-to-last of `top` (the head axis for `[B, H, k]`) is at most 0.25 (the code).

    Returns:
      `(w_top [..., k], w_second [..., k, k])`: sample m is
      `w_top[m] P[i_m] + sum_v w_second[m, v] P[j_v]`; both in [0, 1], each row sums to 1.
    """
    p = jax.nn.sigmoid((top[..., :, None] - second[..., None, :]) / temperature)
    if grad_cap:
        slope = jax.lax.stop_gradient(p * (1.0 - p) / temperature)
        axes = tuple(i for i in range(p.ndim) if i != p.ndim - 3)
        peak = jnp.max(slope, axis=axes, keepdims=True)
        factor = jnp.where(peak > 0.25, 0.25 / jnp.maximum(peak, 0.25), 1.0)
        p = jax.lax.stop_gradient(p) + factor * (p - jax.lax.stop_gradient(p))
    k = p.shape[-1]
    return p.mean(axis=-1), (1.0 - p) / k


def _gather(x, idx):
    """`x [B, H, L, D]`, `idx [B, H, k]` -> `[B, H, k, D]`."""
    return jnp.take_along_axis(x, idx[..., None], axis=2)


def sample(
    scores,
    keys,
    values,
    *,
    k: int,
    mode: str = "hard",
    sparse: bool = False,
    temperature: float = 0.1,
    grad_cap: bool = True,
):
    """Differentiable top-k sampling of key/value pairs per head (§4.2).

    Args:
      scores: `[B, H, L]` perturbed importance scores (noise, support and padding included).
      keys: `[B, H, L, Dk]`; values: `[B, H, L, Dv]`.
      k: tokens kept per head (`2k <= L` unless `sparse`).
      mode: "hard" (straight-through gather) or "soft" (convex mixture).
      sparse: hard inference: top-k and a gather only (no top-2k, no k x k comparison).
      temperature, grad_cap: see `mixture_weights`.

    Returns:
      `(keys [B, H, k, Dk], values [B, H, k, Dv], top [B, H, k])`, `top` the indices of the
      top-k tokens in descending score order.
    """
    if mode not in _MODES:
        raise ValueError(f"samsa: unknown mode {mode!r}; known: {', '.join(_MODES)}")
    if sparse:
        _, top = jax.lax.top_k(scores, k)
        return _gather(keys, top), _gather(values, top), top
    ranked, idx = jax.lax.top_k(scores, 2 * k)
    top, second = idx[..., :k], idx[..., k:]
    w_top, w_second = mixture_weights(
        ranked[..., :k], ranked[..., k:], temperature=temperature, grad_cap=grad_cap
    )

    def mix(tier1, tier2):
        return w_top[..., None] * tier1 + jnp.einsum("bhmv,bhvd->bhmd", w_second, tier2)

    out = []
    for x in (keys, values):
        tier1, tier2 = _gather(x, top), _gather(x, second)
        if mode == "soft":
            out.append(mix(tier1, tier2))
        else:
            # Forward value tier1 exactly (s - s == 0); backward: identity to tier1, nothing to
            # tier2, and the mixture's derivative to the scores.
            s = mix(jax.lax.stop_gradient(tier1), jax.lax.stop_gradient(tier2))
            out.append(tier1 + (s - jax.lax.stop_gradient(s)))
    return out[0], out[1], top


def _check_k(k) -> None:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"samsa: k (tokens sampled per head) must be a positive int, got {k!r}")


def _key_validity(mask, b: int, h: int, m: int):
    """A key mask as `[B, H, M]` booleans, or None; per-query masks are refused."""
    if mask is None:
        return None
    shape = getattr(mask, "shape", None)
    if shape is not None and len(shape) == 4 and shape[2] != 1:
        raise ValueError(
            f"samsa supports key masks only ([B, M] key padding or [B|1, H|1, 1, M]); got a "
            f"per-query mask of shape {tuple(shape)}: each head samples one key set for all "
            "queries, so keys cannot be restricted per query"
        )
    return masks.as_4d(mask, b, h, 1, m)[:, :, 0, :]


def apply(
    params,
    q,
    keys,
    values,
    /,
    *,
    mask=None,
    key=None,
    train: bool = False,
    x=None,
    k: int = 8,
    mode: str = "hard",
    temperature: float = 0.1,
    support: bool = True,
    noise_at_eval: bool = False,
    grad_cap: bool = True,
    dropout_rate: float = 0.0,
    implementation: str = "auto",
):
    """SAMSA attention. q/k/v are positional-only, since `k` is the sample-size hyper-parameter.

    Args:
      params: `init(...)` output.
      q: `[B, N, H, Dk]`; keys: `[B, M, H, Dk]`; values: `[B, M, H, Dv]` (Dv = head_dim when
        `support`).
      mask: key padding `[B, M]` or a key mask broadcastable to `[B, H, 1, M]`; True = real token.
        Masked tokens are never sampled; a head with no real token outputs zeros.
      key: PRNG key, needed when `train` (Gumbel noise) or `noise_at_eval`. The noise is
        `jax.random.gumbel(key, [B, H, M + 2k])` (`[B, H, M]` without support); attention
        dropout uses `jax.random.fold_in(key, 1)`.
      train: training path (noise, top-2k comparison); False with mode "hard" is the sparse path.
      x: the layer input `[B, M, model_dim]` the importance scores are computed from.
      k: tokens sampled per head.
      mode: "hard" (straight-through top-k) or "soft" (convex mixture, also at evaluation).
      temperature: Gumbel-sigmoid temperature.
      support: append the 2k learnable support key/value vectors and scores.
      noise_at_eval: add Gumbel noise at evaluation as the authors' code does (stochastic
        predictions); off by default (the paper: inference needs no relaxation).
      grad_cap: cap the sigmoid's derivative at 0.25 per head (the code; see `mixture_weights`).
      dropout_rate: dropout on the attention probabilities during training (the code's
        attention-map dropout).
      implementation: the kernel of the attention over the k sampled pairs, "auto" | "xla" |
        "cudnn" | "pallas" (`attention.kernels`). "xla" computes it in float32 at least; a
        fused kernel takes q and the sampled pairs in the input dtype (e.g. bfloat16).

    Returns:
      `[B, N, H, Dv]` in the dtype of `values`; computed in float32 at least.
    """
    softmax.check_qkv(q, keys, values)
    _check_k(k)
    kernels.check_implementation(implementation)
    if mode not in _MODES:
        raise ValueError(f"samsa: unknown mode {mode!r}; known: {', '.join(_MODES)}")
    if not temperature > 0:
        raise ValueError(f"samsa: temperature must be positive, got {temperature!r}")
    b, n, h, dk = q.shape
    m = keys.shape[1]
    if not support and 2 * k > m:
        raise ValueError(
            f"samsa: k={k} needs 2k={2 * k} tokens (the top k are compared with the next k) but "
            f"there are N={m} tokens and support=False; lower k or enable support"
        )
    if x is None:
        raise ValueError("samsa needs the layer input `x` [B, M, model_dim] for its scores")
    scorer = params["scorer"]
    d = scorer["w1"].shape[0]
    if x.ndim != 3 or x.shape != (b, m, d):
        raise ValueError(f"samsa: x must be [B, M, model_dim] = {(b, m, d)}, got {x.shape}")
    if scorer["w3"].shape[1] != h:
        raise ValueError(f"samsa: params were made for {scorer['w3'].shape[1]} heads, q has {h}")
    noisy = train or noise_at_eval
    if noisy and key is None:
        raise ValueError("samsa: train=True (or noise_at_eval=True) needs `key` for Gumbel noise")

    acc = jnp.promote_types(jnp.promote_types(q.dtype, values.dtype), jnp.float32)
    valid = _key_validity(mask, b, h, m)
    z = importance_scores(scorer, x.astype(acc)).astype(acc).transpose(0, 2, 1)  # [B, H, M]
    kh = keys.astype(acc).transpose(0, 2, 1, 3)  # [B, H, M, Dk]
    vh = values.astype(acc).transpose(0, 2, 1, 3)
    if valid is not None:
        # Zeroed so that a padded key can never leak in, even with weight 0 (0 * inf = NaN).
        kh = jnp.where(valid[..., None], kh, 0.0)
        vh = jnp.where(valid[..., None], vh, 0.0)
    if support:
        if "support_scores" not in params:
            raise ValueError("samsa: support=True but params have no support vectors")
        s_scores = params["support_scores"]
        s_keys, s_values = params["support_keys"], params["support_values"]
        if s_scores.shape != (h, 2 * k) or s_keys.shape[:2] != (2 * k, h):
            raise ValueError(
                f"samsa: support parameters {s_scores.shape} were not made for k={k}, {h} heads"
            )
        if s_keys.shape[2] != dk or s_values.shape[2] != values.shape[3]:
            raise ValueError(
                f"samsa: support vectors {s_keys.shape}, {s_values.shape} do not match head "
                f"dims Dk={dk}, Dv={values.shape[3]}"
            )

        def bcast(p):
            p = p.astype(acc).transpose(1, 0, 2)[None]
            return jnp.broadcast_to(p, (b,) + p.shape[1:])

        z = jnp.concatenate([z, jnp.broadcast_to(s_scores.astype(acc), (b, h, 2 * k))], -1)
        kh = jnp.concatenate([kh, bcast(s_keys)], axis=2)
        vh = jnp.concatenate([vh, bcast(s_values)], axis=2)
        if valid is not None:
            valid = jnp.concatenate([valid, jnp.ones((b, h, 2 * k), bool)], axis=-1)
    if noisy:
        z = z + jax.random.gumbel(key, z.shape, acc)
    if valid is not None:
        z = jnp.where(valid, z, _PAD_SCORE)

    k_s, v_s, top = sample(
        z,
        kh,
        vh,
        k=k,
        mode=mode,
        sparse=mode == "hard" and not train,
        temperature=temperature,
        grad_cap=grad_cap,
    )

    slot = None
    if valid is not None:
        # Only without support can a top-k slot hold padding (fewer real tokens than k).
        slot = jnp.take_along_axis(valid, top, axis=-1)[:, :, None, :]  # [B, H, 1, k]
        # A sequence without real tokens gives zeros, as a fully masked row does elsewhere.
        real = valid[..., :m].any(axis=-1)[:, :, None, None]
    dropout = train and dropout_rate > 0.0
    low = jnp.result_type(q.dtype, values.dtype)
    spec = lambda d: jax.ShapeDtypeStruct((b, k, h, d), low)
    kernel = kernels.select(
        implementation,
        jax.ShapeDtypeStruct(q.shape, low),
        spec(dk),
        spec(v_s.shape[-1]),
        mask=None if slot is None else jax.ShapeDtypeStruct(slot.shape, bool),
        dropout=dropout,
        site="samsa",
    )
    if kernel != "xla":
        to_bmhd = lambda x: x.transpose(0, 2, 1, 3).astype(low)
        out = kernels.run(
            kernel,
            q.astype(low),
            to_bmhd(k_s),
            to_bmhd(v_s),
            mask=None if slot is None else slot & real,
            scale=dk**-0.5,
        )
        return out.astype(values.dtype)

    logits = jnp.einsum("bnhd,bhkd->bhnk", q.astype(acc), k_s) * dk**-0.5
    if valid is not None:
        logits = jnp.where(slot, logits, jnp.finfo(acc).min)
    probs = jax.nn.softmax(logits, axis=-1)
    if valid is not None:
        probs = jnp.where(slot, probs, 0.0)
        probs = jnp.where(real, probs, 0.0)
    if dropout:
        keep = jax.random.bernoulli(jax.random.fold_in(key, 1), 1.0 - dropout_rate, probs.shape)
        probs = jnp.where(keep, probs / (1.0 - dropout_rate), 0.0)
    return jnp.einsum("bhnk,bhkd->bnhd", probs, v_s).astype(values.dtype)


def _check(h, num_tokens) -> None:
    """`check` for the registry: k, mode and temperature, k against the tokens attended."""
    _check_k(h["k"])
    if h["mode"] not in _MODES:
        raise ValueError(f"samsa: unknown mode {h['mode']!r}; known: {', '.join(_MODES)}")
    if not h["temperature"] > 0:
        raise ValueError(f"samsa: temperature must be positive, got {h['temperature']!r}")
    kernels.check_implementation(h["implementation"])
    if num_tokens is not None and h["k"] > num_tokens:
        raise ValueError(
            f"samsa: k={h['k']} (tokens sampled per head) exceeds the {num_tokens} tokens of a "
            "sequence; use k <= the sequence length"
        )


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Importance scorer on the M keys: two d x d layers and d -> h, 2·m·(2·d² + d·h); the
    # n x k attention 2·n·k·h·(dk + dv); training (and soft mode) also mixes the top-k with
    # the next k tokens: the k x k comparison einsum 2·k²·h·(dk + dv).
    d, k = c.d_model, hp["k"]
    scorer = 2 * c.m * (2 * d * d + d * c.h)
    scorer_ew = c.m * (cost.GELU_ERF * d + cost.RMSNORM * d + 3 * d + c.h)  # bias, residual
    pool = c.m + 2 * k if hp["support"] else c.m
    ew = scorer_ew + c.h * pool * (c.train or hp["noise_at_eval"])  # Gumbel noise
    mm = scorer + 2 * c.n * k * c.h * (c.dk + c.dv)
    ew += cost.softmax_elementwise(c, c.n * k * c.h)
    sparse = hp["mode"] == "hard" and not c.train
    if not sparse:
        mm += 2 * k * k * c.h * (c.dk + c.dv)
        # sigmoid of the k x k score differences, the gradient cap, the weights; the top-tier
        # products (and the straight-through difference in hard mode).
        ew += k * k * c.h * (12 if hp["grad_cap"] else 6)
        ew += k * c.h * (c.dk + c.dv) * (4 if hp["mode"] == "hard" else 2)
    return mm, ew


registry.register(
    "samsa",
    check=_check,
    apply=apply,
    init=init,
    flops=flops,
    defaults={
        "k": 8,
        "mode": "hard",
        "temperature": 0.1,
        "support": True,
        "noise_at_eval": False,
        "grad_cap": True,
        "dropout_rate": 0.0,
        "implementation": "auto",
    },
    doc="SAMSA: each head attends to k tokens sampled by a learned score (differentiable top-k)",
    inputs=("x",),
)
