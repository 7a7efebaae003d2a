"""Backbones by name: one registry, one signature, positions inside.

    encoder = backbones.build(config.model.encoder, model_cfg=config.model,
                              attention_cfg=config.attention, max_len=n, rngs=rngs)
    y = encoder(x, mask=mask, train=train, key=key, **inputs)  # [B, N, dim] -> [B, N, dim]
    backbones.count_flops(config.model.encoder, encoder, tally, n=n, masked=True)

Every backbone is called as `encoder(x, *, mask, train, key, **inputs)` on embedded inputs,
`inputs` being per-call attention inputs it hands to every attention layer (SSA's `subsample`,
point coordinates).

A backbone is built from the model section (`num_layers`, `dim`, `qkv_dim`, `num_heads`,
`mlp_dim`, `dropout`, `positions`, `dtype`, and its own fields), the attention section (any
registered mechanism) and the longest sequence it will see (CLS token included); it adds its
own positions. Domains register theirs (`@backbones.register("swin", flops=swin_flops)`); an
unknown name is a user error listing the known ones.

A backbone's FLOP formula, registered with it, is `flops(encoder, tally, *, n, masked)`: it walks
the built `encoder` and adds the forward FLOPs of one sequence of `n` tokens to `tally` (a
`attnbench.nn.flops.Tally`), claiming each parameter's component; `attnbench.nn.flops.count` calls
it through the model's own `count_flops`.

Registered here:
  transformer  the pre-LN Transformer encoder of LRA (`attnbench.nn.layers.TransformerEncoder`),
               sinusoidal, learned or no positions
  samsa        SAMSA's pre-RMSNorm blocks with one shared zero-initialised residual scale and
               drop-path (`attnbench.nn.samsa_block.SAMSAEncoder`, SAMSA Table 8), sinusoidal
               positions (LRA) or none (point clouds)
"""

from __future__ import annotations

import math
from collections.abc import Callable

from attention import cost
from attnbench import errors, registry
from attnbench.nn import layers, samsa_block

__all__ = [
    "register",
    "build",
    "names",
    "count_flops",
    "attention_flops",
    "encoder_block_flops",
    "norm_flops",
    "mlp_flops",
    "gelu_flops",
    "gelu_name",
    "transformer_kwargs",
]


class UnknownBackboneError(errors.ConfigError, errors.UnknownNameError):
    """A `config.model.encoder` that names no registered backbone."""


# name -> (factory, FLOP formula or None)
_BACKBONES: registry.Registry[tuple[Callable, Callable | None]] = registry.Registry(
    "backbone",
    error=UnknownBackboneError,
    message=lambda name, known: (
        f"config.model.encoder={name!r}: unknown backbone; known: {', '.join(known)}"
    ),
)


def register(name: str, *, flops: Callable | None = None):
    """Decorator registering `factory(*, model_cfg, attention_cfg, max_len, rngs) -> module`,
    with its FLOP formula `flops(encoder, tally, *, n, masked)` (see the module docstring;
    optional: without one, FLOP counts report the backbone's work as unknown)."""

    def deco(factory):
        _BACKBONES.register(name, (factory, flops))
        return factory

    return deco


def names() -> list[str]:
    return _BACKBONES.names()


def build(name: str, *, model_cfg, attention_cfg, max_len: int, rngs):
    factory, _ = _BACKBONES.get(name)
    return factory(model_cfg=model_cfg, attention_cfg=attention_cfg, max_len=max_len, rngs=rngs)


def count_flops(name: str, encoder, tally, *, n: int, masked: bool) -> None:
    """Adds the forward FLOPs of backbone `encoder` (built by `build(name, ...)`) on one
    sequence of `n` tokens to `tally` (`attnbench.nn.flops.Tally`); `masked`: a key-padding mask is
    passed. A backbone registered without a formula adds NaN (unknown) to every component an
    encoder fills."""
    _, formula = _BACKBONES.get(name)
    if formula is None:
        for component in ("embedding", "attention", "projections", "mlp", "norms/other"):
            tally.add(component, math.nan, math.nan)
        return
    formula(encoder, tally, n=n, masked=masked)


# --------------------------------------------------------------------------- FLOP formulas


def norm_flops(norm, tally, *, n: int, ops: int) -> None:
    """A norm (`ops` elementwise FLOPs per feature) on `n` tokens, claiming its scales."""
    tally.claim("norms/other", norm)
    tally.add("norms/other", elementwise=ops * n * norm.num_features)


def attention_flops(
    attn: layers.Attention, tally, *, n: int, layer_index: int, masked: bool, calls: int = 1
):
    """`calls` calls of a `layers.Attention` on `n` tokens each (Swin: one per window):
    q/k/v/out projections (no q/k when the mechanism ignores them) and the mechanism's own
    formula."""
    tally.claim("attention", attn.mechanism_params)
    projections = (attn.query, attn.key) if attn.mechanism.needs_qk else ()
    for proj in (*projections, attn.value, attn.out):
        tally.linear("projections", proj, calls * n)
    dim, heads, head_dim = attn.value.kernel.shape
    for _ in range(calls):
        tally.mechanism(
            attn.mechanism,
            n=n,
            m=n,
            heads=heads,
            head_dim=head_dim,
            model_dim=dim,
            layer_index=layer_index,
            masked=masked,
        )


def mlp_flops(mlp: layers.MlpBlock, tally, *, n: int) -> None:
    """A `layers.MlpBlock` on `n` tokens."""
    tally.linear("mlp", mlp.fc1, n)
    tally.linear("mlp", mlp.fc2, n)
    tally.add("mlp", elementwise=gelu_flops(mlp) * n * mlp.fc1.out_features)


def gelu_flops(mlp: layers.MlpBlock) -> int:
    """Elementwise FLOPs of one GELU of `mlp` (`attention.cost`)."""
    return cost.GELU_TANH if mlp.approximate else cost.GELU_ERF


def _transformer_flops(encoder: layers.TransformerEncoder, tally, *, n: int, masked: bool):
    dim = encoder.norm.num_features
    if encoder.positions == "learned":
        tally.claim("embedding", encoder.pos_embedding)
    if encoder.positions != "none":
        tally.add("embedding", elementwise=n * dim)  # positions added
    for i, block in enumerate(encoder.blocks):
        encoder_block_flops(block, tally, n=n, layer_index=i, masked=masked)
    norm_flops(encoder.norm, tally, n=n, ops=cost.LAYERNORM)


def encoder_block_flops(
    block: layers.EncoderBlock, tally, *, n: int, layer_index: int, masked: bool
) -> None:
    """A `layers.EncoderBlock` on `n` tokens: norms, residuals, LayerScale, attention, MLP."""
    dim = block.ln1.num_features
    norm_flops(block.ln1, tally, n=n, ops=cost.LAYERNORM)
    norm_flops(block.ln2, tally, n=n, ops=cost.LAYERNORM)
    tally.add("norms/other", elementwise=2 * n * dim)  # residual adds
    if block.layer_scale is not None:
        tally.claim("norms/other", block.gamma1)
        tally.claim("norms/other", block.gamma2)
        tally.add("norms/other", elementwise=2 * n * dim)  # LayerScale products
    attention_flops(block.attn, tally, n=n, layer_index=layer_index, masked=masked)
    mlp_flops(block.mlp, tally, n=n)


def _samsa_flops(encoder: samsa_block.SAMSAEncoder, tally, *, n: int, masked: bool):
    dim = encoder.norm.num_features
    tally.claim("norms/other", encoder.residual_scale)
    if encoder.positions:
        tally.add("embedding", elementwise=n * dim)  # positions added
    for i, block in enumerate(encoder.blocks):
        norm_flops(block.norm1, tally, n=n, ops=cost.RMSNORM)
        norm_flops(block.norm2, tally, n=n, ops=cost.RMSNORM)
        tally.add("norms/other", elementwise=4 * n * dim)  # residual scales and adds
        attention_flops(block.attn, tally, n=n, layer_index=i, masked=masked)
        mlp_flops(block.mlp, tally, n=n)
    norm_flops(encoder.norm, tally, n=n, ops=cost.RMSNORM)


@register("transformer", flops=_transformer_flops)
def transformer(*, model_cfg, attention_cfg, max_len: int, rngs):
    """The pre-LN encoder; besides the LRA fields, the optional vision fields `drop_path`
    (with `drop_path_decay`, linear or uniform), `layer_scale` (None = off), `qkv_bias` and
    `out_bias` (default off, as LRA) and `gelu` (default "tanh", as LRA; "erf" exact)."""
    return layers.TransformerEncoder(
        **transformer_kwargs(model_cfg, attention_cfg=attention_cfg, max_len=max_len, rngs=rngs)
    )


def transformer_kwargs(model_cfg, *, attention_cfg, max_len: int, rngs) -> dict:
    """The `layers.TransformerEncoder` arguments the `transformer` backbone reads from a model
    section (shared with the backbones built on that encoder, e.g. `transformer_contranorm`)."""
    m = model_cfg
    return dict(
        num_layers=m.num_layers,
        dim=m.dim,
        num_heads=m.num_heads,
        qkv_dim=m.qkv_dim,
        mlp_dim=m.mlp_dim,
        dropout_rate=m.dropout,
        attention_cfg=attention_cfg,
        max_len=max_len,
        positions=m.positions,
        dtype=layers.compute_dtype(m.dtype),
        drop_path=m.get("drop_path", 0.0),
        drop_path_decay=m.get("drop_path_decay", "linear"),
        layer_scale=m.get("layer_scale", None),
        qkv_bias=m.get("qkv_bias", False),
        out_bias=m.get("out_bias", False),
        gelu=gelu_name(m),
        rngs=rngs,
    )


def gelu_name(model_cfg) -> str:
    """`config.model.gelu` ("tanh" when absent, as LRA), checked: a ConfigError names it."""
    name = model_cfg.get("gelu", "tanh")
    if name not in layers.GELUS:
        raise errors.ConfigError(
            f"config.model.gelu={name!r}: unknown; known: {', '.join(layers.GELUS)}"
        )
    return name


@register("samsa", flops=_samsa_flops)
def samsa(*, model_cfg, attention_cfg, max_len: int, rngs):
    m = model_cfg
    if m.positions not in ("sinusoidal", "none"):
        raise errors.ConfigError(
            f"config.model.positions={m.positions!r}: the samsa encoder uses sinusoidal "
            "positions (SAMSA Table 8, LRA) or none (point clouds: unordered points)"
        )
    return samsa_block.SAMSAEncoder(
        m.num_layers,
        m.dim,
        m.num_heads,
        m.mlp_dim,
        m.get("drop_path", 0.0),
        attention_cfg,
        qkv_dim=m.qkv_dim,
        dropout_rate=m.dropout,
        max_len=max_len,
        positions=m.positions == "sinusoidal",
        dtype=layers.compute_dtype(m.dtype),
        rngs=rngs,
    )
