"""The task-facing graph model: `GraphPredictor`, a graph backbone from `attnbench.nn.backbones`
(`config.model.encoder`: `graphormer`, `egt`, `graph_bridge`, `gps`, the modules of
`graphs.backbones`, registered on import here) and a linear head on its graph representation. The
graph tasks (`graphs.tasks`) build it and compute its losses.

Model-level self-ensemble (SSA Sec. 3.5, Table 5): `config.model.ensemble_passes = S > 0` makes
evaluation also average the predictions of S full forward passes with subsampling on (SSA's
`subsample=True`) and dropout off, with keys from `config.model.ensemble_seed`; the regression
tasks report its metrics as `<name>_ensemble` beside the one deterministic dense pass's.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from attnbench import errors
from attnbench.nn import backbones

# The graph backbones register themselves with attnbench.nn.backbones on import.
from graphs.backbones import egt as _egt  # noqa: F401
from graphs.backbones import gps as _gps  # noqa: F401
from graphs.backbones import graph_bridge as _graph_bridge  # noqa: F401
from graphs.backbones import graphormer as _graphormer  # noqa: F401

__all__ = ["GraphPredictor"]

# The losses `config.model.loss` names (`graphs.tasks` computes them).
LOSSES = ("l1", "smooth_l1", "bce")


class GraphPredictor(nnx.Module):
    """Graph backbone -> Linear(dim, out_dim): `out_dim` values per graph (the authors'
    `downstream_out_proj`, initialised like their other linear layers); `[B]` when out_dim = 1.
    With `ensemble_passes > 0`, evaluation averages that many subsampled passes (module doc)."""

    def __init__(
        self,
        *,
        model_cfg,
        attention_cfg,
        max_len: int,
        out_dim: int,
        rngs: nnx.Rngs,
        ensemble_passes: int = 0,
        ensemble_seed: int = 0,
        flops_tokens: int | None = None,
    ):
        self.encoder = backbones.build(
            model_cfg.encoder,
            model_cfg=model_cfg,
            attention_cfg=attention_cfg,
            max_len=max_len,
            rngs=rngs,
        )
        init = nnx.initializers.normal(0.02 / math.sqrt(model_cfg.num_layers))
        # Optional hidden layers before the output (ReLU; GraphGPS's ZINC "san_graph" head:
        # `head_hidden = (32, 16)`); none: one Linear (the authors' `downstream_out_proj`).
        widths = (model_cfg.dim, *tuple(model_cfg.get("head_hidden", ())))
        self.hidden = nnx.List(
            [
                nnx.Linear(a, b, kernel_init=init, rngs=rngs)
                for a, b in zip(widths[:-1], widths[1:], strict=True)
            ]
        )
        self.head = nnx.Linear(widths[-1], out_dim, kernel_init=init, rngs=rngs)
        self.out_dim = out_dim
        self.encoder_name = model_cfg.encoder
        self.tokens = int(flops_tokens or max_len)
        self.loss = str(model_cfg.get("loss", "l1"))
        if self.loss not in LOSSES:
            raise errors.ConfigError(f"config.model.loss={self.loss!r}: known: {', '.join(LOSSES)}")
        self.ensemble_passes = int(ensemble_passes)
        self.ensemble_seed = int(ensemble_seed)

    def count_flops(self, tally) -> None:
        """Forward FLOPs of one graph of `flops_tokens` tokens (the task passes the dataset's
        mean graph size, `config.data.flops_nodes`; default `max_len`) into `tally`; with a
        self-ensemble, evaluation costs `ensemble_passes` times this."""
        with tally.per_sequence(1, self.tokens):
            backbones.count_flops(
                self.encoder_name, self.encoder, tally, n=self.tokens, masked=True
            )
        for layer in self.hidden:
            tally.linear("head", layer, 1)
        tally.linear("head", self.head, 1)

    def forward(self, batch, *, train: bool, key, **inputs):
        h = self.encoder(batch, train=train, key=key, **inputs)
        for layer in self.hidden:
            h = jax.nn.relu(layer(h))
        out = self.head(h)
        return out[:, 0] if self.out_dim == 1 else out

    def __call__(self, batch, *, train: bool = False, key=None, **inputs):
        """The prediction; at evaluation with `ensemble_passes`, SSA's self-ensemble: the mean
        of that many passes with subsampling on (`subsample=True`) and dropout off."""
        if train or not self.ensemble_passes:
            return self.forward(batch, train=train, key=key, **inputs)
        keys = jax.random.split(jax.random.key(self.ensemble_seed), self.ensemble_passes)
        # One compiled pass mapped over the keys (not S unrolled copies).
        outs = jax.lax.map(
            lambda k: self.forward(batch, train=False, key=k, **{**inputs, "subsample": True}),
            keys,
        )
        return outs.astype(jnp.float32).mean(0)
