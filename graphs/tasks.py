"""Graph tasks registered with the trainer: `config.task = "graphs.zinc"`.

`graphs.zinc`: graph regression of penalized logP (ZINC's target), L1 loss, MAE (lower is
better), with a graph backbone from `core.backbones` (`config.model.encoder`, `graphormer`)
reading the padded batches of `graphs.batching.GraphCollate` and a linear head on its graph
representation. Data (`config.data.source`):
  standin   the offline ZINC-like molecules (`graphs.zinc_like`: MOSES SMILES, exact penalized
            logP, OGB features), labelled `standin` in every summary; the real ZINC-12k reader
            is not written yet (a ConfigError says so).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from flax import nnx

from core import backbones, errors, tasks
from graphs import batching
from graphs import graphormer as _graphormer  # noqa: F401  (registers the backbone)

__all__ = ["GraphRegressor", "ZincRegression"]

SOURCES = ("standin",)


class GraphRegressor(nnx.Module):
    """Graph backbone -> Linear(dim, 1): one scalar per graph (the authors'
    `downstream_out_proj`, initialised like their other linear layers)."""

    def __init__(self, *, model_cfg, attention_cfg, max_len: int, rngs: nnx.Rngs):
        self.encoder = backbones.build(
            model_cfg.encoder,
            model_cfg=model_cfg,
            attention_cfg=attention_cfg,
            max_len=max_len,
            rngs=rngs,
        )
        init = nnx.initializers.normal(0.02 / math.sqrt(model_cfg.num_layers))
        self.head = nnx.Linear(model_cfg.dim, 1, kernel_init=init, rngs=rngs)

    def __call__(self, batch, *, train: bool = False, key=None):
        return self.head(self.encoder(batch, train=train, key=key))[:, 0]


def l1_loss(prediction, target, weight):
    """Weighted mean absolute error as `(mean loss, {"loss", "mae": (sum, count)})`; the loss
    is the MAE (Graphormer's L1 loss on ZINC)."""
    weight = weight.astype(jnp.float32)
    err = jnp.abs(prediction.astype(jnp.float32) - target.astype(jnp.float32))
    total, count = (err * weight).sum(), weight.sum()
    metrics = {"loss": (total, count), "mae": (total, count)}
    return total / jnp.maximum(count, 1.0), metrics


@tasks.register("graphs.zinc")
class ZincRegression:
    """ZINC penalized-logP regression (GFSA Tables 4 and 20: Graphormer vs Graphormer + GFSA)."""

    metric_names = ("loss", "mae")

    def check_config(self, config) -> list[str]:
        d, m, out = config.data, config.model, []
        if d.source not in SOURCES:
            out.append(
                f"config.data.source={d.source!r}: known: {', '.join(SOURCES)} (the official "
                "ZINC-12k reader is not written yet)"
            )
        if m.encoder not in ("graphormer",):
            out.append(f"config.model.encoder={m.encoder!r}: graphs.zinc takes graphormer")
        if config.best_mode != "min":
            out.append(f"config.best_mode={config.best_mode!r}: MAE is best when lowest (min)")
        return out

    def _check(self, config) -> None:
        problems = self.check_config(config)
        if problems:
            raise errors.ConfigError("; ".join(problems))

    def attention_length(self, config) -> int | None:
        """Tokens one attention call sees: the largest node bucket a batch may use plus the
        graph token (`config.data.max_nodes + 1`)."""
        return int(config.data.max_nodes) + 1

    def load_data(self, config) -> tasks.Data:
        from graphs import zinc_like  # RDKit: only when data is loaded

        self._check(config)
        d = config.data
        sizes = tuple(n or default for n, default in zip(
            (d.num_train, d.num_val, d.num_test), zinc_like.SIZES, strict=True))  # fmt: skip
        buckets = tuple(d.node_buckets) or tuple(
            b for b in batching.NODE_BUCKETS if b < d.max_nodes
        )
        buckets = tuple(b for b in buckets if b < d.max_nodes) + (int(d.max_nodes),)
        collate = batching.GraphCollate(
            node_buckets=buckets, edge_buckets=tuple(4 * b for b in buckets)
        )
        data = zinc_like.load(
            d.dir,
            source_file=d.source_file or None,
            sizes=sizes,
            seed=d.seed,
            collate=collate,
        )
        description = dict(data.description)
        description["standin"] = (
            "offline ZINC-like stand-in (MOSES molecules), not ZINC-12k: compare mechanisms "
            "with each other on it, never with the papers' ZINC MAE"
        )
        return tasks.Data(
            data.train,
            data.val,
            data.test,
            source=data.source,
            description=description,
            collate=data.collate,
        )

    def build_model(self, config, rngs):
        self._check(config)
        return GraphRegressor(
            model_cfg=config.model,
            attention_cfg=config.attention,
            max_len=int(config.data.max_nodes) + 1,
            rngs=rngs,
        )

    def loss_and_metrics(self, model, batch, *, train: bool, key):
        prediction = model(batch, train=train, key=key)
        return l1_loss(prediction, batch["target"], batch["weight"])

    def example_batch(self, config, batch_size: int, seed: int = 0) -> dict:
        """Random connected graphs (paths with chords) of `config.data.max_nodes` slots, for
        timing without data."""
        from graphs import featurize

        rng = np.random.default_rng(seed)
        n = int(config.data.max_nodes)
        graphs = []
        for _ in range(batch_size):
            size = int(rng.integers(max(2, n // 2), n + 1))
            src = np.arange(size - 1)
            edges = np.stack([np.r_[src, src + 1], np.r_[src + 1, src]])
            graphs.append(
                {
                    "node_feat": rng.integers(0, 2, (size, len(featurize.atom_feature_dims()))),
                    "edge_index": edges,
                    "edge_feat": rng.integers(0, 2, (edges.shape[1], 3)),
                }
            )
        arrays = batching.pack(graphs, target=rng.standard_normal(batch_size).astype(np.float32))
        ds = batching.PackedGraphs(arrays)
        batch = batching.GraphCollate(node_buckets=(n,), edge_buckets=(4 * n,))(
            [ds[i] for i in range(batch_size)]
        )
        batch["weight"] = np.ones(batch_size, np.float32)
        return batch
