"""Graph tasks registered with the trainer (`config.task = "graphs.<name>"`).

Every task reads padded graph batches (`graphs.batching.GraphCollate`) with a graph backbone from
`attnbench.nn.backbones` (`config.model.encoder`: `graphormer`, `egt`, `graph_bridge`) and a linear
head on its graph representation:

  graphs.zinc             penalized logP regression, L1 loss, MAE (GFSA Tables 4, 20)
  graphs.pcqm             HOMO-LUMO gap regression in eV, L1 loss, MAE (Sliceformer Table 6,
                          GFSA Tables 5, 21, SSA Tables 3, 5)
  graphs.peptides_struct  11 standardised structural targets, L1 loss, MAE over all targets
                          (LRGB; SAMSA Tables 1, 3, GFSA Table 6)
  graphs.peptides_func    10-label multilabel classification, binary cross-entropy, average
                          precision per label averaged (`config.evals`, `multilabel_ap`)

Data (`config.data.source`; every summary carries it):
  official   the dataset in its official files under `config.data.dir` (`graphs.official`):
             ZINC-12k (benchmarking-gnns pickles), PCQM4Mv2 / PCQM4M (`config.data.version`
             "v2" / "v1", OGB-LSC csv + split dict), LRGB Peptides (csv.gz + split pickle).
  standin    offline substitutes, labelled as such: ZINC-like (`graphs.zinc_like`, MOSES
             molecules, exact penalized logP), QM9 gaps for PCQM4Mv2 (`graphs.qm9_like`), and
             generated peptides (`graphs.peptides_like`).

Model-level self-ensemble (SSA Sec. 3.5, Table 5): `config.model.ensemble_passes = S > 0` makes
evaluation also average the predictions of S full forward passes with subsampling on (SSA's
`subsample=True`) and dropout off, with keys from `config.model.ensemble_seed`: the regression
tasks report its metrics as `<name>_ensemble` (`mae_ensemble`) beside the one deterministic dense
pass's (SSA's "renormalized" attention), which still pick the best checkpoint.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from attnbench import errors, tasks
from attnbench.nn import backbones
from graphs import batching

# The graph backbones register themselves with attnbench.nn.backbones on import.
from graphs import egt as _egt  # noqa: F401
from graphs import gps as _gps  # noqa: F401
from graphs import graph_bridge as _graph_bridge  # noqa: F401
from graphs import graphormer as _graphormer  # noqa: F401

__all__ = [
    "ENCODERS",
    "GraphPredictor",
    "l1_loss",
    "smooth_l1_loss",
    "multilabel_loss",
    "GraphTask",
    "ZincRegression",
    "PcqmRegression",
    "PeptidesStruct",
    "PeptidesFunc",
]

# The graph backbones a graph task takes.
ENCODERS = ("graphormer", "egt", "graph_bridge", "gps")


def attention_tokens(config, nodes: int | None = None) -> int:
    """Tokens one attention call sees for graphs of `nodes` nodes (default: the largest node
    bucket, `config.data.max_nodes`): the nodes plus the encoder's extra tokens (Graphormer:
    the graph token; EGT: `num_virtual_nodes`; Graph-Bridge: one per edge slot, `edge_factor`
    x the nodes)."""
    d, m = config.data, config.model
    n = int(d.max_nodes if nodes is None else nodes)
    if m.encoder == "graph_bridge":
        return n + int(d.edge_factor) * n
    if m.encoder == "egt":
        return n + int(m.get("num_virtual_nodes", 4))  # graphs.egt's default
    if m.encoder == "gps":
        return n  # attention over the nodes only
    return n + 1


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


def l1_loss(prediction, target, weight):
    """Weighted mean absolute error as `(mean loss, {"loss", "mae": (sum, count)})` over every
    target entry (`[B]` or `[B, T]`); the loss is the MAE (Graphormer's and LRGB's L1 loss)."""
    weight = weight.astype(jnp.float32)
    err = jnp.abs(prediction.astype(jnp.float32) - target.astype(jnp.float32))
    if err.ndim == 2:
        total, count = (err * weight[:, None]).sum(), weight.sum() * err.shape[1]
    else:
        total, count = (err * weight).sum(), weight.sum()
    metrics = {"loss": (total, count), "mae": (total, count)}
    return total / jnp.maximum(count, 1.0), metrics


def smooth_l1_loss(prediction, target, weight, beta: float = 1.0):
    """torch's SmoothL1Loss (beta 1): 0.5 x^2 / beta where |x| < beta, |x| - 0.5 beta beyond,
    averaged over every target entry, as `(mean loss, {"loss": smooth L1, "mae": MAE})`
    (SAMSA's Peptides-struct loss; the MAE is what LRGB reports)."""
    weight = weight.astype(jnp.float32)
    err = jnp.abs(prediction.astype(jnp.float32) - target.astype(jnp.float32))
    huber = jnp.where(err < beta, 0.5 * err * err / beta, err - 0.5 * beta)
    w = weight[:, None] if err.ndim == 2 else weight
    count = weight.sum() * (err.shape[1] if err.ndim == 2 else 1)
    total = (huber * w).sum()
    metrics = {"loss": (total, count), "mae": ((err * w).sum(), count)}
    return total / jnp.maximum(count, 1.0), metrics


LOSSES = ("l1", "smooth_l1", "bce")


def multilabel_loss(logits, labels, weight):
    """Binary cross-entropy with logits averaged over the known labels (NaN = unknown, as
    OGB / LRGB mask them), as `(mean loss, {"loss": (sum, count)})`."""
    logits = logits.astype(jnp.float32)
    labels = labels.astype(jnp.float32)
    known = (~jnp.isnan(labels)) & (weight[:, None] > 0)
    losses = optax.sigmoid_binary_cross_entropy(logits, jnp.where(known, labels, 0.0))
    total = jnp.where(known, losses, 0.0).sum()
    count = known.sum().astype(jnp.float32)
    return total / jnp.maximum(count, 1.0), {"loss": (total, count)}


class GraphTask(tasks.Task):
    """Shared plumbing of the graph tasks: config checks, bucketed collate, model building.
    Subclasses set `out_dim`, `sources`, `best_mode` and `_load(config, collate)`."""

    name = ""
    out_dim = 1
    sources = ("standin", "official")
    best_mode = "min"
    metric_names = ("loss", "mae")

    def check_config(self, config) -> list[str]:
        d, m, out = config.data, config.model, []
        if d.source not in self.sources:
            out.append(f"config.data.source={d.source!r}: known: {', '.join(self.sources)}")
        if m.encoder not in ENCODERS:
            out.append(f"config.model.encoder={m.encoder!r}: {self.name} takes {ENCODERS}")
        if config.best_mode != self.best_mode:
            out.append(
                f"config.best_mode={config.best_mode!r}: {config.best_metric} is best when "
                f"{'lowest (min)' if self.best_mode == 'min' else 'highest (max)'}"
            )
        return out

    def attention_length(self, config) -> int | None:
        return attention_tokens(config)

    def collate(self, config) -> batching.GraphCollate:
        """Node buckets below `data.max_nodes` (default `batching.NODE_BUCKETS`) plus
        `max_nodes` itself; edge buckets `data.edge_factor` x the node buckets."""
        d = config.data
        buckets = tuple(d.node_buckets) or tuple(
            b for b in batching.NODE_BUCKETS if b < d.max_nodes
        )
        buckets = tuple(b for b in buckets if b < d.max_nodes) + (int(d.max_nodes),)
        factor = int(d.get("edge_factor", 4))
        return batching.GraphCollate(
            node_buckets=buckets,
            edge_buckets=tuple(factor * b for b in buckets),
            dense=bool(d.get("dense", True)),  # N x N adjacency / distances per batch
        )

    def load_data(self, config) -> tasks.Data:
        self.check(config)
        data = self._load(config, self.collate(config))
        if config.model.encoder == "gps":  # GPS reads per-node positional encodings
            from graphs import gps

            encoded = {
                name: gps.with_encodings(getattr(data, name), model_cfg=config.model)
                for name in ("train", "val", "test")
            }
            data = dataclasses.replace(data, **encoded)
        return data

    def _load(self, config, collate) -> tasks.Data:
        raise NotImplementedError

    def build_model(self, config, rngs):
        self.check(config)
        m = config.model
        return GraphPredictor(
            model_cfg=m,
            attention_cfg=config.attention,
            max_len=attention_tokens(config),
            out_dim=self.out_dim,
            ensemble_passes=int(m.get("ensemble_passes", 0)),
            ensemble_seed=int(m.get("ensemble_seed", 0)),
            flops_tokens=attention_tokens(config, int(config.data.get("flops_nodes", 0)) or None),
            rngs=rngs,
        )

    def loss(self, model, batch, *, train: bool, key, **inputs):
        """The loss and MAE of the model's prediction; at evaluation with a self-ensemble the
        dense ("renormalized") pass's, plus the ensemble's as `<name>_ensemble`."""
        loss = smooth_l1_loss if model.loss == "smooth_l1" else l1_loss
        if train or not model.ensemble_passes:
            prediction = model(batch, train=train, key=key, **inputs)
            return loss(prediction, batch["target"], batch["weight"])
        dense = model.forward(batch, train=False, key=None, **inputs)
        value, metrics = loss(dense, batch["target"], batch["weight"])
        _, ensemble = loss(model(batch, **inputs), batch["target"], batch["weight"])
        metrics.update({f"{k}_ensemble": v for k, v in ensemble.items()})
        return value, metrics

    def example_batch(self, config, batch_size: int, seed: int = 0) -> dict:
        """Random connected graphs (paths) of `config.data.max_nodes` slots with as many node /
        edge features as `config.model.atom_dims` / `bond_dims`, for timing without data."""
        m = config.model
        rng = np.random.default_rng(seed)
        n = int(config.data.max_nodes)
        graphs = []
        for _ in range(batch_size):
            size = int(rng.integers(max(2, n // 2), n + 1))
            src = np.arange(size - 1)
            edges = np.stack([np.r_[src, src + 1], np.r_[src + 1, src]])
            graphs.append(
                {
                    "node_feat": rng.integers(0, 2, (size, len(m.atom_dims))),
                    "edge_index": edges,
                    "edge_feat": rng.integers(0, 2, (edges.shape[1], len(m.bond_dims))),
                }
            )
        shape = (batch_size,) if self.out_dim == 1 else (batch_size, self.out_dim)
        target = rng.standard_normal(shape).astype(np.float32)
        if self.best_mode == "max":  # multilabel
            target = (target > 0).astype(np.float32)
        ds = batching.PackedGraphs(batching.pack(graphs, target=target))
        factor = int(config.data.get("edge_factor", 4))
        batch = batching.GraphCollate(node_buckets=(n,), edge_buckets=(factor * n,))(
            [ds[i] for i in range(batch_size)]
        )
        batch["weight"] = np.ones(batch_size, np.float32)
        return batch


def _standin(data: tasks.Data, note: str) -> tasks.Data:
    description = dict(data.description)
    description["standin"] = note
    return tasks.Data(
        data.train,
        data.val,
        data.test,
        source="standin",
        description=description,
        collate=data.collate,
    )


@tasks.register("graphs.zinc")
class ZincRegression(GraphTask):
    """ZINC penalized-logP regression (GFSA Tables 4 and 20: Graphormer vs Graphormer + GFSA)."""

    name = "graphs.zinc"

    def _load(self, config, collate):
        d = config.data
        if d.source == "official":
            from graphs import official

            return official.load_zinc(d.dir, subset=bool(d.get("subset", True)), collate=collate)
        from graphs import zinc_like  # RDKit: only when data is loaded

        sizes = tuple(n or default for n, default in zip(
            (d.num_train, d.num_val, d.num_test), zinc_like.SIZES, strict=True))  # fmt: skip
        data = zinc_like.load(
            d.dir, source_file=d.source_file or None, sizes=sizes, seed=d.seed, collate=collate
        )
        return _standin(
            data,
            "offline ZINC-like stand-in (MOSES molecules), not ZINC-12k: compare mechanisms "
            "with each other on it, never with the papers' ZINC MAE",
        )


@tasks.register("graphs.pcqm")
class PcqmRegression(GraphTask):
    """PCQM4Mv2 / PCQM4M HOMO-LUMO gap regression in eV; the papers report the OGB valid MAE."""

    name = "graphs.pcqm"

    def check_config(self, config) -> list[str]:
        out = super().check_config(config)
        version = config.data.get("version", "v2")
        if version not in ("v2", "v1"):
            out.append(f"config.data.version={version!r}: v2 (PCQM4Mv2) or v1 (PCQM4M)")
        return out

    def _load(self, config, collate):
        d = config.data
        if d.source == "official":
            from graphs import official

            return official.load_pcqm(
                d.dir, version=d.version, max_train=int(d.num_train), collate=collate
            )
        from graphs import qm9_like

        sizes = (int(d.num_train) or None, int(d.num_val), int(d.num_test))  # None: the rest
        data = qm9_like.load(
            d.dir, source_file=d.source_file or None, sizes=sizes, seed=d.seed, collate=collate
        )
        return _standin(
            data,
            "offline PCQM4Mv2 stand-in: QM9 molecules (<= 9 heavy atoms) with their DFT "
            "HOMO-LUMO gaps (qm9pack), not PCQM4Mv2: never compare with the papers' MAE",
        )


class _Peptides(GraphTask):
    kind = ""

    def _load(self, config, collate):
        d = config.data
        if d.source == "official":
            from graphs import official

            return official.load_peptides(d.dir, kind=self.kind, collate=collate)
        from graphs import peptides_like

        data = peptides_like.load(
            d.dir,
            kind=self.kind,
            num_peptides=int(d.num_peptides),
            seed=d.seed,
            collate=collate,
            lengths=tuple(d.get("peptide_lengths", peptides_like.LENGTHS)),
        )
        return _standin(
            data,
            "offline Peptides-like stand-in (generated peptides, RDKit conformers"
            + (", synthetic function labels" if self.kind == "func" else "")
            + "), not LRGB: never compare with the papers' numbers",
        )


@tasks.register("graphs.peptides_struct")
class PeptidesStruct(_Peptides):
    """LRGB Peptides-struct: 11 standardised 3-D structural targets, MAE over all of them."""

    name = "graphs.peptides_struct"
    kind = "struct"
    out_dim = 11


@tasks.register("graphs.peptides_func")
class PeptidesFunc(_Peptides):
    """LRGB Peptides-func: 10 binary function labels, binary cross-entropy, average precision
    (the `multilabel_ap` evaluator of `config.evals`)."""

    name = "graphs.peptides_func"
    kind = "func"
    out_dim = 10
    best_mode = "max"
    metric_names = ("loss",)

    def loss(self, model, batch, *, train: bool, key, **inputs):
        logits = model(batch, train=train, key=key, **inputs)
        return multilabel_loss(logits, batch["target"], batch["weight"])

    def eval_outputs(self, model, batch):
        """Per-graph logits for the `multilabel_ap` evaluator (labels: `batch["target"]`)."""
        return {"logits": model(batch, train=False, key=None)}
