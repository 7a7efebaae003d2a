"""CIFAR-10 (Krizhevsky 2009) with a ViT or a Sliceformer: Sliceformer Table 5, first column.

Run:
    python -m scripts.train --config configs/vision/cifar10.py:preset=cpu --workdir runs/c10-cpu
    python -m scripts.train --config configs/vision/cifar10.py:model=sliceformer \
        --config.data.dir=/path/to/cifar-10-batches-py --workdir runs/c10-sliceformer

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke   scaling of the recipe (default paper; configs/vision/presets.py)
    model=vit|sliceformer    Table 5's rows (configs/vision/sliceformer_vit.py)
    attn=<mechanism>         any name in `attention.names()` (grf masks the 2-D patch grid)

Data (`config.data.source`): `official` reads the python batches from `config.data.dir`, else
`<data root>/cifar-10-batches-py` (`attnbench-data fetch cifar10`);
`standin` is Fashion-MNIST (offline), labelled as a stand-in; `tfds` reads TFDS `cifar10`.
"""

from __future__ import annotations

from configs.vision import sliceformer_vit


def get_config(arg: str | None = None):
    return sliceformer_vit.sliceformer_table5("cifar10", arg)
