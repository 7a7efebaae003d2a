"""Graph-Bridge: SAMSA's graph tokeniser (Lenhat et al., "SAMSA: Efficient Transformer for Many
Data Modalities", arXiv 2408.05391, §4.3 and Appendix D), registered as the backbone
`graph_bridge` (`attnbench.nn.backbones`) for the LRGB Peptides rows of SAMSA Tables 1, 3 and 4.

    model = backbones.build("graph_bridge", model_cfg=config.model,
                            attention_cfg=config.attention, max_len=n + e, rngs=rngs)
    h = model(batch, train=train, key=key)   # `graphs.data.batching.GraphCollate` batch -> [B, dim]

Nodes AND edges become tokens of one sequence, which the SAMSA encoder
(`attnbench.nn.samsa_block.SAMSAEncoder`: pre-RMSNorm blocks, one shared zero-initialised residual
scale, drop-path) processes with any registered attention mechanism: `samsa` (hard or soft
top-k sampling) or `softmax` (the full-attention baseline in the same block).

What it computes (paper §4.3, with the details of the App. D listing / the authors' PyTorch
`GraphBridge` module of HySonLab/SAMSA):

    x_i   = sum_f A_f[node_feat_i,f]                 node input (one table, per-feature offsets)
    e_ij  = sum_f B_f[edge_feat_ij,f]                edge input
    p_i   = [g_i^l * softplus(c_l) ; g_i^r * softplus(c_r)] + phi(x_i)   in R^{2 x d_rf}
            g ~ N(0, 1) fresh per forward, c_l, c_r in R^{d_rf} learnable, initialised to ones
            (std softplus(1) = 1.3133), phi = mlp_node_pe: Linear(dim, 4 dim) -> GELU ->
            Linear(4 dim, 2 d_rf), its output split as (left, right)
    p_ij  = p_i^l - p_j^r                            edge i -> j: LEFT half of the source minus
                                                     RIGHT half of the target (the code's gather
                                                     on the (node, half) layout; the paper's
                                                     equation writes p_i - p_j)
    h_i   = mlp_node(concat(x_i, p_i^l, p_i^r))      Linear(dim + 2 d_rf, 4 dim) -> GELU -> Linear
    h_ij  = mlp_edge(concat(e_ij, p_ij))             Linear(dim + d_rf, 4 dim) -> GELU -> Linear
    tokens = [h_1 .. h_N ; h_e1 .. h_eE]  with mask [node_mask ; edge_mask]

then `num_layers` SAMSA blocks and a final RMSNorm, and a readout to `[B, dim]`.

Choices where paper and code leave room (each covered by the module's tests):
  * inputs: the authors feed the preprocessed features to `nn.LazyLinear`; here the integer OGB
    features are embedded as a sum of per-feature embeddings (one table, feature f at offset
    sum(dims[:f]), as graphormer's compact layout), a linear map of their one-hot encodings.
    Tables are N(0, 1 / #features), so x_i has unit variance per coordinate like the PE.
  * MLP init and GELU as PyTorch's `nn.Linear` / `nn.GELU` defaults the code uses (uniform
    +-1/sqrt(fan_in) kernels and biases, exact erf GELU).
  * `random_feature_dim` (d_rf): not in the paper; default 128, the `GRAPHBRIDGE,128,128`
    line (d_model, d_random_feature) of an architecture file of the authors' code.
  * noise at evaluation: the authors' `GraphBridge.forward` draws `torch.randn` on every call
    (no training check), so predictions are stochastic. Kept (`pe_noise_at_eval=True`); with
    `key=None` at evaluation the noise comes from the fixed key `eval_seed`
    (`config.model.pe_eval_seed`, default 0), so evaluation is reproducible.
    `pe_noise_at_eval=False` uses the noise's mean (0): p_i = phi(x_i).
  * the noise of node slot (b, i) depends on the key, b and i only (`node_noise`), not on how
    many padding slots a batch has: a graph's output is the same in any node/edge bucket.
  * padding: tokens of padded node/edge slots are zeroed and masked (keys of the attention,
    readout); padded edges (`edge_index` (0, 0)) gather node 0's PE before being masked.
  * readout: the authors' regression head (`REGHEAD`) is attention pooling, softmax over tokens
    of Linear_{d->1}(h) then a weighted sum, followed by the task's linear layer. Its mask
    term `+ (1 - mask) * 1e-9` does not mask padding (a bug; here padded tokens get weight 0).
    It pools every token, nodes and edges: the code's `GETNODE` (keep node tokens) indexes the
    batch axis with the padded node count (`x[n_nodes]`), an IndexError for Peptides' hundreds
    of node slots and batch 32, so the Peptides runs cannot have used it as written (the
    snapshot read may differ from the paper's version). Defaults `readout="attention"`,
    `readout_tokens="all"`; "mean" / "sum" and "nodes" are the alternatives.
  * no input dropout: the authors' `GraphBridge` has none (dropout and drop-path are inside
    the SAMSA blocks).
  * `config.model.positions` is ignored: the random-feature PE replaces sequence positions.

FLOPs: `graph_bridge_flops`, registered with the backbone, counts one graph of n tokens of
which `NODE_SHARE` (1/3) are nodes (the formula only receives n); the tokeniser MLPs go to
"embedding", the attention pooling to "head". `tokenizer_flops` takes exact node and edge
counts.

Length handed to the mechanism (`max_len`): N + E, the node bucket plus the edge bucket of a
batch, at most `config.data.max_nodes` plus the largest edge bucket the task's
`GraphCollate` allows; the task computes it (`attention_length`) and passes it to `build`.

Peptides hyper-parameters (for the recipe; SAMSA paper Tables 7 and 8, App. B, Table 1,
the authors' code as noted; LRGB facts from the LRGB paper, Dwivedi et al. 2022, arXiv
2206.08164, and its repository vijaydwivedi75/lrgb):

| setting                | Peptides-func           | Peptides-struct         | source          |
|------------------------|-------------------------|-------------------------|-----------------|
| layers (n_depth)       | 24                      | 24                      | Table 8         |
| width d_model          | 128                     | 128                     | Table 8         |
| FFN width d_FFN        | 512                     | 512                     | Table 8         |
| heads                  | 8                       | 8                       | Table 8         |
| dropout (p_dropout)    | 0.3                     | 0.3                     | Table 8         |
| drop-path (p_droppath) | 0.2                     | 0.2                     | Table 8         |
| k (SAMSA)              | 128 / 256 / 512; Table 3| 128 / 256 / 512; Table 3| Tables 1, 3     |
|                        | hard matches k=256;     | hard matches k=128;     |                 |
|                        | no soft-512 run         | soft run only at 128    |                 |
| temperature tau        | 1.0                     | 1.0                     | code arch file  |
| attention-map dropout  | 0.0                     | 0.0                     | code arch file  |
| d_rf (random features) | 128                     | 128                     | code arch file  |
| optimiser              | AdamW, betas 0.9, 0.999 | AdamW, betas 0.9, 0.999 | App. B          |
| learning rate          | 0.0004                  | 0.001                   | Table 7         |
| weight decay           | 0.01                    | 0.01                    | Table 7         |
| epochs                 | 160                     | 240                     | Table 7         |
| batch size             | 32                      | 32                      | App. B          |
| schedule               | 2000-step linear warm-up, then cosine annealing   | App. B          |
| gradient clipping      | max-norm 2.0            | max-norm 2.0            | Table 7, App. B |
| loss                   | not stated (BCE likely) | SmoothL1                | App. B          |
| outputs, metric        | 10 labels, AP (macro)   | 11 targets, MAE         | §5, LRGB        |
| seeds                  | 4                       | 4                       | Table 3         |

"code arch file": an architecture file of the authors' code (HySonLab/SAMSA, read as a loose
file through code search; path and commit unknown): `GRAPHBRIDGE,128,128` (d_model,
d_random_feature) followed by repeated `HSTRANS,128,128,512,0.3,0.0,0.2,8,512,1.0,True` lines
(d_model, d_attention, d_FFN, dropout, attention-map dropout, drop-path, heads, k, tau, hard;
the excerpt seen was cut after 13 of them, so its depth and head are unseen). Its dropout and
drop-path match Table 8's Peptides rows; it is one cell's file (hard, k = 512).

The k x soft/hard cells and the Table 3 selections are inconsistent in places (our comparison
of the paper's tables: e.g. Table 3's Peptides-func hard 0.7221 is Table 1's hard k = 256,
although Table 1's hard k = 512 is higher; Table 2's LRA rows do not always match Table 1's
cells either).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from attention import cost
from attnbench import errors
from attnbench.nn import backbones, layers, samsa_block

__all__ = [
    "READOUTS",
    "READOUT_TOKENS",
    "DEFAULT_RANDOM_FEATURE_DIM",
    "BATCH_FIELDS",
    "NODE_SHARE",
    "node_noise",
    "GraphBridge",
    "graph_bridge_flops",
    "tokenizer_flops",
]

READOUTS = ("attention", "mean", "sum")
READOUT_TOKENS = ("all", "nodes")
# d_rf: the `GRAPHBRIDGE,128,128` line of the authors' Peptides architecture file.
DEFAULT_RANDOM_FEATURE_DIM = 128
# Nodes among the N + E tokens the FLOP formula assumes when only the total is known: molecules
# store each bond in both directions, E ~ 2N (LRGB Peptides: 150.9 nodes, 307.3 edges a graph).
NODE_SHARE = 1.0 / 3.0
# The `GraphCollate` fields the model reads.
BATCH_FIELDS = ("nodes", "node_mask", "edges", "edge_index", "edge_mask")


def _torch_linear(rngs: nnx.Rngs, fan_in: int, fan_out: int) -> nnx.Linear:
    """`nnx.Linear` initialised as PyTorch's `nn.Linear`: kernel and bias U(+-1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(fan_in)

    def bias_init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return nnx.Linear(
        fan_in,
        fan_out,
        kernel_init=nnx.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform"),
        bias_init=bias_init,
        rngs=rngs,
    )


class _Mlp(nnx.Module):
    """Linear -> exact GELU -> Linear (the code's `nn.Sequential(LazyLinear, GELU, LazyLinear)`)."""

    def __init__(self, fan_in: int, hidden: int, fan_out: int, *, rngs: nnx.Rngs):
        self.fc1 = _torch_linear(rngs, fan_in, hidden)
        self.fc2 = _torch_linear(rngs, hidden, fan_out)

    def __call__(self, x):
        return self.fc2(jax.nn.gelu(self.fc1(x), approximate=False))


def node_noise(key, batch_size: int, num_nodes: int, dim: int):
    """Standard normal noise `[B, N, 2, dim]` float32 for the random-feature PE. The values of
    node slot (b, i) depend on `key`, b and i only, not on the padded sizes B and N.

    Row b draws `normal(fold_in(key, b), [N, 2, dim])`: jax's partitionable threefry
    (`jax_threefry_partitionable`, the default since jax 0.5) derives each value from its flat
    position, so the first n node rows are the same for any N >= n, and one draw per row keeps
    the compiled graph small. With that flag off, slot (b, i) is drawn from
    `fold_in(fold_in(key, b), i)` instead (the same property, one small draw per slot).
    """
    rows = jax.vmap(lambda b: jax.random.fold_in(key, b))(jnp.arange(batch_size))
    if jax.config.jax_threefry_partitionable:
        return jax.vmap(lambda k: jax.random.normal(k, (num_nodes, 2, dim), jnp.float32))(rows)

    def row(row_key):
        def slot(i):
            return jax.random.normal(jax.random.fold_in(row_key, i), (2, dim), jnp.float32)

        return jax.vmap(slot)(jnp.arange(num_nodes))

    return jax.vmap(row)(rows)


def _offsets(dims: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(sum(dims[:f])) for f in range(len(dims)))


def _embedding(rngs: nnx.Rngs, rows: int, width: int, num_features: int):
    std = 1.0 / math.sqrt(max(num_features, 1))
    return nnx.Param(nnx.initializers.normal(std)(rngs.params(), (rows, width)))


class GraphBridge(nnx.Module):
    """Graph-Bridge tokens -> SAMSA encoder -> readout (see the module docstring).

    Args:
      num_layers, dim, num_heads, mlp_dim: the encoder's depth, width, heads and FFN width.
      attention_cfg: mapping with `name` and the mechanism's hyper-parameters ("samsa",
        "softmax", ...).
      atom_dims, bond_dims: sizes of the integer node / edge features (OGB's for molecules).
      random_feature_dim: d_rf, the width of each of the two random PE halves.
      qkv_dim: attention width (default `dim`).
      dropout_rate, drop_path: the SAMSA blocks' FFN dropout and stochastic-depth rate.
      readout: "attention" (the authors' attention pooling), "mean" or "sum".
      readout_tokens: "all" (node and edge tokens, the authors') or "nodes".
      pe_noise_at_eval: draw the PE noise at evaluation too (the authors' code).
      eval_seed: the key of the evaluation noise when `key` is None.
      max_len: tokens of the longest batch (node bucket + edge bucket), for the mechanism.
    """

    def __init__(
        self,
        *,
        num_layers: int,
        dim: int,
        num_heads: int,
        mlp_dim: int,
        attention_cfg,
        atom_dims: Sequence[int],
        bond_dims: Sequence[int],
        random_feature_dim: int = DEFAULT_RANDOM_FEATURE_DIM,
        qkv_dim: int | None = None,
        dropout_rate: float = 0.0,
        drop_path: float = 0.0,
        readout: str = "attention",
        readout_tokens: str = "all",
        pe_noise_at_eval: bool = True,
        eval_seed: int = 0,
        max_len: int | None = None,
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        _check_options(random_feature_dim, readout, readout_tokens)
        d_rf = int(random_feature_dim)
        # One table per input kind, feature f's rows at offset sum(dims[:f]) (static ints).
        self.atom_offsets = _offsets(atom_dims)
        self.bond_offsets = _offsets(bond_dims)
        self.atom_embedding = _embedding(rngs, sum(atom_dims), dim, len(self.atom_offsets))
        self.bond_embedding = _embedding(rngs, sum(bond_dims), dim, len(self.bond_offsets))
        # Learnable noise scales: std = softplus(coef), coef initialised to ones (App. D).
        self.coef_l = nnx.Param(jnp.ones((d_rf,), jnp.float32))
        self.coef_r = nnx.Param(jnp.ones((d_rf,), jnp.float32))
        self.mlp_node_pe = _Mlp(dim, 4 * dim, 2 * d_rf, rngs=rngs)
        self.mlp_node = _Mlp(dim + 2 * d_rf, 4 * dim, dim, rngs=rngs)
        self.mlp_edge = _Mlp(dim + d_rf, 4 * dim, dim, rngs=rngs)
        self.encoder = samsa_block.SAMSAEncoder(
            num_layers,
            dim,
            num_heads,
            mlp_dim,
            drop_path,
            attention_cfg,
            qkv_dim=qkv_dim,
            dropout_rate=dropout_rate,
            max_len=max_len,
            positions=False,
            dtype=dtype,
            rngs=rngs,
        )
        self.pool = _torch_linear(rngs, dim, 1) if readout == "attention" else None
        self.random_feature_dim = d_rf
        self.readout = readout
        self.readout_tokens = readout_tokens
        self.pe_noise_at_eval = bool(pe_noise_at_eval)
        self.eval_seed = int(eval_seed)

    # ------------------------------------------------------------------------- tokeniser

    def embed(self, batch):
        """`(x [B, N, dim], e [B, E, dim])` float32: sums of the per-feature embeddings."""
        nodes = jnp.asarray(batch["nodes"], jnp.int32) + jnp.asarray(self.atom_offsets)
        edges = jnp.asarray(batch["edges"], jnp.int32) + jnp.asarray(self.bond_offsets)
        x = self.atom_embedding[...][nodes].sum(axis=-2)
        e = self.bond_embedding[...][edges].sum(axis=-2)
        return x, e

    def positional(self, x, noise):
        """Node PE `[B, N, 2, d_rf]`: `noise * softplus([c_l; c_r]) + mlp_node_pe(x)`, with
        `noise [B, N, 2, d_rf]` standard normal (zeros: the noise-free PE)."""
        b, n, _ = x.shape
        scale = jax.nn.softplus(jnp.stack([self.coef_l[...], self.coef_r[...]]))  # [2, d_rf]
        phi = self.mlp_node_pe(x).reshape(b, n, 2, self.random_feature_dim)
        return noise * scale + phi

    def tokens(self, batch, noise):
        """`(tokens [B, N + E, dim] float32, mask [B, N + E] bool)` for given PE noise
        `[B, N, 2, d_rf]`; padded slots' tokens are zero."""
        node_mask = jnp.asarray(batch["node_mask"], bool)
        edge_mask = jnp.asarray(batch["edge_mask"], bool)
        x, e = self.embed(batch)
        n = x.shape[1]
        pe = self.positional(x, noise)
        ends = jnp.clip(jnp.asarray(batch["edge_index"], jnp.int32), 0, n - 1)  # [B, E, 2]
        left = jnp.take_along_axis(pe[:, :, 0], ends[..., 0:1], axis=1)  # p^l of the source
        right = jnp.take_along_axis(pe[:, :, 1], ends[..., 1:2], axis=1)  # p^r of the target
        h_nodes = self.mlp_node(jnp.concatenate([x, pe.reshape(*pe.shape[:2], -1)], axis=-1))
        h_edges = self.mlp_edge(jnp.concatenate([e, left - right], axis=-1))
        h_nodes = jnp.where(node_mask[..., None], h_nodes, 0.0)
        h_edges = jnp.where(edge_mask[..., None], h_edges, 0.0)
        mask = jnp.concatenate([node_mask, edge_mask], axis=1)
        return jnp.concatenate([h_nodes, h_edges], axis=1), mask

    def noise(self, batch, *, train: bool, key):
        """The PE noise of one call (module docstring): fresh from `key` in training; at
        evaluation from `key`, or the fixed `eval_seed` key when None, or zeros when
        `pe_noise_at_eval` is off."""
        b, n = jnp.shape(batch["node_mask"])
        if not (train or self.pe_noise_at_eval):
            return jnp.zeros((b, n, 2, self.random_feature_dim), jnp.float32)
        if key is None:
            if train:
                raise ValueError("graph_bridge: train=True needs `key` (the PE noise)")
            key = jax.random.key(self.eval_seed)
        return node_noise(key, b, n, self.random_feature_dim)

    # --------------------------------------------------------------------------- forward

    def pool_tokens(self, h, mask, num_nodes: int):
        """Readout `[B, dim]` float32 of encoded tokens `h [B, N + E, dim]`."""
        h = h.astype(jnp.float32)
        if self.readout_tokens == "nodes":
            h, mask = h[:, :num_nodes], mask[:, :num_nodes]
        if self.readout != "attention":
            return layers.pool(h, mask, self.readout)
        scores = self.pool(h)[..., 0]
        scores = jnp.where(mask, scores, jnp.finfo(jnp.float32).min)
        weights = jnp.where(mask, jax.nn.softmax(scores, axis=-1), 0.0)
        return jnp.einsum("bt,btd->bd", weights, h)

    def __call__(self, batch, *, train: bool = False, key=None, **inputs):
        """A padded graph batch -> `[B, dim]` float32. `key` is needed when `train`; `inputs`:
        per-call attention inputs for the SAMSA encoder."""
        k_pe, k_enc = layers.split_keys(key, 2)
        noise = self.noise(batch, train=train, key=k_pe)
        x, mask = self.tokens(batch, noise)
        h = self.encoder(x, mask=mask, train=train, key=k_enc, **inputs)
        return self.pool_tokens(h, mask, jnp.shape(batch["node_mask"])[1])


def _mlp_flops(mlp: _Mlp, tally, component: str, tokens: int) -> None:
    tally.linear(component, mlp.fc1, tokens)
    tally.linear(component, mlp.fc2, tokens)
    tally.add(component, elementwise=cost.GELU_ERF * tokens * mlp.fc1.out_features)


def tokenizer_flops(model: GraphBridge, tally, *, num_nodes: int, num_edges: int) -> None:
    """Forward FLOPs of the Graph-Bridge tokens of one graph ("embedding"): the three MLPs,
    the noise scaling and the edge-PE differences (lookups and gathers are free)."""
    d_rf = model.random_feature_dim
    for table in (model.atom_embedding, model.bond_embedding, model.coef_l, model.coef_r):
        tally.claim("embedding", table)
    dim = model.atom_embedding.shape[1]
    sums = (len(model.atom_offsets) - 1) * num_nodes + (len(model.bond_offsets) - 1) * num_edges
    _mlp_flops(model.mlp_node_pe, tally, "embedding", num_nodes)
    _mlp_flops(model.mlp_node, tally, "embedding", num_nodes)
    _mlp_flops(model.mlp_edge, tally, "embedding", num_edges)
    # feature sums; softplus of the coefficients; noise * scale + phi; p^l - p^r per edge
    elementwise = sums * dim + 2 * d_rf * 3 + num_nodes * 2 * d_rf * 2 + num_edges * d_rf
    tally.add("embedding", elementwise=elementwise)


def graph_bridge_flops(model: GraphBridge, tally, *, n: int, masked: bool) -> None:
    """`attnbench.nn.backbones` FLOP formula: one graph of `n` tokens, `round(NODE_SHARE * n)` of
    them nodes; the tokens ("embedding"), the SAMSA blocks on n tokens (as the `samsa` backbone),
    and the readout ("head")."""
    num_nodes = round(NODE_SHARE * n)
    tokenizer_flops(model, tally, num_nodes=num_nodes, num_edges=n - num_nodes)
    encoder = model.encoder
    dim = encoder.norm.num_features
    tally.claim("norms/other", encoder.residual_scale)
    for i, block in enumerate(encoder.blocks):
        backbones.norm_flops(block.norm1, tally, n=n, ops=cost.RMSNORM)
        backbones.norm_flops(block.norm2, tally, n=n, ops=cost.RMSNORM)
        tally.add("norms/other", elementwise=4 * n * dim)  # residual scales and adds
        backbones.attention_flops(block.attn, tally, n=n, layer_index=i, masked=masked)
        backbones.mlp_flops(block.mlp, tally, n=n)
    backbones.norm_flops(encoder.norm, tally, n=n, ops=cost.RMSNORM)
    pooled = num_nodes if model.readout_tokens == "nodes" else n
    if model.pool is not None:
        tally.linear("head", model.pool, pooled)
        tally.add("head", elementwise=pooled * (cost.SOFTMAX + 2 * dim))  # softmax, weighting
    else:
        tally.add("head", elementwise=pooled * dim)


def _check_options(random_feature_dim, readout: str, readout_tokens: str) -> None:
    problems = []
    if isinstance(random_feature_dim, bool) or not (
        isinstance(random_feature_dim, numbers.Integral) and random_feature_dim >= 1
    ):
        problems.append(
            f"config.model.random_feature_dim={random_feature_dim!r}: must be a positive int "
            f"(default {DEFAULT_RANDOM_FEATURE_DIM})"
        )
    if readout not in READOUTS:
        problems.append(f"config.model.readout={readout!r}: known: {', '.join(READOUTS)}")
    if readout_tokens not in READOUT_TOKENS:
        problems.append(
            f"config.model.readout_tokens={readout_tokens!r}: known: {', '.join(READOUT_TOKENS)}"
        )
    if problems:
        raise errors.ConfigError("; ".join(problems))


@backbones.register("graph_bridge", flops=graph_bridge_flops)
def graph_bridge(*, model_cfg, attention_cfg, max_len: int, rngs):
    """Graph-Bridge + SAMSA encoder from a model section with `num_layers`, `dim`, `qkv_dim`,
    `num_heads`, `mlp_dim`, `dropout`, `dtype`, `atom_dims`, `bond_dims` and the optional
    `drop_path` (0), `random_feature_dim` (128), `readout` ("attention"), `readout_tokens`
    ("all"), `pe_noise_at_eval` (True), `pe_eval_seed` (0). `max_len`: node bucket + edge
    bucket of the largest batch."""
    m = model_cfg
    return GraphBridge(
        num_layers=m.num_layers,
        dim=m.dim,
        num_heads=m.num_heads,
        mlp_dim=m.mlp_dim,
        attention_cfg=attention_cfg,
        atom_dims=tuple(m.atom_dims),
        bond_dims=tuple(m.bond_dims),
        random_feature_dim=m.get("random_feature_dim", DEFAULT_RANDOM_FEATURE_DIM),
        qkv_dim=m.get("qkv_dim", None) or m.dim,
        dropout_rate=m.dropout,
        drop_path=m.get("drop_path", 0.0),
        readout=m.get("readout", "attention"),
        readout_tokens=m.get("readout_tokens", "all"),
        pe_noise_at_eval=m.get("pe_noise_at_eval", True),
        eval_seed=m.get("pe_eval_seed", 0),
        max_len=max_len,
        dtype=layers.compute_dtype(m.dtype),
        rngs=rngs,
    )
