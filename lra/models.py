"""The LRA sequence classifier: token embedding, optional CLS token, the shared pre-LN encoder,
pooling and the LRA classifier head. Token id 0 is padding (masked out of attention and
pooling); the CLS token is always attended."""

from __future__ import annotations

import jax.numpy as jnp
from flax import nnx

from core import layers

__all__ = ["SequenceClassifier"]


class SequenceClassifier(nnx.Module):
    def __init__(
        self,
        *,
        vocab_size: int,
        num_classes: int,
        max_len: int,
        model_cfg,
        attention_cfg,
        rngs: nnx.Rngs,
    ):
        m = model_cfg
        self.pool_mode = m.pool
        self.embed = nnx.Embed(
            vocab_size, m.dim, embedding_init=nnx.initializers.normal(1.0), rngs=rngs
        )
        if m.pool == "cls":
            self.cls = nnx.Param(jnp.zeros((1, 1, m.dim)))  # zero-initialised, as LRA
        self.encoder = layers.TransformerEncoder(
            num_layers=m.num_layers,
            dim=m.dim,
            num_heads=m.num_heads,
            qkv_dim=m.qkv_dim,
            mlp_dim=m.mlp_dim,
            dropout_rate=m.dropout,
            attention_cfg=attention_cfg,
            max_len=max_len + (m.pool == "cls"),
            positions=m.positions,
            dtype=jnp.dtype(m.dtype),
            rngs=rngs,
        )
        self.head = layers.ClassifierHead(m.dim, m.mlp_dim, num_classes, rngs=rngs)

    def encode(self, tokens, *, train: bool = False, key=None):
        """tokens: `[B, N]` ints (0 = pad) -> pooled `[B, dim]`."""
        tokens = tokens.astype(jnp.int32)
        mask = tokens != 0
        x = self.embed(tokens)
        if self.pool_mode == "cls":
            cls = jnp.broadcast_to(self.cls[...], (x.shape[0], 1, x.shape[-1])).astype(x.dtype)
            x = jnp.concatenate([cls, x], axis=1)
            mask = jnp.concatenate([jnp.ones((x.shape[0], 1), bool), mask], axis=1)
        x = self.encoder(x, mask=mask, train=train, key=key)
        return layers.pool(x, mask, self.pool_mode)

    def __call__(self, tokens, *, train: bool = False, key=None):
        """tokens `[B, N]` -> logits `[B, num_classes]` (float32)."""
        return self.head(self.encode(tokens, train=train, key=key)).astype(jnp.float32)
