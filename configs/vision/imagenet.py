"""ImageNet-1k (ILSVRC-2012) with DeiT-S, CaiT-S24, Swin or GRF's ViT-B: GFSA Tables 3 and 12
(with `attn=gfsa`), SSA Tables 2 and 9 (Swin-T with `ssa=`), GRF Tables 1 and 3 (`model=grf_vit`);
DeiT-T and DeiT-S at 12, 16 or 24 layers, with ContraNorm or GFSA, in the ContraNorm setting of
GFSA Tables 17 and 18 (`depth=`, `contranorm=1`).
This file holds the recipes of the papers that ran ImageNet, each from its source's numbers
(commented where set); GRF's ViT-B, which Places365 and iNaturalist share, is
configs/vision/grf_vit.py.

Recipes (`model=`):
  deit_s       DeiT-S (Touvron et al. 2021), GFSA Tables 3 and 12's backbone: 12 layers, 384
               wide, 6 heads, patch 16 at 224 px, the DeiT training recipe (`deit_s`).
  deit_s24     the 24-layer DeiT-S of GFSA Tables 3 and 12 (dropout 0.2, GFSA App. M.1).
  deit_t       DeiT-T (Touvron et al. 2021): 192 wide, 3 heads, the DeiT recipe (`deit_t`); with
               deit_s, the backbones of GFSA Tables 17 and 18 ("the ContraNorm setting").
  deit_b       DeiT-B (Touvron et al. 2021 Table 1): 768 wide, 12 heads, MLP 3072, the DeiT
               recipe; the architecture of timm's vit_base_patch16_224 and deit_base_patch16_224
               (`deit_b`: for their checkpoints, `checkpoint=`).
  cait_s24     CaiT-S24 (Touvron et al. 2021b), GFSA Tables 3, 12 and 14's backbone: 24
               talking-heads self-attention blocks with LayerScale, 2 class-attention blocks.
  swin_t, swin_s  Swin-T / Swin-S (Liu et al. 2021) at 224 px, GFSA Table 12's Swin-S (`swin`);
               SSA's Swin-T with `ssa=` (`ssa_swin`, `ssa_rows`).
  grf_vit      GRF Tables 1 and 3's ViT-B, GRF-masked (configs/vision/grf_vit.py).
`attn=` swaps the mechanism (e.g. `model=deit_s,attn=gfsa` is "DeiT-S + GFSA"); GFSA gets the
K of the authors' runs per backbone (`GFSA_ORDER`) and, on CaiT, filters the talking-heads matrix
(`gfsa_rows`).

Run:
    python -m scripts.train --config configs/vision/imagenet.py:preset=cpu --workdir runs/in-cpu
    python -m scripts.train --config configs/vision/imagenet.py:model=deit_s,attn=gfsa \
        --config.data.dir=/path/to/imagenet --config.data_workers=16 --workdir runs/deit-gfsa
    # evaluate timm's released DeiT-S on the validation images, no training step:
    python -m scripts.train --config vision/imagenet.py:model=deit_s,checkpoint=hub/deit_s \
        --config.total_steps=0 --config.ema_decay=0 --config.data.dir=/path/to/imagenet \
        --workdir runs/deit-s-timm
    # GFSA Table 17's 16-layer DeiT-T + ContraNorm (the ContraNorm setting):
    python -m scripts.train --config vision/imagenet.py:model=deit_t,depth=16,contranorm=1 \
        --config.data.dir=/path/to/imagenet --workdir runs/deit-t16-contranorm

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke   scaling of the recipe (default paper; configs/vision/presets.py)
    model=deit_s|deit_s24    DeiT-S with 12 or 24 layers (`deit_s` below)
    model=deit_t             DeiT-T, 12 layers (`deit_t` below)
    depth=12|16|24           deit_t / deit_s: that many layers, dropout 0 at every depth, the
                             ContraNorm setting of GFSA Tables 17-18 (`contranorm_setting`); a
                             scaled preset keeps the ratio to 12 (its own layers x depth / 12)
    contranorm=1             ContraNorm for every LayerNorm of a ViT / DeiT (`contranorm`
                             below): GFSA Table 17's "+ ContraNorm" rows; not with attn=gfsa
    cn_scale=S, cn_tau=T     ContraNorm's scale s and temperature (default 0.01 and 1)
    cn_dual=1                ContraNorm's dual normalisation
    model=deit_b             DeiT-B = ViT-B/16 (`deit_b` below)
    model=cait_s24           CaiT-S24, talking-heads attention (`cait_s24` below)
    model=swin_t|swin_s      Swin-T / Swin-S (`swin` below)
    model=grf_vit            GRF Tables 1 / 3's ViT-B, GRF-masked (configs/vision/grf_vit.py)
    p_halt=0.5               grf_vit: the walks' halting probability (Table 3's ablation)
    order=4                  attn=gfsa: K instead of the backbone's (GFSA Tables 13 and 14)
    even=1                   attn=gfsa: GFSA_even, the filter in layers 0, 2, 4, ... only (GFSA
                             Table 39 / Figure 3; the `gfsa` mechanism's even_layers_only)
    window=14                swin: windows of 14 x 14 patches instead of 7 (SSA Table 2's W14;
                             a scaled preset doubles its own window)
    ssa=S10|S6               swin: SSA in stages 1-3 or in stage 3 (SSA Tables 2 and 9)
    sampling=local|unbiased  ssa: locally biased (default) or unbiased sources (Table 9)
    ft=1                     ssa: +FT, the last 10% of the steps with dense attention
    attn=<mechanism>         any name in `attention.names()`; gfsa is "DeiT-S + GFSA" (K and,
                             on CaiT, the talking-heads matrix: `gfsa_rows` below)
    checkpoint=PATH          a timm checkpoint (folder or file) loaded into the model when it
                             is built (vision/timm_checkpoints.py; configs/vision/common.py)

Data (`config.data.source`): `official` reads `train/<synset>/*.JPEG` and `val/<synset>/*.JPEG`
under `config.data.dir`, else `<data root>/imagenet` (val in class folders, as torchvision and
timm read it: `attnbench-data fetch imagenet` prints the steps, `attnbench-data imagenet-val`
sorts the released val images by the devkit, `attnbench-data verify imagenet` checks the
folder), decoded lazily by `config.data_workers` processes; `tfds` reads TFDS `imagenet2012`
(vision/data/tfds.py); `standin` is Fashion-MNIST (offline), labelled as a stand-in.
"""

from __future__ import annotations

from attnbench import config as config_lib
from configs import common
from configs.vision import common as vision_common
from configs.vision import grf_vit, presets
from vision import data


def get_config(arg: str | None = None):
    # every vision recipe but the small-image ViTs of CIFAR / Tiny-ImageNet
    recipes = tuple(r for r in vision_common.RECIPES if r not in ("vit", "sliceformer"))
    # p_halt=: the walks' halting probability of grf_vit (GRF Table 3's ablation: 0.5)
    # order=: GFSA's K instead of the recipe's (GFSA Tables 13 / 14's sweeps); even=: GFSA_even
    # (Table 39); window=, ssa=,
    # sampling=, ft=: SSA's Swin-T (SSA Tables 2 and 9); depth=, contranorm=, cn_*: GFSA
    # Tables 17 / 18 (the ContraNorm setting)
    extra = {"p_halt": 0.0, "order": 0, "window": 0, "ssa": "", "sampling": "local", "ft": 0}
    extra |= {"even": 0, "depth": 0, "contranorm": 0, "cn_scale": 0.0, "cn_tau": 0.0, "cn_dual": 0}
    args = vision_common.parse(
        arg,
        "deit_s",
        recipes=recipes,
        extra=extra,
        choices={
            "ssa": (("", *SSA_SWIN_STAGES), "SSA layers"),
            "sampling": (("local", "unbiased"), "SSA"),
        },
    )
    if (args.window or args.ssa) and not args.model.startswith("swin"):
        raise config_lib.ConfigError(
            f"window= and ssa= are Swin's (model=swin_t or swin_s), not model={args.model}"
        )
    if args.ft and not args.ssa:
        raise config_lib.ConfigError("ft=1 is SSA's dense fine-tuning: give ssa=S10 or ssa=S6")
    _check_contranorm_setting(args)
    d = data.data_config("imagenet")
    d.tfds_name = "imagenet2012"
    c = vision_common.new("vision.imagenet", d, args.preset)
    if args.model.startswith("swin"):
        swin(c, args.model)
        if args.ssa:
            ssa_swin(c, sampling=args.sampling, finetune=bool(args.ft))
    elif args.model == "grf_vit":
        grf_vit.grf_vit(c, "imagenet")
    elif args.model == "cait_s24":
        cait_s24(c)
    elif args.depth:
        contranorm_setting(c, args.model, args.depth)
    else:
        deit_s(c, layers=24 if args.model == "deit_s24" else 12)
        if args.model == "deit_b":
            deit_b(c)
        if args.model == "deit_t":
            deit_t(c)
    c = vision_common.finish(c, args, presets.SMALL_IMAGES)
    if args.depth and c.preset != "paper":
        # keep the depths apart at a scaled preset: its layers x depth / 12 (at least 1)
        c.model.num_layers = max(1, round(c.model.num_layers * args.depth / 12))
    if args.contranorm:
        contranorm(c, scale=args.cn_scale, temperature=args.cn_tau, dual=bool(args.cn_dual))
    gfsa_rows(c, args.model)  # attn=gfsa: the backbone's K and, on CaiT, the talking heads
    if args.window:
        # W14 is twice Swin's 7; a scaled preset doubles its own window in the same way.
        c.model.window_size = args.window if c.preset == "paper" else 2 * c.model.window_size
    if args.ssa:
        ssa_rows(c, args.ssa)
    if args.model == "grf_vit":
        grf_vit.grf_rows(c, "imagenet")
        if args.p_halt and "p_halt" in c.attention:
            c.attention.p_halt = args.p_halt
    if args.order:
        if "order" not in c.attention:
            raise config_lib.ConfigError(
                f"order={args.order}: attention {c.attention.name!r} has no K (use attn=gfsa)"
            )
        c.attention.order = args.order
    if args.even:
        if c.attention.name != "gfsa":
            raise config_lib.ConfigError("even=1 is GFSA_even: give attn=gfsa")
        c.attention.even_layers_only = True  # [gfsa] Table 39's GFSA_even (layers 0, 2, ...)
    return c


# DeiT (Touvron et al. 2021, Table 9 and the released main.py defaults), as GFSA trained it.
DEIT = dict(
    epochs=300, batch=1024, lr=5e-4 * 1024 / 512,  # lr 5e-4 x batch / 512
    warmup_epochs=5, weight_decay=0.05,
    # main.py --warmup-lr 1e-6 (the warm-up's first lr) and --min-lr 1e-5 (the cosine's
    # floor), absolute: unlike --lr, not scaled by the batch (DeiT's and GFSA's Image/main.py)
    warmup_lr=1e-6, min_lr=1e-5,
    drop_path=0.1, label_smoothing=0.1, mixup=0.8, cutmix=1.0,
    rand_augment="rand-m9-mstd0.5-inc1", random_erasing=0.25,
    train_examples=1_281_167,  # ImageNet-1k train
)  # fmt: skip


def _deit_training(c, *, lr: float, warmup_epochs: int, warmup_lr: float, min_lr: float) -> None:
    """The DeiT training recipe (shared by Swin, which kept it) after `epoch_schedule`: AdamW (0.9,
    0.999), weight decay 0.05 on the weight matrices only (timm: no decay on biases, norms,
    positions, tokens, relative position bias tables), linear warm-up from `warmup_lr` to `lr`
    then cosine to `min_lr`, 224 px, random resized crop + flip, RandAugment, random erasing,
    Mixup / CutMix, label smoothing, mixed precision on accelerators.

    Both codes step timm's CosineLRScheduler (without `warmup_prefix`), whose cosine runs from
    step 0 over the whole run while the warm-up overrides its start; DeiT's main.py also steps
    it once per epoch (`lr_scheduler.step(epoch)` after each: a staircase, epochs 0 and 1 both at
    `warmup_lr`). Ours is optax's per-step warm-up then a cosine over the steps after it, so at
    the end of DeiT's warm-up ours is at the peak where timm's is 0.07% below it (1.1% for
    Swin's 20 of 300 epochs), and both end at `min_lr`: a per-step schedule is what the trainer
    runs, and the two differ by less than the cosine moves in a few epochs."""
    c.optimizer.lr = lr
    c.optimizer.b1, c.optimizer.b2, c.optimizer.eps = 0.9, 0.999, 1e-8
    c.optimizer.weight_decay = DEIT["weight_decay"]
    c.optimizer.decay_on = "kernels"
    c.schedule.name = "warmup_cosine"
    c.schedule.warmup_steps = warmup_epochs * c.eval_every
    c.schedule.start_factor = warmup_lr / lr
    c.schedule.end_factor = min_lr / lr
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


def deit_s(c, *, layers: int = 12, dropout: float | None = None) -> None:
    """DeiT-S (GFSA Tables 3 and 12): 384 wide, 6 heads of 64, MLP 1536, patch 16 at 224 px,
    qkv biases, class token, learned positions; the DeiT recipe (AdamW (0.9, 0.999), batch
    1024, lr 1e-3, 5 warm-up epochs then cosine, weight decay 0.05, drop-path 0.1 linear in
    depth, label smoothing 0.1, Mixup 0.8 / CutMix 1.0, RandAugment m9-mstd0.5, random erasing
    0.25, 300 epochs; weight decay on the weight matrices only, as timm; the warm-up from 1e-6,
    the cosine's floor 1e-5). 24 layers: dropout 0.2 (GFSA App. M.1; `dropout` replaces that
    rule: 0 in the ContraNorm setting, `contranorm_setting`). With the DeiT / GFSA
    main.py defaults (`_deit_extras`): repeated augmentation x3 and a parameter EMA (0.99996)
    evaluated beside the model. Not reproduced: the distillation token and teacher (GFSA's runs
    have none: `--distillation-type none`).

    Epochs: 300, DeiT's (its Table 9), which GFSA's paper does not change (it states no epochs;
    App. M.1 follows Wang et al.'s and DeiT's recipes). The authors' GFSA runs trained longer:
    their Image/main.py defaults to 500 epochs and the released DeiT-S-12 log
    (Image/logs/imnet1k_gfsa_deit_small_12/log.txt, K = 4) runs a 500-epoch schedule, stopping
    at epoch 481 with 81.05%, so Table 3's 81.1 is most likely a 500-epoch number (the tables'
    note: configs/tables/gfsa_table3.py). We keep 300 so DeiT-S and DeiT-S + GFSA share a
    schedule, the baseline row (79.8) being DeiT's 300-epoch number; the authors' length is
    `--config.total_steps=625500` (500 x 1,251 steps)."""
    r = DEIT
    vision_common.epoch_schedule(
        c, epochs=r["epochs"], batch=r["batch"], train_examples=r["train_examples"]
    )
    _deit_training(
        c,
        lr=r["lr"],
        warmup_epochs=r["warmup_epochs"],
        warmup_lr=r["warmup_lr"],  # main.py --warmup-lr 1e-6
        min_lr=r["min_lr"],  # main.py --min-lr 1e-5
    )
    _deit_extras(c)
    m = c.model
    m.encoder = "transformer"
    m.patch_size = 16
    m.num_layers, m.dim, m.qkv_dim, m.num_heads, m.mlp_dim = layers, 384, 384, 6, 1536
    if dropout is None:  # GFSA App. M.1: 0.2 for the 24-layer DeiT-S, 0 for the 12-layer
        dropout = 0.2 if layers == 24 else 0.0
    m.dropout = dropout
    m.drop_path, m.drop_path_decay = r["drop_path"], "linear"
    m.qkv_bias = m.out_bias = True
    m.pool, m.positions = "cls", "learned"


def deit_t(c) -> None:
    """DeiT-T after `deit_s`: 192 wide, 3 heads of 64, MLP 768 (DeiT Table 1's DeiT-Ti, "5M"
    parameters: 5,717,416 as timm's deit_tiny_patch16_224, 1,000 classes), the same DeiT recipe
    (DeiT Table 9 trains every size alike; Guo et al.'s `deit_tiny_patch16_224`,
    github.com/PKU-ML/ContraNorm ViT_imagenet/models.py, is this model with `depth=`)."""
    m = c.model
    m.dim, m.qkv_dim, m.num_heads, m.mlp_dim = 192, 192, 3, 768


def deit_b(c) -> None:
    """DeiT-B after `deit_s`: 768 wide, 12 heads of 64, MLP 3072 (DeiT Table 1, 86M parameters),
    the same DeiT recipe (DeiT Table 9 trains every size alike). The architecture of timm's
    vit_base_patch16_224 (the augreg releases too) and deit_base_patch16_224, so that
    `checkpoint=` evaluates them (timm's vit_* releases normalise with mean = std = 0.5, its
    `IMAGENET_INCEPTION_MEAN` / `_STD`: `--config.data.mean=(0.5,0.5,0.5)
    --config.data.std=(0.5,0.5,0.5)`; deit_* with ImageNet's, the recipe's)."""
    m = c.model
    m.dim, m.qkv_dim, m.num_heads, m.mlp_dim = 768, 768, 12, 3072


# CaiT-S24 as GFSA trained it (arXiv 2312.04234 Sec. 5.3, App. M.1; the authors' code,
# jeongwhanchoi/GFSA: the Image/README.md command, the Image/main.py defaults and
# Image/logs/imnet1k_gfsa_cait_S24_224/log.txt): 4 GPUs x 128 images, lr 5e-4
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
    vision_common.epoch_schedule(
        c, epochs=r["epochs"], batch=r["batch"], train_examples=DEIT["train_examples"]
    )
    _deit_training(
        c,
        lr=r["lr"],
        warmup_epochs=DEIT["warmup_epochs"],
        warmup_lr=DEIT["warmup_lr"],  # GFSA Image/main.py --warmup-lr 1e-6 (the CaiT run too)
        min_lr=DEIT["min_lr"],  # GFSA Image/main.py --min-lr 1e-5
    )
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


# K of GFSA per backbone (arXiv 2312.04234 Tables 3, 13 and 14, App. M.1; the released code,
# jeongwhanchoi/GFSA Image/gfsa.py, Image/gfsa_cait.py, Image/swin/models/swin_attngf.py):
# DeiT-S 12L 3 (Table 13's best, 81.12, is Table 3's 81.1; the released code hard-codes 4);
# DeiT-S 24L unreported ("range 2-5", App. M.1), 3 as 12 layers; CaiT-S24 4 (Table 14, and the
# code); Swin 3 (the code); DeiT-T 5 (Table 18's best at 12 layers, 77.68; the ContraNorm
# setting, whose cells give their K with order=, gfsa.table17 / gfsa.table18).
GFSA_ORDER = {"deit_s": 3, "deit_s24": 3, "deit_t": 5, "cait_s24": 4, "swin_t": 3, "swin_s": 3}


def gfsa_rows(c, model: str) -> None:
    """After `attn=gfsa` / `gfsa_exact`: the authors' K for `model`, and on CaiT the filter on
    its talking-heads matrix (the authors' gfsa_cait.py); plain softmax elsewhere."""
    if c.attention.name not in ("gfsa", "gfsa_exact"):
        return
    if model in GFSA_ORDER:
        c.attention.order = GFSA_ORDER[model]
    if c.model.encoder == "cait":
        c.attention.talking_heads = True


# The ContraNorm setting (GFSA App. M.6, Tables 17 and 18): "the training recipe used by Guo et
# al. [ContraNorm, ICLR 2023], which is a slightly modified version of Touvron et al.'s"; "AdamW
# optimizer with cosine learning rate decay", 300 epochs, batch 1024, 224 x 224. The rest is Guo
# et al.'s code (github.com/PKU-ML/ContraNorm ViT_imagenet/main.py, the DeiT main.py with
# `--depth` and ContraNorm's arguments added), whose defaults are DeiT's: lr 5e-4 x batch / 512
# (1e-3 at 1024), weight decay 0.05, 5 warm-up epochs from 1e-6, cosine to 1e-5, drop-path
# 0.1, `--drop 0.0` at every depth, RandAugment rand-m9-mstd0.5-inc1, label smoothing 0.1,
# Mixup 0.8 / CutMix 1.0, random erasing 0.25, repeated augmentation, a 0.99996 EMA: our
# `deit_s` recipe exactly. So at 12 layers a cell of this setting is `model=deit_s` /
# `model=deit_t` config for config; `depth=` gives 16 or 24 layers (no 0.2 dropout, unlike
# GFSA App. M.1's deit_s24). The unstated "slight modification" is not reproduced.


def _check_contranorm_setting(args) -> None:
    """ConfigError for `depth=` / `contranorm=` / `cn_*` arguments that do not fit."""
    if args.depth and args.model not in ("deit_t", "deit_s"):
        raise config_lib.ConfigError(
            f"depth={args.depth} sets DeiT-T's or DeiT-S's layers (model=deit_t or deit_s), "
            f"not model={args.model}"
        )
    if args.depth < 0:
        raise config_lib.ConfigError(f"depth={args.depth}: a number of layers >= 1")
    if args.contranorm not in (0, 1) or args.cn_dual not in (0, 1):
        raise config_lib.ConfigError("contranorm= and cn_dual= are 1 (on) or 0 (off)")
    if not args.contranorm and (args.cn_scale or args.cn_tau or args.cn_dual):
        raise config_lib.ConfigError(
            "cn_scale=, cn_tau= and cn_dual= set ContraNorm: give contranorm=1"
        )
    if args.cn_scale < 0 or args.cn_tau < 0:
        raise config_lib.ConfigError(
            f"cn_scale={args.cn_scale}, cn_tau={args.cn_tau}: ContraNorm's scale and temperature "
            "are > 0 (0: the recipe's)"
        )
    if args.contranorm and args.attn == "gfsa":
        raise config_lib.ConfigError(
            "contranorm=1 with attn=gfsa: GFSA Table 17 has them as separate rows (ContraNorm a "
            "baseline to GFSA) and never combines them; drop one"
        )
    if args.contranorm and args.checkpoint:
        raise config_lib.ConfigError(
            "contranorm=1 with checkpoint=: the timm checkpoints are of ViTs without ContraNorm "
            "(vision/timm_checkpoints.py loads encoder 'transformer' only)"
        )


def contranorm_setting(c, model: str, depth: int) -> None:
    """DeiT-T / DeiT-S with `depth` layers in the ContraNorm setting (the comment above): the
    `deit_s` recipe with `depth` layers and dropout 0 (Guo et al.'s `--drop 0.0`), DeiT-T's
    widths for model=deit_t."""
    deit_s(c, layers=depth, dropout=0.0)
    if model == "deit_t":
        deit_t(c)


# ContraNorm in a ViT (Guo et al., ICLR 2023, arXiv:2303.06562; github.com/PKU-ML/ContraNorm
# ViT_imagenet/main.py and models.py): every LayerNorm of timm's VisionTransformer (each block's
# two and the final one) becomes LayerNorm(X - s softmax(X_hat X_hat^T / tau) X)
# (`attnbench.nn.contranorm`). Their defaults: --temp 1.0, --dual-norm 0, --identity 0,
# --learnable 0, --pre-norm 0 (all ours). --scale defaults to 0 (off); the one value their ViT
# code gives is 1e-2 (the commented-out ContraNorm runs of ViT_imagenet/run.sh), which we take:
# GFSA App. M.6 ran "their recommended hyperparameters" without restating them.
CONTRANORM_VIT = dict(scale=1e-2, temperature=1.0, dual=False)


def contranorm(c, *, scale: float = 0.0, temperature: float = 0.0, dual: bool = False) -> None:
    """ContraNorm around every LayerNorm of the ViT / DeiT in `c` (the comment above): encoder
    `transformer_contranorm` with `contranorm_scale` (`scale` or 0.01), `contranorm_temperature`
    (`temperature` or 1) and `contranorm_dual`. ConfigError for any other encoder."""
    m = c.model
    if m.encoder != "transformer":
        raise config_lib.ConfigError(
            f"contranorm=1: ContraNorm replaces the LayerNorms of a ViT / DeiT (encoder "
            f"'transformer'), not of encoder {m.encoder!r}"
        )
    m.encoder = "transformer_contranorm"  # attnbench.nn.contranorm
    m.contranorm_scale = float(scale or CONTRANORM_VIT["scale"])
    m.contranorm_temperature = float(temperature or CONTRANORM_VIT["temperature"])
    m.contranorm_dual = bool(dual or CONTRANORM_VIT["dual"])


# Swin (Liu et al. 2021, Table 1 / configs): (depths, heads, drop-path); C = 96, window 7.
SWIN = {
    "swin_t": ((2, 2, 6, 2), (3, 6, 12, 24), 0.2),
    "swin_s": ((2, 2, 18, 2), (3, 6, 12, 24), 0.3),
}


def swin(c, variant: str) -> None:
    """Swin-T / Swin-S at 224 px (patch 4, C 96, window 7, GAP + linear head) with the Swin
    recipe as GFSA's code runs it (jeongwhanchoi/GFSA Image/swin/config.py): AdamW, 1,024
    images per step, lr 1e-3 (5e-4 x 1024 / 512), 20 warm-up epochs from 1e-6 then cosine to
    1e-5, weight decay 0.05, clipping 5.0, 300 epochs (GFSA's config says 400), the DeiT
    augmentations, no decay on biases, norms and position bias tables. Swin's main.py (GFSA's
    Image/swin/main.py, as the Swin release) scales WARMUP_LR 5e-7 and MIN_LR 5e-6 by the batch
    / 512 as it scales BASE_LR: 1e-6 and 1e-5 at 1,024 images per step."""
    depths, heads, drop_path = SWIN[variant]
    vision_common.epoch_schedule(c, epochs=300, batch=1024, train_examples=DEIT["train_examples"])
    _deit_training(
        c,
        lr=1e-3,  # BASE_LR 5e-4 x 1024 / 512
        warmup_epochs=20,  # WARMUP_EPOCHS 20
        warmup_lr=5e-7 * 1024 / 512,  # WARMUP_LR 5e-7, scaled as the lr (Swin's main.py)
        min_lr=5e-6 * 1024 / 512,  # MIN_LR 5e-6, scaled as the lr
    )
    c.optimizer.grad_clip_norm = 5.0
    m = c.model
    m.encoder, m.patch_size, m.dim = "swin", 4, 96
    m.depths, m.swin_heads, m.window_size, m.mlp_ratio = depths, heads, 7, 4.0
    m.num_layers, m.num_heads = sum(depths), heads[0]  # what generic code reads
    m.qkv_dim, m.mlp_dim = 96, 384
    m.dropout, m.drop_path, m.drop_path_decay = 0.0, drop_path, "linear"
    m.pool, m.positions = "mean", "none"


# SSA's Swin-T (Hussain et al. 2023, arXiv 2306.01705 Sec. 4.2, App. B.2, Tables 2 and 9):
# which stages sample. S10 = stages 1-3 (Swin-T's first 10 blocks; stage 4's 7 x 7 windows
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

    Decisions where the paper is silent (ours; arXiv 2306.01705 Sec. 3.3 and App. B.2 leave
    them open): one pattern per step shared by every window, head and image (Sec. 3.3's "same
    reindexing within each mini-batch"); the shifted-window mask and the relative position bias
    are gathered with the sources."""
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
