"""iNaturalist 2021 (Van Horn et al. 2021; 10,000 species) with GRF's ViT-B: a GRF Table 1 column.

Run:
    python -m scripts.train --config configs/vision/inaturalist.py:preset=cpu --workdir runs/x
    python -m scripts.train --config configs/vision/inaturalist.py:attn=linear \
        --config.data.dir=/data/inaturalist --config.data_workers=16 --workdir runs/y

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke   scaling of the recipe (default paper; configs/vision/presets.py)
    model=grf_vit            GRF Table 2's ViT-B, GRF-masked (configs/vision/grf_vit.py)
    attn=<mechanism>         Table 1's other rows: softmax, grf_dense, linear (phi = ReLU)

Data (`config.data.source`): `official` reads iNat2021's class folders (`train/<category>/`,
`val/<category>/`, as train.tar.gz and val.tar.gz unpack) from `config.data.dir`, else
`<data root>/inaturalist2021` (`attnbench-data fetch inaturalist` prints the steps), decoded
lazily; `tfds` reads TFDS `i_naturalist2021` (vision/data/tfds.py); `standin` is Fashion-MNIST
(offline), labelled as a stand-in. The
paper fine-tuned from an unstated pretrained checkpoint; this recipe trains from scratch.
"""

from __future__ import annotations

from configs.vision import grf_vit


def get_config(arg: str | None = None):
    return grf_vit.grf_table1_config("inaturalist", arg)
