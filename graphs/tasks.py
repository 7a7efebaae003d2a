"""Graph tasks registered with the trainer (`config.task = "graphs.<name>"`), and their losses.

Every task reads padded graph batches (`graphs.data.batching.GraphCollate`) into the model of
`graphs.models` (`GraphPredictor`: a graph backbone from `attnbench.nn.backbones`,
`config.model.encoder`: `graphormer`, `egt`, `graph_bridge`, `gps`, and a linear head on its graph
representation):

  graphs.zinc             penalized logP regression, L1 loss, MAE (GFSA Tables 4, 20)
  graphs.pcqm             HOMO-LUMO gap regression in eV, L1 loss, MAE (Sliceformer Table 6,
                          GFSA Tables 5, 21, SSA Tables 3, 5)
  graphs.peptides_struct  11 standardised structural targets, L1 loss, MAE over all targets
                          (LRGB; SAMSA Tables 1, 3, GFSA Table 6)
  graphs.peptides_func    10-label multilabel classification, binary cross-entropy, average
                          precision per label averaged (`config.evals`, `multilabel_ap`)

Data (`config.data.source`; every summary carries it), one module per dataset in `graphs.data`
(`zinc`, `pcqm`, `peptides`):
  official   the dataset in its official files under `config.data.dir` (`load_zinc`,
             `load_pcqm`, `load_peptides`): ZINC-12k (benchmarking-gnns pickles), PCQM4Mv2 /
             PCQM4M (`config.data.version` "v2" / "v1", OGB-LSC csv + split dict), LRGB
             Peptides (csv.gz + split pickle).
  standin    offline substitutes, labelled as such (each module's `load`): ZINC-like (MOSES
             molecules, exact penalized logP), QM9 gaps for PCQM4Mv2, and generated peptides.

Checks when the data is loaded (`GraphTask.load_data`), on every split and every source: each
graph fits the largest node and edge bucket (`check_sizes`: `config.data.max_nodes`,
`edge_factor`), each node and edge feature id has a row in the model's embedding table
(`check_features`: `config.model.atom_dims`, `bond_dims`). The official readers check their
files themselves (`graphs.data.official`: finite targets, 0/1 labels, ids in the dataset's
vocabulary; molecules RDKit cannot parse are an error unless `config.data.drop_invalid`).

Model-level self-ensemble (SSA Sec. 3.5, Table 5; `graphs.models`): with
`config.model.ensemble_passes = S > 0` the regression tasks report the ensemble's metrics as
`<name>_ensemble` (`mae_ensemble`) beside the one deterministic dense pass's (SSA's
"renormalized" attention), which still pick the best checkpoint.
"""

from __future__ import annotations

import dataclasses
import math
import os

import jax.numpy as jnp
import numpy as np
import optax

from attnbench import errors, tasks
from graphs import models
from graphs.data import batching, featurize

__all__ = [
    "ENCODERS",
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
        return n + int(m.get("num_virtual_nodes", 4))  # graphs.backbones.egt's default
    if m.encoder == "gps":
        return n  # attention over the nodes only
    return n + 1


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
        """The data of `config.data`, every split checked when loaded: each graph fits the
        largest node and edge bucket (`check_sizes`), each feature id has a row in the model's
        embedding tables (`check_features`)."""
        self.check(config)
        collate = self.collate(config)
        data = self._load(config, collate)
        check_sizes(data, collate, config)
        check_features(data, config)
        if config.model.encoder == "gps":  # GPS reads per-node positional encodings
            from graphs.backbones import gps

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
        return models.GraphPredictor(
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


def _splits(data: tasks.Data) -> list[tuple[str, batching.PackedGraphs]]:
    out = [("train", data.train), ("val", data.val)]
    if data.test is not data.val:  # PCQM4M(v2): test is OGB valid again
        out.append(("test", data.test))
    return out


def _where(data: tasks.Data, split: str) -> str:
    """The file a split was read from, for messages: an official reader's file of that split
    (ZINC's `<split>.pickle`) or its one data file, else the stand-in's source or cache."""
    d = data.description
    files = [str(f) for f in d.get("files") or ()]
    own = [f for f in files if os.path.basename(f).startswith(f"{split}.")]
    return (own or files or [str(d.get("molecules") or d.get("cache") or "the data")])[0]


def check_sizes(data: tasks.Data, collate: batching.GraphCollate, config) -> None:
    """`DataError` naming the split, the example, its size and the config field to raise when a
    graph of any split has more nodes (edges) than the largest node (edge) bucket of `collate`:
    found when the data is loaded, not when the batch that holds it is collated."""
    d = config.data
    largest = {"nodes": int(collate.node_buckets[-1]), "edges": int(collate.edge_buckets[-1])}
    for what in ("nodes", "edges"):
        sizes = [(split, getattr(ds, f"num_{what}")) for split, ds in _splits(data)]
        most = max(int(n.max()) for _, n in sizes)
        for split, n in sizes:
            big = np.flatnonzero(n > largest[what])
            if not big.size:
                continue
            i = int(big[0])
            if what == "nodes":
                field = f"config.data.max_nodes={d.max_nodes}"
                fix = f"raise config.data.max_nodes to at least {most} (the largest graph's nodes)"
            else:
                factor = int(d.get("edge_factor", 4))
                field = f"config.data.edge_factor={factor} x config.data.max_nodes={d.max_nodes}"
                fix = (
                    "raise config.data.edge_factor to at least "
                    f"{math.ceil(most / largest['nodes'])} (the largest graph has {most} edges)"
                )
            raise errors.DataError(
                f"{split} example {i} ({_where(data, split)}) has {int(n[i])} {what}, more than "
                f"the largest {what[:-1]} bucket {largest[what]} ({field}; {big.size} graph(s) of "
                f"the {split} split are larger): {fix}"
            )


def _feature_names(data: tasks.Data, kind: str, width: int) -> list[str]:
    names = data.description.get(f"{kind}_feature_names")
    ogb = featurize.ATOM_FEATURES if kind == "node" else featurize.BOND_FEATURES
    if names is None and width == len(ogb):
        names = [f.name for f in ogb]
    return (
        list(names)
        if names is not None and len(names) == width
        else [f"column {c}" for c in range(width)]
    )


def check_features(data: tasks.Data, config) -> None:
    """`DataError` (`ConfigError` for a count mismatch) when a node or edge feature id of any
    split has no row in the model's embedding table of that feature (`config.model.atom_dims`,
    `bond_dims`: ids in [0, size)): the table lookup would clamp it to another id silently."""
    m = config.model
    for kind, field, key, ptr, default in (
        ("node", "atom_dims", "node_feat", "node_ptr", featurize.atom_feature_dims),
        ("edge", "bond_dims", "edge_feat", "edge_ptr", featurize.bond_feature_dims),
    ):
        dims = tuple(int(x) for x in (m.get(field) or default()))
        for split, ds in _splits(data):
            feat = np.asarray(ds.arrays[key])
            feat = feat.reshape(feat.shape[0], int(np.prod(feat.shape[1:])))
            if feat.shape[1] != len(dims):
                sizes = data.description.get(f"{kind}_feature_dims")
                raise errors.ConfigError(
                    f"config.model.{field}={dims}: {len(dims)} {kind} features, but the "
                    f"{split} graphs ({_where(data, split)}) have {feat.shape[1]}"
                    + (f" (sizes {list(sizes)})" if sizes else "")
                    + f"; set config.model.{field} to the data's feature sizes (a recipe's "
                    "source= argument does, e.g. graphs/zinc.py:source=official)"
                )
            if not len(feat):
                continue
            wrong = np.flatnonzero((feat.min(axis=0) < 0) | (feat.max(axis=0) >= np.asarray(dims)))
            if not wrong.size:
                continue
            c = int(wrong[0])
            column = feat[:, c]
            entries = np.flatnonzero((column < 0) | (column >= dims[c]))
            graphs = np.unique(np.searchsorted(ds.arrays[ptr], entries, side="right") - 1)
            name = _feature_names(data, kind, feat.shape[1])[c]
            where = f"{split} example {int(graphs[0])} ({_where(data, split)})"
            raise errors.DataError(
                f"{where}: {kind} feature {name} is "
                f"{int(column[entries[0]])}, outside [0, {dims[c]}), the rows of its embedding "
                f"table (config.model.{field}[{c}]={dims[c]}; {graphs.size} graph(s) of the "
                f"{split} split, ids from {int(column.min())} to {int(column.max())}): the "
                f"lookup would clamp it to another id; raise config.model.{field}[{c}] or fix "
                "the data"
            )


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
        from graphs.data import zinc  # RDKit: only when data is loaded

        d = config.data
        if d.source == "official":
            return zinc.load_zinc(d.dir, subset=bool(d.get("subset", True)), collate=collate)
        sizes = tuple(n or default for n, default in zip(
            (d.num_train, d.num_val, d.num_test), zinc.SIZES, strict=True))  # fmt: skip
        data = zinc.load(
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
        from graphs.data import pcqm

        d = config.data
        if d.source == "official":
            return pcqm.load_pcqm(
                d.dir,
                version=d.version,
                max_train=int(d.num_train),
                collate=collate,
                drop_invalid=bool(d.get("drop_invalid", False)),
            )
        sizes = (int(d.num_train) or None, int(d.num_val), int(d.num_test))  # None: the rest
        data = pcqm.load(
            d.dir,
            source_file=d.source_file or None,
            sizes=sizes,
            seed=d.seed,
            collate=collate,
            drop_invalid=bool(d.get("drop_invalid", False)),
        )
        return _standin(
            data,
            "offline PCQM4Mv2 stand-in: QM9 molecules (<= 9 heavy atoms) with their DFT "
            "HOMO-LUMO gaps (qm9pack), not PCQM4Mv2: never compare with the papers' MAE",
        )


class _Peptides(GraphTask):
    kind = ""

    def _load(self, config, collate):
        from graphs.data import peptides

        d = config.data
        if d.source == "official":
            return peptides.load_peptides(
                d.dir,
                kind=self.kind,
                collate=collate,
                drop_invalid=bool(d.get("drop_invalid", False)),
            )
        data = peptides.load(
            d.dir,
            kind=self.kind,
            num_peptides=int(d.num_peptides),
            seed=d.seed,
            collate=collate,
            lengths=tuple(d.get("peptide_lengths", peptides.LENGTHS)),
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
