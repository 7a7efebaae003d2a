"""GPS, the General, Powerful, Scalable graph Transformer (Rampasek et al., NeurIPS 2022,
"Recipe for a General, Powerful, Scalable Graph Transformer"), registered as the backbone
`gps` (`attnbench.nn.backbones`), with any registered attention mechanism as its global attention:
GFSA Table 6 replaces GPS's self-attention by GFSA (`config.attention.name = "gfsa"`; GFSA
arXiv 2312.04234 App. O.1: "We fix all hyperparameters of GPS ... as recommended in their
paper").

    graphs = gps.add_encodings(graphs, **gps.PE_RECIPES["peptides"])  # once, cached with the data
    arrays = batching.pack(graphs, target=target)    # lap_vec / lap_val / rwse ride along per node
    model = backbones.build("gps", model_cfg=config.model, attention_cfg=config.attention,
                            max_len=max_nodes, rngs=rngs)
    h = model(batch, train=train, key=key)   # `graphs.data.batching.GraphCollate` batch -> [B, dim]

Restated from the authors' code, `rampasek/GraphGPS` (read for facts, not copied):
`graphgps/network/gps_model.py` (`FeatureEncoder`, `GPSModel`), `graphgps/layer/gps_layer.py`
(`GPSLayer`), `graphgps/layer/gatedgcn_layer.py` (`GatedGCNLayer`),
`graphgps/encoder/laplace_pos_encoder.py` (`LapPENodeEncoder`),
`graphgps/encoder/kernel_pos_encoder.py` (`RWSENodeEncoder`),
`graphgps/encoder/composed_encoders.py` (node encoder `Atom+LapPE`: the atom embedding is
`dim - dim_pe` wide and the PE is concatenated to it), `graphgps/head/san_graph.py`, and the
configs `configs/GPS/{peptides-func-GPS, peptides-struct-GPS, zinc-GPS+RWSE}.yaml`.

What it computes, on a padded batch (`nodes`, `node_mask`, `edges`, `edge_index`,
`edge_mask`, plus `lap_vec` / `lap_val` with LapPE and `rwse` with RWSE):
  * node input: OGB's AtomEncoder (the sum of one embedding per atom feature, one table with
    per-feature offsets as `graphs.backbones.graphormer`, each feature's rows xavier-uniform as
    OGB's per-feature `nn.Embedding`s), `dim - lap_dim - rwse_dim` wide, concatenated with
      - LapPE (DeepSet, GraphGPS's `posenc_LapPE.model` for Peptides): per node and eigenpair
        j the pair (u_j[node], lambda_j) -> Linear(2, 2p) -> ReLU -> [Linear(2p, 2p) -> ReLU]
        x (layers - 2) -> Linear(2p, p) -> ReLU (layers = 1: Linear(2, p) -> ReLU), padding
        eigenpairs zeroed, summed over j -> p = `lap_dim` features. In training every
        eigenvector's sign is flipped at random (GraphGPS: `sign_flip`);
      - RWSE (`posenc_RWSE.model: Linear`): Linear(steps, `rwse_dim`) of the return
        probabilities;
    edge input: OGB's BondEncoder (sum of per-bond-feature embeddings), `dim` wide.
  * `num_layers` GPS layers (`GPSLayer.forward`), h the layer input:
      h_local = Norm(MPNN(h, e))                         (GatedGCN: residual inside, below;
                                                           GINE: Norm(h + drop(GINE(h, e))))
      h_attn  = Norm(h + drop(Attention(h, key-padding mask)))   any registered mechanism,
                                                           attention dropout is the mechanism's
      h = h_local + h_attn
      h = Norm(h + drop(Linear(2 dim, dim)(drop(ReLU(Linear(dim, 2 dim)(h))))))
    GatedGCN (Bresson & Laurent 2017, `GatedGCNLayer`), for an edge j -> i with features e_ij:
      ê_ij = D h_i + E h_j + C e_ij,   sigma_ij = sigmoid(ê_ij),
      h'_i = A h_i + sum_j sigma_ij * B h_j / (sum_j sigma_ij + 1e-6),
      h_i <- h_i + drop(ReLU(Norm(h'_i))),   e_ij <- e_ij + drop(ReLU(Norm(ê_ij)))
    (the updated edge features feed the next layer). GINE (`GINEConv`, eps = 0):
      MLP(h_i + sum_j ReLU(h_j + e_ij)), MLP = Linear -> ReLU -> Linear.
    Message passing is vectorised over the padded edge list: gathers by (graph, node) and
    `jax.ops.segment_sum` over flattened graph * N + node ids; padding edges carry weight 0.
  * readout: mean (`graph_pooling: mean`, Peptides) or sum (`add`, ZINC) over the real
    nodes -> `[B, dim]`, the pre-head features.

Head (the task's, not this module's): GraphGPS's Peptides head (`gnn.head: default`,
`layers_post_mp: 1`) is exactly one Linear(dim, out) after pooling, which `graphs.tasks`
already adds. ZINC's `san_graph` head is Linear(64, 32) -> ReLU -> Linear(32, 16) -> ReLU ->
Linear(16, 1): a ZINC recipe needs those two hidden layers in the task's head.

Differences from GraphGPS, each deliberate:
  * Norm is LayerNorm (epsilon 1e-5), not GraphGPS's BatchNorm (`gt.batch_norm: True`): the trainer
    (`attnbench.steps.setup`) keeps the model's non-trained arrays
    (`attnbench.nn.layers.Buffer`) constant through the step, so BatchNorm's running statistics
    could never be updated for evaluation. LayerNorm has the same 2 * dim parameters, so parameter
    counts match. Likewise RWSE's raw BatchNorm (`raw_norm_type: BatchNorm`, ZINC) is left out (the
    return probabilities are already in [0, 1]).
  * The LapPE sign flip is drawn per graph and eigenvector; GraphGPS draws one sign per
    eigenvector for the whole batch (the same distribution for each graph).
  * Padding eigenpairs (graphs with fewer nodes than `lap_k`): GraphGPS marks them NaN; here
    the eigenvector columns are zero (`graphs.data.positional`) and a column that is zero on every
    real node of a graph (no unit eigenvector is) is treated as padding.
  * Node / bond features are OGB's 9 / 3 (our ZINC stand-in is featurised so too), where
    GraphGPS's ZINC uses one atom type (28 rows) and one bond type (4 rows).
  * Attention projections: q/k/v/out with biases as `torch.nn.MultiheadAttention`, all
    xavier-uniform (PyTorch's out projection is uniform +-1/sqrt(dim)).

GraphGPS hyper-parameters (configs `configs/GPS/*.yaml` in `rampasek/GraphGPS`; the optimiser
fields from the same files; `clip_grad_norm: True` clips at `clip_grad_norm_value`, 1.0 by
default in `graphgps/config/optimizers_config.py`):

  | field               | Peptides-func          | Peptides-struct        | ZINC (GPS+RWSE)       |
  |---------------------|------------------------|------------------------|-----------------------|
  | layers, dim, heads  | 4, 96, 4               | 4, 96, 4               | 10, 64, 4             |
  | MPNN + global       | GatedGCN + Transformer | GatedGCN + Transformer | GINE + Transformer    |
  | PE (node encoder)   | Atom+LapPE: DeepSet,   | Atom+LapPE: DeepSet,   | TypeDictNode+RWSE:    |
  |                     | 10 eigvecs, dim_pe 16, | 10 eigvecs, dim_pe 16, | 20 steps, Linear,     |
  |                     | 2 layers, L = D - A    | 2 layers, L = D - A    | dim_pe 28, raw BN     |
  | edge encoder        | Bond (OGB)             | Bond (OGB)             | TypeDictEdge (4)      |
  | dropout / attn drop | 0.0 / 0.5              | 0.0 / 0.5              | 0.0 / 0.5             |
  | norm                | BatchNorm              | BatchNorm              | BatchNorm             |
  | pooling, head       | mean, 1 Linear         | mean, 1 Linear         | add, san_graph (3 FC) |
  | optimiser           | AdamW, lr 3e-4, wd 0   | AdamW, lr 3e-4, wd 0   | AdamW, 1e-3, wd 1e-5  |
  | schedule            | cosine, 10 warmup ep.  | cosine, 10 warmup ep.  | cosine, 50 warmup ep. |
  | epochs, batch       | 200, 128               | 200, 128               | 2000, 32              |
  | grad clipping       | norm 1.0               | norm 1.0               | norm 1.0              |
  | loss / metric       | BCE / AP               | L1 / MAE               | L1 / MAE              |
  | parameter budget    | ~500K (LRGB)           | ~500K (LRGB)           | ~500K                 |

Parameter count of this module's Peptides-struct build (11 outputs with the task's Linear head),
`tests/graphs/backbones/test_gps.py::test_peptides_struct_parameter_count`: 504,539, equal to the
count of GraphGPS's modules for that config worked out by hand (atom 174 x 80, bond 13 x 96,
LapPE DeepSet 624, 4 x 121,920 per layer, head 1,067), BatchNorm affine parameters counted as
LayerNorm's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from attention import cost
from attnbench import errors
from attnbench.nn import backbones, layers
from graphs.data import batching, positional

__all__ = [
    "PE_RECIPES",
    "with_encodings",
    "BATCH_FIELDS",
    "MPNNS",
    "POOLINGS",
    "EDGES_PER_NODE",
    "add_encodings",
    "GatedGCN",
    "GINE",
    "LapPEEncoder",
    "GPSLayer",
    "GPS",
    "gps_flops",
]

# `add_encodings` arguments of the GraphGPS recipes (module docstring table): Peptides use the
# combinatorial Laplacian's first 10 eigenpairs (the trivial one included, `laplacian_norm:
# none`), ZINC 20 random-walk steps.
PE_RECIPES = {
    "peptides": {"lap_k": 10, "rw_steps": None, "normalization": "none", "include_trivial": True},
    "zinc": {"lap_k": None, "rw_steps": 20},
}
# The `GraphCollate` fields the model reads (`lap_vec` / `lap_val` / `rwse` when configured).
BATCH_FIELDS = ("nodes", "node_mask", "edges", "edge_index", "edge_mask")
MPNNS = ("gatedgcn", "gine")
POOLINGS = ("mean", "sum")
# Directed edges per node the FLOP formula assumes: LRGB Peptides average 150.9 nodes and
# 307.3 directed edges, ZINC 23.2 nodes and 49.8 (LRGB paper Table 1; benchmarking-gnns).
EDGES_PER_NODE = 2.1


def add_encodings(
    graphs: Sequence[Mapping],
    *,
    lap_k: int | None = 10,
    rw_steps: int | None = None,
    normalization: str = "none",
    include_trivial: bool = True,
) -> list[dict]:
    """Copies of `graphs` (dicts as in `graphs.data.batching`, or a `PackedGraphs`) with the
    per-node encodings GPS reads, computed by `graphs.data.positional.encode` (one batched
    eigendecomposition per graph size): `lap_vec [n, lap_k]` (eigenvectors), `lap_val
    [n, lap_k]` (the graph's eigenvalues repeated on every node, as GraphGPS's `EigVals`) and
    `rwse [n, rw_steps]`, float32; None skips a kind. The defaults are GraphGPS's Peptides
    LapPE (`PE_RECIPES`). `batching.pack` stores the fields with the graphs, so a data loader
    calls this once before packing and caches the result with the dataset."""
    enc = positional.encode(
        graphs,
        lap_k=lap_k,
        rw_steps=rw_steps,
        normalization=normalization,
        include_trivial=include_trivial,
    )
    out = []
    for g in range(len(graphs)):
        graph = dict(graphs[g])
        rows = slice(enc.node_ptr[g], enc.node_ptr[g + 1])
        n = rows.stop - rows.start
        if enc.lap_vec is not None:
            graph["lap_vec"] = enc.lap_vec[rows]
            graph["lap_val"] = np.broadcast_to(enc.lap_val[g], (n, lap_k)).copy()
        if enc.rwse is not None:
            graph["rwse"] = enc.rwse[rows]
        out.append(graph)
    return out


def with_encodings(packed: batching.PackedGraphs, *, model_cfg) -> batching.PackedGraphs:
    """`packed` with the per-node encodings the GPS model section `model_cfg` reads
    (`lap_dim > 0`: LapPE with `lap_k` eigenpairs; `rwse_dim > 0`: RWSE of `rw_steps`), its
    per-graph fields (targets) kept; computed in memory at load time (`positional.encode`:
    seconds for molecule sets, a few minutes for LRGB Peptides on 2 cores)."""
    get = lambda name, default: model_cfg.get(name, default)  # noqa: E731
    lap_k = int(get("lap_k", 10)) if int(get("lap_dim", 16)) else None
    rw_steps = int(get("rw_steps", 20)) if int(get("rwse_dim", 0)) else None
    if lap_k is None and rw_steps is None:
        return packed
    graphs = add_encodings(packed, lap_k=lap_k, rw_steps=rw_steps)
    fields = {k: packed.arrays[k] for k in packed.fields}
    return batching.PackedGraphs(batching.pack(graphs, spd=False, **fields))


# --------------------------------------------------------------------------- building blocks


def _feature_table(rngs, dims: Sequence[int], width: int) -> tuple[nnx.Param, tuple[int, ...]]:
    """One embedding table for features of sizes `dims` (compact offsets), each feature's
    block xavier-uniform as OGB's per-feature `nn.Embedding(dim, width)`."""
    dims = [int(d) for d in dims]
    offsets = tuple(int(o) for o in np.concatenate([[0], np.cumsum(dims)[:-1]]))
    bounds = np.repeat([math.sqrt(6.0 / (d + width)) for d in dims], dims)[:, None]
    table = jax.random.uniform(rngs.params(), (sum(dims), width), jnp.float32, -1.0, 1.0)
    return nnx.Param(table * jnp.asarray(bounds, jnp.float32)), offsets


def _embed(table: nnx.Param, offsets: tuple[int, ...], feats):
    """Sum over the last axis of `feats` (int features) of their rows of `table`."""
    return table[...][jnp.asarray(feats, jnp.int32) + jnp.asarray(offsets, jnp.int32)].sum(-2)


def _gather(x, index):
    """`x [B, N, D]` at node ids `index [B, E]` of the same graph -> `[B, E, D]`."""
    return jnp.take_along_axis(x, index[..., None], axis=1)


def _scatter_sum(values, index, n: int):
    """Sums `values [B, E, D]` into their nodes `index [B, E]` -> `[B, N, D]`: one
    `segment_sum` over flattened graph * N + node ids."""
    b, e = index.shape
    flat = (jnp.arange(b, dtype=jnp.int32)[:, None] * n + index).reshape(-1)
    total = jax.ops.segment_sum(values.reshape(b * e, -1), flat, num_segments=b * n)
    return total.reshape(b, n, -1)


class GatedGCN(nnx.Module):
    """Residual gated graph convolution with edge features (module docstring; GraphGPS's
    `GatedGCNLayer` with `residual=True`): `(h [B, N, D], e [B, E, D], edge_index [B, E, 2],
    edge_mask [B, E]) -> (h, e)`."""

    def __init__(self, dim: int, dropout: float, *, dtype=jnp.float32, rngs: nnx.Rngs):
        self.A, self.B, self.C, self.D, self.E = (
            layers.torch_linear(dim, dim, dtype, rngs) for _ in range(5)
        )
        self.norm_h = layers.torch_layer_norm(dim, dtype, rngs)
        self.norm_e = layers.torch_layer_norm(dim, dtype, rngs)
        self.dropout = dropout

    def __call__(self, h, e, edge_index, edge_mask, *, train: bool = False, key=None):
        src, dst = edge_index[..., 0], edge_index[..., 1]
        e_hat = _gather(self.D(h), dst) + _gather(self.E(h), src) + self.C(e)
        sigma = jax.nn.sigmoid(e_hat) * edge_mask[..., None].astype(e_hat.dtype)
        n = h.shape[1]
        num = _scatter_sum(sigma * _gather(self.B(h), src), dst, n)
        den = _scatter_sum(sigma, dst, n)
        h_new = self.A(h) + num / (den + 1e-6)
        k1, k2 = layers.split_keys(key, 2)
        h_new = layers.dropout(jax.nn.relu(self.norm_h(h_new)), self.dropout, k1, train)
        e_new = layers.dropout(jax.nn.relu(self.norm_e(e_hat)), self.dropout, k2, train)
        return h + h_new, e + e_new


class GINE(nnx.Module):
    """GINE convolution (Hu et al. 2020; PyG `GINEConv`, eps = 0, as GraphGPS's ZINC):
    `MLP(h_i + sum_{j -> i} ReLU(h_j + e_ji))`, MLP = Linear -> ReLU -> Linear."""

    def __init__(self, dim: int, *, dtype=jnp.float32, rngs: nnx.Rngs):
        self.fc1 = layers.torch_linear(dim, dim, dtype, rngs)
        self.fc2 = layers.torch_linear(dim, dim, dtype, rngs)

    def __call__(self, h, e, edge_index, edge_mask):
        src, dst = edge_index[..., 0], edge_index[..., 1]
        msg = jax.nn.relu(_gather(h, src) + e) * edge_mask[..., None].astype(h.dtype)
        agg = _scatter_sum(msg, dst, h.shape[1])
        return self.fc2(jax.nn.relu(self.fc1(h + agg)))


class LapPEEncoder(nnx.Module):
    """GraphGPS's DeepSet LapPE encoder (module docstring): `(lap_vec [B, N, k], lap_val
    [B, N, k], node_mask [B, N]) -> [B, N, dim_pe]`, with random sign flips in training."""

    def __init__(self, dim_pe: int, num_layers: int, *, dtype=jnp.float32, rngs: nnx.Rngs):
        if num_layers < 1:
            raise errors.ConfigError(f"config.model.lap_layers={num_layers}: must be >= 1")
        if num_layers == 1:
            self.linears = nnx.List([layers.torch_linear(2, dim_pe, dtype, rngs)])
        else:
            widths = [2] + [2 * dim_pe] * (num_layers - 1) + [dim_pe]
            self.linears = nnx.List(
                [
                    layers.torch_linear(a, b, dtype, rngs)
                    for a, b in zip(widths[:-1], widths[1:], strict=True)
                ]
            )

    def __call__(self, lap_vec, lap_val, node_mask, *, train: bool = False, key=None):
        if train and key is None:
            raise ValueError("LapPE sign flips with train=True need a PRNG key")
        vec = jnp.asarray(lap_vec, jnp.float32)
        # A padding eigenpair's column is 0 on every real node; a unit eigenvector is not.
        valid = jnp.any((vec != 0) & jnp.asarray(node_mask, bool)[..., None], axis=1)  # [B, k]
        if train:
            flip = jax.random.bernoulli(key, 0.5, (vec.shape[0], 1, vec.shape[-1]))
            vec = jnp.where(flip, -vec, vec)
        x = jnp.stack([vec, jnp.asarray(lap_val, jnp.float32)], axis=-1)  # [B, N, k, 2]
        x = jnp.where(valid[:, None, :, None], x, 0.0)
        for lin in self.linears:
            x = jax.nn.relu(lin(x))
        return jnp.where(valid[:, None, :, None], x, 0.0).sum(axis=2)


class GPSLayer(nnx.Module):
    """One GPS layer (module docstring): `(h [B, N, D], e [B, E, D], batch fields) -> (h, e)`;
    `e` changes only with GatedGCN."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        mechanism,
        *,
        mpnn: str,
        dropout: float,
        layer_index: int,
        num_layers: int,
        max_len: int | None,
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        if mpnn == "gatedgcn":
            self.local = GatedGCN(dim, dropout, dtype=dtype, rngs=rngs)
        else:
            self.local = GINE(dim, dtype=dtype, rngs=rngs)
        self.mpnn = mpnn
        self.attn = layers.Attention(
            dim,
            num_heads,
            dim,
            mechanism,
            max_len=max_len,
            layer_index=layer_index,
            num_layers=num_layers,
            dtype=dtype,
            qkv_bias=True,
            out_bias=True,
            rngs=rngs,
        )
        self.norm_local = layers.torch_layer_norm(dim, dtype, rngs)
        self.norm_attn = layers.torch_layer_norm(dim, dtype, rngs)
        self.ff1 = layers.torch_linear(dim, 2 * dim, dtype, rngs)
        self.ff2 = layers.torch_linear(2 * dim, dim, dtype, rngs)
        self.norm_ff = layers.torch_layer_norm(dim, dtype, rngs)
        self.dropout = dropout

    def __call__(self, h, e, edge_index, edge_mask, node_mask, *, train=False, key=None, **inputs):
        keys = layers.split_keys(key, 6)
        rate = self.dropout
        if self.mpnn == "gatedgcn":
            h_local, e = self.local(h, e, edge_index, edge_mask, train=train, key=keys[0])
        else:
            h_local = self.local(h, e, edge_index, edge_mask)
            h_local = h + layers.dropout(h_local, rate, keys[0], train)
        h_local = self.norm_local(h_local)
        h_attn = self.attn(h, mask=node_mask, train=train, key=keys[1], **inputs)
        h_attn = self.norm_attn(h + layers.dropout(h_attn, rate, keys[2], train))
        h = h_local + h_attn
        ff = layers.dropout(jax.nn.relu(self.ff1(h)), rate, keys[3], train)
        h = self.norm_ff(h + layers.dropout(self.ff2(ff), rate, keys[4], train))
        return h, e


class GPS(nnx.Module):
    """The GPS encoder on padded graph batches (module docstring).

    Args:
      num_layers, dim, num_heads: GPS layers, width (= the attention width), heads.
      dropout: GraphGPS's `gt.dropout` (MPNN, attention output and FFN); attention dropout is
        the mechanism's own `dropout_rate` (GraphGPS's `gt.attn_dropout`).
      mpnn: "gatedgcn" (Peptides) or "gine" (ZINC).
      atom_dims, bond_dims: sizes of the node / edge features (OGB's for molecules).
      lap_k, lap_dim, lap_layers: LapPE eigenpairs read, its width (0: no LapPE) and DeepSet
        depth.
      rw_steps, rwse_dim: RWSE steps read and its width (0: no RWSE).
      pooling: "mean" (Peptides) or "sum" (ZINC) over real nodes.
    """

    def __init__(
        self,
        *,
        num_layers: int,
        dim: int,
        num_heads: int,
        dropout: float,
        attention_cfg,
        atom_dims: Sequence[int],
        bond_dims: Sequence[int],
        mpnn: str = "gatedgcn",
        lap_k: int = 10,
        lap_dim: int = 16,
        lap_layers: int = 2,
        rw_steps: int = 20,
        rwse_dim: int = 0,
        pooling: str = "mean",
        max_len: int | None = None,
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        if mpnn not in MPNNS:
            raise errors.ConfigError(f"config.model.mpnn={mpnn!r}: known: {', '.join(MPNNS)}")
        if pooling not in POOLINGS:
            raise errors.ConfigError(
                f"config.model.pooling={pooling!r}: known: {', '.join(POOLINGS)}"
            )
        atom_width = dim - lap_dim - rwse_dim
        if atom_width < 1 or lap_dim < 0 or rwse_dim < 0:
            raise errors.ConfigError(
                f"config.model.lap_dim={lap_dim} + rwse_dim={rwse_dim} must be >= 0 and leave "
                f"room for the atom embedding in config.model.dim={dim}"
            )
        mech = layers.mechanism(attention_cfg)
        self.atom_table, self.atom_offsets = _feature_table(rngs, atom_dims, atom_width)
        self.bond_table, self.bond_offsets = _feature_table(rngs, bond_dims, dim)
        self.lap_k, self.rw_steps = int(lap_k), int(rw_steps)
        self.lap = LapPEEncoder(lap_dim, lap_layers, dtype=dtype, rngs=rngs) if lap_dim else None
        self.rwse = layers.torch_linear(rw_steps, rwse_dim, dtype, rngs) if rwse_dim else None
        self.blocks = layers.block_stack(
            lambda i: GPSLayer(
                dim,
                num_heads,
                mech,
                mpnn=mpnn,
                dropout=dropout,
                layer_index=i,
                num_layers=num_layers,
                max_len=max_len,
                dtype=dtype,
                rngs=rngs,
            ),
            num_layers,
        )
        self.num_heads = num_heads
        self.pooling = pooling
        self.dtype = jnp.dtype(dtype)

    def _field(self, batch, name: str, width: int):
        if name not in batch:
            raise errors.ConfigError(
                f"the GPS model reads batch[{name!r}]: add the encodings to the graphs before "
                "packing (graphs.backbones.gps.add_encodings), or set its width to 0 in "
                "config.model"
            )
        width_given = np.shape(batch[name])[-1]
        if width_given != width:
            raise errors.ConfigError(
                f"batch[{name!r}] has {width_given} columns; the model was built for "
                f"{width} (config.model.{'lap_k' if name != 'rwse' else 'rw_steps'})"
            )
        return jnp.asarray(batch[name], jnp.float32)

    def embed_nodes(self, batch, *, train: bool = False, key=None):
        """`[B, N, dim]` float32: atom embedding, then LapPE and RWSE features."""
        node_mask = jnp.asarray(batch["node_mask"], bool)
        parts = [_embed(self.atom_table, self.atom_offsets, batch["nodes"])]
        if self.lap is not None:
            vec = self._field(batch, "lap_vec", self.lap_k)
            val = self._field(batch, "lap_val", self.lap_k)
            parts.append(self.lap(vec, val, node_mask, train=train, key=key).astype(jnp.float32))
        if self.rwse is not None:
            parts.append(self.rwse(self._field(batch, "rwse", self.rw_steps)).astype(jnp.float32))
        return jnp.concatenate(parts, axis=-1)

    def __call__(self, batch, *, train: bool = False, key=None, **inputs):
        """A padded graph batch -> `[B, dim]` float32 (pooled over real nodes); `inputs`:
        per-call attention inputs, for every layer."""
        if self.lap is not None:
            self._field(batch, "lap_vec", self.lap_k)
            self._field(batch, "lap_val", self.lap_k)
        if self.rwse is not None:
            self._field(batch, "rwse", self.rw_steps)
        keys = layers.split_keys(key, len(self.blocks) + 1)
        node_mask = jnp.asarray(batch["node_mask"], bool)
        edge_mask = jnp.asarray(batch["edge_mask"], bool)
        edge_index = jnp.asarray(batch["edge_index"], jnp.int32)
        h = self.embed_nodes(batch, train=train, key=keys[0]).astype(self.dtype)
        e = _embed(self.bond_table, self.bond_offsets, batch["edges"]).astype(self.dtype)
        for layer, k in zip(self.blocks, keys[1:], strict=True):
            h, e = layer(h, e, edge_index, edge_mask, node_mask, train=train, key=k, **inputs)
        return layers.pool(h, node_mask, self.pooling)


def gps_flops(encoder: GPS, tally, *, n: int, masked: bool) -> None:
    """Forward FLOPs of `encoder` on one graph of `n` nodes with `EDGES_PER_NODE * n` directed
    edges, into `tally` (`attnbench.nn.flops.Tally`): embeddings (feature sums, PE encoders), per
    layer the MPNN (its linears on nodes / edges, gathers and segment sums as elementwise
    work), the attention (projections and the mechanism's formula), the norms, residuals and
    the FFN, and the pooling."""
    edges = int(round(EDGES_PER_NODE * n))
    dim = encoder.bond_table.shape[-1]
    tally.claim("embedding", encoder.atom_table)
    tally.claim("embedding", encoder.bond_table)
    atom_width = encoder.atom_table.shape[-1]
    tally.add(
        "embedding",
        elementwise=n * atom_width * (len(encoder.atom_offsets) - 1)
        + edges * dim * (len(encoder.bond_offsets) - 1),
    )
    if encoder.lap is not None:
        for lin in encoder.lap.linears:
            tally.linear("embedding", lin, n * encoder.lap_k)
            tally.add("embedding", elementwise=n * encoder.lap_k * lin.out_features)  # ReLU
        tally.add("embedding", elementwise=n * encoder.lap_k * encoder.lap.linears[-1].out_features)
    if encoder.rwse is not None:
        tally.linear("embedding", encoder.rwse, n)
    for i, layer in enumerate(encoder.blocks):
        local = layer.local
        if isinstance(local, GatedGCN):
            for lin in (local.A, local.B, local.D, local.E):
                tally.linear("projections", lin, n)
            tally.linear("projections", local.C, edges)
            # ê (2 adds), sigmoid and mask (~6), the gated message (1), two sums (2), the
            # division (n), ReLU + residual on nodes and edges.
            tally.add("projections", elementwise=edges * dim * 11 + n * dim * 4)
            backbones.norm_flops(local.norm_h, tally, n=n, ops=cost.LAYERNORM)
            backbones.norm_flops(local.norm_e, tally, n=edges, ops=cost.LAYERNORM)
        else:
            tally.linear("projections", local.fc1, n)
            tally.linear("projections", local.fc2, n)
            tally.add("projections", elementwise=edges * dim * 4 + n * dim * 3)
        backbones.attention_flops(layer.attn, tally, n=n, layer_index=i, masked=masked)
        for norm in (layer.norm_local, layer.norm_attn, layer.norm_ff):
            backbones.norm_flops(norm, tally, n=n, ops=cost.LAYERNORM)
        tally.add("norms/other", elementwise=4 * n * dim)  # residuals, h_local + h_attn
        tally.linear("mlp", layer.ff1, n)
        tally.linear("mlp", layer.ff2, n)
        tally.add("mlp", elementwise=n * layer.ff1.out_features)  # ReLU
    tally.add("norms/other", elementwise=n * dim)  # pooling


@backbones.register("gps", flops=gps_flops)
def gps(*, model_cfg, attention_cfg, max_len: int, rngs):
    """GPS from a model section: `num_layers`, `dim`, `num_heads`, `dropout`, `atom_dims`,
    `bond_dims`, `dtype`, and optional `mpnn` ("gatedgcn"), `lap_k` (10), `lap_dim` (16; 0: no
    LapPE), `lap_layers` (2), `rw_steps` (20), `rwse_dim` (0: no RWSE), `pooling` ("mean").
    `qkv_dim`, when present, must equal `dim` (GPS's heads split the width). The attention
    dropout is `config.attention.dropout_rate` (GraphGPS: 0.5)."""
    m = model_cfg
    get = lambda name, default: m.get(name, default) if hasattr(m, "get") else default  # noqa: E731
    qkv = get("qkv_dim", m.dim)
    if qkv != m.dim:
        raise errors.ConfigError(
            f"config.model.qkv_dim={qkv}: GPS's attention width is its model width; set it to "
            f"config.model.dim={m.dim}"
        )
    return GPS(
        num_layers=m.num_layers,
        dim=m.dim,
        num_heads=m.num_heads,
        dropout=get("dropout", 0.0),
        attention_cfg=attention_cfg,
        atom_dims=tuple(m.atom_dims),
        bond_dims=tuple(m.bond_dims),
        mpnn=get("mpnn", "gatedgcn"),
        lap_k=get("lap_k", 10),
        lap_dim=get("lap_dim", 16),
        lap_layers=get("lap_layers", 2),
        rw_steps=get("rw_steps", 20),
        rwse_dim=get("rwse_dim", 0),
        pooling=get("pooling", "mean"),
        max_len=max_len,
        dtype=layers.compute_dtype(get("dtype", "float32")),
        rngs=rngs,
    )
