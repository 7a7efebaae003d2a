"""ContraNorm (Guo, Wang, Du and Wang, "ContraNorm: A Contrastive Learning Perspective on
Oversmoothing and Beyond", ICLR 2023, arXiv:2303.06562): a normalisation layer that pushes the
tokens of a sequence apart, a gradient step on the uniformity term of a contrastive loss.

    y = contranorm(x, scale=0.01, mask=padding)       # the update alone, [B, N, D] -> [B, N, D]
    norm = ContraNorm.wrap(nnx.LayerNorm(D, rngs=rngs), scale=0.01)
    y = norm(x, mask=padding)                          # LayerNorm(update(x)), the ViT drop-in

The update, for the tokens x_1..x_N of one sequence (rows of X, `[N, D]`):

    X_hat = X / max(||X||_row, 1e-12)                  (cosine similarities, F.normalize)
    A     = softmax_row(X_hat X_hat^T / tau)            ([N, N], each row sums to 1)
    X'    = X - s * A X                                 (`identity=False`)
    X'    = (1 + s) X - s * A X                         (`identity=True`)

`s` is the scale (the step size of the paper's gradient step on the uniformity loss, its
Eq. 6), `tau` the temperature. `dual=True` is the ViT code's `--dual-norm`: A = softmax_row(S) +
softmax_col(S) with S = X_hat X_hat^T / tau (`softmax(sim, dim=2) + softmax(sim, dim=1)`).
ContraNorm has no parameters of its own; the LayerNorm that follows it (its own in ViTs, the
block's in BERT) has the usual ones.

The update is written from the authors' code (github.com/PKU-ML/ContraNorm, read for these
facts), which is what GFSA's authors ran "with the recommended hyperparameters in Guo et al."
(GFSA, arXiv 2312.04234, App. K.1, M.6); of the paper we use the scale's name and role (s of its
Eq. 6, a gradient step) and its GLUE setup (s selected per task among 0.005, 0.01, 0.05, 0.1,
0.2). The code's variants, and our defaults:
  * Similarities: the code normalises the rows before the product (`F.normalize(x, dim=2)`, so
    A is a softmax of cosine similarities) and multiplies the *unnormalised* X by A. So do we.
  * BERT (`BERT_gleu/transformers/models/bert/modeling_bert.py`, class ContraNorm): no
    temperature (tau = 1; the config's `tau` is never read), the identity form (1 + s) X - s A X.
    ALBERT (`.../albert/modeling_albert.py`): X - s A X. ViT (`ViT_imagenet/models.py`):
    X - s A X by default (`--identity 0`), tau = `--temp` (1.0), `--dual-norm 0`, followed by
    its own LayerNorm(eps=1e-6) that replaces every LayerNorm of the ViT (`main.py`:
    `norm_layer=partial(ContraNorm, ...)` for timm's VisionTransformer). Before a LayerNorm the
    identity form is the plain form with s / (1 + s) (a LayerNorm ignores a positive factor up
    to its epsilon), so the two differ only in what a given `s` means.
  * Not reproduced from the ViT code's options, all off by default there: `learnable` (a
    per-channel learned s), `positive` (s = exp(param)), `pre_norm` (the update applied to
    X_hat instead of X).
  * `s = 0` is the identity (the code returns x untouched, or applies only the LayerNorm).

Padding (our choice; the reference code has no mask: in BERT its similarity softmax runs over
the padded positions too): with a key-padding mask `[B, N]` (True = real token) the similarity
softmax of a real token runs over the real tokens only (the column softmax of `dual` over the
real queries only), and a padded token is left unchanged (its update is zero; the LayerNorm of
`ContraNorm` still applies to it). So the output at real tokens does not depend on the padded
positions' contents, and a padded token's output stays finite and is never mixed into a real
one. A row with no real token is returned unchanged.

Precision: norms, similarities and the softmax in float32 (float64 for float64 inputs); the result
in the input's dtype.

Registered backbone `transformer_contranorm` (`attnbench.nn.backbones`): the pre-LN encoder of
`attnbench.nn.layers.TransformerEncoder` with every LayerNorm (each block's two and the final
one) replaced by `ContraNorm` around that same LayerNorm, as Guo et al.'s ViT; the model section's
`contranorm_scale`, `contranorm_temperature` and `contranorm_dual` set it. Its inputs are never
padded (images); a mask is refused.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from attention import cost
from attnbench import errors
from attnbench.nn import backbones, layers

__all__ = [
    "check",
    "contranorm",
    "mean_cosine_similarity",
    "ContraNorm",
    "ContraNormEncoder",
    "update_flops",
]

_EPS = 1e-12  # torch.nn.functional.normalize's default eps


def check(scale, temperature) -> None:
    """Raises ValueError unless `scale` is a finite number >= 0 and `temperature` one > 0."""
    for name, value, low in (("scale", scale, 0.0), ("temperature", temperature, None)):
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or (value < low if low is not None else value <= 0):
            bound = ">= 0" if low is not None else "> 0"
            raise ValueError(f"ContraNorm {name}={value!r}: must be a finite number {bound}")


def _unit_rows(xf):
    """Rows divided by max(norm, 1e-12), as F.normalize; written as sqrt(max(|x|^2, eps^2)) so
    that an all-zero row has a zero gradient instead of sqrt's infinite one at 0."""
    sq = jnp.sum(xf * xf, axis=-1, keepdims=True)
    return xf / jnp.sqrt(jnp.maximum(sq, _EPS * _EPS))


def _softmax(logits, valid, axis: int):
    """Softmax along `axis` over the `valid` entries; zero where invalid or nothing is valid."""
    top = jnp.max(jnp.where(valid, logits, -jnp.inf), axis=axis, keepdims=True)
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    e = jnp.where(valid, jnp.exp(logits - top), 0.0)
    z = jnp.sum(e, axis=axis, keepdims=True)
    return e / jnp.where(z > 0, z, 1.0)


def contranorm(
    x,
    *,
    scale: float,
    temperature: float = 1.0,
    mask=None,
    dual: bool = False,
    identity: bool = False,
):
    """The ContraNorm update of `x [..., N, D]` (the module docstring), without a LayerNorm.

    Args:
      scale: s >= 0; 0 returns `x` itself.
      temperature: tau > 0, dividing the cosine similarities inside the softmax.
      mask: key-padding mask `[..., N]`, True (or nonzero) for real tokens; None: all real.
      dual: the dual normalisation softmax_row + softmax_col.
      identity: (1 + s) X - s A X instead of X - s A X.

    Returns `[..., N, D]` in `x`'s dtype.
    """
    check(scale, temperature)
    if scale == 0:
        return x
    x = jnp.asarray(x)
    xf = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    if xf.ndim < 2:
        raise ValueError(f"contranorm: x must be [..., N, D]; got shape {xf.shape}")
    unit = _unit_rows(xf)
    sim = jnp.einsum("...nd,...md->...nm", unit, unit) / temperature
    if mask is None:
        weights = jax.nn.softmax(sim, axis=-1)
        if dual:
            weights = weights + jax.nn.softmax(sim, axis=-2)
        real = None
    else:
        real = jnp.asarray(mask) != 0
        if real.shape != xf.shape[:-1]:
            raise ValueError(f"contranorm: mask {real.shape} does not match x {xf.shape[:-1]}")
        pair = real[..., :, None] & real[..., None, :]
        weights = _softmax(sim, pair, -1)
        if dual:
            weights = weights + _softmax(sim, pair, -2)
    neg = jnp.einsum("...nm,...md->...nd", weights, xf)
    step = (xf - neg) if identity else -neg
    if real is not None:
        step = jnp.where(real[..., None], step, 0.0)
    return (xf + scale * step).astype(jnp.asarray(x).dtype)


def mean_cosine_similarity(x, mask=None):
    """The mean pairwise cosine similarity of the tokens of each sequence, `[..., N, D]` ->
    `[...]`: over the pairs i < j of real tokens (the diagonal excluded), as Guo et al.'s
    `calculate_patch_sim` (BERT_gleu modeling_bert.py), which GFSA follows for its Fig. 2 (b)."""
    x = jnp.asarray(x)
    xf = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    unit = _unit_rows(xf)
    sim = jnp.einsum("...nd,...md->...nm", unit, unit)
    n = xf.shape[-2]
    upper = jnp.triu(jnp.ones((n, n), bool), 1)
    if mask is not None:
        real = jnp.asarray(mask) != 0
        upper = upper & real[..., :, None] & real[..., None, :]
    total = jnp.sum(jnp.where(upper, sim, 0.0), axis=(-2, -1))
    return total / jnp.maximum(jnp.sum(upper, axis=(-2, -1)), 1)


class ContraNorm(nnx.Module):
    """LayerNorm(contranorm(x)): Guo et al.'s ViT drop-in for a LayerNorm (`ViT_imagenet/
    models.py`), around an existing `nnx.LayerNorm` (its parameters, epsilon and dtype).

    Attributes: `norm` (the LayerNorm), `scale`, `temperature`, `dual`, `identity`, and
    `num_features` (the LayerNorm's, for FLOP formulas that read a norm's width).
    """

    def __init__(
        self,
        norm: nnx.LayerNorm,
        *,
        scale: float,
        temperature: float = 1.0,
        dual: bool = False,
        identity: bool = False,
    ):
        check(scale, temperature)
        self.norm = norm
        self.num_features = norm.num_features
        self.scale, self.temperature = float(scale), float(temperature)
        self.dual, self.identity = bool(dual), bool(identity)

    @classmethod
    def wrap(cls, norm: nnx.LayerNorm, **settings) -> ContraNorm:
        """`ContraNorm(norm, **settings)`: the same LayerNorm object, so that no random key is
        drawn and a model keeps every parameter it had (s = 0 is then the model itself)."""
        return cls(norm, **settings)

    def __call__(self, x, *, mask=None):
        y = contranorm(
            x,
            scale=self.scale,
            temperature=self.temperature,
            mask=mask,
            dual=self.dual,
            identity=self.identity,
        )
        return self.norm(y)


def update_flops(n: int, dim: int, *, dual: bool = False, identity: bool = False):
    """(matmul, elementwise) forward FLOPs of one `contranorm` update of `n` tokens of width
    `dim` (`attention.cost` conventions): the similarity and mixing products 2·n²·dim each; the
    row norms and normalisation 3·n·dim, the softmax(es) `cost.SOFTMAX` per score (+ n² for the
    dual sum), the update 2·n·dim (3 for the identity form)."""
    matmul = 4 * n * n * dim
    softmax = n * n * cost.SOFTMAX * (2 if dual else 1) + (n * n if dual else 0)
    return matmul, 3 * n * dim + softmax + (3 if identity else 2) * n * dim


class ContraNormEncoder(layers.TransformerEncoder):
    """`layers.TransformerEncoder` whose LayerNorms (`ln1`, `ln2` of every block and the final
    `norm`) are each wrapped in `ContraNorm` with the settings `contranorm` (scale, temperature,
    dual). Built from the same arguments, it has the same parameters, drawn from the same keys:
    with scale 0 it computes exactly what the plain encoder does."""

    def __init__(self, *, contranorm: dict, **kwargs):
        super().__init__(**kwargs)
        for block in self.blocks:
            block.ln1 = ContraNorm.wrap(block.ln1, **contranorm)
            block.ln2 = ContraNorm.wrap(block.ln2, **contranorm)
        self.norm = ContraNorm.wrap(self.norm, **contranorm)

    def __call__(self, x, *, mask=None, train: bool = False, key=None, **inputs):
        if mask is not None:
            raise ValueError(
                "transformer_contranorm takes unpadded inputs (images): its LayerNorms see no "
                "mask, so padded tokens would enter ContraNorm's similarity softmax; use an "
                "encoder without ContraNorm for padded sequences"
            )
        return super().__call__(x, mask=None, train=train, key=key, **inputs)


def _settings(model_cfg) -> dict:
    """The model section's ContraNorm fields, checked: a ConfigError names a bad one."""
    m = model_cfg
    s = dict(
        scale=m.get("contranorm_scale", None),
        temperature=m.get("contranorm_temperature", 1.0),
        dual=m.get("contranorm_dual", False),
    )
    if s["scale"] is None:
        raise errors.ConfigError(
            "config.model.encoder='transformer_contranorm' needs config.model.contranorm_scale "
            "(ContraNorm's s, e.g. 0.01)"
        )
    try:
        check(s["scale"], s["temperature"])
    except ValueError as e:
        raise errors.ConfigError(f"config.model: {e}") from None
    if not isinstance(s["dual"], bool):
        raise errors.ConfigError(
            f"config.model.contranorm_dual={s['dual']!r}: must be true or false"
        )
    return s


def _encoder_flops(encoder: ContraNormEncoder, tally, *, n: int, masked: bool):
    dim = encoder.norm.num_features
    if encoder.positions == "learned":
        tally.claim("embedding", encoder.pos_embedding)
    if encoder.positions != "none":
        tally.add("embedding", elementwise=n * dim)  # positions added
    norms = [encoder.norm]
    for i, block in enumerate(encoder.blocks):
        backbones.encoder_block_flops(block, tally, n=n, layer_index=i, masked=masked)
        norms += [block.ln1, block.ln2]
    backbones.norm_flops(encoder.norm, tally, n=n, ops=cost.LAYERNORM)
    for norm in norms:
        if norm.scale:
            matmul, elementwise = update_flops(n, dim, dual=norm.dual, identity=norm.identity)
            tally.add("norms/other", matmul, elementwise)


@backbones.register("transformer_contranorm", flops=_encoder_flops)
def transformer_contranorm(*, model_cfg, attention_cfg, max_len: int, rngs):
    """The `transformer` backbone (the same model-section fields) with ContraNorm around every
    LayerNorm: `contranorm_scale` (required), `contranorm_temperature` (1.0),
    `contranorm_dual` (false)."""
    kwargs = backbones.transformer_kwargs(
        model_cfg, attention_cfg=attention_cfg, max_len=max_len, rngs=rngs
    )
    return ContraNormEncoder(contranorm=_settings(model_cfg), **kwargs)
