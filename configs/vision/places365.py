"""Places365 (Small, 256 x 256; Zhou et al. 2017) with GRF's ViT-B: a GRF Table 1 column.

Run:
    python -m scripts.train --config configs/vision/places365.py:preset=cpu --workdir runs/x
    python -m scripts.train --config configs/vision/places365.py:attn=linear \
        --config.data.dir=/data/places365 --config.data_workers=16 --workdir runs/y

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke   scaling of the recipe (default paper; configs/vision/presets.py)
    model=grf_vit            GRF Table 2's ViT-B, GRF-masked (configs/vision/grf_vit.py)
    attn=<mechanism>         Table 1's other rows: softmax, grf_dense, linear (phi = ReLU)

Data (`config.data.source`): `official` reads the small images of Places365-Standard in
class folders (`train/<category>/`, `val/<category>/`: the release's "easy format",
places365standard_easyformat.tar) from `config.data.dir`, else `<data root>/places365_standard`
(`attnbench-data fetch places365` prints the steps), decoded lazily; `tfds` reads TFDS
`places365_small` (vision/data/tfds.py); `standin` is Fashion-MNIST (offline), labelled as a
stand-in. The paper fine-tuned from an unstated pretrained checkpoint;
this recipe trains from scratch.
"""

from __future__ import annotations

from configs.vision import grf_vit


def get_config(arg: str | None = None):
    return grf_vit.grf_table1_config("places365", arg)
