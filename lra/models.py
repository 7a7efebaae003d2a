"""The LRA models: token embedding, optional CLS token, an encoder, pooling and the LRA heads.

The encoder is the backbone named by `model_cfg.encoder` (`attnbench.nn.backbones`):
"transformer", the LRA pre-LN Transformer with any registered attention (the LRA baselines,
Sliceformer, GFSA, SSA, ...), or "samsa", SAMSA's pre-RMSNorm encoder (SAMSA, arXiv 2408.05391,
Table 8) with the sinusoidal positions SAMSA used on LRA.

Token id 0 is padding (masked out of attention and pooling); the CLS token is always attended.

Each model counts its own forward FLOPs, `model.count_flops(tally)` (`attnbench.nn.flops.count`):
embedding lookup and CLS token (data movement, 0 FLOPs), the backbone's registered formula,
pooling and the head.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

# luna, mega, s4d: imported to register their sequence-model backbones
from attnbench.nn import backbones, layers, luna, mega, s4d  # noqa: F401

__all__ = ["SequenceEncoder", "SequenceClassifier", "DualEncoderClassifier"]


class SequenceEncoder(nnx.Module):
    """tokens `[B, N]` -> pooled `[B, dim]` float32.

    Precision (`model_cfg.dtype`, see `attnbench.nn.layers`): float32 embeddings (and CLS token),
    the backbone in the compute dtype, pooling in float32."""

    def __init__(self, *, vocab_size: int, max_len: int, model_cfg, attention_cfg, rngs):
        m = model_cfg
        self.pool_mode = m.pool
        self.backbone = m.encoder
        self.embed = nnx.Embed(
            vocab_size, m.dim, embedding_init=nnx.initializers.normal(1.0), rngs=rngs
        )
        if m.pool == "cls":
            self.cls = nnx.Param(jnp.zeros((1, 1, m.dim)))  # zero-initialised, as LRA
        n = max_len + (m.pool == "cls")
        self.length = n  # tokens the encoder sees
        self.encoder = backbones.build(
            m.encoder, model_cfg=m, attention_cfg=attention_cfg, max_len=n, rngs=rngs
        )

    def __call__(self, tokens, *, train: bool = False, key=None, **inputs):
        """`inputs`: per-call attention inputs for the backbone."""
        tokens = tokens.astype(jnp.int32)
        mask = tokens != 0
        x = self.embed(tokens)
        if self.pool_mode == "cls":
            cls = jnp.broadcast_to(self.cls[...], (x.shape[0], 1, x.shape[-1])).astype(x.dtype)
            x = jnp.concatenate([cls, x], axis=1)
            mask = jnp.concatenate([jnp.ones((x.shape[0], 1), bool), mask], axis=1)
        x = self.encoder(x, mask=mask, train=train, key=key, **inputs)  # compute dtype
        return layers.pool(x, mask, self.pool_mode)  # float32

    def count_flops(self, tally) -> None:
        """Forward FLOPs of one sequence at full length into `tally`
        (`attnbench.nn.flops.Tally`)."""
        tally.claim("embedding", self.embed)
        if self.pool_mode == "cls":
            tally.claim("embedding", self.cls)
        # Padding is masked (`__call__` always passes the mask), so the mechanisms count it.
        backbones.count_flops(self.backbone, self.encoder, tally, n=self.length, masked=True)
        if self.pool_mode in ("mean", "sum"):
            dim = self.embed.features
            tally.add("norms/other", 2 * self.length * dim, dim * (self.pool_mode == "mean"))


class SequenceClassifier(nnx.Module):
    """The LRA single-input classifier: encoder -> pool -> Dense(mlp) -> ReLU -> Dense(classes);
    the head computes in float32 on the float32 pooled features."""

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
        self.encoder = SequenceEncoder(
            vocab_size=vocab_size,
            max_len=max_len,
            model_cfg=model_cfg,
            attention_cfg=attention_cfg,
            rngs=rngs,
        )
        self.head = layers.ClassifierHead(model_cfg.dim, model_cfg.mlp_dim, num_classes, rngs=rngs)

    def __call__(self, tokens, *, train: bool = False, key=None, **inputs):
        """tokens `[B, N]` -> logits `[B, num_classes]` (float32)."""
        pooled = self.encoder(tokens, train=train, key=key, **inputs)
        return self.head(pooled).astype(jnp.float32)

    def count_flops(self, tally) -> None:
        """Forward FLOPs of one example (one sequence) into `tally` (`attnbench.nn.flops.Tally`)."""
        with tally.per_sequence(1, self.encoder.length):
            self.encoder.count_flops(tally)
        tally.linear("head", self.head.hidden, 1)
        tally.linear("head", self.head.logits, 1)
        tally.add("head", elementwise=self.head.hidden.out_features)  # ReLU


class DualEncoderClassifier(nnx.Module):
    """LRA Retrieval: one weight-shared encoder for both documents, their pooled vectors u, v
    combined (`interaction="NLI"`: [u, v, u*v, u-v]; `"concat"`: [u, v]), then
    Dense(mlp) -> ReLU -> Dense(mlp/2) -> ReLU -> Dense(classes) (LRA `classifier_head_dual`),
    in float32 on the float32 pooled features."""

    def __init__(
        self,
        *,
        vocab_size: int,
        num_classes: int,
        max_len: int,
        model_cfg,
        attention_cfg,
        interaction: str = "NLI",
        rngs: nnx.Rngs,
    ):
        if interaction not in ("NLI", "concat"):
            raise ValueError(f"unknown model.interaction {interaction!r}; known: NLI, concat")
        self.interaction = interaction
        self.encoder = SequenceEncoder(
            vocab_size=vocab_size,
            max_len=max_len,
            model_cfg=model_cfg,
            attention_cfg=attention_cfg,
            rngs=rngs,
        )
        d, h = model_cfg.dim, model_cfg.mlp_dim
        width = 4 * d if interaction == "NLI" else 2 * d
        self.hidden1 = nnx.Linear(width, h, rngs=rngs)
        self.hidden2 = nnx.Linear(h, h // 2, rngs=rngs)
        self.logits = nnx.Linear(h // 2, num_classes, rngs=rngs)

    def __call__(self, tokens1, tokens2, *, train: bool = False, key=None, **inputs):
        """tokens1, tokens2 `[B, N]` -> logits `[B, num_classes]` (float32)."""
        # Both documents in one encoder call: one compiled encoder, twice the batch.
        b = tokens1.shape[0]
        pooled = self.encoder(jnp.concatenate([tokens1, tokens2]), train=train, key=key, **inputs)
        u, v = pooled[:b], pooled[b:]
        z = [u, v, u * v, u - v] if self.interaction == "NLI" else [u, v]
        x = jax.nn.relu(self.hidden1(jnp.concatenate(z, axis=-1)))
        x = jax.nn.relu(self.hidden2(x))
        return self.logits(x).astype(jnp.float32)

    def count_flops(self, tally) -> None:
        """Forward FLOPs of one example (two documents) into `tally`
        (`attnbench.nn.flops.Tally`)."""
        with tally.per_sequence(2, self.encoder.length):
            self.encoder.count_flops(tally)
        if self.interaction == "NLI":
            tally.add("head", elementwise=2 * self.encoder.embed.features)  # u * v, u - v
        for dense in (self.hidden1, self.hidden2, self.logits):
            tally.linear("head", dense, 1)
        relus = self.hidden1.out_features + self.hidden2.out_features
        tally.add("head", elementwise=relus)
