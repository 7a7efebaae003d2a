"""EGT, the Edge-augmented Graph Transformer (Hussain, Zaki, Subramanian, KDD 2022, "Global
Self-Attention as a Replacement for Graph Convolution"), registered as the backbone `egt`
(`attnbench.nn.backbones`), in the configuration SSA trains on PCQM4Mv2 (Hussain et al., KDD 2023,
Table 3 / Table 5: EGT "small", 6 layers, 11M parameters, EGT-Simple, unbiased SSA).

    model = backbones.build("egt", model_cfg=config.model, attention_cfg=config.attention,
                            max_len=n + num_virtual_nodes, rngs=rngs)
    h = model(batch, train=train, key=key)   # `graphs.data.batching.GraphCollate` batch -> [B, dim]
    y = egt.self_ensemble(full_model, batch, key=key, passes=50)   # SSA Sec. 3.5

Facts from the authors' PyTorch code (github.com/shamim-hussain/egt_pytorch: `lib/models/
egt_layers.py`, `egt.py`, `egt_molgraph.py`, `lib/data/graph_dataset/structural_dataset.py`,
`lib/training/schemes/egt_training.py`) unless marked otherwise:
  * node input: one embedding table for the 9 OGB atom features, feature f at rows
    `1 + 128 f + value` (`NODE_FEATURES_OFFSET = 128`, 1153 rows, N(0, 1) init), summed.
  * edge input `e [B, n, n, edge_dim]`: an embedding of the hop distance clipped to
    `upto_hop + 1` (`upto_hop + 2` rows; their Floyd-Warshall marks unreachable pairs 510, so
    they share the clipped row) plus, on bonded pairs, the sum of the 3 bond-feature embeddings
    (rows `1 + 8 f + value`, 25 rows; non-bonded pairs read their zero padding row 0, here: 0).
  * virtual nodes (`VirtualNodes`): `num_virtual_nodes` learned node tokens prepended, and
    learned edge vectors: row block e[v, j] = vn_e[v], column block e[i, v] = vn_e[v], and
    e[v, w] = (vn_e[v] + vn_e[w]) / 2 between virtual nodes; all N(0, 1).
  * layer (`EGT_Layer`, pre-LN): with hl = LN(h), el = LN(e),
        Q, K, V = split(hl W_qkv);  E = el W_E;  G = el W_G                (per head)
        H^ = clip(Q K^T / sqrt(d), -5, 5) + E
        A~ = softmax_j(H^) * sigmoid(G)            (padded keys: -1e9 on both, i.e. weight 0)
        V^ = A~ V, times log(1 + sum_j sigmoid(G_ij)) on non-virtual rows  (`scale_degree`,
             optional: on in the PyTorch configs, off in the small config below)
        h = h + drop(V^ W_O);  h = h + drop(W_2 elu(W_1 LN(h)))   (FFN width dim * multiplier)
    and, in the full variant, the edge channel is updated from the unnormalised H^:
        e = e + drop(H^ W_Oe);  e = e + drop(W_2e elu(W_1e LN(e))), in every layer but the last
    (`node_ended=True`). EGT-Simple (`egt_simple=True`) never updates e: each layer reads the
    same embedded edges through its own LN, W_E (bias) and W_G (gates).
  * readout: final LN, the virtual nodes' outputs concatenated (masked mean over nodes when
    there are none), then an MLP of widths `dim * mlp_ratios` with elu between layers; the task's
    `Linear(dim, 1)` head is the MLP's last layer, so this backbone returns the activation
    before it, `[B, round(dim * mlp_ratios[-1])]` (it must equal `dim`).
  * init: PyTorch defaults (linear weights and biases U(+-1/sqrt(fan_in)), embeddings N(0, 1),
    LayerNorm 1 / 0, epsilon 1e-5); the authors' code does not re-initialise.
  * PCQM4M "small" config (TF repo github.com/shamim-hussain/egt, `configs/main/pcqm4m/
    egt_small.json`, commit before fe9582c): width 512, edge width 128, 6 layers, 32 heads, FFN
    multiplier 1.0, MLP ratios [1, 1], 4 virtual nodes, 16 hops, dropout 0.1, lr 2e-4; it sets
    no `scale_degree`, so its scheme's default applies (`lib/training/schemes/scheme_base.py`:
    False): no degree scaler. That is this module's default (`scale_degree=False`); the
    PyTorch code's training default (`lib/training/schemes/egt_training.py`) and its PCQM4Mv2 /
    MolPCBA / MolHIV configs have it on.

Attention (`attention_impl`):
  * "egt" (default): the gated, clipped attention above, written here (`egt_attention`): a
    registered mechanism's `apply` has no gates, no logit clipping and no degree scaler, so EGT's
    attention cannot be a mechanism call. `config.attention` still chooses it: "softmax" is the
    dense layer (its `dropout_rate` is the attention dropout), "ssa" subsamples the sources with
    SSA's own sampler (`attention.ssa.sample_pattern(sampling="graph")`: per graph, uniform over
    its non-padded tokens, the first `always_keep` tokens, i.e. the virtual nodes when
    `always_keep = num_virtual_nodes`, always kept) and gathers K, V, the padding and the edge
    channel with the sources (SSA Alg. 1: B~ = B[:, P~]); the bias E and the gates G are then
    computed on the sampled pairs only, so the edge terms shrink with the drop rate too. Its
    `keep`, `always_keep`, `eval_mode` ("dense": renormalisation; "ensemble": this layer's mean
    over `ensemble_samples` subsampled passes), `dropout_rate` and the declared input
    `subsample` (a per-call input: `model(batch, subsample=False)` for +FT, passed down to every
    layer) behave as in `attention.ssa`.
    One source set per graph and layer, shared by all heads and targets (SSA Sec. 3.3).
  * "mechanism": any registered mechanism through `attnbench.nn.layers.Attention` (q/k/v/out with
    biases), E as its `bias` input and padding as a key-padding mask; no gates, no clipping, no
    degree scaling (an "ungated EGT-Simple" for comparing mechanisms; q/k/v/out kernels
    U(+-1/sqrt(dim)), biases 0). The full variant needs "egt".

Choices where sources are silent or disagree:
  * EGT-Simple follows the PyTorch code (per-layer LN on the constant edge embeddings, gates
    kept); the older TF code's `edge_channel_type="bias"` has no LN on e.
  * The SVD positional encodings of the PyTorch PCQM4Mv2 configs are left out: the v1 "small"
    config (TF `pcqm4m.mat` scheme) the SSA paper builds on does not use them. So is the TF
    config's `random_mask_prob` (attention maskout); SSA trains EGT without attention dropout.
  * The full variant with SSA subsampling is refused: H^ exists only on sampled pairs, so the
    edge update would be undefined elsewhere. SSA uses EGT-Simple, "simpler to apply SSA to"
    (arXiv 2306.01705 Sec. 4.3, App. B.3); that this is why is our reading.
  * Distances: the PyTorch code's embedded shortest-path distance (the TF v1 `mat` scheme fed
    stacked adjacency powers instead).
  * Padded query rows are left unmasked (their outputs are never read); padded keys are masked.
  * W_qkv's output columns are ordered (q|k|v, head, dim); the authors' are (q|k|v, dim, head):
    the same function, but their checkpoints would need a permutation to load.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from attention import cost, ssa
from attnbench import errors
from attnbench.nn import backbones, layers
from graphs.backbones import graphormer as _graphormer
from graphs.data import featurize

__all__ = [
    "BATCH_FIELDS",
    "VARIANTS",
    "ATTENTION_IMPLS",
    "egt_attention",
    "take_pairs",
    "sample_sources",
    "EGTLayer",
    "EGT",
    "self_ensemble",
    "renormalized",
    "egt_flops",
]

BATCH_FIELDS = ("nodes", "node_mask", "edges", "edge_index", "edge_mask", "spd")
VARIANTS = ("simple", "full")
ATTENTION_IMPLS = ("egt", "mechanism")
_NATIVE = ("softmax", "ssa")  # mechanisms the "egt" attention reproduces


def _normal(rngs, shape) -> nnx.Param:
    return nnx.Param(jax.random.normal(rngs.params(), shape, jnp.float32))


# ------------------------------------------------------------------------------------ attention


def sample_sources(key, token_mask, *, keep: float, always_keep: int):
    """`[B, S]` int32 source indices of one SSA pass over tokens `[B, M]` (True = real):
    `attention.ssa.sample_pattern(sampling="graph")`, S = round(keep * M). A graph with fewer
    than S real tokens gets all of them plus padded ones (which `egt_attention` masks)."""
    m = token_mask.shape[1]
    _, src = ssa.sample_pattern(
        key,
        m,
        m,
        sampling="graph",
        keep=keep,
        always_keep=always_keep,
        key_padding=jnp.asarray(token_mask, bool),
    )
    return src[:, 0, :]


def take_pairs(x, src):
    """`x [B, N, M, ...]` -> `[B, N, S, ...]`: the columns of the sources `src [B, S]` (SSA's
    B~ = B[:, P~], per graph)."""
    index = src.reshape(src.shape[0], 1, src.shape[1], *(1,) * (x.ndim - 3))
    return jnp.take_along_axis(x, index, axis=2)


def egt_attention(
    q,
    k,
    v,
    e,
    g,
    *,
    mask,
    src=None,
    clip=(-5.0, 5.0),
    num_virtual_nodes: int = 0,
    scale_degree: bool = False,
    dropout_rate: float = 0.0,
    dropout_key=None,
):
    """EGT's gated attention (module docstring), optionally on SSA-sampled sources.

    Args:
      q, k, v: `[B, N, H, D]`.
      e, g: the edge bias E and the gate logits G, `[B, N, N, H]`, or, with `src`, already at
        the sources `[B, N, S, H]` (`take_pairs`: the layer computes them on sampled pairs only).
      mask: `[B, N]` bool key padding (True = real token).
      src: None (all sources) or `[B, S]` int32 sources per graph (`sample_sources`).
      clip: `(lo, hi)` clipping of the scaled dot products, or None.
      num_virtual_nodes: the first tokens, whose rows the degree scaler leaves at 1.
      scale_degree: multiply each non-virtual row by log(1 + sum of its gates over the
        sources), the "degree scaler" (off in the small config).
      dropout_rate, dropout_key: dropout on the gated weights (training).

    Returns:
      `(out [B, N, H, D], h_hat [B, N, S or N, H])`, h_hat = clip(QK^T / sqrt(D)) + E, the input
      of the full variant's edge update.
    """
    if src is not None:
        take = lambda x: jnp.take_along_axis(x, src[:, :, None, None], axis=1)
        k, v = take(k), take(v)
        mask = jnp.take_along_axis(mask, src, axis=1)
    acc = jnp.promote_types(q.dtype, jnp.float32)
    logits = jnp.einsum("bnhd,bmhd->bnmh", q, k, preferred_element_type=acc)
    logits = logits * (q.shape[-1] ** -0.5)
    if clip is not None:
        logits = jnp.clip(logits, clip[0], clip[1])
    h_hat = logits + e.astype(acc)
    valid = mask[:, None, :, None]
    probs = jax.nn.softmax(jnp.where(valid, h_hat, jnp.finfo(acc).min), axis=2)
    gates = jnp.where(valid, jax.nn.sigmoid(g.astype(acc)), 0.0)
    weights = jnp.where(valid, probs, 0.0) * gates
    if dropout_rate > 0.0:
        weights = layers.dropout(weights, dropout_rate, dropout_key, True)
    out = jnp.einsum("bnmh,bmhd->bnhd", weights, v.astype(acc))
    if scale_degree:
        scaler = jnp.log1p(gates.sum(axis=2))  # [B, N, H]
        is_vn = (jnp.arange(q.shape[1]) < num_virtual_nodes)[None, :, None]
        out = out * jnp.where(is_vn, 1.0, scaler)[..., None]
    return out.astype(v.dtype), h_hat


class EGTLayer(nnx.Module):
    """One EGT layer on `h [B, T, dim]` and `e [B, T, T, edge_dim]` (T tokens, virtual nodes
    first); `update_edges` makes it a full-EGT layer (edge channel updated)."""

    def __init__(
        self,
        *,
        dim: int,
        edge_dim: int,
        num_heads: int,
        ffn_multiplier: float,
        edge_ffn_multiplier: float,
        dropout: float,
        edge_dropout: float,
        clip_logits,
        scale_degree: bool,
        num_virtual_nodes: int,
        update_edges: bool,
        mechanism,
        native: bool,
        layer_index: int,
        num_layers: int,
        max_len: int | None,
        dtype,
        rngs: nnx.Rngs,
    ):
        if dim % num_heads:
            raise errors.ConfigError(
                f"config.model.dim={dim} is not divisible by config.model.num_heads={num_heads}"
            )
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.native, self.update_edges = native, update_edges
        self.mech_name = mechanism.name
        self.hp = dict(mechanism.hparams)  # static hyper-parameters of the chosen attention
        self.clip = None if clip_logits is None else tuple(float(c) for c in clip_logits)
        self.scale_degree, self.num_virtual_nodes = scale_degree, num_virtual_nodes
        self.dropout, self.edge_dropout = dropout, edge_dropout
        self.ln_h = layers.torch_layer_norm(dim, dtype, rngs)
        self.ln_e = layers.torch_layer_norm(edge_dim, dtype, rngs)
        self.lin_e = layers.torch_linear(edge_dim, num_heads, dtype, rngs)
        if native:
            self.lin_qkv = layers.torch_linear(dim, 3 * dim, dtype, rngs)
            self.lin_g = layers.torch_linear(edge_dim, num_heads, dtype, rngs)
            self.lin_o = layers.torch_linear(dim, dim, dtype, rngs)
        else:
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
                kernel_init=layers.torch_uniform(dim),
                rngs=rngs,
            )
        inner = round(dim * ffn_multiplier)
        self.ffn_ln = layers.torch_layer_norm(dim, dtype, rngs)
        self.ffn_1 = layers.torch_linear(dim, inner, dtype, rngs)
        self.ffn_2 = layers.torch_linear(inner, dim, dtype, rngs)
        if update_edges:
            inner_e = round(edge_dim * edge_ffn_multiplier)
            self.lin_o_e = layers.torch_linear(num_heads, edge_dim, dtype, rngs)
            self.ffn_ln_e = layers.torch_layer_norm(edge_dim, dtype, rngs)
            self.ffn_e1 = layers.torch_linear(edge_dim, inner_e, dtype, rngs)
            self.ffn_e2 = layers.torch_linear(inner_e, edge_dim, dtype, rngs)

    def _mode(self, train: bool, sub=None):
        """The attention mode, "dense", "sample", "ensemble" or "cond" (a traced `subsample`),
        and that traced flag; `sub` is the call's `subsample` input (+FT, self-ensembles)."""
        if self.mech_name != "ssa":
            return "dense", None
        if sub is None:
            return ("sample" if train else self.hp["eval_mode"]), None
        try:
            return ("sample" if bool(sub) else "dense"), None
        except jax.errors.ConcretizationTypeError:
            return "cond", jnp.asarray(sub, bool)

    def _native_attention(self, hl, e, mask, *, train: bool, key, subsample=None):
        b, t, _ = hl.shape
        qkv = self.lin_qkv(hl).reshape(b, t, 3, self.num_heads, self.head_dim)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        rate = float(self.hp.get("dropout_rate", 0.0)) if train else 0.0
        sample_key, drop_key = (None, None) if key is None else tuple(jax.random.split(key))
        if rate > 0.0 and drop_key is None:
            raise ValueError("egt: attention dropout in training needs a PRNG key")
        kw = dict(
            mask=mask,
            clip=self.clip,
            num_virtual_nodes=self.num_virtual_nodes,
            scale_degree=self.scale_degree,
        )

        def one(src, dkey, drop_rate):
            # Bias and gates on the sampled pairs only: SSA's saving covers the edge terms too.
            el = self.ln_e(e if src is None else take_pairs(e, src))
            return egt_attention(
                q,
                k,
                v,
                self.lin_e(el),
                self.lin_g(el),
                src=src,
                dropout_rate=drop_rate,
                dropout_key=dkey,
                **kw,
            )

        def sampled(pass_key, drop_rate):
            s_key, d_key = jax.random.split(pass_key)
            src = sample_sources(
                s_key, mask, keep=self.hp["keep"], always_keep=self.hp["always_keep"]
            )
            return one(src, d_key, drop_rate)

        mode, sub = self._mode(train, subsample)
        if mode != "dense" and key is None:
            raise ValueError(f"egt: SSA ({mode}) needs a PRNG key to sample the sources")
        if mode == "dense":
            out, h_hat = one(None, drop_key, rate)
        elif mode == "sample":
            out, h_hat = sampled(sample_key, rate)
        elif mode == "cond":
            out = jax.lax.cond(
                sub, lambda: sampled(sample_key, rate)[0], lambda: one(None, drop_key, rate)[0]
            )
            h_hat = None
        else:  # "ensemble": this layer's mean over subsampled passes (SSA Sec. 3.5)
            keys = jax.random.split(sample_key, int(self.hp["ensemble_samples"]))
            out = jnp.mean(jax.lax.map(lambda kk: sampled(kk, 0.0)[0], keys), axis=0)
            h_hat = None
        return self.lin_o(out.reshape(b, t, -1)), h_hat

    def __call__(self, h, e, *, mask, train: bool = False, key=None, **inputs):
        """`(h [B, T, dim], e [B, T, T, edge_dim])` -> the same; mask `[B, T]` (True = real);
        `inputs`: per-call attention inputs (SSA's `subsample`)."""
        k_attn, k_h1, k_h2, k_e1, k_e2 = layers.split_keys(key, 5)
        hl = self.ln_h(h)
        if self.native:
            a, h_hat = self._native_attention(
                hl, e, mask, train=train, key=k_attn, subsample=inputs.get("subsample")
            )
        else:
            bias = jnp.transpose(self.lin_e(self.ln_e(e)), (0, 3, 1, 2))
            a = self.attn(hl, mask=mask, train=train, key=k_attn, bias=bias, **inputs)
            h_hat = None
        h = h + layers.dropout(a, self.dropout, k_h1, train)
        f = self.ffn_2(jax.nn.elu(self.ffn_1(self.ffn_ln(h))))
        h = h + layers.dropout(f, self.dropout, k_h2, train)
        if self.update_edges:
            if h_hat is None:
                raise errors.ConfigError(
                    "egt: the full variant's edge update needs the dense pass (SSA sampled "
                    "or ensemble passes give no scores on unsampled pairs); use "
                    "config.model.egt_variant='simple' with SSA"
                )
            e = e + layers.dropout(
                self.lin_o_e(h_hat.astype(e.dtype)), self.edge_dropout, k_e1, train
            )
            fe = self.ffn_e2(jax.nn.elu(self.ffn_e1(self.ffn_ln_e(e))))
            e = e + layers.dropout(fe, self.edge_dropout, k_e2, train)
        return h, e


# ---------------------------------------------------------------------------------------- model


class EGT(nnx.Module):
    """EGT encoder on padded graph batches (module docstring).

    Args:
      atom_dims, bond_dims: sizes of the node / edge features (OGB's for molecules).
      feature_offset, edge_feature_offset: rows per feature in the node / edge tables (the
        authors': 128 and 8; 0 for compact tables, as `graphs.backbones.graphormer.feature_layout`).
      upto_hop: hop distances are clipped to `upto_hop + 1` (unreachable pairs too).
      scale_degree: the degree scaler of every layer (`egt_attention`); off, as the small
        config.
      mlp_ratios: readout MLP widths as multiples of `dim` (the last must give `dim`).
      variant: "simple" (EGT-Simple) or "full"; attention_impl: "egt" or "mechanism".
    """

    def __init__(
        self,
        *,
        num_layers: int,
        dim: int,
        edge_dim: int,
        num_heads: int,
        attention_cfg,
        ffn_multiplier: float = 1.0,
        edge_ffn_multiplier: float = 1.0,
        mlp_ratios: Sequence[float] = (1.0, 1.0),
        num_virtual_nodes: int = 4,
        upto_hop: int = 16,
        dropout: float = 0.0,
        edge_dropout: float = 0.0,
        clip_logits=(-5.0, 5.0),
        scale_degree: bool = False,
        variant: str = "simple",
        attention_impl: str = "egt",
        atom_dims: Sequence[int] | None = None,
        bond_dims: Sequence[int] | None = None,
        feature_offset: int = 128,
        edge_feature_offset: int = 8,
        max_len: int | None = None,
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        mech = layers.mechanism(attention_cfg)
        if variant not in VARIANTS:
            raise errors.ConfigError(
                f"config.model.egt_variant={variant!r}: must be one of {VARIANTS}"
            )
        if attention_impl not in ATTENTION_IMPLS:
            raise errors.ConfigError(
                f"config.model.attention_impl={attention_impl!r}: must be one of {ATTENTION_IMPLS}"
            )
        native = attention_impl == "egt"
        if native and mech.name not in _NATIVE:
            raise errors.ConfigError(
                f"config.attention.name={mech.name!r}: EGT's gated attention reproduces "
                f"{_NATIVE} only; set config.model.attention_impl='mechanism' to run another "
                "mechanism (ungated, unclipped)"
            )
        if mech.name == "ssa" and native and mech.hparams["sampling"] != "graph":
            raise errors.ConfigError(
                f"config.attention.sampling={mech.hparams['sampling']!r}: EGT subsamples graph "
                "sources per example; set config.attention.sampling='graph'"
            )
        if variant == "full" and (not native or mech.name == "ssa"):
            raise errors.ConfigError(
                "config.model.egt_variant='full' updates the edge channel from the dense "
                "attention scores: it needs config.model.attention_impl='egt' and a dense "
                "attention (softmax); SSA trains EGT-Simple (egt_variant='simple')"
            )
        ratios = [float(r) for r in mlp_ratios]
        if not ratios or round(dim * ratios[-1]) != dim:
            raise errors.ConfigError(
                f"config.model.mlp_ratios={list(mlp_ratios)}: the last width must equal "
                f"config.model.dim={dim} (the task's Linear(dim, 1) head is the MLP's last layer)"
            )
        if upto_hop < 1 or num_virtual_nodes < 0:
            raise errors.ConfigError(
                f"config.model.upto_hop={upto_hop} / num_virtual_nodes={num_virtual_nodes}: "
                "need upto_hop >= 1 and num_virtual_nodes >= 0"
            )
        atom_dims = tuple(featurize.atom_feature_dims() if atom_dims is None else atom_dims)
        bond_dims = tuple(featurize.bond_feature_dims() if bond_dims is None else bond_dims)
        atom_rows, atom_offsets = _graphormer.feature_layout(atom_dims, feature_offset)
        bond_rows, bond_offsets = _graphormer.feature_layout(bond_dims, edge_feature_offset)
        self.atom_offsets = tuple(int(o) for o in atom_offsets)  # static, not parameters
        self.bond_offsets = tuple(int(o) for o in bond_offsets)
        self.node_embed = _normal(rngs, (atom_rows, dim))
        self.dist_embed = _normal(rngs, (upto_hop + 2, edge_dim))
        self.bond_embed = _normal(rngs, (bond_rows, edge_dim))
        self.num_virtual_nodes, self.upto_hop = num_virtual_nodes, upto_hop
        if num_virtual_nodes:
            self.vn_nodes = _normal(rngs, (num_virtual_nodes, dim))
            self.vn_edges = _normal(rngs, (num_virtual_nodes, edge_dim))
        self.layers = layers.block_stack(
            lambda i: EGTLayer(
                dim=dim,
                edge_dim=edge_dim,
                num_heads=num_heads,
                ffn_multiplier=ffn_multiplier,
                edge_ffn_multiplier=edge_ffn_multiplier,
                dropout=dropout,
                edge_dropout=edge_dropout,
                clip_logits=clip_logits,
                scale_degree=scale_degree,
                num_virtual_nodes=num_virtual_nodes,
                update_edges=variant == "full" and i < num_layers - 1,
                mechanism=mech,
                native=native,
                layer_index=i,
                num_layers=num_layers,
                max_len=max_len,
                dtype=dtype,
                rngs=rngs,
            ),
            num_layers,
        )
        self.final_ln = layers.torch_layer_norm(dim, dtype, rngs)
        widths = [dim * max(num_virtual_nodes, 1)] + [round(dim * r) for r in ratios]
        self.mlp = nnx.List(
            [
                layers.torch_linear(a, b, dtype, rngs)
                for a, b in zip(widths[:-1], widths[1:], strict=True)
            ]
        )
        self.dtype = jnp.dtype(dtype)

    # ------------------------------------------------------------------------------ inputs

    def token_mask(self, batch):
        """`[B, T]` bool: virtual nodes, then the node mask."""
        node_mask = jnp.asarray(batch["node_mask"], bool)
        vn = jnp.ones((node_mask.shape[0], self.num_virtual_nodes), bool)
        return jnp.concatenate([vn, node_mask], axis=1)

    def embed_nodes(self, batch):
        """`[B, T, dim]`: virtual node tokens, then the summed atom-feature embeddings."""
        nodes = jnp.asarray(batch["nodes"], jnp.int32) + jnp.asarray(self.atom_offsets)
        h = self.node_embed[...][nodes].sum(axis=-2)
        if not self.num_virtual_nodes:
            return h
        vn = jnp.broadcast_to(self.vn_nodes[...][None], (h.shape[0],) + self.vn_nodes.shape)
        return jnp.concatenate([vn, h], axis=1)

    def embed_edges(self, batch):
        """`[B, T, T, edge_dim]`: clipped-distance embedding + bond features on edges, with the
        virtual nodes' rows, columns and box (module docstring)."""
        spd = jnp.asarray(batch["spd"], jnp.int32)
        b, n = spd.shape[:2]
        index = jnp.where(spd < 0, self.upto_hop + 1, jnp.minimum(spd, self.upto_hop + 1))
        e = self.dist_embed[...][index]  # [B, n, n, edge_dim]
        feats = jnp.asarray(batch["edges"], jnp.int32) + jnp.asarray(self.bond_offsets)
        per_edge = self.bond_embed[...][feats].sum(axis=-2)
        per_edge = per_edge * jnp.asarray(batch["edge_mask"], per_edge.dtype)[..., None]
        ends = jnp.asarray(batch["edge_index"], jnp.int32)
        flat = ends[..., 0] * n + ends[..., 1]
        bonds = jnp.zeros((b, n * n, e.shape[-1]), e.dtype)
        bonds = bonds.at[jnp.arange(b)[:, None], flat].add(per_edge)
        e = e + bonds.reshape(e.shape)
        nv = self.num_virtual_nodes
        if not nv:
            return e
        vn = self.vn_edges[...]  # [nv, edge_dim]
        d = vn.shape[-1]
        rows = jnp.broadcast_to(vn[None, :, None, :], (b, nv, n, d))
        cols = jnp.broadcast_to(vn[None, None, :, :], (b, n, nv, d))
        box = jnp.broadcast_to(0.5 * (vn[:, None] + vn[None, :])[None], (b, nv, nv, d))
        top = jnp.concatenate([box, rows], axis=2)
        bottom = jnp.concatenate([cols, e], axis=2)
        return jnp.concatenate([top, bottom], axis=1)

    def __call__(self, batch, *, train: bool = False, key=None, **inputs):
        """A padded graph batch -> `[B, dim]` (the readout MLP's last hidden activation);
        `inputs`: per-call attention inputs, for every layer."""
        keys = layers.split_keys(key, len(self.layers))
        mask = self.token_mask(batch)
        h = self.embed_nodes(batch).astype(self.dtype)
        e = self.embed_edges(batch).astype(self.dtype)
        for layer, k in zip(self.layers, keys, strict=True):
            h, e = layer(h, e, mask=mask, train=train, key=k, **inputs)
        h = self.final_ln(h)
        nv = self.num_virtual_nodes
        if nv:
            h = h[:, :nv].reshape(h.shape[0], -1)
        else:
            m = mask[..., None].astype(h.dtype)
            h = (h * m).sum(axis=1) / (m.sum(axis=1) + 1e-9)
        for lin in self.mlp:
            h = jax.nn.elu(lin(h))
        return h.astype(jnp.float32)


# ---------------------------------------------------------------------------- self-ensembles


def self_ensemble(model, batch, *, key, passes: int = 50, members: bool = False):
    """SSA's attention self-ensemble (Sec. 3.5): the mean of `passes` forward passes of `model`
    (`model(batch, train=False, key=k) -> [B, ...]`: this backbone or a task model around it)
    with subsampling ON (`subsample=True`, each pass its own key from `split(key, passes)`) and
    dropout OFF (train=False). For regression the predictions are averaged (PCQM4Mv2, Table 5).
    `members=True` also returns the stacked passes `[passes, B, ...]`."""
    if int(passes) != passes or passes < 1:
        raise errors.ConfigError(f"self_ensemble: passes must be an integer >= 1, got {passes}")

    def one(k):
        return model(batch, train=False, key=k, subsample=True)

    outs = jax.lax.map(one, jax.random.split(key, int(passes)))
    mean = jnp.mean(outs, axis=0)
    return (mean, outs) if members else mean


def renormalized(model, batch):
    """The dense evaluation pass ("renormalisation", SSA Sec. 3.4): subsampling OFF."""
    return model(batch, train=False, key=None, subsample=False)


# ------------------------------------------------------------------------------------- FLOPs

ELU = 3  # elementwise ops of one elu: compare, subtract 1, select (exp is a transcendental)
# Per gathered score: scale, clip (2), + E, masked softmax (`attention.cost`), gate product,
# degree sum.
_SCORE_OPS = 1 + 2 + 1 + cost.SOFTMAX + 1 + 1


def _sources(layer: EGTLayer, train: bool, n: int) -> tuple[int, int]:
    """`(sources per pass, passes)` of one layer's attention on `n` tokens, as it runs."""
    if layer.mech_name != "ssa":
        return n, 1
    hp = layer.hp
    sub = hp.get("subsample")
    ensemble = not train and sub is None and hp["eval_mode"] == "ensemble"
    if (train if sub is None else bool(sub)) or ensemble:
        return min(n, max(1, round(hp["keep"] * n))), int(hp["ensemble_samples"]) if ensemble else 1
    return n, 1


def egt_flops(encoder: EGT, tally, *, n: int, masked: bool) -> None:
    """Forward FLOPs of one graph of `n` tokens (virtual nodes included) into `tally`
    (`attnbench.nn.backbones` formula; conventions of `attention.cost`). Work that scales with the
    sources, the scores and the edge bias / gates on the sampled pairs (and their LayerNorm),
    is "attention"; SSA's saving (Table 3's compute column) is that share times the drop."""
    dim = encoder.final_ln.num_features
    edge_dim = encoder.dist_embed.shape[-1]
    feats = len(encoder.atom_offsets)
    for emb in ("node_embed", "dist_embed", "bond_embed", "vn_nodes", "vn_edges"):
        if hasattr(encoder, emb):
            tally.claim("embedding", getattr(encoder, emb))
    # Feature sums and the bond embeddings added to the distance embedding.
    tally.add("embedding", elementwise=n * dim * (feats - 1) + n * n * edge_dim)
    for i, layer in enumerate(encoder.layers):
        heads, head_dim = layer.num_heads, layer.head_dim
        backbones.norm_flops(layer.ln_h, tally, n=n, ops=cost.LAYERNORM)
        backbones.norm_flops(layer.ffn_ln, tally, n=n, ops=cost.LAYERNORM)
        tally.add("norms/other", elementwise=2 * n * dim)  # residual adds
        if layer.native:
            s, passes = _sources(layer, tally.train, n)
            tally.linear("projections", layer.lin_qkv, n)
            tally.linear("projections", layer.lin_o, n)
            tally.claim("attention", layer.lin_e)
            tally.claim("attention", layer.lin_g)
            tally.claim("attention", layer.ln_e)
            for _ in range(passes):
                pairs = n * s
                tally.linear("attention", layer.lin_e, pairs)
                tally.linear("attention", layer.lin_g, pairs)
                tally.add("attention", elementwise=cost.LAYERNORM * pairs * edge_dim)
                scores = pairs * heads
                ops = _SCORE_OPS + cost.MASKED * masked
                tally.add(
                    "attention",
                    2 * scores * 2 * head_dim,
                    scores * ops + n * heads * head_dim * layer.scale_degree,
                )
            if passes > 1:
                tally.add("attention", elementwise=n * dim)  # the mean over passes
        else:
            backbones.norm_flops(layer.ln_e, tally, n=n * n, ops=cost.LAYERNORM)
            tally.linear("attention", layer.lin_e, n * n)
            backbones.attention_flops(layer.attn, tally, n=n, layer_index=i, masked=masked)
        tally.linear("mlp", layer.ffn_1, n)
        tally.linear("mlp", layer.ffn_2, n)
        tally.add("mlp", elementwise=ELU * n * layer.ffn_1.out_features)
        if layer.update_edges:
            pairs = n * n
            tally.linear("projections", layer.lin_o_e, pairs)
            backbones.norm_flops(layer.ffn_ln_e, tally, n=pairs, ops=cost.LAYERNORM)
            tally.linear("mlp", layer.ffn_e1, pairs)
            tally.linear("mlp", layer.ffn_e2, pairs)
            tally.add("mlp", elementwise=ELU * pairs * layer.ffn_e1.out_features)
            tally.add("norms/other", elementwise=2 * pairs * edge_dim)
    backbones.norm_flops(encoder.final_ln, tally, n=n, ops=cost.LAYERNORM)
    for lin in encoder.mlp:
        tally.linear("mlp", lin, 1)
        tally.add("mlp", elementwise=ELU * lin.out_features)


# -------------------------------------------------------------------------------- registration


@backbones.register("egt", flops=egt_flops)
def egt(*, model_cfg, attention_cfg, max_len: int, rngs):
    """EGT from a model section. Fields (defaults: the PCQM4M "small" EGT-Simple):
    num_layers, dim, edge_dim (128), num_heads, ffn_multiplier (1.0), edge_ffn_multiplier (1.0),
    mlp_ratios ((1.0, 1.0)), num_virtual_nodes (4), upto_hop (16), dropout (0.0; the authors'
    node MHA / FFN dropout), edge_dropout (0.0), clip_logits ((-5, 5)), scale_degree (False:
    the small config's; True: log(1 + sum of the gates) on every non-virtual row),
    egt_variant ("simple" | "full"), attention_impl ("egt" | "mechanism"), atom_dims and
    bond_dims (OGB's), feature_offset (128), edge_feature_offset (8), dtype ("float32").
    Attention dropout is config.attention.dropout_rate (SSA: 0). SSA's S6-U<x> is
    `config.attention = {name: "ssa", sampling: "graph", keep: 1 - x/100, always_keep:
    num_virtual_nodes}` (keeping the virtual nodes is our reading; the paper is silent)."""
    m = model_cfg
    get = lambda name, default: getattr(m, name, default)
    atom_dims, bond_dims = get("atom_dims", None), get("bond_dims", None)
    return EGT(
        num_layers=m.num_layers,
        dim=m.dim,
        edge_dim=get("edge_dim", 128),
        num_heads=m.num_heads,
        attention_cfg=attention_cfg,
        ffn_multiplier=get("ffn_multiplier", 1.0),
        edge_ffn_multiplier=get("edge_ffn_multiplier", 1.0),
        mlp_ratios=tuple(get("mlp_ratios", (1.0, 1.0))),
        num_virtual_nodes=get("num_virtual_nodes", 4),
        upto_hop=get("upto_hop", 16),
        dropout=get("dropout", 0.0),
        edge_dropout=get("edge_dropout", 0.0),
        clip_logits=get("clip_logits", (-5.0, 5.0)),
        scale_degree=bool(get("scale_degree", False)),
        variant=get("egt_variant", "simple"),
        attention_impl=get("attention_impl", "egt"),
        atom_dims=None if atom_dims is None else tuple(atom_dims),
        bond_dims=None if bond_dims is None else tuple(bond_dims),
        feature_offset=get("feature_offset", 128),
        edge_feature_offset=get("edge_feature_offset", 8),
        max_len=max_len,
        dtype=layers.compute_dtype(get("dtype", "float32")),
        rngs=rngs,
    )
