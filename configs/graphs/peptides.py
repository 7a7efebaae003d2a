"""LRGB Peptides-func / Peptides-struct with SAMSA's Graph-Bridge (SAMSA Tables 1, 3, 4):
nodes and edges as tokens (random-feature positional encodings), the 24-layer SAMSA encoder.

Run:
    python -m scripts.train --config configs/graphs/peptides.py:preset=cpu --workdir runs/pep
    python -m scripts.train --config configs/graphs/peptides.py:preset=cpu,attn=softmax ...
    attnbench-data fetch peptides   # once: LRGB's files into the data root
    python -m scripts.train --config configs/graphs/peptides.py:kind=func,k=256,mode=hard \
        --config.data.source=official --workdir runs/pep-func

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke    scaling of the recipe (default paper)
    model=graph_bridge|gps    SAMSA's Graph-Bridge (default) or GPS with LapPE (GraphGPS's
                              recipe; GFSA Table 6 with attn=gfsa)
    kind=struct|func          Peptides-struct (11 regression targets, MAE; default) or
                              Peptides-func (10 labels, average precision)
    source=standin|official   generated peptides offline or LRGB's files (csv.gz +
                              split pickles): where `attnbench-data fetch peptides` puts them
                              (`--config.data.dir` empty), or under `--config.data.dir`
                              (default: official at preset=paper, standin at cpu and smoke)
    k=128|256|512, mode=hard|soft   SAMSA's sampled tokens and sampler (Tables 1 and 3)
    attn=<mechanism>          softmax for the full-attention row, or any mechanism

Sources, cited below: [paper] SAMSA (Lenhat et al., arXiv 2408.05391) Tables 7 and 8 and
App. B; [arch] the authors' Graph-Bridge architecture file (d_rf 128, temperature 1.0, no
attention dropout; graphs/backbones/graph_bridge.py's docstring); [lrgb] the LRGB release
(Dwivedi et al. 2022).
"""

from __future__ import annotations

import math

import ml_collections

from configs import common
from configs.graphs import common as graph_common

KINDS = ("struct", "func")
TRAIN_GRAPHS = 10_873  # [lrgb] Peptides train split (70% of 15,535)

PRESETS = {
    # About 10 minutes on 2 CPU cores on the generated peptides. Deviations from the recipe:
    #  - 4 layers of width 64 (FFN 128, 4 heads) instead of 24 x 128; k scaled with the tokens;
    #  - 600 steps at batch 16, 10% warm-up, peak lr 1e-3; no dropout or drop-path;
    #  - 1,000 generated peptides of 4-12 residues (~35-180 atoms, conformers in minutes)
    #    instead of LRGB-sized ones (6-30 residues, ~151 atoms, about 1 s each).
    "cpu": {
        "data": dict(num_peptides=1_000, peptide_lengths=(4, 12), max_nodes=192),
        "model": dict(layers=4, dim=64, heads=4, mlp_dim=128),
        "run": dict(steps=600, eval_every=100, lr_peak=1e-3),
        "batch": (16, 32),
    },
    "smoke": {
        **common.SMOKE,
        "data": dict(num_peptides=30, peptide_lengths=(2, 4), max_nodes=64, node_buckets=(64,)),
        "batch": (4, 4),
        "log_every": 2,
    },
}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    args = common.parse(
        arg,
        extra={"kind": "struct", **common.DATA_SOURCE, "model": "graph_bridge"},
        choices={
            "kind": (KINDS, "Peptides"),
            "source": (graph_common.SOURCES, "data"),
            "model": (("graph_bridge", "gps"), None),
        },
    )
    c = common.trainer_config()
    c.task = f"graphs.peptides_{args.kind}"  # graphs/tasks.py
    c.preset = args.preset
    c.data = graph_common.data(
        args.source,
        # standin only: generated peptides (graphs.data.peptides.load: 70/15/15 split, as LRGB's)
        num_peptides=360,  # ~10 minutes of conformers on 2 cores at LRGB's sizes
        peptide_lengths=(6, 30),  # residues, uniform: ~151 heavy atoms on average, as LRGB
        max_nodes=448,  # [lrgb] the largest peptide has 444 heavy atoms
        edge_factor=3,  # directed bonds per atom ~2.05 (edge buckets 3 x node buckets)
        flops_nodes=151,  # [lrgb] 150.9 nodes per peptide on average
    )
    c.data.dense = False  # Graph-Bridge reads the edge list only: no N x N arrays per batch
    c.model = _model(args.kind)
    # SAMSA: k tokens sampled per layer (Table 3's best: func hard k=256, struct k=128); the
    # authors' Graph-Bridge arch file: temperature 1.0, no attention-map dropout [arch]
    c.attention = common.attention_config(
        "samsa", k=args.k or (256 if args.kind == "func" else 128), mode=args.mode
    )
    c.attention.temperature = 1.0  # [arch]
    c.seed = 0
    c.batch_size = 32  # [paper] App. B
    c.eval_batch_size = 32
    epochs = 160 if args.kind == "func" else 240  # [paper] Table 7
    c.total_steps = epochs * math.ceil(TRAIN_GRAPHS / c.batch_size)
    c.eval_every = math.ceil(TRAIN_GRAPHS / c.batch_size)  # one epoch
    c.log_every = 50
    c.optimizer.lr = 4e-4 if args.kind == "func" else 1e-3  # [paper] Table 7
    c.optimizer.weight_decay = 0.01  # [paper] Table 7
    c.optimizer.b1, c.optimizer.b2 = 0.9, 0.999  # [paper] App. B, AdamW
    c.optimizer.grad_clip_norm = 2.0  # [paper] Table 7
    c.schedule.name = "warmup_cosine"  # [paper] App. B: 2,000 linear warm-up steps, cosine
    c.schedule.warmup_steps = 2_000
    if args.kind == "func":
        c.best_metric, c.best_mode = "ap", "max"  # [lrgb] average precision over 10 labels
        c.evals.ap = ml_collections.ConfigDict({"type": "multilabel_ap", "labels": "target"})
    else:
        c.best_metric, c.best_mode = "mae", "min"  # [lrgb] MAE over the 11 targets
    if args.model == "gps":
        _gps(c, args.kind)
    if args.attn:
        common.swap_attention(c, args.attn)
    common.scale(c, PRESETS)
    if c.preset != "paper" and args.model == "graph_bridge":
        c.model.drop_path = 0.0
        c.model.random_feature_dim = c.model.dim
        if "k" in c.attention:  # keep k's share of a peptide's ~460 tokens (~1/4 at k=128)
            tokens = c.data.max_nodes * (1 + c.data.edge_factor) // 4
            c.attention.k = max(1, min(c.attention.k, tokens // 4))
    return c


def _model(kind: str) -> ml_collections.ConfigDict:
    m = ml_collections.ConfigDict()
    m.encoder = "graph_bridge"  # graphs/backbones/graph_bridge.py
    m.num_layers = 24  # [paper] Table 8: n_depth 24
    m.dim = 128  # [paper] Table 8: d_model 128
    m.qkv_dim = 128
    m.num_heads = 8  # [paper] Table 8: 8 heads
    m.mlp_dim = 512  # [paper] Table 8: d_FFN 512
    m.dropout = 0.3  # [paper] Table 8: p_dropout 0.3
    m.drop_path = 0.2  # [paper] Table 8: p_droppath 0.2
    m.random_feature_dim = 128  # [arch] d_rf 128
    m.dtype = "auto"
    m.atom_dims = graph_common.ATOM_DIMS  # OGB features (LRGB's smiles2graph)
    m.bond_dims = graph_common.BOND_DIMS
    # [paper] App. B: SmoothL1 for Peptides-struct (the func loss is not stated: BCE)
    m.loss = "smooth_l1" if kind == "struct" else "bce"
    m.ensemble_passes = 0
    m.ensemble_seed = 0
    return m


def _gps(c, kind: str) -> None:
    """GraphGPS's Peptides recipe ([gps] `configs/GPS/peptides-{func,struct}-GPS.yaml`); GFSA
    Table 6 plugs GFSA into its attention, GPS's settings unchanged (K unpublished)."""
    c.model = graph_common.gps_model("peptides")
    c.model.loss = "bce" if kind == "func" else "l1"  # [gps] BCE / L1
    c.data.dense = False  # GPS reads the edge list and the per-node encodings only
    c.attention = common.attention_config("softmax", dropout_rate=0.5)  # [gps] attn_dropout 0.5
    c.batch_size = c.eval_batch_size = 128  # [gps] train.batch_size 128
    # [gps] optim: AdamW lr 3e-4, no weight decay, 200 epochs, 10 warm-up epochs, cosine
    graph_common.gps_optim(
        c, lr=3e-4, weight_decay=0.0, epochs=200, warmup_epochs=10,
        steps_per_epoch=math.ceil(TRAIN_GRAPHS / 128),
    )  # fmt: skip
