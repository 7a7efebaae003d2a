"""YOSO-E: the expectation form of YOSO attention (Zeng et al., "You Only Sample (Almost) Once:
Linear Cost Self-Attention Via Bernoulli Sampling", ICML 2021, arXiv:2111.09714, Sec. 3-4).

YOSO replaces softmax weights by Bernoulli variables whose success probability is the collision
probability of a tau-bit random-hyperplane LSH code of unit vectors, (1 - theta/pi)^tau with
theta the angle between q_i and k_j; the sampled estimator (a hash table of summed values) is
O(N). YOSO-E computes its expectation exactly:

    q^_i = q_i / |q_i|,  k^_j = k_j / |k_j|,  x_ij = clip(q^_i . k^_j, -1, 1)
    w_ij  = (1 - arccos(x_ij) / pi) ^ tau          in [0, 1], = 1 iff k_j points along q_i
    y_i   = sum_j mask_ij w_ij v_j
    out_i = y_i / max(|y_i|_2, 1e-12)

The output is l2-normalised over its Dv channels instead of dividing by sum_j w_ij: the
normalisation of the authors' YOSO-E (mlpen/YOSO, encoders/backbones/efficient_attentions/
yoso/yoso_v1/yoso.py, `YOSOEAttention.forward`: `kernel.normalize(X)`, i.e.
`torch.nn.functional.normalize(X, p=2, dim=-1)`, eps 1e-12), which the paper adopts because a
sampled estimate of the row sums would cost another pass. q and k are unit-normalised first,
as there (`kernel.normalize([Q, K])`). There is no logit scale (the weight depends on the angle).

Cost: YOSO-E computes the N x M weight matrix: O(N M (Dk + Dv)) time, like softmax. It is formed
in blocks of 512 queries (`jax.lax.map`), each recomputed in the backward pass
(`jax.checkpoint`), so the live memory is O(512 M) per batch and head. YOSO-E is the
expectation of the O(N) sampled form, not itself sub-quadratic; the sampled YOSO (hash tables,
`num_hash` codes) is not implemented here.

Gradient (`grad`): d w / d x = tau (1 - arccos(x)/pi)^(tau-1) / (pi sqrt(1 - x^2)) is unbounded
as x -> 1 (a key along its query). With `grad="surrogate"` (the default) it is replaced by
(tau / 2) w_ij, the bounded gradient of the paper (Sec. 4) and of the authors' code (yoso_v1/
kernel.py, `Cumulation.backward`: `grad_Q = (grad V^T * E) (tau/2) K`); q^ and k^ are still
differentiated through their normalisation, as there. With `grad="exact"` autodiff
differentiates w itself, except within 1e-6 of x = +-1, where the gradient through x is 0
(clipped). The forward value is the same in both.

tau (`tau`, hash length): default 10, the authors' LRA value for the 1024-token tasks (Image,
Pathfinder); their LRA configs (LRA/models/yoso-v1-32/config.json, `hash_code_len`) use 11 for
ListOps (2000 tokens) and 12 for Text and Retrieval (4000 tokens).

Masks: every kind (key padding `[B, M]` or any 4-D mask broadcastable to `[B, H, N, M]`), applied
to the weights: a masked pair gets w = 0. A query whose every key is masked returns zeros. The
authors also zero the rows of padded queries; here a padded query attends normally (its output
is unused). The authors' optional value convolution (`conv_window`) is not in their YOSO LRA
configs and is not implemented.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from attention import cost, masks, registry
from attention.softmax import check_qkv

__all__ = ["apply", "flops", "weights"]

GRADS = ("surrogate", "exact")
_EDGE = 1e-6  # exact gradient: x is clipped to [-1 + _EDGE, 1 - _EDGE] on the gradient path
_QUERY_BLOCK = 512  # queries per block: the weights are formed (and recomputed) block by block


def _unit(x, eps: float = 1e-12):
    """x / max(|x|, eps) over the last axis (torch.nn.functional.normalize)."""
    return x * jax.lax.rsqrt(jnp.maximum(jnp.sum(x * x, -1, keepdims=True), eps * eps))


def _collision(x, tau: int):
    return (1.0 - jnp.arccos(x) / jnp.pi) ** tau


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _surrogate(x, tau: int):
    """w = collision(clip(x)) with d w / d x := (tau / 2) w (the authors' bounded gradient);
    the only residual is w, so the memory is that of a softmax's probabilities."""
    return _collision(jnp.clip(x, -1.0, 1.0), tau)


def _surrogate_fwd(x, tau):
    w = _surrogate(x, tau)
    return w, w


def _surrogate_bwd(tau, w, g):
    return (g * w * (0.5 * tau),)


_surrogate.defvjp(_surrogate_fwd, _surrogate_bwd)


def weights(q, k, tau: int, grad: str = "surrogate"):
    """The expected collision probabilities w `[B, H, N, M]` of q `[B, N, H, Dk]`,
    k `[B, M, H, Dk]` (accumulation dtype), with the gradient `grad` says."""
    x = jnp.einsum("bnhd,bmhd->bhnm", _unit(q), _unit(k))
    if grad == "surrogate":
        return _surrogate(x, tau)
    value = jax.lax.stop_gradient(_collision(jnp.clip(x, -1.0, 1.0), tau))
    inner = _collision(jnp.clip(x, -1.0 + _EDGE, 1.0 - _EDGE), tau)
    return value + (inner - jax.lax.stop_gradient(inner))


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    tau: int = 10,
    grad: str = "surrogate",
):
    """YOSO-E attention.

    Args:
      params: unused (no parameters); `{}`.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: boolean, broadcastable to `[B, H, N, M]`, or key padding `[B, M]`; True = attend.
      key, train: unused (deterministic).
      tau: hash length (the exponent of the collision probability).
      grad: "surrogate" (the authors' bounded gradient) or "exact".

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`, each row of unit l2 norm (or zero);
      computed in float32 (float64 for float64 inputs).
    """
    del params, key, train
    check_qkv(q, k, v)
    _check({"tau": tau, "grad": grad}, None)
    b, n, h, _ = q.shape
    m = k.shape[1]
    acc_t = jnp.promote_types(q.dtype, jnp.float32)
    qq, kk, vv = q.astype(acc_t), k.astype(acc_t), v.astype(acc_t)
    if mask is not None:
        masks.as_4d(mask, b, h, n, m)  # validation (dtype, shape)
        mask = jnp.asarray(mask)
        mask = mask[:, None, None, :] if mask.ndim == 2 else mask
    c = min(_QUERY_BLOCK, n)
    nb = -(-n // c)
    per_query = mask is not None and mask.shape[2] != 1

    @jax.checkpoint  # the backward pass recomputes a block's weights: O(c M) live memory
    def block(q_blk, mask_blk):
        w = weights(q_blk, kk, tau, grad)  # [B, H, c, M]
        if mask_blk is not None:
            w = jnp.where(mask_blk, w, 0.0)
        return _unit(jnp.einsum("bhnm,bmhe->bnhe", w, vv))

    q_blocks = jnp.pad(qq, ((0, 0), (0, nb * c - n), (0, 0), (0, 0)))
    q_blocks = jnp.moveaxis(q_blocks.reshape(b, nb, c, h, -1), 1, 0)
    if per_query:
        m_blocks = jnp.pad(mask, ((0, 0), (0, 0), (0, nb * c - n), (0, 0)), constant_values=True)
        shape = m_blocks.shape
        m_blocks = jnp.moveaxis(m_blocks.reshape(*shape[:2], nb, c, shape[3]), 2, 0)
        out = jax.lax.map(lambda xs: block(*xs), (q_blocks, m_blocks))
    else:
        out = jax.lax.map(lambda x: block(x, mask), q_blocks)
    out = jnp.moveaxis(out, 0, 1).reshape(b, nb * c, h, -1)[:, :n]
    return out.astype(v.dtype)


def _check(hp, num_tokens) -> None:
    del num_tokens
    tau = hp["tau"]
    if isinstance(tau, bool) or not isinstance(tau, int) or tau < 1:
        raise ValueError(f"yoso: tau={tau!r} must be an integer >= 1 (hash length; LRA: 10-12)")
    if hp["grad"] not in GRADS:
        raise ValueError(f"yoso: grad={hp['grad']!r} must be one of {', '.join(GRADS)}")


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # q^.k^ 2·n·m·h·dk and w V 2·n·m·h·dv. Per weight: clip 2, 1 - arccos/pi 2, the power
    # (repeated squaring: about 2 log2 tau), the mask select; unit norms of q, k and the
    # output (3 per element). (arccos is a transcendental.)
    scores = c.n * c.m * c.h
    power = 2 * max(1, int(hp["tau"]).bit_length() - 1)
    per = 2 + 2 + power + c.masked
    ew = scores * per + 3 * (c.n + c.m) * c.h * c.dk + 3 * c.n * c.h * c.dv
    return 2 * scores * (c.dk + c.dv), ew


registry.register(
    "yoso",
    apply=apply,
    check=_check,
    flops=flops,
    defaults={"tau": 10, "grad": "surrogate"},
    doc="YOSO-E: expected LSH collision weights (1 - arccos(q.k)/pi)^tau, l2-normalised output "
    "(Zeng et al. 2021)",
)
