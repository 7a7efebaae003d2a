"""GRF's ViT-B (GRF Tables 1-3), the recipe of three config files: configs/vision/imagenet.py
(`model=grf_vit`: Tables 1 and 3), places365.py and inaturalist.py (Table 1's other columns).
Not a config file: imagenet.py calls `grf_vit` and `grf_rows`, the other two `grf_table1_config`.

Recipe (`model=`):
  grf_vit      GRF Tables 1 and 3's ViT-B with GRF-masked linear attention (Table 2's walks per
               dataset); `attn=softmax|grf_dense|linear` are the table's other rows.
The numbers come from GRF's Table 2 (`GRF_VIT`) and Scenic's ViT and its ImageNet config (as
`grf_vit` says), each annotated where it is set.
"""

from __future__ import annotations

import ml_collections

from configs import common
from configs.vision import common as vision_common
from configs.vision import presets
from vision import data

# GRF topological masking, Table 2 (per dataset): batch, epochs, walks n, p_halt, i_max.
GRF_VIT = {
    "imagenet": dict(batch=4096, epochs=90, n_walks=100, p_halt=0.1, max_walk_len=100,
                     train_examples=1_281_167),
    "inaturalist": dict(batch=64, epochs=5, n_walks=20, p_halt=0.1, max_walk_len=10,
                        train_examples=2_686_843),  # iNat2021 train (the paper: "2.7M")
    "places365": dict(batch=64, epochs=5, n_walks=20, p_halt=0.1, max_walk_len=10,
                      train_examples=1_803_460),  # Places365-Standard train ("1.8M")
}  # fmt: skip


def grf_vit(c, dataset: str) -> None:
    """GRF Tables 1 and 3's ViT-B (Table 2): 12 layers, 768 wide, 12 heads, MLP 3072, a 16 x 16
    grid of patches ("Num. patches 16x16": 14-px patches at 224; Scenic's default grid is
    14 x 14, `--config.model.patch_size=16`), class token, learned positions, dropout 0.1 and
    qkv biases (Scenic's ViT); Adam with base lr 3e-3 to 1e-5 after 10k linear warm-up steps,
    cosine; weight decay 0.3 and clipping 1.0 (Scenic's ImageNet ViT config, google-research/
    scenic scenic/projects/baselines/configs/imagenet/imagenet_vit_config.py).
    Attention: GRF-masked linear with Table 2's walks (`attn=` swaps: softmax, grf_dense,
    linear with phi = ReLU). iNaturalist2021 and Places365 were fine-tuned from an unstated
    pretrained checkpoint; ours train from scratch (`model.init` has no checkpoint loader)."""
    r = GRF_VIT[dataset]
    vision_common.epoch_schedule(
        c, epochs=r["epochs"], batch=r["batch"], train_examples=r["train_examples"]
    )
    c.optimizer.lr = 3e-3
    c.optimizer.b1, c.optimizer.b2, c.optimizer.eps = 0.9, 0.999, 1e-8
    c.optimizer.weight_decay = 0.3
    c.optimizer.grad_clip_norm = 1.0
    c.schedule.name = "warmup_cosine"
    c.schedule.warmup_steps = min(10_000, c.total_steps // 2)
    c.schedule.end_factor = 1e-5 / 3e-3
    m = c.model
    m.encoder, m.patch_size = "transformer", 14
    m.num_layers, m.dim, m.qkv_dim, m.num_heads, m.mlp_dim = 12, 768, 768, 12, 3072
    m.dropout, m.drop_path = 0.1, 0.0
    m.qkv_bias = m.out_bias = True
    m.pool, m.positions = "cls", "learned"
    m.dtype = "auto"
    d = c.data
    d.image_size, d.augment, d.hflip = 224, "inception", True
    c.attention = common.attention_config(
        "grf", n_walks=r["n_walks"], p_halt=r["p_halt"], max_walk_len=r["max_walk_len"]
    )


def grf_table1_config(dataset: str, arg: str | None) -> ml_collections.ConfigDict:
    """The config of a GRF Table 1 column other than ImageNet: `model=grf_vit` on `dataset`
    (`places365`, `inaturalist`), with its class count and TFDS name."""
    args = vision_common.parse(arg, "grf_vit", recipes=("grf_vit",))
    d = data.data_config(dataset)
    d.tfds_name = GRF_TFDS[dataset]
    d.num_classes = GRF_CLASSES[dataset]
    c = vision_common.new(f"vision.{dataset}", d, args.preset)
    grf_vit(c, dataset)
    c = vision_common.finish(c, args, presets.SMALL_IMAGES)
    grf_rows(c, dataset)
    return c


GRF_CLASSES = {"places365": 365, "inaturalist": 10_000}  # Places365; iNaturalist 2021
GRF_TFDS = {"places365": "places365_small", "inaturalist": "i_naturalist2021"}


def grf_rows(c, dataset: str) -> None:
    """The other rows of GRF Table 1 after `attn=`: linear attention with phi = ReLU (Table 2,
    not the registry's elu + 1), and the dense M_alpha(G) mask over the same walk lengths."""
    if c.attention.name == "linear":
        c.attention.feature_map = "relu"
    if c.attention.name == "grf_dense":
        c.attention.max_walk_len = GRF_VIT[dataset]["max_walk_len"]
