"""What every vision recipe file shares: the `model=` argument, the model section, the recipes
of the papers' image tables (each a function that fills a config from its source's numbers),
and the preset scaling for images (`finish`). Domain-independent pieces are configs/common.py.

Recipes (`model=` in the config argument):
  vit          Sliceformer Table 5's ViT (vit-pytorch, as the authors ran it; notes
               sliceformer.md §2.6): CIFAR-10/100 dim 512, depth 6, 8 x 64 heads, MLP 512,
               patch 2; Tiny-ImageNet timm's ViT-S/16 at 224 px.
  sliceformer  the same ViT with the sorting attention (no W_Q, W_K), Table 5's other row.
  deit_s       DeiT-S (Touvron et al. 2021), GFSA Tables 3 and 12's backbone: 12 layers, 384
               wide, 6 heads, patch 16 at 224 px, the DeiT training recipe.
  deit_s24     the 24-layer DeiT-S of GFSA Tables 3 and 12 (dropout 0.2, GFSA App. M.1).
  cait_s24     CaiT-S24 (Touvron et al. 2021b), GFSA Tables 3, 12 and 14's backbone: 24
               talking-heads self-attention blocks with LayerScale, 2 class-attention blocks.
  swin_t, swin_s  Swin-T / Swin-S (Liu et al. 2021) at 224 px, GFSA Table 12's Swin-S.
  grf_vit      GRF Tables 1 and 3's ViT-B with GRF-masked linear attention (Table 2's walks per
               dataset); `attn=softmax|grf_dense|linear` are the table's other rows.
`attn=` swaps the mechanism (e.g. `model=deit_s,attn=gfsa` is "DeiT-S + GFSA"); GFSA gets the
K of the authors' runs per backbone (`GFSA_ORDER`) and, on CaiT, filters the talking-heads matrix.
"""

from __future__ import annotations

import ml_collections

from attnbench import config as config_lib
from configs import common
from configs.vision import presets
from vision import data, models

__all__ = [
    "RECIPES",
    "parse",
    "model_config",
    "new",
    "vit_sliceformer",
    "sliceformer_table5",
    "deit_s",
    "finish",
]

RECIPES = ("vit", "sliceformer", "deit_s", "deit_s24", "cait_s24", "swin_t", "swin_s", "grf_vit")


def parse(
    arg: str | None,
    default: str,
    recipes=RECIPES,
    extra: dict | None = None,
    choices: dict | None = None,
):
    """Parses a vision recipe file's `key=value,...` against `common.ARGS`, `model=` (one of
    `recipes`, default `default`) and the file's `extra` keys (`choices`: their known values,
    as `configs.common.parse`)."""
    return common.parse(
        arg,
        {"model": default, **(extra or {})},
        {
            "model": (recipes, "vision recipe"),
            "preset": (common.PRESETS, None),
            **(choices or {}),
        },
    )


def model_config() -> ml_collections.ConfigDict:
    m = ml_collections.ConfigDict()
    m.encoder = "transformer"  # transformer (ViT / DeiT) | swin | cait
    m.patch_size = 16  # pixels per patch side (non-overlapping patches)
    m.num_layers = 12  # encoder blocks
    m.dim = 384  # embedding width
    m.qkv_dim = 384  # total query/key/value width over heads
    m.num_heads = 6  # attention heads
    m.mlp_dim = 1536  # MLP hidden width
    m.dropout = 0.0  # residual, MLP and embedding dropout
    m.drop_path = 0.0  # stochastic depth (the last block's rate)
    m.drop_path_decay = "linear"  # linear (DeiT: 0 at the first block) | uniform (CaiT)
    m.layer_scale = ml_collections.FieldReference(None, field_type=float)  # LayerScale init
    m.qkv_bias = True  # biases of the q/k/v projections (timm: yes; vit-pytorch: no)
    m.out_bias = True  # bias of the attention output projection
    m.positions = "learned"  # learned absolute positions, one per token (class token included)
    m.pool = "cls"  # cls (class token) | mean (global average pooling)
    m.head_classes = 0  # classes of the linear head; 0 = config.data.num_classes
    m.dtype = "float32"  # compute dtype: float32 | bfloat16 | float16 | auto (attnbench.nn.layers)
    # MLP activation: erf = the exact GELU of PyTorch's nn.GELU, which timm (DeiT, CaiT, Swin) and
    # vit-pytorch use; tanh = the approximation (LRA's). Runs committed before this field existed
    # used tanh (their config.json has no `gelu`, which reads as tanh).
    m.gelu = "erf"
    # Swin only (encoder="swin"; `dim` is the first stage's width)
    m.attention_layers = ()  # blocks (over all stages) with config.attention (else softmax); ()=all
    m.depths = (2, 2, 6, 2)  # blocks per stage
    m.swin_heads = (3, 6, 12, 24)  # heads per stage
    m.window_size = 7  # tokens per window side
    m.mlp_ratio = 4.0  # MLP width / stage width
    m.relative_position_bias = True  # the per-window relative position bias (needs "bias")
    # CaiT only (encoder="cait"; `layer_scale` must be set)
    m.class_layers = 2  # class-attention blocks after the self-attention blocks
    return m


def new(task: str, data: ml_collections.ConfigDict, preset: str) -> ml_collections.ConfigDict:
    c = common.trainer_config()
    c.task = task
    c.preset = preset
    c.data = common.data_fields(data)
    c.model = model_config()
    # Weight decay on every parameter (all) or on the weight matrices only (kernels: timm).
    c.optimizer.decay_on = "all"
    # Top-1 and top-5 accuracy and cross-entropy on val and test (attnbench/evaluators.py).
    c.evals.classification = ml_collections.ConfigDict({"type": "classification", "top_k": (5,)})
    return c


def _epochs(c, *, epochs: int, batch: int, train_examples: int) -> None:
    """An epoch-based schedule in optimizer steps; evaluation (and checkpoints) once per epoch."""
    per_epoch = max(train_examples // batch, 1)
    c.batch_size = batch
    c.eval_batch_size = min(batch, 1024)
    c.total_steps = epochs * per_epoch
    c.eval_every = per_epoch
    c.log_every = min(50, per_epoch)


# Sliceformer Table 5's ViTs (notes sliceformer.md §2.6, from the authors' results.xlsx
# "Hyperparameters" sheet and code; parameter counts reproduce the table exactly).
SLICEFORMER_VIT = {
    "cifar10": dict(
        epochs=400, batch=512, lr=1e-4, weight_decay=0.0,  # Hyperparameters sheet
        layers=6, dim=512, mlp_dim=512, heads=8, patch=2,  # 8 x 64 heads; patch 2 -> 9.60M
        qkv_bias=False,  # vit-pytorch: to_qkv without bias, to_out with bias
        train_examples=50_000,
    ),
    "cifar100": dict(
        epochs=400, batch=128, lr=1e-4, weight_decay=0.0,
        layers=6, dim=512, mlp_dim=512, heads=8, patch=2,
        qkv_bias=False,
        train_examples=50_000,
    ),
    "tiny_imagenet": dict(
        epochs=600, batch=256, lr=3e-3, weight_decay=0.05,  # AdamP in the authors' code
        layers=12, dim=384, mlp_dim=1536, heads=6, patch=16,  # timm vit_small_patch16_224
        qkv_bias=True,
        train_examples=100_000,
    ),
}  # fmt: skip


# Per-channel mean and std of pixels / 255 in the authors' code (one_expe_mnist.py; notes
# sliceformer.md §2.6); Tiny-ImageNet: timm's ImageNet statistics (its default transform).
NORMALIZATION = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)),
    "cifar100": ((0.5071, 0.4867, 0.4408), (0.2675, 0.2565, 0.2761)),
    "tiny_imagenet": (data.IMAGENET_MEAN, data.IMAGENET_STD),
}
TFDS_NAMES = {"cifar10": "cifar10", "cifar100": "cifar100"}  # Tiny-ImageNet is not in TFDS


def sliceformer_table5(dataset: str, arg: str | None) -> ml_collections.ConfigDict:
    """The config of a Sliceformer Table 5 column: `model=vit|sliceformer` on `dataset`."""
    args = parse(arg, "vit", recipes=("vit", "sliceformer"))
    d = data.data_config(dataset)
    d.tfds_name = TFDS_NAMES.get(dataset, "")
    d.mean, d.std = NORMALIZATION[dataset]
    c = new(f"vision.{dataset}", d, args.preset)
    vit_sliceformer(c, dataset, sliceformer=args.model == "sliceformer")
    return finish(c, args, presets.SMALL_IMAGES)


def vit_sliceformer(c, dataset: str, *, sliceformer: bool) -> None:
    """Sliceformer Table 5, row ViT (`sliceformer=False`) or Sliceformer, on `dataset`.

    Both rows: dropout 0.1 (also after the embedding), CLS pooling, learned positions, cross-
    entropy, cosine annealing over the run without warm-up (the authors step it per epoch, we
    per step), seed 0. The authors' optimizers are Adam (CIFAR) and AdamP (Tiny-ImageNet); we
    use AdamW with the same lr and weight decay (AdamP's projection is not in optax).
    Tiny-ImageNet: timm's ViT-S/16 at 224 x 224 (images upsampled from 64) with timm's
    1000-way head left in place, which is what makes Table 5's 22.05M (notes §2.6 [I]).
    """
    r = SLICEFORMER_VIT[dataset]
    _epochs(c, epochs=r["epochs"], batch=r["batch"], train_examples=r["train_examples"])
    c.seed = 0  # one_expe_mnist.py
    c.optimizer.lr = r["lr"]
    c.optimizer.b1, c.optimizer.b2, c.optimizer.eps = 0.9, 0.999, 1e-8  # torch Adam defaults
    c.optimizer.weight_decay = r["weight_decay"]
    c.schedule.name = "warmup_cosine"
    c.schedule.warmup_steps = 0
    m = c.model
    m.encoder = "transformer"
    m.patch_size = r["patch"]
    m.num_layers, m.dim, m.qkv_dim = r["layers"], r["dim"], r["heads"] * 64
    m.num_heads, m.mlp_dim = r["heads"], r["mlp_dim"]
    m.dropout = 0.1  # dropout and emb_dropout
    m.drop_path = 0.0
    m.qkv_bias, m.out_bias = r["qkv_bias"], True
    m.pool, m.positions = "cls", "learned"
    m.dtype = "float32"  # the authors' code has no mixed precision
    if dataset == "tiny_imagenet":
        m.head_classes = 1000  # timm's ImageNet head, unchanged for 200 classes
        c.data.image_size = 224
        c.data.augment = "crop_flip"  # the CIFAR augmentation at 64 px, then resized to 224
        c.data.crop_padding = 8  # scaled from CIFAR's 4 at 32 px (not given: notes §6.21)
    else:
        c.data.image_size = 32
        c.data.augment = "crop_flip"  # RandomCrop(32, padding=4) + RandomHorizontalFlip
        c.data.crop_padding = 4
    c.data.hflip = True
    # No attention dropout: vit-pytorch's Attention at the authors' fork drops only after W_O.
    c.attention = common.attention_config("sliceformer" if sliceformer else "softmax")


# DeiT (Touvron et al. 2021, Table 9 and the released main.py defaults), as GFSA trained it.
DEIT = dict(
    epochs=300, batch=1024, lr=5e-4 * 1024 / 512,  # lr 5e-4 x batch / 512
    warmup_epochs=5, weight_decay=0.05,
    drop_path=0.1, label_smoothing=0.1, mixup=0.8, cutmix=1.0,
    rand_augment="rand-m9-mstd0.5-inc1", random_erasing=0.25,
    train_examples=1_281_167,  # ImageNet-1k train
)  # fmt: skip


def _deit_training(c, *, lr: float, warmup_epochs: int, end_factor: float = 0.0) -> None:
    """The DeiT training recipe (shared by Swin, which kept it) after `_epochs`: AdamW (0.9,
    0.999), weight decay 0.05 on the weight matrices only (timm: no decay on biases, norms,
    positions, tokens, relative position bias tables), linear warm-up then cosine, 224 px,
    random resized crop + flip, RandAugment, random erasing, Mixup / CutMix, label smoothing,
    mixed precision on accelerators."""
    c.optimizer.lr = lr
    c.optimizer.b1, c.optimizer.b2, c.optimizer.eps = 0.9, 0.999, 1e-8
    c.optimizer.weight_decay = DEIT["weight_decay"]
    c.optimizer.decay_on = "kernels"
    c.schedule.name = "warmup_cosine"
    c.schedule.warmup_steps = warmup_epochs * c.eval_every
    c.schedule.end_factor = end_factor
    c.model.dtype = "auto"  # both train with automatic mixed precision
    d = c.data
    d.image_size, d.augment, d.hflip = 224, "inception", True
    d.rand_augment, d.random_erasing = DEIT["rand_augment"], DEIT["random_erasing"]
    d.mixup, d.cutmix, d.label_smoothing = DEIT["mixup"], DEIT["cutmix"], DEIT["label_smoothing"]
    c.attention = common.attention_config("softmax")


def _deit_extras(c) -> None:
    """What DeiT's main.py (and GFSA's copy, Image/main.py) turns on by default beyond the
    recipe Swin shares: repeated augmentation with 3 repeats (`--repeated-aug`, timm's
    RASampler) and a parameter EMA with decay 0.99996 (`--model-ema`), which DeiT saves but does
    not report (its evaluation is of the raw model; ours evaluates both, `ema_` metrics)."""
    c.data.repeated_aug = 3
    c.ema_decay = 0.99996


def deit_s(c, *, layers: int = 12) -> None:
    """DeiT-S (GFSA Tables 3 and 12): 384 wide, 6 heads of 64, MLP 1536, patch 16 at 224 px,
    qkv biases, class token, learned positions; the DeiT recipe (AdamW (0.9, 0.999), batch
    1024, lr 1e-3, 5 warm-up epochs then cosine, weight decay 0.05, drop-path 0.1 linear in
    depth, label smoothing 0.1, Mixup 0.8 / CutMix 1.0, RandAugment m9-mstd0.5, random erasing
    0.25, 300 epochs; weight decay on the weight matrices only, as timm). 24 layers: dropout
    0.2 (GFSA App. M.1). With the DeiT / GFSA main.py defaults (`_deit_extras`): repeated
    augmentation x3 and a parameter EMA (0.99996) evaluated beside the model. Not reproduced:
    the distillation token and teacher (GFSA's runs have none: `--distillation-type none`)."""
    r = DEIT
    _epochs(c, epochs=r["epochs"], batch=r["batch"], train_examples=r["train_examples"])
    _deit_training(c, lr=r["lr"], warmup_epochs=r["warmup_epochs"])
    _deit_extras(c)
    m = c.model
    m.encoder = "transformer"
    m.patch_size = 16
    m.num_layers, m.dim, m.qkv_dim, m.num_heads, m.mlp_dim = layers, 384, 384, 6, 1536
    m.dropout = 0.2 if layers == 24 else 0.0
    m.drop_path, m.drop_path_decay = r["drop_path"], "linear"
    m.qkv_bias = m.out_bias = True
    m.pool, m.positions = "cls", "learned"


# CaiT-S24 as GFSA trained it (notes gfsa.md §2.3; the authors' Image/README.md command and
# Image/main.py defaults, logs/imnet1k_gfsa_cait_S24_224/log.txt): 4 GPUs x 128 images, lr 5e-4
# (5e-4 x 512 / 512; the log peaks at 5e-4), 500 epochs (the log ends at epoch 499), drop-path 0.1
# (main.py's default; CaiT's own S24 setting too), the rest of the DeiT recipe.
CAIT_S24 = dict(epochs=500, batch=512, lr=5e-4 * 512 / 512, layer_scale=1e-5, drop_path=0.1)


def cait_s24(c) -> None:
    """CaiT-S24 at 224 px (GFSA Tables 3, 12, 14): patch 16, 384 wide, 8 heads of 48, MLP 1536,
    24 self-attention blocks with talking heads (`attention.talking_heads`) and LayerScale
    1e-5, uniform drop-path 0.1, 2 class-attention blocks, qkv biases, exact GELU; trained with
    the DeiT recipe at batch 512, lr 5e-4, 500 epochs (`CAIT_S24`). Not reproduced: what
    `deit_s` lists, and CaiT's own 400-epoch recipe (the quoted 82.6 of the vanilla row)."""
    r = CAIT_S24
    _epochs(c, epochs=r["epochs"], batch=r["batch"], train_examples=DEIT["train_examples"])
    _deit_training(c, lr=r["lr"], warmup_epochs=DEIT["warmup_epochs"])
    _deit_extras(c)
    c.attention = common.attention_config("talking_heads")
    m = c.model
    m.encoder = "cait"
    m.patch_size = 16
    m.num_layers, m.dim, m.qkv_dim, m.num_heads, m.mlp_dim = 24, 384, 384, 8, 1536
    m.dropout = 0.0
    m.drop_path, m.drop_path_decay = r["drop_path"], "uniform"
    m.layer_scale = r["layer_scale"]
    m.class_layers = 2
    m.qkv_bias = m.out_bias = True
    m.pool, m.positions = "cls", "learned"


# K of GFSA per backbone (notes gfsa.md §1.5): DeiT-S 12L 3 (Table 13's best, 81.12, is Table 3's
# 81.1; the released code hard-codes 4); DeiT-S 24L unreported ("range 2-5"), 3 as 12 layers;
# CaiT-S24 4 (Table 14, and the code); Swin 3 (the code).
GFSA_ORDER = {"deit_s": 3, "deit_s24": 3, "cait_s24": 4, "swin_t": 3, "swin_s": 3}


def gfsa_rows(c, model: str) -> None:
    """After `attn=gfsa` / `gfsa_exact`: the authors' K for `model`, and on CaiT the filter on
    its talking-heads matrix (the authors' gfsa_cait.py); plain softmax elsewhere."""
    if c.attention.name not in ("gfsa", "gfsa_exact"):
        return
    if model in GFSA_ORDER:
        c.attention.order = GFSA_ORDER[model]
    if c.model.encoder == "cait":
        c.attention.talking_heads = True


# Swin (Liu et al. 2021, Table 1 / configs): (depths, heads, drop-path); C = 96, window 7.
SWIN = {
    "swin_t": ((2, 2, 6, 2), (3, 6, 12, 24), 0.2),
    "swin_s": ((2, 2, 18, 2), (3, 6, 12, 24), 0.3),
}


def swin(c, variant: str) -> None:
    """Swin-T / Swin-S at 224 px (patch 4, C 96, window 7, GAP + linear head) with the Swin
    recipe as GFSA's code runs it (notes gfsa.md §3.3): AdamW, 1,024 images per step, lr 1e-3
    (5e-4 x 1024 / 512), 20 warm-up epochs then cosine to 5e-6, weight decay 0.05, clipping
    5.0, 300 epochs (GFSA's config says 400), the DeiT augmentations, no decay on biases, norms
    and position bias tables. Not reproduced: the warm-up's start at 5e-7 (ours starts at 0)."""
    depths, heads, drop_path = SWIN[variant]
    _epochs(c, epochs=300, batch=1024, train_examples=DEIT["train_examples"])
    _deit_training(c, lr=1e-3, warmup_epochs=20, end_factor=5e-6 / 1e-3)
    c.optimizer.grad_clip_norm = 5.0
    m = c.model
    m.encoder, m.patch_size, m.dim = "swin", 4, 96
    m.depths, m.swin_heads, m.window_size, m.mlp_ratio = depths, heads, 7, 4.0
    m.num_layers, m.num_heads = sum(depths), heads[0]  # what generic code reads
    m.qkv_dim, m.mlp_dim = 96, 384
    m.dropout, m.drop_path, m.drop_path_decay = 0.0, drop_path, "linear"
    m.pool, m.positions = "mean", "none"


# SSA's Swin-T (Hussain et al. 2023, Sec. 4.2, App. B.2, Tables 2 and 9; notes ssa.md §1.4,
# §2.4): which stages sample. S10 = stages 1-3 (Swin-T's first 10 blocks; stage 4's 7 x 7 windows
# cannot be split into four sub-windows); S6 = stage 3 only (the first 4 blocks excluded).
SSA_SWIN_STAGES = {"S10": "all but the last", "S6": "the last but one"}


def ssa_swin(c, *, sampling: str, finetune: bool) -> None:
    """SSA on Swin (after `swin`): 25% of each window's sources, L4 = four sub-windows of
    targets (2 x 2 tiles of the window grid, `grid_2d`), sources drawn by 2-D locally biased
    shuffling with sigma = 0.75 of the window side in both directions (`sampling="local"`, the
    paper's 10.5 patches of a 14 x 14 window) or uniformly inside the window ("unbiased",
    Table 9), confined to their own (shifted) window because the mechanism is called per
    window; dense attention at evaluation (the paper's renormalisation); +FT: the last 10% of
    the steps dense. Which blocks sample is `ssa_rows` (after the preset's depths).

    Decisions where the paper is silent (notes ssa.md §6, item 5): one pattern per step shared
    by every window, head and image (the paper's "same reindexing within each mini-batch");
    the shifted-window mask and the relative position bias are gathered with the sources."""
    sigma = 0.75 if sampling == "local" else float("inf")
    c.attention = common.attention_config(
        "ssa",
        keep=0.25,
        sampling="grid_2d",
        tiles=(2, 2),
        sigma_first=sigma,
        sigma_last=sigma,
    )
    c.dense_finetune_fraction = 0.1 if finetune else 0.0


def ssa_rows(c, layers: str) -> None:
    """Sets `model.attention_layers` to the blocks of the stages `layers` (a key of
    `SSA_SWIN_STAGES`) names, counted on the (possibly preset-scaled) depths."""
    depths = tuple(c.model.depths)
    stages = range(len(depths) - 1) if layers == "S10" else [max(len(depths) - 2, 0)]
    first = [sum(depths[:s]) for s in range(len(depths))]
    c.model.attention_layers = tuple(
        i for s in stages for i in range(first[s], first[s] + depths[s])
    )


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
    cosine; weight decay 0.3 and clipping 1.0 (Scenic's ImageNet ViT config, notes §E2).
    Attention: GRF-masked linear with Table 2's walks (`attn=` swaps: softmax, grf_dense,
    linear with phi = ReLU). iNaturalist2021 and Places365 were fine-tuned from an unstated
    pretrained checkpoint; ours train from scratch (`model.init` has no checkpoint loader)."""
    r = GRF_VIT[dataset]
    _epochs(c, epochs=r["epochs"], batch=r["batch"], train_examples=r["train_examples"])
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
    args = parse(arg, "grf_vit", recipes=("grf_vit",))
    d = data.data_config(dataset)
    d.tfds_name = GRF_TFDS[dataset]
    d.num_classes = GRF_CLASSES[dataset]
    c = new(f"vision.{dataset}", d, args.preset)
    grf_vit(c, dataset)
    c = finish(c, args, presets.SMALL_IMAGES)
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


def tokens(c) -> int:
    """Tokens the backbone sees at the config's image size."""
    return models.num_tokens(c.model, c.data.image_size)


def finish(c, args, presets) -> ml_collections.ConfigDict:
    """Scales the recipe to its preset from the file's table `presets` (`common.scale`, plus
    the image keys `patch` (model.patch_size) and `image_size`), applies `attn=`, and fits
    graph-structured mechanisms to the grid of patches (GRF: the 2-D grid graph, the class
    token linked to every patch). Returns `c`.

    Raises:
      ConfigError: `length=` (an image's tokens are its patches), an image size the patches
        do not tile, or SAMSA's k above the token count.
    """
    if args.length:
        raise config_lib.ConfigError(
            f"length={args.length}: an image's tokens are its patches; set the image size or "
            "the patch size instead"
        )
    swin = None
    if c.preset != "paper" and c.preset in presets:
        preset = dict(presets[c.preset])
        if "patch" in preset:
            c.model.patch_size = preset.pop("patch")
        if "image_size" in preset:
            c.data.image_size = preset.pop("image_size")
        swin = preset.pop("swin", None)
        presets = {**presets, c.preset: preset}
    common.scale(c, presets)
    if c.preset != "paper":
        # A 0.99996 EMA stays at the initial weights over a preset's few thousand steps, and
        # evaluating it doubles the evaluation time: the scaled presets leave it off.
        c.ema_decay = 0.0
    if swin is not None and c.model.encoder == "swin":
        m = c.model
        m.patch_size, m.dim, m.depths = swin["patch"], swin["dim"], swin["depths"]
        m.swin_heads, m.window_size = swin["heads"], swin["window"]
        m.num_layers, m.num_heads, m.qkv_dim = sum(m.depths), m.swin_heads[0], m.dim
    try:
        gh, gw = models.grid_shape(c.data.image_size, c.model.patch_size)
    except ValueError as e:
        raise config_lib.ConfigError(str(e)) from None
    n = tokens(c)
    if args.attn and args.attn != c.attention.name:
        common.swap_attention(c, args.attn, k=args.k or max(1, n // 16), mode=args.mode)
        gfsa_rows(c, args.model)
    if "k" in c.attention and c.attention.k > n:
        raise config_lib.ConfigError(f"SAMSA k={c.attention.k} exceeds the {n} tokens of an image")
    att = c.attention
    if common.takes_token_grid(att):
        att.grid = (gh, gw)
    if att.get("sampling") == "grid_2d" and "grid" in att:
        # SSA's 2-D neighbourhoods over the patches (its grid has no class token: pool by mean)
        att.grid = (gh, gw) if c.model.encoder == "transformer" else att.grid
    if "cls_token" in att:
        att.cls_token = c.model.pool == "cls" and c.model.encoder == "transformer"
    return c
