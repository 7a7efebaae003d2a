"""Tiny-ImageNet (200 classes, 64 x 64) with timm's ViT-S/16 or a Sliceformer at 224 x 224:
Sliceformer Table 5, third column.

Run:
    python -m scripts.train --config configs/vision/tiny_imagenet.py:preset=cpu --workdir runs/t
    python -m scripts.train --config configs/vision/tiny_imagenet.py:model=sliceformer \
        --config.data.dir=/path/to/tiny-imagenet-200 --workdir runs/tiny-sliceformer

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke   scaling of the recipe (default paper; configs/vision/presets.py)
    model=vit|sliceformer    Table 5's rows (configs/vision/sliceformer_vit.py)
    attn=<mechanism>         any name in `attention.names()` (grf masks the 2-D patch grid)

Data (`config.data.source`): `official` reads the release folder (wnids.txt, train/, val/ with
val_annotations.txt; the val images are the reported test split): `config.data.dir`, else
`<data root>/tiny-imagenet-200`, where `attnbench-data fetch tiny_imagenet` puts it; `standin`
is Fashion-MNIST (offline), labelled as a stand-in. Decoding is lazy: `--config.data_workers=N`
decodes in N processes.
"""

from __future__ import annotations

from configs.vision import sliceformer_vit


def get_config(arg: str | None = None):
    return sliceformer_vit.sliceformer_table5("tiny_imagenet", arg)
