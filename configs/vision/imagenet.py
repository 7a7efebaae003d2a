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
    attn=<mechanism>         any name in `attention.names()`; gfsa is "DeiT-S + GFSA" (K and,
                             on CaiT, the talking-heads matrix: common.gfsa_rows)

Data (`config.data.source`): `official` reads `train/<synset>/*.JPEG` and `val/<synset>/*.JPEG`
under `config.data.dir` (val in class folders, as torchvision and timm read it), decoded lazily
by `config.data_workers` processes; `tfds` reads TFDS `imagenet2012`; `standin` is
Fashion-MNIST (offline), labelled as a stand-in.
"""

from __future__ import annotations

from configs.vision import common, presets
from core import config as config_lib
from vision import data


def get_config(arg: str | None = None):
    recipes = ("deit_s", "deit_s24", "cait_s24", "swin_t", "swin_s", "grf_vit")
    # p_halt=: the walks' halting probability of grf_vit (GRF Table 3's ablation: 0.5)
    # order=: GFSA's K instead of the recipe's (GFSA Tables 13 / 14's sweeps)
    args = common.parse(arg, "deit_s", recipes=recipes, extra={"p_halt": 0.0, "order": 0})
    d = data.data_config("imagenet")
    d.tfds_name = "imagenet2012"
    c = common.new("vision.imagenet", d, args.preset)
    if args.model.startswith("swin"):
        common.swin(c, args.model)
    elif args.model == "grf_vit":
        common.grf_vit(c, "imagenet")
    elif args.model == "cait_s24":
        common.cait_s24(c)
    else:
        common.deit_s(c, layers=24 if args.model == "deit_s24" else 12)
    c = common.finish(c, args, presets.SMALL_IMAGES)
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
