"""Graphormer (Ying et al., NeurIPS 2021, "Do Transformers Really Perform Bad for Graph
Representation?"), registered as the backbone `graphormer` (`attnbench.nn.backbones`).

    model = backbones.build("graphormer", model_cfg=config.model, attention_cfg=config.attention,
                            max_len=n + 1, rngs=rngs)
    h = model(batch, train=train, key=key)   # `graphs.data.batching.GraphCollate` batch -> [B, dim]

Unlike the sequence backbones it embeds its own inputs: it takes the padded graph batch
(`nodes`, `node_mask`, `edges`, `edge_index`, `edge_mask`, `adjacency`, `spd`) and returns the
graph token's final representation (the readout of Graphormer's graph-level tasks).

What it computes (the paper's Sec. 3, with the details of the authors' v1 code
(microsoft/Graphormer v1.0), which GFSA's ZINC code forks (jeongwhanchoi/GFSA `Graph/Graph_ZINC`;
GFSA arXiv 2312.04234 App. O.1), as does Sliceformer's PCQM4M code (DaShenZi721/sliceformer
`Graphormer/`; Sliceformer arXiv 2310.17683 Sec. 4.2, Table 6)):
  * node input: the sum of one embedding per node feature (one table, each feature at its own
    offset) plus in-degree and out-degree embeddings (index degree + 1, clipped to the table),
    with a learned graph token prepended (the virtual node); input dropout.
  * attention bias `[B, H, N+1, N+1]`, computed once and added before the softmax of every layer:
      - spatial encoding: a learned scalar per head and shortest-path distance (index d + 1,
        clipped to the table's second-to-last row; unreachable pairs use the last row, as the
        authors' Floyd-Warshall marks them 510 of a 512-row table);
      - edge encoding (`edge_type=multi_hop`): along one shortest path i -> j of d hops, the
        n-th edge's features are embedded (one H-vector per feature, averaged over features),
        multiplied by the learned H x H matrix of hop n, summed over the first
        `multi_hop_max_dist` hops and divided by min(d, multi_hop_max_dist); 0 for i = j and
        for unreachable pairs;
      - the graph token's row and column: Graphormer's learned `graph_token_virtual_distance`
        (one scalar per head), added once to every entry of row 0 and of column 0.
  * `num_layers` pre-LN blocks: x + drop(attn(LN(x), bias)); x + drop(FFN(LN(x))) with
    FFN = Linear -> GELU (erf) -> Linear (no dropout inside the FFN, as the authors' code),
    the shared `attnbench.nn.layers.EncoderBlock`; its attention takes any registered mechanism,
    the bias through the mechanism's `bias` input (mechanisms without one ignore it) and padded
    nodes through a key-padding mask; final LayerNorm. Every LayerNorm has epsilon 1e-5, the
    PyTorch default the authors' code keeps.
  * init as the authors': embeddings N(0, 0.02), linear kernels N(0, 0.02 / sqrt(num_layers))
    with zero biases.

Choices where paper and code leave room (each also in the module's tests):
  * which shortest path carries the edge encoding when several exist: the authors take the
    path Floyd-Warshall's `path` matrix encodes; here the path that always steps to the
    lowest-numbered neighbour one hop closer to the target (`next_hops`). Both are shortest
    paths; they differ only on graphs with several (rings).
  * shortest paths through node 0: the distances agree, the edge encoding does not. The v1 code,
    which GFSA's and Sliceformer's forks copy (`algos.pyx`), records each path's intermediate
    node in a matrix initialised to 0 and reads 0 back as "no intermediate node", so a shortest
    path whose recorded intermediate is node 0 is rebuilt as the single hop i -> j: its edge
    encoding reads the features of an edge that does not exist (zeros) in place of the path's
    edges. Upstream Graphormer fixed this later (microsoft/Graphormer pull request #119, -1 as
    the empty mark); we follow the fix, so our outputs differ from the forks' on such pairs.
  * padding: the authors give padded keys -inf in the bias; here a key-padding mask does it, so
    the bias is finite everywhere and a mechanism receives the mask in its own form.
  * degrees: the v1 code feeds the in-degree to both degree tables; here in- and out-degree
    are both computed (equal for molecules, whose edges come in both directions).
  * node features: the authors' ZINC code has one atom-type feature (a 64-row table); this
    stand-in carries OGB's 9 features, so the table is either compact (`feature_offset=0`,
    sum of the feature sizes, the default) or Graphormer's OGB layout (`feature_offset=512`:
    512 rows per feature + 1, as for PCQM4M, which reproduces the published parameter counts).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from attention import cost
from attnbench import errors
from attnbench.nn import backbones, layers

__all__ = [
    "feature_layout",
    "next_hops",
    "Graphormer",
    "BATCH_FIELDS",
]

# The `GraphCollate` fields the model reads.
BATCH_FIELDS = ("nodes", "node_mask", "edges", "edge_index", "edge_mask", "adjacency", "spd")


def feature_layout(dims: Sequence[int], offset: int = 0) -> tuple[int, np.ndarray]:
    """`(table rows, per-feature offsets)` of one embedding table holding every feature of
    sizes `dims`: compact (`offset=0`: offsets are the cumulative sizes) or Graphormer's layout
    (`offset > 0`: feature f at `1 + f * offset`, `offset * len(dims) + 1` rows, its
    `convert_to_single_emb`)."""
    dims = [int(d) for d in dims]
    if offset <= 0:
        return sum(dims), np.concatenate([[0], np.cumsum(dims)[:-1]]).astype(np.int32)
    if max(dims) > offset:
        raise ValueError(f"feature_offset={offset} is below a feature's size {max(dims)}")
    return offset * len(dims) + 1, (1 + offset * np.arange(len(dims))).astype(np.int32)


def next_hops(adjacency, spd):
    """`[B, N, N]` int32: for each pair (i, j) with d = spd[i, j] >= 1, the lowest-numbered
    k with an edge i -> k and spd[k, j] = d - 1 (the next node of the shortest path the edge
    encoding follows); i itself where d < 1 (same node, unreachable or padding)."""
    d = spd[:, :, :, None]  # [B, i, j, 1]
    # cand[b, i, j, k]: edge i -> k and k one hop closer to j.
    cand = adjacency[:, :, None, :] & (jnp.swapaxes(spd, 1, 2)[:, None, :, :] == d - 1)
    cand = cand & (d >= 1)
    first = jnp.argmax(cand, axis=-1).astype(jnp.int32)
    n = spd.shape[-1]
    own = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :, None], spd.shape)
    return jnp.where(spd >= 1, first, own)


def _embedding(rngs, rows: int, width: int):
    return nnx.Param(nnx.initializers.normal(0.02)(rngs.params(), (rows, width)))


class Graphormer(nnx.Module):
    """Graphormer encoder on padded graph batches (see the module docstring).

    Args:
      atom_dims, bond_dims: sizes of the node / edge features (OGB's for molecules).
      feature_offset: 0 (compact tables) or Graphormer's per-feature offset (512).
      num_degree, num_spatial, num_edge_dis: rows of the degree, spatial and hop-matrix tables.
      multi_hop_max_dist: hops of a path the edge encoding reads (<= num_edge_dis).
      input_dropout: dropout on the embedded nodes (graph token included).
    """

    def __init__(
        self,
        *,
        num_layers: int,
        dim: int,
        num_heads: int,
        mlp_dim: int,
        dropout_rate: float,
        input_dropout: float,
        attention_cfg,
        atom_dims: Sequence[int],
        bond_dims: Sequence[int],
        feature_offset: int = 0,
        num_degree: int = 64,
        num_spatial: int = 40,
        num_edge_dis: int = 40,
        multi_hop_max_dist: int = 20,
        max_len: int | None = None,
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        if not 1 <= multi_hop_max_dist <= num_edge_dis:
            raise errors.ConfigError(
                f"config.model.multi_hop_max_dist={multi_hop_max_dist}: must be in "
                f"[1, config.model.num_edge_dis={num_edge_dis}]"
            )
        if num_spatial < 3 or num_degree < 2:
            raise errors.ConfigError(
                f"config.model.num_spatial={num_spatial} / num_degree={num_degree}: need >= 3 "
                "spatial rows (padding, distance 0, unreachable) and >= 2 degree rows"
            )
        mech = layers.mechanism(attention_cfg)
        self.num_heads = num_heads
        atom_rows, atom_offsets = feature_layout(atom_dims, feature_offset)
        bond_rows, bond_offsets = feature_layout(bond_dims, feature_offset)
        self.atom_offsets = tuple(int(o) for o in atom_offsets)  # static, not parameters
        self.bond_offsets = tuple(int(o) for o in bond_offsets)
        self.atom_encoder = _embedding(rngs, atom_rows, dim)
        self.edge_encoder = _embedding(rngs, bond_rows, num_heads)
        self.edge_dis_encoder = nnx.Param(
            nnx.initializers.normal(0.02)(rngs.params(), (num_edge_dis, num_heads, num_heads))
        )
        self.spatial_pos_encoder = _embedding(rngs, num_spatial, num_heads)
        self.in_degree_encoder = _embedding(rngs, num_degree, dim)
        self.out_degree_encoder = _embedding(rngs, num_degree, dim)
        self.graph_token = _embedding(rngs, 1, dim)
        self.graph_token_virtual_distance = _embedding(rngs, 1, num_heads)
        # The authors' pre-LN block: x + drop(attn(LN(x))); x + drop(FFN(LN(x))), q/k/v and
        # output biases (nn.Linear's defaults), an erf GELU and no dropout inside the FFN;
        # linear kernels N(0, 0.02 / sqrt(num_layers)).
        init = nnx.initializers.normal(0.02 / math.sqrt(num_layers))
        self.blocks = layers.block_stack(
            lambda i: layers.EncoderBlock(
                dim,
                num_heads,
                dim,
                mlp_dim,
                dropout_rate,
                mech,
                max_len=max_len,
                dtype=dtype,
                rngs=rngs,
                layer_index=i,
                num_layers=num_layers,
                qkv_bias=True,
                out_bias=True,
                kernel_init=init,
                gelu="erf",
                mlp_hidden_dropout=0.0,
                ln_eps=1e-5,  # the authors' nn.LayerNorm default
            ),
            num_layers,
        )
        self.final_ln = nnx.LayerNorm(dim, epsilon=1e-5, dtype=dtype, rngs=rngs)
        self.input_dropout = input_dropout
        self.multi_hop_max_dist = multi_hop_max_dist
        self.dtype = jnp.dtype(dtype)

    # ------------------------------------------------------------------ structural encodings

    def attention_bias(self, batch):
        """`[B, H, N+1, N+1]` float32: spatial + edge encoding on node pairs, the virtual
        distance on the graph token's row and column (token 0)."""
        spd = jnp.asarray(batch["spd"], jnp.int32)
        b, n = spd.shape[:2]
        h = self.num_heads
        rows = self.spatial_pos_encoder.shape[0]
        index = jnp.where(spd >= 0, jnp.minimum(spd + 1, rows - 2), rows - 1)
        spatial = self.spatial_pos_encoder[...][index]  # [B, N, N, H]
        pair = spatial + self.edge_encoding(batch)
        t = self.graph_token_virtual_distance[...][0]  # [H]
        bias = jnp.zeros((b, n + 1, n + 1, h), jnp.float32)
        bias = bias.at[:, 1:, 1:].set(pair)
        bias = bias.at[:, 0, :].add(t)
        bias = bias.at[:, 1:, 0].add(t)
        return jnp.transpose(bias, (0, 3, 1, 2))

    def edge_encoding(self, batch):
        """`[B, N, N, H]`: the multi-hop edge encoding (module docstring)."""
        spd = jnp.asarray(batch["spd"], jnp.int32)
        adjacency = jnp.asarray(batch["adjacency"], bool)
        b, n = spd.shape[:2]
        h = self.num_heads
        # Per edge: mean over its features of their H-vectors; scattered to a dense [B, N, N, H].
        feats = jnp.asarray(batch["edges"], jnp.int32) + jnp.asarray(self.bond_offsets)
        per_edge = self.edge_encoder[...][feats].mean(axis=-2)
        per_edge = per_edge * jnp.asarray(batch["edge_mask"], per_edge.dtype)[..., None]
        ends = jnp.asarray(batch["edge_index"], jnp.int32)
        flat = ends[..., 0] * n + ends[..., 1]  # [B, E]
        dense = jnp.zeros((b, n * n, h), per_edge.dtype)
        dense = dense.at[jnp.arange(b)[:, None], flat].add(per_edge)
        nxt = next_hops(adjacency, spd)
        hops = self.multi_hop_max_dist
        weights = self.edge_dis_encoder[...][:hops]  # [D, H, H]

        def hop(carry, w_t):
            cur, total, t = carry
            step = jnp.take_along_axis(nxt, cur, axis=1)  # nxt[b, cur[b, i, j], j]
            e = jnp.take_along_axis(dense, (cur * n + step).reshape(b, n * n, 1), axis=1)
            e = e.reshape(b, n, n, h) @ w_t
            total = total + jnp.where((t < spd)[..., None], e, 0.0)
            return (step, total, t + 1), None

        start = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :, None], (b, n, n))
        zero = jnp.zeros((b, n, n, h), jnp.float32)
        (_, total, _), _ = jax.lax.scan(hop, (start, zero, jnp.int32(0)), weights)
        length = jnp.clip(spd, 1, hops).astype(jnp.float32)[..., None]
        return jnp.where((spd >= 1)[..., None], total / length, 0.0)

    def embed_nodes(self, batch):
        """`[B, N+1, dim]` float32: graph token, then node features + degree embeddings."""
        nodes = jnp.asarray(batch["nodes"], jnp.int32) + jnp.asarray(self.atom_offsets)
        x = self.atom_encoder[...][nodes].sum(axis=-2)
        adjacency = jnp.asarray(batch["adjacency"], jnp.int32)
        rows = self.in_degree_encoder.shape[0]
        in_deg = jnp.minimum(adjacency.sum(axis=1) + 1, rows - 1)
        out_deg = jnp.minimum(adjacency.sum(axis=2) + 1, rows - 1)
        x = x + self.in_degree_encoder[...][in_deg] + self.out_degree_encoder[...][out_deg]
        token = jnp.broadcast_to(self.graph_token[...][None], (x.shape[0], 1, x.shape[-1]))
        return jnp.concatenate([token, x], axis=1)

    def __call__(self, batch, *, train: bool = False, key=None, **inputs):
        """A padded graph batch -> `[B, dim]` (the graph token after the final LayerNorm);
        `inputs`: per-call attention inputs, for every block."""
        keys = layers.split_keys(key, len(self.blocks) + 1)
        node_mask = jnp.asarray(batch["node_mask"], bool)
        mask = jnp.concatenate([jnp.ones_like(node_mask[:, :1]), node_mask], axis=1)
        bias = self.attention_bias(batch)
        x = layers.dropout(self.embed_nodes(batch), self.input_dropout, keys[0], train)
        x = x.astype(self.dtype)
        for block, k in zip(self.blocks, keys[1:], strict=True):
            x = block(x, mask=mask, bias=bias, train=train, key=k, **inputs)
        return self.final_ln(x)[:, 0].astype(jnp.float32)


def graphormer_flops(encoder: Graphormer, tally, *, n: int, masked: bool) -> None:
    """Forward FLOPs of `encoder` on one graph of `n - 1` nodes (`n` tokens with the graph
    token), into `tally` (`attnbench.nn.flops.Tally`):
      embedding: the node input (one add per atom feature and degree table per node and
        channel) and the attention bias: per node pair, `multi_hop_max_dist` hops of one
        H-vector (the bond features' mean) times an H x H matrix (2 H^2 multiply-add FLOPs per
        hop), the per-feature embedding adds and the average, plus the spatial and virtual
        distance adds; an upper bound, since pairs closer than the hop limit use fewer hops;
      the blocks (`attnbench.nn.backbones.encoder_block_flops`: norms, residuals, projections, the
        mechanism's own formula, the FFN) on all `n` tokens, and the final LayerNorm."""
    nodes, h = n - 1, encoder.num_heads
    dim = encoder.final_ln.num_features
    for table in (
        encoder.atom_encoder,
        encoder.edge_encoder,
        encoder.edge_dis_encoder,
        encoder.spatial_pos_encoder,
        encoder.in_degree_encoder,
        encoder.out_degree_encoder,
        encoder.graph_token,
        encoder.graph_token_virtual_distance,
    ):
        tally.claim("embedding", table)
    tally.add("embedding", elementwise=nodes * dim * (len(encoder.atom_offsets) + 1))
    pairs, hops = nodes * nodes, encoder.multi_hop_max_dist
    tally.add(
        "embedding",
        matmul=2.0 * pairs * hops * h * h,
        elementwise=pairs * h * (hops * len(encoder.bond_offsets) + 3) + 2 * n * h,
    )
    for i, block in enumerate(encoder.blocks):
        backbones.encoder_block_flops(block, tally, n=n, layer_index=i, masked=masked)
    backbones.norm_flops(encoder.final_ln, tally, n=n, ops=cost.LAYERNORM)


@backbones.register("graphormer", flops=graphormer_flops)
def graphormer(*, model_cfg, attention_cfg, max_len: int, rngs):
    """Graphormer from a model section with `num_layers`, `dim`, `num_heads`, `mlp_dim`,
    `dropout`, `input_dropout`, `dtype`, `atom_dims`, `bond_dims`, `feature_offset`,
    `num_degree`, `num_spatial`, `num_edge_dis`, `multi_hop_max_dist`. `qkv_dim` must equal
    `dim` (Graphormer's heads split the width)."""
    m = model_cfg
    if m.qkv_dim != m.dim:
        raise errors.ConfigError(
            f"config.model.qkv_dim={m.qkv_dim}: Graphormer's attention width is its model "
            f"width; set it to config.model.dim={m.dim}"
        )
    return Graphormer(
        num_layers=m.num_layers,
        dim=m.dim,
        num_heads=m.num_heads,
        mlp_dim=m.mlp_dim,
        dropout_rate=m.dropout,
        input_dropout=m.input_dropout,
        attention_cfg=attention_cfg,
        atom_dims=tuple(m.atom_dims),
        bond_dims=tuple(m.bond_dims),
        feature_offset=m.feature_offset,
        num_degree=m.num_degree,
        num_spatial=m.num_spatial,
        num_edge_dis=m.num_edge_dis,
        multi_hop_max_dist=m.multi_hop_max_dist,
        max_len=max_len,
        dtype=layers.compute_dtype(m.dtype),
        rngs=rngs,
    )
