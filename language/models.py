"""The causal decoder language model: SSA's ALiBi decoders, its CIFAR-10 sub-pixel decoder, GPT-2.

    model = models.build_decoder(config.model, config.attention, vocab_size=V, max_len=N,
                                 rngs=nnx.Rngs(params=0))
    logits = model(tokens, train=False)          # tokens [B, N] int -> [B, N, V] float32
    nll = model.nll(tokens, targets, train=True, key=key)   # [B, N] nats, every configuration

`Decoder`, the language model, is built from the model section (`config.model`) and any
registered attention mechanism (`config.attention`): token embedding or adaptive input ->
the backbone "decoder" (`language.backbones.decoder`: positions, causal pre-LN blocks, final
LayerNorm; registered in `attnbench.nn.backbones`, built here by name) -> tied or untied
linear head, or the adaptive softmax (`language.adaptive`). The model section's fields and
their defaults are documented, and checked, in `language.backbones.decoder` (`DEFAULTS`,
`_settings`). Hugging Face GPT-2 checkpoints load into a `Decoder` with `language.gpt2`.
"""

from __future__ import annotations

import math

import flax.core
import jax
import jax.numpy as jnp
import ml_collections
import optax
from flax import nnx

from attention import cost
from attnbench.nn import backbones
from language import adaptive
from language.backbones.decoder import _settings  # importing it registers "decoder"

__all__ = ["Decoder", "build_decoder"]


class Decoder(nnx.Module):
    """The causal LM: tokens `[B, N]` -> logits `[B, N, V]` or per-token NLL `[B, N]`.

    Attributes:
      settings: the model section with its defaults filled in (a FrozenDict).
      vocab_size, max_len: V and the longest sequence.
      embed: `nnx.Embed` or `adaptive.AdaptiveInput`.
      stack: the "decoder" backbone (`DecoderStack`).
      head: `nnx.Linear` (untied), `adaptive.AdaptiveSoftmax`, or None (tied to `embed`).
    """

    def __init__(self, *, vocab_size: int, max_len: int, model_cfg, attention_cfg, rngs):
        s = _settings(model_cfg)
        self.settings = flax.core.FrozenDict(s)  # hashable: the GraphDef can be a jit static
        self.vocab_size, self.max_len, self.dim = int(vocab_size), int(max_len), s["dim"]
        if s["input"] == "adaptive":
            self.embed = adaptive.AdaptiveInput(
                vocab_size,
                s["dim"],
                cutoffs=s["adaptive_cutoffs"],
                factor=s["adaptive_factor"],
                rngs=rngs,
            )
        else:
            std = s["embed_init_std"] or s["dim"] ** -0.5
            self.embed = nnx.Embed(
                vocab_size, s["dim"], embedding_init=nnx.initializers.normal(std), rngs=rngs
            )
        self.embed_scale = math.sqrt(s["dim"]) if s["scale_embedding"] else 1.0
        self.stack = backbones.build(
            "decoder", model_cfg=dict(s), attention_cfg=attention_cfg, max_len=max_len, rngs=rngs
        )
        head = None
        if s["output"] == "untied":
            head = nnx.Linear(
                s["dim"],
                vocab_size,
                use_bias=s["output_bias"],
                kernel_init=nnx.initializers.normal(s["dim"] ** -0.5),  # fairseq's init
                rngs=rngs,
            )
        elif s["output"] == "adaptive":
            head = adaptive.AdaptiveSoftmax(
                vocab_size,
                s["dim"],
                cutoffs=s["adaptive_cutoffs"],
                factor=s["adaptive_factor"],
                dropout=s["adaptive_dropout"],
                tied=self.embed if s["tie_adaptive_weights"] else None,
                tie_proj=s["tie_adaptive_proj"],
                rngs=rngs,
            )
        self.head = nnx.data(head)

    def features(self, tokens, *, mask=None, train: bool = False, key=None, **inputs):
        """tokens `[B, N]` -> the backbone's features `[B, N, dim]` float32; `inputs`: per-call
        attention inputs (e.g. SSA's `subsample`)."""
        x = self.embed(jnp.asarray(tokens, jnp.int32)).astype(jnp.float32) * self.embed_scale
        return self.stack(x, mask=mask, train=train, key=key, **inputs).astype(jnp.float32)

    def _split(self, key):
        return (None, None) if key is None else tuple(jax.random.split(key))

    def __call__(self, tokens, *, mask=None, train: bool = False, key=None, **inputs):
        """tokens `[B, N]` int -> logits `[B, N, V]` float32 (with the adaptive softmax: the
        normalised log-probabilities over the whole vocabulary, materialised)."""
        k_stack, k_out = self._split(key)
        x = self.features(tokens, mask=mask, train=train, key=k_stack, **inputs)
        if self.settings["output"] == "adaptive":
            return self.head.log_probs(x, train=train, key=k_out)
        if self.head is None:
            return self.embed.attend(x)
        return self.head(x).astype(jnp.float32)

    def nll(self, tokens, targets, *, mask=None, train: bool = False, key=None, **inputs):
        """Negative log-likelihood (nats) `[B, N]` float32 of `targets` `[B, N]` (usually
        `tokens` shifted by one) given `tokens`; the LM task's loss."""
        if self.settings["output"] == "adaptive":
            k_stack, k_out = self._split(key)
            x = self.features(tokens, mask=mask, train=train, key=k_stack, **inputs)
            return self.head.nll(x, targets, train=train, key=k_out)
        logits = self(tokens, mask=mask, train=train, key=key, **inputs)
        return optax.softmax_cross_entropy_with_integer_labels(
            logits, jnp.asarray(targets, jnp.int32)
        )

    def count_flops(self, tally) -> None:
        """Forward FLOPs of one sequence of `max_len` tokens (`attnbench.nn.flops`): the input
        (lookups are 0; adaptive projections of every band), the embedding scale, the
        backbone's formula, the output (logits or adaptive softmax and the log-softmax)."""
        n, dim = self.max_len, self.dim
        with tally.per_sequence(1, n):
            if isinstance(self.embed, adaptive.AdaptiveInput):
                self.embed.count_flops(tally, n=n)
            else:
                tally.claim("embedding", self.embed)
            if self.embed_scale != 1.0:
                tally.add("embedding", elementwise=n * dim)
            backbones.count_flops("decoder", self.stack, tally, n=n, masked=False)
            if isinstance(self.head, adaptive.AdaptiveSoftmax):
                self.head.count_flops(tally, n=n)
            else:
                v = self.vocab_size
                if self.head is None:
                    tally.add("head", 2 * n * dim * v)
                else:
                    tally.linear("head", self.head, n)
                tally.add("head", elementwise=n * v * cost.SOFTMAX)


def build_decoder(model_cfg, attention_cfg, *, vocab_size: int, max_len: int, rngs) -> Decoder:
    """The causal LM `Decoder` from a model section (fields: `language.backbones.decoder`'s
    docstring) and an attention section (`name` + hyper-parameters)."""
    if isinstance(model_cfg, dict):
        model_cfg = ml_collections.ConfigDict(model_cfg)
    return Decoder(
        vocab_size=vocab_size,
        max_len=max_len,
        model_cfg=model_cfg,
        attention_cfg=attention_cfg,
        rngs=rngs,
    )
