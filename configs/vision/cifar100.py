"""CIFAR-100 (Krizhevsky 2009, fine labels) with a ViT or a Sliceformer: Sliceformer Table 5,
second column.

Run:
    python -m scripts.train --config configs/vision/cifar100.py:preset=cpu --workdir runs/c100
    python -m scripts.train --config configs/vision/cifar100.py:model=sliceformer \
        --config.data.dir=/path/to/cifar-100-python --workdir runs/c100-sliceformer

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke   scaling of the recipe (default paper; configs/vision/presets.py)
    model=vit|sliceformer    Table 5's rows (configs/vision/sliceformer_vit.py)
    attn=<mechanism>         any name in `attention.names()` (grf masks the 2-D patch grid)

Data (`config.data.source`): `official` reads `train` and `test` of the python version from
`config.data.dir`, else `<data root>/cifar-100-python` (`attnbench-data fetch cifar100`);
`standin` is Fashion-MNIST (offline, 10 of the 100 classes used), labelled as a stand-in; `tfds`
reads TFDS `cifar100`.
"""

from __future__ import annotations

from configs.vision import sliceformer_vit


def get_config(arg: str | None = None):
    return sliceformer_vit.sliceformer_table5("cifar100", arg)
