"""Pieces shared by the point-cloud recipes (`modelnet40.py`, `shapenetpart.py`): the data
section and SAMSA's point-cloud recipe (Tables 7 and 8), each number commented with its source.

Sources: [paper] SAMSA (Lenhat et al., arXiv 2408.05391) App. A and B, Tables 7 and 8; [code]
the authors' code, GitHub HySonLab/SAMSA (its heads: the pooling); [pn2] the PointNet++ data
release the authors' README points to (modelnet40_normal_resampled,
yanx27/Pointnet_Pointnet2_pytorch).
"""

from __future__ import annotations

import math

import ml_collections

from attnbench import config as config_lib
from configs import common

SOURCES = ("standin", "official")
MODELS = ("samsa", "pointnet", "dgcnn")  # the recipe's model= argument


# The scaled presets of the classification and segmentation recipes (`common.scale`).
PRESETS = {
    # About 5 minutes per run on 2 CPU cores on the generated shapes. Deviations from the
    # recipes: 256 points (SAMSA's k scaled by the same ratio); 4 layers of width 64 (FFN 128,
    # 4 heads); 600 steps at batch 32, 10% warm-up, peak lr 2e-3; no dropout or drop-path;
    # 2,400 / 600 / 600 generated shapes, randomly rotated (uniform over SO(3)): the
    # pre-aligned ones are too easy to compare models on (hard SAMSA: 99.7% ModelNet40-like
    # validation accuracy after 400 steps, measured at 87a9984).
    "cpu": {
        "data": dict(num_points=256, num_train=2_400, num_val=600, num_test=600, random_pose=True),
        "model": dict(layers=4, dim=64, heads=4, mlp_dim=128),
        "run": dict(steps=600, eval_every=100, lr_peak=2e-3),
        "batch": (32, 64),
    },
    "smoke": {
        **common.SMOKE,
        "data": dict(num_points=64, num_train=48, num_val=16, num_test=16),
        "batch": (8, 8),
        "log_every": 2,
    },
}


def data(dataset: str, source: str, **fields) -> ml_collections.ConfigDict:
    """A point-cloud task's data section (`pointcloud.data.load` reads it)."""
    d = ml_collections.ConfigDict()
    d.dataset = dataset  # modelnet40 | shapenetpart
    d.source = source  # standin (generated shapes, offline) | official (files under `dir`)
    d.dir = ""  # the official release's folder
    d.layout = "normal_resampled"  # ModelNet40: normal_resampled (text) | hdf5 (ply_hdf5_2048)
    # ModelNet40's official 10,000-point files down to num_points: fps ([paper] "farthest point
    # sampling to 1,024 points", PointNet's) | first (the first points, yanx27's default)
    d.sampling = "fps"
    d.num_categories = 40  # ModelNet40 | 10 (ModelNet10, normal_resampled layout)
    d.trainval = False  # ShapeNetPart: train on train + val (yanx27's train_partseg.py does)
    d.random_pose = False  # stand-in: random rotations (the real sets are pre-aligned)
    d.cache = True  # convert / generate once into memory-mapped arrays
    d.cache_dir = ""  # official: where the conversion goes ("" = inside the dataset folder)
    d.workers = 0  # official: processes for the one-time conversion (0 = the CPUs, <= 8)
    d.normals = True  # [paper] inputs are xyz + normals (6-d)
    d.num_points = 1024  # points per cloud fed to the model
    d.seed = 0  # the stand-in generator's seed
    d.num_train = 0  # stand-in sizes (0: the generator's default)
    d.num_val = 0
    d.num_test = 0
    d.augment = ""  # [paper] "no data augmentation"
    d.vote = 0  # test-time voting: not implemented; one pass over the test split
    for key, value in fields.items():
        d[key] = value
    return common.data_fields(d)


def samsa_model(num_layers: int) -> ml_collections.ConfigDict:
    """SAMSA's point-cloud model, [paper] Table 8: d_model 256, d_FFN 768, 8 heads, dropout 0.1,
    drop-path 0.1 (6 layers for ModelNet40, 8 for ShapeNetPart)."""
    m = ml_collections.ConfigDict()
    m.encoder = "samsa"  # attnbench.nn.samsa_block: pre-RMSNorm, shared zero-init residual scale
    m.num_layers = num_layers
    m.dim = 256
    m.qkv_dim = 256  # no d_attention column in Table 8: d_attention = d_model (our reading)
    m.mlp_dim = 768
    m.num_heads = 8
    m.dropout = 0.1
    m.drop_path = 0.1
    m.positions = "none"  # [paper] no positional encoding is stated for points; order is arbitrary
    m.pool = "mean"  # unused by the point models (see readout); kept for the shared checks
    m.readout = "attention"  # [code] the heads pool by softmax(Linear(d, 1)) over the tokens
    m.dgcnn_k = 20  # model=dgcnn: Wang et al. 2019, k = 20 neighbours
    m.dtype = "auto"  # bfloat16 on accelerators (SAMSA's FlashAttention), float32 on CPU
    return m


def samsa_training(c, *, train_examples: int, epochs: int) -> None:
    """[paper] App. B and Table 7 (point clouds): AdamW (0.9, 0.999), batch 32, lr 0.002 with
    2,000 linear warm-up steps then cosine annealing, clipping 2.0, weight decay 0.1."""
    c.batch_size = c.eval_batch_size = 32
    steps_per_epoch = math.ceil(train_examples / c.batch_size)
    c.total_steps = epochs * steps_per_epoch
    c.eval_every = steps_per_epoch  # once per epoch
    c.log_every = 50
    c.optimizer.lr = 0.002
    c.optimizer.b1, c.optimizer.b2, c.optimizer.eps = 0.9, 0.999, 1e-8
    c.optimizer.weight_decay = 0.1
    c.optimizer.grad_clip_norm = 2.0
    c.schedule.name = "warmup_cosine"
    c.schedule.warmup_steps = 2_000


def attention(c, args) -> None:
    """The mechanism: SAMSA (`k=`, `mode=`; default k 128, Table 1's smallest column) or any
    other (`attn=`; softmax is the paper's full-attention row, "run by ourselves, with the
    exact same hyperparameters as other SAMSA models"). `attn=grf` masks on the k-NN graph of
    each cloud, with walks resampled per call (GRF's changing-graph setting)."""
    c.attention = common.attention_config("samsa", k=args.k or 128, mode=args.mode)
    if args.attn and args.attn != "samsa":
        c.attention = common.attention_config(args.attn)
    if c.attention.name in ("grf", "grf_dense") or "knn_k" in c.attention:
        if "graph" in c.attention:
            c.attention.graph = "knn"
        if "resample" in c.attention:
            c.attention.resample = True
        if "cls_token" in c.attention:
            c.attention.cls_token = False


def check_k(c) -> None:
    if "k" in c.attention and c.attention.name == "samsa" and c.attention.k > c.data.num_points:
        raise config_lib.ConfigError(
            f"SAMSA k={c.attention.k} exceeds the {c.data.num_points} points of a cloud"
        )
