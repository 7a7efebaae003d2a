"""GFSA Table 31: inference time (seconds) on ImageNet-1k of DeiT-S (12 and 24 layers), CaiT-S
and Swin-S, with and without GFSA.

Numbers: GFSA (arXiv 2312.04234) Table 31 (App. S). These are GPU timings of the paper's ImageNet
evaluation: not runnable here, they need the models trained by the recipes of Table 12
(configs/vision/imagenet.py, gfsa_table12.CONFIG) evaluated on the paper's GPU. List the cells:

    python -m scripts.reproduce gfsa.table31 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
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


def needs(row: str) -> str:
    return (
        "GPU timing of the paper's setting, which needs the ImageNet-1k evaluation of a trained "
        f"{ROWS[row][0]} ({CONFIG[row]}) on the authors' RTX 3090"
    )


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
            needs=lambda row, _: needs(row),
        ),
        higher_is_better={COLUMN: False},
        notes=(
            "Backbone and #Layers go into the row labels (Swin-S: 24 layers as printed here).",
            "Setting (App. M.1): ImageNet-1k evaluation at 224 x 224, RTX 3090 24GB (the paper "
            "does not say which split is timed, nor the batch). Single measurements.",
        ),
    )
