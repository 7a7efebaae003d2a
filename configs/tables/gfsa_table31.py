"""GFSA Table 31: inference time (seconds) on ImageNet-1k of DeiT-S (12 and 24 layers), CaiT-S
and Swin-S, with and without GFSA.

Numbers: GFSA (arXiv 2312.04234) Table 31 (App. S). These are GPU timings of the paper's ImageNet
evaluation; ours time the recipes of Table 12 (configs/vision/imagenet.py, gfsa_table12.CONFIG) on
the 50,000 validation images (`_gfsa_timing`: inference at 256 images per step on one device,
synthetic images; seconds = 50,000 / images per second) with `python -m scripts.speed_tables
--tables timing_gfsa_vision`, on whatever device it runs on, beside the paper's numbers. List the
cells:

    python -m scripts.reproduce gfsa.table31 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables import _gfsa_timing
from configs.tables.gfsa_table12 import CONFIG  # the same rows: Table 12's recipes

COLUMN = "Inference Time (s)"

# row: (model, inference seconds)
ROWS = {
    "DeiT-S (12L)": ("DeiT-S", 52),
    "DeiT-S + GFSA (12L)": ("DeiT-S", 53),
    "DeiT-S (24L)": ("DeiT-S", 68),
    "DeiT-S + GFSA (24L)": ("DeiT-S", 69),
    "CaiT-S (24L)": ("CaiT-S", 105),
    "CaiT-S + GFSA (24L)": ("CaiT-S", 107),
    "Swin-S": ("Swin-S", 17),
    "Swin-S + GFSA": ("Swin-S", 17),
}


def get_table() -> Table:
    return Table(
        key="gfsa.table31",
        caption="Inference time (seconds) on ImageNet-1k.",
        source="GFSA paper Table 31; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=(COLUMN,),
        cells=grid(
            {row: paper for row, (_, paper) in ROWS.items()},
            (COLUMN,),
            metric="test.inference_seconds",
            scale=1.0,
            **_gfsa_timing.recipe_timing(
                "timing_gfsa_vision", lambda row, _: _gfsa_timing.imagenet(CONFIG[row], "s")
            ),
        ),
        higher_is_better={COLUMN: False},
        notes=(
            "Backbone and #Layers go into the row labels (Swin-S: 24 layers as printed here).",
            "Setting (App. M.1): ImageNet-1k evaluation at 224 x 224, RTX 3090 24GB (the paper "
            "does not say which split is timed, nor the batch). Single measurements. Ours: the "
            "50,000 validation images at 256 per step (our choice); the weights do not change "
            "the time, so no trained model is needed.",
        ),
    )
