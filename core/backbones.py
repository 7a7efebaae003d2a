"""Backbones by name: one registry, one signature, positions inside.

    encoder = backbones.build(config.model.encoder, model_cfg=config.model,
                              attention_cfg=config.attention, max_len=n, rngs=rngs)
    y = encoder(x, mask=mask, train=train, key=key)   # x [B, N, dim] embedded -> [B, N, dim]

A backbone is built from the model section (`num_layers`, `dim`, `qkv_dim`, `num_heads`,
`mlp_dim`, `dropout`, `positions`, `dtype`, and its own fields), the attention section (any
registered mechanism) and the longest sequence it will see (CLS token included); it adds its
own positions. Domains register theirs (`@backbones.register("swin")`); an unknown name is a
user error listing the known ones.

Registered here:
  transformer  the pre-LN Transformer encoder of LRA (`core.layers.TransformerEncoder`),
               sinusoidal, learned or no positions
  samsa        SAMSA's pre-RMSNorm blocks with one shared zero-initialised residual scale and
               drop-path (`core.samsa_block.SAMSAEncoder`, SAMSA Table 8), sinusoidal positions
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp

from core import errors, layers, samsa_block

__all__ = ["register", "build", "names"]

_REGISTRY: dict[str, Callable] = {}


def register(name: str):
    """Decorator registering `factory(*, model_cfg, attention_cfg, max_len, rngs) -> module`."""

    def deco(factory):
        if name in _REGISTRY:
            raise ValueError(f"backbone {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return deco


def names() -> list[str]:
    return sorted(_REGISTRY)


def build(name: str, *, model_cfg, attention_cfg, max_len: int, rngs):
    if name not in _REGISTRY:
        raise errors.ConfigError(
            f"config.model.encoder={name!r}: unknown backbone; known: {', '.join(names())}"
        )
    return _REGISTRY[name](
        model_cfg=model_cfg, attention_cfg=attention_cfg, max_len=max_len, rngs=rngs
    )


@register("transformer")
def transformer(*, model_cfg, attention_cfg, max_len: int, rngs):
    m = model_cfg
    if m.get("drop_path"):
        raise errors.ConfigError(
            f"config.model.drop_path={m.drop_path}: stochastic depth is a field of the samsa "
            "encoder; set it to 0.0 with encoder='transformer'"
        )
    return layers.TransformerEncoder(
        num_layers=m.num_layers,
        dim=m.dim,
        num_heads=m.num_heads,
        qkv_dim=m.qkv_dim,
        mlp_dim=m.mlp_dim,
        dropout_rate=m.dropout,
        attention_cfg=attention_cfg,
        max_len=max_len,
        positions=m.positions,
        dtype=jnp.dtype(m.dtype),
        rngs=rngs,
    )


@register("samsa")
def samsa(*, model_cfg, attention_cfg, max_len: int, rngs):
    m = model_cfg
    if m.positions != "sinusoidal":
        raise errors.ConfigError(
            f"config.model.positions={m.positions!r}: the samsa encoder uses sinusoidal "
            "positions (SAMSA Table 8)"
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
        positions=True,
        dtype=jnp.dtype(m.dtype),
        rngs=rngs,
    )
