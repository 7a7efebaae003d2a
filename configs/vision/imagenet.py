"""ImageNet-1k (ILSVRC-2012) with DeiT-S or Swin: GFSA Tables 3 and 12 (with `attn=gfsa`).

Run:
    python -m scripts.train --config configs/vision/imagenet.py:preset=cpu --workdir runs/in-cpu
    python -m scripts.train --config configs/vision/imagenet.py:model=deit_s,attn=gfsa \
        --config.data.dir=/path/to/imagenet --config.data_workers=16 --workdir runs/deit-gfsa

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke   scaling of the recipe (default paper; configs/vision/presets.py)
    model=deit_s|deit_s24    DeiT-S with 12 or 24 layers (configs/vision/common.py: deit_s)
    model=cait_s24           CaiT-S24, talking-heads attention (configs/vision/common.py)
    model=swin_t|swin_s      Swin-T / Swin-S (configs/vision/common.py: swin)
    model=grf_vit            GRF Tables 1 / 3's ViT-B, GRF-masked (configs/vision/common.py)
    p_halt=0.5               grf_vit: the walks' halting probability (Table 3's ablation)
    order=4                  attn=gfsa: K instead of the backbone's (GFSA Tables 13 and 14)
    window=14                swin: windows of 14 x 14 patches instead of 7 (SSA Table 2's W14;
                             a scaled preset doubles its own window)
    ssa=S10|S6               swin: SSA in stages 1-3 or in stage 3 (SSA Tables 2 and 9)
    sampling=local|unbiased  ssa: locally biased (default) or unbiased sources (Table 9)
    ft=1                     ssa: +FT, the last 10% of the steps with dense attention
    attn=<mechanism>         any name in `attention.names()`; gfsa is "DeiT-S + GFSA" (K and,
                             on CaiT, the talking-heads matrix: common.gfsa_rows)

Data (`config.data.source`): `official` reads `train/<synset>/*.JPEG` and `val/<synset>/*.JPEG`
under `config.data.dir` (val in class folders, as torchvision and timm read it), decoded lazily
by `config.data_workers` processes; `tfds` reads TFDS `imagenet2012`; `standin` is
Fashion-MNIST (offline), labelled as a stand-in.
"""

from __future__ import annotations

from attnbench import config as config_lib
from configs.vision import common, presets
from vision import data


def get_config(arg: str | None = None):
    recipes = ("deit_s", "deit_s24", "cait_s24", "swin_t", "swin_s", "grf_vit")
    # p_halt=: the walks' halting probability of grf_vit (GRF Table 3's ablation: 0.5)
    # order=: GFSA's K instead of the recipe's (GFSA Tables 13 / 14's sweeps); window=, ssa=,
    # sampling=, ft=: SSA's Swin-T (SSA Tables 2 and 9)
    extra = {"p_halt": 0.0, "order": 0, "window": 0, "ssa": "", "sampling": "local", "ft": 0}
    args = common.parse(
        arg,
        "deit_s",
        recipes=recipes,
        extra=extra,
        choices={
            "ssa": (("", *common.SSA_SWIN_STAGES), "SSA layers"),
            "sampling": (("local", "unbiased"), "SSA"),
        },
    )
    if (args.window or args.ssa) and not args.model.startswith("swin"):
        raise config_lib.ConfigError(
            f"window= and ssa= are Swin's (model=swin_t or swin_s), not model={args.model}"
        )
    if args.ft and not args.ssa:
        raise config_lib.ConfigError("ft=1 is SSA's dense fine-tuning: give ssa=S10 or ssa=S6")
    d = data.data_config("imagenet")
    d.tfds_name = "imagenet2012"
    c = common.new("vision.imagenet", d, args.preset)
    if args.model.startswith("swin"):
        common.swin(c, args.model)
        if args.ssa:
            common.ssa_swin(c, sampling=args.sampling, finetune=bool(args.ft))
    elif args.model == "grf_vit":
        common.grf_vit(c, "imagenet")
    elif args.model == "cait_s24":
        common.cait_s24(c)
    else:
        common.deit_s(c, layers=24 if args.model == "deit_s24" else 12)
    c = common.finish(c, args, presets.SMALL_IMAGES)
    if args.window:
        # W14 is twice Swin's 7; a scaled preset doubles its own window in the same way.
        c.model.window_size = args.window if c.preset == "paper" else 2 * c.model.window_size
    if args.ssa:
        common.ssa_rows(c, args.ssa)
    if args.model == "grf_vit":
        common.grf_rows(c, "imagenet")
        if args.p_halt and "p_halt" in c.attention:
            c.attention.p_halt = args.p_halt
    if args.order:
        if "order" not in c.attention:
            raise config_lib.ConfigError(
                f"order={args.order}: attention {c.attention.name!r} has no K (use attn=gfsa)"
            )
        c.attention.order = args.order
    return c
