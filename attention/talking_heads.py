"""Talking-heads attention (Shazeer et al. 2020, arXiv 2003.02436), as CaiT uses it.

Softmax attention whose heads exchange information twice: a learned linear map across the head
axis of the logits before the softmax, and another across the head axis of the probabilities
after it::

    L[g] = sum_h (Q_h K_h^T * scale + B_h) P_l[h, g] + b_l[g]         (pre-softmax mixing)
    A[g] = sum_h softmax(L)[h] P_w[h, g] + b_w[g]                     (post-softmax mixing)
    out[g] = A[g] V_g

CaiT (Touvron et al. 2021, "Going deeper with Image Transformers", `Attention_talking_head`;
the GFSA authors' `Image/gfsa_cait.py` is the same code) uses H x H maps with biases
(`nn.Linear(num_heads, num_heads)`), initialised by the model's `_init_weights`: weights
truncated normal(0.02), biases zero. `init` follows that (the maps start near zero, so the first
logits are near zero and the first attention near uniform, as in CaiT).

Masks: masked pairs are excluded after the pre-softmax mixing (the mixed logits of a masked
pair are never used), have probability zero going into the post-softmax mixing, and are zeroed
again after it (its bias and other heads' weights would otherwise reach them); a query whose
keys are all masked in every head outputs zeros. The paper and CaiT have no
masks; this is our choice.

`probabilities` (the explicit `[B, H, N, M]` attention matrix, optionally with talking heads)
also serves GFSA, whose CaiT variant filters the mixed matrix (`gfsa` with
`talking_heads=True`). No fused kernel applies: the matrix is formed explicitly.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attention import cost, masks, registry
from attention.kernels import check_qkv

__all__ = ["PARAMS", "init", "init_mixing", "mix", "probabilities", "apply", "flops"]

# Key of the mixing maps in a mechanism's params (this mechanism's and GFSA's).
PARAMS = "talking_heads"
_trunc_normal = jax.nn.initializers.truncated_normal(stddev=0.02)


def init_mixing(key, num_heads: int) -> dict:
    """The two head-mixing maps of one layer: `{"pre_w": [H, H], "pre_b": [H], "post_w":
    [H, H], "post_b": [H]}` float32 (`w[h, g]` maps input head h to output head g), CaiT's
    initialisation (truncated normal(0.02) weights, zero biases)."""
    k_pre, k_post = jax.random.split(key)
    h = int(num_heads)
    return {
        "pre_w": _trunc_normal(k_pre, (h, h), jnp.float32),
        "pre_b": jnp.zeros((h,), jnp.float32),
        "post_w": _trunc_normal(k_post, (h, h), jnp.float32),
        "post_b": jnp.zeros((h,), jnp.float32),
    }


def mix(x, w, b):
    """`[B, H, N, M]` -> `[B, H, N, M]`: `sum_h x[:, h] w[h, g] + b[g]` for every output head g."""
    w = jnp.asarray(w).astype(x.dtype)
    b = jnp.asarray(b).astype(x.dtype)
    return jnp.einsum("bhnm,hg->bgnm", x, w) + b[None, :, None, None]


def _check_mixing(mixing, num_heads: int, name: str) -> None:
    for label, shape in (
        ("pre_w", (num_heads, num_heads)),
        ("pre_b", (num_heads,)),
        ("post_w", (num_heads, num_heads)),
        ("post_b", (num_heads,)),
    ):
        have = getattr(mixing.get(label), "shape", None)
        if have != shape:
            raise ValueError(
                f"{name}: params[{PARAMS!r}][{label!r}] has shape {have}; expected {shape} "
                f"for H = {num_heads} heads (create them with init_mixing(key, H))"
            )


def probabilities(q, k, *, mask, bias, scale, dropout_rate, train, key, mixing=None, name=""):
    """The attention matrix `[B, H, N, M]` (float32, float64 for float64 inputs) and the 4-D
    mask (or None): masked softmax of `Q K^T * scale + bias`, with the talking-heads maps of
    `mixing` around the softmax when given, then attention dropout when training."""
    b, n, h, dk = q.shape
    m = k.shape[1]
    scale = dk**-0.5 if scale is None else scale
    acc = jnp.promote_types(q.dtype, jnp.float32)
    logits = jnp.einsum("bnhd,bmhd->bhnm", q, k, preferred_element_type=acc) * scale
    if bias is not None:
        logits = logits + jnp.asarray(bias).astype(acc)
    if mixing is not None:
        _check_mixing(mixing, h, name)
        logits = mix(logits, mixing["pre_w"], mixing["pre_b"])
    mask4 = masks.as_4d(mask, b, h, n, m)
    if mask4 is not None:
        logits = jnp.where(mask4, logits, jnp.finfo(acc).min)
    probs = jax.nn.softmax(logits, axis=-1)
    if mask4 is not None:
        # Fully masked rows: softmax of an all-min row is uniform, not zero.
        probs = jnp.where(mask4, probs, 0.0)
    if mixing is not None:
        probs = mix(probs, mixing["post_w"], mixing["post_b"])
        if mask4 is not None:  # the post-mixing bias, and other heads' weights, reach them
            probs = jnp.where(mask4, probs, 0.0)
    if train and dropout_rate > 0.0:
        keep = jax.random.bernoulli(key, 1.0 - dropout_rate, probs.shape)
        probs = jnp.where(keep, probs / (1.0 - dropout_rate), 0.0)
    return probs, mask4


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
) -> dict:
    """`{PARAMS: init_mixing(key, num_heads)}`."""
    del head_dim, model_dim, max_len, layer_index, num_layers
    return {PARAMS: init_mixing(key, num_heads)}


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
    dropout_rate: float = 0.0,
    scale: float | None = None,
):
    """Talking-heads attention.

    Args:
      params: `init` output, `{PARAMS: {"pre_w", "pre_b", "post_w", "post_b"}}`.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: boolean, broadcastable to `[B, H, N, M]`, or key padding `[B, M]`; True = attend.
      key: PRNG key for attention dropout (needed when `train` and `dropout_rate > 0`).
      train: enables attention dropout (on the mixed probabilities, as CaiT).
      bias: optional additive logit bias broadcastable to `[B, H, N, M]`, added before the
        pre-softmax mixing.
      dropout_rate: dropout on the attention probabilities during training.
      scale: logit scale; default `Dk ** -0.5`.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`, computed in float32 (float64 for float64 inputs).
    """
    check_qkv(q, k, v)
    if train and dropout_rate > 0.0 and key is None:
        raise ValueError("talking_heads: train=True with dropout_rate > 0 needs `key`")
    if PARAMS not in params:
        raise ValueError(
            f"talking_heads: params lack {PARAMS!r}; create them with "
            "attention.get('talking_heads').init(key, num_heads=H, head_dim=D)"
        )
    probs, _ = probabilities(
        q,
        k,
        mask=mask,
        bias=bias,
        scale=scale,
        dropout_rate=dropout_rate,
        train=train,
        key=key,
        mixing=params[PARAMS],
        name="talking_heads",
    )
    out = jnp.einsum("bhnm,bmhd->bnhd", probs, v.astype(probs.dtype))
    return out.astype(v.dtype)


def mixing_flops(c: cost.Call) -> tuple[float, float]:
    """`(matmul, elementwise)` FLOPs of the two head-mixing maps: an H x H map on every score
    entry, `2 * (2 n m h h)`, and its bias adds, `2 n m h`."""
    scores = c.n * c.m * c.h
    return 2 * 2 * scores * c.h, 2 * scores


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    del hp
    # Softmax attention's QK^T and PV, plus the two mixing maps.
    scores = c.n * c.m * c.h
    mm, ew = mixing_flops(c)
    return 2 * scores * (c.dk + c.dv) + mm, cost.softmax_elementwise(c, scores) + ew


registry.register(
    "talking_heads",
    apply=apply,
    init=init,
    flops=flops,
    defaults={"dropout_rate": 0.0, "scale": None},
    doc="talking-heads softmax attention (CaiT): H x H head mixing before and after the softmax",
    inputs=("bias",),
)
