"""What every vision recipe file shares: the `model=` argument, the model section, the
epoch-based schedule, and the preset scaling for images (`finish`). The papers' recipes live in
the config file of the dataset they ran (a recipe several datasets share in one module named for
it); domain-independent pieces are configs/common.py.

Recipes (`model=` in the config argument) and where each is:
  vit, sliceformer  Sliceformer Table 5's ViT and its sorting-attention row: CIFAR-10/100 and
                    Tiny-ImageNet (configs/vision/sliceformer_vit.py).
  deit_s, deit_s24  DeiT-S with 12 or 24 layers, GFSA Tables 3 and 12 (configs/vision/imagenet.py).
  deit_t            DeiT-T; with deit_s and `depth=`, GFSA Tables 17 and 18 (the ContraNorm
                    setting, configs/vision/imagenet.py).
  deit_b            DeiT-B, timm's ViT-B/16 architecture (configs/vision/imagenet.py).
  cait_s24          CaiT-S24, GFSA Tables 3, 12 and 14 (configs/vision/imagenet.py).
  swin_t, swin_s    Swin-T / Swin-S, GFSA Table 12 and SSA Tables 2 and 9
                    (configs/vision/imagenet.py).
  grf_vit           GRF Tables 1 and 3's ViT-B: ImageNet, Places365 and iNaturalist
                    (configs/vision/grf_vit.py).
`attn=` swaps the mechanism (e.g. `model=deit_s,attn=gfsa` is "DeiT-S + GFSA").
`checkpoint=PATH` (every vision recipe) sets `config.model.checkpoint` to PATH made absolute: a
timm checkpoint folder or file loaded into the model when it is built (vision/timm_checkpoints.py;
a model that does not fit it is a ConfigError). Without it the config has no such field, so
every config without a checkpoint is the one it was before the argument existed.
"""

from __future__ import annotations

import os

import ml_collections

from attnbench import config as config_lib
from configs import common
from vision import models

__all__ = [
    "RECIPES",
    "parse",
    "model_config",
    "new",
    "epoch_schedule",
    "tokens",
    "finish",
]

RECIPES = (
    "vit",
    "sliceformer",
    "deit_s",
    "deit_s24",
    "deit_t",
    "deit_b",
    "cait_s24",
    "swin_t",
    "swin_s",
    "grf_vit",
)


def parse(
    arg: str | None,
    default: str,
    recipes=RECIPES,
    extra: dict | None = None,
    choices: dict | None = None,
):
    """Parses a vision recipe file's `key=value,...` against `common.ARGS`, `model=` (one of
    `recipes`, default `default`), `checkpoint=` (a timm checkpoint, `finish`) and the file's
    `extra` keys (`choices`: their known values, as `configs.common.parse`)."""
    return common.parse(
        arg,
        {"model": default, "checkpoint": "", **(extra or {})},
        {
            "model": (recipes, "vision recipe"),
            "preset": (common.PRESETS, None),
            **(choices or {}),
        },
    )


def model_config() -> ml_collections.ConfigDict:
    m = ml_collections.ConfigDict()
    m.encoder = "transformer"  # transformer (ViT / DeiT) | swin | cait | transformer_contranorm
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


def epoch_schedule(c, *, epochs: int, batch: int, train_examples: int) -> None:
    """An epoch-based schedule in optimizer steps; evaluation (and checkpoints) once per epoch."""
    per_epoch = max(train_examples // batch, 1)
    c.batch_size = batch
    c.eval_batch_size = min(batch, 1024)
    c.total_steps = epochs * per_epoch
    c.eval_every = per_epoch
    c.log_every = min(50, per_epoch)


def tokens(c) -> int:
    """Tokens the backbone sees at the config's image size."""
    return models.num_tokens(c.model, c.data.image_size)


def finish(c, args, presets) -> ml_collections.ConfigDict:
    """Scales the recipe to its preset from the file's table `presets` (`common.scale`, plus
    the image keys `patch` (model.patch_size) and `image_size`), applies `attn=`, and fits
    graph-structured mechanisms to the grid of patches (GRF: the 2-D grid graph, the class
    token linked to every patch); `checkpoint=PATH` adds `c.model.checkpoint`, PATH made
    absolute (a relative path would name another file from another directory). Returns `c`.

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
    if args.get("checkpoint"):
        # Only when given: configs without a checkpoint keep exactly their former fields.
        c.model.checkpoint = os.path.abspath(os.path.expanduser(args.checkpoint))
    return c
