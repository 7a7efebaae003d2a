"""Pieces shared by the graph recipes (`zinc.py`, `pcqm.py`, `peptides.py`): the data section,
the Graphormer model sections (the authors' ZINC "SLIM" and OGB "base" layouts) and the
Graphormer optimiser. Each number is commented with its source where the recipes use it."""

from __future__ import annotations

import ml_collections

from configs import common

# The OGB feature sizes of graphs.data.featurize (atom_feature_dims / bond_feature_dims), written
# out so the config needs no RDKit; tests check them against graphs.data.featurize.
ATOM_DIMS = (119, 5, 12, 12, 10, 6, 6, 2, 2)
BOND_DIMS = (5, 6, 2)
# ZINC-12k's own features (benchmarking-gnns): one atom-type feature (28 types) and one bond
# type (4 values with "none"), embedded as the Graphormer ZINC code does, in 64-row tables.
ZINC_ATOM_DIMS = (64,)
ZINC_BOND_DIMS = (64,)

SOURCES = ("standin", "official")


def data(source: str = "standin", **fields) -> ml_collections.ConfigDict:
    """A graph task's data section: the common fields plus the task's `fields`."""
    d = ml_collections.ConfigDict()
    d.source = source  # standin (offline substitute) | official (the files under `dir`)
    d.dir = ""  # data root: official files / the stand-in's cache ($ATTNBENCH_DATA default)
    d.seed = 0  # the stand-in's sampling seed
    # Molecules whose SMILES RDKit cannot parse (official PCQM4M(v2) and Peptides files, the QM9
    # stand-in): False = an error naming the file, the count and the first few; True = leave them
    # out, with a line on stderr per split and `dropped` (count, of, file) in the run summary.
    d.drop_invalid = False
    d.max_nodes = 40  # largest node bucket; larger graphs are an error naming them
    # Node buckets below max_nodes; () = graphs.data.batching.NODE_BUCKETS (steps of 4 up to 64,
    # then 16). Edge buckets are `edge_factor` x the node buckets.
    d.node_buckets = ()
    d.edge_factor = 4
    # Graph size (nodes) the analytic FLOP counts assume (attnbench.nn.flops, SSA's compute column):
    # the dataset's mean; 0 = max_nodes (a padded batch's worst case).
    d.flops_nodes = 0
    for key, value in fields.items():
        d[key] = value
    return common.data_fields(d)


def graphormer_model(layout: str) -> ml_collections.ConfigDict:
    """Graphormer's model section. `layout`:
    "slim": GFSA's ZINC model (Graphormer-SLIM; [zinc.sh] and v1.0 [model.py] ZINC branch);
    "base": Graphormer-base for PCQM4M(v2) ([commands.txt] of the Sliceformer fork,
            Graphormer v1.0 `model.py` non-ZINC branch: OGB feature tables of 512 rows per
            feature, 512-row degree / spatial tables, 128 hop matrices)."""
    m = ml_collections.ConfigDict()
    m.encoder = "graphormer"  # graphs/backbones/graphormer.py
    m.dropout = 0.1  # [zinc.sh] / [commands.txt] --dropout_rate 0.1
    m.input_dropout = 0.1  # [model.py] intput_dropout_rate default 0.1
    m.dtype = "auto"  # fp16 in both codes -> bfloat16 on accelerators, float32 on CPU
    m.atom_dims = ATOM_DIMS  # node feature sizes (OGB)
    m.bond_dims = BOND_DIMS  # edge feature sizes (OGB)
    m.ensemble_passes = 0  # model-level self-ensemble at evaluation (graphs.tasks); 0 = off
    m.ensemble_seed = 0
    if layout == "slim":
        m.num_layers = 12  # [paper] Graphormer-SLIM 12 layers; [zinc.sh] --n_layers 12
        m.dim = 80  # [paper] hidden 80; [zinc.sh] --hidden_dim 80
        m.qkv_dim = 80  # attention width = model width (8 heads x 10) [paper]
        m.num_heads = 8  # [paper] 8 heads; [zinc.sh] --num_heads 8
        m.mlp_dim = 80  # [paper] FFN 80; [zinc.sh] --ffn_dim 80
        m.feature_offset = 0  # compact feature tables
        m.num_degree = 64  # [model.py] ZINC: in/out degree tables of 64 rows
        m.num_spatial = 40  # [model.py] ZINC: spatial_pos_encoder of 40 rows
        m.num_edge_dis = 40  # [model.py] ZINC: edge_dis_encoder 40 x heads x heads
        m.multi_hop_max_dist = 20  # [zinc.sh] --multi_hop_max_dist 20
    elif layout == "base":
        m.num_layers = 12  # [commands.txt] --n_layers 12
        m.dim = 768  # [commands.txt] --hidden_dim 768
        m.qkv_dim = 768
        m.num_heads = 32  # [commands.txt] --num_heads 32 (24 dims each)
        m.mlp_dim = 768  # [commands.txt] --ffn_dim 768
        m.feature_offset = 512  # [model.py] atom table 512 x 9 + 1, edge table 512 x 3 + 1
        m.num_degree = 512  # [model.py] in/out degree tables of 512 rows
        m.num_spatial = 512  # [model.py] spatial_pos_encoder of 512 rows
        m.num_edge_dis = 128  # [model.py] edge_dis_encoder 128 x heads x heads
        m.multi_hop_max_dist = 5  # [commands.txt] --multi_hop_max_dist 5
    else:
        raise ValueError(f"unknown Graphormer layout {layout!r}")
    return m


def graphormer_optim(c, *, warmup: int, total: int, weight_decay: float = 0.01) -> None:
    """Graphormer's optimiser: AdamW (0.9, 0.999, eps 1e-8), peak lr 2e-4 ([paper] GFSA App. O;
    [zinc.sh], [commands.txt]), PolynomialDecayLR power 1 ([model.py]): linear warm-up to the
    peak, then linear decay to end_lr 1e-9 at tot_updates (here to 0: a 1e-9 difference)."""
    c.optimizer.lr = 2e-4
    c.optimizer.b1, c.optimizer.b2 = 0.9, 0.999
    c.optimizer.eps = 1e-8  # torch.optim.AdamW default [model.py]
    c.optimizer.weight_decay = weight_decay  # [model.py] weight_decay default 0.01
    c.schedule.name = "constant*linear_warmup*linear_decay"
    c.schedule.warmup_steps = warmup
    c.total_steps = total


def gps_model(layout: str) -> ml_collections.ConfigDict:
    """GPS's model section (graphs/backbones/gps.py), GraphGPS's configs (`rampasek/GraphGPS`
    `configs/GPS/peptides-{func,struct}-GPS.yaml`, `zinc-GPS+RWSE.yaml`; [gps] below):
      "peptides": 4 layers, 96 wide, 4 heads, GatedGCN + Transformer, LapPE (DeepSet, 10
                  eigenvectors of L = D - A, 16 dims, 2 layers), mean pooling;
      "zinc":     10 layers, 64 wide, 4 heads, GINE + Transformer, RWSE (20 steps, 28 dims),
                  sum pooling, the 3-layer "san_graph" head (64 -> 32 -> 16 -> 1).
    BatchNorm is LayerNorm here (graphs/backbones/gps.py: the trainer keeps no running
    statistics)."""
    m = ml_collections.ConfigDict()
    m.encoder = "gps"  # graphs/backbones/gps.py
    m.dropout = 0.0  # [gps] gt.dropout 0.0 (attention dropout 0.5: config.attention)
    m.dtype = "auto"
    m.atom_dims = ATOM_DIMS
    m.bond_dims = BOND_DIMS
    m.ensemble_passes = 0
    m.ensemble_seed = 0
    if layout == "peptides":
        m.num_layers, m.dim, m.qkv_dim, m.num_heads = 4, 96, 96, 4  # [gps] gt.layers 4, dim 96
        m.mlp_dim = 192  # GPS's FFN is 2 x dim (graphs/backbones/gps.py)
        m.mpnn = "gatedgcn"  # [gps] gt.layer_type GatedGCN+Transformer
        m.lap_k, m.lap_dim, m.lap_layers = 10, 16, 2  # [gps] posenc_LapPE: max_freqs 10, dim 16
        m.rw_steps, m.rwse_dim = 20, 0
        m.pooling = "mean"  # [gps] model.graph_pooling mean
        m.head_hidden = ()  # [gps] gnn.layers_post_mp 1: one Linear
    elif layout == "zinc":
        m.num_layers, m.dim, m.qkv_dim, m.num_heads = 10, 64, 64, 4  # [gps] gt.layers 10, 64
        m.mlp_dim = 128
        m.mpnn = "gine"  # [gps] gt.layer_type GINE+Transformer
        m.lap_k, m.lap_dim, m.lap_layers = 10, 0, 2  # no LapPE
        m.rw_steps, m.rwse_dim = 20, 28  # [gps] posenc_RWSE: 20 steps, dim_pe 28
        m.pooling = "sum"  # [gps] model.graph_pooling add
        m.head_hidden = (32, 16)  # [gps] head san_graph, layers_post_mp 3
    else:
        raise ValueError(f"unknown GPS layout {layout!r}")
    return m


def gps_optim(c, *, lr: float, weight_decay: float, epochs: int, warmup_epochs: int,
              steps_per_epoch: int) -> None:  # fmt: skip
    """GraphGPS's optimiser [gps]: AdamW, cosine schedule with linear warm-up (epochs), gradient
    clipping at norm 1.0 (`clip_grad_norm_value` default)."""
    c.optimizer.lr = lr
    c.optimizer.weight_decay = weight_decay
    c.optimizer.b1, c.optimizer.b2 = 0.9, 0.999
    c.optimizer.grad_clip_norm = 1.0
    c.schedule.name = "warmup_cosine"
    c.schedule.warmup_steps = warmup_epochs * steps_per_epoch
    c.total_steps = epochs * steps_per_epoch
    c.eval_every = steps_per_epoch
